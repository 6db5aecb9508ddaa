"""An exported net (``kifunet export``) as a policy run by onnxruntime: no JAX, no Flax, no checkpoint.

:class:`OnnxPolicy` builds planes with the JAX policy's own code and replaces only the forward pass. The file's
inputs, outputs and metadata (keys prefixed ``kifunet.``): docs/playing.md (The ONNX file)."""

from __future__ import annotations

import json
import os

import numpy as np

from kifunet.data_prep.errors import InvalidValue, UserError
from kifunet.data_prep.planes import features as features_mod
from kifunet.models.forward import NetFacts, Outputs
from kifunet.play.policy import HISTORY_WINDOW, Policy, profile_value, rank_value

#: the version of the file format above
FORMAT_VERSION = 1
#: every metadata key starts with this
PREFIX = "kifunet."
INPUTS = ("planes", "rank", "to_move", "profile")
#: the name and version of the profile vector's encoding (:mod:`kifunet.data_prep.profiles`), in the metadata
PROFILE_ENCODING = "kifunet.profiles/1"
#: the graph's outputs in this order, ``logits`` always, each head's only when the net has it
OUTPUTS = ("logits", "value", "ownership", "score")
#: the metadata a player needs (the rest describes the net)
REQUIRED = ("format_version", "board_size", "feature_set", "plane_names", "has_pass")


def _runtime():
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError("onnxruntime is not installed: pip install 'kifunet[export]' (or onnxruntime)") from e
    return onnxruntime


class NotAnExport(UserError, ValueError):
    """A file that is not an ONNX model written by ``kifunet export`` (or by a newer kifunet)."""


class OnnxNet:
    """An exported file opened with onnxruntime (CPU): its metadata (``kifunet.`` prefix removed), inputs and
    :meth:`run`. ``source``: a path or the file's bytes."""

    def __init__(self, source: str | os.PathLike | bytes):
        ort = _runtime()
        if not isinstance(source, (bytes, bytearray)):
            source = os.fspath(source)
            if not os.path.isfile(source):
                raise FileNotFoundError(f"{source}: no such file")
        try:
            self.session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 -- onnxruntime raises its own classes for unreadable files
            raise NotAnExport(f"{source if isinstance(source, str) else 'the model'}: not an ONNX model "
                             f"onnxruntime can load ({str(e).splitlines()[0][:200]})") from e
        meta = self.session.get_modelmeta().custom_metadata_map
        self.metadata = {k[len(PREFIX):]: v for k, v in meta.items() if k.startswith(PREFIX)}
        name = source if isinstance(source, str) else "the model"
        if "format_version" not in self.metadata:
            raise NotAnExport(f"{name}: not a kifunet export (no {PREFIX}format_version in its metadata)")
        missing = [k for k in REQUIRED if k not in self.metadata]
        if missing:
            raise NotAnExport(f"{name}: its metadata lacks {', '.join(PREFIX + k for k in missing)}")
        if int(self.metadata["format_version"]) > FORMAT_VERSION:
            raise NotAnExport(f"{name}: format version {self.metadata['format_version']} is newer than this "
                             f"kifunet reads ({FORMAT_VERSION})")
        self.inputs = tuple(i.name for i in self.session.get_inputs())
        self.outputs = tuple(o.name for o in self.session.get_outputs())
        if "planes" not in self.inputs or self.outputs[0] != "logits":
            raise NotAnExport(f"{name}: inputs {self.inputs} / outputs {self.outputs} are not a kifunet export's")
        self.board_size = int(self.metadata["board_size"])
        self.feature_set = self.metadata["feature_set"]
        if set(self.outputs) - set(OUTPUTS):
            raise NotAnExport(f"{name}: outputs {self.outputs} are not a kifunet export's ({', '.join(OUTPUTS)})")
        self.has_value = "value" in self.outputs
        self.has_ownership = "ownership" in self.outputs
        self.has_score = "score" in self.outputs

    @property
    def reads_profile(self) -> bool:
        """Whether the file has a ``profile`` input."""
        return "profile" in self.inputs

    def run(self, planes: np.ndarray, rank: np.ndarray, to_move: np.ndarray,
            profile: np.ndarray | None = None) -> Outputs:
        """:class:`~kifunet.models.forward.Outputs` of a batch; ``rank``, ``to_move`` (int32 ``[B]``) and
        ``profile`` (float32 ``[B, 46]``; None: all unknown) are fed only where the file has those inputs."""
        feed = {"planes": np.asarray(planes, dtype=np.float32),
                "rank": np.asarray(rank, dtype=np.int32), "to_move": np.asarray(to_move, dtype=np.int32)}
        if self.reads_profile:
            from kifunet.data_prep import profiles

            b = feed["planes"].shape[0]
            feed["profile"] = (np.tile(profiles.encode(profiles.UNKNOWN_PROFILE), (b, 1)) if profile is None
                               else np.asarray(profile, dtype=np.float32).reshape(b, profiles.SIZE))
        out = self.session.run(None, {k: feed[k] for k in self.inputs})
        return Outputs(**dict(zip(self.outputs, out)))


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The ``kifunet.`` metadata of an exported file, prefix removed (strings; the keys: docs/playing.md)."""
    return dict(OnnxNet(path).metadata)


class OnnxPolicy(Policy):
    """:class:`~kifunet.play.policy.Policy`'s interface over an exported file: the file as ``net`` and its
    metadata as ``facts``; the file's feature set, whose plane names must equal the ones this kifunet builds."""

    def __init__(self, net: OnnxNet, rank=None, *, window: int = HISTORY_WINDOW, description: str = "",
                 profile=None):
        # Policy.__init__ builds a JAX forward pass: not called; the attributes its position code reads are set
        self.onnx = net
        self.net = net.run
        self.fs = features_mod.get(net.feature_set)
        want = json.loads(net.metadata.get("plane_names", "[]"))
        if want != self.fs.plane_names():
            raise InvalidValue(f"the file's planes ({len(want)}) differ from this kifunet's {self.fs.name} planes "
                             f"({self.fs.num_planes}): export the net again with this version")
        if window < 8:
            raise ValueError("window must be at least 8 moves (the deepest feature history)")
        self.board_size = net.board_size
        self.rank = rank_value(rank)
        self.profile = profile_value(profile)
        self.window = window
        meta = net.metadata
        step = f" step {meta['step']}" if meta.get("step") else ""
        self.description = (description
                            or f"{meta.get('model', 'net')} from {meta.get('run') or 'ONNX'}{step} (ONNX)")
        self.facts = NetFacts(board_size=self.board_size, in_planes=self.fs.num_planes, has_value=net.has_value,
                              has_pass=meta.get("has_pass") == "true", reads_rank="rank" in net.inputs,
                              reads_profile=net.reads_profile, resizable=False,
                              has_ownership=net.has_ownership, has_score=net.has_score)
        self.trained_size = self.board_size

    def size_problem(self, n: int) -> str | None:
        """None for the file's own board size; any other is refused (fixed spatial dimensions)."""
        from kifunet.play.policy import size_range_problem

        problem = size_range_problem(n)
        if problem or int(n) == self.board_size:
            return problem
        return (f"{self.description} plays {self.board_size}x{self.board_size} only (an ONNX file has fixed "
                f"board dimensions); for {n}x{n}, play the training run with --checkpoint")


def load_onnx_policy(path: str | os.PathLike, rank=None, *, feature_set: str | None = None,
                     board_size: int | None = None, profile=None) -> OnnxPolicy:
    """The exported net at ``path`` as a policy; ``feature_set`` / ``board_size``, when given, must be the
    file's (``ValueError`` otherwise: the file decides both); ``profile``: the game profile (default: the
    file's recorded ``profile``, else all unknown)."""
    net = OnnxNet(path)
    if feature_set is not None and features_mod.get(feature_set).name != net.feature_set:
        raise InvalidValue(f"{path} was exported with the {net.feature_set} features, not {feature_set}")
    if board_size is not None and int(board_size) != net.board_size:
        raise InvalidValue(f"{path} plays {net.board_size}x{net.board_size}, not {board_size}x{board_size}")
    if profile is None:
        profile = net.metadata.get("profile")
    return OnnxPolicy(net, rank, profile=profile)
