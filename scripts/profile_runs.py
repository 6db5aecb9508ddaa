"""The joint KGS + Fox experiment of the player profiles (issue 33): one net per domain, a joint net without the
profile and a joint net with it, at equal compute, two seeds each, every net scored on both test splits.

    python scripts/profile_runs.py list                    # the arms: name, what differs, command
    python scripts/profile_runs.py run kgs fox_seed1       # train each arm (~60-80 min on 2 cores) and keep it
    python scripts/profile_runs.py table                   # the markdown table of the kept arms
    python scripts/profile_runs.py who joint_profile --field source   # who played this: source, then year
    python scripts/profile_runs.py table --into docs/profiles.md   # ... written into the manual's page
    python scripts/profile_runs.py era joint_profile --into docs/profiles.md   # the era: true vs forced dates

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
kept as ``who_FIELD.json`` beside the arm. A kept arm is not run again (delete its folder to redo it); an arm
whose training stopped (SIGTERM, a crash) resumes from its checkpoint when run again, and its
training seconds add up over the invocations (``runs/profiles/ARM/train_wall_s.json`` holds the earlier ones).

``era ARM`` predicts test positions with their game's true date and with the date forced to another year, every
other profile field kept (:mod:`kifunet.eval.era`): (a) Fox test games of 2017-2019 forced to 2013, (b) Fox
2012-2014 forced to 2019, (c) KGS 2015 forced to 2005 and (d) to 2019, each on the first ``--rows`` positions of
the split in row order (default :data:`ERA_ROWS`). Kept as ``era.json`` beside the arm, with pictures of the two
most shifted positions of (a) and (b) in ``era/`` (drawing them replays their games from the build's inputs, at
the paths the build recorded: run it from the repository); ``--into PAGE.md`` writes its table between the page's
``profile-era`` markers (``profile-era-seed1`` for ``joint_profile_seed1``; ``who`` likewise). A kept ``era.json``
is not computed again, only printed (delete it to redo it).
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
# the differences the experiment is for: (arm, reference arm, test split), each once both arms have both seeds
COMPARISONS = (("joint_profile", "kgs", "kgs"), ("joint_profile", "fox", "fox"), ("joint", "kgs", "kgs"),
               ("joint", "fox", "fox"), ("joint_profile", "joint", "kgs"), ("joint_profile", "joint", "fox"))


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
    work = REPO / "runs" / "profiles" / name
    spent = work / "train_wall_s.json"  # the seconds of earlier, stopped invocations (SIGTERM to the trainer)
    before = json.loads(spent.read_text())["seconds"] if spent.exists() else 0.0
    try:
        subprocess.run(cmd, cwd=REPO, check=True)
    except subprocess.CalledProcessError:
        work.mkdir(parents=True, exist_ok=True)
        spent.write_text(json.dumps({"seconds": round(before + time.time() - t0, 1)}) + "\n")
        raise
    wall = before + time.time() - t0
    kept.mkdir(parents=True, exist_ok=True)
    evals = []
    for domain in DOMAINS:
        out = kept / f"eval_{domain}.json"
        ecmd = eval_command(name, domain, data_root, out.relative_to(REPO) if out.is_relative_to(REPO) else out)
        print("profile_runs: " + " ".join(ecmd), file=sys.stderr, flush=True)
        subprocess.run(ecmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        evals.append(" ".join(ecmd))
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
    """Markdown: each arm's top-1 and nats on both test splits; under it, each seed pair's mean and spread; then
    each of :data:`COMPARISONS` whose arms both have two seeds: the difference of the means, beside both spreads."""
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
    done = {p[0] for p in pairs}
    diffs = [c for c in COMPARISONS if {c[0], c[1]} <= done]
    if diffs:
        out += ["", "| difference of two-seed means | on | Δ top-1 points (seed spreads) | "
                    "Δ nats (seed spreads) |", "|---|---|---:|---:|"]
        for a, b, d in diffs:
            cells = []
            for i, p in ((0, 2), (1, 4)):
                (a0, a1), (b0, b1) = ((arms[n][d][i] for n in (x, f"{x}_seed1")) for x in (a, b))
                cells.append(f"{(a0 + a1 - b0 - b1) / 2:+.{p}f} ({abs(a0 - a1):.{p}f}, {abs(b0 - b1):.{p}f})")
            out.append(f"| `{a}` − `{b}` | {'KGS' if d == 'kgs' else 'Fox'} | " + " | ".join(cells) + " |")
        out.append("\nIn brackets: each arm's seed spread (|seed 0 − seed 1|), the first arm's first. A difference "
                   "inside the larger of the two is not an effect these runs can show.")
    n = {a[d][2] for a in arms.values() for d in DOMAINS}
    out.append(f"\nEach figure: the single pass on the first {', '.join(f'{x:,}' for x in sorted(n))} rows of the "
               "test split (KGS 2015; Fox: a quarter of the 2012-2019 games, by game hash).")
    return "\n".join(out)


def _into(page: str, name: str, new: str) -> str:
    """:func:`kifunet.eval.page_blocks.replace_block`, its error as this script's one line."""
    from kifunet.eval import page_blocks

    try:
        return page_blocks.replace_block(page, name, new)
    except ValueError as e:
        raise SystemExit(f"profile_runs: {e}") from None


def replace_table(page: str, new: str) -> str:
    """``page`` with its ``profile-runs`` block (:mod:`kifunet.eval.page_blocks`) replaced by ``new``."""
    return _into(page, "profile-runs", new)


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


ERA_ROWS = 20_000  # per comparison (--rows); 4 x 4,000 took 61 s with a 4 x 32 net on 2 busy cores: ~5 min
#: the comparisons: (key, domain, first year, last year of the games, the year their date is forced to)
ERA = (("a", "fox", 2017, 2019, 2013), ("b", "fox", 2012, 2014, 2019), ("c", "kgs", 2015, 2015, 2005),
       ("d", "kgs", 2015, 2015, 2019))
ERA_LISTED = 8  # most shifted positions listed in era.json, per comparison
ERA_PICTURES = {"a": 2, "b": 2}  # of them, drawn (beside era.json, in era/)


def _era_positions(pred, reader, rows, forced_days: int) -> list[dict]:
    """The positions of ``rows``: stones (from the stone planes), legality (the game replayed), the played move
    and the own-date and forced-date probabilities over the legal moves."""
    import numpy as np

    from kifunet.data_prep import profiles
    from kifunet.data_prep.datasets.stats import STONE_PLANES
    from kifunet.eval import attribution as A
    from kifunet.eval.board_image import masked_probs
    from kifunet.eval.legality import ReplayLegality

    reader.with_profile(True)
    batch = reader.batch(np.asarray(rows, np.int64))
    try:  # the build's inputs, at the paths the build was given (run from where it ran: the repository)
        legal = ReplayLegality(reader, batch["game_index"]).mask(batch)
    except FileNotFoundError as e:
        raise SystemExit(f"profile_runs: {reader.root}: cannot replay the most shifted games to draw them: {e}")
    names = reader.feature_set.plane_names()
    pair = next(((names.index(a), names.index(o)) for a, o in STONE_PLANES if a in names and o in names), None)
    if pair is None:
        raise SystemExit(f"profile_runs: {reader.root}: feature set {reader.feature_name} has no stone planes to draw")
    own = A.row_profiles(batch)
    logits = {k: pred.predict_with_value(dict(batch, profile=v), pad_to=256)[0]
              for k, v in (("own", own), ("forced", profiles.override_rows(own, {"date": int(forced_days)})))}
    out = []
    for i in range(len(rows)):
        mover, other = (1, 2) if int(batch["to_move"][i]) == 1 else (2, 1)
        planes = batch["planes"][i]
        stones = np.where(planes[:, :, pair[0]] > 0, mover, np.where(planes[:, :, pair[1]] > 0, other, 0))
        out.append({"stones": stones.astype(np.int8), "legal": legal[i], "to_move": mover,
                    "played": int(batch["target"][i]), "game_index": int(batch["game_index"][i]),
                    "move_number": int(batch["move_number"][i]), "days": int(batch["game_days"][i]),
                    **{k: masked_probs(z[i], legal[i]) for k, z in logits.items()}})
    return out


def _top(pos: dict, which: str, k: int = 3) -> list[tuple[str, float]]:
    from kifunet.eval.board_image import gtp
    from kifunet.eval.legality import top_moves

    n = pos["stones"].shape[0]
    p = pos[which]
    allowed = pos["legal"].copy()
    allowed[:n * n] &= pos["stones"].reshape(-1) == 0
    return [(gtp(m, n), float(p[m])) for m in top_moves(p, allowed, k)]


def _day(days: int) -> str:
    import numpy as np

    return str(np.datetime64(int(days), "D"))


def _era_picture(pos: dict, title: str, forced_year: int, path: Path) -> None:
    """Two boards of one position: the own-date and the forced-date policy, top 3 moves numbered, the played move
    outlined in red."""
    import io

    from matplotlib.figure import Figure
    from PIL import Image

    from kifunet.eval.board_image import draw_board

    fig = Figure(figsize=(10, 5.8), dpi=72)
    for j, (which, label) in enumerate((("own", f"own date {_day(pos['days'])}"), ("forced", f"forced {forced_year}"))):
        ax = fig.add_axes((0.02 + 0.5 * j, 0.05, 0.46, 0.77))
        tops = "  ".join(f"{k}. {m} {100 * q:.0f}%" for k, (m, q) in enumerate(_top(pos, which), 1))
        draw_board(pos["stones"], probs=pos[which], legal=pos["legal"], top_k=3, played=pos["played"], ax=ax,
                   side_panel=False, title=f"{label}\n{tops}")
    fig.suptitle(title, fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    buf.seek(0)
    small_png(Image.open(buf).convert("RGB"), path)


#: the exact colours a picture keeps when its palette is cut (the played move's outline: pure red)
KEEP_COLOURS = ((255, 0, 0),)


def small_png(rgb, path: Path, colors: int = 64) -> None:
    """``rgb`` (a PIL RGB image) saved as a ``colors``-colour palette PNG (a third of the bytes, the same picture to
    the eye) in which every pixel of a :data:`KEEP_COLOURS` colour keeps it exactly: a median cut alone merges the
    thin red outline with the heat map's dark browns."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(rgb)
    masks = [np.all(pixels == c, axis=-1) for c in KEEP_COLOURS]
    kept = [(c, m) for c, m in zip(KEEP_COLOURS, masks) if m.any()]
    q = rgb.quantize(colors=colors - len(kept))
    palette = q.getpalette()[:3 * (colors - len(kept))]
    index = np.array(q)
    for c, m in kept:
        index[m] = len(palette) // 3
        palette += list(c)
    out = Image.fromarray(index, "P")
    out.putpalette(palette)
    out.save(path, optimize=True)


def era(name: str, data_root: Path, rows: int = ERA_ROWS) -> Path:
    """``era.json`` of a kept profiled arm (module docstring), and pictures of the most shifted positions."""
    import numpy as np

    from kifunet.data_prep import profiles
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval import era as E
    from kifunet.eval.board_image import gtp
    from kifunet.eval.runs import load_run
    from kifunet.train.parallel import use_cpu_devices

    work = REPO / "runs" / "profiles" / name
    if not (work / "config.json").is_file():
        raise SystemExit(f"profile_runs: {work} holds no trained arm (run it first: profile_runs.py run {name})")
    use_cpu_devices(os.cpu_count() or 1)
    pred = load_run(str(work))
    if not pred.reads_profile:
        raise SystemExit(f"profile_runs: {work}: this net has no profile input, so a forced date changes nothing")
    out_dir = KEPT / name
    out_dir.mkdir(parents=True, exist_ok=True)
    t0, comparisons = time.time(), []
    for key, domain, first, last, year in ERA:
        reader = open_split(str(data_root / DOMAINS[domain]), "test")
        forced_days = profiles.parse_fields(f"year={year}")["date"]
        res = E.compare(pred, reader, E.rows_of_years(reader, first, last, rows), forced_days)
        top = E.most_shifted(res, ERA_LISTED)
        positions = _era_positions(pred, reader, res["row"][top], forced_days) if len(top) else []
        paths = reader.games()["path"]
        listed = [{"row": int(res["row"][i]), "game": str(paths[p["game_index"]]), "move_number": p["move_number"],
                   "shift": round(float(res["shift"][i]), 4), "played": gtp(p["played"], reader.board_size),
                   "own_top": _top(p, "own", 1)[0][0], "forced_top": _top(p, "forced", 1)[0][0]}
                  for i, p in zip(top, positions)]
        pictures = []
        for j, p in enumerate(positions[:ERA_PICTURES.get(key, 0)], 1):
            path = out_dir / "era" / f"{key}_{j}.png"
            who = "Black" if p["to_move"] == 1 else "White"
            _era_picture(p, f"({key}) {domain} {_day(p['days'])[:4]}, move {p['move_number']}, {who} to play "
                            f"(played: red square); shift {listed[j - 1]['shift']:.2f}", year, path)
            pictures.append(str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path))
        comparisons.append({"key": key, "domain": domain, "years": [first, last], "forced_year": year,
                            "games": int(len(np.unique(res["game_index"]))), **E.summary(res),
                            "openings": E.openings(res), "three_three": E.three_three(res), "most_shifted": listed,
                            "pictures": pictures})
        c = comparisons[-1]
        print(f"profile_runs: era {name} ({key}): {c['rows']} rows, top-1 {c['top1_own']} -> {c['top1_forced']}, "
              f"nats {c['nats_own']} -> {c['nats_forced']}", file=sys.stderr, flush=True)
    res = {"arm": name, "rows_limit": rows, "seconds": round(time.time() - t0, 1), "comparisons": comparisons}
    out = out_dir / "era.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def era_table(res: dict) -> str:
    """Markdown of a kept ``era.json``: each comparison's top-1 and nats under the true and the forced date, the
    mean shift, the openings test and the 3-3 probability; then the pictures (paths relative to the repository,
    so the page is one folder below it)."""
    out = ["| test games | forced to | positions (games) | top-1 % true → forced | Δ top-1 | nats true → forced | "
           "Δ nats | mean shift | most shifted 1% in moves ≤ 30 (all positions) | "
           "P(3-3), moves ≤ 40, true → forced |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    pics = []
    for c in res["comparisons"]:
        what = f"({c['key']}) {'Fox' if c['domain'] == 'fox' else 'KGS'} {c['years'][0]}" + (
            f"-{c['years'][1]}" if c["years"][1] != c["years"][0] else "")
        if not c["rows"]:
            out.append(f"| {what} | {c['forced_year']} | 0 | - | - | - | - | - | - | - |")
            continue
        o, t = c["openings"], c["three_three"]
        p33 = "-" if t["own"] is None else f"{100 * t['own']:.2f}% → {100 * t['forced']:.2f}%"
        out.append(f"| {what} | {c['forced_year']} | {c['rows']:,} ({c['games']:,}) | {c['top1_own']:.2f} → "
                   f"{c['top1_forced']:.2f} | {c['d_top1']:+.2f} | {c['nats_own']:.4f} → {c['nats_forced']:.4f} | "
                   f"{c['d_nats']:+.4f} | {c['mean_shift']:.4f} | {_pct(o['share_top'])} ({_pct(o['share_all'])}) "
                   f"| {p33} |")
        pics += [f"![({c['key']}) most shifted position {j}](../{p})" for j, p in enumerate(c["pictures"], 1)]
    out.append(f"\nArm `{res['arm']}`, at most {res['rows_limit']:,} positions per comparison (the first of the test "
               f"split in row order), {res['seconds']:.0f} s. Shift: the total-variation distance between the two "
               "move distributions (`kifunet.eval.era`).")
    if pics:
        out += ["", *pics]
    return "\n".join(out)


def block_name(kind: str, arm: str) -> str:
    """The page block (:mod:`kifunet.eval.page_blocks`) of ``kind`` (``profile-who`` or ``profile-era``) for a
    profiled arm: ``kind`` itself for ``joint_profile``, ``kind-seed1`` for ``joint_profile_seed1``."""
    return kind if arm == "joint_profile" else f"{kind}-{arm.removeprefix('joint_profile_')}"


def replace_era(page: str, new: str, arm: str = "joint_profile") -> str:
    """``page`` with ``arm``'s ``profile-era`` block (:func:`block_name`) replaced by ``new``."""
    return _into(page, block_name("profile-era", arm), new)


def who_table(kept: dict[str, dict]) -> str:
    """Markdown of the kept ``who_FIELD.json`` files of one arm (``{field: record}``): per field, how often the
    likeliest candidate is the true one from the moves of 1, 5 and 10 games, each candidate's own rate, and
    chance (one over the candidates)."""
    out = ["| guessed | candidates (test games each) | from 1 game | from 5 games | from 10 games | chance |",
           "|---|---|---:|---:|---:|---:|"]
    for field in ("source", "year"):
        if field not in kept:
            continue
        res = kept[field]
        cands = ", ".join(f"`{c}` ({res['games'][c]})" for c in res["candidates"])
        cells = {}
        for r in res["results"]:
            if r["accuracy"] is None:
                cells[r["n_games"]] = "-"
                continue
            per = ", ".join(f"{100 * v:.0f}" for v in (r["by_label"].get(str(k)) for k in r["labels"])
                            if v is not None)
            cells[r["n_games"]] = f"{100 * r['accuracy']:.1f}% ({per})"
        row = " | ".join(cells.get(n, "-") for n in WHO_N)
        out.append(f"| {field} | {cands} | {row} | {100 / len(res['candidates']):.0f}% |")
    arms = sorted({r["arm"] for r in kept.values()})
    hidden = {f: ", ".join(r["hidden"]) for f, r in kept.items()}
    trials = ", ".join(sorted({f"{r['results'][0]['trials']:,}" for r in kept.values()}))
    out.append(f"\nArm {', '.join(f'`{a}`' for a in arms)}; in brackets, the rate for each candidate in its order. "
               f"Each figure is over {trials} draws of a candidate, then of that many of its games. Hidden (unknown "
               "on every position): " + "; ".join(f"{f}: {h}" for f, h in hidden.items()) + ".")
    return "\n".join(out)


def kept_who(arm: str) -> dict[str, dict]:
    """The ``who_FIELD.json`` records kept for ``arm``, ``{field: record}`` (what :func:`who_table` reads)."""
    paths = {f: KEPT / arm / f"who_{f}.json" for f in ("source", "year")}
    return {f: json.loads(p.read_text()) for f, p in paths.items() if p.exists()}


def replace_who(page: str, new: str, arm: str = "joint_profile") -> str:
    """``page`` with ``arm``'s ``profile-who`` block (:func:`block_name`) replaced by ``new``."""
    return _into(page, block_name("profile-who", arm), new)


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
    w.add_argument("--into", type=Path, default=None, metavar="PAGE.md",
                   help="replace the table between the page's profile-who markers (profile-who-seed1 for "
                        "joint_profile_seed1), every kept field of the arm")
    e = sub.add_parser("era", help="the era: a kept profiled arm predicts test games with their true date and "
                                   "with another (kept as era.json; a kept one is only printed)")
    e.add_argument("arm", choices=sorted(n for n in ARMS if n.startswith("joint_profile")))
    e.add_argument("--rows", type=int, default=ERA_ROWS, help=f"positions per comparison at most ({ERA_ROWS:,})")
    e.add_argument("--data-root", type=Path, default=Path("data"))
    e.add_argument("--into", type=Path, default=None, metavar="PAGE.md",
                   help="replace the table between the page's profile-era markers (profile-era-seed1 for "
                        "joint_profile_seed1) instead of printing it")
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
        kept_file = KEPT / args.arm / f"who_{args.field}.json"
        if kept_file.exists():
            print(f"profile_runs: {kept_file} is kept already; delete it to run again", file=sys.stderr)
        else:
            who(args.arm, args.field, args.data_root)
        text = who_table(kept_who(args.arm))
        if args.into is None:
            print(text)
        else:
            args.into.write_text(replace_who(args.into.read_text(), text, args.arm))
    elif args.what == "era":
        if args.rows < 1:
            raise SystemExit(f"profile_runs: --rows must be at least 1, not {args.rows}")
        kept = KEPT / args.arm / "era.json"
        if kept.exists():
            print(f"profile_runs: {kept} is kept already; delete it to run again", file=sys.stderr)
        else:
            era(args.arm, args.data_root, args.rows)
        text = era_table(json.loads(kept.read_text()))
        if args.into is None:
            print(text)
        else:
            args.into.write_text(replace_era(args.into.read_text(), text, args.arm))
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
