"""Export a trained net to one ONNX file that says what it is (``kifunet export RUN --out net.onnx``).

jax2onnx traces the net's forward pass (float32, eval mode) with a dynamic batch; inputs the jaxpr does not read
are dropped (:func:`used_inputs`), a value, ownership and score output is kept for each of those heads the net
has (:func:`output_names`), and the file is written only if onnxruntime and JAX agree on
:data:`CHECK_POSITIONS` random positions within :data:`CHECK_TOLERANCE` (``ValueError`` otherwise). The format:
docs/playing.md (The ONNX file)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time

import numpy as np

from kifunet.data_prep.errors import InvalidValue
from kifunet.data_prep.planes import features as features_mod
from kifunet.data_prep.fileio import atomic
from kifunet.play import onnx_policy

#: random positions the exported file is checked on against JAX before it is written
CHECK_POSITIONS = 8
#: the largest ``|logit difference|`` accepted at that check, relative to the largest ``|logit|`` (at least 1): float32
#: rounding in another operation order; every registered net measured 1e-8 to 1.1e-5 of its scale
CHECK_TOLERANCE = 1e-4
RANK_SCALE = ("int32 rank of the player to move (kifunet.data_prep.ranks): 30k..1k = -30..-1, 1d..9d = 0..8, "
              "1p..9p = 9..17, unknown = -128")
POLICY_INDEX = ("logits[b, row*N + col], row 0 at the top, col 0 at the left (GTP A19 = 0 at 19x19; "
                "kifunet.data_prep.coords); index N*N = pass; softmax over the N*N+1 logits gives probabilities")
VALUE_MEANING = "value[b] in [-1, 1]: expected result for the side to move (+1 a win, -1 a loss)"
OWNERSHIP_MEANING = ("ownership[b, row, col] in [-1, 1]: the point's expected owner at the game's end, +1 the side to "
                     "move, -1 the other (rows and columns as the planes')")
SCORE_MEANING = ("score[b]: the expected final margin in points for the side to move (positive: it wins), as the "
                 "training games' results count it, with their komi")


@dataclasses.dataclass
class ExportResult:
    """What :func:`export_model` wrote: the file, its size, inputs, outputs, metadata and the check."""

    path: str
    bytes: int
    seconds: float  # loading excluded: conversion, check and writing
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    metadata: dict[str, str]
    max_abs_logit_diff: float


def forward_function(model):
    """``fn(planes, rank, to_move, profile) -> tuple`` of the net's outputs, the graph's, in the order of
    :data:`kifunet.play.onnx_policy.OUTPUTS` (``logits`` first; each of ``value``, ``ownership``, ``score`` only when
    the net has that head: :func:`output_names`): the net in eval mode as :func:`kifunet.models.forward.forward` of
    its inputs (parameters and BatchNorm statistics closed over; ``profile`` None: all unknown)."""
    from flax import nnx

    from kifunet.models.forward import forward

    model.eval()
    graphdef, state = nnx.split(model)
    names = output_names(model.facts)

    def fn(planes, rank, to_move, profile=None):
        out = forward(graphdef, state, planes, rank, to_move, profile)
        return tuple(getattr(out, k) for k in names)

    return fn


def output_names(facts) -> tuple[str, ...]:
    """The graph outputs of a net with these :class:`~kifunet.models.forward.NetFacts`: ``logits``, then
    ``value``, ``ownership`` and ``score`` for the heads it has."""
    has = {"logits": True, "value": facts.has_value, "ownership": facts.has_ownership, "score": facts.has_score}
    return tuple(k for k in onnx_policy.OUTPUTS if has[k])


def _specs(batch, board_size: int, in_planes: int) -> dict:
    import jax
    import jax.numpy as jnp

    from kifunet.data_prep import profiles

    return {"planes": jax.ShapeDtypeStruct((batch, board_size, board_size, in_planes), jnp.float32),
            "rank": jax.ShapeDtypeStruct((batch,), jnp.int32), "to_move": jax.ShapeDtypeStruct((batch,), jnp.int32),
            "profile": jax.ShapeDtypeStruct((batch, profiles.SIZE), jnp.float32)}


def used_inputs(fn, board_size: int, in_planes: int) -> tuple[str, ...]:
    """The names of ``fn``'s inputs (``planes``, ``rank``, ``to_move``, ``profile``) that an equation of its
    jaxpr reads; ``planes`` always counts, and an input a nested jaxpr receives counts as read."""
    import jax

    jaxpr = jax.make_jaxpr(fn)(*_specs(1, board_size, in_planes).values()).jaxpr
    read = {id(v) for eqn in jaxpr.eqns for v in eqn.invars} | {id(v) for v in jaxpr.outvars}
    return tuple(name for name, var in zip(onnx_policy.INPUTS, jaxpr.invars) if name == "planes" or id(var) in read)


@contextlib.contextmanager
def _converting():
    """XLA optimisations off and onnx_ir's shape-constant warnings silenced; both restored after."""
    import logging

    import jax

    old = jax.config.read("jax_disable_most_optimizations")
    log = logging.getLogger("onnx_ir")
    level = log.level
    jax.config.update("jax_disable_most_optimizations", True)
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", old)
        log.setLevel(level)


def _converter():
    try:
        from jax2onnx import to_onnx
        import onnx
    except ImportError as e:
        raise ImportError(f"exporting needs jax2onnx and onnx: pip install 'kifunet[export]' ({e})") from e
    return to_onnx, onnx


#: the profiles of the check positions (cycled): all unknown, and three that differ in every field
CHECK_PROFILES = ("", "rank=7d,opponent_rank=5d,year=2005,source=kgs,time=fast,komi=6.5",
                  "rank=3k,opponent_rank=1d,date=2018-03-01,source=fox,time=blitz,handicap=2,komi=0.5",
                  "rank=9p,source=gogod,time=slow")


def check_positions(board_size: int, in_planes: int, n: int = CHECK_POSITIONS, seed: int = 0):
    """``(planes, rank, to_move, profile)`` of ``n`` random positions: 0/1 planes, ranks 9d, 1d, unknown, 3k...,
    both colours, the profiles of :data:`CHECK_PROFILES` (float32 ``[n, 46]``)."""
    from kifunet.data_prep import profiles

    rng = np.random.default_rng(seed)
    planes = rng.integers(0, 2, (n, board_size, board_size, in_planes)).astype(np.float32)
    rank = np.resize(np.array([8, 0, -128, -3], np.int32), n)
    to_move = np.resize(np.array([1, 2], np.int32), n)
    profile = np.stack([profiles.encode(profiles.parse(CHECK_PROFILES[i % len(CHECK_PROFILES)])) for i in range(n)])
    return planes, rank, to_move, profile


def profile_metadata(model, profile: str | None) -> dict:
    """The profile keys of an export's metadata: ``profile_input`` and ``profile_encoding`` always; with
    ``profile`` (:func:`kifunet.data_prep.profiles.parse`'s text), ``profile`` and ``profile_vector``. ``ValueError``
    naming it for a net without a profile input or text that is no profile."""
    from kifunet.data_prep import profiles

    reads = model.facts.reads_profile
    meta = {"profile_input": reads, "profile_encoding": onnx_policy.PROFILE_ENCODING}
    if profile is None:
        return meta
    fields = profiles.parse_fields(profile)
    if not reads:
        raise InvalidValue(f"--profile {profile}: this net has no profile input (trained with "
                         f"model.profile_embedding 0), so a profile would change nothing")
    from kifunet.play.policy import profile_text

    meta["profile"] = profile_text(fields)
    meta["profile_vector"] = [round(float(v), 7) for v in profiles.encode(profiles.Profile(**fields))]
    return meta


def export_model(model, feature_set: str, out: str | os.PathLike, *, info: dict | None = None,
                 profile: str | None = None) -> ExportResult:
    """Write ``model`` (a :class:`kifunet.models.PolicyNet`; its feature set named) to ``out`` as ONNX. ``info``:
    further metadata (strings, or JSON-able values); ``profile``: the default profile recorded
    (:func:`profile_metadata`, checked before anything is converted)."""
    from kifunet import __version__

    profile_meta = profile_metadata(model, profile)
    to_onnx, onnx = _converter()
    fs = features_mod.get(feature_set)
    n, c = int(model.board_size), int(model.in_planes)
    if c != fs.num_planes:
        raise InvalidValue(f"the model wants {c} planes; feature set {fs.name} has {fs.num_planes}")
    t0 = time.perf_counter()
    fn = forward_function(model)
    names = used_inputs(fn, n, c)

    def exported(*args):
        given = dict(zip(names, args))
        out = fn(given["planes"], given.get("rank"), given.get("to_move"), given.get("profile"))
        return out[0] if len(out) == 1 else out

    out_names = output_names(model.facts)
    specs = _specs("B", n, c)
    with _converting():
        proto = to_onnx(exported, [specs[k] for k in names], model_name=f"kifunet_{type(model).__name__}",
                        input_names=list(names), output_names=list(out_names))
    # jax2onnx annotates intermediate values with shapes, some in the wrong layout (NHWC where its convolutions
    # work in NCHW), which onnxruntime warns about at every load; they are optional, onnxruntime infers its own
    del proto.graph.value_info[:]

    meta = _metadata(model, fs, names, out_names)
    meta.update(profile_meta)
    meta.update(info or {})
    meta = {k: _text(v) for k, v in meta.items()}
    onnx.helper.set_model_props(proto, {onnx_policy.PREFIX + k: v for k, v in meta.items()})
    check = _check(proto, fn, out_names, n, c)
    diff = check["max_abs_logit_diff"]
    meta["export_check"] = json.dumps(check)
    onnx.helper.set_model_props(proto, {onnx_policy.PREFIX + k: v for k, v in meta.items()})
    proto.doc_string = (f"kifunet {__version__}: {meta['model']}, {n}x{n}, {fs.name} features; inputs "
                        f"{', '.join(names)}; outputs {', '.join(out_names)} (metadata: kifunet.*)")
    out = os.fspath(out)
    with atomic.atomic_path(out) as tmp:
        onnx.save(proto, tmp)
    return ExportResult(out, os.path.getsize(out), time.perf_counter() - t0, names, out_names, meta, diff)


def _check(proto, fn, out_names, n: int, c: int) -> dict:
    """The same positions (:func:`check_positions`) through JAX (``fn``, all four inputs) and onnxruntime
    (``proto``'s inputs): ``export_check``'s dict (the largest logit or value difference against the largest
    |logit|; the ownership and score outputs' each against its own largest |value|, at least 1); ``ValueError``
    when a difference is beyond :data:`CHECK_TOLERANCE` times its scale."""
    import jax

    from kifunet.models import NO_PASS_LOGIT

    planes, rank, to_move, profile = check_positions(n, c)
    ref = dict(zip(out_names, (np.asarray(r, np.float32) for r in jax.jit(fn)(planes, rank, to_move, profile))))
    got = onnx_policy.OnnxNet(proto.SerializeToString()).run(planes, rank, to_move, profile)._asdict()
    diff = max(float(np.abs(got[k].astype(np.float64) - ref[k]).max()) for k in out_names if k in ("logits", "value"))
    scale = max(1.0, float(np.abs(ref["logits"][ref["logits"] > NO_PASS_LOGIT / 2]).max(initial=0.0)))
    if not diff <= CHECK_TOLERANCE * scale:
        raise ValueError(f"onnxruntime and JAX differ by {diff:.3g} on random positions, more than "
                         f"{CHECK_TOLERANCE:g} x the largest |logit| ({scale:.3g})")
    check = {"positions": CHECK_POSITIONS, "max_abs_logit_diff": diff, "max_abs_logit": scale}
    for k in (k for k in ("ownership", "score") if k in out_names):  # ownership in [-1, 1], score in points
        d, head_scale = float(np.abs(got[k].astype(np.float64) - ref[k]).max()), max(1.0, float(np.abs(ref[k]).max()))
        if not d <= CHECK_TOLERANCE * head_scale:
            raise ValueError(f"onnxruntime and JAX differ by {d:.3g} in the {k} output on random positions, more "
                             f"than {CHECK_TOLERANCE:g} x its largest |value| ({head_scale:.3g})")
        check[f"max_abs_{k}_diff"] = d
    return check


def _metadata(model, fs, names, out_names) -> dict:
    """The file's own metadata (before ``profile`` and ``info``): format, model, features, inputs and outputs."""
    from kifunet import __version__

    meta = {
        "format_version": onnx_policy.FORMAT_VERSION, "version": __version__,
        "model": type(model).__name__, "board_size": int(model.board_size),
        "feature_set": fs.name, "feature_set_version": fs.version, "plane_names": fs.plane_names(),
        "features": [[f.name, f.planes, f.constant, f.column if f.constant else "", f.meaning]
                     for f in fs.features],
        "inputs": list(names), "rank_input": _rank_input(model, fs), "rank_scale": RANK_SCALE,
        "to_move": "1 = black, 2 = white", "policy_index": POLICY_INDEX,
        "has_pass": model.facts.has_pass, "value_head": "value" in out_names,
    }
    if "value" in out_names:
        meta["value"] = VALUE_MEANING
    meta["ownership_head"], meta["score_head"] = "ownership" in out_names, "score" in out_names
    if "ownership" in out_names:
        meta["ownership"] = OWNERSHIP_MEANING
    if "score" in out_names:
        meta["score"] = SCORE_MEANING
    return meta


def _rank_input(model, fs) -> str:
    planes = any(f.constant and f.column == "player_rank" for f in fs.features)
    emb = model.facts.reads_rank
    return {(True, True): "planes+embedding", (True, False): "planes", (False, True): "embedding"}.get(
        (planes, emb), "none")


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return json.dumps(v, sort_keys=True)


def manifest_summary(manifest: dict) -> dict:
    """What a dataset manifest says about the data a net learnt from: its fingerprint, inputs (path, sha256,
    records), filters, preset and options, split rule, splits (games, positions) and counts (seen, used)."""
    return {
        "fingerprint": manifest.get("fingerprint"),
        "features": (manifest.get("features") or {}).get("name"),
        "board_size": manifest.get("board_size"),
        "preset": manifest.get("preset"), "options": manifest.get("options"), "filters": manifest.get("filters"),
        "split_rule": manifest.get("split_rule"),
        "inputs": [{k: i.get(k) for k in ("path", "sha256", "records")} for i in manifest.get("inputs", [])],
        "splits": {name: {k: s.get(k) for k in ("games", "positions")}
                   for name, s in (manifest.get("splits") or {}).items()},
        "counts": {k: (manifest.get("counts") or {}).get(k) for k in ("seen", "used")},
    }


def run_metadata(net, raw_config: dict) -> dict:
    """The metadata of a run's net (:class:`kifunet.train.nets.TrainedNet` and its ``config.json``): model,
    config, trained dtype, run, step, and the training data (``config.dataset``'s manifest when it is there)."""
    from kifunet.data_prep.datasets.manifest import MANIFEST

    dataset = raw_config.get("dataset") or net.info.get("train_dataset")
    summary = None
    if dataset and os.path.isfile(os.path.join(dataset, MANIFEST)):  # relative to the current directory, as
        with open(os.path.join(dataset, MANIFEST), encoding="utf-8") as f:  # load_net reads it
            summary = manifest_summary(json.load(f))
    model_cfg = raw_config.get("model") or {}
    return {
        "model": net.info["model"], "model_config": model_cfg,
        "trained_dtype": model_cfg.get("dtype", "float32"),
        "run": net.info["name"], "step": net.info.get("step") if net.info.get("step") is not None else "",
        "training_data": {"dataset": dataset, "train_split": raw_config.get("train_split"),
                          "positions_trained": net.info.get("positions"), "manifest": summary},
    }


def export_run(path: str | os.PathLike, out: str | os.PathLike, *, step: int | None = None,
               feature_set: str | None = None, board_size: int | None = None,
               profile: str | None = None) -> ExportResult:
    """Export the net of a training run (its newest checkpoint, or ``step``) to ``out``; ``feature_set`` /
    ``board_size`` only for a run that records neither; ``profile``: as :func:`export_model`."""
    from kifunet.train.nets import load_net, read_config

    net = load_net(os.fspath(path), step=step, feature_set=feature_set, board_size=board_size, dtype="float32")
    raw = read_config(net.info["workdir"]).to_dict()
    return export_model(net.model, net.feature_set, out, info=run_metadata(net, raw), profile=profile)
