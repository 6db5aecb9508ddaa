"""The game profile where a user meets it (issue 33, part 2): the play-side policy (play/policy.py, the forward
cache, the lazy policy), ``kifunet gtp --profile`` and the GTP command ``kifunet-profile``, ``kifunet show
--profile``, ``kifunet eval --profile``'s checks and ``kifunet export --profile`` (ONNX metadata and the
``profile`` input).

The nets are tiny 9x9 ``agz_tiny`` runs written directly as checkpoints (as tests/test_export.py and
tests/test_gtp_start.py do): one with ``model.profile_embedding`` 8 whose profile MLP's output layer (zero at
initialisation, so a fresh net ignores the profile) is set to random weights, so that the profile moves the
policy; one without a profile input.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import require_module
from kifunet.cli import main
from kifunet.data_prep import profiles
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import gtp_engine, lazy_policy
from kifunet.play import policy as policy_mod
from model_helpers import _fast_compiles  # noqa: F401 -- autouse: unoptimised XLA compiles in this module

MOVES = [(BLACK, 40), (WHITE, 30), (BLACK, 22), (WHITE, 58)]
OLD, NEW = "year=2005,source=kgs,time=fast", "year=2018,source=fox,time=blitz,opponent_rank=3k"


def _save(run, net, config: dict, step: int = 3, board_size: int = 9) -> None:
    from flax import nnx

    from kifunet.train import checkpointing

    run.mkdir(parents=True)
    _, params, extra = nnx.split(net, nnx.Param, ...)
    ck = checkpointing.Checkpointer(str(run / "checkpoints"), async_save=False)
    ck.save(step, {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(step)}, {"position": step},
            {"step": step, "board_size": board_size, "feature_set": "agz"})
    ck.close()
    (run / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``{"profiled": run dir, "plain": run dir, "net": the profiled net (eval mode)}``."""
    from kifunet import models
    from model_helpers import profiled_agz_tiny, rngs

    root = tmp_path_factory.mktemp("play_profile")
    net = profiled_agz_tiny(9, 0.5)
    _save(root / "profiled", net, {"model": {"name": "agz_tiny", "profile_embedding": 8}})
    plain = models.create("agz_tiny", board_size=9, rngs=rngs(2))
    _save(root / "plain", plain, {"model": {"name": "agz_tiny"}})
    net.eval()
    return {"profiled": root / "profiled", "plain": root / "plain", "net": net}


def _net_probs(net, pol, moves, colour, vector):
    """The model's own softmax for the position given ``vector`` (float32 [46]), outside the policy."""
    x = pol.planes(moves, colour)[None].astype(np.float32)
    z = net(x, rank=np.full(1, pol.rank, np.int32), to_move=np.full(1, colour, np.int32), profile=vector[None])
    return policy_mod.softmax(np.asarray(z.logits, np.float64))[0]


# --- the policy -------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_profiled_net_is_given_the_profile_with_the_ranks_filled_in(runs):
    pol = policy_mod.load_policy(runs["profiled"], rank="7d")
    assert pol.reads_profile and pol.profile == profiles.UNKNOWN_PROFILE
    old, new = pol.with_profile(OLD), pol.with_profile(NEW)
    p_old, p_new = old.probabilities(MOVES, WHITE), new.probabilities(MOVES, WHITE)
    print(f"\nmax |p(old) - p(new)| = {np.abs(p_old - p_new).max():.4f}")
    assert np.abs(p_old - p_new).max() > 1e-3  # the profile moves the policy
    # what the net is given: the profile with its unknown ranks set to the policy's (7d), the opponent's kept
    want_old = profiles.encode(dataclasses.replace(profiles.parse(OLD), rank=6, opponent_rank=6))
    want_new = profiles.encode(dataclasses.replace(profiles.parse(NEW), rank=6))
    np.testing.assert_allclose(p_old, _net_probs(runs["net"], old, MOVES, WHITE, want_old), atol=1e-6)
    np.testing.assert_allclose(p_new, _net_probs(runs["net"], new, MOVES, WHITE, want_new), atol=1e-6)
    assert new.effective_profile().opponent_rank == profiles.parse(NEW).opponent_rank
    # a profile that names the rank wins over the policy's; an unknown rank fills nothing
    assert pol.with_profile("rank=2d").effective_profile().rank == 1
    unknown = policy_mod.load_policy(runs["profiled"], profile=OLD)
    assert unknown.effective_profile() == profiles.parse(OLD)
    # the profile survives with_rank and symmetries; load_policy takes it as text
    assert pol.with_profile(OLD).with_rank("3k").profile == profiles.parse(OLD)
    again = policy_mod.load_policy(runs["profiled"], rank="7d", profile=OLD)
    np.testing.assert_allclose(again.probabilities(MOVES, WHITE, symmetries=4),
                               old.probabilities(MOVES, WHITE, symmetries=4), atol=1e-9)
    with pytest.raises(ValueError, match="unknown key 'colour'"):
        pol.with_profile("colour=black")


def test_a_net_without_profile_input_gives_identical_output_whatever_the_profile(runs):
    pol = policy_mod.load_policy(runs["plain"], rank="7d")
    assert not pol.reads_profile and not hasattr(pol, "_forward_profiled")
    base = pol.probabilities(MOVES, WHITE, symmetries=2)
    for text in (OLD, NEW, "rank=3k,komi=0.5,handicap=4"):
        np.testing.assert_array_equal(pol.with_profile(text).probabilities(MOVES, WHITE, symmetries=2), base)


def test_the_forward_cache_takes_the_profile_and_keeps_the_keys_of_other_nets(runs, tmp_path):
    from kifunet.play import forward_cache
    from kifunet.play.forward_cache import ExportedPolicy
    from kifunet.train.nets import describe_net

    cache = str(tmp_path / "jax")
    loaded = []
    for _ in range(2):  # a normal load writes the entry; the second start runs the exported program
        lazy = lazy_policy.lazy_run_policy(str(runs["profiled"]), rank="7d", compile_cache=cache, profile=OLD)
        assert lazy.reads_profile and lazy.profile == profiles.parse(OLD)  # known before the net loads
        assert lazy.wait(300) and lazy.error is None, lazy.error
        loaded.append(lazy.policy())
    normal, fast = loaded
    assert type(normal) is policy_mod.Policy and isinstance(fast, ExportedPolicy) and fast.reads_profile
    (entry,) = [e.path for e in os.scandir(cache + "-forward") if not e.name.startswith(".")]
    assert json.load(open(os.path.join(entry, forward_cache.META)))["profile_input"] is True
    for text in (OLD, NEW):
        np.testing.assert_allclose(fast.with_profile(text).probabilities(MOVES, BLACK, symmetries=3),
                                   normal.with_profile(text).probabilities(MOVES, BLACK, symmetries=3), atol=1e-6)
    assert np.abs(fast.with_profile(NEW).probabilities(MOVES, BLACK) - fast.probabilities(MOVES, BLACK)).max() > 1e-3
    # the key: a net without a profile input keeps the key it had before profiles; a profiled net's differs
    plain = describe_net(str(runs["plain"]))
    assert forward_cache.entry_key({**plain, "profile_input": False}) == forward_cache.entry_key(plain)
    profiled = describe_net(str(runs["profiled"]))
    assert forward_cache.entry_key({**profiled, "profile_input": True}) != forward_cache.entry_key(profiled)
    assert lazy_policy.config_reads_profile(str(runs["profiled"]))
    assert not lazy_policy.config_reads_profile(str(runs["plain"]))


# --- GTP ----------------------------------------------------------------------------------------------------------
def _engine(run, **kw):
    return gtp_engine.Engine(policy_mod.load_policy(run, rank="7d"), **kw)


def test_kifunet_profile_round_trips_and_moves_the_policy(runs):
    e = _engine(runs["profiled"], profile="rank=5d,year=2005")
    assert e.handle("kifunet-profile") == "= rank=5d,date=2005-07-01\n\n"
    before = e.handle("kifunet-policy b 5")
    assert e.handle("kifunet-profile source=fox, year=2018 ,time=blitz") == "= \n\n"
    assert e.handle("kifunet-profile") == "= date=2018-07-01,source=fox,time=blitz\n\n"
    assert e.handle("kifunet-policy b 5") != before
    assert e.handle("kifunet-profile rank=5d,year=2005") == "= \n\n"
    assert e.handle("kifunet-policy b 5") == before  # back to the same profile, the same answer
    # bad text: a one-line error naming the key or value, and nothing changes
    for bad, word in (("colour=black", "'colour'"), ("rank=12x", "'12x'"), ("year", "'year'"),
                      ("source=igs", "'igs'")):
        reply = e.handle(f"7 kifunet-profile {bad}")
        assert reply.startswith("?7 profile: ") and word in reply and reply.count("\n") == 2, reply
    assert e.handle("kifunet-profile") == "= rank=5d,date=2005-07-01\n\n"
    assert "kifunet-profile" in e.handle("list_commands").split()
    assert e.handle("known_command kifunet-profile") == "= true\n\n"
    assert "string/Profile/kifunet-profile" in e.handle("gogui-analyze_commands").splitlines()[0:]
    # the game fills komi and handicap unless the profile sets them
    assert e.game_profile().komi == 7.5 and e.game_profile().handicap == 0
    p75 = e.policy.probabilities([], BLACK)
    e.handle("komi 0.5")
    assert e.game_profile().komi == 0.5 and np.abs(e.policy.probabilities([], BLACK) - p75).max() > 1e-4
    e.handle("fixed_handicap 3")
    assert e.game_profile().handicap == 3 and e.game_profile().rank == 4  # 5d as set
    e.handle("kifunet-profile komi=6.5,handicap=0")
    assert (e.game_profile().komi, e.game_profile().handicap) == (6.5, 0)
    e.handle("clear_board")
    e.handle("kifunet-profile")
    assert e.game_profile().handicap == 0


def test_a_net_without_profile_input_plays_the_same_whatever_the_profile(runs):
    plain = _engine(runs["plain"])
    told = _engine(runs["plain"], profile=NEW)
    assert plain.handle("kifunet-policy w 8") == told.handle("kifunet-policy w 8")
    assert told.handle("kifunet-profile year=1990") == "= \n\n"
    assert plain.handle("kifunet-policy w 8") == told.handle("kifunet-policy w 8")
    assert told.policy is told.nets.sized  # no copy given a profile: the very policy
    assert "kifunet-profile" not in plain.handle("gogui-analyze_commands")  # offered for profiled nets only
    assert "kifunet-profile" in plain.handle("list_commands").split()
    with pytest.raises(ValueError, match="unknown key"):
        gtp_engine.Engine(plain.policy, profile="speed=fast")


@pytest.mark.slow
def test_kifunet_gtp_profile_option(runs, tmp_path, capsys):
    assert main(["gtp", "--checkpoint", str(runs["profiled"]), "--profile", "rank=7d,year=20x5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--profile: year='20x5' is not a year" in err, err
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "KIFUNET_JAX_CACHE": "off"}
    cmds = "kifunet-profile\nkifunet-policy b 3\nkifunet-profile year=2018,source=fox\nkifunet-policy b 3\nquit\n"
    play = subprocess.run([sys.executable, "-m", "kifunet.cli", "gtp", "--checkpoint", str(runs["profiled"]),
                           "--profile", OLD], input=cmds, capture_output=True, text=True, timeout=300, env=env)
    replies = [r for r in play.stdout.split("\n\n") if r.strip()]
    assert play.returncode == 0 and len(replies) == 5, play.stdout + play.stderr
    assert replies[0] == "= date=2005-07-01,source=kgs,time=fast" and replies[2] == "= "
    assert replies[1] != replies[3]
    plain = subprocess.run([sys.executable, "-m", "kifunet.cli", "gtp", "--checkpoint", str(runs["plain"]),
                            "--profile", OLD], input="quit\n", capture_output=True, text=True, timeout=300, env=env)
    assert plain.returncode == 0 and "has no profile input, so the profile changes nothing" in plain.stderr


# --- show, eval ---------------------------------------------------------------------------------------------------
SGF = "(;GM[1]FF[4]SZ[9]KM[6.5]DT[2016-03-09]PC[KGS]BR[5d]WR[6d];B[ee];W[cc];B[gc];W[eg];B[cf])"


@pytest.mark.slow
def test_kifunet_show_profile(runs, tmp_path, capsys, monkeypatch):
    from kifunet.commands import show
    from kifunet.data_prep.planes.replay import load
    from kifunet.eval import board_image

    game = tmp_path / "g.sgf"
    game.write_text(SGF)
    out = tmp_path / "b.png"
    drawn = []  # (logits, title) of every picture drawn
    draw = board_image.draw_position
    monkeypatch.setattr(board_image, "draw_position",
                        lambda pos, logits, **kw: drawn.append((logits, kw["title"])) or draw(pos, logits, **kw))

    def show_logits(run, *profile):
        assert main(["show", str(game), "--move", "4", "--checkpoint", str(runs[run]), "--out", str(out),
                     *(["--profile", profile[0]] if profile else [])]) == 0
        return drawn[-1]

    own, _ = show_logits("profiled")
    forced, title = show_logits("profiled", "year=2005,source=fox")
    assert out.is_file() and f"wrote {out}" in capsys.readouterr().out
    assert "; profile date=2005-07-01,source=fox" in title
    assert np.abs(np.asarray(own) - np.asarray(forced)).max() > 1e-3
    plain, _ = show_logits("plain")
    np.testing.assert_array_equal(show_logits("plain", "year=2005,source=fox")[0], plain)
    assert "plain has no profile input, so the profile changes nothing" in capsys.readouterr().err
    # the vector: the SGF's own profile (5d vs 6d, 2016, KGS, komi 6.5) with the named fields replaced
    record = load(str(game))
    v = show._position_profile(record, WHITE, profiles.parse_fields("year=2005,source=fox"), 5)
    own = profiles.profile_of(record.info, WHITE)
    assert (own.rank, own.opponent_rank, own.source, own.komi) == (5, 4, "kgs", 6.5)
    np.testing.assert_array_equal(v, profiles.encode(dataclasses.replace(own, date=profiles.days_since_epoch(
        "", 2005), source="fox")))
    assert show._position_profile(record, WHITE, {}, 8)[0] == profiles.encode(profiles.Profile(rank=8))[0]
    assert main(["show", str(game), "--move", "4", "--checkpoint", str(runs["profiled"]), "--out", str(out),
                 "--profile", "komi=lots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "komi='lots' is not a number" in err
    assert main(["show", str(game), "--move", "4", "--checkpoint", str(runs["plain"]), "--out", str(out),
                 "--profile", "year=2005"]) == 0
    assert "has no profile input, so the profile changes nothing" in capsys.readouterr().err
    assert "profile" not in drawn[-1][1]


def test_kifunet_eval_profile_errors_are_one_line(runs, tmp_path, capsys):
    from kifunet.commands.eval import default_out

    data = tmp_path / "no_data"
    assert main(["eval", "--checkpoint", str(runs["profiled"]), "--data", str(data), "--profile", "rank=7q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--profile: rank='7q' is not a rank" in err, err
    assert main(["eval", "--checkpoint", str(runs["plain"]), "--data", str(data), "--profile", "year=2005"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no profile input" in err, err
    # a forced profile has its own default result file
    assert default_out(str(runs["profiled"]), "ds", "test", False, profile="source=kgs, year=2005").endswith(
        "ds_test_profile_date-2005-07-01_source-kgs.json")


# --- ONNX ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def onnx_files(runs, tmp_path_factory):
    for m in ("jax2onnx", "onnx", "onnxruntime"):
        require_module(m, "pip install -e '.[dev]' (the export extra)")
    root = tmp_path_factory.mktemp("onnx_profile")
    files = {"profiled": root / "profiled.onnx", "plain": root / "plain.onnx"}
    assert main(["export", str(runs["profiled"]), "--out", str(files["profiled"]), "--profile",
                 "rank=7d,year=2010,source=kgs"]) == 0
    assert main(["export", str(runs["plain"]), "--out", str(files["plain"])]) == 0
    return files


def test_a_profiled_net_exports_a_profile_input_and_its_default(runs, onnx_files, capsys):
    import jax

    from kifunet.play.onnx_policy import OnnxNet, load_onnx_policy

    onx = OnnxNet(onnx_files["profiled"])
    m = onx.metadata
    assert onx.inputs[-1] == "profile" and onx.session.get_inputs()[-1].shape[1] == profiles.SIZE
    assert json.loads(m["inputs"])[-1] == "profile"
    assert m["profile_input"] == "true" and m["profile_encoding"] == "kifunet.profiles/1"
    assert m["profile"] == "rank=7d,date=2010-07-01,source=kgs"
    np.testing.assert_allclose(json.loads(m["profile_vector"]),
                               profiles.encode(profiles.parse("rank=7d,year=2010,source=kgs")), atol=1e-6)
    # onnxruntime agrees with JAX on random positions under several profiles, and the profile matters
    net = runs["net"]
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (6, 9, 9, 17)).astype(np.float32)
    r, t = np.zeros(6, np.int32), np.resize(np.array([1, 2], np.int32), 6)
    vecs = np.stack([profiles.encode(profiles.parse(s)) for s in (OLD, NEW, "", OLD, NEW, "rank=3k,komi=0.5")])
    ref = np.asarray(jax.jit(lambda a, b, c, d: net(a, rank=b, to_move=c, profile=d).logits)(x, r, t, vecs))
    got = onx.run(x, r, t, vecs).logits
    print(f"\nprofiled agz_tiny: max |logit diff| {np.abs(got - ref).max():.2e}")
    assert np.abs(got - ref).max() < 1e-4
    assert np.abs(onx.run(x, r, t, vecs[::-1])[0] - got).max() > 1e-3
    # the player uses the recorded default unless told another
    pol = load_onnx_policy(onnx_files["profiled"])
    assert pol.reads_profile and pol.profile == profiles.parse("rank=7d,year=2010,source=kgs")
    jax_pol = policy_mod.load_policy(runs["profiled"], profile=pol.profile)
    np.testing.assert_allclose(pol.probabilities(MOVES, WHITE), jax_pol.probabilities(MOVES, WHITE), atol=1e-5)
    assert load_onnx_policy(onnx_files["profiled"], profile=NEW).profile == profiles.parse(NEW)
    e = gtp_engine.Engine(pol)
    assert e.handle("kifunet-profile") == "= rank=7d,date=2010-07-01,source=kgs\n\n"


def test_a_net_without_profile_exports_as_before_with_the_flags(runs, onnx_files, capsys):
    from kifunet.play.onnx_policy import OnnxNet

    onx = OnnxNet(onnx_files["plain"])
    assert onx.inputs == ("planes",) and not onx.reads_profile
    assert onx.metadata["profile_input"] == "false" and onx.metadata["profile_encoding"] == "kifunet.profiles/1"
    assert "profile" not in onx.metadata and "profile_vector" not in onx.metadata
    out = onnx_files["plain"].parent / "refused.onnx"
    assert main(["export", str(runs["plain"]), "--out", str(out), "--profile", "year=2005"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no profile input" in err and not out.exists()
    assert main(["export", str(runs["profiled"]), "--out", str(out), "--profile", "handicap=many"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "handicap='many' is not a number of stones" in err


def test_kifunet_eval_profile_forces_the_fields_and_says_so(tmp_path, capsys):
    """A 19x19 profiled net on a dataset of two sample games: ``--profile year=2005`` changes the nats, is
    printed and recorded, and has its own default result file."""
    from pathlib import Path

    from model_helpers import profiled_agz_tiny

    samples = Path(__file__).resolve().parents[1] / "samples" / "gnugo"
    if not samples.is_dir():
        pytest.skip("samples/gnugo is absent")
    ds = tmp_path / "ds"
    assert main(["build", *(str(samples / f"gnugo-{i:04d}.sgf") for i in range(2)), "--out", str(ds), "--features",
                 "agz", "--hash-split", "test:0.5", "--workers", "0", "--no-progress"]) == 0
    net = profiled_agz_tiny(19, 2.0)
    run = tmp_path / "run19"
    _save(run, net, {"model": {"name": "agz_tiny", "profile_embedding": 8}}, board_size=19)
    capsys.readouterr()
    common = ["eval", "--checkpoint", str(run), "--data", str(ds), "--split", "test", "--limit", "64",
              "--no-breakdowns", "--cpu-devices", "1"]
    assert main(common) == 0
    own = capsys.readouterr().out
    assert "profile: every field each position's own" in own
    assert main(common + ["--profile", "source=fox,year=2005"]) == 0
    forced = capsys.readouterr().out
    assert "profile: forced date=2005-07-01,source=fox on every position" in forced
    plain_json = run / "eval" / "ds_test_first64.json"
    forced_json = run / "eval" / "ds_test_first64_profile_date-2005-07-01_source-fox.json"
    a, b = json.loads(plain_json.read_text()), json.loads(forced_json.read_text())
    assert a["settings"]["profile"] == "" and profiles.parse(b["settings"]["profile"]) == profiles.parse(
        "source=fox,year=2005")
    assert abs(a["results"]["single"]["nll_sum"] - b["results"]["single"]["nll_sum"]) > 1e-3


@pytest.mark.slow
def test_a_profiled_training_run_plays_and_evaluates_with_its_profile(tmp_path):
    """`kifunet build` + `kifunet train --config.model.profile_embedding=8` (tiny config): the run's net reads a
    profile, ``kifunet eval`` without ``--profile`` reproduces the trainer's final nats (each position's own
    profile, as training evaluated), and the profile moves the policy of the played net."""
    from pathlib import Path

    samples = Path(__file__).resolve().parents[1] / "samples" / "gnugo"
    if not samples.is_dir():
        pytest.skip("samples/gnugo is absent")
    cli = [sys.executable, "-m", "kifunet.cli"]
    ds, run = tmp_path / "ds", tmp_path / "run"
    b = subprocess.run(cli + ["build", str(samples), "--out", str(ds), "--workers", "1", "--no-progress",
                              "--val-fraction", "0.2"], capture_output=True, text=True, timeout=600)
    assert b.returncode == 0, b.stdout + b.stderr
    t = subprocess.run(cli + ["train", "--config", str(Path(__file__).resolve().parents[1] / "train/configs/tiny.py"),
                              "--workdir", str(run), f"--config.dataset={ds}", "--config.eval_split=val",
                              "--config.model.profile_embedding=8"], capture_output=True, text=True, timeout=900)
    assert t.returncode == 0, t.stdout[-3000:] + t.stderr[-3000:]
    final = json.loads((run / "metrics_eval.jsonl").read_text().strip().splitlines()[-1])
    assert lazy_policy.config_reads_profile(str(run))
    pol = policy_mod.load_policy(run, rank="7d")
    assert pol.reads_profile
    p_old, p_new = pol.with_profile(OLD).probabilities(MOVES, BLACK), pol.with_profile(NEW).probabilities(MOVES, BLACK)
    assert np.abs(p_old - p_new).max() > 1e-6
    e = subprocess.run(cli + ["eval", "--checkpoint", str(run), "--data", str(ds), "--split", "val", "--limit",
                              str(int(final["eval_positions"])), "--no-breakdowns", "--cpu-devices", "1", "--out", "-"],
                       capture_output=True, text=True, timeout=600)
    assert e.returncode == 0 and "profile: every field each position's own" in e.stdout, e.stdout + e.stderr
    row = [line for line in e.stdout.splitlines() if line.startswith("single pass")][0]
    assert abs(float(row.split()[-2]) - final["nats"]) < 1e-3, (row, final)
