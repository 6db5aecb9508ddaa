"""The model a run's config describes, built in one place for training and eval (the ``model`` section's keys:
docs/training.md, Options). Nothing here imports the training loop."""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import ml_collections
from flax import nnx

from kifunet import models
from kifunet.train.configs import ConfigError

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def model_section(raw: Mapping | None) -> ml_collections.ConfigDict:
    """The ``model`` section of a saved config (a dict, e.g. from ``config.json``), missing keys filled with the
    defaults; JSON lists in ``kwargs`` become tuples again."""
    from kifunet.train.configs import default

    model = default.get_config().model
    raw = dict(raw or {})
    for key in ("name", "dtype", "rank_embedding", "profile_embedding"):
        if raw.get(key) is not None:
            model[key] = raw[key]
    if raw.get("kwargs"):
        model.kwargs.update({k: (tuple(v) if isinstance(v, list) else v) for k, v in raw["kwargs"].items()})
    return model


def build_model(model, *, seed: int, board_size: int, in_planes: int) -> nnx.Module:
    """The net of a config's ``model`` section (``name``, ``dtype``, ``rank_embedding``, ``profile_embedding``,
    ``kwargs``), initialised from ``nnx.Rngs(seed)``."""
    if model.dtype not in DTYPES:
        raise ConfigError(f"model.dtype must be one of {tuple(DTYPES)}, got {model.dtype!r}")
    kwargs = {}
    if model.dtype != "float32":
        kwargs["dtype"] = DTYPES[model.dtype]
    if model.rank_embedding:
        kwargs["rank_embedding"] = True
    if model.get("profile_embedding"):
        kwargs["profile_embedding"] = int(model.profile_embedding)
    overrides = model.get("kwargs")
    if overrides is not None:
        kwargs.update(overrides.to_dict() if hasattr(overrides, "to_dict") else dict(overrides))
    return models.create(model.name, board_size=board_size, in_planes=in_planes, rngs=nnx.Rngs(seed), **kwargs)


__all__ = ["DTYPES", "build_model", "model_section"]
