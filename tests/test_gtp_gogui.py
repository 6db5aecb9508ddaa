"""GoGui's analyze commands: the list and every response, checked by a strict parser written from GoGui's manual.

The parser follows the manual's chapter "Analyze Commands" (``doc/manual/xml/analyze.xml``): lines
``type/label/command`` (GoGui's ``AnalyzeDefinition`` splits at ``/`` and takes 3 to 5 fields; a label may appear
once), the documented types and wildcards; response formats: ``gfx`` (one graphics command per line: BLACK,
CIRCLE, COLOR, INFLUENCE, LABEL, MARK, SQUARE, TEXT, TRIANGLE, VAR, WHITE; INFLUENCE takes point/number pairs,
LABEL point/text pairs, TEXT a text), ``dboard`` (a board of floating point numbers between -1 and 1, the top
row first, as ``GtpUtil.parseStringBoard`` reads it), ``pspairs`` (point/string pairs), ``string`` (a text:
one line goes to the status bar).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import gtp_gogui
from kifunet.play.gtp_engine import Engine
from gtp_fakes import FakePolicy

TYPES = {"bwboard", "cboard", "dboard", "eplist", "gfx", "hstring", "hpstring", "none", "param", "plist", "pspairs",
         "pstring", "sboard", "string", "var", "varb", "varc", "varp", "varpo", "varw"}
WILDCARDS = set("cfmopPrsw")
GFX_COMMANDS = {"BLACK", "CIRCLE", "COLOR", "INFLUENCE", "LABEL", "MARK", "SQUARE", "TEXT", "TRIANGLE", "VAR", "WHITE"}


def parse_point(s: str, n: int) -> tuple[int, int] | None:
    """GoGui's point: a column letter A..Z without I and a row number 1..N, any case; ``pass`` -> None."""
    if s.lower() == "pass":
        return None
    m = re.fullmatch(r"([A-HJ-Za-hj-z])(\d{1,2})", s)
    assert m, f"not a point: {s!r}"
    col = "ABCDEFGHJKLMNOPQRSTUVWXYZ".index(m.group(1).upper())
    row = int(m.group(2))
    assert col < n and 1 <= row <= n, f"{s} is off a {n}x{n} board"
    return n - row, col


def parse_analyze_commands(text: str, known: set[str]) -> list[tuple[str, str, str]]:
    out, labels = [], set()
    assert text == text.strip() and "\n\n" not in text
    for line in text.split("\n"):
        fields = line.split("/")
        assert len(fields) == 3, f"type/label/command: {line!r}"  # GoGui reads 3..5; the documented form is 3
        kind, label, command = fields
        assert kind in TYPES, kind
        assert label and label == label.strip() and label not in labels, label
        labels.add(label)
        words = command.split()
        assert words and words[0] in known, command
        for w in re.findall(r"%(.)", command):
            assert w in WILDCARDS, f"%{w} is no GoGui wildcard"
        out.append((kind, label, command))
    return out


def parse_gfx(text: str, n: int) -> dict:
    got: dict = {}
    for line in text.split("\n"):
        words = line.split()
        assert words and words[0] in GFX_COMMANDS, line
        cmd, args = words[0], words[1:]
        assert cmd not in got, f"{cmd} twice"
        if cmd == "TEXT":
            got[cmd] = line[len("TEXT "):]
        elif cmd in ("INFLUENCE", "LABEL"):
            assert args and len(args) % 2 == 0, line
            pairs = list(zip(args[::2], args[1::2]))
            pts = [parse_point(p, n) for p, _ in pairs]
            assert None not in pts and len(set(pts)) == len(pts), line
            if cmd == "INFLUENCE":
                vals = [float(v) for _, v in pairs]
                assert all(-1 <= v <= 1 for v in vals), line
                got[cmd] = dict(zip(pts, vals))
            else:
                assert all(0 < len(t) <= 4 for _, t in pairs), line  # a label that fits on a point
                got[cmd] = dict(zip(pts, (t for _, t in pairs)))
        else:
            if cmd in ("BLACK", "WHITE", "MARK", "TRIANGLE", "CIRCLE", "SQUARE"):  # point lists
                pts = [parse_point(p, n) for p in args]
                assert args and None not in pts and len(set(pts)) == len(pts), line
            got[cmd] = args
    return got


def parse_dboard(text: str, n: int) -> np.ndarray:
    rows = [ln.split() for ln in text.split("\n") if ln.strip()]
    assert len(rows) == n and all(len(r) == n for r in rows), text
    b = np.array([[float(v) for v in r] for r in rows])
    assert np.all(np.abs(b) <= 1)
    return b


def parse_pspairs(text: str, n: int) -> list[tuple]:
    words = text.split()
    assert len(words) % 2 == 0, text
    return [(parse_point(p, n), s) for p, s in zip(words[::2], words[1::2])]


def ok(response: str) -> str:
    """The text of a success response (``=`` and a space; ends with one blank line)."""
    assert response.startswith("= ") and response.endswith("\n\n") and not response.endswith("\n\n\n"), response
    body = response[2:-2]
    assert "\n\n" not in body
    return body


def test_the_parsers_reject_what_the_manual_forbids():
    bad_lists = ["gfx/Heat", "heatmap/Heat/kifunet-policy_gfx %m", "gfx/Heat/frobnicate %m",
                 "gfx/Heat/kifunet-policy_gfx %m\ndboard/Heat/kifunet-policy_dboard %m",
                 "gfx/Heat/kifunet-policy_gfx %x", "gfx//kifunet-policy_gfx %m"]
    for text in bad_lists:
        with pytest.raises(AssertionError):
            parse_analyze_commands(text, {"kifunet-policy_gfx", "kifunet-policy_dboard"})
    for text in ["INFLUENCE D4", "INFLUENCE D4 1.5", "HEAT D4 0.5", "LABEL Z9 12", "LABEL D4 12345", "LABEL pass 3",
                 "TEXT a\nTEXT b"]:
        with pytest.raises((AssertionError, ValueError)):
            parse_gfx(text, 9)
    for text in ["0 " * 9, ("0 " * 8 + "\n") * 9, ("2 " * 9 + "\n") * 9]:
        with pytest.raises(AssertionError):
            parse_dboard(text, 9)
    with pytest.raises(AssertionError):
        parse_pspairs("D4 0.5 E5", 9)


class Fake(FakePolicy):
    """Fixed, distinct probabilities; a value head when ``value`` is given."""

    def __init__(self, n=9, value=None, has_pass=False):
        rng = np.random.default_rng(1)
        p = rng.random(n * n + 1) + 0.01
        p[-1] = 0.2 if has_pass else 0.0
        self.probs = p / p.sum()
        self.board_size, self.has_pass, self.description, self.value = n, has_pass, "fake", value

    @property
    def has_value(self):
        return self.value is not None

    def evaluate(self, moves, colour, setup=(), *, symmetries=1):
        return self.probs, self.value

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        return self.probs


def known(e: Engine) -> set[str]:
    return set(ok(e.handle("list_commands")).split())


@pytest.mark.parametrize("colour", [BLACK, WHITE])
def test_every_listed_command_answers_in_its_documented_format(colour):
    pol = Fake()
    e = Engine(pol)
    assert ok(e.handle("play b E5")) == "" and ok(e.handle("play w D4")) == ""
    listed = parse_analyze_commands(ok(e.handle("gogui-analyze_commands")), known(e))
    assert {k for k, _, _ in listed} == {"gfx", "dboard", "pspairs"}  # no value head: no value command
    assert all(ok(e.handle(f"known_command {c.split()[0]}")) == "true" for _, _, c in listed)
    word = "b" if colour == BLACK else "w"
    legal = e.state.board.legal_moves(colour)
    nn = 81
    best = max((i for i in range(nn) if legal[i]), key=lambda i: pol.probs[i])
    sign = 1 if colour == BLACK else -1
    for kind, _, command in listed:
        text = ok(e.handle(command.replace("%m", word)))
        if command == "kifunet-dead_gfx":
            g = parse_gfx(text, 9)  # two lone stones: nothing settled, nothing dead
            assert "MARK" not in g and g["TEXT"].startswith("dead stones: 0, seki stones: 0; score ")
        elif kind == "gfx":
            g = parse_gfx(text, 9)
            heat = g["INFLUENCE"]
            assert heat[coords.from_flat(best, 9)] == sign * 1.0  # the best legal move: the full square
            assert coords.from_gtp("E5", 9) not in heat and coords.from_gtp("D4", 9) not in heat  # occupied
            for rc, v in heat.items():
                assert v == pytest.approx(sign * pol.probs[coords.to_flat(rc, 9)] / pol.probs[best], abs=5e-4)
            labels = g["LABEL"]
            assert len(labels) == gtp_gogui.LABELLED_MOVES and labels[coords.from_flat(best, 9)] == \
                gtp_gogui.percent_label(pol.probs[best])
            assert g["TEXT"].startswith(f"{'black' if colour == BLACK else 'white'} to play: best "
                                        f"{coords.to_gtp(coords.from_flat(best, 9), 9)}")
        elif kind == "dboard":
            b = parse_dboard(text, 9)
            assert b[4, 4] == 0 and b[5, 3] == 0  # E5 and D4, occupied
            assert b.reshape(-1)[best] == sign * 1.0 and np.all(sign * b >= 0)
            gfx = parse_gfx(ok(e.handle(f"kifunet-policy_gfx {word}")), 9)["INFLUENCE"]
            for rc, v in gfx.items():
                assert b[rc] == v  # the same numbers, as a board with the top row first
        else:
            pairs = parse_pspairs(text, 9)
            assert len(pairs) == 10 and pairs[0][0] == coords.from_flat(best, 9)
            assert [float(s) for _, s in pairs] == sorted((float(s) for _, s in pairs), reverse=True)


def test_the_value_is_listed_only_for_a_net_with_a_value_head():
    e = Engine(Fake())
    assert e.handle("kifunet-value b") == "? the net has no value head\n\n"
    pol = Fake(value=-0.25, has_pass=True)
    e = Engine(pol)
    listed = parse_analyze_commands(ok(e.handle("gogui-analyze_commands")), known(e))
    assert ("string", "Value (net)", "kifunet-value %m") in listed
    line = ok(e.handle("kifunet-value w"))
    assert "\n" not in line and line == "white to play: value -0.250 (expected result in [-1, 1]), 37.5% to win"
    assert parse_gfx(ok(e.handle("kifunet-policy_gfx b")), 9)["TEXT"].endswith(f", pass {100 * pol.probs[-1]:.1f}%")
    for bad in ("kifunet-value", "kifunet-value purple", "kifunet-policy_gfx", "kifunet-policy_dboard b w"):
        assert e.handle(bad) == "? syntax error\n\n"


def test_the_table_is_the_list_and_takes_new_entries():
    e = Engine(Fake())
    extra = gtp_gogui.AnalyzeCommand("gfx", "Score", "final_score", lambda eng: eng.size == 9)
    table = gtp_gogui.ANALYZE_COMMANDS + [extra]
    lines = gtp_gogui.analyze_commands(e, table).split("\n")
    assert lines[-1] == "gfx/Score/final_score"
    assert gtp_gogui.analyze_commands(e, [gtp_gogui.AnalyzeCommand("gfx", "x", "final_score",
                                                                   lambda eng: False)]) == ""
    for bad in ([extra, extra], [gtp_gogui.AnalyzeCommand("gfx", "a/b", "final_score")],
                [gtp_gogui.AnalyzeCommand("heat", "a", "final_score")]):
        with pytest.raises(ValueError):
            gtp_gogui.analyze_commands(e, bad)


def test_the_dead_stone_marks_show_the_estimate():
    """A black wall on column E, a white one on F; a white stone at B2 inside black's area is dead: MARK B2, each
    side's empty points as BLACK / WHITE squares, and the score final_score gives."""
    e = Engine(Fake())
    for colour, wall in (("b", "E"), ("w", "F")):
        for row in range(1, 10):
            assert ok(e.handle(f"play {colour} {wall}{row}")) == ""
    assert ok(e.handle("play w B2")) == ""
    g = parse_gfx(ok(e.handle("kifunet-dead_gfx")), 9)
    assert g["MARK"] == ["B2"] and "TRIANGLE" not in g
    # one-line walls on 9x9 leave the playouts unsure of the far points; each square is on its owner's side
    assert g["BLACK"] and all(v[0] in "ABCD" and v != "B2" for v in g["BLACK"])
    assert g["WHITE"] and all(v[0] in "GHJ" for v in g["WHITE"])
    assert g["TEXT"] == f"dead stones: 1, seki stones: 0; score {ok(e.handle('final_score'))} (komi 7.5)"
    assert e.handle("kifunet-dead_gfx now") == "? syntax error\n\n"


@pytest.mark.slow
def test_kifunet_gtp_answers_gogui_s_commands(tmp_path):
    """The real ``kifunet gtp`` (a random 9x9 net) driven through the project's GTP client as GoGui drives an
    engine: the analyze list and each listed command, a timed game, printsgf and loadsgf, cputime (~10 s)."""
    from kifunet.play.gtp_client import GtpProcess

    p = GtpProcess("kifunet gtp --model maddison_tiny --board-size 9 --seed 1", label="kifunet")
    try:
        assert p.ok("name") == "kifunet"
        names = set(p.ok("list_commands").split())
        listed = parse_analyze_commands(p.ok("gogui-analyze_commands"), names)
        assert [k for k, _, _ in listed] == ["gfx", "dboard", "pspairs", "gfx"]
        for cmd in ("boardsize 9", "clear_board", "komi 6.5", "time_settings 60 10 5", "play b E5"):
            assert p.ok(cmd) == ""
        for kind, _, command in listed:
            text = p.ok(command.replace("%m", "w"))
            {"gfx": parse_gfx, "dboard": parse_dboard, "pspairs": parse_pspairs}[kind](text, 9)
        parse_point(p.ok("genmove w"), 9)
        assert p.ok("time_left b 30 0") == ""
        parse_point(p.ok("genmove b"), 9)
        assert float(p.ok("cputime")) > 0
        path = tmp_path / "game.sgf"
        assert p.ok(f"printsgf {path}") == "" and "KM[6.5]" in path.read_text()
        assert p.ok(f"loadsgf {path} 2") == "white" and p.ok("genmove w") and p.ok("undo") == ""
        assert p.command("boardsize 13") == (False, "unacceptable size")  # per-point output biases: 9x9 only
    finally:
        p.close()
    assert p.proc.returncode == 0


def test_the_top_10_labels_are_percentages_that_fit_on_a_point():
    """GoGui writes a ``pspairs`` string on its point and cuts one longer than 3 or 4 characters (``0.1960``
    showed as ``0.19...``): the listed command answers percentages, as the heat map's labels do."""
    pol = Fake()
    e = Engine(pol)
    listed = parse_analyze_commands(ok(e.handle("gogui-analyze_commands")), known(e))
    (command,) = [c for k, _, c in listed if k == "pspairs"]
    pairs = parse_pspairs(ok(e.handle(command.replace("%m", "b"))), 9)
    assert len(pairs) == gtp_gogui.LABELLED_MOVES
    for rc, label in pairs:
        assert len(label) <= 3 and label == gtp_gogui.percent_label(pol.probs[coords.to_flat(rc, 9)]), label
    assert float(pairs[0][1]) > 1  # a percentage, not a probability
    gfx = parse_gfx(ok(e.handle("kifunet-policy_gfx b")), 9)["LABEL"]
    assert {rc: s for rc, s in pairs} == gfx  # the same labels as the heat map's
    assert ok(e.handle("kifunet-policy b 3")).split()[1].startswith("0.")  # kifunet-policy is unchanged


class Heads(Fake):
    """``Fake`` with an ownership head (a fixed map, +1 the side to move) and/or a score head (a fixed margin for
    the side to move), given through ``outputs`` as a net gives them."""

    def __init__(self, ownership: bool = True, score: float | None = None):
        super().__init__()
        rng = np.random.default_rng(2)
        self.own = np.tanh(rng.normal(0, 1, (9, 9))).astype(np.float32) if ownership else None
        self.own_score = score
        self.has_ownership, self.has_score = ownership, score is not None
        self.asked: list = []

    def outputs(self, moves, colour, setup=(), *, symmetries=1):
        from kifunet.models.forward import Outputs

        self.asked.append((list(moves), colour, symmetries))
        return Outputs(np.log(self.probs + 1e-12)[None], None, None if self.own is None else self.own[None],
                       None if self.own_score is None else np.array([self.own_score], np.float32))


def test_the_ownership_and_score_are_listed_only_for_a_net_with_those_heads():
    for pol, want in ((Fake(), set()), (Heads(), {"Ownership (net)"}), (Heads(False, 2.5), {"Score (net)"}),
                      (Heads(True, 2.5), {"Ownership (net)", "Score (net)"})):
        e = Engine(pol)
        listed = parse_analyze_commands(ok(e.handle("gogui-analyze_commands")), known(e))
        assert {label for _, label, _ in listed} & {"Ownership (net)", "Score (net)"} == want
        assert (("gfx", "Ownership (net)", "kifunet-ownership_gfx %m") in listed) == pol.has_ownership
        assert (("string", "Score (net)", "kifunet-score %m") in listed) == pol.has_score
    e = Engine(Fake())
    assert e.handle("kifunet-ownership_gfx b") == "? the net has no ownership head\n\n"
    assert e.handle("kifunet-score w") == "? the net has no score head\n\n"
    e = Engine(Heads(True, None))
    assert e.handle("kifunet-score b") == "? the net has no score head\n\n"
    for bad in ("kifunet-ownership_gfx", "kifunet-ownership_gfx b w", "kifunet-score purple"):
        assert e.handle(bad) == "? syntax error\n\n"


@pytest.mark.parametrize("colour", [BLACK, WHITE])
def test_the_ownership_gfx_draws_black_s_view_and_the_score_as_a_result(colour):
    """INFLUENCE is the head's map from Black's view (the head's own, +1 the side to move, turned for White), every
    point whose ownership reaches MIN_INFLUENCE in size; TEXT the points each side owns and the margin as
    ``B+x.x`` / ``W+x.x``; the position asked about is the game's, with the colour GoGui gave."""
    pol = Heads(True, 3.26)
    e = Engine(pol)
    assert ok(e.handle("play b E5")) == "" and ok(e.handle("play w D4")) == ""
    word, sign = ("b", 1) if colour == BLACK else ("w", -1)
    g = parse_gfx(ok(e.handle(f"kifunet-ownership_gfx {word}")), 9)
    assert pol.asked[-1] == ([(BLACK, coords.to_flat(coords.from_gtp("E5", 9), 9)),
                              (WHITE, coords.to_flat(coords.from_gtp("D4", 9), 9))], colour, 1)
    want = {(r, c): sign * float(pol.own[r, c]) for r in range(9) for c in range(9)
            if abs(pol.own[r, c]) >= gtp_gogui.MIN_INFLUENCE}
    assert set(g["INFLUENCE"]) == set(want) and len(want) > 70
    for rc, v in g["INFLUENCE"].items():
        assert v == pytest.approx(want[rc], abs=5e-4), rc
    black = float(((1 + sign * pol.own) / 2).sum())
    side, result = ("black", "B+3.3") if colour == BLACK else ("white", "W+3.3")
    assert g["TEXT"] == f"{side} to play: ownership (net) Black {black:.1f} points, White {81 - black:.1f}; " \
                        f"score (net) {result}"
    assert ok(e.handle(f"kifunet-score {word}")) == (f"{side} to play: score (net) {result} (+3.3 points for "
                                                     f"{side}, komi as in the net's training games)")
    assert "score" not in parse_gfx(ok(Engine(Heads(True, None)).handle(f"kifunet-ownership_gfx {word}")), 9)["TEXT"]


def test_a_margin_is_written_as_a_result():
    from kifunet.play import head_view

    assert [head_view.margin_text(m) for m in (3.26, -0.5, 0.04, -0.04, 0.05, 120.0)] == \
        ["B+3.3", "W+0.5", "0", "0", "B+0.1", "B+120.0"]
    assert head_view.black_view(2.0, WHITE) == -2.0 and head_view.black_view(2.0, BLACK) == 2.0
    np.testing.assert_array_equal(head_view.black_view(np.array([0.5, -1.0]), WHITE), [-0.5, 1.0])
    assert head_view.owned_points(np.array([[1.0, -1.0], [0.0, 0.5]])) == (2.25, 1.75)
