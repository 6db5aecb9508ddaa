"""``kifunet match`` asks the engine its own ``final_score`` after the referee's and says whether the winners
agree (the check behind issue 48's acceptance: kifunet's score agrees with GNU Go's on the winner)."""

from __future__ import annotations

import sys

import pytest

from kifunet.play import match
from kifunet.play.match_sgf import game_path

# A GTP program that passes at every genmove and answers final_score with argv[1] ("unknown": refuses it).
FAKE = r'''
import sys
answer = sys.argv[1]
for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    cmd = parts[0]
    ok, out = True, ""
    if cmd == "name":
        out = "fake"
    elif cmd == "known_command":
        out = "false"
    elif cmd == "genmove":
        out = "pass"
    elif cmd == "final_score":
        ok, out = (False, "unknown command") if answer == "unknown" else (True, answer)
    elif cmd == "quit":
        print("=\n", flush=True)
        break
    print(("=" if ok else "?") + (" " + out if out else "") + "\n", flush=True)
'''


@pytest.mark.parametrize("engine_says, expected", [
    ("B+3.5", "engine final_score: B+3.5 (agrees with the referee on the winner)"),
    ("W+2.5", "engine final_score: W+2.5 (winner differs from the referee's)"),
    ("unknown", "engine final_score: none (unknown command)"),
])
def test_the_engines_own_score_is_compared_with_the_referees(tmp_path, engine_says, expected):
    path = tmp_path / "fake_gtp.py"
    path.write_text(FAKE)
    cmd = lambda answer: f"{sys.executable} {path} {answer}"  # noqa: E731
    cfg = match.MatchConfig(engine=cmd(engine_says), opponent=cmd("unknown"), games=1, board_size=9,
                            referee=cmd("B+11.5"), out_dir=str(tmp_path / "m"))
    lines = []
    match.run_match(cfg, log=lines.append)
    sgf = game_path(tmp_path / "m", 0).read_text()
    assert "referee final_score: B+11.5" in sgf and expected in sgf
    assert lines[-1].endswith(f" -- {expected}")
