"""TensorFlow Datasets builder ``go_moves``: the positions of ``kifunet build``, as a TFDS dataset (array_record).

The same SGF inputs, filters, splits, duplicates, rejects and feature planes as ``kifunet build`` (the builder runs
the build's own stages); only the container differs. Needs ``tensorflow-datasets`` and ``array-record``
(``pip install 'kifunet[tfds]'``), not TensorFlow. Named configs are protocol x feature set (``kgs_maddison``,
``gogod_agz``, ...); other options make a custom config (:func:`config_from_options`). Two builds of the same inputs
and options write byte-identical files (:func:`canonical_record`). The example's features, usage, Beam, empty
splits and interrupted builds: docs/tfds.md.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import os
import shutil
import sys
import tempfile

import numpy as np
import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.core import writer as tfds_writer
from tensorflow_datasets.proto import tf_example_pb2

from .. import profiles
from ..errors import InvalidValue
from ..planes import features as features_mod
from . import filters as filters_mod
from ..sgf import inputs as inputs_mod
from ..datasets import shards as shards_mod
from . import build_lock
from . import splits as splits_mod
from .encode_stage import UNIT_GAMES, encode_inputs, encode_record, read_unit, unit_arrays, unit_config
from ..datasets.manifest import DEDUPE_RULE, ILLEGAL_MOVE_POLICY, hash_json, tool_version
from .plan_stage import add_result, plan, reject_line, result_counts
from .worker_pool import WorkerPool
from ..datasets.tfds_reader import METADATA

NAME = "go_moves"
VERSION = "1.3.0"  # see GoMoves.RELEASE_NOTES: 1.3.0 the profile features; 1.2.0 outcome; 1.1.0 game_id
FORMAT = "kifunet-tfds"
FORMAT_VERSION = 1
REJECTS = "rejects.jsonl"
#: the build lock in DATA_DIR/go_moves/CONFIG (an exclusive flock held by :func:`build_dataset`)
LOCK = ".kifunet-tfds.lock"
#: TFDS prepares a dataset in DATA_DIR/go_moves/CONFIG/incomplete.XXXXXX_VERSION, renamed when done
INCOMPLETE_PREFIX = "incomplete."
#: the encode stage's spill directory in the system's temporary directory: kifunet-tfds-PID-XXXXXXXX
WORK_PREFIX = "kifunet-tfds-"
PROTOCOLS = {"kgs": "gonn-kgs", "gogod": "gonn-gogod"}
FEATURE_SETS = ("maddison", "alphago", "agz", "gonn")
_BEAM_SUMMARY = "kifunet-beam-summary.json"

log = logging.getLogger(__name__)


@dataclasses.dataclass(eq=False)
class GoMovesConfig(tfds.core.BuilderConfig):
    """One protocol x feature set. ``preset``: a :data:`kifunet.data_prep.building.filters.PRESETS` key (or None);
    ``options``: build config-file keys applied over it (filters, ``splits``, ``val_fraction``,
    ``hash_splits``)."""

    features: str = "maddison"
    preset: str | None = None
    options: dict = dataclasses.field(default_factory=dict)

    def feature_set(self) -> features_mod.FeatureSet:
        """The :class:`~kifunet.data_prep.planes.features.FeatureSet` named ``features`` (the builder passes the
        object on: to the encode stage and its workers, and to the Beam steps)."""
        return features_mod.get(self.features)

    def resolved(self) -> dict:
        opts = dict(self.options)
        hash_splits = opts.pop("hash_splits", None)
        merged = filters_mod.resolve(preset=self.preset, config=opts)
        if hash_splits:
            merged["hash_splits"] = list(hash_splits)
        return merged

    def filters(self) -> filters_mod.Filters:
        f = filters_mod.filters_from_options(self.resolved())
        if not f.dedupe:
            raise InvalidValue(f"{self.name}: the TFDS builder needs dedupe on (example keys are game ids)")
        return f

    def split_rule(self) -> splits_mod.SplitRule:
        o = self.resolved()
        return splits_mod.make_rule(o.get("splits"), o.get("hash_splits"), o.get("val_fraction"))

    def source(self) -> str | None:
        """The games' declared source (the preset's ``source``, or ``--source``), None when not declared."""
        return filters_mod.source_from_options(self.resolved())


def _configs() -> list[GoMovesConfig]:
    out = []
    for proto, preset in PROTOCOLS.items():
        for fs in FEATURE_SETS:
            out.append(GoMovesConfig(name=f"{proto}_{fs}", features=fs, preset=preset,
                                     description=f"preset {preset}, feature set {fs}"))
    return out


def named_config(name: str) -> GoMovesConfig:
    """The named config ``name`` (``kgs_maddison``...)."""
    for c in GoMoves.BUILDER_CONFIGS:
        if c.name == name:
            return c
    raise InvalidValue(f"unknown go_moves config {name!r}; known: {', '.join(c.name for c in GoMoves.BUILDER_CONFIGS)}")


def _content(fs: features_mod.FeatureSet, filt: filters_mod.Filters, rule: splits_mod.SplitRule,
             source: str | None) -> dict:
    """What a dataset's examples depend on besides its inputs (as the build's fingerprint, less storage)."""
    return {"features": {"name": fs.name, "version": fs.version}, "filters": filt.to_json(),
            "split_rule": rule.to_json(), "source": source}


def config_from_options(base: str, opts, name: str | None = None) -> str | GoMovesConfig:
    """The builder config of ``kifunet tfds --config BASE [options]`` (``opts``: the resolved dataset options).

    A named config when the options give that config's positions (BASE's, or e.g. ``kgs_agz`` for ``--config
    kgs_maddison --features agz``); otherwise a custom config named ``name`` (default ``BASE_`` + 8 hex digits of
    the options' hash)."""
    named_config(base)  # a known base
    options = {k: v for k, v in opts.options.items() if k != "preset"}
    cfg = GoMovesConfig(name=name or base, features=opts.features, preset=opts.preset, options=options,
                        description=f"{base} with options {json.dumps(opts.options, sort_keys=True)}, "
                                    f"feature set {opts.features}")
    content = _content(cfg.feature_set(), cfg.filters(), cfg.split_rule(), cfg.source())
    same = [c.name for c in GoMoves.BUILDER_CONFIGS
            if _content(c.feature_set(), c.filters(), c.split_rule(), c.source()) == content]
    if name is None:
        if same:  # the positions of a named config (``--config kgs_maddison --features agz`` is ``kgs_agz``)
            return base if base in same else same[0]
        cfg.name = f"{base}_{hash_json(content)[:8]}"
    elif name in {c.name for c in GoMoves.BUILDER_CONFIGS}:
        if name in same:
            return name
        raise InvalidValue(f"--name {name}: a named config's options are fixed; pick another name for these options")
    return cfg


def example_features(board_size: int, num_stored: int) -> tfds.features.FeaturesDict:
    w = shards_mod.point_width(num_stored)
    return tfds.features.FeaturesDict({
        # BYTES: one bytes value in the tf.Example (the default writes an int64 list: 4x slower to serialize)
        "planes": tfds.features.Tensor(shape=(board_size, board_size, w), dtype=np.uint8,
                                       encoding=tfds.features.Encoding.BYTES),
        "target": tfds.features.Scalar(dtype=np.int16),
        "to_move": tfds.features.Scalar(dtype=np.int8),
        "move_number": tfds.features.Scalar(dtype=np.int16),
        "player_rank": tfds.features.Scalar(dtype=np.int8),
        "opponent_rank": tfds.features.Scalar(dtype=np.int8),
        "outcome": tfds.features.Scalar(dtype=np.int8),
        "game": tfds.features.Text(),
        "days": tfds.features.Scalar(dtype=np.int32),
        "source": tfds.features.Scalar(dtype=np.int8),
        "time_control": tfds.features.Scalar(dtype=np.int8),
        "handicap": tfds.features.Scalar(dtype=np.int8),
        "komi": tfds.features.Scalar(dtype=np.float32),
    })


def example_key(game_id: str, move_number: int) -> str:
    return f"{game_id}-{int(move_number):04d}"


def canonical_record(serialized: bytes) -> bytes:
    """A serialized ``tf.Example`` in its canonical form (feature map sorted by key): the same bytes in
    every process, where ``SerializeToString()`` orders the map by a per-process hash seed.
    """
    return tf_example_pb2.Example.FromString(serialized).SerializeToString(deterministic=True)


class _CanonicalExampleWriter(tfds_writer.ExampleWriter):
    """TFDS's example writer (``GeneratorBasedBuilder._example_writer``, used by the one-machine
    and Beam paths) writing each record as :func:`canonical_record`; record lengths, so split sizes, are unchanged.
    """

    def write(self, path, examples):
        return super().write(path, ((k, canonical_record(v)) for k, v in examples))


def _profile_features(g: dict) -> dict:
    """The profile features of game dict ``g`` (its games-table values; unknown codes where it lacks them)."""
    komi = g.get("komi")
    return {"days": int(g.get("days", profiles.UNKNOWN_DAYS)), "source": int(g.get("source", profiles.UNKNOWN_CODE)),
            "time_control": int(g.get("time_control", profiles.UNKNOWN_CODE)),
            "handicap": int(g.get("handicap") or 0), "komi": np.float32(np.nan if komi is None else komi)}


def _examples_of_game(g: dict, points: np.ndarray, cols: np.ndarray):
    """(key, example) per kept position of one game: ``g`` its game dict (``game_id``, the profile fields),
    points uint8 [R, N, N, W], cols the build's spill rows."""
    game_id = g["game_id"]
    prof = _profile_features(g)
    for r in range(len(cols)):
        c = cols[r]
        yield example_key(game_id, c["move_number"]), {
            "planes": np.ascontiguousarray(points[r]), "target": int(c["target"]), "to_move": int(c["to_move"]),
            "move_number": int(c["move_number"]), "player_rank": int(c["player_rank"]),
            "opponent_rank": int(c["opponent_rank"]), "outcome": int(c["outcome"]), "game": game_id, **prof}


class GoMoves(tfds.core.GeneratorBasedBuilder):
    """Next-move positions from SGF archives (see the module docstring)."""

    VERSION = tfds.core.Version(VERSION)
    RELEASE_NOTES = {"1.0.0": "kifunet build's positions (feature set v1) in array_record.",
                     "1.1.0": "Duplicates are copies of one game (GameRecord.game_id), no longer every game with "
                              "the same moves; example keys and the game feature are game ids (another record "
                              "order).",
                     "1.2.0": "Value targets: the outcome feature (int8: +1 the player to move won the game, -1 "
                              "lost, 0 draw, -128 unknown or void, from RE); metadata counts games and positions by "
                              "result kind; filters result and ended. Planes, other features and record order as "
                              "in 1.1.0.",
                     "1.3.0": "Game profiles (issue 33): the features days (int32, days since 1970), source and "
                              "time_control (int8 codes of kifunet.data_prep.profiles, -1 unknown), handicap "
                              "(int8) and komi (float32, NaN unknown); the declared source (preset or --source) "
                              "in the metadata. Planes, other features and record order as in 1.2.0."}
    BUILDER_CONFIGS = _configs()
    MANUAL_DOWNLOAD_INSTRUCTIONS = ("Put the SGF archives (.tar.gz, .zip, .sgf files or directories of them) "
                                    "in manual_dir, e.g. the KGS archives from u-go.net or a GoGoD collection.")

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls) -> epath.Path:
        # TFDS 4.9's own lookup imports `importlib_resources` (a backport it only requires on Python < 3.9)
        return epath.Path(inspect.getfile(cls))

    def __init__(self, *, file_format=None, workers: int = 0, **kwargs):
        super().__init__(file_format=file_format, **kwargs)
        self.workers = int(workers)
        self._work = None
        if file_format is None and not (self.data_path / "dataset_info.json").exists():
            # array_record by default (random access, no TensorFlow); a prepared dataset keeps its own format
            self.info.set_file_format("array_record", override=True)

    # -- info ----------------------------------------------------------------------------------------------
    def _feature_set(self):
        return self.builder_config.feature_set()

    def _info(self) -> tfds.core.DatasetInfo:
        fs = self._feature_set()
        n = filters_mod.resolve(preset=self.builder_config.preset, config=self.builder_config.options).get(
            "board_size", 19)
        return tfds.core.DatasetInfo(
            builder=self, description=__doc__.split("\n\n")[0],
            features=example_features(int(n), fs.num_stored),
            homepage="https://github.com/kifunet/kifunet", metadata=tfds.core.MetadataDict())

    def _kifunet_meta(self, filt, rule, counts: dict, split_info: dict, inputs: list, mode: str) -> dict:
        fs = self._feature_set()
        cfg = self.builder_config
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION, "tool": {"name": "kifunet",
                                                                        "version": tool_version()},
            "builder": mode, "config": cfg.name,
            "features": {"name": fs.name, "version": fs.version, "num_planes": fs.num_planes,
                         "num_stored": fs.num_stored, "columns": list(fs.columns), "plane_names": fs.plane_names()},
            "board_size": filt.board_size, "point_bytes": shards_mod.point_width(fs.num_stored),
            "planes_encoding": "np.packbits(stored, axis=-1) per point, big bit order",
            "preset": cfg.preset, "source": cfg.source(), "options": cfg.resolved(), "filters": filt.to_json(),
            "split_rule": rule.to_json(), "illegal_moves": ILLEGAL_MOVE_POLICY,
            "dedupe": DEDUPE_RULE,
            "counts": counts, "splits": split_info, "inputs": inputs,
        }

    # TFDS prints these two lines to stdout; `kifunet tfds`'s stdout is its summary, as `kifunet build`'s is
    def _log_download_bytes(self) -> None:
        print(f"go_moves: preparing {self.data_dir} from {self.builder_config.name}...", file=sys.stderr)

    def _log_download_done(self) -> None:
        print(f"go_moves: prepared {self.data_dir}", file=sys.stderr)

    def _example_writer(self) -> tfds_writer.ExampleWriter:
        # records in their canonical serialization (see _CanonicalExampleWriter): byte-identical files per run
        return _CanonicalExampleWriter(file_format=self.info.file_format)

    def _manual(self, dl_manager) -> str:
        return os.path.normpath(os.fspath(dl_manager.manual_dir))

    def _file_checksums(self) -> dict:
        """``{split: [{"file", "rows", "sha256"}, ...]}`` of the array_record files just written, recorded in the
        metadata as ``files`` (:mod:`kifunet.data_prep.datasets.verify` checks them when the dataset is read)."""
        from ..datasets.verify import sha256

        return {name: [{"file": os.path.basename(os.fspath(p)), "rows": int(n), "sha256": sha256(os.fspath(p))}
                       for p, n in zip(info.filepaths, info.shard_lengths)]
                for name, info in self.info.splits.items()}

    # -- one machine: the build's encode and plan stages, then one generator per split ---------------------
    def _download_and_prepare(self, dl_manager, download_config):
        beam = download_config.beam_runner is not None or download_config.beam_options is not None
        if beam:
            # TFDS shares one Beam pipeline across the splits when _split_generators takes a `pipeline`
            # argument (it inspects the signature): the games are read and encoded once, not once per split.
            self._split_generators = self._beam_split_generators
        try:
            super()._download_and_prepare(dl_manager, download_config)
            self.info.metadata["kifunet"]["files"] = self._file_checksums()
        finally:
            self.__dict__.pop("_split_generators", None)
            if self._work is not None:
                shutil.rmtree(self._work, ignore_errors=True)
                self._work = None

    def _split_generators(self, dl_manager):
        cfg = self.builder_config
        filt, rule = cfg.filters(), cfg.split_rule()
        manual = self._manual(dl_manager)
        self._work = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-")
        work = self._work
        ucfg = unit_config(self._feature_set(), filt, rule, source=cfg.source())
        infos: list = []
        pool = WorkerPool(self.workers) if self.workers >= 1 else None
        try:
            summaries = encode_inputs([manual], ucfg, work, infos, unit_games=UNIT_GAMES, pool=pool, progress=False,
                                      log=log.info)
        finally:
            if pool is not None:
                pool.close()
        names = rule.names()
        per_split, accounting = plan(work, summaries, names, infos, dedupe=filt.dedupe)
        split_info = {s: {"games": len(per_split[s]["games"]), "positions": per_split[s]["positions"],
                          "results": per_split[s]["results"]} for s in names}
        inputs = [{"path": i.path, "records": i.records, "ignored": i.ignored, "errors": i.errors} for i in infos]
        self.info.metadata["kifunet"] = self._kifunet_meta(filt, rule, accounting, split_info, inputs, "generator")
        with open(os.path.join(work, "rejects.jsonl.part"), "rb") as f:
            (epath.Path(self.data_dir) / REJECTS).write_bytes(f.read())
        empty = [s for s in names if not per_split[s]["rows"]]
        if empty:  # TFDS cannot write a split without examples; the metadata lists it with 0 positions
            log.warning("go_moves: split(s) %s received no positions and are left out", ", ".join(empty))
        return {s: self._generate_examples(work=work, split=s, units=per_split[s]["units"])
                for s in names if s not in empty}

    def _generate_examples(self, work: str, split: str, units: dict):
        fs = self._feature_set()
        n = self.info.features["planes"].shape[0]
        w = shards_mod.point_width(fs.num_stored)
        for u in sorted(units):
            rows = units[u][0]
            planes, cols = unit_arrays(work, u, n * n * w)
            _, games = read_unit(work, u)
            game = np.asarray(cols["game"])[rows]
            for gi in np.unique(game):  # a game's rows are consecutive in its unit
                sel = rows[game == gi]
                yield from _examples_of_game(games[int(gi)], np.asarray(planes[sel]).reshape(len(sel), n, n, w),
                                             cols[sel])

    # -- Beam ------------------------------------------------------------------------------------------------
    def _beam_split_generators(self, dl_manager, pipeline):
        import apache_beam as beam

        cfg = self.builder_config
        filt, rule = cfg.filters(), cfg.split_rule()
        manual = self._manual(dl_manager)
        if not os.path.isdir(manual):
            raise FileNotFoundError(f"manual_dir {manual} is not a directory")
        files = list(enumerate(inputs_mod.walk(manual)))
        names = rule.names()
        ecfg = {"features": self._feature_set(), "filters": dataclasses.asdict(filt), "rule": rule,
                "source": cfg.source()}
        meta = self._kifunet_meta(filt, rule, {}, {}, [], "beam")
        out_dir = os.fspath(self.data_dir)

        enc = (pipeline
               | "ListFiles" >> beam.Create(files)
               | "SpreadFiles" >> beam.Reshuffle()
               | "Encode" >> beam.ParDo(_EncodeFile(ecfg)).with_outputs("inputs", main="games"))
        games = enc.games  # ((file, record), game dict, packed points | None, spill columns | None)
        light = games | "GameDicts" >> beam.Map(lambda e: (e[0], e[1]))
        losers = (light
                  | "UsedGames" >> beam.Filter(lambda e: e[1]["status"] == "ok")
                  | "ByGame" >> beam.Map(lambda e: (e[1]["game_id"], (e[0], e[1]["path"])))
                  | "GroupCopies" >> beam.GroupByKey()
                  | "LaterCopies" >> beam.FlatMap(_later_copies))
        losers_view = beam.pvalue.AsDict(losers)
        final = light | "Dedupe" >> beam.Map(_mark_duplicate, losers_view)
        counts = final | "Accounting" >> beam.CombineGlobally(_AccountingFn())
        rejects = (final
                   | "NotUsed" >> beam.Filter(lambda e: e[1]["status"] != "ok")
                   | "RejectLines" >> beam.Map(lambda e: (e[0], reject_line(e[1])))
                   | "AllRejects" >> beam.combiners.ToList())
        inputs = enc.inputs | "AllInputs" >> beam.combiners.ToList()
        _ = counts | "WriteSummary" >> beam.Map(_write_summary, beam.pvalue.AsSingleton(rejects),
                                                 beam.pvalue.AsSingleton(inputs), out_dir=out_dir, meta=meta,
                                                 manual=manual, names=names)
        parts = (games
                 | "Examples" >> beam.FlatMap(_beam_examples, losers_view)
                 | "BySplit" >> beam.Partition(lambda e, k: names.index(e[0]), len(names)))
        return {s: parts[i] | f"Drop{s}" >> beam.Map(lambda e: e[1]) for i, s in enumerate(names)}

    def _process_pipeline_result(self, pipeline_result) -> None:
        path = epath.Path(self.data_dir) / _BEAM_SUMMARY
        self.info.metadata["kifunet"] = json.loads(path.read_text())
        path.unlink()


# ------------------------------------------------------------------------------------------------------------
# Beam steps (module level: they are pickled to the workers)

try:  # the Beam extra is optional: without it only the DoFn below is a plain object
    import apache_beam as _beam

    _DoFn = _beam.DoFn
    _CombineFn = _beam.CombineFn
except ImportError:  # pragma: no cover - exercised where apache-beam is missing
    _beam = None
    _DoFn = _CombineFn = object


class _EncodeFile(_DoFn):
    """One file of the manual directory -> one element per game record (the build's ``encode_record``), and
    one ``inputs`` element with its record count, ignored files and archive damage."""

    def __init__(self, ecfg: dict):
        super().__init__()
        self.ecfg = ecfg

    def process(self, item):
        k, path = item
        fs = self.ecfg["features"]
        filt = filters_mod.Filters(**self.ecfg["filters"])
        info = inputs_mod.InputInfo(path=path, kind=inputs_mod.input_kind(path))
        for j, src in enumerate(inputs_mod.iter_file(path, info)):
            g, packed, cols = encode_record(src, fs, filt, self.ecfg["rule"], "none", self.ecfg.get("source"))
            if packed is not None:
                g["rows"] = int(len(cols))
            yield (k, j), g, packed, cols
        yield _beam.pvalue.TaggedOutput("inputs", (k, {"records": info.records, "ignored": info.ignored,
                                                       "errors": info.errors}))


def _later_copies(item):
    """(game_id, [(ordinal, path), ...]) -> (ordinal, first path) for every copy after the first."""
    _, copies = item
    copies = sorted(copies)
    for ordinal, _path in copies[1:]:
        yield ordinal, copies[0][1]


def _mark_duplicate(e, losers: dict):
    ordinal, g = e
    first = losers.get(ordinal)
    if first is not None:
        g = dict(g, status="filtered", reason="duplicate", detail=f"same game as {first}")
    return ordinal, g


def _beam_examples(e, losers: dict):
    ordinal, g, packed, cols = e
    if g["status"] != "ok" or ordinal in losers:
        return
    for ex in _examples_of_game(g, packed, cols):
        yield g["split"], ex


class _AccountingFn(_CombineFn):
    """The build's accounting (plan_stage.plan) as a combine: counts by reason, position counts, and the first
    three paths (in input order) of every reason."""

    def create_accumulator(self):
        return {"seen": 0, "used": 0, "filtered": {}, "rejected": {}, "moves": 0, "kept": 0, "pos_filtered": {},
                "results": result_counts(), "examples": {}, "splits": {}}

    @staticmethod
    def _add(d, k, v):
        d[k] = d.get(k, 0) + v

    def add_input(self, acc, e):
        ordinal, g = e
        acc["seen"] += 1
        if g["status"] != "ok":
            key = "filtered" if g["status"] == "filtered" else "rejected"
            self._add(acc[key], g["reason"], 1)
            ex = acc["examples"].setdefault(f"{key}:{g['reason']}", [])
            ex.append((tuple(ordinal), g["path"]))
            ex.sort()
            del ex[3:]
            return acc
        acc["used"] += 1
        acc["moves"] += g["pos_moves"]
        acc["kept"] += g["positions"]
        for k, v in g["pos_filtered"].items():
            self._add(acc["pos_filtered"], k, v)
        sp = acc["splits"].setdefault(g["split"], {"games": 0, "positions": 0, "results": result_counts()})
        sp["games"] += 1
        sp["positions"] += g["positions"]
        add_result(sp["results"], g)
        add_result(acc["results"], g)
        return acc

    @staticmethod
    def _add_results(into: dict, other: dict) -> None:
        for kind, c in other.items():
            for k, v in c.items():
                into[kind][k] += v

    def merge_accumulators(self, accs):
        out = self.create_accumulator()
        for a in accs:
            for k in ("seen", "used", "moves", "kept"):
                out[k] += a[k]
            for k in ("filtered", "rejected", "pos_filtered"):
                for r, v in a[k].items():
                    self._add(out[k], r, v)
            for r, ex in a["examples"].items():
                out["examples"][r] = sorted(out["examples"].get(r, []) + [tuple(x) for x in ex])[:3]
            self._add_results(out["results"], a["results"])
            for s, v in a["splits"].items():
                sp = out["splits"].setdefault(s, {"games": 0, "positions": 0, "results": result_counts()})
                sp["games"] += v["games"]
                sp["positions"] += v["positions"]
                self._add_results(sp["results"], v["results"])
        return out

    def extract_output(self, acc):
        return acc


def _write_summary(acc: dict, rejects: list, inputs: list, *, out_dir: str, meta: dict, manual: str,
                   names: list) -> None:
    """Last Beam step: rejects.jsonl (input order) and the metadata, as the single-machine path writes them."""
    counts = {
        "seen": acc["seen"], "used": acc["used"],
        "filtered": dict(sorted(acc["filtered"].items())), "rejected": dict(sorted(acc["rejected"].items())),
        "positions": {"moves": acc["moves"], "kept": acc["kept"],
                      "filtered": dict(sorted(acc["pos_filtered"].items()))},
        "results": acc["results"],
        "examples": {r: [p for _, p in ex] for r, ex in sorted(acc["examples"].items())},
    }
    inputs = [v for _, v in sorted(inputs, key=lambda x: x[0])]
    total = {"path": manual, "records": sum(i["records"] for i in inputs),
             "ignored": sum(i["ignored"] for i in inputs), "errors": [e for i in inputs for e in i["errors"]]}
    lines = [json.dumps(line, ensure_ascii=False) for _, line in sorted(rejects, key=lambda x: tuple(x[0]))]
    lines += [json.dumps({"path": e["path"], "status": "input_error", "reason": e["reason"], "detail": e["detail"]},
                         ensure_ascii=False) for e in total["errors"]]
    out = epath.Path(out_dir)
    (out / REJECTS).write_bytes("".join(x + "\n" for x in lines).encode("utf-8", "backslashreplace"))
    splits = {s: acc["splits"].get(s, {"games": 0, "positions": 0, "results": result_counts()}) for s in names}
    (out / _BEAM_SUMMARY).write_text(json.dumps(dict(meta, counts=counts, splits=splits, inputs=[total])))


# ------------------------------------------------------------------------------------------------------------
# command line


def build_dataset(config: str | GoMovesConfig, manual_dir: str, data_dir: str, *, workers: int = 0,
                  beam: bool = False, beam_args: list[str] | None = None) -> GoMoves:
    """Build ``go_moves/<config>`` from ``manual_dir`` into ``data_dir`` (``kifunet tfds`` runs this); with
    ``beam``, through an Apache Beam pipeline with ``beam_args`` as its options (default the DirectRunner).

    A dataset already prepared there is reused, as TFDS does, when it was built from the same ``manual_dir``
    with the same options; otherwise ``ValueError`` (TFDS would reuse it silently)."""
    kw = {"manual_dir": manual_dir}
    if beam:
        from apache_beam.options.pipeline_options import PipelineOptions

        kw["beam_options"] = PipelineOptions(beam_args or ["--runner=DirectRunner"])
    if not os.path.exists(manual_dir):
        raise FileNotFoundError(f"input not found: {manual_dir}")  # as kifunet build says it
    if os.path.isdir(manual_dir) and not os.listdir(manual_dir):  # TFDS refuses an empty manual_dir
        raise InvalidValue(f"no positions written (the inputs hold no SGF record): {manual_dir} is empty")
    b = GoMoves(config=config, data_dir=data_dir, workers=workers)
    lock = _lock(b)
    try:
        clear_interrupted(b)
        _check_existing(b, manual_dir)
        b.download_and_prepare(download_config=tfds.download.DownloadConfig(**kw))
    finally:
        if lock is not None:
            _unlock(b, lock)
    return b


def _local(path) -> str | None:
    """``path`` as a local file system path, or None for a remote one (``gs://...``)."""
    p = os.fspath(path)
    return None if "://" in p else p


def _lock(b: GoMoves) -> int | None:
    """Take the build lock of ``b``'s config directory (:data:`LOCK`, :mod:`kifunet.data_prep.building.build_lock`);
    returns its fd, or None where it cannot be taken (a remote data dir, a file system without flock).
    :class:`~kifunet.data_prep.building.build_lock.Busy` naming the holder's pid while another ``kifunet tfds``
    builds this config there."""
    folder = _local(b.data_path.parent)
    if folder is None:
        return None
    os.makedirs(folder, exist_ok=True)
    try:
        return build_lock.acquire(folder, LOCK, "kifunet tfds")
    except build_lock.NoFlock:  # ENOLCK, EOPNOTSUPP: no flock here; build unlocked, as TFDS itself does
        return None


def _unlock(b: GoMoves, fd: int) -> None:
    """Release the build lock :func:`_lock` took: a finished build leaves no file."""
    build_lock.release(_local(b.data_path.parent), LOCK, fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_interrupted(b: GoMoves) -> list[str]:
    """Remove what an interrupted build of ``b``'s config left (its ``incomplete.*`` folders; spill
    directories ``kifunet-tfds-PID-*`` whose PID no longer runs), saying so in one line on stderr; returns the paths
    removed. Call with the build lock held (:func:`build_dataset`).
    """
    folder = _local(b.data_path.parent)
    stale = []
    if folder is not None and os.path.isdir(folder):
        stale += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.startswith(INCOMPLETE_PREFIX)]
    tmp = tempfile.gettempdir()
    for n in sorted(os.listdir(tmp)):
        pid = n[len(WORK_PREFIX):].split("-", 1)[0]
        if n.startswith(WORK_PREFIX) and pid.isdigit() and not _pid_alive(int(pid)):
            stale.append(os.path.join(tmp, n))
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    if stale:
        print(f"go_moves: removed what an interrupted build left: {', '.join(stale)}", file=sys.stderr)
    return stale


def _check_existing(b: GoMoves, manual_dir: str) -> None:
    if not (b.data_path / "dataset_info.json").exists():
        return
    path = b.data_path / METADATA
    old = json.loads(path.read_text()).get("kifunet", {}) if path.exists() else {}
    cfg = b.builder_config
    want = _content(cfg.feature_set(), cfg.filters(), cfg.split_rule(), cfg.source())
    want["inputs"] = os.path.normpath(os.fspath(manual_dir))
    have = {"features": {k: old.get("features", {}).get(k) for k in ("name", "version")},
            "filters": old.get("filters"), "split_rule": old.get("split_rule"), "source": old.get("source"),
            "inputs": (old.get("inputs") or [{}])[0].get("path")}
    changed = [k for k in want if want[k] != have[k]]
    if changed:
        raise InvalidValue(f"{b.data_dir} holds a go_moves dataset built with other {', '.join(changed)}; remove it "
                         "or build under another --name")
