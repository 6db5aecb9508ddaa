"""The GTP engine's rooms: the policy protocol every policy class satisfies, and commands registered by name."""

from __future__ import annotations

import numpy as np
import pytest
from gtp_fakes import FakePolicy

from kifunet.play import gtp_engine, gtp_protocol
from kifunet.play.gtp_policy import GtpPolicy


class Uniform(FakePolicy):
    board_size = 9

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        return np.full(82, 1 / 82)


def test_the_jax_and_the_lazy_policy_are_what_the_engine_needs():
    from flax import nnx

    from kifunet import models
    from kifunet.play.lazy_policy import lazy_wrap
    from kifunet.play.policy import Policy

    pol = Policy(models.create("maddison_tiny", board_size=9, rngs=nnx.Rngs(0)), "maddison", 9)
    assert isinstance(pol, GtpPolicy) and isinstance(pol.resized(9), GtpPolicy)
    assert isinstance(lazy_wrap(pol), GtpPolicy)
    assert isinstance(Uniform(), GtpPolicy)  # the tests' stand-ins too
    assert not isinstance(object(), GtpPolicy)


def test_every_command_is_one_groups_and_listed_once():
    e = gtp_engine.Engine(Uniform())
    assert tuple(e.commands) == gtp_engine.LISTED and len(set(gtp_engine.LISTED)) == len(gtp_engine.LISTED)
    assert e.handle("list_commands") == "= " + "\n".join(gtp_engine.LISTED) + "\n\n"
    owners = {name: handler.__self__ for name, handler in e.commands.items()}
    assert owners["fixed_handicap"] is owners["place_free_handicap"]  # one handler, two names
    assert type(owners["time_settings"]).__name__ == "TimeCommands" and owners["genmove"] is e.moves


def test_a_handler_without_a_place_in_the_list_is_refused(monkeypatch):
    monkeypatch.setattr(gtp_engine, "LISTED", gtp_engine.LISTED[:-1])
    with pytest.raises(RuntimeError, match="kata-genmove_analyze"):
        gtp_engine.Engine(Uniform())


def test_handlers_collects_the_marked_methods():
    class Group:
        @gtp_protocol.command("a", "b-c")
        def first(self, args):
            return "1"

        def unmarked(self, args):
            return "2"

    found = gtp_protocol.handlers(Group())
    assert sorted(found) == ["a", "b-c"] and found["b-c"]([]) == "1"


def test_play_has_no_function_over_60_lines_and_no_class_over_300():
    import ast
    from pathlib import Path

    import kifunet.play

    too_long = []
    for path in sorted(Path(kifunet.play.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                limit = 300 if isinstance(node, ast.ClassDef) else 60
                if node.end_lineno - node.lineno + 1 > limit:
                    too_long.append(f"{path.name}:{node.lineno} {node.name}")
    assert not too_long, too_long


def test_no_policy_is_read_by_getattr_or_hasattr_in_play_or_the_commands():
    """The policy's members are the ones :class:`GtpPolicy` (or :class:`LazyPolicy`) declares: no
    ``getattr(pol, ...)`` / ``hasattr(policy, ...)`` fallback in play/ or kifunet/commands/."""
    import ast
    from pathlib import Path

    import kifunet.commands
    import kifunet.play

    found = []
    for pkg in (kifunet.play, kifunet.commands):
        for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in ("getattr", "hasattr") and node.args
                        and "pol" in ast.unparse(node.args[0]).lower()):
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not found, found
