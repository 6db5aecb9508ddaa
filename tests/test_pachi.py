"""Pachi as an opponent: the ``pachi[:PLAYOUTS]`` spec, finding the binary, the build script, one real game.

Everything but the last test runs on fake ``pachi`` programs (a few lines of Python) and builds nothing. The
last test plays the committed net against the real Pachi 11.99 at 19x19; its session fixture runs
``python scripts/build_pachi.py`` when Pachi is missing, as a user would (a download and ~1 minute of make).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_script, require

from kifunet.data_prep.planes import replay
from kifunet.data_prep.sgf import sgf_io
from kifunet.play import match
from kifunet.play.gtp_client import (PACHI_DEFAULT_PLAYOUTS, GtpProcess, engine_cwd, find_pachi, pachi_command,
                                     pachi_dir, parse_pachi_spec, resolve_command, speaks_pachi_gtp)
from kifunet.play.match_sgf import game_path, read_game

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_pachi.py"
NET = REPO / "pretrained" / "kgs_cpu_small"

# A stand-in for Pachi: answers name (as Pachi, or as another program), version, and two test commands:
# `cwd` (its working directory) and `args` (its arguments). argv[1] of the file itself is not used.
FAKE_GTP = r'''#!{python}
import os, sys
NAME = {name!r}
for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    cmd = parts[0]
    out = {{"name": NAME, "version": "11.99 (fake)", "cwd": os.getcwd(), "args": " ".join(sys.argv[1:])}}.get(cmd, "")
    print("= " + out + "\n", flush=True)
    if cmd == "quit":
        break
'''
# Debian's `pachi` is a platform game: it prints something and exits, whatever its input.
NOT_GTP = '''#!/bin/sh
echo "Dr. Pachi, platform game"
exit 1
'''
HANGS = '''#!/bin/sh
sleep 30
'''


def write_program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_pachi(path: Path, name: str = "Pachi UCT") -> Path:
    return write_program(path, FAKE_GTP.format(python=sys.executable, name=name))


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """No $KIFUNET_PACHI, an empty $KIFUNET_PACHI_DIR, and a PATH of one empty folder (``bin``) plus this
    Python's (for ``sh``, ``env``...) with no ``pachi`` in it."""
    monkeypatch.delenv("KIFUNET_PACHI", raising=False)
    monkeypatch.setenv("KIFUNET_PACHI_DIR", str(tmp_path / "cache"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "pachi").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), *keep]))
    return tmp_path


# --- the spec and the command line -------------------------------------------------------------------------
def test_the_pachi_spec_gives_playouts_and_refuses_what_pachi_would_abort_on():
    assert parse_pachi_spec("pachi") == PACHI_DEFAULT_PLAYOUTS == 10_000
    assert parse_pachi_spec("pachi:1000") == 1000 and parse_pachi_spec("  pachi:500 ") == 500
    for other in ("gnugo --mode gtp", "pachi -t =5000", "/opt/pachi/pachi", "pachi2:1000", "kifunet gtp"):
        assert parse_pachi_spec(other) is None, other
    for bad in ("pachi:499", "pachi:64", "pachi:", "pachi:1e4", "pachi:-1000", "pachi:10k"):
        with pytest.raises(ValueError, match="at least 500"):
            parse_pachi_spec(bad)


def test_the_pachi_command_line_is_single_threaded_seeded_chinese_and_quiet():
    assert pachi_command(1000, "/x/pachi") == ["/x/pachi", "-d", "1", "-s", "1", "-r", "chinese", "-t", "=1000",
                                               "threads=1,pondering=0"]
    with pytest.raises(ValueError):
        pachi_command(100, "/x/pachi")


# --- finding the binary ------------------------------------------------------------------------------------
def test_resolution_order_env_then_cache_then_a_gtp_pachi_on_path(clean_env, monkeypatch):
    tmp = clean_env
    on_path = fake_pachi(tmp / "bin" / "pachi")
    cached = fake_pachi(tmp / "cache" / "pachi")
    mine = fake_pachi(tmp / "mine" / "my-pachi")
    assert pachi_dir() == tmp / "cache"

    monkeypatch.setenv("KIFUNET_PACHI", str(mine))
    assert find_pachi() == str(mine)
    assert resolve_command("pachi:600") == pachi_command(600, mine)
    assert resolve_command("pachi") == pachi_command(PACHI_DEFAULT_PLAYOUTS, mine)
    assert resolve_command("pachi -t =5000 threads=2") == [str(mine), "-t", "=5000", "threads=2"]

    monkeypatch.delenv("KIFUNET_PACHI")
    assert resolve_command("pachi:600")[0] == str(cached)

    cached.unlink()
    assert resolve_command("pachi:600")[0] == str(on_path)

    monkeypatch.setenv("KIFUNET_PACHI", str(tmp / "no-such-pachi"))
    with pytest.raises(FileNotFoundError, match=r"^\$KIFUNET_PACHI is '.*no-such-pachi', which is not an executable"):
        find_pachi()


def test_a_pachi_on_path_that_does_not_speak_gtp_is_refused_with_the_build_hint(clean_env):
    tmp = clean_env
    game = write_program(tmp / "bin" / "pachi", NOT_GTP)
    assert not speaks_pachi_gtp(game)
    with pytest.raises(FileNotFoundError) as info:
        resolve_command("pachi:1000")
    msg = str(info.value)
    assert "\n" not in msg and msg.endswith("run `python scripts/build_pachi.py`")
    assert f"the `pachi` at {game} does not speak GTP" in msg and str(tmp / "cache" / "pachi") in msg
    with pytest.raises(FileNotFoundError, match="build_pachi.py"):
        resolve_command("pachi -t =5000")  # a plain command line naming `pachi` is looked up the same way
    game.unlink()
    with pytest.raises(FileNotFoundError, match=r"^Pachi not found \(\$KIFUNET_PACHI unset, no .*\): run"):
        find_pachi()


def test_only_a_program_answering_name_as_pachi_counts(tmp_path):
    assert speaks_pachi_gtp(fake_pachi(tmp_path / "a" / "pachi"))
    assert not speaks_pachi_gtp(fake_pachi(tmp_path / "b" / "pachi", name="GNU Go"))
    assert not speaks_pachi_gtp(write_program(tmp_path / "c" / "pachi", NOT_GTP))
    assert not speaks_pachi_gtp(tmp_path / "d" / "pachi")  # no such file
    assert not speaks_pachi_gtp(write_program(tmp_path / "e" / "pachi", HANGS), timeout=1)


def test_pachi_starts_in_its_own_directory_with_the_spec_flags(clean_env, monkeypatch):
    """Pachi reads joseki19.pdict from its working directory: it is started where it is installed."""
    tmp = clean_env
    cached = fake_pachi(tmp / "cache" / "pachi")
    monkeypatch.chdir(tmp)
    p = GtpProcess("pachi:700", label="opponent")
    try:
        assert p.ok("cwd") == str(cached.parent)
        assert p.ok("args") == "-d 1 -s 1 -r chinese -t =700 threads=1,pondering=0"
    finally:
        p.close()
    assert engine_cwd([str(cached), "-t", "=700"]) == str(cached.parent)
    assert engine_cwd(["/usr/games/gnugo", "--mode", "gtp"]) is None and engine_cwd(["pachi"]) is None
    # a relative path to a program named pachi is made absolute, since it will not start in our directory
    assert resolve_command("cache/pachi -t =5000") == [str(cached), "-t", "=5000"]


def test_match_reports_a_missing_pachi_or_bad_playouts_in_one_line(clean_env):
    tmp = clean_env
    cfg = match.MatchConfig(engine=f"{sys.executable} -c pass", opponent="pachi:100", referee=None,
                            out_dir=str(tmp / "m"))
    with pytest.raises(match.MatchConfigError, match=r"^--opponent: 'pachi:100': PLAYOUTS must be a whole number"):
        match.check_programs(cfg)
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "match", "--engine", f"{sys.executable} -c pass",
                           "--opponent", "pachi:1000", "--referee", "none", "--games", "1", "--out", str(tmp / "m")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kifunet match: error: --opponent: Pachi not found")
    assert lines[0].endswith("run `python scripts/build_pachi.py`")
    assert not (tmp / "m").exists()


# --- the build script, without building --------------------------------------------------------------------
def test_build_script_options(clean_env, monkeypatch):
    bp = load_script("build_pachi")
    tmp = clean_env
    args = bp.parse_args([])
    assert args.prefix == tmp / "cache" and args.jobs == (os.cpu_count() or 1) and not args.force
    assert bp.parse_args(["--prefix", str(tmp / "p"), "-j", "3"]).prefix == tmp / "p"
    monkeypatch.delenv("KIFUNET_PACHI_DIR")
    assert bp.parse_args([]).prefix == Path.home() / ".cache" / "kifunet" / "pachi-11.99"
    for bad in (["--jobs", "0"], ["--bench-playouts", "100"]):
        with pytest.raises(SystemExit):
            bp.parse_args(bad)
    assert bp.make_command(2) == ["make", "-j2", "CC=gcc -fcommon", "SYS_CFLAGS="]


def test_build_script_reads_pachis_genmove_speed_lines():
    bp = load_script("build_pachi")
    stderr = ("*** WINNER is M15 (12,15) with score 0.5176 (510/2001:2001/2001 games), extra komi 0.000000\n"
              "genmove in 1.12s (1785 games/s, 1785 games/s/thread)\n[2001] best 0.517647 xkomi 0.0\n"
              "genmove in 0.83s (6040 games/s, 6040 games/s/thread)\n")
    assert bp.parse_genmove_rates(stderr) == [(1.12, 1785), (0.83, 6040)]
    assert bp.parse_genmove_rates("no speed here\n") == []


def test_build_script_does_nothing_when_pachi_is_there(clean_env, monkeypatch, capsys):
    bp = load_script("build_pachi")
    tmp = clean_env
    fake_pachi(tmp / "cache" / "pachi")

    def no_build(*a, **k):
        raise AssertionError("built although Pachi is there")

    monkeypatch.setattr(bp, "build", no_build)
    assert bp.main([]) == 0
    out = capsys.readouterr().out
    assert out == f"Pachi 11.99 is already built: {tmp / 'cache' / 'pachi'} (--force rebuilds)\n"
    assert bp.main(["--prefix", str(tmp / "cache")]) == 0  # the same directory named: no export hint
    assert "KIFUNET_PACHI_DIR" not in capsys.readouterr().out
    fake_pachi(tmp / "elsewhere" / "pachi")
    assert bp.main(["--prefix", str(tmp / "elsewhere")]) == 0
    assert f"export KIFUNET_PACHI_DIR={tmp / 'elsewhere'}" in capsys.readouterr().out


def test_build_script_failures_are_one_line(clean_env, monkeypatch, capsys):
    bp = load_script("build_pachi")
    tmp = clean_env
    monkeypatch.setenv("PATH", str(tmp / "bin"))  # no gcc, no make
    assert bp.main(["--prefix", str(tmp / "p")]) == 1
    err = capsys.readouterr().err
    assert err == ("build_pachi: error: gcc and make not found on PATH (Debian: apt-get install "
                   "build-essential)\n")
    monkeypatch.undo()
    require(bp.shutil.which("make") is not None, "make", "Debian: apt-get install build-essential")
    src = tmp / "src"
    src.mkdir()
    (src / "Makefile").write_text("all:\n\t@echo compiling board.c\n\t@echo 'board.c:1: error: boom' >&2; exit 3\n")
    log = tmp / "build.log"
    with pytest.raises(bp.BuildError) as info:
        bp.run_make(src, 1, log)
    msg = str(info.value)
    assert msg.startswith(f"make failed (exit 2; output in {log}): ") and "\n" not in msg
    assert "compiling board.c" in log.read_text()


# --- the real Pachi ----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def pachi_binary() -> str:
    """The real Pachi; built by ``python scripts/build_pachi.py`` when none is found (as a user would)."""
    try:
        return find_pachi()
    except FileNotFoundError:
        pass
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=1800)
    require(proc.returncode == 0, "Pachi", f"python scripts/build_pachi.py failed: {proc.stderr.strip()}")
    return find_pachi()


@pytest.mark.slow
def test_a_real_19x19_game_against_pachi_replays_and_builds(pachi_binary, tmp_path):
    """The committed net against Pachi at 500 playouts a move (Pachi's minimum), 30 moves, scored Tromp-Taylor:
    the game is saved, Pachi ran with the spec's flags, the SGF replays legally and builds with 0 rejected."""
    from kifunet.cli import main as cli_main

    out = tmp_path / "m"
    engine = f"{sys.executable} -m kifunet.cli gtp --checkpoint {NET}"
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "match", "--engine", engine, "--opponent",
                           "pachi:500", "--games", "1", "--max-moves", "30", "--referee", "none", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path = game_path(out, 0)
    rec = sgf_io.load_game(path)
    assert len(replay.analyse_game(rec)) == rec.num_moves == 30  # raises on an illegal move
    assert "kifunet" in rec.info.black and rec.info.white.startswith("Pachi UCT 11.99")  # game 0: engine black
    assert read_game(path).ended == "move cap"
    log = (out / "logs" / "worker0-opponent.stderr").read_text()
    assert log.startswith("Random seed: 1\n")  # -s 1 -d 1 reached Pachi
    assert "genmove" not in log and log.count("| can w") == 15  # -d 1: one line for each of its 15 moves
    ds = tmp_path / "ds"
    assert cli_main(["build", str(out / "games"), "--out", str(ds), "--features", "agz", "--split", "train:rest",
                     "--workers", "0", "--no-progress"]) == 0
    counts = json.loads((ds / "manifest.json").read_text())["counts"]
    assert (counts["seen"], counts["used"], counts["filtered"], counts["rejected"]) == (1, 1, {}, {})
    passes = sum(1 for _, point in rec.moves() if point == 19 * 19)
    assert counts["positions"]["moves"] == 30 - passes  # passes are not positions (--include-passes is off)
