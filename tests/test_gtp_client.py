"""The GTP client: finding programs, one command and one response, and every way a process can fail."""

from __future__ import annotations

import sys

import pytest

from kifunet.play.gtp_client import EngineError, GtpProcess, child_env, resolve_command

# A GTP program for the client: ids echoed, blank lines before some answers, one multi-line answer.
FAKE = r'''
import sys, time
for line in sys.stdin:
    parts = line.split()
    cid = parts.pop(0) if parts[0].isdigit() else ""
    cmd = parts[0]
    if cmd == "die":
        sys.exit(4)
    if cmd == "garbage":
        out = "hello"
    elif cmd == "name":
        out = f"={cid} fake"
    elif cmd == "known_command":
        out = f"={cid} " + ("true" if parts[1] == "name" else "false")
    elif cmd == "lines":
        out = f"\n\r\n={cid} a\r\nb"
    elif cmd == "empty":  # an empty success as the spec and GNU Go write it: "=", the id, a space
        out = f"={cid} "
    elif cmd == "slow":
        time.sleep(3)
        out = f"={cid}"
    elif cmd == "quit":
        print("=\n", flush=True)
        break
    else:
        out = f"?{cid} unknown command"
    print(out + "\n", flush=True)
'''


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text(FAKE)
    procs = []

    def start():
        p = GtpProcess([sys.executable, str(path)], stderr_path=tmp_path / "fake.stderr", label="fake")
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.close()


def test_commands_resolve_kifunet_and_usr_games():
    argv = resolve_command("kifunet gtp --model maddison_tiny")
    assert argv[-3:] == ["gtp", "--model", "maddison_tiny"]
    with pytest.raises(FileNotFoundError, match="program not found"):
        resolve_command("no-such-go-program --mode gtp")
    assert resolve_command("nice -n 5 'a b'") == ["nice", "-n", "5", "a b"]
    with pytest.raises(ValueError, match="empty command"):
        resolve_command("  ")
    assert child_env()["PATH"].split(":").count("/usr/games") <= 1


def test_responses_ids_blank_lines_and_refusals(fake):
    p = fake()
    assert p.command("name") == (True, "fake")
    assert p.command("12 name") == (True, "fake")  # the id is not part of the text
    assert p.command("lines") == (True, "a\nb")  # blank lines before the response skipped; \r dropped
    assert p.command("empty") == (True, "") and p.command("12 empty") == (True, "")  # "= " and "=12 "
    assert p.command("frobnicate") == (False, "unknown command")
    assert p.knows("name") and not p.knows("genmove")
    with pytest.raises(EngineError, match="fake refused 'frobnicate': unknown command"):
        p.ok("frobnicate")
    assert p.ok("name") == "fake"
    p.close()
    assert p.proc.returncode == 0


def test_death_nonsense_and_timeouts_raise_engine_error(fake):
    p = fake()
    with pytest.raises(EngineError, match="not a GTP response"):
        p.command("garbage")
    p = fake()
    p.ok("name")  # the first command may take STARTUP_TIMEOUT; later ones their own limit
    with pytest.raises(EngineError, match=r"did not answer 'slow' within 0 s"):
        p.command("slow", timeout=0.3)
    p = fake()
    with pytest.raises(EngineError, match="exited"):
        p.command("die")
    p.proc.wait(timeout=10)
    with pytest.raises(EngineError, match="exited with code 4 before 'name'"):
        p.command("name")
