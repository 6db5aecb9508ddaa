"""The GPU speed table of the README, rendered from a committed ``measure.py`` result (``device.json``).

    python benchmarks/device/table.py benchmarks/results/device/device.json                    # print it
    python benchmarks/device/table.py benchmarks/results/device/device.json --into README.md   # write it there
    python benchmarks/device/table.py FIRST.json SECOND.json --into README.md   # several runs, one block each

One line per measured train step (config, model, parameters, dtype, batch, positions/s, achieved TFLOP/s, MFU
against the bf16 matmul peak measured in the same run and against the datasheet's, compile seconds), then one line
naming the configs the run's time budget left out, above it a sentence with the device, the JAX version, the
peak, the date and the command that reproduces it. Several JSON files (runs on different days, or a later run
of the configs an earlier one left out) give one such block each, in the order given, and a config measured by
any of them is not named as left out by another. ``--into`` replaces the text between the page's
``<!-- gpu-table:start -->`` and ``<!-- gpu-table:end -->`` lines (``tests/test_device_table.py`` checks that the
README's table is this script's output for the committed JSON).

    python benchmarks/device/table.py DEVICE.json ... --compare benchmarks/results/aot/compile.json \
        --into docs/accelerators.md

``--compare`` renders instead the comparison of measured and predicted: one line per config measured on a GPU
(in bf16; its rows at each batch, newest run last) with its measured MFU and op count (the compiled step's
top-level ops; on a GPU, its kernels; ``-`` for runs that did not count them), beside the compile table's
roofline MFU of the same config at batch 256 in bf16 on the single-host TPU slices (:data:`ROOFLINE_TARGETS`)
and its op counts there and on the CPU; ``--into`` writes it between the page's ``<!-- gpu-vs-roofline:start
-->`` and ``<!-- gpu-vs-roofline:end -->`` lines (``tests/test_device_table.py`` checks docs/accelerators.md's).
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kifunet.eval import page_blocks

BLOCK = "gpu-table"  # README.md's block (kifunet.eval.page_blocks)
START, END = page_blocks.markers(BLOCK)
COMPARE_BLOCK = "gpu-vs-roofline"  # docs/accelerators.md's block
#: the compile table's targets beside the GPU's figures: one host each, batch 256 in bf16
ROOFLINE_TARGETS = ("v5e-8", "v5p-8", "v6e-8")
ROOFLINE_BATCH = 256
COMMAND = "python benchmarks/device/measure.py --out OUT"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render(result: dict, source: str, measured_elsewhere: frozenset[str] = frozenset()) -> str:
    """Markdown for one ``device.json`` (``source``: its path, as the text names it); configs in
    ``measured_elsewhere`` (measured by another run shown beside it) are not named as left out."""
    jx, peak, ts = result["jax"], result["peak"], result["train_step"]
    sheet = peak.get("datasheet") or {}
    head = (f"{jx['device_kind']} x {jx['devices']}, JAX {jx['jax']}, {result['started'][:10]}: bf16 matmul peak "
            f"measured in the same run {peak['bf16_tflops']:.0f} TFLOP/s"
            + (f" (datasheet, {sheet['name']}: {sheet['bf16_tflops']:.0f})" if sheet else "")
            + f"; `{COMMAND}`, kept in `{source}`. Training FLOPs are counted analytically "
              "(`kifunet.models.train_flops`: 3 forwards, 2 per multiply-add); MFU = achieved / measured peak.")
    out = [head, "",
           "| config | model | params | dtype | batch | positions/s | TFLOP/s | MFU | MFU (datasheet) | compile s |",
           "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in ts["rows"]:
        out.append(f"| `{r['config']}` | `{r['model']}` | {r['params']:,} | {r['dtype']} | {r['batch']:,} | "
                   f"{r['positions_per_s']:,.0f} | {r['achieved_tflops']:.0f} | {_pct(r.get('mfu'))} | "
                   f"{_pct(r.get('mfu_datasheet'))} | {r['compile_s']:.1f} |")
    measured = {r["config"] for r in ts["rows"]} | measured_elsewhere
    left = sorted({x["config"] for x in ts.get("not_run", []) if x["config"] not in measured})
    if left:
        out += ["", "Not measured in this run (its time budget ran out): " + ", ".join(f"`{c}`" for c in left) + "."]
    return "\n".join(out)


def render_runs(runs: list[tuple[dict, str]]) -> str:
    """Markdown for several ``(device.json, source)`` runs: :func:`render` of each, in order, each told the configs
    the others measured."""
    configs = [{r["config"] for r in result["train_step"]["rows"]} for result, _ in runs]
    return "\n\n".join(render(result, source, frozenset().union(*(c for j, c in enumerate(configs) if j != i)))
                        for i, (result, source) in enumerate(runs))


def render_compare(runs: list[tuple[dict, str]], compile_rows: list[dict], compile_source: str) -> str:
    """Markdown: each bf16 train step measured by the ``(device.json, source)`` runs beside the compile table's
    (``compile_rows``, kept in ``compile_source``) roofline MFU and ops of the same config."""
    cells = {(r["config"], r["target"]): r for r in compile_rows
             if r["batch"] == ROOFLINE_BATCH and (r["dtype"] == "bfloat16" or r["target"] == "cpu")}
    heads = " | ".join(f"{t} roofline MFU" for t in ROOFLINE_TARGETS)
    out = [f"Measured on a GPU (`{'`, `'.join(src for _, src in runs)}`) and predicted by the compile table "
           f"(`{compile_source}`; batch {ROOFLINE_BATCH}, bf16, the CPU in float32). GPU ops: the compiled step's "
           "top-level ops, its kernels (`-`: not counted by that run).", "",
           f"| config | GPU | batch | GPU MFU | GPU ops | {heads} | v5e-8 ops | CPU ops |",
           "|---|---|---:|---:|---:|" + "---:|" * len(ROOFLINE_TARGETS) + "---:|---:|"]
    for result, _ in runs:
        kind = result["jax"]["device_kind"]
        for r in result["train_step"]["rows"]:
            if r["dtype"] != "bfloat16":
                continue
            tpu = [cells.get((r["config"], t)) for t in ROOFLINE_TARGETS]
            roof = [f"{_pct(c['predicted_mfu'])} ({c['bound']})" if c else "-" for c in tpu]
            ops = [cells.get((r["config"], t), {}).get("ops") for t in ("v5e-8", "cpu")]
            out.append(f"| `{r['config']}` | {kind} | {r['batch']:,} | {_pct(r.get('mfu'))} | "
                       f"{_count(r.get('ops'))} | {' | '.join(roof)} | {_count(ops[0])} | {_count(ops[1])} |")
    return "\n".join(out)


def _count(x) -> str:
    return "-" if x is None else f"{x:,}"


def replace_between(page: str, new: str, block: str = BLOCK) -> str:
    """``page`` with the text between its ``block``'s marker lines replaced by ``new``; ``SystemExit`` without
    the markers."""
    try:
        return page_blocks.replace_block(page, block, new)
    except ValueError as e:
        raise SystemExit(f"table: {e}") from None


def between(page: str, block: str = BLOCK) -> str:
    """The text between the page's ``block`` marker lines (what :func:`replace_between` wrote)."""
    return page_blocks.block(page, block)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", type=Path, nargs="+", help="device.json files written by measure.py, in page order")
    ap.add_argument("--into", type=Path, default=None, metavar="PAGE.md",
                    help="replace the table between the page's gpu-table (or gpu-vs-roofline) markers instead of "
                         "printing it")
    ap.add_argument("--compare", type=Path, default=None, metavar="COMPILE.json",
                    help="render the measured-vs-roofline comparison against this `kifunet compile` table")
    a = ap.parse_args(argv)
    runs = []
    for path in a.json:
        try:
            result = json.loads(path.read_text())
            render(result, path.as_posix())
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"table: {path}: not a measure.py result with a train_step section ({type(e).__name__}: {e})",
                  file=sys.stderr)
            return 2
        runs.append((result, path.as_posix()))
    block = BLOCK
    if a.compare is None:
        text = render_runs(runs)
    else:
        try:
            compile_rows = json.loads(a.compare.read_text())["rows"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"table: {a.compare}: not a `kifunet compile` table ({type(e).__name__}: {e})", file=sys.stderr)
            return 2
        text, block = render_compare(runs, compile_rows, a.compare.as_posix()), COMPARE_BLOCK
    if a.into is None:
        print(text)
    else:
        a.into.write_text(replace_between(a.into.read_text(), text, block))
        print(f"table: wrote {sum(len(r['train_step']['rows']) for r, _ in runs)} rows of {len(runs)} run(s) "
              f"into {a.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
