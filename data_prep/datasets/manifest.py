"""The dataset manifest: ``DIR/manifest.json``, written last (atomically), says what a built dataset holds.

:func:`write_manifest` seals it with ``manifest_sha256`` (:func:`content_sha256`). :func:`read_manifest` and
:func:`check_manifest` raise :class:`~kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` (one line naming
``manifest.json``) for a manifest that is not JSON or not whole: a needed key missing or mistyped, a shard outside
its split's folder, listed twice, or unlisted, a total that is not its sum, content that differs from its seal.
A manifest without a seal loads with one warning line per dataset and process. Its keys: docs/building.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"
FORMAT = "kifunet-dataset"
# 2: the games tables carry ownership targets (ownership, ownership_source, estimate_agreement); a version-1
# dataset reads with every target masked
FORMAT_VERSION = 2
#: the key holding the sha256 of the manifest's own content (:func:`content_sha256`)
SEAL = "manifest_sha256"
_SHARD_NAME = re.compile(r"shard-\d+\.h5")
#: the datasets (manifest realpaths) this process has warned about: written before the seal
_WARNED: set[str] = set()
ILLEGAL_MOVE_POLICY = ("a game with an illegal move (occupied point, suicide, simple-ko retake) is rejected "
                       "whole: reason 'illegal_move:<why>', the move named in rejects.jsonl")
DEDUPE_RULE = ("first copy in input order among games that pass every filter; the same game: GameRecord.game_id "
               "(moves, setup and board size; players, date, result and time settings, normalised)")

# Per-row columns of every dataset (see kifunet.data_prep.datasets.shards). The feature set's constant planes must be
# made from these. ``outcome`` is new: a manifest written before it lists the others only (the readers fill it).
BASE_COLUMNS = ("target", "to_move", "move_number", "player_rank", "opponent_rank", "game_index", "outcome")


def tool_version() -> str:
    from kifunet import __version__

    return __version__


def hash_json(obj) -> str:
    """sha256 of ``obj`` as canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def manifest(cfg, fs, fingerprint, infos, accounting, per_split, split_names, results, tasks) -> dict:
    """The manifest of a build (``cfg``: its ``BuildConfig``; the rest: what its stages produced)."""
    splits = {}
    for s in split_names:
        sp = per_split[s]
        files = [results[t["rel"]] for t in tasks if t["rel"].startswith(f"{s}/")]
        splits[s] = {"games": len(sp["games"]), "positions": sp["positions"], "rows": sp["rows"],
                     "results": sp["results"], "games_table": f"{s}/games.h5", "shards": files}
        games = os.path.join(cfg.out, s, "games.h5")
        if os.path.isfile(games):  # written before the manifest
            from .shards import sha256_file

            splits[s]["games_table_sha256"] = sha256_file(games)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool": {"name": "kifunet", "version": tool_version()},
        "fingerprint": hash_json(fingerprint),
        "features": {"name": fs.name, "version": fs.version, "num_planes": fs.num_planes,
                     "num_stored": fs.num_stored, "columns": list(fs.columns), "plane_names": fs.plane_names()},
        "board_size": cfg.filters.board_size,
        "columns": list(BASE_COLUMNS) + (["symmetry"] if cfg.symmetries == "all" else []),
        "storage": cfg.storage.to_json(),
        "shard_rows": cfg.shard_rows,
        "symmetries": cfg.symmetries,
        "targets": getattr(cfg, "targets", True),
        "seed": cfg.seed,
        "shuffle": "one permutation per split of all its rows, numpy default_rng(SeedSequence([seed, "
                   "sha256(split)[:8]])); shards are consecutive slices of it",
        "preset": cfg.preset,
        "source": getattr(cfg, "source", None),
        "options": cfg.options,
        "filters": cfg.filters.to_json(),
        "split_rule": cfg.splits.to_json(),
        "illegal_moves": ILLEGAL_MOVE_POLICY,
        "dedupe": DEDUPE_RULE if cfg.filters.dedupe else "off",
        "inputs": [i.to_json() for i in infos],
        "counts": accounting,
        "splits": splits,
        "unit_games": cfg.unit_games,
    }


def missing_ownership_targets(m: dict) -> str:
    """Why a dataset with manifest ``m`` holds no ownership targets, as a phrase (``"was built with --no-targets"``),
    or ``""`` when it holds them. A version-1 manifest predates the targets; ``"targets": false`` is
    ``kifunet build --no-targets``."""
    if m.get("targets", True) is False:
        return "was built with --no-targets"
    if int(m.get("format_version", 1)) < 2:
        return "was built before ownership targets (manifest format_version 1)"
    return ""


def content_sha256(m: dict) -> str:
    """The sha256 of a manifest's content: :func:`hash_json` of every key but :data:`SEAL`, taken from the JSON the
    manifest reads back as (so the writer and every reader hash the same thing)."""
    body = json.loads(json.dumps({k: v for k, v in m.items() if k != SEAL}, ensure_ascii=False))
    return hash_json(body)


def write_manifest(root: str, m: dict) -> None:
    """Seal ``m`` (set its :data:`SEAL`, in place) and write it as ``DIR/manifest.json`` atomically (the last file a
    build writes)."""
    from kifunet.data_prep.fileio.atomic import write_json_atomic

    m[SEAL] = content_sha256(m)
    write_json_atomic(os.path.join(root, MANIFEST), m)


def read_manifest(root: str) -> dict:
    """The manifest of the dataset at ``root``; ``FileNotFoundError`` if it is not a finished dataset,
    :class:`~kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` if it is not a JSON object."""
    from .dataset_base import CorruptDatasetError

    path = os.path.join(root, MANIFEST)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{root}: no {MANIFEST}; not a finished kifunet dataset")
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorruptDatasetError.at(path, f"not valid JSON ({e}); the manifest is damaged") from None
    if not isinstance(m, dict):
        raise CorruptDatasetError.at(path, f"holds a JSON {type(m).__name__}, not an object; the manifest is damaged")
    return m


#: what a reader needs of a manifest: (key path, type); ``*`` is every entry of a dict or list
_REQUIRED = (
    (("features", "name"), str), (("features", "version"), int), (("features", "num_planes"), int),
    (("features", "num_stored"), int), (("board_size",), int), (("columns",), list), (("splits",), dict),
    (("splits", "*", "games_table"), str), (("splits", "*", "shards"), list),
    (("splits", "*", "shards", "*", "file"), str), (("splits", "*", "shards", "*", "rows"), int),
    (("splits", "*", "shards", "*", "sha256"), str),
)


def check_manifest(m: dict, root: str, extra: tuple = (), warn: bool = True) -> None:
    """Check ``root``'s manifest whole (see the module docstring); raise
    :class:`~kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` naming the first fault (``extra``: more
    required top-level keys). ``warn``: one warning line (per dataset and process) for a manifest without a seal."""
    from .dataset_base import CorruptDatasetError

    def walk(node, keys, typ, where):
        if not keys:
            ok = isinstance(node, typ) and not (typ is int and isinstance(node, bool))
            return None if ok else f"{where} is {type(node).__name__}, not {typ.__name__}"
        k, rest = keys[0], keys[1:]
        if k == "*":
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for name, sub in items:
                why = walk(sub, rest, typ, f"{where}[{name!r}]" if isinstance(node, dict) else f"{where}[{name}]")
                if why:
                    return why
            return None
        if not isinstance(node, dict) or k not in node:
            return f"no key {where + '.' if where else ''}{k}"
        return walk(node[k], rest, typ, f"{where}.{k}" if where else k)

    path = os.path.join(root, MANIFEST)
    for keys, typ in _REQUIRED + tuple(((k,), object) for k in extra):
        why = walk(m, keys, typ, "")
        if why:
            raise CorruptDatasetError.at(path, f"{why}; the manifest is damaged")
    why = _listing_fault(m, root) or _totals_fault(m)
    if why:
        raise CorruptDatasetError.at(path, f"{why}; the manifest is damaged")
    if SEAL not in m:
        if warn:
            _warn_unsealed(path)
        return
    found = content_sha256(m)
    if found != m[SEAL]:
        raise CorruptDatasetError.at(path, f"its content has sha256 {found[:16]}..., its {SEAL} says "
                                           f"{str(m[SEAL])[:16]}...; the manifest was edited or is damaged")


def _listing_fault(m: dict, root: str) -> str | None:
    """Whether every shard ``file`` is a file of its own split's folder, listed once in the whole manifest, and every
    shard file of a split's folder is listed (see the module docstring); the fault, or None."""
    seen: dict[str, str] = {}
    for split, info in m["splits"].items():
        listed = set()
        for i, e in enumerate(info["shards"]):
            where = f"splits.{split}.shards[{i}]"
            rel = os.path.normpath(e["file"])
            if os.path.isabs(e["file"]) or os.path.dirname(rel) != split:
                return f"{where} lists {e['file']!r}, not a file of the split's folder {split}/"
            if rel in seen:
                return f"{where} lists {e['file']} again ({seen[rel]} lists it too)"
            seen[rel] = where
            listed.add(os.path.basename(rel))
        folder = os.path.join(root, split)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue  # no folder: each listed shard is reported missing when it is checked
        unlisted = [n for n in names if _SHARD_NAME.fullmatch(n) and n not in listed]
        if unlisted:
            more = f" (and {len(unlisted) - 1} more)" if len(unlisted) > 1 else ""
            return f"{split}/{unlisted[0]}{more} is in the split's folder but splits.{split}.shards does not list it"
    return None


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _totals_fault(m: dict) -> str | None:
    """Whether the manifest's totals are the sums of what they total (see the module docstring); the fault, or
    None. A total the manifest does not record is not checked."""
    per_position = 8 if m.get("symmetries") == "all" else 1
    games = positions = 0
    for split, info in m["splits"].items():
        rows = sum(e["rows"] for e in info["shards"])
        if _int(info.get("rows")) is not None and info["rows"] != rows:
            return f"splits.{split}.rows is {info['rows']:,}, its shards hold {rows:,}"
        pos = _int(info.get("positions"))
        if pos is not None and pos * per_position != rows:
            return (f"splits.{split}.positions is {pos:,}, its shards hold {rows:,} rows"
                    + (" (8 a position)" if per_position == 8 else ""))
        res = info.get("results")
        if isinstance(res, dict) and all(isinstance(r, dict) for r in res.values()):
            for key in ("games", "positions"):
                total = _int(info.get(key))
                got = sum(_int(r.get(key)) or 0 for r in res.values())
                if total is not None and got != total:
                    return f"splits.{split}.results sum to {got:,} {key}, splits.{split}.{key} is {total:,}"
        games += _int(info.get("games")) or 0
        positions += pos or 0
    counts = m.get("counts")
    if isinstance(counts, dict):
        used = _int(counts.get("used"))
        if used is not None and all(_int(i.get("games")) is not None for i in m["splits"].values()) and used != games:
            return f"counts.used is {used:,}, the splits hold {games:,} games"
        kept = _int((counts.get("positions") or {}).get("kept")) if isinstance(counts.get("positions"), dict) else None
        if kept is not None and all(_int(i.get("positions")) is not None for i in m["splits"].values()) and (
                kept != positions):
            return f"counts.positions.kept is {kept:,}, the splits hold {positions:,} positions"
    return None


def _warn_unsealed(path: str) -> None:
    """One warning line on stderr per dataset and process: the manifest has no :data:`SEAL`."""
    key = os.path.realpath(path)
    if key in _WARNED:
        return
    _WARNED.add(key)
    print(f"kifunet: warning: {path}: no {SEAL} (written before kifunet recorded it): its content is checked, "
          "its bytes are not", file=sys.stderr, flush=True)


def quiet_unsealed(root: str) -> None:
    """Do not warn about ``root``'s unsealed manifest in this process (a worker handed a split its parent checked)."""
    _WARNED.add(os.path.realpath(os.path.join(root, MANIFEST)))


def seal_line(m: dict) -> str:
    """What ``kifunet verify`` says of a manifest :func:`check_manifest` passed."""
    files = sum(len(i["shards"]) for i in m["splits"].values())
    whole = (f"checked whole ({len(m['splits'])} splits, {files} shard files each listed once, no unlisted shard "
             "file, totals = sums)")
    if SEAL in m:
        return f"{MANIFEST}: {whole}; {SEAL} intact ({m[SEAL][:16]}...)"
    return f"{MANIFEST}: {whole}; note: no {SEAL} (written before kifunet recorded it): its bytes are not checked"


def summary_lines(out: str, m: dict, details: tuple[str, str]) -> list[str]:
    """The console summary of a finished build (``kifunet build``, ``kifunet tfds``): ``seen = used + filtered +
    rejected``, each split, every filter and reject reason with its count, every input error, and ``details``.
    ``m``: the HDF5 manifest or the TFDS ``kifunet`` metadata."""
    c = m["counts"]
    lines = [f"{out}: {c['seen']} records seen = {c['used']} used + {sum(c['filtered'].values())} filtered "
             f"+ {sum(c['rejected'].values())} rejected"]
    for name, s in m["splits"].items():
        shards = f", {len(s['shards'])} shards" if "shards" in s else ""
        lines.append(f"  {name}: {s['games']} games, {s['positions']} positions{shards}")
    for reason, n in sorted({**{f"filtered {k}": v for k, v in c["filtered"].items()},
                             **{f"rejected {k}": v for k, v in c["rejected"].items()}}.items()):
        lines.append(f"  {reason}: {n}")
    for i in m["inputs"]:
        for e in i["errors"]:
            lines.append(f"  input error {e['reason']}: {e['path']} ({e['detail']})")
    lines.append(f"  details: {os.fspath(details[0])}, {os.fspath(details[1])}")
    return lines
