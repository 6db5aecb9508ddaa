"""One error style for every command (issue 13, item 15): ``kifunet CMD: error: MESSAGE`` on stderr, exit 2,
never a traceback for bad input; ``kifunet --version``; a top-level ``--help`` written for users.

Every subcommand is run as the user runs it (a subprocess) with bad input: a missing file, a bad option value,
a run or dataset that does not exist, a GTP engine that exits at once with a message on stderr.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kifunet import __version__, errors
from kifunet.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "gnugo"
GAME = str(SAMPLES / "gnugo-0000.sgf")
PRETRAINED = str(ROOT / "pretrained" / "kgs_cpu_small")
TINY = str(ROOT / "train" / "configs" / "tiny.py")
# a GTP engine that cannot start: it says why on stderr and exits
DYING_ENGINE = shlex.join([sys.executable, "-c",
                           "import sys; sys.stderr.write('engine boom: no net in /nowhere\\n'); sys.exit(3)"])


def kifunet(*argv, cwd, timeout=180, env=None):
    return subprocess.run([sys.executable, "-m", "kifunet.cli", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A small built dataset (its build also leaves the compiled kernels cached for the subprocesses)."""
    ds = tmp_path_factory.mktemp("cli_errors") / "ds"
    assert main(["build", GAME, str(SAMPLES / "gnugo-0001.sgf"), "--out", str(ds), "--workers", "0",
                 "--no-progress", "--hash-split", "test:0.5"]) == 0
    return ds


# (command, arguments: {ds}, {tmp} and {game} are filled in, what stderr must say)
CASES = [
    ("quickstart", ["--sgf", "/no/such/games", "--out", "{tmp}/q"], "/no/such/games"),
    ("build", ["/no/such/games", "--out", "{tmp}/b", "--workers", "0"], "/no/such/games"),
    ("build", ["{game}", "--out", "{tmp}/b", "--features", "nosuch", "--workers", "0"], "unknown feature set"),
    ("build", ["{game}", "--out", "{tmp}/b", "--min-rank", "zzz", "--workers", "0"], "not a rank"),
    ("tfds", ["--manual-dir", "/no/such/archives", "--data-dir", "{tmp}/tfds"], "/no/such/archives"),
    ("stats", ["/no/such/dataset"], "/no/such/dataset"),
    ("inspect", ["/no/such/dataset"], "/no/such/dataset"),
    ("inspect", ["{ds}", "--split", "nope"], "no split 'nope'"),
    ("inspect", ["{ds}", "--index", "99999999"], "--index 99999999"),
    ("features", ["nosuch"], "unknown feature set 'nosuch'"),
    ("features", ["maddison", "--sgf", "/no/such.sgf"], "/no/such.sgf"),
    ("features", ["maddison", "--sgf", "{game}", "--move", "9999"], "--move must be in 1..228"),
    ("train", ["--config", "/no/such/config.py", "--workdir", "{tmp}/w"], "/no/such/config.py"),
    ("train", ["--config", TINY, "--workdir", "{tmp}/w", "--config.nosuch=3"], "nosuch"),
    ("eval", ["--checkpoint", "/no/such/run", "--data", "{ds}"], "/no/such/run"),
    ("eval", ["--checkpoint", PRETRAINED, "--data", "/no/such/dataset"], "/no/such/dataset"),
    ("eval", ["--checkpoint", PRETRAINED, "--data", "{ds}", "--split", "nope"], "no split 'nope'"),
    ("eval", ["--checkpoint", PRETRAINED, "--data", "{ds}", "--batch-size", "0"], "--batch-size"),
    ("eval", ["--checkpoint", PRETRAINED, "--data", "{ds}", "--phase-starts", "a,b"], "--phase-starts"),
    ("eval", ["--merge", "/no/such/part.json"], "/no/such/part.json: No such file"),
    ("tables", ["/no/such/run"], "/no/such/run: No such file"),
    ("tables", ["--published", "nosuch"], "no published rows for 'nosuch'"),
    ("show", ["/no/such.sgf", "--move", "3", "--out", "{tmp}/x.png", "--checkpoint", PRETRAINED], "/no/such.sgf"),
    ("show", ["{game}", "--move", "3", "--out", "{tmp}/x.jpg"], ".png or .svg"),
    ("show", ["{game}", "--move", "3", "--out", "{tmp}/x.png", "--checkpoint", "/no/such/run"], "/no/such/run"),
    ("gtp", ["--checkpoint", "/no/such/run"], "/no/such/run"),
    ("gtp", ["--model", "maddison_tiny", "--rank", "strong"], "'strong' is not a rank"),
    ("gtp", ["--model", "maddison_tiny", "--symmetries", "9"], "--symmetries must be in 1..8"),
    ("gtp", ["--model", "maddison_tiny", "--resign-margin", "-3"], "--resign-margin must be a number of points"),
    ("match", ["--engine", DYING_ENGINE, "--opponent", DYING_ENGINE, "--referee", "none", "--games", "1",
               "--out", "{tmp}/m"], "engine boom: no net in /nowhere"),
    ("match", ["--engine", "no-such-go-program --gtp", "--referee", "none", "--out", "{tmp}/m2"],
     "--engine: program not found"),
    ("match", ["--engine", DYING_ENGINE, "--games", "0", "--out", "{tmp}/m3"], "--games must be at least 1"),
    ("export", ["/no/such/run", "--out", "{tmp}/x.onnx"], "/no/such/run"),
    ("export", [PRETRAINED, "--out", "{tmp}/no/x.onnx"], "does not exist"),
    ("gtp", ["--model", "{tmp}/missing.onnx"], "missing.onnx: no such file"),
    ("verify", ["/no/such/dataset"], "/no/such/dataset"),
    # appended (the rows above are numbered by test_the_program_itself_reports_bad_input)
    ("train", ["--config", "nosuch_config", "--workdir", "{tmp}/w"], "no such config file, nor a config name"),
    ("eval", ["--data", "/no/such/dataset"], "/no/such/dataset"),  # the default net, then the missing dataset
    ("train", ["--config", TINY, "--workdir", "s3://bucket/run"], "a s3:// workdir is not supported (gs:// is)"),
    ("compile", ["--config", "tiny", "--target", "v9z-8"], "unknown target 'v9z-8'"),
    ("compile", ["--config", "tiny", "--target", "cpu", "--batch", "0"], "--batch must be at least 1"),
    ("build", ["{game}", "--out", "{tmp}/b", "--bogus"], "unrecognized arguments: --bogus"),
    ("inspect", ["{ds}", "--bogus"], "unrecognized arguments: --bogus"),
]


def test_every_command_has_a_bad_input_case():
    assert {c for c, _, _ in CASES} == set(COMMANDS)


@pytest.mark.parametrize("command,args,says", CASES, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_bad_input_is_one_line_on_stderr_with_exit_2(command, args, says, dataset, tmp_path, capsys,
                                                     monkeypatch):
    """In-process (``cli.main``, what the program runs; an exception that is not reported fails the test as a
    traceback would); ``test_the_program_itself_reports_bad_input`` runs the real program for a few rows."""
    argv = [a.format(ds=dataset, tmp=tmp_path, game=GAME) for a in args]
    monkeypatch.chdir(tmp_path)
    rc = main([command, *argv])
    out, err = capsys.readouterr()
    both = out + err
    assert "Traceback" not in both, both
    assert rc == 2, both
    assert err.startswith(f"kifunet {command}: error: "), both
    assert says in err, both
    # stdout: nothing, or only the accounting (quickstart echoes the command it runs)
    assert all(line.startswith("$ kifunet ") for line in out.splitlines() if line.strip()), out


@pytest.mark.slow
@pytest.mark.parametrize("row", [0, 9, 14, 20, 27])
def test_the_program_itself_reports_bad_input(row, dataset, tmp_path):
    command, args, says = CASES[row]
    argv = [a.format(ds=dataset, tmp=tmp_path, game=GAME) for a in args]
    proc = kifunet(command, *argv, cwd=tmp_path)
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both, both
    assert proc.returncode == 2, both
    assert proc.stderr.startswith(f"kifunet {command}: error: "), both
    assert says in proc.stderr, both


def test_an_engine_that_cannot_start_stops_the_match_and_shows_its_stderr(tmp_path):
    proc = kifunet("match", "--engine", DYING_ENGINE, "--opponent", DYING_ENGINE, "--referee", "none",
                   "--games", "4", "--out", tmp_path / "m", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout  # no table of nan, no per-game FAILED lines
    first, *rest = proc.stderr.splitlines()
    assert first.startswith("kifunet match: error: the engine failed to start") and "exited" in first
    assert any("engine boom: no net in /nowhere" in line for line in rest), proc.stderr


def test_version():
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"kifunet {__version__}"


def test_top_level_help_is_for_users():
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    text = proc.stdout
    assert "module" not in text.lower()  # about what the tool does, not how the code is laid out
    assert 'pip install -e ".[dev]" && kifunet quickstart' in text and "python -m pytest -q" in text
    assert "--version" in text and "kifunet COMMAND --help" in text
    for name in COMMANDS:
        assert f"\n  {name} " in text, name


def test_describe_gives_path_and_reason_for_os_errors():
    assert errors.describe(FileNotFoundError(2, "No such file or directory", "/x")) == "/x: No such file or directory"
    assert errors.describe(KeyError("no split 'a'")) == "no split 'a'"
    assert str(errors.CommandError(ValueError("bad value"))) == "bad value"
    assert errors.is_user_error(errors.CommandError("x")) and not errors.is_user_error(ValueError("x"))


def test_a_bug_keeps_its_traceback(monkeypatch, capsys):
    from kifunet.commands import stats

    def boom(args):
        raise ValueError("a bug, not bad input")

    monkeypatch.setattr(stats, "run", boom)
    with pytest.raises(ValueError, match="a bug"):
        main(["stats", "anything"])


def test_main_in_process_leaves_the_callers_sigpipe_alone():
    """``cli.main`` called by a test runner or a notebook must not change the caller's SIGPIPE action, or the
    caller dies the next time it writes to a closed pipe."""
    import signal

    from kifunet import cli

    before = signal.getsignal(signal.SIGPIPE)
    assert cli.main(["features"]) == 0
    assert signal.getsignal(signal.SIGPIPE) == before


def test_program_ends_quietly_when_its_reader_goes():
    """``kifunet ... | head`` ends like a Unix tool: status 0, no traceback, even when most of the output is left."""
    script = "from kifunet import cli; cli.main = lambda argv=None: [print('x' * 99) for _ in range(10**5)] and 0; " \
             "raise SystemExit(cli.console_main())"
    out = subprocess.run(f"{sys.executable} -c \"{script}\" | head -1; echo \"status ${{PIPESTATUS[0]}}\"",
                         shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == ["x" * 99, "status 0"] and out.stderr == "", out


def test_program_is_not_killed_by_a_closed_pipe_that_is_not_stdout():
    """A write to a closed pipe of the program's own (the build's worker queue after a worker crash) is an
    exception, never a silent death by SIGPIPE (exit -13): that killed ``kifunet build`` when a worker crashed."""
    script = ("import os; from kifunet import cli; r, w = os.pipe(); os.close(r); "
              "cli.main = lambda argv=None: os.write(w, b'x') and 0; raise SystemExit(cli.console_main())")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "BrokenPipeError" in out.stderr, out


# `kifunet show` checks its inputs before it loads the net (issue 13, item 16)
@pytest.mark.parametrize("args", [
    ["/no/such.sgf", "--move", "3", "--out", "x.png", "--checkpoint", PRETRAINED],
    [GAME, "--move", "3", "--out", "x.png", "--checkpoint", "/no/such/run"],
    [GAME, "--move", "3", "--out", "/no/such/dir/x.png", "--checkpoint", PRETRAINED],
    [GAME, "--move", "3", "--out", "x.png", "--rank", "strong", "--checkpoint", PRETRAINED],
], ids=["missing-sgf", "missing-run", "missing-out-dir", "bad-rank"])
def test_show_reports_bad_inputs_before_loading_the_net(args, tmp_path):
    # a jax that cannot be imported: the inputs must be reported before anything loads the net (or JAX)
    fake = tmp_path / "no_jax"
    (fake / "jax").mkdir(parents=True)
    (fake / "jax" / "__init__.py").write_text("raise ImportError('jax imported before the inputs were checked')\n")
    path = os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    t0 = time.monotonic()
    proc = kifunet("show", *args, cwd=tmp_path, env={"PYTHONPATH": path})
    seconds = time.monotonic() - t0
    assert proc.returncode == 2 and proc.stderr.startswith("kifunet show: error: "), proc.stderr
    assert "jax imported" not in proc.stderr, proc.stderr
    # loading JAX and the checkpoint took 6-9 s here; the inputs are checked in well under 2 s (slack for load)
    assert seconds < 5.0, f"{seconds:.1f} s: {proc.stderr}"



USAGE_ERRORS = [["eval"], ["export"], ["show"], ["train"], ["match"], ["verify"], ["stats"], ["inspect"], ["tfds"],
                ["eval", "--split", "test"]]


def test_usage_errors_answer_before_jax_is_imported(tmp_path):
    """A command given too little answers exit 2 at once: JAX (1-4 s to import) is not loaded for a usage error."""
    script = ("import sys\nfrom kifunet.cli import main\nfor argv in %r:\n"
              "    try:\n        rc = main(argv)\n    except SystemExit as e:\n        rc = e.code\n"
              "    print(argv[0], rc, 'jax' in sys.modules)\n" % (USAGE_ERRORS,))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = proc.stdout.split("\n")[:len(USAGE_ERRORS)]
    assert lines == [f"{argv[0]} 2 False" for argv in USAGE_ERRORS], proc.stdout + proc.stderr

# issue 32, the first hour: eval's default net, config names, the configs --help lists, no empty checkpoints/
@pytest.mark.slow
def test_eval_without_checkpoint_evaluates_the_default_net_and_says_so(tmp_path, capsys, monkeypatch):
    from kifunet.data_prep import paths

    shipped = paths.default_net()
    features = json.loads((shipped / "config.json").read_text())["expect_features"]
    dataset = tmp_path / "ds"
    assert main(["build", GAME, str(SAMPLES / "gnugo-0001.sgf"), "--out", str(dataset), "--workers", "0",
                 "--no-progress", "--features", features, "--hash-split", "test:0.5"]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in (shipped / "eval").iterdir())
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--data", str(dataset), "--limit", "16", "--cpu-devices", "0", "--no-breakdowns"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"net: the default net {shipped} (no --checkpoint)", out
    written = tmp_path / "runs" / paths.DEFAULT_NET / "eval" / f"{dataset.name}_test_first16.json"
    assert written.is_file() and f"wrote {written}" in out, out
    assert sorted(p.name for p in (shipped / "eval").iterdir()) == before  # the shipped net's folder untouched


def test_train_takes_a_config_name_or_its_file(capsys):
    from kifunet.commands import train as train_cmd

    assert main(["train", "--config", "tiny", "--workdir", "w", "--print-config"]) == 0
    by_name = capsys.readouterr().out
    assert main(["train", "--config", TINY, "--workdir", "w", "--print-config"]) == 0
    assert by_name == capsys.readouterr().out and "dataset" in by_name
    assert train_cmd.config_file("cpu_small") == str(ROOT / "train" / "configs" / "cpu_small.py")
    assert train_cmd.config_file("agz20:x") == f"{ROOT / 'train' / 'configs' / 'agz20.py'}:x"  # NAME:ARG
    assert train_cmd.config_file(TINY) == TINY


def test_train_help_lists_every_config_there_is():
    names = sorted(f.stem for f in (ROOT / "train" / "configs").glob("*.py") if f.stem != "__init__")
    assert len(names) >= 10
    proc = kifunet("train", "--help", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    listed = proc.stdout.split("configs (a name", 1)[1].split("`kifunet train", 1)[0]
    assert sorted(n.strip(" ,\n") for n in listed.split("\n", 1)[1].split(",")) == names, listed


@pytest.mark.slow
def test_a_failed_train_leaves_no_empty_checkpoints_folder(tmp_path):
    work = tmp_path / "w"
    proc = kifunet("train", "--config", "tiny", "--workdir", work, "--config.dataset", tmp_path / "no_such_ds",
                   cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("kifunet train: error: "), proc.stderr
    assert "no_such_ds" in proc.stderr, proc.stderr
    assert not (work / "checkpoints").exists(), sorted(p.name for p in work.iterdir())
