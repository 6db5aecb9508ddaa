"""The ownership and score heads through every way of running a net for play: ``Policy``, the forward cache's
``ExportedPolicy``, the ONNX file and ``OnnxPolicy``, ``LazyPolicy`` (its facts from the run's config, before the net
loads), and ``kifunet gtp``'s GoGui command over them (the command's formats: tests/test_gtp_gogui.py).

The net: an untrained 9x9 ``agz_tiny`` with value, ownership and score heads (plumbing only), its score head's
output bias set to 3.7 so the margin is not about 0. Tolerances: the same float32 program (``Policy``, the exported
program) to 1e-6; onnxruntime computes in another order, to 1e-5 (tests/test_export.py's reasoning).
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
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import gtp_gogui
from kifunet.play.gtp_engine import Engine
from kifunet.play.policy import Policy
from model_helpers import _fast_compiles  # noqa: F401 -- autouse: unoptimised XLA compiles in this module
from model_helpers import rngs
from test_gtp_gogui import ok, parse_analyze_commands, parse_gfx

HEADS = {"value_head": True, "ownership_head": True, "score_head": True}
MOVES = [(BLACK, 40), (WHITE, 30), (BLACK, 22), (WHITE, 58), (BLACK, 50)]


pytestmark = pytest.mark.slow  # every test runs a compiled net


def heads_net(**kwargs):
    from kifunet import models

    net = models.create("agz_tiny", board_size=9, rngs=rngs(4), **{**HEADS, **kwargs})
    if net.score_head is not None:
        net.score_head.out.bias[...] = np.full((1,), 3.7, np.float32)
    net.eval()
    return net


@pytest.fixture(scope="module")
def pol():
    return Policy(heads_net(), "agz", 9, description="agz_tiny with heads")


def model_outputs(net, planes: np.ndarray, colour: int):
    """The model's own call on a batch of planes, as NumPy (the reference every wrapper must give)."""
    b = planes.shape[0]
    out = net(planes.astype(np.float32), rank=np.full(b, -128, np.int32), to_move=np.full(b, colour, np.int32))
    return {k: None if v is None else np.asarray(v) for k, v in out._asdict().items()}


def assert_same(got, want: dict, tol: float):
    for k, v in want.items():
        g = getattr(got, k)
        assert (g is None) == (v is None), k
        if v is not None:
            np.testing.assert_allclose(g, v, atol=tol, rtol=0, err_msg=k)


@pytest.mark.parametrize("colour", [BLACK, WHITE])
def test_the_policy_gives_the_models_heads_and_maps_each_symmetry_back(pol, colour):
    x = pol.planes(MOVES, colour)
    assert pol.has_ownership and pol.has_score and pol.has_value
    got = pol.outputs(MOVES, colour)
    assert got.ownership.shape == (1, 9, 9) and got.score.shape == (1,) and abs(float(got.score[0])) > 1
    assert_same(got, model_outputs(pol.model, x[None], colour), 1e-6)
    # symmetries: row s is the pass on symmetry s's board, its logits and ownership turned back by INVERSE[s]
    eight = pol.outputs(MOVES, colour, symmetries=8)
    for s in range(8):
        want = model_outputs(pol.model, sym.apply_planes(x, s)[None], colour)
        back = int(sym.INVERSE[s])
        want["logits"] = sym.apply_policy(want["logits"], back, 9)
        want["ownership"] = sym.apply_planes(want["ownership"][..., None], back)[..., 0]
        assert_same(type(got)(*(None if v is None else v[s:s + 1] for v in eight)), want, 1e-6)
    assert np.abs(eight.ownership[0] - eight.ownership[5]).max() > 1e-3  # the symmetric passes differ (random net)
    # the probabilities and value are evaluate()'s, from the same rows
    p, v = pol.evaluate(MOVES, colour, symmetries=8)
    np.testing.assert_allclose(p, np.mean([np.exp(r - r.max()) / np.exp(r - r.max()).sum()
                                           for r in eight.logits.astype(np.float64)], axis=0), atol=1e-6)
    assert v == pytest.approx(float(np.mean(eight.value)), abs=1e-6)


def test_a_net_without_the_heads_gives_none(pol):
    bare = Policy(heads_net(ownership_head=False, score_head=False), "agz", 9)
    out = bare.outputs(MOVES, BLACK)
    assert not bare.has_ownership and not bare.has_score and out.ownership is None and out.score is None
    np.testing.assert_allclose(out.logits, pol.outputs(MOVES, BLACK).logits, atol=1e-6)  # heads built last


def test_the_exported_forward_program_keeps_the_heads(pol):
    """The forward cache's artefact (``export_forward``'s program, serialized and read back as a cache entry is)
    gives every head, and its facts (``meta.json``'s, as ``save_entry`` writes them) say so."""
    import jax

    from kifunet.play import forward_cache

    exported, weights = forward_cache.export_forward(pol)
    again = jax.export.deserialize(bytearray(exported.serialize()))
    meta = {"feature_set": "agz", "board_size": 9, "description": pol.description, "trained_size": 9,
            "facts": json.loads(json.dumps(dataclasses.asdict(pol.facts)))}
    fast = forward_cache.ExportedPolicy(again, weights, meta, full=lambda: pol)
    assert fast.has_ownership and fast.has_score and fast.facts == pol.facts
    for colour in (BLACK, WHITE):
        want = pol.outputs(MOVES, colour, symmetries=3)
        assert_same(fast.outputs(MOVES, colour, symmetries=3), want._asdict(), 1e-6)


def test_the_onnx_file_has_the_heads_and_onnxruntime_reads_them(pol, tmp_path):
    for m in ("jax2onnx", "onnx", "onnxruntime"):
        require_module(m, "pip install -e '.[dev]' (the export extra)")
    from kifunet.play import export_onnx
    from kifunet.play.onnx_policy import OnnxNet, OnnxPolicy

    res = export_onnx.export_model(pol.model, "agz", tmp_path / "heads.onnx")
    assert res.outputs == ("logits", "value", "ownership", "score")
    meta = res.metadata
    assert (meta["ownership_head"], meta["score_head"], meta["value_head"]) == ("true", "true", "true")
    assert "side to move" in meta["ownership"] and "side to move" in meta["score"]
    check = json.loads(meta["export_check"])
    assert check["max_abs_ownership_diff"] < 1e-5 and check["max_abs_score_diff"] < 1e-4
    onx = OnnxPolicy(OnnxNet(res.path))
    assert onx.has_ownership and onx.has_score and onx.facts.has_ownership and onx.facts.has_score
    for colour in (BLACK, WHITE):
        assert_same(onx.outputs(MOVES, colour, symmetries=2), pol.outputs(MOVES, colour, symmetries=2)._asdict(),
                    1e-5)
    import onnx

    from kifunet.play.onnx_policy import NotAnExport

    proto = onnx.load(res.path)  # an output this kifunet does not know (a newer file's) is refused in one line
    for node in proto.graph.node:
        node.output[:] = ["margin" if o == "score" else o for o in node.output]
    proto.graph.output[-1].name = "margin"
    with pytest.raises(NotAnExport, match="margin"):
        OnnxNet(proto.SerializeToString())
    plain = export_onnx.export_model(heads_net(ownership_head=False), "agz", tmp_path / "score.onnx")
    assert plain.outputs == ("logits", "value", "score") and plain.metadata["ownership_head"] == "false"
    assert "ownership" not in plain.metadata and not OnnxPolicy(OnnxNet(plain.path)).has_ownership


def _save_run(run, net, config: dict) -> None:
    from flax import nnx

    from kifunet.train import checkpointing

    run.mkdir()
    _, params, extra = nnx.split(net, nnx.Param, ...)
    ck = checkpointing.Checkpointer(str(run / "checkpoints"), async_save=False)
    ck.save(3, {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(3)}, {"position": 3},
            {"step": 3, "board_size": 9, "feature_set": "agz"})
    ck.close()
    (run / "config.json").write_text(json.dumps(config))


def test_the_lazy_policy_knows_the_heads_from_the_config_and_gives_them_once_loaded(pol, tmp_path):
    from kifunet.play import lazy_policy

    _save_run(tmp_path / "run", pol.model, {"model": {"name": "agz_tiny", "kwargs": HEADS}})
    lazy = lazy_policy.lazy_run_policy(str(tmp_path / "run"), start=False)
    assert lazy.loading and lazy.has_ownership and lazy.has_score  # from the config, the net not loaded
    e = Engine(lazy)
    listed = {label for _, label, _ in parse_analyze_commands(ok(e.handle("gogui-analyze_commands")),
                                                              set(ok(e.handle("list_commands")).split()))}
    assert {"Ownership (net)", "Score (net)"} <= listed and lazy.loading  # listed before the net loads
    lazy.start()
    assert_same(lazy.outputs(MOVES, WHITE), pol.outputs(MOVES, WHITE)._asdict(), 1e-6)
    assert lazy.with_rank("3k").has_ownership and lazy.with_profile("year=2010").has_score
    wrapped = lazy_policy.lazy_wrap(pol)
    assert wrapped.has_ownership and wrapped.has_score
    bare = lazy_policy.lazy_wrap(Policy(heads_net(ownership_head=False, score_head=False), "agz", 9))
    assert not bare.has_ownership and not bare.has_score


def test_the_gtp_command_draws_the_nets_own_heads(pol):
    """``kifunet-ownership_gfx`` over the real policy: INFLUENCE is the ownership head's map from Black's view."""
    e = Engine(pol)
    for cmd in ("play b F5", "play w E5", "play b D4", "play w G7", "play b G5"):
        assert ok(e.handle(cmd)) == ""
    out = pol.outputs(e.game.state.moves, WHITE, e.game.state.setup)
    g = parse_gfx(ok(e.handle("kifunet-ownership_gfx w")), 9)
    black_view = -out.ownership[0]  # White to move: the head's +1 is White's
    want = {(r, c) for r in range(9) for c in range(9) if abs(black_view[r, c]) >= gtp_gogui.MIN_INFLUENCE}
    assert set(g["INFLUENCE"]) == want
    for rc, v in g["INFLUENCE"].items():
        assert v == pytest.approx(float(black_view[rc]), abs=5e-4)
    margin = -float(out.score[0])
    assert g["TEXT"].endswith(f"score (net) {'B' if margin > 0 else 'W'}+{abs(margin):.1f}")


def test_kifunet_gtp_plays_an_onnx_file_with_the_heads_as_gogui_drives_it(pol, tmp_path):
    """``kifunet gtp --model heads.onnx`` in a fresh process (the lazy wrapper over onnxruntime): the analyze list
    has the two commands and each answers in GoGui's format."""
    require_module("onnxruntime", "pip install -e '.[dev]' (the export extra)")
    from kifunet.play import export_onnx

    path = export_onnx.export_model(pol.model, "agz", tmp_path / "heads.onnx").path
    cmds = ["gogui-analyze_commands", "list_commands", "play b F5", "kifunet-ownership_gfx w", "kifunet-score w",
            "quit"]
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "gtp", "--model", path], input="\n".join(cmds) + "\n",
                          capture_output=True, text=True, timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = [r + "\n\n" for r in proc.stdout.split("\n\n") if r.strip()]
    assert len(replies) == len(cmds), proc.stdout
    listed = parse_analyze_commands(ok(replies[0]), set(ok(replies[1]).split()))
    assert ("gfx", "Ownership (net)", "kifunet-ownership_gfx %m") in listed
    assert ("string", "Score (net)", "kifunet-score %m") in listed
    g = parse_gfx(ok(replies[3]), 9)
    assert g["INFLUENCE"] and g["TEXT"].startswith("white to play: ownership (net) Black ")
    assert ok(replies[4]).startswith("white to play: score (net) ")
