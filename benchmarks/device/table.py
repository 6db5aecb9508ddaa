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
README's table is this script's output for the committed JSON). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kifunet.eval import page_blocks

BLOCK = "gpu-table"  # README.md's block (kifunet.eval.page_blocks)
START, END = page_blocks.markers(BLOCK)
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


def replace_between(page: str, new: str) -> str:
    """``page`` with the text between its marker lines replaced by ``new``; ``SystemExit`` without the markers."""
    try:
        return page_blocks.replace_block(page, BLOCK, new)
    except ValueError as e:
        raise SystemExit(f"table: {e}") from None


def between(page: str) -> str:
    """The text between the page's marker lines (what :func:`replace_between` wrote)."""
    return page_blocks.block(page, BLOCK)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", type=Path, nargs="+", help="device.json files written by measure.py, in page order")
    ap.add_argument("--into", type=Path, default=None, metavar="PAGE.md",
                    help="replace the table between the page's gpu-table markers instead of printing it")
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
    text = render_runs(runs)
    if a.into is None:
        print(text)
    else:
        a.into.write_text(replace_between(a.into.read_text(), text))
        print(f"table: wrote {sum(len(r['train_step']['rows']) for r, _ in runs)} rows of {len(runs)} run(s) "
              f"into {a.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
