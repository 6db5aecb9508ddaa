"""The joint KGS + Fox experiment of the player profiles (issue 33): one net per domain, a joint net without the
profile and a joint net with it, at equal compute, two seeds each, every net scored on both test splits.

    python scripts/profile_runs.py list                    # the arms: name, what differs, command
    python scripts/profile_runs.py run kgs fox_seed1       # train each arm (~60-80 min on 2 cores) and keep it
    python scripts/profile_runs.py table                   # the markdown table of the kept arms
    python scripts/profile_runs.py who joint_profile --field source   # who played this: source, then year
    python scripts/profile_runs.py table --into docs/profiles.md   # ... written into the manual's page

Every arm is ``train/configs/ingredients.py`` (the ingredient table's 4 x 32 GoNN ResNet and its fixed budget of
600,064 positions), so the arms differ only in their data and the profile input:

* ``kgs`` / ``fox``: one domain, ``data/kgs_gonn_src`` (``kifunet build ../shared/data/kgs/*.tar.gz --out
  data/kgs_gonn_src --features gonn --preset gonn-kgs``) or ``data/fox_gonn_split`` (``kifunet build
  ../shared/data/fox/*.tar.gz --out data/fox_gonn_split --features gonn --preset fox-pro --split train:rest
  --hash-split test:0.25``: the preset's games, a quarter of them by game hash for the test split, since the
  preset alone puts every game in ``test``);
* ``joint``: both, mixed half and half in every batch (``--config.input.mix_weights=1,1``), so it sees half as
  many positions of each domain as the one-domain nets see of theirs;
* ``joint_profile``: the same with a 32-wide profile MLP (``--config.model.profile_embedding=32``), which reads
  each game's date, source, time control, ranks, handicap and komi (docs/profiles.md).

An arm trains in ``runs/profiles/ARM``, is evaluated by ``kifunet eval`` on the first 100,000 rows of each
test split, and keeps ``config.json``, ``metrics_*.jsonl``, ``eval_kgs.json``, ``eval_fox.json`` (with their
breakdowns by year, source, rank and time control) and ``arm.json`` (commands, wall time, load average) in
``benchmarks/results/profiles/ARM/``.

``who ARM --field source|year`` asks a profiled arm who played test games, from their moves alone
(:mod:`kifunet.eval.attribution`): every profile field but the one guessed is hidden (unknown) on every position,
the candidates are ``source=kgs`` / ``source=fox`` (games of both test splits) or the years 2013, 2015, 2017, 2019
(the Fox test split: 2012-2019), and the guess from 1, 5 and 10 games of one class is scored over 2,000 draws;
kept as ``who_FIELD.json`` beside the arm. A kept arm is not run again (delete its folder to redo it); an arm whose
training stopped (SIGTERM, a crash) resumes from its checkpoint when run again.
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
KEPT = REPO / "benchmarks" / "results" / "profiles"
CONFIG = "train/configs/ingredients.py"
DOMAINS = {"kgs": "kgs_gonn_src", "fox": "fox_gonn_split"}  # the test splits every arm is scored on
EVAL_ROWS = 100_000
PROFILE_WIDTH = 32


@dataclasses.dataclass(frozen=True)
class Arm:
    change: str  # what the arm is, as the table prints it
    domains: tuple[str, ...]  # the datasets it trains on (keys of DOMAINS)
    overrides: tuple[str, ...] = ()


_BASE = {
    "kgs": Arm("KGS only", ("kgs",)),
    "fox": Arm("Fox only", ("fox",)),
    "joint": Arm("KGS + Fox, half each, no profile", ("kgs", "fox"), ("--config.input.mix_weights=1,1",)),
    "joint_profile": Arm("KGS + Fox, half each, profile input", ("kgs", "fox"),
                         ("--config.input.mix_weights=1,1", f"--config.model.profile_embedding={PROFILE_WIDTH}")),
}
ARMS = {**_BASE, **{f"{n}_seed1": Arm(f"{a.change} (seed 1)", a.domains, (*a.overrides, "--config.seed=1"))
                    for n, a in _BASE.items()}}
SEED_PAIRS = tuple((n, f"{n}_seed1") for n in _BASE)


def train_command(name: str, data_root: Path) -> list[str]:
    arm = ARMS[name]
    data = ",".join(f"{data_root}/{DOMAINS[d]}" for d in arm.domains)
    return ["kifunet", "train", "--config", CONFIG, "--workdir", f"runs/profiles/{name}", f"--config.dataset={data}",
            *arm.overrides]


def eval_command(name: str, domain: str, data_root: Path, out: Path) -> list[str]:
    return ["kifunet", "eval", "--checkpoint", f"runs/profiles/{name}", "--data", f"{data_root}/{DOMAINS[domain]}",
            "--limit", str(EVAL_ROWS), "--out", str(out), "--no-progress"]


def run(name: str, data_root: Path) -> Path:
    kept = KEPT / name
    if (kept / "arm.json").exists():
        print(f"profile_runs: {name} is kept already ({kept}); delete it to run again", file=sys.stderr)
        return kept
    for d in DOMAINS.values():
        if not (data_root / d / "manifest.json").is_file():
            raise SystemExit(f"profile_runs: {data_root / d} is not built (see this script's docstring)")
    cmd = train_command(name, data_root)
    print("profile_runs: " + " ".join(cmd), file=sys.stderr, flush=True)
    load_before, t0 = os.getloadavg(), time.time()
    subprocess.run(cmd, cwd=REPO, check=True)
    wall = time.time() - t0
    kept.mkdir(parents=True, exist_ok=True)
    evals = []
    for domain in DOMAINS:
        ecmd = eval_command(name, domain, data_root, kept / f"eval_{domain}.json")
        print("profile_runs: " + " ".join(ecmd), file=sys.stderr, flush=True)
        subprocess.run(ecmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        evals.append(" ".join(ecmd))
    work = REPO / "runs" / "profiles" / name
    for f in ("config.json", "metrics_train.jsonl", "metrics_eval.jsonl"):
        shutil.copy2(work / f, kept / f)
    record = dict(arm=name, change=ARMS[name].change, command=" ".join(cmd), evals=evals, train_wall_s=round(wall, 1),
                  loadavg_before=[round(x, 2) for x in load_before],
                  loadavg_after=[round(x, 2) for x in os.getloadavg()],
                  date=time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
    (kept / "arm.json").write_text(json.dumps(record, indent=1) + "\n")
    return kept


def scores(kept: Path) -> dict:
    """One kept arm: top-1 (%) and nats of its single pass on each domain's test rows."""
    out = json.loads((kept / "arm.json").read_text())
    for domain in DOMAINS:
        single = json.loads((kept / f"eval_{domain}.json").read_text())["results"]["single"]
        out[domain] = (100 * single["accuracy"]["1"], single["cross_entropy_nats"], single["count"])
    return out


def table(arms: dict[str, dict]) -> str:
    """Markdown: each arm's top-1 and nats on both test splits; under it, each seed pair's mean and spread."""
    out = ["| arm | trained on | KGS top-1 % | KGS nats | Fox top-1 % | Fox nats |", "|---|---|---:|---:|---:|---:|"]
    for name in ARMS:
        if name in arms:
            a = arms[name]
            out.append(f"| `{name}` | {a['change']} | {a['kgs'][0]:.2f} | {a['kgs'][1]:.4f} | {a['fox'][0]:.2f} | "
                       f"{a['fox'][1]:.4f} |")
    pairs = [p for p in SEED_PAIRS if all(n in arms for n in p)]
    if pairs:
        out += ["", "| arm, two seeds | KGS top-1 % (spread) | KGS nats (spread) | Fox top-1 % (spread) | "
                    "Fox nats (spread) |", "|---|---:|---:|---:|---:|"]
        for pair in pairs:
            a, b = (arms[n] for n in pair)
            cells = [f"{(a[d][i] + b[d][i]) / 2:.{p}f} ({abs(a[d][i] - b[d][i]):.{p}f})"
                     for d in DOMAINS for i, p in ((0, 2), (1, 4))]
            out.append(f"| `{pair[0]}` | " + " | ".join(cells) + " |")
    n = {a[d][2] for a in arms.values() for d in DOMAINS}
    out.append(f"\nEach figure: the single pass on the first {', '.join(f'{x:,}' for x in sorted(n))} rows of the "
               "test split (KGS 2015; Fox: a quarter of the 2012-2019 games, by game hash).")
    return "\n".join(out)


def replace_table(page: str, new: str) -> str:
    """``page`` with the text between its ``<!-- profile-runs:start -->`` / ``<!-- profile-runs:end -->`` lines
    replaced by ``new``."""
    start, end = "<!-- profile-runs:start -->", "<!-- profile-runs:end -->"
    if page.count(start) != 1 or page.count(end) != 1:
        raise SystemExit(f"profile_runs: the page needs one '{start}' line and one '{end}' line")
    before, rest = page.split(start, 1)
    return f"{before}{start}\n{new}\n{end}{rest.split(end, 1)[1]}"


WHO_GAMES = 100  # games per class
WHO_N = (1, 5, 10)
WHO_YEARS = (2013, 2015, 2017, 2019)


def who(name: str, field: str, data_root: Path) -> Path:
    """``who_FIELD.json`` of a kept profiled arm (module docstring)."""
    import numpy as np

    from kifunet.data_prep import profiles
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval import attribution as A
    from kifunet.eval.runs import load_run

    pred = load_run(str(REPO / "runs" / "profiles" / name))
    key = "source" if field == "source" else "date"
    hide = tuple(f for f in profiles.FIELD_SLICES if f != key)
    if field == "source":
        cands = [profiles.parse_fields(f"source={d}") for d in DOMAINS]
        domains = list(DOMAINS)
    else:
        cands = [profiles.parse_fields(f"year={y}") for y in WHO_YEARS]
        domains = ["fox"]
    nll, labels, t0 = [], [], time.time()
    for domain in domains:
        reader = open_split(str(data_root / DOMAINS[domain]), "test")
        g = A.game_fields(reader)
        lab = A.source_labels(g["source"], cands) if field == "source" else A.year_labels(g["days"], cands)
        games = A.pick_games(lab, WHO_GAMES, seed=0)
        nll.append(A.game_nll(pred, reader, games, cands, hide=hide))
        labels.append(lab[games])
        print(f"profile_runs: who {name} {field}: {domain}, {len(games)} games scored", file=sys.stderr, flush=True)
    nll, labels = np.concatenate(nll), np.concatenate(labels)
    res = {"arm": name, "field": field, "candidates": [profiles.fields_text(c) for c in cands], "hidden": list(hide),
           "games": {profiles.fields_text(c): int(np.sum(labels == k)) for k, c in enumerate(cands)},
           "seconds": round(time.time() - t0, 1),
           "results": [A.accuracy(nll, labels, n, trials=2000, seed=n) for n in WHO_N]}
    out = KEPT / name / f"who_{field}.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    for r in res["results"]:
        print(f"profile_runs: from {r['n_games']} game(s): {r['accuracy']}", file=sys.stderr)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="profile_runs", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("list", help="the arms and their commands")
    r = sub.add_parser("run", help="train arms, evaluate them on both test splits and keep the results")
    r.add_argument("arms", nargs="+", choices=sorted(ARMS))
    r.add_argument("--data-root", type=Path, default=Path("data"), help="where the datasets are (default data)")
    w = sub.add_parser("who", help="who played this: a kept profiled arm guesses the source or the year of test games")
    w.add_argument("arm", choices=sorted(n for n in ARMS if n.startswith("joint_profile")))
    w.add_argument("--field", choices=("source", "year"), required=True)
    w.add_argument("--data-root", type=Path, default=Path("data"))
    t = sub.add_parser("table", help="the markdown table of the kept arms")
    t.add_argument("--into", type=Path, default=None, metavar="PAGE.md",
                   help="replace the table between the page's profile-runs markers instead of printing it")
    args = p.parse_args(argv)
    if args.what == "list":
        for name, arm in ARMS.items():
            print(f"{name}: {arm.change}\n    {' '.join(train_command(name, Path('data')))}")
    elif args.what == "run":
        for name in args.arms:
            run(name, args.data_root)
    elif args.what == "who":
        who(args.arm, args.field, args.data_root)
    else:
        kept = {d.name: scores(d) for d in sorted(KEPT.iterdir()) if (d / "arm.json").exists()} if KEPT.is_dir() else {}
        if not kept:
            raise SystemExit("profile_runs: no arm is kept yet (run one first)")
        text = table(kept)
        if args.into is None:
            print(text)
        else:
            args.into.write_text(replace_table(args.into.read_text(), text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
