"""maddison12's recipe (plain SGD at 0.128) diverges once its kernels have grown, in float32 and bfloat16 alike; the
config's ``clip_norm`` (ours, not the paper's) keeps it finite.

The net is a narrow analogue of maddison12 on a 9x9 board: 12 hidden layers of 16 filters (the paper's 128), its
uniform [-0.05, 0.05] init with the hidden kernels scaled by 1.9, the 3x3 layers by a further sqrt(128/16) so that
each layer's gain (fan-in x variance) is the full-width net's: the weight growth at the plateau's exit. Random
planes and moves; the real training step, optimizer and schedule of ``train/configs/maddison12.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kifunet.train import configs, model_config, optim, parallel, steps
from model_helpers import _fast_compiles  # noqa: F401 (fixture: unoptimised compiles)

CONFIG = Path(__file__).resolve().parent.parent / "train" / "configs" / "maddison12.py"
N, FILTERS, BATCH, STEPS, GROWTH = 9, 16, 32, 6, 1.9


def _run(cfg, dtype: str) -> dict:
    """``STEPS`` training steps of the narrow analogue (module docstring) under ``cfg``'s optimizer and schedule;
    the metric window (``first_bad``: the first step with a non-finite loss, 0 if none)."""
    cfg.model.dtype = dtype
    cfg.model.kwargs.filters = FILTERS
    model = model_config.build_model(cfg.model, seed=0, board_size=N, in_planes=36)
    for i, conv in enumerate(model.convs):
        conv.kernel[...] = conv.kernel[...] * GROWTH * (1.0 if i == 0 else math.sqrt(128 / FILTERS))
    md = steps.ModelDef(model)
    schedule = optim.make_schedule(cfg.schedule, cfg.batch_size, cfg.train_positions)
    tx = optim.make_optimizer(cfg.optimizer, schedule, params=md.params, model=model, bn_paths=md.bn_paths)
    mesh = parallel.make_mesh(1)
    state = parallel.replicate({"params": md.params, "extra": md.extra, "opt_state": tx.init(md.params),
                                "step": jnp.zeros((), jnp.int32)}, mesh)
    fn = parallel.data_parallel(steps.windowed(steps.train_step(md, tx, schedule, loss=cfg.loss)), mesh, carry=True)
    window = parallel.empty_window(mesh)
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        batch = {"planes": (rng.random((BATCH, N, N, 36)) < 0.3).astype(np.uint8),
                 "target": rng.integers(0, N * N, BATCH).astype(np.int32),
                 "to_move": rng.integers(1, 3, BATCH).astype(np.int32), "rank": np.zeros(BATCH, np.int32),
                 "weight": np.ones(BATCH, np.float32)}
        state, window = fn(state, parallel.shard_batch(batch, mesh), window)
    return jax.device_get(window)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_maddison12_recipe_diverges_unclipped_and_stays_finite_with_clip_norm(dtype):
    cfg = configs.load_file(str(CONFIG))
    assert cfg.optimizer.clip_norm == 1.0 and cfg.optimizer.momentum == 0.0 and cfg.schedule.lr == 0.128
    paper = configs.load_file(str(CONFIG))
    paper.optimizer.clip_norm = 0.0  # the paper's recipe: --config.optimizer.clip_norm=0
    w = _run(paper, dtype)
    assert 1 <= int(w["first_bad"]) <= STEPS, int(w["first_bad"])
    assert not np.isfinite(float(w["grad_norm_max"]))
    w = _run(cfg, dtype)
    assert int(w["first_bad"]) == 0 and np.isfinite(float(w["grad_norm_max"]))
    assert float(w["loss_sum"]) / float(w["count"]) < 2 * math.log(N * N)  # near the uniform guess, not blown up
    assert float(w["logit_abs_max"]) < 50.0
