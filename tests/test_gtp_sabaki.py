"""``kifunet gtp`` driven by a real third-party GTP client: Sabaki's ``@sabaki/gtp`` from npm, under Node.

``tests/sabaki_client/drive.js`` spawns the engine with ``@sabaki/gtp``'s ``Controller``, keeps it in step with
``ControllerStateTracker`` (Sabaki's own sync: komi, boardsize, clear_board, play, undo) and a board from
``@sabaki/go-board`` (Sabaki's rules), plays a 20-move 9x9 game (``play`` for Black, ``genmove`` /
``lz-genmove_analyze`` / ``kata-genmove_analyze`` for White), streams ``lz-analyze`` and ``kata-analyze`` through
the library's subscriber API and stops each with ``protocol_version`` as Sabaki does, reads each analysis line
by Sabaki's rules, compares ``showboard`` with Sabaki's board, asks ``final_score`` and quits; it writes a JSON
summary that the tests here check (its header comment says what it checks and how).

The engine is the shipped ``pretrained/qiqiao9x9`` (a real 9x9 net with a value head, so the winrates the
client reads vary). ``tests/sabaki_client/fake_engine.py``, a net-free GTP engine, checks the driver itself: it
must pass with both forms of an empty response (``=`` and ``= ``) and report each of the fake's flaws.

Node and the npm packages: ``.ci/run`` installs ``nodejs`` and ``npm`` (Debian) and runs ``npm ci`` in
``tests/sabaki_client`` (``package-lock.json`` pins the versions; ``node_modules`` is git-ignored). Outside CI
this test runs ``npm ci`` itself when ``node_modules`` is missing or does not match the lockfile, and skips
with the reason when ``node`` or ``npm`` is absent or the install fails; in CI (``CI=true``) those are failures
(:func:`conftest.require`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require

CLIENT = Path(__file__).resolve().parent / "sabaki_client"
DRIVER = CLIENT / "drive.js"
FAKE = CLIENT / "fake_engine.py"
NET = REPO / "pretrained" / "qiqiao9x9"
INSTALL_HINT = "Debian: apt-get install nodejs npm; then npm ci --prefix tests/sabaki_client"
SCORE = re.compile(r"^([BW]\+\d+(\.\d+)?|0)$")


def _installed_matches_lockfile() -> bool:
    """Every package of ``package-lock.json`` is in ``node_modules`` at its locked version."""
    locked = json.loads((CLIENT / "package-lock.json").read_text())["packages"]
    for path, entry in locked.items():
        if not path:
            continue
        manifest = CLIENT / path / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != entry.get("version"):
            return False
    return True


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` executable, with ``tests/sabaki_client/node_modules`` installed from the lockfile."""
    node = shutil.which("node") or shutil.which("nodejs")
    require(node is not None, "Node.js (node)", INSTALL_HINT)
    if not _installed_matches_lockfile():
        npm = shutil.which("npm")
        require(npm is not None, "npm (to install tests/sabaki_client/node_modules)", INSTALL_HINT)
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENT, capture_output=True, text=True,
                           timeout=300)
        said = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip() not in ("", "npm error")]
        require(r.returncode == 0 and _installed_matches_lockfile(),
                "@sabaki/gtp from the npm registry", f"npm ci in tests/sabaki_client failed: {' | '.join(said[:2])}")
    return node


def drive(node: str, engine: list[str], tmp_path: Path, *, timeout_s: int = 60, name: str = "summary"):
    """Run drive.js against ``engine``; (exit status, summary dict, stderr)."""
    out = tmp_path / f"{name}.json"
    r = subprocess.run([node, str(DRIVER), "--out", str(out), "--timeout", str(timeout_s), "--", *engine],
                       capture_output=True, text=True, timeout=10 * timeout_s)
    assert out.exists(), f"drive.js wrote no summary (status {r.returncode}): {r.stderr[-2000:]}"
    return r.returncode, json.loads(out.read_text()), r.stderr


def _check_clean_run(rc: int, s: dict, stderr: str) -> None:
    """What every correct engine's run must show, whatever the engine."""
    assert rc == 0 and s["errors"] == [] and s["ok"], (s["errors"], s["stderr_tail"][-10:], stderr[-2000:])
    assert s["protocol_version"] == "2"
    # every command answered; a full game is 4 (start) + 3 (sync) + 20 + 2 x 2 (analysis, stop) + 3 showboard
    # + 2 undo + final_score + quit
    assert s["commands_sent"] == s["responses"] and (s["responses"] == 38 or s["moves"][-1]["move"] == "RESIGN")
    assert s["stray_lines"] == [] and s["stdout_lines"] == s["delivered_lines"]
    assert all(re.match(r"^[=?]\d*( .*)?$", line) for line in s["first_lines"])
    plies = s["moves"]
    assert len(plies) == 20 or plies[-1]["move"] == "RESIGN", plies
    assert [m["colour"] for m in plies] == ["B", "W"] * (len(plies) // 2) + ["B"] * (len(plies) % 2)
    assert all(re.match(r"^([A-HJ][1-9]|PASS|RESIGN)$", m["move"]) for m in plies), plies
    streamed = {a["command"]: a for a in s["analyses"] if a.get("stopped_by") == "protocol_version"}
    assert set(streamed) == {"lz-analyze", "kata-analyze"}
    for a in streamed.values():
        assert a["blocks"] >= 3 and min(a["candidates"]) >= 1, a
        assert all(re.match(r"^[A-HJ][1-9]$", v) for v in a["moves"]), a
        assert 0 <= a["winrates"][0] <= a["winrates"][1] <= 100, a
    assert len(s["showboards"]) == 3 and all(b["matches"] for b in s["showboards"]) and s["undo_checked"]
    assert SCORE.match(s["final_score"]), s["final_score"]
    assert s["exit_code"] == 0


@pytest.mark.slow
def test_kifunet_gtp_through_sabaki_client(node, tmp_path):
    """A short game and streamed analysis against ``kifunet gtp --checkpoint pretrained/qiqiao9x9``, every
    response parsed by @sabaki/gtp and checked against Sabaki's board (5-10 s on the shared 2-core machine)."""
    require(NET.is_dir(), f"the shipped net {NET}")
    engine = [sys.executable, "-m", "kifunet.cli", "gtp", "--checkpoint", str(NET)]
    rc, s, stderr = drive(node, engine, tmp_path)
    _check_clean_run(rc, s, stderr)
    assert s["client"]["@sabaki/gtp"] == json.loads((CLIENT / "package-lock.json").read_text())[
        "packages"]["node_modules/@sabaki/gtp"]["version"]
    assert s["name"] == "kifunet" and s["version"]
    # kifunet lists the genmove_analyze forms, so the client made one move with each, as Sabaki would
    assert {m["by"] for m in s["moves"]} >= {"play", "genmove", "lz-genmove_analyze", "kata-genmove_analyze"}
    for a in s["analyses"]:
        assert a["blocks"] >= 1, a
    # qiqiao9x9 has a value head, so each candidate has its own winrate: Sabaki must read different numbers
    lows_highs = [a["winrates"] for a in s["analyses"] if "winrates" in a]
    assert len(lows_highs) == 2 and all(lo < hi for lo, hi in lows_highs), lows_highs
    print(f"\nstart-up (spawn -> name answered) {s['startup_ms']} ms; whole session {s['wall_ms']} ms; "
          f"final_score {s['final_score']}")


@pytest.mark.parametrize("form", ["none", "space"])
def test_driver_accepts_both_empty_response_forms(node, tmp_path, form):
    """``=`` and ``= `` (a trailing space) for an empty response both parse (GTP 2 allows either)."""
    rc, s, stderr = drive(node, [sys.executable, str(FAKE), form], tmp_path, timeout_s=10)
    _check_clean_run(rc, s, stderr)
    empty = "= " if form == "space" else "="
    assert s["first_lines"].count(empty) >= 15  # boardsize, komi, clear_board, 10 x play, 2 x undo, quit


FLAWS = [
    ("log-stdout", r'stdout line\(s\) were not part of any response: \["loading the net..."\]'),
    ("bad-vertex", r'genmove move "Z99" is not a vertex on 9x9'),
    ("occupied", r"genmove move W \w+ is illegal on Sabaki's board \(Overwrite prevented\)"),
    ("bad-info", r"lz-analyze block .*: candidate \w+ is not a legal point for B"),
    ("no-stop", r"no complete response to lz-analyze B 10 within 2 s"),
    ("transposed", r"showboard \(after 10 moves\) differs from Sabaki's board"),
    ("bad-score", r'final_score "black wins" is not B\+x, W\+x or 0'),
    ("exit-3", r"the engine exited with status 3 after quit"),
]


@pytest.mark.parametrize("flaw, expected", FLAWS, ids=[f for f, _ in FLAWS])
def test_driver_reports_a_misbehaving_engine(node, tmp_path, flaw, expected):
    """Each way the fake engine breaks the protocol or the game fails the run with a message naming it."""
    rc, s, _ = drive(node, [sys.executable, str(FAKE), flaw], tmp_path, timeout_s=2)
    assert rc == 1 and not s["ok"]
    assert any(re.search(expected, e) for e in s["errors"]), s["errors"]
