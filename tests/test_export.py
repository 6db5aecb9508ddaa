"""``kifunet export`` (play/export_onnx.py) and the ONNX policy (play/onnx_policy.py): the file says what it is,
onnxruntime gives JAX's logits on real positions, and ``kifunet gtp --model net.onnx`` plays without JAX.

Tolerance: the ONNX graph computes the same float32 operations as XLA, in another order (convolution
algorithms, summation trees), so logits differ by float32 rounding: a few ulps of the partial sums, i.e. about
1e-6 relative to the logits' scale (|logits| <= ~30 here). ``LOGIT_TOL = 1e-4`` leaves ~10x headroom over the
largest difference measured (printed by the tests), and is 1e4 times smaller than a logit difference that
could swap two moves a trained net tells apart (0.01 and up); a wrong plane order, a dropped input or a
missing BatchNorm gives differences of 0.1 and more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import KGS_2015, REPO, require_module, require_path
from kifunet.cli import main
from kifunet.data_prep.planes import features
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE

LOGIT_TOL = 1e-4
PRETRAINED = REPO / "pretrained" / "kgs_cpu_small"


@pytest.fixture(scope="module", autouse=True)
def _export_extra():
    for m in ("jax2onnx", "onnx", "onnxruntime"):
        require_module(m, "pip install -e '.[dev]' (the export extra)")


def random_game(n: int, moves: int, seed: int) -> list[tuple[int, int]]:
    """A legal random game on an n x n board (captures happen), colours alternating from black."""
    rng = np.random.default_rng(seed)
    b, out, c = Board(n), [], BLACK
    while len(out) < moves:
        legal = np.nonzero(b.legal_moves(c)[:-1])[0]
        p = int(rng.choice(legal)) if len(legal) else n * n
        if p != n * n:
            b.play(p, c)
        out.append((c, p))
        c = 3 - c
    return out


def save_run(workdir: Path, net, step: int, config: dict) -> None:
    """A training run directory holding ``net`` as its checkpoint at ``step`` (weights only, as training saves)."""
    from flax import nnx

    from kifunet.train import checkpointing

    _, params, extra = nnx.split(net, nnx.Param, ...)
    ck = checkpointing.Checkpointer(str(workdir / "checkpoints"), async_save=False)
    ck.save(step, {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(step)}, {"position": step},
            {"step": step, "positions": step * 16})
    ck.close()
    (workdir / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 9x9 ``maddison_tiny`` run with a rank embedding (so the file has all three inputs), exported with the
    command: (run dir, the net as JAX has it, the .onnx path, the command's output)."""
    from flax import nnx

    from kifunet import models

    root = tmp_path_factory.mktemp("export")
    ds = root / "ds"
    ds.mkdir()
    (ds / "manifest.json").write_text(json.dumps({
        "board_size": 9, "features": {"name": "maddison"}, "fingerprint": "f00d", "preset": None,
        "inputs": [{"path": "games.tar.gz", "sha256": "ab", "records": 12, "kind": "tar"}],
        "splits": {"train": {"games": 10, "positions": 600, "shards": []}}, "counts": {"seen": 12, "used": 10}}))
    net = models.create("maddison_tiny", board_size=9, rank_embedding=True, rngs=nnx.Rngs(3))
    run = root / "tiny_run"
    run.mkdir()
    save_run(run, net, 5, {"dataset": str(ds), "train_split": "train",
                           "model": {"name": "maddison_tiny", "dtype": "float32", "rank_embedding": True}})
    out = root / "tiny.onnx"
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["export", str(run), "--out", str(out)]) == 0
    net.eval()
    return run, net, out, buf.getvalue()


def jax_outputs(net, planes, rank, to_move):
    """The net's own forward pass (JAX, batched): (logits, value or None) as NumPy."""
    import jax

    out = jax.jit(lambda x, r, t: net(x, rank=r, to_move=t))(planes, rank, to_move)
    return np.asarray(out.logits), (None if out.value is None else np.asarray(out.value))


@pytest.mark.slow
def test_export_command_writes_a_file_that_says_what_it_is(tiny):
    from kifunet.play.onnx_policy import OnnxNet, read_metadata

    run, net, out, printed = tiny
    assert f"wrote {out}" in printed and "step 5" in printed and "rank via planes+embedding" in printed
    meta = read_metadata(out)
    fs = features.get("maddison")
    assert meta["feature_set"] == "maddison" and meta["board_size"] == "9" and meta["model"] == "maddison_tiny"
    assert json.loads(meta["plane_names"]) == fs.plane_names() and len(fs.plane_names()) == 36
    assert json.loads(meta["features"])[-1][:4] == ["rank_dan_9", 9, True, "player_rank"]
    assert json.loads(meta["inputs"]) == ["planes", "rank", "to_move"]  # rank embedding + Maddison's to_move
    assert meta["rank_input"] == "planes+embedding" and "unknown = -128" in meta["rank_scale"]
    assert meta["value_head"] == "false" and meta["has_pass"] == "false" and "value" not in meta
    assert "row*N + col" in meta["policy_index"] and "N*N = pass" in meta["policy_index"]
    assert meta["run"] == "tiny_run" and meta["step"] == "5" and meta["version"]
    data = json.loads(meta["training_data"])
    assert data["manifest"]["fingerprint"] == "f00d" and data["manifest"]["splits"]["train"]["positions"] == 600
    assert data["positions_trained"] == 80 and data["train_split"] == "train"
    assert json.loads(meta["export_check"])["max_abs_logit_diff"] <= LOGIT_TOL
    onx = OnnxNet(out)
    assert onx.inputs == ("planes", "rank", "to_move") and onx.outputs == ("logits",)
    assert [i.shape for i in onx.session.get_inputs()][0][0] == "B"  # a dynamic batch

    # the same logits as JAX, batched (a dynamic batch) and one at a time, on positions of random games,
    # with every rank kind and both colours
    from kifunet.play.policy import Policy

    pol = Policy(net, "maddison", 9)
    xs, ranks_, colours = [], [], []
    for g in range(6):
        moves = random_game(9, 50, seed=g)
        for i in range(0, 50, 5):
            colour = moves[i][0]
            rank = [8, 0, -128, -5, 12][len(xs) % 5]
            xs.append(pol.with_rank(rank).planes(moves[:i], colour))
            ranks_.append(rank)
            colours.append(colour)
    x = np.stack(xs).astype(np.float32)
    r, t = np.array(ranks_, np.int32), np.array(colours, np.int32)
    ref, _ = jax_outputs(net, x, r, t)
    got, value = onx.run(x, r, t)[:2]
    assert value is None and got.shape == (60, 82)
    diff = float(np.abs(got - ref).max())
    print(f"\nmaddison_tiny (rank embedding): max |logit diff| {diff:.2e} on {len(x)} positions")
    assert diff < LOGIT_TOL
    np.testing.assert_allclose(onx.run(x[:1], r[:1], t[:1])[0], got[:1], atol=1e-6)
    # the rank and colour inputs matter (so feeding them wrongly would be caught above)
    assert np.abs(onx.run(x, np.full_like(r, 8), t)[0] - got).max() > 1e-3
    assert np.abs(onx.run(x, r, 3 - t)[0] - got).max() > 1e-3


def test_pretrained_net_matches_jax_on_real_kgs_positions(tmp_path):
    """kgs_cpu_small on 300 positions of real 2015 KGS games (inputs.iter_file), each with the rank of the player
    to move, planes built by the JAX policy's own plane builder."""
    from kifunet.data_prep.sgf import inputs, sgf_io
    from kifunet.data_prep.game import MOVE, SETUP
    from kifunet.play import export_onnx
    from kifunet.play.onnx_policy import OnnxNet, OnnxPolicy
    from kifunet.play.policy import load_policy

    archive = require_path(KGS_2015, "the real KGS 2015 archive")
    res = export_onnx.export_run(PRETRAINED, tmp_path / "kgs.onnx")
    assert res.inputs == ("planes", "to_move") and res.outputs == ("logits",)  # rank comes in as planes
    assert res.metadata["rank_input"] == "planes" and res.metadata["step"] == "19100"
    assert json.loads(res.metadata["training_data"])["dataset"] == "data/kgs_maddison"
    pol = load_policy(PRETRAINED)
    xs, colours = [], []
    info = inputs.InputInfo(str(archive), "tar")
    for src in inputs.iter_file(str(archive), info):
        rec = sgf_io.load_game(src.data, path=src.path)
        kinds = rec.kinds.tolist()
        if rec.size != 19 or MOVE not in kinds or SETUP in kinds[kinds.index(MOVE):]:
            continue
        setup = [(c, p) for k, c, p in zip(kinds, rec.colours.tolist(), rec.points.tolist()) if k == SETUP]
        moves = [(c, p) for k, c, p in zip(kinds, rec.colours.tolist(), rec.points.tolist()) if k == MOVE]
        for i in range(3, len(moves), 11):
            colour = moves[i][0]
            rank = rec.info.black_rank if colour == BLACK else rec.info.white_rank
            xs.append(pol.with_rank(rank).planes(moves[:i], colour, setup))
            colours.append(colour)
        if len(xs) >= 300:
            break
    x, t = np.stack(xs[:300]).astype(np.float32), np.array(colours[:300], np.int32)
    assert x[..., -9:].any()  # real ranks reached the rank planes
    ref, _ = jax_outputs(pol.model, x, np.zeros(len(x), np.int32), t)
    onx = OnnxNet(res.path)
    got = onx.run(x, np.zeros(len(x), np.int32), t).logits
    diff = float(np.abs(got[:, :-1] - ref[:, :-1]).max())  # pass: -1e9 in both
    assert np.array_equal(got[:, -1], ref[:, -1])
    print(f"\nkgs_cpu_small: max |logit diff| {diff:.2e} on {len(x)} real KGS positions "
          f"(logits up to {np.abs(ref[:, :-1]).max():.1f}); export {res.seconds:.1f} s, {res.bytes} bytes")
    assert diff < LOGIT_TOL
    assert (got.argmax(1) == ref.argmax(1)).all()

    # the whole ONNX policy (its planes, its rank, its softmax) against the JAX policy
    opol = OnnxPolicy(onx, rank="5d")
    jpol = pol.with_rank("5d")
    moves = [(BLACK, 72), (WHITE, 288), (BLACK, 300), (WHITE, 60)]
    np.testing.assert_allclose(opol.probabilities(moves, BLACK), jpol.probabilities(moves, BLACK), atol=1e-6)


def test_value_head_nets_export_both_outputs(tmp_path):
    from flax import nnx

    from kifunet import models
    from kifunet.play import export_onnx
    from kifunet.play.gtp_policy import GtpPolicy
    from kifunet.play.onnx_policy import OnnxNet, OnnxPolicy
    from kifunet.play.policy import Policy

    net = models.create("agz_tiny", board_size=9, value_head=True, rngs=nnx.Rngs(1))
    net.eval()
    res = export_onnx.export_model(net, "agz", tmp_path / "v.onnx")
    assert res.inputs == ("planes",) and res.outputs == ("logits", "value")  # agz reads neither rank nor colour
    assert res.metadata["value_head"] == "true" and "side to move" in res.metadata["value"]
    assert res.metadata["has_pass"] == "true" and res.metadata["rank_input"] == "none"
    moves = random_game(9, 30, seed=7)
    jp, op = Policy(net, "agz", 9), OnnxPolicy(OnnxNet(res.path))
    assert isinstance(op, GtpPolicy) and isinstance(jp, GtpPolicy)  # what the GTP engine needs of a policy
    (pj, vj), (po, vo) = jp.evaluate(moves, BLACK), op.evaluate(moves, BLACK)
    np.testing.assert_allclose(po, pj, atol=1e-6)
    assert op.has_value and vo is not None and abs(vo - vj) < LOGIT_TOL


def test_gtp_plays_an_onnx_file_without_jax(tiny):
    """``kifunet gtp --model tiny.onnx`` in a fresh process: legal moves, and JAX never imported."""
    _, _, out, _ = tiny
    script = ("import sys\nfrom kifunet.cli import main\nrc = main(['gtp', '--model', sys.argv[1]])\n"
              "print('JAX_IMPORTED' if 'jax' in sys.modules or 'flax' in sys.modules else 'NO_JAX', rc, "
              "file=sys.stderr)\n")
    cmds = ["boardsize 9", "clear_board", "genmove b", "play w E5", "genmove b", "genmove w", "genmove b",
            "1 kifunet-policy w 2", "quit"]
    proc = subprocess.run([sys.executable, "-c", script, str(out)], input="\n".join(cmds) + "\n",
                          capture_output=True, text=True, timeout=300, cwd=out.parent,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert "NO_JAX 0" in proc.stderr, proc.stderr
    replies = [r for r in proc.stdout.split("\n\n") if r.strip()]
    assert len(replies) == len(cmds) and all(r.startswith(("=", "=1")) for r in replies), proc.stdout
    from kifunet.data_prep import coords

    board = Board(9)
    for cmd, reply in zip(cmds, replies):
        words = cmd.split()
        if words[0] == "genmove":
            vertex, colour = reply[2:].strip(), BLACK if words[1] == "b" else WHITE
        elif words[0] == "play":
            vertex, colour = words[2], WHITE
        else:
            continue
        rc = coords.from_gtp(vertex, 9)
        assert rc is not None, f"{cmd}: {vertex}"  # the net has no pass output and the board is open
        board.play(coords.to_flat(rc, 9), colour)  # ValueError on an illegal move
    assert len(replies[7].split()) == 5  # "=1 V1 P1 V2 P2"


def test_export_and_gtp_errors(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.onnx")]) == 2
    assert "kifunet export: error:" in capsys.readouterr().err
    empty = tmp_path / "empty_run"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    assert main(["export", str(empty), "--out", str(tmp_path / "x.onnx")]) == 2
    assert "no checkpoint" in capsys.readouterr().err
    assert main(["export", str(PRETRAINED), "--out", str(tmp_path / "no" / "x.onnx")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["export", str(PRETRAINED), "--step", "7", "--out", str(tmp_path / "x.onnx")]) == 2
    assert "no checkpoint for step 7" in capsys.readouterr().err
    assert main(["gtp", "--model", str(tmp_path / "missing.onnx")]) == 2
    assert "missing.onnx: no such file" in capsys.readouterr().err
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    assert main(["gtp", "--model", str(tmp_path / "bad.onnx")]) == 2
    assert "not an ONNX model" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists()


def test_the_file_decides_features_and_board_size(tiny, tmp_path):
    """A file whose planes are not the ones this kifunet builds is refused, as are options that contradict it."""
    import onnx

    from kifunet.play.onnx_policy import PREFIX, load_onnx_policy

    _, _, out, _ = tiny
    with pytest.raises(ValueError, match="9x9, not 19x19"):
        load_onnx_policy(out, board_size=19)
    with pytest.raises(ValueError, match="maddison features, not agz"):
        load_onnx_policy(out, feature_set="agz")
    assert load_onnx_policy(out, feature_set="maddison", board_size=9).board_size == 9
    proto = onnx.load(str(out))
    props = {p.key: p.value for p in proto.metadata_props}
    names = json.loads(props[PREFIX + "plane_names"])
    props[PREFIX + "plane_names"] = json.dumps(names[1:] + names[:1])  # another plane order
    onnx.helper.set_model_props(proto, props)
    onnx.save(proto, str(tmp_path / "other.onnx"))
    with pytest.raises(ValueError, match="planes"):
        load_onnx_policy(tmp_path / "other.onnx")
    del props[PREFIX + "has_pass"]
    onnx.helper.set_model_props(proto, props)
    onnx.save(proto, str(tmp_path / "old.onnx"))
    with pytest.raises(ValueError, match="lacks kifunet.has_pass"):
        load_onnx_policy(tmp_path / "old.onnx")


SHIPPED = ("kgs_cpu_default", "kgs_cpu_default_ownership", "kgs_cpu_small", "qiqiao9x9", "rank_experiment/base",
           "rank_experiment/cond")


@pytest.mark.slow
def test_every_shipped_net_exports_and_plays_like_jax(tmp_path):
    """``export_run`` over every net under pretrained/ (gonn_resnet5, maddison3 with rank planes, with a rank
    embedding, qiqiao with its value head): the file's logits (and value) equal JAX's within LOGIT_TOL of the
    logits' scale on positions of a random game, and the ONNX policy refuses other board sizes."""
    from kifunet.play import export_onnx
    from kifunet.play.onnx_policy import OnnxPolicy, OnnxNet
    from kifunet.play.policy import load_policy

    root = REPO / "pretrained"
    assert sorted(str(p.parent.relative_to(root)) for p in root.rglob("config.json")) == sorted(SHIPPED)
    for i, name in enumerate(SHIPPED):
        res = export_onnx.export_run(root / name, tmp_path / f"{i}.onnx")
        jpol = load_policy(root / name, rank="7d")
        n = jpol.board_size
        onx = OnnxNet(res.path)
        opol = OnnxPolicy(onx, rank="7d")
        moves = random_game(n, 40, seed=i)
        x = np.stack([jpol.planes(moves[:t], moves[t][0]) for t in range(0, 40, 4)]).astype(np.float32)
        colours = np.array([moves[t][0] for t in range(0, 40, 4)], np.int32)
        rank = np.full(len(x), 6, np.int32)
        ref, ref_v = jax_outputs(jpol.model, x, rank, colours)
        got, got_v = onx.run(x, rank, colours)[:2]
        board = ref[:, :-1]
        scale = max(1.0, float(np.abs(board).max()))
        diff = float(np.abs(got[:, :-1] - board).max())
        print(f"\n{name}: max |logit diff| {diff:.2e} (scale {scale:.1f}) on {len(x)} positions; export "
              f"{res.seconds:.1f} s; inputs {res.inputs}, outputs {res.outputs}")
        assert diff <= LOGIT_TOL * scale, name
        assert (got.argmax(1) == ref.argmax(1)).all(), name
        assert (ref_v is None) == (got_v is None) == (name != "qiqiao9x9")
        if ref_v is not None:
            assert np.abs(got_v - ref_v).max() < LOGIT_TOL
        np.testing.assert_allclose(opol.probabilities(moves[:20], moves[20][0], symmetries=2),
                                   jpol.probabilities(moves[:20], moves[20][0], symmetries=2), atol=1e-5)
        assert opol.trained_size == n and opol.size_problem(n) is None
        assert "fixed board dimensions" in opol.size_problem(13 if n != 13 else 9)


def test_weights_as_numpy_or_jax_arrays_export_alike(tmp_path):
    """A checkpoint gives host NumPy arrays, a fresh model JAX arrays: the same net exports to the same logits
    either way (gonn_tiny: PReLU, global pooling, BatchNorm)."""
    import jax
    from flax import nnx

    from kifunet import models
    from kifunet.play import export_onnx
    from kifunet.play.onnx_policy import OnnxNet

    # built abstractly and filled with random host arrays (BatchNorm variances positive), the way load_net
    # restores a checkpoint, without initialising (whose compilations would cost seconds)
    abstract = nnx.eval_shape(lambda: models.create("gonn_tiny", board_size=9, rngs=nnx.Rngs(0)))
    graph, state = nnx.split(abstract)
    rng = np.random.default_rng(5)

    def fill(path, s):
        if "var" in str(path[-2:]):
            return rng.uniform(0.5, 1.5, s.shape).astype(s.dtype)
        return rng.normal(0, 0.3, s.shape).astype(s.dtype)

    host = jax.tree_util.tree_map_with_path(fill, state)
    as_numpy = nnx.merge(graph, host)
    net = nnx.merge(graph, jax.device_put(host))
    net.eval()
    as_numpy.eval()
    assert all(isinstance(v, np.ndarray) for v in jax.tree.leaves(nnx.state(as_numpy)))
    assert all(isinstance(v, jax.Array) for v in jax.tree.leaves(nnx.state(net)))
    planes, rank, to_move, _ = export_onnx.check_positions(9, 26)
    outs = []
    for k, model in enumerate((net, as_numpy)):
        res = export_onnx.export_model(model, "gonn", tmp_path / f"{k}.onnx")
        outs.append(OnnxNet(res.path).run(planes, rank, to_move)[0])
    np.testing.assert_array_equal(outs[0], outs[1])
    ref, _ = jax_outputs(net, planes, rank, to_move)
    assert np.abs(outs[0][:, :-1] - ref[:, :-1]).max() < LOGIT_TOL
