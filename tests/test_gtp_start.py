"""``kifunet gtp``'s fast start (play/lazy_policy.py, kifunet/commands/gtp.py): protocol commands are answered
while the net loads in a background thread, the main thread never imports JAX, a load failure is a one-line GTP
error, a ``quit`` during loading ends the process. Behaviour only: the start-up times are measured by
``benchmarks/bench_gtp_start.py``, not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from kifunet.data_prep import coords
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK
from kifunet.play import gtp_engine, gtp_protocol, lazy_policy
from model_helpers import _fast_compiles  # noqa: F401 -- autouse: unoptimised XLA compiles in this module
from model_helpers import rngs


def tiny_policy(n: int = 9):
    from kifunet import models
    from kifunet.play.policy import Policy

    return Policy(models.create("agz_tiny", board_size=n, value_head=True, rngs=rngs(0)), "agz", n,
                  description="agz_tiny (test)")


def test_protocol_commands_are_answered_before_the_net_has_loaded():
    """The loader is held until every protocol command has been answered: name, version (with the value head
    known from the config), boardsize at the net's size, komi, play, known_command. Then genmove waits for
    the net and plays a legal move."""
    release, entered = threading.Event(), threading.Event()
    net = tiny_policy()

    def load():
        entered.set()
        assert release.wait(60)
        return net

    pol = lazy_policy.LazyPolicy(load, board_size=9, feature_set="agz", description="agz_tiny (test)",
                                 has_value=True, error=gtp_protocol.GtpError)
    engine = gtp_engine.Engine(pol)
    assert entered.wait(60)
    replies = {c: engine.handle(c) for c in ("protocol_version", "name", "version", "boardsize 9", "clear_board",
                                             "komi 6.5", "play b E5", "known_command genmove")}
    assert pol.loading and not release.is_set()  # all answered while the net was still "loading"
    assert replies["name"] == "= kifunet\n\n" and replies["protocol_version"] == "= 2\n\n"
    assert "agz_tiny (test); value head" in replies["version"]
    assert all(r.startswith("=") for r in replies.values()), replies
    assert pol.size_problem(9) is None and pol.resized(9) is pol and pol.trained_size == 9  # no wait either
    release.set()
    move = engine.handle("genmove w")
    assert move.startswith("= ") and not pol.loading
    vertex = move[2:].strip()
    board = Board(9)
    board.play(coords.to_flat(coords.from_gtp("E5", 9), 9), BLACK)
    if vertex.lower() != "pass":
        board.play(coords.to_flat(coords.from_gtp(vertex, 9), 9), 3 - BLACK)  # ValueError if illegal
    # the lazy policy gives what the loaded one gives, symmetries included
    np.testing.assert_allclose(pol.probabilities([(BLACK, 40)], 2, symmetries=2),
                               net.probabilities([(BLACK, 40)], 2, symmetries=2), atol=0)
    assert pol.has_pass is net.has_pass is True


def test_a_net_that_fails_to_load_is_a_one_line_gtp_error():
    def load():
        raise ValueError("run/checkpoints/5: the checkpoint does not fit agz_tiny\nsecond line")

    pol = lazy_policy.LazyPolicy(load, board_size=9, feature_set="agz", description="x", has_value=False,
                                 error=gtp_protocol.GtpError)
    engine = gtp_engine.Engine(pol)
    assert engine.handle("name") == "= kifunet\n\n"
    assert pol.wait(60) and pol.error.startswith("run/checkpoints/5")
    want = "? cannot load the net: run/checkpoints/5: the checkpoint does not fit agz_tiny\n\n"
    assert engine.handle("genmove b") == want and engine.handle("kifunet-policy b") == want
    assert engine.handle("boardsize 9").startswith("=")  # what needs no net still works


def test_the_lazy_facts_are_the_built_nets_for_every_registered_model(tmp_path):
    """What ``kifunet gtp`` says before flax loads -- ``has_value`` (:func:`kifunet.models.catalog.config_has_value`),
    ``has_ownership`` and ``has_score`` (:func:`kifunet.models.catalog.config_heads`) and ``reads_profile``
    (:func:`lazy_policy.config_reads_profile`, from the run's ``config.json``) -- against the facts of the net
    built from the same config: each family's smallest registered model built abstractly, with and without
    ``value_head=True``, a profile input and the ownership and score heads; every other name of a family has that
    family's constructor and no ``value_head`` of its own, so it answers as its family does."""
    import inspect
    import json

    from flax import nnx

    from kifunet import models
    from kifunet.models import catalog, registry

    by_family: dict[type, list[str]] = {}
    for name in models.names():
        by_family.setdefault(registry.spec(name).family, []).append(name)
    assert len(by_family) >= 9 and sorted(models.names()) == sorted(catalog.MODELS)
    for family, names in by_family.items():
        small = min(names, key=lambda nm: (not nm.endswith("_tiny"), nm))
        n = models.default_board_size(small)
        params = inspect.signature(family.__init__).parameters
        assert (family.__name__ in catalog.AUX_HEADS) == ("ownership_head" in params), family
        for kwargs in ({}, {"value_head": True}, {"profile_embedding": 4}, {"ownership_head": True},
                       {"score_head": True, "ownership_head": False}):
            if not set(kwargs) <= set(params):
                for name in names:  # a family without the heads: a config asking for them gets none
                    assert catalog.config_heads(name, kwargs) == (False, False), (name, kwargs)
                continue
            facts = nnx.eval_shape(lambda: models.create(small, board_size=n, rngs=rngs(0), **kwargs)).facts
            (tmp_path / "config.json").write_text(json.dumps({"model": {"name": small, "kwargs": kwargs}}))
            assert lazy_policy.config_reads_profile(str(tmp_path)) == facts.reads_profile, (small, kwargs)
            for name in names:
                assert "value_head" not in registry.spec(name).kwargs, name
                assert catalog.config_has_value(name, kwargs) == facts.has_value, (name, kwargs)
                assert catalog.config_heads(name, kwargs) == (facts.has_ownership, facts.has_score), (name, kwargs)


def test_the_command_line_imports_no_jax():
    """``kifunet --version``, the command modules and everything ``kifunet gtp`` needs before it answers."""
    code = ("import sys\nfrom kifunet.cli import main\n"
            "import kifunet.commands.gtp, kifunet.commands.export, kifunet.play.lazy_policy, kifunet.train.nets\n"
            "import kifunet.play.gtp_engine, kifunet.train.checkpointing, kifunet.play.onnx_policy\n"
            "from kifunet.train.nets import describe_net\n"
            "print(sorted(m for m in ('jax', 'flax', 'orbax', 'grain', 'onnxruntime') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A 9x9 agz_tiny training run directory (checkpoint with checksums, config, metadata)."""
    from flax import nnx

    from kifunet.train import checkpointing

    run = tmp_path_factory.mktemp("gtp_start") / "run"
    run.mkdir()
    net = tiny_policy().model
    _, params, extra = nnx.split(net, nnx.Param, ...)
    ck = checkpointing.Checkpointer(str(run / "checkpoints"), async_save=False)
    ck.save(3, {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(3)}, {"position": 3},
            {"step": 3, "board_size": 9, "feature_set": "agz"})
    ck.close()
    (run / "config.json").write_text(json.dumps({"model": {"name": "agz_tiny", "kwargs": {"value_head": True}}}))
    return run


# Records which thread first imports jax, and says so on stderr the moment it happens.
_WATCH = r"""
import sys, threading
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "jax":
            print(f"JAX_IMPORTED_BY={threading.current_thread().name}", file=sys.stderr, flush=True)
            sys.meta_path.remove(self)
        return None
sys.meta_path.insert(0, Watch())
from kifunet.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_kifunet_gtp_loads_jax_in_the_background_and_quits_at_once(tiny_run, tmp_path):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "KIFUNET_JAX_CACHE": str(tmp_path / "jax-cache")}
    argv = [sys.executable, "-c", _WATCH, "gtp", "--checkpoint", str(tiny_run)]
    play = subprocess.run(argv, input="name\nversion\ngenmove b\nquit\n", capture_output=True, text=True,
                          timeout=300, env=env)
    replies = [r for r in play.stdout.split("\n\n") if r.strip()]
    assert play.returncode == 0 and len(replies) == 4, play.stdout + play.stderr
    assert replies[0] == "= kifunet" and "agz_tiny from run step 3; value head" in replies[1], replies
    assert replies[2].startswith("= ") and coords.from_gtp(replies[2][2:].strip(), 9) is not None
    assert f"JAX_IMPORTED_BY={lazy_policy.THREAD_NAME}" in play.stderr, play.stderr  # never the main thread
    assert any(os.scandir(tmp_path / "jax-cache"))  # the compiled forward pass was kept for the next start

    # quit at once: the process ends (no thread keeps it alive, nothing is left running), answering quit
    quit_ = subprocess.run(argv, input="quit\n", capture_output=True, text=True, timeout=300, env=env)
    assert quit_.returncode == 0 and quit_.stdout.strip() == "=", quit_.stdout + quit_.stderr
    assert "Traceback" not in quit_.stderr, quit_.stderr


# --- the exported forward pass (play/forward_cache.py) ------------------------------------------------------------
def _entry(root):
    from kifunet.play import forward_cache

    (key,) = [e.name for e in os.scandir(root) if not e.name.startswith(".")]
    return os.path.join(root, key), forward_cache


def _loaded(run, compile_cache, rank="5d", log=None):
    pol = lazy_policy.lazy_run_policy(str(run), rank=rank, compile_cache=compile_cache, log=log)
    assert pol.wait(300) and pol.error is None, pol.error
    return pol.policy()


@pytest.fixture(scope="module")
def warm_cache(tiny_run, tmp_path_factory):
    """A compile cache whose forward-cache entry the first (normal) load of ``tiny_run`` wrote; the normal
    policy."""
    cache = str(tmp_path_factory.mktemp("warm") / "jax")
    from kifunet.play.policy import Policy

    pol = _loaded(tiny_run, cache)
    assert type(pol) is Policy  # the first start loads normally ...
    return cache, pol


@pytest.mark.slow
def test_a_warm_start_runs_the_cached_program_without_flax_or_orbax(tiny_run, warm_cache):
    cache, normal = warm_cache
    from kifunet.play.forward_cache import ExportedPolicy, cache_root
    from kifunet.play.gtp_policy import GtpPolicy

    assert cache_root(cache) == cache + "-forward" and os.path.isdir(cache + "-forward")
    fast = _loaded(tiny_run, cache)  # ... and the second from the entry it wrote
    assert isinstance(fast, ExportedPolicy) and (fast.has_pass, fast.has_value) == (True, True)
    assert isinstance(fast, GtpPolicy)  # what the GTP engine needs of a policy
    moves = [(BLACK, 40), (2, 30), (BLACK, 22)]
    for k in (1, 3, 8):
        for colour in (1, 2):
            (p, v), (q, w) = fast.evaluate(moves, colour, symmetries=k), normal.evaluate(moves, colour, symmetries=k)
            np.testing.assert_allclose(p, q, atol=1e-6, rtol=0)
            assert abs(v - w) <= 1e-6
    np.testing.assert_allclose(fast.with_rank("3k").probabilities(moves, 2),
                               normal.with_rank("3k").probabilities(moves, 2), atol=1e-6, rtol=0)
    assert fast.size_problem(7) == normal.size_problem(7) and fast.size_problem(9) is None  # other sizes: flax

    code = ("import sys\nfrom kifunet.cli import main\nrc = main(sys.argv[1:])\n"
            "print('LOADED', sorted(m for m in ('flax', 'orbax', 'jax') if m in sys.modules), file=sys.stderr)\n"
            "sys.exit(rc)\n")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "KIFUNET_JAX_CACHE": cache}
    play = subprocess.run([sys.executable, "-c", code, "gtp", "--checkpoint", str(tiny_run)],
                          input="name\ngenmove b\nquit\n", capture_output=True, text=True, timeout=300, env=env)
    replies = [r for r in play.stdout.split("\n\n") if r.strip()]
    assert play.returncode == 0 and len(replies) == 3 and replies[1].startswith("= "), play.stdout + play.stderr
    assert "LOADED ['jax']" in play.stderr, play.stderr


@pytest.mark.parametrize("damage", ["weights", "program", "meta", "key"])
def test_a_damaged_entry_falls_back_to_the_normal_load_and_is_rewritten(tiny_run, warm_cache, tmp_path, damage):
    import shutil

    from kifunet.play.policy import Policy

    cache, normal = warm_cache
    copy = str(tmp_path / "jax")
    shutil.copytree(cache + "-forward", copy + "-forward")
    folder, forward_cache = _entry(copy + "-forward")
    if damage == "weights":  # a valid file with one weight changed: only the entry's checksum tells
        path = os.path.join(folder, forward_cache.WEIGHTS)
        with np.load(path) as z:
            weights = dict(z)
        weights["w00000"].flat[0] += 1.0
        np.savez(path, **weights)
    elif damage == "program":
        path = os.path.join(folder, forward_cache.PROGRAM)
        open(path, "wb").write(open(path, "rb").read()[:100])
    elif damage == "meta":
        open(os.path.join(folder, forward_cache.META), "w").write("{not json")
    else:  # an entry made for another checkpoint under this key
        meta = json.load(open(os.path.join(folder, forward_cache.META)))
        meta["key"] = "0" * 32
        json.dump(meta, open(os.path.join(folder, forward_cache.META), "w"))
    said = []
    pol = _loaded(tiny_run, copy, log=said.append)
    assert type(pol) is Policy and said[0].startswith("forward cache: ") and "wrote" in said[-1], said
    np.testing.assert_array_equal(pol.probabilities([(BLACK, 40)], 2, symmetries=4),
                                  normal.probabilities([(BLACK, 40)], 2, symmetries=4))
    again = _loaded(tiny_run, copy)  # rewritten: the next start uses it
    assert isinstance(again, forward_cache.ExportedPolicy)
    np.testing.assert_allclose(again.probabilities([(BLACK, 40)], 2, symmetries=4),
                               normal.probabilities([(BLACK, 40)], 2, symmetries=4), atol=1e-6, rtol=0)


def test_no_cache_and_an_unwritable_cache_still_play(tiny_run, tmp_path, monkeypatch):
    from kifunet.play.forward_cache import cache_root
    from kifunet.play.policy import Policy

    monkeypatch.setenv("KIFUNET_JAX_CACHE", "off")
    assert lazy_policy.default_compile_cache() is None and cache_root(None) is None
    monkeypatch.chdir(tmp_path)
    off = _loaded(tiny_run, None)
    assert type(off) is Policy and not os.listdir(tmp_path)  # nothing written anywhere here
    blocked = tmp_path / "jax"  # the forward cache's place is taken by a file: it cannot be written
    (tmp_path / "jax-forward").write_text("a file")
    said = []
    pol = _loaded(tiny_run, str(blocked), log=said.append)
    assert type(pol) is Policy and "not written" in said[-1], said
    np.testing.assert_array_equal(pol.probabilities([(BLACK, 40)], 2), off.probabilities([(BLACK, 40)], 2))
