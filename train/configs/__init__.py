"""Training configs: one ml_collections file per reproduced table row (docs/training.md, Configs).
:func:`load` reads ``path`` or ``path:arg`` and applies ``--config.key=value`` overrides with the fields' types."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os

import ml_collections

from kifunet.data_prep.errors import InvalidValue, UnknownName


class ConfigError(InvalidValue):
    """A config that cannot be used: a file without ``get_config()``, an override that does not parse or does not
    fit its field's type, a value a training module refuses (the message names the key). Unknown keys are
    :class:`~kifunet.data_prep.errors.UnknownName`."""


def load_file(spec: str) -> ml_collections.ConfigDict:
    """``get_config()`` of a Python config file; ``file.py:arg`` passes ``arg`` to ``get_config(arg)``."""
    path, arg = spec, None
    if ":" in spec and not os.path.exists(spec):
        path, arg = spec.split(":", 1)
    if not os.path.exists(path):
        raise FileNotFoundError(f"config file not found: {path}")
    name = "kifunet_config_" + os.path.splitext(os.path.basename(path))[0]
    mod_spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    if not hasattr(mod, "get_config"):
        raise ConfigError(f"{path}: no get_config()")
    takes_arg = bool(inspect.signature(mod.get_config).parameters)
    cfg = mod.get_config(arg) if takes_arg else mod.get_config()
    if arg is not None and not takes_arg:
        raise ConfigError(f"{path}: get_config() takes no argument, got {arg!r}")
    return cfg


def _convert(text: str, current):
    if isinstance(current, bool):
        low = text.strip().lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"not a boolean: {text!r}")
    if isinstance(current, int):
        return int(float(text)) if "e" in text.lower() and float(text).is_integer() else int(text)
    if isinstance(current, float):
        return float(text)
    if isinstance(current, str):
        return text
    if isinstance(current, (tuple, list)):
        v = ast.literal_eval(text)
        if not isinstance(v, (tuple, list)):
            v = (v,)
        return type(current)(v)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def override(cfg: ml_collections.ConfigDict, key: str, text: str) -> None:
    """Set ``cfg.<key>`` (dotted) from a command-line string, converted to the field's type
    (:class:`ConfigError`: it does not convert; :class:`~kifunet.data_prep.errors.UnknownName`: no such key)."""
    parts = key.split(".")
    node = cfg
    for p in parts[:-1]:
        if p not in node:
            raise UnknownName(f"unknown config key {key!r} (no {p!r})")
        node = node[p]
    leaf = parts[-1]
    if leaf not in node:
        raise UnknownName(f"unknown config key {key!r}; fields here: {', '.join(sorted(node.keys()))}")
    try:
        node[leaf] = _convert(text, node[leaf])
    except (ValueError, TypeError, SyntaxError) as e:  # the text does not parse, or not as the field's type
        raise ConfigError(str(e.args[0]) if e.args and isinstance(e.args[0], str) else str(e)) from e


def parse_overrides(args: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Split ``--config.key=value`` / ``--config.key value`` arguments from the rest."""
    out, rest = [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--config."):
            body = a[len("--config."):]
            if "=" in body:
                k, v = body.split("=", 1)
            elif i + 1 < len(args):
                k, v = body, args[i + 1]
                i += 1
            else:
                raise ConfigError(f"{a}: missing value")
            out.append((k, v))
        else:
            rest.append(a)
        i += 1
    return out, rest


def load(spec: str, overrides=()) -> ml_collections.ConfigDict:
    """Config file + ``[(key, text), ...]`` overrides, then locked (unknown keys are errors)."""
    cfg = load_file(spec)
    for k, v in overrides:
        override(cfg, k, v)
    cfg.lock()
    return cfg
