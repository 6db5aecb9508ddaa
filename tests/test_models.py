"""Model families, registry, parameter counts and the call contract (kifunet.models).

Full-size models are only built with ``nnx.eval_shape`` (shapes, no memory, no compute); everything that
runs uses the ``*_tiny`` variants on small batches.
"""

from __future__ import annotations

import inspect
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from kifunet import models
from kifunet.models import registry
from kifunet.models.garb import GARBBlock, PreActBlock
from kifunet.models.gonn import GoNNGlobalBlock

#: every family's small variant, read from the registry (a new ``*_tiny`` net is tested without an edit here)
TINY = [n for n in models.names() if n.endswith("_tiny")]
WITH_PASS = {"agz_tiny", "resnet18_tiny", "mao_tiny", "garb_tiny", "qiqiao_tiny"}
# the two-headed nets: (name, overrides); qiqiao always has its value head, the others (every tiny net whose family
# takes ``value_head``) by the option (GoNN cut to one plain block: its value head and activation are the same, and
# its compile is 3x shorter)
_SHORTER = {"gonn_tiny": {"blocks": 1, "global_blocks": (), "head_global_pool": False}}
TWO_HEADED = [(n, {"value_head": True, **_SHORTER.get(n, {})}) for n in TINY
              if "value_head" in inspect.signature(registry.spec(n).family.__init__).parameters] + [("qiqiao_tiny", {})]


from model_helpers import _fast_compiles, rngs  # noqa: F401  (autouse fixture)


def create(name, **kw):
    return models.create(name, rngs=rngs(kw.pop("seed", 0)), **kw)


def abstract(name, **kw):
    return nnx.eval_shape(lambda: create(name, **kw))


def batch(model, b=4, seed=0):
    rng = np.random.default_rng(seed)
    n = model.board_size
    x = (rng.random((b, n, n, model.in_planes)) < 0.3).astype(np.float32)
    y = rng.integers(0, n * n, size=b)
    return jnp.asarray(x), jnp.asarray(y)


# ------------------------------------------------------------------------------------- parameter counts

_INT = r"\d{1,3}(?:,\d{3})*"
# "555,241 (~560k published)", "551,762 / 1,132,754 / ... (2.3M published)": our counts, then the published one
# where it is only given rounded (the count is ours, checked exactly; the published figure must round to it)
_COUNT_CELL = re.compile(rf"^({_INT}(?: / {_INT})*)(?: \((~?)(\d+(?:\.\d+)?)([kM]) published\))?$")


def readme_table(header: str) -> list[list[str]]:
    """The cells of every row of the manual's table whose header line starts with ``header`` (in the one page of
    docs/ that holds it: docs/models.md, docs/speed.md)."""
    from docs_pages import page_holding

    _, text = page_holding(header)
    lines = text[text.index(header):].splitlines()
    assert set(lines[1].replace("|", "").strip()) <= set("-: "), lines[1]
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _expand_names(cell: str) -> list[str]:
    """``maddison3 / 6 / 10 / 12`` -> maddison3, maddison6, ...; ``gonn_resnet5 / 12 / 12_global`` -> ... the
    first name's trailing number is replaced by each further part."""
    first, *rest = [p.strip() for p in cell.split(" / ")]
    stem = re.fullmatch(r"(.*?)\d+", first)
    assert stem or not rest, cell
    return [first] + [stem.group(1) + r for r in rest]


def readme_parameter_rows() -> list[tuple[str, int, int, dict]]:
    """(model name, planes, trainable params, extras) for every number in docs/models.md's model table (the value
    head of agz_resnet20 too; extras: ``value_head``, or ``published`` = (digits, k|M) where the page gives a
    rounded published figure). Any cell this cannot read fails: no row goes unchecked."""
    out = []
    for name_cell, family, planes, counts in readme_table("| name | family | planes | trainable params |"):
        names = _expand_names(name_cell)
        m = _COUNT_CELL.match(counts)
        assert m, f"the model table (docs/models.md): cannot read the count cell {counts!r}"
        values = [int(v.replace(",", "")) for v in m.group(1).split(" / ")]
        assert len(values) == len(names), (name_cell, counts)
        published = (m.group(3), m.group(4)) if m.group(3) else None
        out += [(n, int(planes), v, {"published": published} if published and n == names[-1] else {})
                for n, v in zip(names, values)]
        head = re.search(rf"\(\+ value head: ({_INT})\)", family)
        if head:
            assert len(names) == 1, name_cell
            out.append((names[0], int(planes), int(head.group(1).replace(",", "")), {"value_head": True}))
    return out


README_ROWS = readme_parameter_rows()


def test_readme_model_table_is_read_whole():
    names = [r[0] for r in README_ROWS]
    assert len(names) == len(set((r[0], "value_head" in r[3]) for r in README_ROWS)) >= 20  # 19 nets + 1 head
    assert {"clark_storkey8", "maddison3", "maddison12", "alphago13_128", "garb5", "garb20", "mao"} <= set(names)
    assert set(names) <= set(models.names())


@pytest.mark.parametrize("name,planes,expected,kw", README_ROWS,
                         ids=[r[0] + ("+value_head" if "value_head" in r[3] else "") for r in README_ROWS])
def test_readme_parameter_counts_exact(name, planes, expected, kw):
    """Every count in docs/models.md's model table, exactly, and its planes. Where a paper gives only a rounded
    figure the page shows it beside ours ("555,241 (~560k published)"): ours must round to it at the
    significant digits written."""
    kw = dict(kw)
    published = kw.pop("published", None)
    assert models.default_in_planes(name) == planes
    assert models.count_params(abstract(name, **kw)) == expected
    if published:
        digits, unit = published
        value = float(digits) * {"k": 1e3, "M": 1e6}[unit]
        sig = len(digits.replace(".", "").strip("0"))
        step = 10 ** (math.floor(math.log10(value)) - sig + 1)
        assert round(expected / step) * step == pytest.approx(value), (expected, digits + unit)


@pytest.mark.slow
def test_readme_speed_table_parameter_counts_exact():
    rows = readme_table("| model | params |")
    assert len(rows) >= 8
    for row in rows:
        assert models.count_params(abstract(row[0])) == int(row[1].replace(",", "")), row


def test_gonn_component_counts_and_ablation_switches():
    """docs/gonn.md section 4.2: block 664,704, global block 570,496; switches change the count by the right amounts."""
    base = models.count_params(abstract("gonn_resnet5"))
    six = models.count_params(abstract("gonn_resnet5", blocks=6))
    assert six - base == 664_704
    glob = models.count_params(abstract("gonn_resnet5", blocks=6, global_blocks=(5,)))
    assert glob - base == 570_496
    assert models.count_params(abstract("gonn_resnet5", dilated_channels=0)) == base  # dilation is free
    assert base - models.count_params(abstract("gonn_resnet5", center_emphasis=False)) == 26 * 192
    # PReLU slopes: 2 per block + final + head g1
    assert base - models.count_params(abstract("gonn_resnet5", activation="relu")) == 192 * 11 + 32
    # head global pool: g1 conv 55,296 + BN 64 + PReLU 32 + matmul 3,072
    assert base - models.count_params(abstract("gonn_resnet5", head_global_pool=False)) == 58_464
    assert models.count_params(abstract("gonn_resnet5", rank_embedding=True)) - base == 49 * 192



def test_gonn_wide_low_rank_block_counts_macs_and_placement():
    """docs/gonn.md section 7 as built: a wide low-rank block in place of a dilated one keeps the parameter count
    (``18 C^2 + 6 C`` either way), costs twice its MACs, and any block index but a global one may hold it."""
    from kifunet.models.flops import count_macs
    from kifunet.models.gonn import GoNNWideBlock

    base = abstract("gonn_resnet5")
    wide = abstract("gonn_resnet5", wide_blocks=(0, 3))
    assert models.count_params(wide) == models.count_params(base)
    assert [type(b).__name__ for b in wide.blocks][:4] == ["GoNNWideBlock", "GoNNBlock", "GoNNBlock", "GoNNWideBlock"]
    assert count_macs(wide) - count_macs(base) == 2 * 361 * 18 * 192 * 192  # each: 36 C^2 per point, not 18 C^2
    narrow = abstract("gonn_resnet5", wide_blocks=(2,), wide_channels=64, wide_length=7)
    assert models.count_params(base) - models.count_params(narrow) == 664_704 - (2 * 7 * 192 * 64 + 3 * 192 + 3 * 64)
    assert isinstance(narrow.blocks[2], GoNNWideBlock)
    for bad in (dict(wide_blocks=(5,)), dict(wide_blocks=(-1,)), dict(wide_blocks=(2,), global_blocks=(2,))):
        with pytest.raises(ValueError, match="wide_blocks"):
            abstract("gonn_resnet5", **bad)


@pytest.mark.slow
def test_gonn_wide_block_is_symmetric_under_transposition():
    """The two paths share their kernels transposed and one BN: block(x^T) = block(x)^T, in training and eval."""
    from kifunet.models.gonn import GoNNWideBlock

    act = dict(activation="prelu", prelu_init=0.25, param_dtype=jnp.float32)
    blk = GoNNWideBlock(8, mid=6, length=5, act=act, dtype=jnp.float32, param_dtype=jnp.float32, rngs=nnx.Rngs(1))
    x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 7, 7, 8)).astype(np.float32))
    for mode in ("train", "eval"):
        getattr(blk, mode)()
        y, yt = blk(x), blk(jnp.swapaxes(x, 1, 2))
        np.testing.assert_allclose(np.swapaxes(np.asarray(y), 1, 2), np.asarray(yt), atol=2e-5)
        assert float(jnp.abs(y - x).max()) > 1e-3  # the block does something
    m = create("gonn_tiny", board_size=9, in_planes=7, wide_blocks=(1,))
    x, _ = batch(m)
    logits = m(x).logits
    assert logits.shape == (4, 82) and bool(jnp.all(jnp.isfinite(logits)))

def test_gonn_chain_block_counts_and_placement():
    """docs/gonn.md section 7 as built: a chain-pooling block of P channels has ``18 C P + 3 C + 3 P`` parameters
    (an ordinary block's at P = C), sits at any non-global, non-wide index, and reads two valid stone planes."""
    from kifunet.models.gonn import GoNNChainBlock

    base = abstract("gonn_resnet5")
    same = abstract("gonn_resnet5", chain_blocks=(0, 3))
    assert models.count_params(same) == models.count_params(base)
    assert [type(b).__name__ for b in same.blocks][:4] == ["GoNNChainBlock", "GoNNBlock", "GoNNBlock", "GoNNChainBlock"]
    narrow = abstract("gonn_resnet5", chain_blocks=(2,), chain_channels=32)
    assert models.count_params(base) - models.count_params(narrow) == 664_704 - (18 * 192 * 32 + 3 * 192 + 3 * 32)
    assert isinstance(narrow.blocks[2], GoNNChainBlock)
    for bad in (dict(chain_blocks=(5,)), dict(chain_blocks=(2,), global_blocks=(2,)),
                dict(chain_blocks=(2,), wide_blocks=(2,))):
        with pytest.raises(ValueError, match="chain_blocks"):
            abstract("gonn_resnet5", **bad)
    with pytest.raises(ValueError, match="chain_stone_planes"):
        abstract("gonn_resnet5", chain_blocks=(1,), chain_stone_planes=(1, 26))


@pytest.mark.slow
def test_gonn_chain_block_carries_information_along_a_chain():
    """A change of the input at one end of a long chain reaches the other end through one chain block, 12 points
    away (two 3x3 convolutions reach 2); cut the chain in the middle and it no longer does."""
    m = create("gonn_tiny", board_size=9, in_planes=7, chain_blocks=(0,))
    m.eval()
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(1, 9, 9, 7)).astype(np.float32)
    x[..., 1:3] = 0
    x[0, 2, 0:9, 1] = 1  # a pla chain along row 2 ...
    x[0, 2:7, 8, 1] = 1  # ... and down column 8: 13 stones from (2, 0) to (6, 8)
    block = m.blocks[0]
    h = m.stem(jnp.asarray(x))

    def far_change(x, h):
        from kifunet.models.chain_pool import chain_labels

        lab = chain_labels(jnp.asarray(x[..., 1]), jnp.asarray(x[..., 2]))
        bumped = h.at[0, 2, 0].add(5.0)
        return float(jnp.abs(block(bumped, lab) - block(h, lab))[0, 6, 8].max())

    assert far_change(x, h) > 1e-3
    cut = x.copy()
    cut[0, 2, 4, 1] = 0
    assert far_change(cut, m.stem(jnp.asarray(cut))) == 0.0
    logits = m(batch(m)[0]).logits
    assert logits.shape == (4, 82) and bool(jnp.all(jnp.isfinite(logits)))


def test_chain_labels_inside_the_data_parallel_map():
    """Chain labelling runs inside ``shard_map`` (the data-parallel step maps the whole forward pass): its loop
    carry must vary over the mesh axis like the data (a constant flag failed there: the chain_1x32 row's first
    step)."""
    import jax
    from jax.sharding import PartitionSpec as P

    from kifunet.models.chain_pool import chain_labels
    from kifunet.train.parallel import AXIS

    mesh = jax.make_mesh((1,), (AXIS,))
    black = np.zeros((2, 5, 5), np.float32)
    black[:, 1, 0:4] = 1
    white = np.zeros((2, 5, 5), np.float32)
    mapped = jax.jit(jax.shard_map(lambda b, w: chain_labels(b, w), mesh=mesh, in_specs=(P(AXIS), P(AXIS)),
                                   out_specs=P(AXIS)))
    rows = jax.sharding.NamedSharding(mesh, P(AXIS))
    lab = np.asarray(mapped(jax.device_put(black, rows), jax.device_put(white, rows)))
    np.testing.assert_array_equal(lab, np.asarray(chain_labels(jnp.asarray(black), jnp.asarray(white))))
    assert (lab[:, 1, 0:4] == 5).all() and (lab[:, 0] == 25).all()


def test_cazenave_bn_affine_switch():
    n = models.count_params(abstract("cazenave_resnet10", bn_affine=True))
    assert n - 12_098_304 == 2 * 256 * 21  # stem BN + 2 per block


def test_batchnorm_running_stats_not_counted():
    m = abstract("agz_resnet20")
    stats = sum(int(np.prod(v.shape)) for v in jax.tree.leaves(nnx.state(m, nnx.BatchStat)))
    assert stats > 0
    assert models.count_params(m) == 22_744_676


def test_mao_size_matches_the_papers_2mb():
    n = models.count_params(abstract("mao"))
    assert n == 483_322 and 1.5e6 < 4 * n < 2.5e6


def test_resnet18_is_maos_baseline_at_maos_parameter_count():
    """MAO's ResNet-18 in the AlphaGo Zero framework (docs/architectures.md): a stem, 8 blocks of two 3x3 convs
    and AlphaGo Zero's policy head, on MAO's 17 planes; of the widths, 39 gives the count nearest MAO's."""
    from kifunet.models.resnet import AGZResNet

    mao, net = models.count_params(abstract("mao")), models.count_params(abstract("resnet18"))
    assert (mao, net) == (483_322, 488_790) and round(100 * (net - mao) / mao, 2) == 1.13
    near = {w: models.count_params(abstract("resnet18", filters=w)) for w in (38, 40)}
    assert near == {38: 477_496, 40: 500_372}
    assert abs(net - mao) < min(abs(n - mao) for n in near.values())  # wider or narrower only moves away
    assert models.count_params(abstract("resnet18", value_head=True)) == 581_761
    m = abstract("resnet18")
    assert isinstance(m, AGZResNet) and len(m.blocks) == 8 and m.in_planes == models.default_in_planes("mao") == 17
    assert m.stem.kernel.shape == (3, 3, 17, 39)  # He et al.'s first conv; 8 blocks: their 16; the head: their fc
    assert m.policy_dense.kernel.shape == (2 * 361, 362)
    head = sum(models.count_params(part) for part in (m.policy_conv, m.policy_bn, m.policy_dense))
    assert (head, net - head) == (261_810, 226_980)  # the policy head is 54% of the net
    assert (m.facts.has_pass, m.facts.resizable, m.facts.has_value) == (True, False, False)
    assert len(abstract("resnet18_tiny").blocks) == 8  # the tiny variant keeps the depth
    # equal parameters, 0.47 of MAO's forward work (docs/architectures.md)
    assert (models.count_macs(m), models.count_macs(abstract("mao"))) == (81_511_273, 173_915_360)


# ------------------------------------------------------------------------------------------ MACs / FLOPs

@pytest.mark.parametrize("name,gmacs", [("gonn_resnet5", 1.29), ("gonn_resnet12", 2.97),
                                        ("gonn_resnet12_global", 2.89), ("maddison12", 0.63)])
def test_macs_match_published_figures(name, gmacs):
    """GoNN's forward MACs (docs/gonn.md section 4.2) and Maddison's '630 million connections'."""
    m = abstract(name)
    assert abs(models.count_macs(m) / 1e9 - gmacs) < 0.006
    assert models.forward_flops(m) == 2 * models.count_macs(m)
    assert models.train_flops(m) == 3 * models.forward_flops(m)


# --------------------------------------------------------------------------------------------- registry

@pytest.mark.slow
def test_registry_names_and_default_planes():
    required = {"clark_storkey8", "maddison3", "maddison6", "maddison10", "maddison12", "alphago13_128",
                "alphago13_192", "alphago13_256", "cazenave_resnet10", "cazenave_resnet14", "agz_resnet20",
                "gonn_resnet5", "gonn_resnet12", "mao", "garb5", "garb10", "garb20", *TINY}
    assert required <= set(models.names())
    planes = {"maddison12": 36, "alphago13_192": 48, "cazenave_resnet10": 45, "agz_resnet20": 17,
              "gonn_resnet12": 26, "mao": 17, "garb10": 21, "clark_storkey8": 48, "darkforest12": 25, "qiqiao": 10}
    for name, c in planes.items():
        assert models.default_in_planes(name) == c
        assert abstract(name).in_planes == c
    boards = {name: models.default_board_size(name) for name in models.names()}
    assert {n for n, b in boards.items() if b != 19} == {"qiqiao", "qiqiao_tiny"} and boards["qiqiao"] == 9
    assert abstract("qiqiao").board_size == 9 and abstract("qiqiao", board_size=13).board_size == 13
    assert abstract("maddison_tiny").board_size == 19
    with pytest.raises(KeyError):
        models.create("no_such_net")


def test_every_family_has_a_tiny_net():
    """So that TINY (read from the registry) runs the call contract on every family."""
    assert {registry.spec(n).family for n in models.names()} == {registry.spec(n).family for n in TINY}


def test_create_overrides():
    m = abstract("gonn_tiny", board_size=9, in_planes=7, activation="relu")
    assert (m.board_size, m.in_planes) == (9, 7)
    assert m.blocks[0].act1.prelu is None
    g = abstract("garb_tiny", board_size=9)
    assert isinstance(g.blocks[0], PreActBlock) and isinstance(g.blocks[1], GARBBlock)
    assert isinstance(abstract("gonn_resnet12_global").blocks[5], GoNNGlobalBlock)


def test_garb_plain_is_the_same_net_with_plain_blocks_only():
    """``plain=True``: GARB's ablation (docs/architectures.md), every block a plain pre-activation block; the stem
    and the policy head as before. Each GARB block held 5,696 parameters more than a plain one."""
    g, p = abstract("garb5"), abstract("garb5", plain=True)
    assert [type(b) for b in g.blocks] == [PreActBlock, GARBBlock] * 2 + [PreActBlock]
    assert [type(b) for b in p.blocks] == [PreActBlock] * 5
    assert (models.count_params(g), models.count_params(p)) == (372_100, 360_708) and 372_100 - 360_708 == 2 * 5_696
    assert p.stem.kernel.shape == g.stem.kernel.shape and p.policy_dense.kernel.shape == g.policy_dense.kernel.shape


# ------------------------------------------------------------------------------- the tiny-model checks

@nnx.jit
def _call(model, x, rank=None, to_move=None):
    return model(x, rank=rank, to_move=to_move)


@nnx.jit
def _value_and_grad(model, x, y):
    def loss(model):
        logits = model(x).logits
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    return nnx.value_and_grad(loss)(model)


def _logits(out):
    return np.asarray(out.logits)


@pytest.mark.slow
@pytest.mark.parametrize("name", TINY)
def test_tiny_forward_19_and_9_and_bf16_close_to_f32(name):
    """19x19 forward in training mode; 9x9 forward in eval mode in float32 and in bfloat16 compute."""
    model = create(name, board_size=19)
    x, _ = batch(model)
    out = _call(model, x)
    assert isinstance(out, models.Outputs)
    assert (out.value is not None) == model.has_value == (name == "qiqiao_tiny")  # the value heads: below
    logits = _logits(out)
    assert logits.shape == (4, 19 * 19 + 1) and logits.dtype == np.float32
    assert np.isfinite(logits[:, :-1]).all()
    assert model.facts.has_pass == (name in WITH_PASS)  # the family's declaration: what the logits show
    if name in WITH_PASS:
        assert np.isfinite(logits[:, -1]).all() and (logits[:, -1] > -1e6).all()
    else:
        np.testing.assert_array_equal(logits[:, -1], models.NO_PASS_LOGIT)
    with pytest.raises(ValueError):
        model(jnp.zeros((4, 19, 19, model.in_planes + 1)))

    f32 = create(name, board_size=9, seed=3)
    bf16 = create(name, board_size=9, seed=3, dtype=jnp.bfloat16)
    f32.eval()
    bf16.eval()
    x9, _ = batch(f32)
    out_a, out_b = _call(f32, x9), _call(bf16, x9)
    a, b = _logits(out_a), _logits(out_b)
    if f32.has_value:
        va, vb = out_a[1], out_b[1]
        assert vb.dtype == jnp.float32 and float(jnp.abs(va - vb).max()) < 0.05
    assert a.shape == (4, 82) and b.dtype == np.float32 and np.isfinite(a[:, :-1]).all()
    scale = max(1.0, float(np.abs(a[:, :-1]).max()))
    np.testing.assert_allclose(b[:, :-1], a[:, :-1], atol=0.03 * scale, rtol=0.0)
    pa, pb = jax.nn.softmax(a, axis=-1), jax.nn.softmax(b, axis=-1)
    assert float(jnp.abs(pa - pb).sum(-1).max()) < 0.05
    assert {p.dtype for p in jax.tree.leaves(nnx.state(bf16, nnx.Param))} == {jnp.dtype(jnp.float32)}


@pytest.mark.parametrize("name", TINY)
def test_tiny_gradients_finite_and_sgd_step_lowers_loss(name):
    """Training mode (BatchNorm batch statistics, MAO masks). The RNG state is restored before the second
    evaluation so that MAO draws the same masks for both losses."""
    model = create(name, board_size=9)
    model.train()
    x, y = batch(model)
    rng_state = nnx.clone(nnx.state(model, nnx.RngState))
    loss0, grads = _value_and_grad(model, x, y)
    leaves = jax.tree.leaves(grads)
    assert all(np.isfinite(np.asarray(g)).all() for g in leaves)
    assert sum(float(jnp.abs(g).sum()) for g in leaves) > 0
    nnx.update(model, rng_state)
    opt = nnx.Optimizer(model, optax.sgd(0.05), wrt=nnx.Param)
    opt.update(model, grads)
    loss1, _ = _value_and_grad(model, x, y)
    assert float(loss1) < float(loss0), (float(loss0), float(loss1))


# ------------------------------------------------------------------------------------- contract details

def test_maddison_output_plane_follows_colour_to_move():
    m = create("maddison_tiny", board_size=9)
    x, _ = batch(m)
    black = _logits(_call(m, x, to_move=jnp.array([1, 1, 1, 1])))
    white = _logits(_call(m, x, to_move=jnp.array([2, 2, 2, 2])))
    mixed = _logits(_call(m, x, to_move=jnp.array([1, 2, 1, 2])))
    np.testing.assert_array_equal(_logits(_call(m, x)), black)  # default is black
    assert np.abs(black - white).max() > 1e-4
    np.testing.assert_array_equal(mixed[::2], black[::2])
    np.testing.assert_array_equal(mixed[1::2], white[1::2])


def test_rank_embedding_conditions_the_output():
    m = create("gonn_tiny", board_size=9, rank_embedding=True)
    m.eval()
    x, _ = batch(m)
    a = _logits(_call(m, x, jnp.array([0, 8, -128, -40])))
    b = _logits(_call(m, x, jnp.array([8, 0, -128, -30])))
    assert np.abs(a[0] - b[0]).max() > 1e-5 and np.abs(a[1] - b[1]).max() > 1e-5
    np.testing.assert_array_equal(a[2:], b[2:])  # unknown = unknown; 40k is clipped to 30k
    np.testing.assert_array_equal(_logits(_call(m, x)), _logits(_call(m, x, jnp.full((4,), -128))))
    plain = create("gonn_tiny", board_size=9)
    plain.eval()
    np.testing.assert_array_equal(_logits(_call(plain, x, jnp.array([0, 8, 3, 1]))), _logits(_call(plain, x)))


def test_mao_model_train_masks_and_deterministic_eval():
    m = create("mao_tiny", board_size=9)
    x, _ = batch(m)
    m.eval()
    e1, e2 = _logits(_call(m, x)), _logits(_call(m, x))
    np.testing.assert_array_equal(e1, e2)
    m.train()
    t1, t2 = _logits(_call(m, x)), _logits(_call(m, x))
    assert np.abs(t1 - e1).max() > 1e-6 and np.abs(t1 - t2).max() > 1e-6


def _names(tree) -> dict[str, object]:
    """Leaves of a pure-dict state by their path, ``"value/conv/kernel"``."""
    return {"/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path): leaf
            for path, leaf in jax.tree_util.tree_leaves_with_path(nnx.to_pure_dict(tree))}


@nnx.jit
def _value_loss_and_grad(model, x):
    def loss(model):
        out = model(x)
        logits, value = out.logits, out.value
        return jnp.mean((value - 1.0) ** 2), (logits, value)

    return nnx.value_and_grad(loss, has_aux=True)(model)


@pytest.mark.slow
@pytest.mark.parametrize("name,kw", TWO_HEADED, ids=[n for n, _ in TWO_HEADED])
def test_value_heads_follow_the_contract(name, kw):
    """A two-headed net returns ``(logits [B, N*N+1], value [B])``, float32, the value a tanh in [-1, 1] that
    depends on the position. A value loss trains the value head and the shared trunk, never the policy head.
    The option only adds the value head's parameters."""
    m = create(name, board_size=9, **kw)
    assert m.has_value
    x, _ = batch(m, b=6)
    (_, (logits, value)), grads = _value_loss_and_grad(m, x)
    assert logits.shape == (6, 82) and value.shape == (6,)
    assert logits.dtype == value.dtype == jnp.float32
    v = np.asarray(value)
    assert (np.abs(v) <= 1).all() and np.ptp(v) > 0
    g = {k: float(jnp.abs(a).sum()) for k, a in _names(grads).items()}
    assert all(np.isfinite(list(g.values())))
    value_keys = [k for k in g if k.startswith("value")]
    policy_keys = [k for k in g if k.startswith(("policy", "head/"))]
    trunk_keys = [k for k in g if k.startswith(("stem", "blocks", "body"))]
    assert value_keys and policy_keys and trunk_keys
    assert any(g[k] > 0 for k in value_keys) and any(g[k] > 0 for k in trunk_keys)
    assert all(g[k] == 0 for k in policy_keys)
    if kw:
        plain = abstract(name, board_size=9, **{k: v for k, v in kw.items() if k != "value_head"})
        assert not plain.has_value
        with_head, without = set(_names(nnx.state(m, nnx.Param))), set(_names(nnx.state(plain, nnx.Param)))
        assert without < with_head and all(k.startswith("value") for k in with_head - without)


# ---------------------------------------------------------------------------------- lr multipliers

def test_lr_multipliers_structure_and_values():
    m = create("gonn_tiny", board_size=9)
    mults = models.lr_multipliers(m)
    params = nnx.state(m, nnx.Param)
    assert jax.tree.structure(jax.tree.map(lambda v: 0, params, is_leaf=lambda v: isinstance(v, nnx.Variable))) \
        == jax.tree.structure(jax.tree.map(lambda a: 0, mults))
    k = np.asarray(mults["blocks"][1]["conv1"]["plain"]["kernel"])
    assert k.shape == (3, 3, 1, 1) and k[1, 1, 0, 0] == 1.5 and k.sum() == 8 + 1.5
    assert float(mults["head"]["p2"]["kernel"]) == 0.25
    assert float(mults["head"]["p_bn"]["scale"]) == 0.25 and float(mults["head"]["p_bn"]["bias"]) == 0.25
    assert float(mults["stem"]["kernel"]) == 1.0 and float(mults["head"]["pool_bias"]["dense"]["kernel"]) == 1.0
    off = models.lr_multipliers(create("gonn_tiny", board_size=9, center_emphasis=False))
    assert float(off["blocks"][1]["conv2"]["kernel"]) == 1.0


def test_scale_by_lr_multipliers_in_nnx_optimizer():
    """One SGD step through ``nnx.Optimizer`` with the multipliers moves each parameter by multiplier x
    the plain SGD step."""
    deltas = []
    for use_mults in (False, True):
        m = create("gonn_tiny", board_size=9)
        m.train()
        before = jax.tree.map(np.asarray, nnx.state(m, nnx.Param))
        x, y = batch(m)
        _, grads = _value_and_grad(m, x, y)
        tx = optax.sgd(0.1)
        if use_mults:
            tx = optax.chain(models.scale_by_lr_multipliers(models.lr_multipliers(m)), tx)
        nnx.Optimizer(m, tx, wrt=nnx.Param).update(m, grads)
        deltas.append(jax.tree.map(lambda a, b: np.asarray(a) - b, nnx.state(m, nnx.Param), before))
    plain, scaled = deltas
    k_s, k_p = scaled["blocks"][1]["conv2"]["kernel"], plain["blocks"][1]["conv2"]["kernel"]
    assert np.abs(k_p[1, 1]).max() > 0
    np.testing.assert_allclose(k_s[1, 1], 1.5 * k_p[1, 1], rtol=1e-3, atol=1e-9)
    np.testing.assert_allclose(k_s[0, 0], k_p[0, 0], rtol=1e-3, atol=1e-9)
    p2_s, p2_p = scaled["head"]["p2"]["kernel"], plain["head"]["p2"]["kernel"]
    assert np.abs(p2_p).max() > 0
    np.testing.assert_allclose(p2_s, 0.25 * p2_p, rtol=1e-3, atol=1e-9)
