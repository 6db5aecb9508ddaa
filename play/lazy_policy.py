"""A policy that answers at once and loads its net in a background thread: how ``kifunet gtp`` starts fast.

:class:`LazyPolicy` gives the cheap facts (board size, description, ``has_value``, ``has_ownership``,
``has_score``, ``reads_profile``) from the run's config and checkpoint metadata (``has_value``:
:func:`kifunet.models.catalog.config_has_value`; the heads: :func:`kifunet.models.catalog.config_heads`) or the
ONNX file's, without running the net; what needs the net waits for it. A failed load is kept as one line and raised
as ``error(...)``. The main thread never imports JAX."""

from __future__ import annotations

import threading
from typing import Callable

from kifunet.data_prep.planes import features as features_mod
from kifunet.models import catalog
from kifunet.data_prep.fileio import store
from kifunet.play.policy import HISTORY_WINDOW, fill_profile, profile_value, rank_value, size_range_problem

#: the loader thread's name
THREAD_NAME = "kifunet-net-loader"


def default_compile_cache() -> str | None:
    """Where ``kifunet gtp`` keeps compiled forward passes: ``$KIFUNET_JAX_CACHE`` if set (empty or ``off``: no
    cache), else ``$XDG_CACHE_HOME/kifunet/jax`` (``~/.cache/kifunet/jax``)."""
    import os

    env = os.environ.get("KIFUNET_JAX_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kifunet", "jax")


#: the JAX settings :func:`enable_compile_cache` changes, and to what (the directory aside)
_CACHE_SETTINGS = {"jax_persistent_cache_min_compile_time_secs": 0.0, "jax_persistent_cache_min_entry_size_bytes": 0}


def enable_compile_cache(directory: str) -> Callable[[], None]:
    """JAX's persistent compilation cache in ``directory``, for every program, unless one is configured
    already; returns what puts the settings back. It only takes effect before a process's first compilation."""
    import jax

    if jax.config.jax_compilation_cache_dir:
        return lambda: None
    old = {k: getattr(jax.config, k) for k in ("jax_compilation_cache_dir", *_CACHE_SETTINGS)}
    jax.config.update("jax_compilation_cache_dir", directory)
    for k, v in _CACHE_SETTINGS.items():
        jax.config.update(k, v)

    def restore() -> None:
        for k, v in old.items():
            jax.config.update(k, v)

    return restore


def config_reads_profile(workdir: str) -> bool:
    """Whether the net of the run ``workdir`` has a profile input, from its ``config.json`` alone (the
    ``model`` section's ``profile_embedding``, or its ``kwargs``'s, above 0; what
    :func:`kifunet.train.model_config.build_model` builds from)."""
    import json
    import os

    with store.open(os.path.join(workdir, "config.json"), encoding="utf-8") as f:
        model = (json.load(f) or {}).get("model") or {}
    kwargs = model.get("kwargs") or {}
    return bool(kwargs.get("profile_embedding", model.get("profile_embedding")) or 0)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


class LazyPolicy:
    """The policy interface over a policy built by ``load()`` in a background thread. ``board_size``,
    ``feature_set``, ``description``, ``has_value``, ``has_ownership``, ``has_score``, ``trained_size``,
    ``reads_profile``, ``profile``: the cheap facts;
    ``error``: the class a failed load is raised as; ``warm_up``: run the net once when loaded; ``start``: start
    now (else :meth:`start`)."""

    def __init__(self, load: Callable[[], object], *, board_size: int, feature_set: str, description: str,
                 has_value: bool, rank=None, trained_size: int | None = None,
                 error: type[Exception] = RuntimeError, warm_up: bool = True, start: bool = True,
                 reads_profile: bool = False, profile=None, has_ownership: bool = False,
                 has_score: bool = False):
        self.board_size = int(board_size)
        self.trained_size = int(trained_size if trained_size is not None else board_size)
        self.fs = features_mod.get(feature_set)
        self.rank = rank_value(rank)
        self.reads_profile = bool(reads_profile)
        self.profile = profile_value(profile)
        self.window = HISTORY_WINDOW
        self.description = description
        self._has_value = bool(has_value)
        self._heads = (bool(has_ownership), bool(has_score))
        self._load = load
        self._error_type = error
        self._warm = warm_up
        self._policy = None
        self._error: str | None = None
        self._built = threading.Event()  # the policy exists (or failed)
        self._ready = threading.Event()  # ... and is warmed up
        self._thread = threading.Thread(target=self._background, name=THREAD_NAME, daemon=True)
        self._features = threading.Thread(target=self._warm_features, name=THREAD_NAME + "-features", daemon=True)
        if start:
            self.start()

    def start(self) -> "LazyPolicy":
        """Start loading (once)."""
        if not self._thread.is_alive() and not self._built.is_set():
            self._thread.start()
            if self._warm:
                self._features.start()
        return self

    def _warm_features(self) -> None:
        """The feature planes of the empty board, without the net: numba loads the feature code while the other
        thread imports JAX (a failure here is the loader's to report, when it meets the same code)."""
        from kifunet.data_prep.game import BLACK
        from kifunet.play.policy import position_record, record_planes

        try:
            record_planes(position_record(self.board_size, [], BLACK, rank=self.rank), self.fs)
        except Exception:  # noqa: BLE001,S110 -- only a warm-up
            pass

    def _background(self) -> None:
        try:
            self._policy = self._load()
        except BaseException as e:  # noqa: BLE001 -- kept and raised where the net is needed
            self._error = _one_line(e)
        finally:
            self._built.set()
        try:
            if self._policy is not None and self._warm:
                self._policy.warm_up()
        except BaseException as e:  # noqa: BLE001
            self._error, self._policy = _one_line(e), None
        finally:
            self._ready.set()

    # --- state -------------------------------------------------------------------------------------------
    @property
    def loading(self) -> bool:
        """True until the net is loaded and warmed up (or failed to load)."""
        return not self._ready.is_set()

    @property
    def error(self) -> str | None:
        """The load's failure in one line, or None."""
        return self._error

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until loading is over; True unless ``timeout`` ran out first."""
        return self._ready.wait(timeout)

    def policy(self, *, warm: bool = True):
        """The loaded policy, waiting for it (and its warm-up, with ``warm``); a failed load raises ``error``."""
        (self._ready if warm else self._built).wait()
        if self._policy is None:
            raise self._error_type(f"cannot load the net: {self._error}")
        return self._policy

    # --- cheap facts -------------------------------------------------------------------------------------
    @property
    def has_value(self) -> bool:
        """Whether the net has a value head (from its config; no need to run it)."""
        return self._has_value

    @property
    def has_ownership(self) -> bool:
        """Whether the net has an ownership head (from its config; no need to run it)."""
        return self._heads[0]

    @property
    def has_score(self) -> bool:
        """Whether the net has a score head (from its config; no need to run it)."""
        return self._heads[1]

    @property
    def has_pass(self) -> bool | None:
        """Whether the net has a pass output: learnt by the warm-up (waits for the net)."""
        return self.policy().has_pass

    # --- what needs the net ------------------------------------------------------------------------------
    def probabilities(self, record_or_moves, colour: int, setup=(), *, symmetries: int = 1):
        return self.policy().probabilities(record_or_moves, colour, setup, symmetries=symmetries)

    def evaluate(self, record_or_moves, colour: int, setup=(), *, symmetries: int = 1):
        return self.policy().evaluate(record_or_moves, colour, setup, symmetries=symmetries)

    def outputs(self, record_or_moves, colour: int, setup=(), *, symmetries: int = 1):
        return self.policy().outputs(record_or_moves, colour, setup, symmetries=symmetries)

    def logits(self, record_or_moves, colour: int, setup=()):
        return self.policy().logits(record_or_moves, colour, setup)

    def planes(self, record_or_moves, colour: int, setup=()):
        return self.policy().planes(record_or_moves, colour, setup)

    def record(self, record_or_moves, colour: int, setup=()):
        return self.policy().record(record_or_moves, colour, setup)

    def warm_up(self) -> "LazyPolicy":
        self.policy()
        return self

    def with_rank(self, rank) -> "LazyPolicy":
        """The same net told another rank: a lazy policy over this one's (loading goes on in the background)."""
        return LazyPolicy(lambda: self.policy().with_rank(rank), board_size=self.board_size,
                          feature_set=self.fs.name, description=self.description, has_value=self._has_value,
                          rank=rank, trained_size=self.trained_size, error=self._error_type, warm_up=False,
                          reads_profile=self.reads_profile, profile=self.profile, has_ownership=self._heads[0],
                          has_score=self._heads[1])

    def with_profile(self, profile) -> "LazyPolicy":
        """The same net given another profile: a lazy policy over this one's (loading goes on)."""
        profile = profile_value(profile)
        return LazyPolicy(lambda: self.policy().with_profile(profile), board_size=self.board_size,
                          feature_set=self.fs.name, description=self.description, has_value=self._has_value,
                          rank=self.rank, trained_size=self.trained_size, error=self._error_type, warm_up=False,
                          reads_profile=self.reads_profile, profile=profile, has_ownership=self._heads[0],
                          has_score=self._heads[1])

    def effective_profile(self):
        """The profile the net is given (:meth:`kifunet.play.policy.Policy.effective_profile`), at once."""
        return fill_profile(self.profile, self.rank)

    def size_problem(self, n: int) -> str | None:
        """None for the board this policy plays (at once); for another, the loaded net's answer (waits for the
        model, not for its warm-up)."""
        problem = size_range_problem(n)
        if problem or int(n) == self.board_size:
            return problem
        return self.policy(warm=False).size_problem(int(n))

    def resized(self, n: int):
        """Self for this board; for another, the loaded policy resized (waits for the model; ``ValueError``
        with the reason when the net cannot play n x n)."""
        problem = self.size_problem(n)
        if problem:
            raise ValueError(problem)
        return self if int(n) == self.board_size else self.policy(warm=False).resized(int(n))


def lazy_run_policy(path: str, rank=None, *, step: int | None = None, feature_set: str | None = None,
                    board_size: int | None = None, error: type[Exception] = RuntimeError,
                    start: bool = True, compile_cache: str | None = None,
                    log: Callable[[str], None] | None = None, profile=None) -> LazyPolicy:
    """A training run's net as a :class:`LazyPolicy`: the facts from
    :func:`kifunet.train.nets.describe_net` now (``FileNotFoundError`` / ``ValueError`` for a run that cannot be
    described), the net in the background; ``compile_cache``: JAX's cache directory, with the exported forward pass
    (:mod:`kifunet.play.forward_cache`) next to it; ``log``: where cache misses and writes are told."""
    from kifunet.train.nets import describe_net

    info = describe_net(path, step=step, feature_set=feature_set, board_size=board_size)
    info["profile_input"] = config_reads_profile(info["workdir"])
    profile = profile_value(profile)

    def full():
        from kifunet.play.policy import load_policy

        return load_policy(path, rank=rank, step=step, feature_set=info["feature_set"],
                           board_size=info["board_size"], profile=profile)

    def load():
        from kifunet.play import forward_cache

        root = forward_cache.cache_root(compile_cache)
        restore = enable_compile_cache(compile_cache) if compile_cache else None
        try:
            if root:
                try:
                    pol = forward_cache.load_entry(root, info, rank, full=full, profile=profile)
                    pol.warm_up()  # the deserialized program compiled (or loaded) through the cache
                    return pol
                except Exception as e:  # noqa: BLE001 -- CacheProblem, or a program that does not run here
                    if log:
                        log(f"forward cache: {e}; loading the net normally")
            pol = full()
            if restore is not None:
                pol.warm_up()  # the forward pass compiled (or loaded) through the cache
            if root:  # here, not in another thread: a quick ``quit`` after the first move would cut that short
                forward_cache.try_save(root, info, pol, log)
            return pol
        finally:
            if restore is not None:
                restore()

    own, score = catalog.config_heads(info["model"], info["model_kwargs"])
    return LazyPolicy(load, board_size=info["board_size"], feature_set=info["feature_set"],
                      description=info["description"],
                      has_value=catalog.config_has_value(info["model"], info["model_kwargs"]), rank=rank,
                      error=error, start=start, reads_profile=info["profile_input"], profile=profile,
                      has_ownership=own, has_score=score)


def lazy_wrap(policy, *, error: type[Exception] = RuntimeError, start: bool = True) -> LazyPolicy:
    """An already loaded policy (an ONNX file opens in a tenth of a second) as a :class:`LazyPolicy` whose
    warm-up -- the first pass, which loads the feature code -- runs in the background."""
    return LazyPolicy(lambda: policy, board_size=policy.board_size, feature_set=policy.fs.name,
                      description=policy.description, has_value=policy.has_value, rank=policy.rank,
                      trained_size=policy.trained_size, error=error, start=start,
                      reads_profile=policy.reads_profile, profile=policy.profile,
                      has_ownership=policy.has_ownership, has_score=policy.has_score)
