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
    (["eval", "--data", "D", "--phase-starts", "1,x"],
     "kifunet eval: error: --phase-starts '1,x': give move numbers separated by commas, e.g. 1,21,51,101"),
    (["eval", "--data", "D", "--phase-starts", "1,50,20"],
     "kifunet eval: error: --phase-starts '1,50,20': move numbers must start at 1 and increase"),
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


# Issue 49 item 1: no command catches a builtin ValueError/KeyError/TypeError to re-wrap it. The library raises its
# bad-input errors as UserError subclasses (also ValueError/KeyError, for library callers), the command line reports
# them, and anything else -- a bug -- keeps its traceback. One command line per family of sites.
_ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
_GAME = str(_ROOT / "samples" / "gnugo" / "gnugo-0000.sgf")

SITE_FAMILIES = [
    # a config and its overrides (train, compile): ConfigError, UnknownName
    (["train", "--config", "tiny", "--workdir", "{tmp}/w", "--config.batch_size=abc"],
     "kifunet train: error: invalid literal for int() with base 10: 'abc'"),
    (["train", "--config", "tiny", "--workdir", "{tmp}/w", "--config.seed"],
     "kifunet train: error: --config.seed: missing value"),
    (["train", "--config", "tiny", "--workdir", "{tmp}/w", "--config.model.nosuch=1"],
     "kifunet train: error: unknown config key 'model.nosuch'; fields here: "),
    (["compile", "--config", "tiny", "--target", "cpu", "--out", "{tmp}/list.json"],
     "kifunet compile: error: {tmp}/list.json: not a compile table written by kifunet compile (no list of rows)"),
    # the dataset options (build, tfds): InvalidValue
    (["build", _GAME, "--out", "{tmp}/b", "--split", "bogus", "--workers", "0"],
     "kifunet build: error: bad split 'bogus': write NAME:RANGES, e.g. train:2000-2014 or test:2015"),
    (["build", _GAME, "--out", "{tmp}/b", "--hash-split", "val:2", "--workers", "0"],
     "kifunet build: error: hash split fractions must be in (0, 1) and sum below 1, got [2.0]"),
    # a net, a position or a probe file that does not fit (gtp, show, eval): UnknownName, InvalidValue, ProbeError
    (["gtp", "--model", "nosuch_model"], "kifunet gtp: error: unknown model 'nosuch_model'; known: "),
    (["show", _GAME, "--move", "9999", "--out", "{tmp}/x.png", "--no-net"],
     f"kifunet show: error: {_GAME} has moves 1.."),
    (["eval", "--probes", "{tmp}/empty.sgf"], "kifunet eval: error: {tmp}/empty.sgf: no probes in the file"),
    # a published table or a format (tables): InvalidValue
    (["tables", "--published", "nosuch"], "kifunet tables: error: no published rows for 'nosuch'; choose from "),
]


@pytest.mark.parametrize("argv,line", SITE_FAMILIES, ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(SITE_FAMILIES)])
def test_a_library_user_error_is_one_line_and_exit_2(argv, line, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "empty.sgf").write_text("")
    from kifunet.data_prep._jit import COMPILE_MESSAGE

    assert cli.main([a.format(tmp=tmp_path) for a in argv]) == 2
    out, err = capsys.readouterr()
    err = err.replace(COMPILE_MESSAGE + "\n", "")  # a cold numba cache is announced first
    assert err.startswith(line.format(tmp=tmp_path)) and err.count("\n") == 1, err
    assert "Traceback" not in out + err


def test_the_library_classes_keep_their_builtin_bases():
    from kifunet.data_prep.building import splits
    from kifunet.data_prep.errors import InvalidValue, UnknownName
    from kifunet.train import configs
    from kifunet.train.checkpointing import CheckpointError, CheckpointMismatch

    assert issubclass(configs.ConfigError, InvalidValue) and issubclass(InvalidValue, (UserError, ValueError))
    assert issubclass(CheckpointMismatch, CheckpointError) and issubclass(CheckpointMismatch, ValueError)
    with pytest.raises(InvalidValue):
        splits.make_rule(["bogus"], None, None)
    cfg = configs.load_file(str(_ROOT / "train" / "configs" / "tiny.py"))
    with pytest.raises(UnknownName):
        configs.override(cfg, "nosuch", "1")
    with pytest.raises(configs.ConfigError):
        configs.override(cfg, "batch_size", "abc")



def test_the_refusals_of_a_run_are_user_errors():
    """The trainer's own refusals (a batch that cannot fit the memory, a resume on another dataset) reach the
    command line as user errors: one line, exit 2 (the slow tests in test_preemption.py and
    test_train_dataset_change.py run them end to end)."""
    from kifunet.train.memory import DoesNotFit
    from kifunet.train.run_dataset import DatasetChanged

    for cls in (DoesNotFit, DatasetChanged):
        assert issubclass(cls, UserError) and issubclass(cls, ValueError), cls

def test_a_builtin_error_inside_a_command_is_a_bug_with_its_traceback(tmp_path, monkeypatch, capsys):
    """A ValueError from deep inside (numpy, say) while ``show`` replays the game is not the user's fault: it is
    raised through :func:`kifunet.cli.main` (a traceback, exit 1), not printed as ``error:`` with exit 2."""
    from kifunet.eval import board_image

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together with shapes (19,19) (9,9)")

    monkeypatch.setattr(board_image, "load_position", broken)
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        cli.main(["show", _GAME, "--move", "3", "--out", str(tmp_path / "x.png"), "--no-net"])
    assert "error:" not in capsys.readouterr().err
