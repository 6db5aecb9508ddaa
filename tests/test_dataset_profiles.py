"""Game profiles in datasets (issue 33): the games table's ``days``/``source``/``time_control`` codes, ``--source``,
and the profile columns of ``DatasetSplit.with_profile()`` (HDF5, older HDF5 builds, TFDS, pickling).

Every check recomputes the profile from the SGF record itself (``profiles.profile_of``) and compares the stored
codes with it: ``profiles.encode_rows`` of a row's columns must be ``profiles.encode`` of its profile.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil

import h5py
import numpy as np
import pytest
from test_build import cfg_for, quiet, random_game

from kifunet.data_prep import profiles
from kifunet.data_prep.building import build
from kifunet.data_prep.datasets import shards
from kifunet.data_prep.datasets.manifest import MANIFEST
from kifunet.data_prep.datasets.reader import Reader
from kifunet.data_prep.sgf import sgf_io

#: name -> (SGF properties put in the header (replacing DT/KM when given), the codes expected of the games table)
#: codes: (days, source, time_control); None: the unknown code
GAMES = {
    "kgs_normal": ("PC[The KGS Go Server at http://www.gokgs.com/]TM[300]OT[5x30 byo-yomi]",
                   (16436, "kgs", "normal")),  # 2015-01-01; 300 s + 100 x 30 s = 55 min
    "fox_tc_tt": ("AP[foxwq]TC[3]TT[5]HA[2]KM[0.5]", (16436, "fox", "blitz")),  # Fox's TC/TT: 100 x 5 s
    "ogs_canadian": ("PC[online-go.com]TM[1200]OT[25/600 Canadian]DT[2016-03-09,03-10]",
                     (16869, "ogs", "normal")),  # the first date; 20 min + 100 x 600/25 s = 60 min
    "no_date_no_komi": ("DT[]KM[]", (None, None, None)),
    "year_only_slow": ("DT[2010]TM[7200]", (14791, None, "slow")),  # 1 July 2010
}


def write_games(d) -> dict[str, str]:
    """One 9x9 game per entry of :data:`GAMES` in ``d``; returns name -> path."""
    os.makedirs(d, exist_ok=True)
    paths = {}
    for i, (name, (props, _)) in enumerate(GAMES.items()):
        sgf = random_game(100 + i, moves=16, date="2015-01-01")
        for key in ("DT", "KM"):
            if f"{key}[" in props:  # replace the generator's value
                start = sgf.index(f"{key}[".encode())
                sgf = sgf[:start] + sgf[sgf.index(b"]", start) + 1:]
        sgf = sgf.replace(b"RE[", props.encode() + b"RE[", 1)
        p = os.path.join(d, f"{name}.sgf")
        with open(p, "wb") as f:
            f.write(sgf)
        paths[name] = p
    return paths


def info_of(path: str):
    with open(path, "rb") as f:
        return sgf_io.load_game(f.read(), path=path).info


def expected_codes(name: str) -> tuple[int, int, int]:
    days, source, tc = GAMES[name][1]
    return (profiles.UNKNOWN_DAYS if days is None else days,
            profiles.UNKNOWN_CODE if source is None else profiles.SOURCES.index(source),
            profiles.UNKNOWN_CODE if tc is None else profiles.TIME_CONTROLS.index(tc))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the game paths by name, a dataset of them built without a declared source)."""
    root = tmp_path_factory.mktemp("profiles")
    paths = write_games(root / "in")
    out = root / "out"
    build.build(cfg_for([root / "in"], out), log=quiet)
    return paths, out


def table_codes(out) -> dict[str, tuple[int, int, int]]:
    g = shards.read_games_table(os.path.join(out, "train", "games.h5"))
    return {os.path.splitext(os.path.basename(p))[0]: (int(d), int(s), int(t))
            for p, d, s, t in zip(g["path"], g["days"], g["source"], g["time_control"])}


def test_games_table_holds_each_games_profile_codes(built):
    paths, out = built
    got = table_codes(out)
    assert set(got) == set(GAMES)
    for name, path in paths.items():
        assert got[name] == expected_codes(name), name
        c = profiles.game_codes(info_of(path))
        assert got[name] == (c["days"], c["source"], c["time_control"]), name
    with h5py.File(os.path.join(out, "train", "games.h5"), "r") as f:
        assert f["days"].dtype == np.int32 and f["source"].dtype == np.int8 and f["time_control"].dtype == np.int8
    assert json.loads((out / MANIFEST).read_text())["source"] is None


def test_a_games_table_stores_the_unknown_codes_for_missing_values(tmp_path):
    path = str(tmp_path / "games.h5")
    shards.write_games_table(path, [{"path": "x.sgf"}])
    g = shards.read_games_table(path)
    assert (g["days"][0], g["source"][0], g["time_control"][0]) == (profiles.UNKNOWN_DAYS, -1, -1)
    assert np.isnan(g["komi"][0]) and g["year"][0] == 0


def test_declared_source_wins_and_a_resume_cannot_mix_declarations(built, tmp_path):
    paths, _ = built
    out = tmp_path / "fox"
    m = build.build(cfg_for([os.path.dirname(paths["kgs_normal"])], out, source="fox", keep_work=True), log=quiet)
    assert m["source"] == "fox"
    got = table_codes(out)
    assert {s for _, s, _ in got.values()} == {profiles.SOURCES.index("fox")}
    assert got["kgs_normal"][::2] == expected_codes("kgs_normal")[::2]  # days and time control as read
    # the work directory kept: a rerun with another declaration is another build, refused as such
    with pytest.raises(build.BuildError, match="source"):
        build.build(cfg_for([os.path.dirname(paths["kgs_normal"])], out, source="kgs"), log=quiet)
    with pytest.raises(ValueError, match="source 'nope'"):
        cfg_for([out], tmp_path / "x", source="nope")


def test_source_option_presets_and_a_bad_name(tmp_path, capsys):
    from kifunet.cli import build_parser
    from kifunet.commands import build as build_cmd
    from kifunet.commands import dataset_options

    assert dataset_options.SOURCES == profiles.SOURCES
    parser = build_parser()

    def cfg(*argv):
        args = parser.parse_args(["build", "in", "--out", str(tmp_path / "o"), *argv])
        return build_cmd.config_from_args(args)

    assert cfg().source is None
    assert cfg("--preset", "gonn-kgs").source == "kgs"
    assert cfg("--preset", "fox-pro").source == "fox"
    assert cfg("--preset", "gonn-kgs", "--source", "ogs").source == "ogs"
    assert cfg("--source", "tygem").options["source"] == "tygem"
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["build", "in", "--out", "o", "--source", "nope"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --source: invalid choice: 'nope'" in err[-1] and "kgs" in err[-1]


def profile_vectors_of_rows(paths_by_game: dict, cols: dict, *, source=None) -> np.ndarray:
    """``profiles.encode`` of each row's profile, recomputed from its SGF (``paths_by_game``: game key -> path;
    ``cols["game_key"]``: each row's game key)."""
    infos = {k: info_of(p) for k, p in paths_by_game.items()}
    return np.stack([profiles.encode(profiles.profile_of(infos[k], int(c), source=source))
                     for k, c in zip(cols["game_key"], cols["to_move"])])


def encoded_rows(cols: dict) -> np.ndarray:
    return profiles.encode_rows(cols["player_rank"], cols["opponent_rank"], *(cols[k] for k in profiles.GAME_FIELDS))


def check_hdf5_rows(r: Reader, cols: dict) -> None:
    for k, dt in profiles.GAME_FIELD_DTYPES.items():
        assert cols[k].dtype == dt, k
    paths = r.games()["path"]
    cols = dict(cols, game_key=[int(i) for i in cols["game_index"]])
    want = profile_vectors_of_rows({i: str(p) for i, p in enumerate(paths)}, cols)
    np.testing.assert_array_equal(encoded_rows(cols), want)


def test_profile_columns_of_batches_and_blocks_encode_each_rows_profile(built):
    _, out = built
    r = Reader(str(out), "train")
    plain = r.batch(np.arange(len(r)))
    assert not set(profiles.GAME_FIELDS) & set(plain)
    assert r.with_profile() is r
    b = r.batch(np.arange(len(r)))
    check_hdf5_rows(r, b)
    assert set(b["game_source"].tolist()) == {-1, 0, 1, 2}  # unknown, kgs, fox, ogs
    pieces = [p for a, z in r.block_spans(8) for p in r.read_blocks(int(a), int(z))]
    cols = {k: np.concatenate([p["columns"][k] for p in pieces]) for k in pieces[0]["columns"]}
    check_hdf5_rows(r, cols)
    assert np.array_equal(cols["index"], np.arange(len(r)))
    rng = r.read_range(3, 11)
    for k in profiles.GAME_FIELDS:
        np.testing.assert_array_equal(rng[k], b[k][3:11])


def test_pickling_keeps_the_profile_switch(built):
    _, out = built
    on = pickle.loads(pickle.dumps(Reader(str(out), "train").with_profile()))
    off = pickle.loads(pickle.dumps(Reader(str(out), "train")))
    assert on.profile_columns and not off.profile_columns
    assert set(profiles.GAME_FIELDS) <= set(on.blocks()[0]["columns"])
    assert not set(profiles.GAME_FIELDS) & set(off.blocks()[0]["columns"])


def test_a_dataset_built_before_the_profile_columns_still_reads(built, tmp_path):
    paths, out = built
    old = tmp_path / "old"
    shutil.copytree(out, old)
    table = old / "train" / "games.h5"
    with h5py.File(table, "a") as f:
        for k in ("days", "source", "time_control"):
            del f[k]
    man = json.loads((old / MANIFEST).read_text())
    man["splits"]["train"]["games_table_sha256"] = shards.sha256_file(str(table))
    man.pop("manifest_sha256")  # an old build's manifest has no checksum of its own
    (old / MANIFEST).write_text(json.dumps(man))
    new_b = Reader(str(out), "train").with_profile().batch(np.arange(len(Reader(str(out), "train"))))
    b = Reader(str(old), "train").with_profile().batch(np.arange(len(new_b["target"])))
    assert (b["game_source"] == -1).all() and (b["game_time_control"] == -1).all()
    for k in ("game_days", "game_handicap", "game_komi"):  # from the date, HA and KM columns kept
        np.testing.assert_array_equal(b[k], new_b[k], err_msg=k)
    assert (b["game_days"] == profiles.UNKNOWN_DAYS).any() and np.isnan(b["game_komi"]).any()


# ------------------------------------------------------------------------------------------------------------
# TFDS go_moves


@pytest.fixture(scope="module")
def tfds_built(tmp_path_factory):
    from conftest import require_module

    require_module("tensorflow_datasets")
    require_module("array_record")
    from kifunet.data_prep.building import tfds_go_moves

    root = tmp_path_factory.mktemp("profiles_tfds")
    manual = root / "manual"
    manual.mkdir()
    paths = {}
    for i, (props, date) in enumerate((("PC[KGS]TM[600]OT[3x30 byo-yomi]HA[0]", "2014-03-01"),
                                       ("AP[foxwq]KM[]", "2014-05-01"), ("TM[60]", "2015-06-01"))):
        sgf = random_game(200 + i, n=19, moves=24, date=date).replace(b"KM[6.5]", b"")
        sgf = sgf.replace(b"RE[", props.encode() + (b"KM[7.5]" if "KM" not in props else b"") + b"RE[", 1)
        p = manual / f"g{i}.sgf"
        p.write_bytes(sgf)
        paths[i] = str(p)
    b = tfds_go_moves.build_dataset("kgs_maddison", str(manual), str(root / "data"))
    return paths, b


def test_tfds_examples_carry_the_profile(tfds_built):
    from kifunet.data_prep.datasets.tfds_reader import TfdsReader

    paths, b = tfds_built
    assert str(b.info.version) == "1.3.0"
    by_id = {sgf_io.load_game(open(p, "rb").read(), path=p).game_id(): p for p in paths.values()}
    seen = 0
    for split in ("train", "test"):
        r = pickle.loads(pickle.dumps(TfdsReader(os.fspath(b.data_dir), split).with_profile()))
        assert r.profile_columns
        batch = r.batch(np.arange(len(r)))
        (piece,) = r.read_blocks(0, len(r))
        for cols in (batch, piece["columns"]):
            for k, dt in profiles.GAME_FIELD_DTYPES.items():
                assert cols[k].dtype == dt, k
            keys = batch["game"] if cols is piece["columns"] else cols["game"]
            want = profile_vectors_of_rows(by_id, dict(cols, game_key=list(keys)), source="kgs")  # preset gonn-kgs
            np.testing.assert_array_equal(encoded_rows(cols), want)
        seen += len(r)
        assert set(batch["game_source"].tolist()) == {0}
    assert seen > 0


def test_tfds_records_before_the_profile_features_read_as_unknown(tfds_built):
    from tensorflow_datasets.proto import tf_example_pb2

    from kifunet.data_prep.datasets import tfds_reader
    from kifunet.data_prep.planes import features

    _, b = tfds_built
    r = tfds_reader.TfdsReader(os.fspath(b.data_dir), "train")
    idx = np.arange(len(r))
    old_records, old_dicts = [], []
    for raw in r.records(idx):
        ex = tf_example_pb2.Example.FromString(raw)
        for k in tfds_reader.PROFILE_DEFAULTS:
            del ex.features.feature[k]
        old_records.append(ex.SerializeToString())
        f = ex.features.feature
        old_dicts.append({k: f[k].int64_list.value[0] for k in tfds_reader.COLUMNS} | {
            "planes": np.frombuffer(f["planes"].bytes_list.value[0], np.uint8).reshape(19, 19, 4),
            "game": f["game"].bytes_list.value[0]})
    fs = features.get("maddison")
    new = r.with_profile().batch(idx)
    assert (new["game_source"] == 0).all()
    for old in (tfds_reader.decode_raw(old_records, fs, 19, profile=True), tfds_reader.decode(old_dicts, fs,
                                                                                             profile=True)):
        assert (old["game_days"] == profiles.UNKNOWN_DAYS).all() and (old["game_source"] == -1).all()
        assert (old["game_time_control"] == -1).all() and (old["game_handicap"] == 0).all()
        assert np.isnan(old["game_komi"]).all()
        np.testing.assert_array_equal(old["planes"], new["planes"])


def test_stats_count_games_by_source_and_time_control(built, capsys):
    from kifunet.cli import main
    from kifunet.data_prep.datasets import stats

    _, out = built
    s = stats.dataset_stats(str(out))["splits"]["train"]
    assert s["games_by_source"] == {"kgs": 1, "fox": 1, "ogs": 1, "unknown": 2}
    assert s["games_by_time_control"] == {"blitz": 1, "normal": 2, "slow": 1, "unknown": 1}
    assert sum(s["positions_by_source"].values()) == s["positions"]
    assert main(["stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "[train] games (positions) by source\n  kgs: 1 (" in text and "by time control\n  blitz: 1 (" in text


def test_open_split_asks_for_profiles(built):
    from kifunet.data_prep.datasets.dataset import open_split

    _, out = built
    assert open_split(out, "train", profile=True).profile_columns
    assert not open_split(out, "train").profile_columns


def test_a_tfds_config_with_another_declared_source_is_a_config_of_its_own():
    import argparse

    from conftest import require_module

    require_module("tensorflow_datasets")
    from kifunet.commands.dataset_options import dataset_options
    from kifunet.commands.tfds import add_arguments
    from kifunet.data_prep.building import tfds_go_moves as T

    p = argparse.ArgumentParser()
    add_arguments(p)

    def config(*argv):
        args = p.parse_args(["--manual-dir", "M", "--data-dir", "D", *argv])
        base = T.named_config(args.config)
        opts = dataset_options(args, preset=base.preset, features=base.features, options=base.options)
        return T.config_from_options(args.config, opts)

    assert T.named_config("kgs_maddison").source() == "kgs" and T.named_config("gogod_agz").source() == "gogod"
    assert config("--source", "kgs") == "kgs_maddison"  # the preset's own declaration: the named config
    fox = config("--source", "fox")
    assert fox.name.startswith("kgs_maddison_") and fox.source() == "fox" and fox.preset == "gonn-kgs"
