"""Checkpoints: the whole state (PRNG keys included) round-trips, pipeline state per process, keep N,
leftovers of a crashed save are ignored, weights-only loading."""

from __future__ import annotations

import json
import os

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from kifunet.train import checkpointing, configs, input_pipeline, parallel, train
from test_train_data import ds_maddison, pipeline  # noqa: F401 (fixture)

TINY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train", "configs", "tiny.py")


def _state(model="mao_tiny", seed=0):
    cfg = configs.load_file(TINY)
    cfg.model.name = model
    cfg.seed = seed
    mesh = parallel.make_mesh(1)
    _, _, _, state, _ = train.setup(cfg, board_size=9, in_planes=17 if model == "mao_tiny" else 36, mesh=mesh)
    return state


def _equal(a, b) -> bool:
    fa, fb = checkpointing.flatten_state(a), checkpointing.flatten_state(b)
    return fa.keys() == fb.keys() and all(np.array_equal(np.asarray(fa[k]), np.asarray(fb[k])) for k in fa)


@pytest.mark.slow
def test_flatten_round_trip_keeps_prng_keys():
    s = _state()
    flat = checkpointing.flatten_state(s)
    assert any("rngs/key" in k for k in flat) and any(k.startswith("opt_state/") for k in flat)
    assert all(not jax.dtypes.issubdtype(np.asarray(v).dtype, jax.dtypes.prng_key) for v in flat.values())
    back = checkpointing.unflatten_state(s, flat)
    keys = [x for x in jax.tree.leaves(back) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)]
    assert keys and _equal(s, back)


def test_save_restore_keep_n_and_pipeline_state(ds_maddison, tmp_path):
    s0, s1 = _state(seed=0), _state(seed=1)
    assert not _equal(s0, s1)
    it = input_pipeline.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), batch_size=16, seed=0)
    for _ in range(3):
        next(it)
    data_state = it.get_state()
    expected_next = next(it)
    it.close()
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"), keep=2)
    for step in (1, 2, 3):
        ck.save(step, s1 if step == 3 else s0, data_state, {"step": step, "positions": step * 16})
    ck.wait()
    assert ck.all_steps() == [2, 3] and ck.latest_step() == 3
    assert os.path.exists(tmp_path / "ck" / "3" / "data" / "process_0-of-1.json")
    restored, dstate, meta = ck.restore(3, s0)
    ck.close()
    assert _equal(restored, s1) and meta["positions"] == 48
    assert json.loads(json.dumps(dstate)) == json.loads(json.dumps(data_state))
    it2 = input_pipeline.train_iterator(*pipeline(ds_maddison, window_blocks=2, workers=0), batch_size=16, seed=0)
    it2.set_state(dstate)
    got = next(it2)
    it2.close()
    assert np.array_equal(got["planes"], expected_next["planes"])
    assert np.array_equal(got["target"], expected_next["target"])


def test_unfinished_save_is_ignored_and_cleaned(tmp_path):
    s = _state()
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"))
    ck.save(5, s, {"windows": {}, "taken": 0}, {"step": 5})
    ck.close()
    # what a kill -9 during a save leaves: a temporary step directory that was never committed
    tmp = tmp_path / "ck" / "9.orbax-checkpoint-tmp-1234"
    (tmp / "state").mkdir(parents=True)
    (tmp / "state" / "junk").write_text("partial")
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"))
    assert ck.latest_step() == 5  # the unfinished step 9 is not a checkpoint
    restored, _, meta = ck.restore(5, s)
    assert _equal(restored, s) and meta["step"] == 5
    ck.save(9, s, {"windows": {}, "taken": 0}, {"step": 9})  # the resumed run reaches step 9 again
    ck.close()
    assert not tmp.exists() and ck.all_steps() == [5, 9]


def test_close_waits_for_the_clean_up_of_temporaries_that_opening_started(tmp_path):
    """A run that ends before its first save (bad input) closes its checkpointer and removes the empty folder: the
    clean-up thread orbax started at opening must be done by then, or it lists a folder that is gone."""
    tmp = tmp_path / "ck" / "3.orbax-checkpoint-tmp-99"
    tmp.mkdir(parents=True)
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"))
    ck.close()  # no save: only close can wait for the clean-up
    assert not tmp.exists() and ck.manager._cleanup_tmp_directory_future is None
    os.rmdir(tmp_path / "ck")


def test_load_weights_from_workdir_or_step_dir(tmp_path):
    s = _state()
    ck = checkpointing.Checkpointer(str(tmp_path / "wd" / "checkpoints"))
    ck.save(7, s, {"windows": {}, "taken": 0}, {"step": 7})
    ck.close()
    for p in (tmp_path / "wd", tmp_path / "wd" / "checkpoints", tmp_path / "wd" / "checkpoints" / "7"):
        w, meta = checkpointing.load_weights(str(p))
        assert meta["step"] == 7
        assert w and all(k.startswith(("params/", "extra/")) for k in w)
        flat = checkpointing.flatten_state(s)
        assert all(np.array_equal(w[k], np.asarray(flat[k])) for k in w)
    with pytest.raises(FileNotFoundError):
        checkpointing.load_weights(str(tmp_path / "nothing"))


def test_no_pickle_in_checkpoints(tmp_path):
    s = _state()
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"))
    ck.save(1, s, {"windows": {"next_index": 3}, "taken": 1}, {"step": 1})
    ck.close()
    for root, _, files in os.walk(tmp_path / "ck"):
        for f in files:
            head = open(os.path.join(root, f), "rb").read(2)
            assert head != b"\x80\x04" and head != b"\x80\x05", f  # pickle protocol 4/5 headers
    assert isinstance(ocp.StandardCheckpointer().restore(str(tmp_path / "ck" / "1" / "state")), dict)


@pytest.mark.slow
def test_a_checkpoint_saved_on_two_devices_loads_in_a_one_device_process(tmp_path):
    """A run trained with ``cpu_devices=2`` (or on a GPU) is played and exported by one-device processes:
    ``load_weights`` restores host arrays instead of the saved shardings (orbax: "topology mismatch")."""
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import jax, numpy as np
        assert jax.device_count() == 2
        from kifunet.train import checkpointing, configs, parallel, train
        cfg = configs.load_file({TINY!r})
        mesh = parallel.make_mesh(2)
        _, _, _, state, _ = train.setup(cfg, board_size=9, in_planes=36, mesh=mesh)
        ck = checkpointing.Checkpointer(sys.argv[1])
        ck.save(3, state, {{"windows": {{}}, "taken": 0}}, {{"step": 3}})
        ck.close()
        flat = checkpointing.flatten_state(state)
        np.savez(sys.argv[2], **{{k.replace("/", "|"): np.asarray(v) for k, v in flat.items()
                                  if k.startswith(("params/", "extra/"))}})
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=2")
    p = subprocess.run([sys.executable, "-c", child, str(tmp_path / "wd" / "checkpoints"), str(tmp_path / "w.npz")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert jax.device_count() == 1
    w, meta = checkpointing.load_weights(str(tmp_path / "wd"))
    want = {k.replace("|", "/"): v for k, v in np.load(tmp_path / "w.npz").items()}
    assert meta["step"] == 3 and w.keys() == want.keys()
    assert all(isinstance(w[k], np.ndarray) and np.array_equal(w[k], want[k]) for k in want)



def _layout_state(flat: bool):
    cfg = configs.load_file(TINY)
    cfg.model.name = "mao_tiny"
    _, _, _, state, _ = train.setup(cfg, board_size=9, in_planes=17, mesh=parallel.make_mesh(1),
                                    flat_optimizer=flat)
    return state


def _slots(state) -> dict:
    """``{slot: vector}`` of a state's optimizer arrays, whichever layout (per-parameter arrays concatenated in
    the parameters' order)."""
    params = [k[len("params/"):] for k in checkpointing.flatten_state({"params": state["params"]})]
    flat = checkpointing.flatten_state(state)
    out = {}
    for k, v in flat.items():
        if not k.startswith("opt_state/") or np.asarray(v).dtype != np.float32:
            continue
        slot = next((k[: -len(p) - 1] for p in params if k.endswith("/" + p)), k)
        out.setdefault(slot, []).append((params.index(k[len(slot) + 1:]) if slot != k else 0, np.ravel(v)))
    return {k: np.concatenate([v for _, v in sorted(parts, key=lambda t: t[0])]) for k, parts in out.items()}


@pytest.mark.parametrize(("saved_flat", "sealed"), [(False, True), (False, False), (True, True)])
def test_a_step_saved_in_one_optimizer_layout_resumes_in_the_other(tmp_path, saved_flat, sealed):
    """The optimizer runs on the concatenated parameters on CPUs and GPUs and per array on TPUs (and per array in
    runs saved before the flat optimizer): a step of either layout restores into the other, bit for bit."""
    saved, template = _layout_state(saved_flat), _layout_state(not saved_flat)
    assert _slots(saved).keys() == _slots(template).keys() and len(_slots(saved)) == 2  # adam's mu and nu
    assert checkpointing.flatten_state(saved).keys() != checkpointing.flatten_state(template).keys()
    rng = np.random.default_rng(0)
    saved = dict(saved, step=jax.numpy.asarray(7, np.asarray(saved["step"]).dtype),
                 opt_state=jax.tree.map(lambda x: rng.standard_normal(np.shape(x)).astype(np.float32)
                                        if np.asarray(x).dtype == np.float32 else x, saved["opt_state"]))
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"))
    ck.save(7, saved, {"windows": {}, "taken": 0}, {"step": 7})
    ck.close()
    if not sealed:
        os.remove(tmp_path / "ck" / "7" / checkpointing.CHECKSUMS)
    ck = checkpointing.Checkpointer(str(tmp_path / "ck"))
    restored, _, _ = ck.restore(7, template, log=lambda _m: None)
    ck.close()
    assert checkpointing.flatten_state(restored).keys() == checkpointing.flatten_state(template).keys()
    want, got = _slots(saved), _slots(restored)
    assert all(np.array_equal(got[k], want[k]) for k in want)
    assert _equal({k: restored[k] for k in ("params", "extra")}, {k: saved[k] for k in ("params", "extra")})
