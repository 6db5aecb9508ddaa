"""Issue 49, item 4: one user-error base class, and the options several commands share checked by one module.

* every bad-input exception of the library subclasses :class:`kifunet.data_prep.errors.UserError`, and the
  command line reports any subclass (even one it has never heard of) as ``kifunet CMD: error: MESSAGE``, exit 2,
  while any other exception keeps its traceback;
* ``--profile``, ``--rank``, ``--as-rank``, ``--board-size`` and the output file of ``show``, ``export``,
  ``gtp`` and ``eval`` are checked by the converters of :mod:`kifunet.commands.option_types`, as the command line
  is read: the command never runs, and the message is the one line it always was.
"""

from __future__ import annotations

import pytest

from kifunet import cli
from kifunet.commands import option_types
from kifunet.data_prep.errors import UserError


def test_every_bad_input_class_of_the_library_is_a_user_error():
    from kifunet.data_prep.building.build import BuildError
    from kifunet.data_prep.datasets.dataset_base import (CorruptDatasetError, DatasetError, EmptySplitError,
                                                          NotADatasetError, UnknownSplitError)
    from kifunet.data_prep.errors import IllegalMoveError, KifunetInputError, SgfError
    from kifunet.errors import CommandError
    from kifunet.play.gtp_client import EngineError
    from kifunet.play.match import EngineStartError, MatchConfigError
    from kifunet.train.checkpointing import CheckpointError
    from kifunet.train.run_lock import RunInUse

    classes = (BuildError, DatasetError, CorruptDatasetError, EmptySplitError, NotADatasetError, UnknownSplitError,
               KifunetInputError, SgfError, IllegalMoveError, CommandError, EngineError, EngineStartError,
               MatchConfigError, CheckpointError, RunInUse)
    assert [c.__name__ for c in classes if not issubclass(c, UserError)] == []
    # the builtin bases their callers catch are kept
    assert issubclass(MatchConfigError, ValueError) and issubclass(UnknownSplitError, KeyError)


class _NewKindOfBadInput(UserError):
    """A user error of a module the command line does not know about."""


def _run_raising(monkeypatch, exc: Exception):
    from kifunet.commands import stats

    def run(args):
        raise exc

    monkeypatch.setattr(stats, "run", run)
    return cli.main(["stats", "somewhere"])


def test_any_user_error_is_one_line_and_exit_2(monkeypatch, capsys):
    assert _run_raising(monkeypatch, _NewKindOfBadInput("somewhere: not what stats reads")) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "kifunet stats: error: somewhere: not what stats reads\n")


@pytest.mark.parametrize("bug", [ValueError("a bug"), KeyError("a bug"), TypeError("a bug")])
def test_a_bug_keeps_its_traceback(monkeypatch, bug):
    with pytest.raises(type(bug)):
        _run_raising(monkeypatch, bug)


# (command line, the one error line): each value is refused by a converter before the command runs
REFUSED = [
    (["show", "g.sgf", "--move", "3", "--out", "x.jpg"], "kifunet show: error: --out must end in .png or .svg"),
    (["show", "g.sgf", "--move", "3", "--out", "/no/such/dir/x.png"],
     "kifunet show: error: /no/such/dir/x.png: the folder /no/such/dir does not exist"),
    (["show", "g.sgf", "--move", "3", "--out", "x.png", "--rank", "strong"],
     "kifunet show: error: --rank 'strong' is not a rank (e.g. 1d, 9d, 3k)"),
    (["show", "g.sgf", "--move", "3", "--out", "x.png", "--profile", "year=20x5"],
     "kifunet show: error: --profile: year='20x5' is not a year"),
    (["export", "RUN", "--out", "/no/such/dir/x.onnx"],
     "kifunet export: error: /no/such/dir/x.onnx: the folder /no/such/dir does not exist"),
    (["export", "RUN", "--out", "x.onnx", "--board-size", "20"],
     "kifunet export: error: --board-size must be in 2..19, not 20"),
    (["export", "RUN", "--out", "x.onnx", "--profile", "rank=7q"],
     "kifunet export: error: --profile: rank='7q' is not a rank (e.g. 5k, 7d, 9p)"),
    (["gtp", "--rank", "strong"], "kifunet gtp: error: --rank 'strong' is not a rank (e.g. 1d, 5d, 9d, 3k, 9p, or "
                                  "unknown)"),
    (["gtp", "--board-size", "1"], "kifunet gtp: error: --board-size must be in 2..19, not 1"),
    (["gtp", "--profile", "nokey"], "kifunet gtp: error: --profile: 'nokey' is not key=value"),
    (["eval", "--data", "D", "--as-rank", "zz"],
     "kifunet eval: error: --as-rank 'zz' is not a rank: give e.g. 1d, 5d, 9d, 3k, 9p or unknown"),
    (["eval", "--data", "D", "--profile", "year=20x5"], "kifunet eval: error: --profile: year='20x5' is not a year"),
]


@pytest.mark.parametrize("argv,line", REFUSED, ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(REFUSED)])
def test_a_shared_option_is_refused_as_the_command_line_is_read(argv, line, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    module = cli._available()[argv[0]]
    monkeypatch.setattr(module, "run", lambda args: pytest.fail("the command ran with a refused option"))
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", line + "\n")


ACCEPTED = [
    (["gtp", "--rank", "unknown", "--board-size", "9"], {"rank": "unknown", "board_size": 9}),
    (["gtp"], {"rank": "9d", "board_size": None}),
    (["show", "g.sgf", "--move", "3", "--out", "x.SVG", "--rank", "7d"], {"rank": "7d", "out": "x.SVG"}),
    (["eval", "--as-rank", "?", "--profile", "year=2010,source=kgs"],
     {"as_rank": "?", "profile": "year=2010,source=kgs"}),
]


@pytest.mark.parametrize("argv,values", ACCEPTED)
def test_an_accepted_value_reaches_the_command_as_given(argv, values, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args, _ = cli.build_parser().parse_known_args(argv)
    assert {k: getattr(args, k.replace("-", "_")) for k in values} == values


def test_the_four_commands_share_one_converter_per_option():
    parsers = {}
    parser = cli.build_parser()
    for action in parser._subparsers._group_actions:  # noqa: SLF001 -- argparse keeps the sub-parsers there
        parsers.update(action.choices)
    types = {(name, flag): a.type for name in ("show", "export", "gtp", "eval")
             for a in parsers[name]._actions for flag in a.option_strings}  # noqa: SLF001
    expect = {("show", "--profile"): option_types.profile, ("export", "--profile"): option_types.profile,
              ("gtp", "--profile"): option_types.profile, ("eval", "--profile"): option_types.profile,
              ("show", "--rank"): option_types.known_rank, ("gtp", "--rank"): option_types.rank,
              ("eval", "--as-rank"): option_types.as_rank,
              ("export", "--board-size"): option_types.board_size, ("gtp", "--board-size"): option_types.board_size,
              ("show", "--out"): option_types.image_file, ("export", "--out"): option_types.new_file}
    assert {k: types[k] for k in expect} == expect


def test_a_converter_error_inside_another_command_is_reported_once_by_the_outer_one(monkeypatch, capsys):
    """``quickstart`` runs other commands through :func:`kifunet.cli.main`: a refused option there goes up."""
    from kifunet.commands import stats

    monkeypatch.setattr(stats, "run", lambda args: cli.main(["gtp", "--rank", "strong"]))
    assert cli.main(["stats", "somewhere"]) == 2
    assert capsys.readouterr().err == ("kifunet stats: error: --rank 'strong' is not a rank (e.g. 1d, 5d, 9d, 3k, "
                                       "9p, or unknown)\n")


def test_the_library_raises_its_user_errors_itself(tmp_path):
    """Where a command used to catch a builtin error and wrap it, the library raises the user error: an unknown
    feature set, a file that is not an eval result, parts that cannot be merged. The builtin base stays (callers
    that catch ``KeyError`` or ``ValueError`` still do)."""
    from kifunet.data_prep.planes import features
    from kifunet.eval.evaluate import load_result, merge_results

    with pytest.raises(UserError) as info:
        features.get("maddison+nosuch")
    assert isinstance(info.value, KeyError) and str(info.value).startswith("unknown feature set 'nosuch'; known: ")
    bad = tmp_path / "part.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match=f"{bad} is not a kifunet eval result") as info:
        load_result(str(bad))
    assert isinstance(info.value, ValueError)
    with pytest.raises(UserError, match="nothing to merge"):
        merge_results([])


@pytest.mark.parametrize("argv,line", [
    (["features", "nosuch"], "kifunet features: error: unknown feature set 'nosuch'; known: "),
    (["eval", "--merge", "{bad}"], "kifunet eval: error: {bad} is not a kifunet eval result (not JSON: "),
])
def test_the_commands_report_them_without_wrapping(argv, line, tmp_path, capsys):
    bad = tmp_path / "part.json"
    bad.write_text("{not json")
    assert cli.main([a.format(bad=bad) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(line.format(bad=bad)) and err.count("\n") == 1, err
