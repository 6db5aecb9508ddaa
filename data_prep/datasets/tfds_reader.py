"""The TFDS container of a split: read a prepared ``go_moves`` dataset by rows and by blocks (:class:`TfdsReader`).

Needs ``tensorflow-datasets`` and ``array-record`` (``pip install 'kifunet[tfds]'``), not TensorFlow; importing this
module does not register the builder. A batch is the one :class:`~kifunet.data_prep.datasets.reader.Reader` gives
for the HDF5 build of the same positions, plus ``game`` (no ``game_index`` nor games table); older datasets read
with ``outcome`` -128 and the profile fields unknown (:data:`PROFILE_DEFAULTS`). ``manifest`` is the builder's
``kifunet`` metadata. A block is ``block_rows`` (256) consecutive records; a split TFDS left out (empty) opens with
0 rows. Each array_record file is checked (:mod:`kifunet.data_prep.datasets.verify`) when the split's source first
opens in a process. TFDS datasets carry no ownership or score targets:
:meth:`TfdsReader.with_targets` refuses.
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from .. import profiles
from ..errors import InvalidValue
from . import shards as shards_mod
from .profile_columns import STORED_NAMES
from . import verify as verify_mod
from .dataset_base import (DEFAULT_BLOCK_ROWS, CorruptDatasetError, DatasetError, DatasetSplit, NotADatasetError,
                           UnknownSplitError)

#: per-row columns of a ``go_moves`` example (besides ``planes`` and ``game``); a dataset of a version before a
#: column of :data:`kifunet.data_prep.datasets.shards.COLUMN_DEFAULTS` (``outcome``: 1.2.0) reads as its default
COLUMNS = ("target", "to_move", "move_number", "player_rank", "opponent_rank", "outcome")
METADATA = "metadata.json"
#: the profile features of a ``go_moves`` example (since 1.3.0) -> the value an example of an earlier version
#: reads as (unknown; handicap 0, as a record without ``HA``); read as the game fields of
#: :data:`kifunet.data_prep.profiles.GAME_FIELDS` (:data:`kifunet.data_prep.datasets.profile_columns.STORED_NAMES`)
PROFILE_DEFAULTS = {"days": profiles.UNKNOWN_DAYS, "source": profiles.UNKNOWN_CODE,
                    "time_control": profiles.UNKNOWN_CODE, "handicap": 0, "komi": float("nan")}


#: the metadata files TFDS writes in a prepared dataset's directory, and what reads each alone
TFDS_METADATA = ("dataset_info.json", "features.json")


def _read_tfds_metadata(directory: str, name: str) -> None:
    if name == "dataset_info.json":
        tfds.core.dataset_info.read_proto_from_builder_dir(directory)
    else:
        tfds.features.FeatureConnector.from_config(directory)


def damaged_metadata(directory: str, error: BaseException | None = None) -> CorruptDatasetError | None:
    """The one-line error naming the TFDS metadata file of ``directory`` that TFDS cannot read, or None when both
    read; given ``error`` (TFDS's failure to open the directory) when each file reads alone, it names
    ``dataset_info.json``."""
    for name in TFDS_METADATA:
        try:
            _read_tfds_metadata(directory, name)
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 -- any parse failure of the file: its message, one line
            return CorruptDatasetError.at(os.path.join(directory, name), f"TFDS cannot read it ({_first_line(e)});"
                                          " the metadata is damaged", CorruptDatasetError.REBUILD_TFDS)
    if error is not None:  # each parses alone: a value of dataset_info.json's that TFDS cannot use (file format)
        return CorruptDatasetError.at(os.path.join(directory, TFDS_METADATA[0]), f"TFDS cannot open the dataset "
                                      f"({_first_line(error)}); the metadata is damaged",
                                      CorruptDatasetError.REBUILD_TFDS)
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:200] if text else ''}"


def _from_directory(directory: str):
    """``tfds.builder_from_directory``, a damaged ``dataset_info.json`` or ``features.json`` raised as a
    :class:`CorruptDatasetError` naming the file (an ``OSError`` stays itself)."""
    try:
        return tfds.builder_from_directory(directory)
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 -- JSON, protobuf or feature errors of TFDS's metadata files
        raise damaged_metadata(os.fspath(directory), e) from None


def open_builder(dataset: str, data_dir: str | None = None):
    """A prepared ``go_moves`` dataset: a directory holding ``dataset_info.json``, or ``go_moves/CONFIG[:VERSION]``
    under ``data_dir`` (default: ``$TFDS_DATA_DIR``, else ``~/tensorflow_datasets``). A ``dataset_info.json`` or
    ``features.json`` that TFDS cannot read raises :class:`CorruptDatasetError` naming the file."""
    if os.path.isfile(os.path.join(dataset, "dataset_info.json")):
        return _from_directory(dataset)
    try:
        b = tfds.builder(dataset, data_dir=data_dir)
    except ValueError as e:  # DatasetNotFoundError, or not a dataset name at all
        raise NotADatasetError.at(dataset, "no prepared TFDS dataset of that name or directory "
                                           f"({str(e).splitlines()[0]})") from None
    if not (epath.Path(b.data_dir) / "dataset_info.json").exists():
        raise NotADatasetError.at(dataset, f"TFDS dataset not prepared in {b.data_dir}")
    return _from_directory(os.fspath(b.data_dir))


def kifunet_metadata(builder) -> dict:
    """The ``kifunet`` metadata (accounting, feature set, filters) of a prepared dataset."""
    path = epath.Path(builder.data_dir) / METADATA
    if not path.exists():
        raise NotADatasetError.at(os.fspath(builder.data_dir), f"no {METADATA} (not a go_moves dataset)")
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorruptDatasetError.at(os.fspath(path), f"not valid JSON ({e}); the metadata is damaged",
                                     CorruptDatasetError.REBUILD_TFDS) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("kifunet"), dict):
        raise CorruptDatasetError.at(os.fspath(path), "no 'kifunet' object; the metadata is damaged",
                                     CorruptDatasetError.REBUILD_TFDS)
    return meta["kifunet"]


def _profile_rows(values: dict) -> dict[str, np.ndarray]:
    """Profile feature values by feature name (lists) -> the game fields (:data:`profiles.GAME_FIELDS`)."""
    return profiles.game_field_rows(*(values[STORED_NAMES[k]] for k in profiles.GAME_FIELDS))


def decode(records, fs, board_size: int | None = None, *, assemble: bool = True,
           profile: bool = False) -> dict[str, np.ndarray]:
    """``tfds.data_source`` records (dicts) -> a batch like :meth:`Reader.batch`: ``planes`` uint8 [B, N, N, C]
    (the feature set's full planes; ``stored`` [B, N, N, Cs] with ``assemble=False``), the columns, ``game``;
    with ``profile``, the game fields of :data:`kifunet.data_prep.profiles.GAME_FIELDS` too."""
    recs = list(records)
    if not recs:
        n = int(board_size or 19)
        packed = np.zeros((0, n, n, shards_mod.point_width(fs.num_stored)), np.uint8)
    else:
        packed = np.stack([np.asarray(r["planes"], np.uint8) for r in recs])
    stored = shards_mod.unpack_points(packed, fs.num_stored)
    defaults = shards_mod.COLUMN_DEFAULTS
    out = {k: np.fromiter((int(r[k]) if k in r else defaults[k] for r in recs), shards_mod.COLUMN_DTYPES[k],
                          len(recs)) for k in COLUMNS}
    out["game"] = np.array([r["game"].decode() if isinstance(r["game"], bytes) else str(r["game"]) for r in recs],
                           dtype=object)
    if profile:
        out.update(_profile_rows({k: [r[k] if k in r else d for r in recs] for k, d in PROFILE_DEFAULTS.items()}))
    if assemble:
        out["planes"] = fs.assemble(stored, out)
    else:
        out["stored"] = stored
    return out


def decode_raw(raw_records, fs, board_size: int, *, assemble: bool = True,
               profile: bool = False) -> dict[str, np.ndarray]:
    """As :func:`decode`, from serialized ``tf.Example`` records (``DeserializeMethod.RAW_BYTES``), parsed
    directly with protobuf."""
    from tensorflow_datasets.proto import tf_example_pb2

    n, w = int(board_size), shards_mod.point_width(fs.num_stored)
    planes, cols, games = [], [], []
    prof: dict = {k: [] for k in PROFILE_DEFAULTS} if profile else {}
    defaults = shards_mod.COLUMN_DEFAULTS
    for x in raw_records:
        f = tf_example_pb2.Example.FromString(x).features.feature
        planes.append(f["planes"].bytes_list.value[0])
        cols.append([f[k].int64_list.value[0] if k in f or k not in defaults else defaults[k] for k in COLUMNS])
        games.append(f["game"].bytes_list.value[0].decode())
        for k, values in prof.items():
            if k not in f:
                values.append(PROFILE_DEFAULTS[k])
            else:
                values.append(f[k].float_list.value[0] if k == "komi" else f[k].int64_list.value[0])
    packed = np.frombuffer(b"".join(planes), np.uint8).reshape(len(planes), n, n, w)
    c = np.asarray(cols, np.int64).reshape(len(cols), len(COLUMNS))
    out = {k: c[:, j].astype(shards_mod.COLUMN_DTYPES[k]) for j, k in enumerate(COLUMNS)}
    out["game"] = np.array(games, dtype=object)
    if profile:
        out.update(_profile_rows(prof))
    stored = shards_mod.unpack_points(packed, fs.num_stored)
    if assemble:
        out["planes"] = fs.assemble(stored, out)
    else:
        out["stored"] = stored
    return out


class TfdsReader(DatasetSplit):
    """One split of a prepared ``go_moves`` dataset (see the module docstring); opens lazily in each process.
    Records are parsed by :func:`decode_raw`, falling back to :func:`decode` when that fails."""

    def with_targets(self, on: bool = True) -> "TfdsReader":
        """Refuses ``on`` (:class:`DatasetError`): the TFDS builder stores no ownership or score targets."""
        if on:
            raise DatasetError(f"{self.root}: a TFDS dataset has no ownership or score targets; build it with "
                               "kifunet build (HDF5) to train or evaluate the ownership and score heads")
        return super().with_targets(False)

    def __init__(self, dataset: str, split: str = "train", *, data_dir: str | None = None, assemble: bool = True,
                 check_version: bool = True):
        self.dataset, self.split, self.data_dir, self.assemble = dataset, split, data_dir, assemble
        self.check_version = check_version
        builder = open_builder(dataset, data_dir)
        self.builder_dir = self.root = os.fspath(builder.data_dir)
        self.manifest = self.meta = kifunet_metadata(builder)
        written = builder.info.splits
        recorded = {f["file"]: f.get("sha256") for f in (self.meta.get("files") or {}).get(split, [])}
        self._files = []
        if split in written:
            try:
                self._len = int(written[split].num_examples)
                self._files = [(os.fspath(p), int(n), recorded.get(os.path.basename(os.fspath(p))))
                               for p, n in zip(written[split].filepaths, written[split].shard_lengths)]
            except (ValueError, KeyError, TypeError) as e:  # a file name template or length TFDS cannot use
                raise self._damaged_info(f"split {split!r} unreadable ({_first_line(e)})") from None
            unknown = [os.path.basename(p) for p, _, _ in self._files if recorded and os.path.basename(p)
                       not in recorded]
            if unknown:  # a damaged file name template: the files TFDS would read are not the ones written
                raise self._damaged_info(f"split {split!r} names {unknown[0]}, not a file {METADATA} records "
                                         f"({', '.join(sorted(recorded))})")
        elif split in self.meta.get("splits", {}):  # a split that received no position: TFDS left it out
            positions = int((self.meta["splits"][split] or {}).get("positions") or 0)
            if positions:
                raise self._damaged_info(f"no split {split!r}, which {METADATA} records with {positions} "
                                         "positions")
            self._len = 0
        else:
            raise UnknownSplitError.at(dataset, split, self.meta.get("splits") or list(written))
        feats = self.meta["features"]
        self.feature_name, self.feature_version = feats["name"], int(feats["version"])
        self.num_planes, self.num_stored = int(feats["num_planes"]), int(feats["num_stored"])
        self.board_size = int(self.meta["board_size"])
        self.columns = list(COLUMNS)
        self.block_rows = DEFAULT_BLOCK_ROWS
        self.num_shards = 1
        self._fs = None
        self._source = None
        self._pid = None

    def _damaged_info(self, what: str) -> CorruptDatasetError:
        return CorruptDatasetError.at(os.path.join(self.root, "dataset_info.json"), f"{what}; the metadata is "
                                      "damaged", CorruptDatasetError.REBUILD_TFDS)

    def __getstate__(self):
        return {"dataset": self.builder_dir, "split": self.split, "assemble": self.assemble,
                "check_version": self.check_version, "added_planes": self.added_planes,
                "profile_columns": self.profile_columns,
                "verified": verify_mod.found_entries([p for p, _, _ in self._files])}

    def __setstate__(self, st):
        verify_mod.adopt(st.get("verified"))
        self.__init__(st["dataset"], st["split"], assemble=st["assemble"], check_version=st["check_version"])
        self.add_constant_planes(st.get("added_planes", ""))
        self.with_profile(st.get("profile_columns", False))

    def file_checks(self) -> list:
        """Every array_record file of the split: its records and, where the metadata records it, its sha256."""
        note = "no sha256 recorded (built before go_moves recorded them); record counts checked only"
        return [(path, functools.partial(verify_mod.check_tfds_file, path, rows, sha), "" if sha else note)
                for path, rows, sha in self._files]

    def close(self) -> None:
        self._source = None

    @property
    def source(self):
        """The split's data source of serialized records (opened once per process)."""
        if self._source is None or self._pid != os.getpid():
            self.verify()
            self._source = _from_directory(self.builder_dir).as_data_source(
                split=self.split, deserialize_method=tfds.decode.DeserializeMethod.RAW_BYTES)
            self._pid = os.getpid()
        return self._source

    def __len__(self) -> int:
        return self._len

    def records(self, indices) -> list[bytes]:
        """The serialized records at ``indices``."""
        idx = [int(i) for i in np.asarray(indices, np.int64).reshape(-1)]
        return list(self.source.__getitems__(idx)) if idx else []

    def read_stored(self, indices: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        raw = self.records(indices)
        try:
            out = decode_raw(raw, self.feature_set, self.board_size, assemble=False, profile=self.profile_columns)
        except (KeyError, IndexError, ValueError):
            feats = _from_directory(self.builder_dir).info.features
            out = decode([feats.deserialize_example_np(x) for x in raw], self.feature_set, self.board_size,
                         assemble=False, profile=self.profile_columns)
        stored = out.pop("stored")
        return stored, out

    def block_spans(self, block_rows: int = 0) -> np.ndarray:
        """Blocks of ``block_rows`` consecutive records (the last one may be shorter)."""
        br = int(block_rows) if block_rows else self.block_rows
        if br < 1:
            raise InvalidValue("block_rows must be positive")
        n = len(self)
        return np.asarray([(a, min(a + br, n)) for a in range(0, n, br)], np.int64).reshape(-1, 2)

    def read_blocks(self, start: int, stop: int) -> list[dict]:
        if stop <= start:
            return []
        idx = np.arange(start, stop, dtype=np.int64)
        if start < 0 or stop > len(self):
            raise IndexError(f"row index out of range for {len(self)} rows")
        stored, cols = self.read_stored(idx)
        columns = {k: cols[k] for k in self.columns + (list(profiles.GAME_FIELDS) if self.profile_columns else [])}
        columns["index"] = idx
        return [{"shard": 0, "columns": columns, "stored": stored}]
