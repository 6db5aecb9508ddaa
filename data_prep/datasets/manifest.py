"""The dataset manifest: ``DIR/manifest.json``, the one file that says what a built dataset holds.

A finished ``kifunet build`` output directory is recognised by its manifest, written last (atomically). The
manifest's keys:

===================  =========================================================================================
``format``           ``"kifunet-dataset"`` (:data:`FORMAT`); ``format_version``: :data:`FORMAT_VERSION`
``tool``             ``{"name": "kifunet", "version": ...}`` of the build
``fingerprint``      sha256 of the options and inputs the build depended on (:func:`hash_json`)
``features``         name, version, ``num_planes``, ``num_stored``, the per-row ``columns`` the constant planes
                     are made from, and ``plane_names``
``board_size``       N
``columns``          the per-row columns of every shard: :data:`BASE_COLUMNS` (+ ``symmetry`` when the eight
                     symmetries are stored)
``storage``          plane layout, codec, level, chunk rows (:class:`kifunet.data_prep.datasets.shards.Storage`)
``splits``           per split: ``games``, ``positions``, ``rows``, ``results`` (games and positions by result
                     kind), ``games_table``, ``games_table_sha256`` (recorded since kifunet checks it; older
                     manifests lack it) and ``shards`` (file, rows, layout, sha256)
``counts``           the accounting: ``seen = used + filtered{reason} + rejected{reason}``, positions, and
                     ``results``: the used games and their positions by result kind (every kind of
                     :data:`kifunet.data_prep.results.KINDS`; games sum to ``used``, positions to
                     ``positions.kept``; :func:`kifunet.data_prep.building.plan_stage.result_counts`)
``inputs``           every input with its hash, record count and damage
``source``           the games' declared source (``kifunet build --source`` or the preset's; one of
                     :data:`kifunet.data_prep.profiles.SOURCES`), which the games tables' ``source`` codes
                     hold for every game; None when not declared (each record's ``PC``/``AP``/path says)
other keys           ``preset``, ``options``, ``filters``, ``split_rule``, ``seed``, ``shuffle``,
                     ``symmetries``, ``shard_rows``, ``unit_games``, ``illegal_moves``, ``dedupe``
===================  =========================================================================================

``rejects.jsonl`` (:data:`REJECTS`) beside it holds one JSON line per record not used.

:func:`read_manifest` reports a manifest that is not JSON, and :func:`check_manifest` one that lacks what the
readers need, as :class:`kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` (one line, naming the file);
:mod:`kifunet.data_prep.datasets.verify` checks the files against it.
"""

from __future__ import annotations

import hashlib
import json
import os

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"
FORMAT = "kifunet-dataset"
FORMAT_VERSION = 1
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


def write_manifest(root: str, m: dict) -> None:
    """Write ``DIR/manifest.json`` atomically (the last file a build writes)."""
    from .shards import write_json_atomic

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


def check_manifest(m: dict, root: str, extra: tuple = ()) -> None:
    """Raise :class:`~kifunet.data_prep.datasets.dataset_base.CorruptDatasetError` naming ``root``'s manifest and the
    first key a reader needs that is missing or of the wrong type (``extra``: more top-level keys required)."""
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

    for keys, typ in _REQUIRED + tuple(((k,), object) for k in extra):
        why = walk(m, keys, typ, "")
        if why:
            raise CorruptDatasetError.at(os.path.join(root, MANIFEST), f"{why}; the manifest is damaged")


def summary_lines(out: str, m: dict, details: tuple[str, str]) -> list[str]:
    """The console summary of a finished build (``kifunet build`` and ``kifunet tfds`` print it): records
    ``seen = used + filtered + rejected``, each split (games, positions, and shards where the manifest lists
    them), every filter and reject reason with its count, every input error, and ``details`` (the manifest or
    metadata path, rejects.jsonl). ``m``: the HDF5 manifest or the TFDS ``kifunet`` metadata (the same
    ``counts``, ``splits`` and ``inputs``)."""
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
