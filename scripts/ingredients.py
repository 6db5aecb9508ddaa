"""The ingredient table (issue 16): runs of ``train/configs/ingredients.py`` with one change each, and their table.

    python scripts/ingredients.py list                     # the rows: name, change, command
    python scripts/ingredients.py run base base_seed1 relu # train each row (15 min) and keep its metrics
    python scripts/ingredients.py run mao resnet18 garb garb_plain   # issue 51's claim rows (docs/runs.md)
    python scripts/ingredients.py probes base              # score a row's trained net on the probe set again
    python scripts/ingredients.py retrain constant         # train a kept row again, check it, score its probes
    python scripts/ingredients.py probes base --workdir runs/profiles/kgs   # ... a run elsewhere that is the row
    python scripts/ingredients.py table                    # the markdown table of the kept rows
    python scripts/ingredients.py table --into docs/runs.md   # ... written into the manual's page
    python scripts/ingredients.py table --probes             # the probe set's table: solved per category

A row trains in ``runs/ingredients/ROW`` on ``data/kgs_FEATURES`` (``kifunet build ../shared/data/kgs/*.tar.gz
--out data/kgs_gonn --features gonn --preset gonn-kgs``, likewise ``maddison`` and ``alphago``), then keeps its
``config.json``, ``metrics_train.jsonl``, ``metrics_eval.jsonl`` and ``row.json`` (the command, the wall time
and the load average before and after) and ``probes.json`` (the trained net's scores on the probe set,
:mod:`kifunet.eval.probes`) in ``benchmarks/results/ingredients/ROW/``: a few kB each, committed. A
row already kept is not run again (delete its folder to redo it). The table compares each row's final
evaluation (the first 100,000 test rows) with the mean of the baseline's seeds and prints the seeds' spread
beside every difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEPT = REPO / "benchmarks" / "results" / "ingredients"
CONFIG = "train/configs/ingredients.py"
BASELINE_ROWS = ("base", "base_seed1")
SEED_ROWS = (BASELINE_ROWS, ("constant", "constant_seed1"))  # pairs that differ only in the seed


@dataclasses.dataclass(frozen=True)
class Row:
    change: str  # what differs from the baseline, as the table prints it
    features: str = "gonn"
    overrides: tuple[str, ...] = ()
    net: str = ""  # another net on the same recipe: ``CONFIG:net`` (train/configs/ingredients.py ARCHS)
    # (fast, slow): the row is kept row ``fast`` trained for as long as kept row ``slow`` took (:func:`equal_time`)
    equal_time: tuple[str, str] = ()

    @property
    def config(self) -> str:
        """The ``--config`` argument of the row's command."""
        return f"{CONFIG}:{self.net}" if self.net else CONFIG


# the schedule rows: the first two runs of the table, a constant rate under a time limit
CONSTANT = ("--config.schedule.name=constant", "--config.train_positions=1300000", "--config.time_limit_s=900")

ROWS = {
    "base": Row("baseline (seed 0)"),
    "base_seed1": Row("baseline, seed 1", overrides=("--config.seed=1",)),
    "no_global_pool": Row("no global pooling (trunk block and policy head)",
                          overrides=("--config.model.kwargs.global_blocks=()",
                                     "--config.model.kwargs.head_global_pool=False")),
    "relu": Row("ReLU instead of PReLU", overrides=("--config.model.kwargs.activation=relu",)),
    "no_dilation": Row("no dilated channels", overrides=("--config.model.kwargs.dilated_channels=0",)),
    "features_maddison": Row("`maddison` planes (36, rank planes) instead of `gonn`", features="maddison"),
    "features_alphago": Row("`alphago` planes (48) instead of `gonn`", features="alphago"),
    "rank_vector": Row("rank vector (learned, added to the trunk)", overrides=("--config.model.rank_embedding=True",)),
    "no_history_dropout": Row("no history dropout", overrides=("--config.input.history_dropout=none",)),
    "wide_shallow": Row("48 channels x 2 blocks (global block 2)",
                        overrides=("--config.model.kwargs.channels=48", "--config.model.kwargs.blocks=2",
                                   "--config.model.kwargs.global_blocks=(1,)")),
    "deep_narrow": Row("24 channels x 6 blocks (global block 4)",
                       overrides=("--config.model.kwargs.channels=24", "--config.model.kwargs.blocks=6",
                                  "--config.model.kwargs.global_blocks=(3,)")),
    "batch256": Row("batch 256 (same learning rate)", overrides=("--config.batch_size=256",)),
    "constant": Row("constant rate, 900 s of training instead of 600k positions (seed 0)",
                    overrides=CONSTANT),
    "constant_seed1": Row("constant rate, 900 s of training (seed 1)", overrides=(*CONSTANT, "--config.seed=1")),
    # issue 34: GoNN's blocks that carry information across the board (docs/gonn.md section 7), each one block
    # added after the trunk's four (so `extra_block` is their reference), and rank planes on the `gonn` set
    "extra_block": Row("5 blocks: one more dilated block at the end", overrides=("--config.model.kwargs.blocks=5",)),
    "extra_wide": Row("5 blocks, the 5th a wide low-rank block (1x9 + 9x1, both orders)",
                      overrides=("--config.model.kwargs.blocks=5", "--config.model.kwargs.wide_blocks=(4,)")),
    "chain_1x32": Row("5 blocks, the 5th a chain-pooling block of 32 channels",
                      overrides=("--config.model.kwargs.blocks=5", "--config.model.kwargs.chain_blocks=(4,)",
                                 "--config.model.kwargs.chain_channels=32")),
    "chain_2x64": Row("6 blocks, the 5th and 6th chain-pooling blocks of 64 channels",
                      overrides=("--config.model.kwargs.blocks=6", "--config.model.kwargs.chain_blocks=(4,5)",
                                 "--config.model.kwargs.chain_channels=64")),
    "six_blocks": Row("6 blocks: two more dilated blocks at the end (`chain_2x64`'s reference)",
                      overrides=("--config.model.kwargs.blocks=6",)),
    "rank_planes": Row("rank planes (Maddison's 9, one-hot 1d-9d) added to the `gonn` planes",
                       overrides=("--config.input.add_planes=rank_planes",)),
}
# issue 34: a second seed of each row whose difference from its reference lay in one seed spread, and of the references
SECOND_SEEDS = ("extra_block", "extra_wide", "chain_1x32", "chain_2x64", "six_blocks", "rank_planes")
ROWS.update({f"{n}_seed1": Row(f"{ROWS[n].change} (seed 1)", ROWS[n].features, (*ROWS[n].overrides, "--config.seed=1"))
             for n in SECOND_SEEDS})
SEED_ROWS = (*SEED_ROWS, *((n, f"{n}_seed1") for n in SECOND_SEEDS))

# issue 51: the papers' claims, each net on the baseline's recipe (data, batch, schedule, evaluation, probes).
# MAO against its paper's ResNet-18 at equal parameters; NoGoZero+'s GARB blocks against plain residual blocks in the
# same 5-block net; NoGoZero+'s extra heads on the baseline, with KataGo's ownership weight (1.5) and the score weight
# of the heads' first run (0.1; neither paper has a loss like ours for the score: docs/runs.md). Each with a seed-1
# twin; the faster net of each pair also at the slower one's CPU-seconds (``*_equal_time``)
OWNERSHIP = ("--config.model.kwargs.ownership_head=True", "--config.ownership_weight=1.5")
SCORE = ("--config.model.kwargs.score_head=True", "--config.score_weight=0.1")
CLAIM_ROWS = {
    "mao": Row("MAO net (Li et al. 2020) at its paper's size, 489,802 parameters, instead of GoNN's", net="mao"),
    "resnet18": Row("MAO's ResNet-18 (AlphaGo Zero blocks, 8 x 39), 491,949 parameters, instead of GoNN's",
                    net="resnet18"),
    "garb": Row("NoGoZero+ GARB net, 5 blocks x 32 (GARB blocks 2 and 4), 373,540 parameters, instead of GoNN's",
                net="garb"),
    "garb_plain": Row("the GARB net with plain residual blocks only (5 x 32), 362,148 parameters, instead of GoNN's",
                      net="garb_plain"),
    "heads_ownership": Row("+ ownership head (weight 1.5)", overrides=OWNERSHIP),
    "heads_score": Row("+ score head (weight 0.1)", overrides=SCORE),
    "heads_both": Row("+ ownership and score heads (weights 1.5, 0.1)", overrides=(*OWNERSHIP, *SCORE)),
}
# each pair at equal CPU-seconds: the faster net trained as long as the slower took (its seeds alike, by seed 0's pair)
for fast, slow in (("resnet18", "mao"), ("garb_plain", "garb")):
    CLAIM_ROWS[f"{fast}_equal_time"] = Row(f"{CLAIM_ROWS[fast].change}, for as long as `{slow}` took",
                                           net=CLAIM_ROWS[fast].net, equal_time=(fast, slow))
CLAIM_ROWS.update({f"{n}_seed1": Row(f"{r.change} (seed 1)", r.features, (*r.overrides, "--config.seed=1"), r.net,
                                     r.equal_time) for n, r in list(CLAIM_ROWS.items())})
#: the pairs a claim compares (the first the paper's ingredient, the second what it is measured against)
CLAIM_PAIRS = (("mao", "resnet18"), ("garb", "garb_plain"))
ROWS.update(CLAIM_ROWS)
SEED_ROWS = (*SEED_ROWS, *((n, f"{n}_seed1") for n in CLAIM_ROWS if not n.endswith("_seed1")))


def equal_time(row: Row) -> tuple[str, ...]:
    """The length override of an equal-time row (none for another row): kept row ``slow``'s final positions times
    the ratio of the kept rows' median training speeds, ``fast`` over ``slow`` (:func:`summary`), so that the
    faster net trains as many CPU-seconds as the slower one, on a whole schedule (a time limit would cut its cosine
    short). ``SystemExit`` until both rows are kept."""
    if not row.equal_time:
        return ()
    fast, slow = row.equal_time
    if not all((KEPT / n / "row.json").exists() for n in row.equal_time):
        raise SystemExit(f"ingredients: an equal-time row of {fast} takes its length from the kept rows {fast} and "
                         f"{slow} (their speeds): run them first")
    f, s = summary(KEPT / fast), summary(KEPT / slow)
    return (f"--config.train_positions={round(s['positions'] * f['rate'] / s['rate'])}",)


def command(name: str, row: Row, data_root: Path) -> list[str]:
    return ["kifunet", "train", "--config", row.config, "--workdir", f"runs/ingredients/{name}",
            f"--config.dataset={data_root}/kgs_{row.features}", *row.overrides, *equal_time(row)]


def row_config(row: Row):
    """The config ``row``'s overrides give: the baseline config with the row's changes."""
    from kifunet.train import configs

    overrides, rest = configs.parse_overrides([*row.overrides, *equal_time(row)])
    if rest:
        raise SystemExit(f"ingredients: not config overrides: {' '.join(rest)}")
    return configs.load(str(REPO / row.config), overrides)


def replay_command(name: str, data_root: Path) -> list[str]:
    """The command that trains kept row ``name``'s net again: the row's own, except that a time-limited row
    (``--config.time_limit_s``) trains to its kept final positions with no time limit, because how far a time limit
    gets depends on the machine's speed. Only a constant-rate row can be replayed so: any other schedule depends on
    ``train_positions`` (``SystemExit``)."""
    from kifunet.train.metric_writer import read_jsonl

    cmd, config = command(name, ROWS[name], data_root), row_config(ROWS[name])
    if not config.time_limit_s:
        return cmd
    if config.schedule.name != "constant":
        raise SystemExit(f"ingredients: {name} is time-limited and its schedule depends on its length: "
                         "it cannot be replayed to the same net")
    final = read_jsonl(str(KEPT / name / "metrics_eval.jsonl"))[-1]
    pinned = (f"--config.train_positions={int(final['positions'])}", "--config.time_limit_s=0")
    return [a for a in cmd if not a.startswith(("--config.train_positions=", "--config.time_limit_s="))] + list(pinned)


def check_dataset(name: str, data_root: Path) -> None:
    """``SystemExit`` in one line when row ``name`` trains the ownership head on a dataset without ownership targets
    (built before them, ``manifest.json`` ``format_version`` below 2, or with ``kifunet build --no-targets``): it
    reads with every ownership target masked, so the head would add nothing and the row would measure nothing. The score targets come from the games'
    results, which every version holds; a missing dataset is left to ``kifunet train`` to report."""
    from kifunet.data_prep.datasets.manifest import MANIFEST, missing_ownership_targets

    if not float(row_config(ROWS[name]).ownership_weight) > 0:
        return
    path = data_root / f"kgs_{ROWS[name].features}" / MANIFEST
    if not path.exists():
        return
    why = missing_ownership_targets(json.loads(path.read_text()))
    if why:
        raise SystemExit(f"ingredients: {name} trains the ownership head, but {path} {why}: build it again")


def retrain(name: str, data_root: Path) -> Path:
    """Train kept row ``name`` again (:func:`replay_command`) in ``runs/ingredients/ROW`` and score its net on the
    probe set once :func:`check_same_run` finds it the kept row's: how a row kept before the probe set existed, with
    its net not kept, gets its probe scores. The kept metrics are not touched."""
    if not (KEPT / name / "row.json").exists():
        raise SystemExit(f"ingredients: {name} is not kept yet: `run` it")
    check_dataset(name, data_root)
    cmd = replay_command(name, data_root)
    print("ingredients: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=REPO, check=True)
    return score_probes(name, REPO / "runs" / "ingredients" / name)


def run(name: str, data_root: Path) -> Path:
    row = ROWS[name]
    kept = KEPT / name
    if (kept / "row.json").exists():
        print(f"ingredients: {name} is kept already ({kept}); delete it to run again", file=sys.stderr)
        return kept
    check_dataset(name, data_root)
    cmd = command(name, row, data_root)
    print("ingredients: " + " ".join(cmd), file=sys.stderr, flush=True)
    load_before, t0 = os.getloadavg(), time.time()
    subprocess.run(cmd, cwd=REPO, check=True)
    wall, load_after = time.time() - t0, os.getloadavg()
    work = REPO / "runs" / "ingredients" / name
    kept.mkdir(parents=True, exist_ok=True)
    for f in ("config.json", "metrics_train.jsonl", "metrics_eval.jsonl"):
        shutil.copy2(work / f, kept / f)
    record = dict(row=name, change=row.change, features=row.features, command=" ".join(cmd),
                  wall_s=round(wall, 1), loadavg_before=[round(x, 2) for x in load_before],
                  loadavg_after=[round(x, 2) for x in load_after],
                  date=time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
    (kept / "row.json").write_text(json.dumps(record, indent=1) + "\n")
    score_probes(name)
    return kept


# the final evaluation's fields that identify a run: two runs that agree on all of them trained the same net
SAME_RUN_FIELDS = ("step", "positions", "nats", "top1", "top4", "eval_positions")


def check_same_run(name: str, work: Path) -> None:
    """``SystemExit`` unless the run in ``work`` ended with the same final evaluation as kept row ``name`` (every
    field of ``SAME_RUN_FIELDS``, to the last digit): a net trained elsewhere stands for the row only then."""
    from kifunet.train.metric_writer import read_jsonl

    kept = KEPT / name / "metrics_eval.jsonl"
    if not kept.exists() or not (work / "metrics_eval.jsonl").exists():
        raise SystemExit(f"ingredients: {name}: need both {kept} and {work / 'metrics_eval.jsonl'} to compare")
    a, b = read_jsonl(str(kept))[-1], read_jsonl(str(work / "metrics_eval.jsonl"))[-1]
    diff = {k: (a.get(k), b.get(k)) for k in SAME_RUN_FIELDS if a.get(k) != b.get(k)}
    if diff:
        raise SystemExit(f"ingredients: {work} is not row {name}'s run: its final evaluation differs in "
                         + ", ".join(f"{k} ({x} kept, {y} there)" for k, (x, y) in diff.items()))


def score_probes(name: str, workdir: Path | None = None) -> Path:
    """The probe set's scores (:mod:`kifunet.eval.probes`) of row ``name``'s trained net (``runs/ingredients/ROW``,
    its last checkpoint), kept as ``probes.json`` beside its metrics: top-1 and top-5 per category. ``workdir``
    names a run trained elsewhere that reproduced the row (:func:`check_same_run`), e.g. the profile arm ``kgs``
    (``runs/profiles/kgs``), which is row ``base`` with the dataset built again."""
    from kifunet.eval import probes
    from kifunet.eval.runs import load_run

    work = REPO / "runs" / "ingredients" / name
    if workdir is not None:
        work = workdir.resolve()
        check_same_run(name, work)
    res = probes.score(load_run(str(work)), probes.load_probes())
    res["net"] = {k: (os.path.relpath(v, REPO) if k in ("workdir", "checkpoint") and isinstance(v, str) else v)
                  for k, v in res["net"].items()}
    out = KEPT / name / "probes.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"ingredients: {name}: probes top-1 {100 * res['overall']['top1']:.1f}%, top-5 "
          f"{100 * res['overall']['top5']:.1f}% ({out})", file=sys.stderr)
    return out


def summary(kept: Path) -> dict:
    """One kept row: its final evaluation and training figures."""
    row = json.loads((kept / "row.json").read_text())
    from kifunet.train.metric_writer import read_jsonl

    evals, train = read_jsonl(str(kept / "metrics_eval.jsonl")), read_jsonl(str(kept / "metrics_train.jsonl"))
    final = evals[-1]
    rates = sorted(r["positions_per_s"] for r in train if "positions_per_s" in r)
    probes = json.loads((kept / "probes.json").read_text())["overall"] if (kept / "probes.json").exists() else None
    return dict(row, top1=100 * final["top1"], nats=final["nats"], eval_rows=int(final["eval_positions"]),
                positions=int(final["positions"]), rate=rates[len(rates) // 2],
                probes=None if probes is None else (100 * probes["top1"], 100 * probes["top5"]))


TABLE_HEAD = "| row | change | positions |"  # how the ingredient table's header line begins
PROBE_HEAD = "| row (probes solved, top-1 / top-5) |"  # ... and the probe table's


def kept_rows() -> dict[str, dict]:
    """Every kept row's :func:`summary`, ``{name: summary}``."""
    return {d.name: summary(d) for d in sorted(KEPT.iterdir()) if (d / "row.json").exists()} if KEPT.is_dir() else {}


def table(rows: dict[str, dict]) -> str:
    """Markdown: each row against the baseline seeds' mean, the seed spread (max - min) beside every difference."""
    base = [rows[b] for b in BASELINE_ROWS if b in rows]
    if not base:
        raise SystemExit("ingredients: no baseline row kept yet (run `base` first)")
    b1 = sum(r["top1"] for r in base) / len(base)
    bn = sum(r["nats"] for r in base) / len(base)
    s1 = max(r["top1"] for r in base) - min(r["top1"] for r in base)
    sn = max(r["nats"] for r in base) - min(r["nats"] for r in base)
    out = [f"{TABLE_HEAD} pos/s (median) | top-1 % | Δ top-1 (seed spread) | nats | Δ nats (seed spread) "
           "| probes top-1 / top-5 % |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in ROWS:
        if name not in rows:
            continue
        r = rows[name]
        out.append(f"| `{name}` | {r['change']} | {r['positions']:,} | {r['rate']:,.0f} | {r['top1']:.2f} | "
                   f"{r['top1'] - b1:+.2f} ({s1:.2f}) | {r['nats']:.4f} | {r['nats'] - bn:+.4f} ({sn:.4f}) | "
                   + ("not scored |" if r.get("probes") is None else f"{r['probes'][0]:.1f} / {r['probes'][1]:.1f} |"))
    for pair in SEED_ROWS:
        if all(n in rows for n in pair):
            a, b = (rows[n] for n in pair)
            out.append(f"\nSeed spread of `{pair[0]}` / `{pair[1]}`: {abs(a['top1'] - b['top1']):.2f} points top-1, "
                       f"{abs(a['nats'] - b['nats']):.4f} nats.")
    return "\n".join(out)


def probe_table(kept: Path = KEPT) -> str:
    """Markdown: each scored row's probes solved per category (top-1 / top-5, as counts), in the table's row order."""
    files = {n: kept / n / "probes.json" for n in ROWS}
    scored = {n: json.loads(f.read_text()) for n, f in files.items() if f.exists()}
    if not scored:
        raise SystemExit("ingredients: no row's probes are scored yet (`probes ROW`)")
    first = next(iter(scored.values()))
    cats = list(first["categories"])  # the probe set's categories, in its order

    def solved(c: dict) -> str:
        return f"{round(c['top1'] * c['count'])} / {round(c['top5'] * c['count'])}"

    out = [f"{PROBE_HEAD} " + " | ".join(f"{c.replace('_', ' ')} ({first['categories'][c]['count']})" for c in cats)
           + f" | all ({first['overall']['count']}) |",
           "|---|" + "---:|" * (len(cats) + 1)]
    for name, res in scored.items():
        out.append(f"| `{name}` | " + " | ".join(solved(res["categories"][c]) for c in cats)
                   + f" | {solved(res['overall'])} |")
    return "\n".join(out)


def replace_table(page: str, new: str, head_prefix: str = TABLE_HEAD) -> str:
    """``page`` with its table whose header starts with ``head_prefix`` (the ingredient table by default: from the
    header line through the last "Seed spread of" line after it) replaced by ``new``; ``SystemExit`` when the page
    has no such table."""
    lines = page.split("\n")
    head = next((i for i, ln in enumerate(lines) if ln.startswith(head_prefix)), None)
    if head is None:
        raise SystemExit(f"ingredients: the page has no such table (a line starting {head_prefix!r})")
    end = head
    while end + 1 < len(lines) and (lines[end + 1].startswith("|") or lines[end + 1] == ""
                                    or lines[end + 1].startswith("Seed spread of")):
        end += 1
    while lines[end] == "":
        end -= 1
    return "\n".join(lines[:head] + new.split("\n") + lines[end + 1:])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ingredients", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("list", help="the rows and their commands")
    training = argparse.ArgumentParser(add_help=False)  # what `run` and `retrain` take
    training.add_argument("rows", nargs="+", choices=sorted(ROWS))
    training.add_argument("--data-root", type=Path, default=Path("data"),
                          help="where data/kgs_FEATURES are (default data)")
    sub.add_parser("run", parents=[training], help="train rows and keep their metrics")
    sub.add_parser("retrain", parents=[training], help="train kept rows again (to their kept final positions) and "
                   "score their nets on the probe set")
    pr = sub.add_parser("probes", help="score rows' trained nets (runs/ingredients/ROW) on the probe set")
    pr.add_argument("rows", nargs="+", choices=sorted(ROWS))
    pr.add_argument("--workdir", type=Path, default=None,
                    help="score the net of this run instead (one row only): a run elsewhere that reproduced the row, "
                         "checked by its final evaluation")
    t = sub.add_parser("table", help="the markdown table of the kept rows")
    t.add_argument("--into", type=Path, default=None, metavar="PAGE.md",
                   help="replace the table (and its seed-spread lines) in this page instead of printing it")
    t.add_argument("--probes", action="store_true", help="the probe set's table instead: solved per category")
    args = p.parse_args(argv)
    if args.what == "list":
        for name, row in ROWS.items():
            try:
                cmd = " ".join(command(name, row, Path("data")))
            except SystemExit as e:  # an equal-time row before its pair is kept
                cmd = str(e)
            print(f"{name}: {row.change}\n    {cmd}")
    elif args.what in ("run", "retrain"):
        for name in args.rows:
            (run if args.what == "run" else retrain)(name, args.data_root)
    elif args.what == "probes":
        if args.workdir is not None and len(args.rows) != 1:
            p.error("probes --workdir scores one row")
        for name in args.rows:
            score_probes(name, args.workdir)
    else:
        text, head = (probe_table(), PROBE_HEAD) if args.probes else (table(kept_rows()), TABLE_HEAD)
        if args.into is None:
            print(text)
        else:
            args.into.write_text(replace_table(args.into.read_text(), text, head))
            rows = sum(ln.startswith("| `") for ln in text.splitlines())
            print(f"ingredients: wrote the table of {rows} rows into {args.into}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
