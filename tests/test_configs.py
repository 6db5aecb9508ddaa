"""Every training config loads, documents itself, and builds its model (shapes only: nnx.eval_shape)."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from flax import nnx

from kifunet import models
from kifunet.data_prep.planes import features
from kifunet.train import configs, model_config, optim, steps

CONFIG_DIR = Path(__file__).resolve().parents[1] / "train" / "configs"
NAMES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(str(CONFIG_DIR / "*.py"))
               if os.path.basename(p) not in ("__init__.py", "default.py"))
ROWS = ["maddison12", "alphago13_192", "cazenave10", "gonn5", "gonn12", "agz20", "mao", "garb10"]

# published parameter counts (docs/published.md, docs/architectures.md), with the inputs they were counted on
PUBLISHED_PARAMS = {
    "alphago13_192": (48, {}, 3_880_489),
    "cazenave10": (45, {}, 12_098_304),
    "gonn5": (26, {}, 3_597_792),
    "gonn12": (26, {}, 8_250_720),
    "agz20": (17, {"value_head": True}, 22_837_864),
    "qiqiao": (10, {}, 333_951),  # the seed's network at 9x9, both heads (tests/test_models_qiqiao.py)
}


def config_entry(name: str) -> str:
    """The manual's entry for config ``name``: its ``#### `name``` section of the one page that holds it (command,
    hardware, result)."""
    from docs_pages import page_holding

    heading = f"#### `{name}`\n"
    _, text = page_holding(heading)
    entry = text[text.index(heading) + len(heading):]
    return entry[:min(i for i in (entry.find("\n#"), len(entry)) if i >= 0)]


def test_every_row_has_a_config():
    assert set(ROWS + ["cpu_small", "tiny"]) <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_config_loads_documents_and_builds(name):
    path = str(CONFIG_DIR / f"{name}.py")
    cfg = configs.load(path, [("dataset", "/data/x"), ("seed", "3")])
    assert cfg.dataset == "/data/x" and cfg.seed == 3
    with pytest.raises(AttributeError):
        cfg.no_such_field = 1  # locked
    entry = config_entry(name)
    assert f"kifunet train --config train/configs/{name}.py" in entry
    assert "Hardware" in entry
    assert "ompare with" in entry or "Published result" in entry
    # consistent options
    assert cfg.optimizer.name in optim.OPTIMIZERS and cfg.schedule.name in optim.SCHEDULES
    assert cfg.loss in steps.LOSSES and cfg.batchnorm in steps.BATCHNORM_MODES
    assert cfg.batch_size > 0 and cfg.train_positions > 0 and cfg.model.name in models.names()
    assert cfg.value_weight >= 0.0
    feats = cfg.expect_features or "maddison"
    fs = features.get(feats)
    board = models.default_board_size(cfg.model.name)  # 19; 9 for qiqiao
    model = nnx.eval_shape(lambda: model_config.build_model(cfg.model, seed=cfg.seed, board_size=board,
                                                         in_planes=fs.num_planes))
    assert models.count_params(model) > 0
    sched = optim.make_schedule(cfg.schedule, cfg.batch_size, cfg.train_positions)
    assert float(sched(0)) >= 0.0 and float(sched(cfg.train_positions // cfg.batch_size)) >= 0.0


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_row_models_have_the_published_size(name):
    cfg = configs.load_file(str(CONFIG_DIR / f"{name}.py"))
    planes, extra, count = PUBLISHED_PARAMS[name]
    model = nnx.eval_shape(lambda: models.create(cfg.model.name, in_planes=planes, rngs=nnx.Rngs(0), **extra))
    assert models.count_params(model) == count


def test_resnet18_is_trained_exactly_as_mao():
    """MAO's claim is against a ResNet-18 trained the same way: the two configs differ in the model only."""
    mao = configs.load_file(str(CONFIG_DIR / "mao.py")).to_dict()
    resnet = configs.load_file(str(CONFIG_DIR / "resnet18.py")).to_dict()
    assert (mao["model"].pop("name"), resnet["model"].pop("name")) == ("mao", "resnet18")
    assert resnet == mao


def test_the_default_net_was_trained_by_its_config_file():
    """pretrained/kgs_cpu_default_ownership's recorded config is ``cpu_default_ownership.py`` with its dataset, so
    the command in its manual entry trains the same net."""
    import json

    kept = json.loads((CONFIG_DIR.parents[1] / "pretrained" / "kgs_cpu_default_ownership" / "config.json").read_text())
    cfg = configs.load(str(CONFIG_DIR / "cpu_default_ownership.py"), [("dataset", kept["dataset"])])
    assert json.loads(json.dumps(cfg.to_dict())) == kept


def test_schedules_match_the_papers():
    g = configs.load_file(str(CONFIG_DIR / "gonn5.py"))
    s = optim.make_schedule(g.schedule, g.batch_size, g.train_positions)
    # docs/gonn.md section 5: per-sample 3.2e-4, 2.53e-4 at 4M, 1.88e-5 at 100M, 2.6e-6 at 325M (x batch 200)
    for positions, per_sample in [(0, 3.2e-4), (4_000_000, 2.53e-4), (100_000_000, 1.88e-5), (325_000_000, 2.6e-6)]:
        assert float(s(positions // 200)) == pytest.approx(per_sample * 200, rel=0.01)
    a = configs.load_file(str(CONFIG_DIR / "alphago13_192.py"))
    s = optim.make_schedule(a.schedule, a.batch_size, a.train_positions)
    steps = lambda p: p // a.batch_size  # noqa: E731
    assert float(s(steps(79_999_984))) == pytest.approx(0.003)
    assert float(s(steps(80_000_000))) == pytest.approx(0.0015)
    assert float(s(steps(339_999_984))) == pytest.approx(0.003 / 16)
    m = configs.load_file(str(CONFIG_DIR / "maddison12.py"))
    s = optim.make_schedule(m.schedule, m.batch_size, m.train_positions)
    epoch = 29_400_000
    first_step_at = lambda p: -(-p // 128)  # noqa: E731 - the first step whose positions reach p
    assert [round(float(s(first_step_at(p))), 6) for p in (0, 25 * epoch - 256, 25 * epoch, 26 * epoch,
                                                               27 * epoch, 28 * epoch - 128)] == \
        [0.128, 0.128, 0.064, 0.032, 0.016, 0.016]
    c = configs.load_file(str(CONFIG_DIR / "cazenave10.py"))
    s = optim.make_schedule(c.schedule, c.batch_size, c.train_positions)
    warm = c.schedule.warmup_positions // c.batch_size
    assert float(s(0)) == 0.0 and float(s(warm // 2)) < float(s(warm)) == pytest.approx(1.0, rel=1e-3)
    assert float(s(c.train_positions // c.batch_size)) == pytest.approx(0.01, rel=1e-3)


@pytest.mark.slow
def test_maddison12_keeps_the_papers_init_and_clip_is_ours_one_override_away():
    import numpy as np

    cfg = configs.load(str(CONFIG_DIR / "maddison12.py"))
    assert cfg.model.kwargs.init == "uniform" and cfg.optimizer.clip_norm == 1.0

    def hidden_kernel(c):  # the config's net at 8 filters on 9x9 (model_config.build_model's create call)
        return np.asarray(models.create(c.model.name, board_size=9, in_planes=36, filters=8, rngs=nnx.Rngs(0),
                                        **c.model.kwargs.to_dict()).convs[1].kernel[...])

    k = hidden_kernel(cfg)
    assert np.abs(k).max() <= 0.05 and k.std() == pytest.approx(0.05 / np.sqrt(3), rel=0.1)  # uniform [-0.05, 0.05]
    paper = configs.load(str(CONFIG_DIR / "maddison12.py"),
                         [("optimizer.clip_norm", "0"), ("model.kwargs.init", "he")])
    assert paper.optimizer.clip_norm == 0.0
    k = hidden_kernel(paper)
    assert k.std() == pytest.approx(np.sqrt(2 / (9 * 8)), rel=0.15)  # He normal, fan-in 3x3x8
    with pytest.raises(ValueError, match="init must be one of"):
        models.create("maddison_tiny", in_planes=36, rngs=nnx.Rngs(0), init="glorot")


@pytest.mark.parametrize("name", NAMES)
def test_every_config_names_a_known_matmul_precision(name):
    cfg = configs.load(str(CONFIG_DIR / f"{name}.py"), [("matmul_precision", "highest")])
    assert cfg.matmul_precision == "highest"
    assert configs.load_file(str(CONFIG_DIR / f"{name}.py")).matmul_precision in steps.MATMUL_PRECISIONS
