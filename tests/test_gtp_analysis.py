"""GTP analysis (lz-analyze, kata-analyze, *-genmove_analyze) checked by a strict parser of the formats.

The parser below is written from the format descriptions, not from kifunet's writer: KataGo's GTP_Extensions.md
(lightvector/KataGo), which documents both the lz format (Leela Zero 0.17's) and the kata format, plus what
Sabaki's ``parseAnalysis`` (src/modules/enginesyncer.js) and Lizzie's ``MoveData.fromInfo`` need on top:

* a response is ``=`` or ``=ID`` on its own line, then ``info`` lines, then (genmove_analyze) ``play VERTEX``,
  then an empty line; no empty line inside (it would end the response for every GTP controller);
* one line holds every candidate: ``info KEY VALUE ... pv V V ...``; tokens separated by single spaces
  (Lizzie splits on ``" "``); ``pv`` is the last key of a candidate and runs to the next ``info``;
* every key is a documented one, at most once per candidate;
* lz numbers are integers, ``winrate`` and ``prior`` in 0..10000 (units of 0.01%), ``visits`` and ``order``
  >= 0; kata numbers are decimals with a point and no exponent (Sabaki reads a winrate without a point as lz
  units), ``winrate``, ``prior``, ``lcb`` in [0, 1], ``utility`` in [-1, 1];
* moves and PV moves are GTP vertices on the board (no ``I``) or ``pass``; a PV starts with its move (as in
  every example of the docs) and is not empty (Sabaki drops a candidate whose PV has no vertex);
* ``order`` is 0..k-1 in output order, no move twice, and the priors sum to at most 1 (plus half a unit of
  rounding per candidate: the docs say "rounded").
"""

from __future__ import annotations

import io
import queue
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from kifunet.data_prep import coords
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import gtp_analysis
from kifunet.play.gtp_engine import Engine
from kifunet.play.move_choice import own_eyes
import gtp_fakes

# --- the strict parser ------------------------------------------------------------------------------------------
VERTEX = re.compile(r"^(pass|[A-HJ-T](1[0-9]|[1-9]))$")
UINT = re.compile(r"^\d+$")
INT = re.compile(r"^-?\d+$")
DECIMAL = re.compile(r"^-?\d+\.\d+$")

LZ_KEYS = {"move": VERTEX, "visits": UINT, "winrate": UINT, "prior": UINT, "lcb": INT, "order": UINT}
LZ_REQUIRED = {"move", "visits", "winrate", "prior", "lcb", "order"}
KATA_KEYS = {"move": VERTEX, "visits": UINT, "utility": DECIMAL, "winrate": DECIMAL, "scoreMean": DECIMAL,
             "scoreStdev": DECIMAL, "scoreLead": DECIMAL, "scoreSelfplay": DECIMAL, "prior": DECIMAL,
             "lcb": DECIMAL, "utilityLcb": DECIMAL, "order": UINT, "isSymmetryOf": VERTEX}
KATA_REQUIRED = {"move", "visits", "utility", "winrate", "prior", "lcb", "order"}


def on_board(v: str, n: int) -> bool:
    if v == "pass":
        return True
    return "ABCDEFGHJKLMNOPQRST".index(v[0]) < n and 1 <= int(v[1:]) <= n


def parse_info_line(line: str, fmt: str, n: int) -> list[dict]:
    """One ``info`` line -> candidates ``{key: value, 'pv': [...]}``; AssertionError on any deviation."""
    keys = LZ_KEYS if fmt == "lz" else KATA_KEYS
    required = LZ_REQUIRED if fmt == "lz" else KATA_REQUIRED
    tokens = line.split(" ")
    assert "" not in tokens, f"not single-space separated: {line!r}"
    assert tokens[0] == "info", line
    cands, i = [], 0
    while i < len(tokens):
        assert tokens[i] == "info", f"expected 'info' at token {i}: {line!r}"
        i += 1
        c: dict = {}
        while True:
            assert i < len(tokens), f"candidate without pv: {line!r}"
            key = tokens[i]
            if key == "pv":
                i += 1
                pv = []
                while i < len(tokens) and tokens[i] != "info":
                    pv.append(tokens[i])
                    i += 1
                c["pv"] = pv
                break
            assert key in keys, f"unknown key {key!r}"
            assert key not in c, f"key {key!r} twice"
            assert i + 1 < len(tokens), f"key {key!r} without value"
            value = tokens[i + 1]
            assert keys[key].match(value), f"{key} {value!r} is not a valid {fmt} value"
            c[key] = value
            i += 2
        assert required <= set(c), f"missing {sorted(required - set(c))}"
        assert on_board(c["move"], n), c["move"]
        assert c["pv"] and c["pv"][0] == c["move"], f"pv {c['pv']} of {c['move']}"
        for v in c["pv"]:
            assert VERTEX.match(v) and on_board(v, n), f"pv move {v!r}"
        if fmt == "lz":
            for key in ("winrate", "prior"):
                assert 0 <= int(c[key]) <= 10000, (key, c[key])
        else:
            for key in ("winrate", "prior", "lcb"):
                assert 0.0 <= float(c[key]) <= 1.0, (key, c[key])
            assert -1.0 <= float(c["utility"]) <= 1.0
        cands.append(c)
    assert [int(c["order"]) for c in cands] == list(range(len(cands))), "order must be 0..k-1 in output order"
    moves = [c["move"] for c in cands]
    assert len(set(moves)) == len(moves), f"a move twice: {moves}"
    if fmt == "lz":
        priors, slack = [int(c["prior"]) / 10000 for c in cands], 0.5 / 10000 * len(cands)
    else:  # half a unit of each value's last decimal
        priors = [float(c["prior"]) for c in cands]
        slack = sum(0.5 * 10.0 ** -len(c["prior"].split(".")[1]) for c in cands)
    assert sum(priors) <= 1 + slack, f"priors sum to {sum(priors)}"
    return cands


def parse_response(text: str, fmt: str, n: int, *, genmove: bool = False) -> tuple[str, list[list[dict]], str | None]:
    """A whole analysis response -> (id, blocks, played vertex or None)."""
    assert text.endswith("\n\n") and not text.endswith("\n\n\n"), repr(text[-40:])
    lines = text[:-2].split("\n")
    head = re.match(r"^=(\d*)$", lines[0])
    assert head, f"first line {lines[0]!r}"
    assert "" not in lines, "an empty line inside the response"
    played = None
    if genmove:
        m = re.match(r"^play (\S+)$", lines[-1])
        assert m and (VERTEX.match(m.group(1)) or m.group(1) == "resign"), lines[-1]
        played, lines = m.group(1), lines[:-1]
    blocks = [parse_info_line(line, fmt, n) for line in lines[1:]]
    return head.group(1), blocks, played


def test_the_parser_rejects_what_the_docs_forbid():
    ok = "info move D4 visits 3 winrate 5000 prior 2500 lcb 4900 order 0 pv D4 E5"
    assert parse_info_line(ok, "lz", 9)[0]["pv"] == ["D4", "E5"]
    bad = [ok.replace("visits", "vistis"), ok.replace("5000", "0.5"), ok.replace("2500", "12000"),
           ok.replace("D4 E5", "E5"), ok.replace(" pv D4 E5", ""), ok.replace("D4 E5", "D4 I5"),
           ok.replace("order 0", "order 1"), ok + " " + ok, ok.replace(" ", "  ", 1), ok.replace("D4 E5", "D4 K1"),
           ok + " info move E5 visits 1 winrate 1 prior 9000 lcb 1 order 1 pv E5"]
    for line in bad:
        with pytest.raises(AssertionError):
            parse_info_line(line, "lz", 9)
    kata = "info move D4 visits 3 utility 0.0 winrate 0.5 prior 0.25 lcb 0.5 order 0 pv D4"
    parse_info_line(kata, "kata", 9)
    for line in (kata.replace("0.5 prior", "1 prior"), kata.replace("0.25", "2.5e-01"),
                 kata.replace("winrate 0.5", "winrate 5000")):
        with pytest.raises(AssertionError):
            parse_info_line(line, "kata", 9)


# --- fake policies ------------------------------------------------------------------------------------------------
def flat(v: str, n: int = 9) -> int:
    return coords.to_flat(coords.from_gtp(v, n), n)


def gtp(f: int, n: int = 9) -> str:
    return coords.to_gtp(coords.from_flat(f, n), n)


class FakePolicy(gtp_fakes.FakePolicy):
    """Fixed probabilities (distinct, so the order is unambiguous); with ``value``, a value per position."""

    def __init__(self, n=9, seed=0, has_pass=False, value=None):
        rng = np.random.default_rng(seed)
        p = rng.random(n * n + 1) + 0.05
        p[:3] = 1e-9  # A9 B9 C9 (on 9x9): priors that round to 0 visits
        p[-1] = np.sort(p[:-1])[-3] - 1e-6 if has_pass else 0.0  # pass: the third most probable move
        self.probs = p / p.sum()
        self.board_size, self.has_pass, self.description = n, has_pass, "fake"
        self.value = value  # None or f(moves, colour) -> float in [-1, 1]
        self.has_value = value is not None
        self.calls = 0

    def evaluate(self, moves, colour, setup=(), *, symmetries=1):
        self.calls += 1
        v = None if self.value is None else self.value(list(moves), colour)
        return self.probs, v

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        return self.evaluate(moves, colour, setup)[0]


def ranked(pol: FakePolicy, board: Board, colour: int) -> list[int]:
    """genmove's candidates by decreasing probability: legal, not an own eye, pass only with a pass output."""
    ok = board.legal_moves(colour)
    ok[:-1] &= ~own_eyes(board, colour)
    ok[-1] &= pol.has_pass
    return [int(m) for m in np.argsort(-pol.probs, kind="stable") if ok[m]]


# --- formats -----------------------------------------------------------------------------------------------------
def test_lz_and_kata_lines_carry_the_policy_without_a_value_head():
    pol = FakePolicy()
    e = Engine(pol)
    assert e.handle("play b E5") == "= \n\n"
    cid, blocks, _ = parse_response(e.handle("7 lz-analyze 50"), "lz", 9)
    assert cid == "7" and len(blocks) == 1
    cands = blocks[0]
    b = Board(9)
    b.play(flat("E5"), BLACK)
    top = ranked(pol, b, WHITE)[: gtp_analysis.DEFAULT_CANDIDATES]  # white to move after black's E5
    assert [c["move"] for c in cands] == [gtp(m) for m in top]
    for c, m in zip(cands, top):
        assert int(c["prior"]) == round(10000 * pol.probs[m])
        assert int(c["visits"]) == max(1, round(1000 * pol.probs[m]))
        assert c["winrate"] == c["lcb"] == "5000" and c["pv"] == [c["move"]]
    _, kblocks, _ = parse_response(e.handle("kata-analyze"), "kata", 9)
    for c, m in zip(kblocks[0], top):
        assert float(c["prior"]) == pytest.approx(pol.probs[m], abs=5e-7)
        assert (c["winrate"], c["lcb"], c["utility"]) == ("0.500000", "0.500000", "0.000000")
        assert not {"scoreLead", "scoreMean"} & set(c)  # no score head: no score
    assert "no value head" in e.handle("version")
    # every candidate: 80 empty points, no pass (the net has no pass output), at least one visit each
    _, blocks, _ = parse_response(e.handle("lz-analyze 50 minmoves 100"), "lz", 9)
    assert [c["move"] for c in blocks[0]] == [gtp(m) for m in ranked(pol, b, WHITE)] and len(blocks[0]) == 80
    assert {c["move"]: (c["visits"], c["prior"]) for c in blocks[0]}["A9"] == ("1", "0")


def test_candidates_and_replies_never_fill_their_own_eye():
    pol = FakePolicy(n=5, seed=1)
    a5 = flat("A5", 5)
    pol.probs[a5] = 0.5  # the net's favourite point is black's own eye (a suicide for white)
    pol.probs /= pol.probs.sum()
    e = Engine(pol, analysis_blocks=2)
    for cmd in ("play b B5", "play w E1", "play b A4", "play w E2", "play b B4", "play w E3"):
        assert e.handle(cmd) == "= \n\n"
    board = e.state.board.copy()
    assert own_eyes(board, BLACK)[a5] and not board.is_legal(a5, WHITE)
    _, blocks, played = parse_response(e.handle("lz-genmove_analyze B 10 minmoves 30"), "lz", 5, genmove=True)
    assert [c["move"] for c in blocks[0]] == [gtp(m, 5) for m in ranked(pol, board, BLACK)][:30]
    assert "A5" not in {c["move"] for c in blocks[0]} and played == blocks[0][0]["move"]
    assert e.handle("undo") == "= \n\n"
    _, blocks, _ = parse_response(e.handle("lz-analyze W 10"), "lz", 5)
    for c in blocks[1]:  # black's reply to each white candidate: the best point that is not its own eye
        after = board.copy()
        after.play(flat(c["move"], 5), WHITE)
        assert c["pv"][1] == gtp(ranked(pol, after, BLACK)[0], 5) != "A5", c["pv"]


def test_argument_forms_sabaki_and_lizzie_send():
    pol = FakePolicy()
    e = Engine(pol)
    base = [gtp(m) for m in ranked(pol, Board(9), BLACK)]
    wbase = [gtp(m) for m in ranked(pol, Board(9), WHITE)]
    for cmd, fmt, k in [("lz-analyze B 50", "lz", 10), ("lz-analyze 100", "lz", 10), ("1 lz-analyze b", "lz", 10),
                        ("kata-analyze W interval 50", "kata", 10), ("kata-analyze B 50 ownership true", "kata", 10),
                        ("lz-analyze 10 ownership true", "lz", 10), ("lz-analyze black 0.5", "lz", 10),
                        ("lz-analyze interval 20 minmoves 15", "lz", 15), ("kata-analyze w 50 maxmoves 3", "kata", 3),
                        ("lz-analyze B 50 minmoves 5 maxmoves 4", "lz", 4),
                        ("kata-analyze B 50 pvVisits false rootInfo true", "kata", 10)]:
        _, blocks, _ = parse_response(e.handle(cmd), fmt, 9)
        moves = [c["move"] for c in blocks[0]]
        assert moves == (wbase if " w" in cmd.lower() else base)[:k], cmd
    # maxmoves 0: no info line at all (never an empty one)
    assert e.handle("lz-analyze B 50 maxmoves 0") == "= \n\n"
    # the interval, raised to the minimum; None without one
    for args, seconds in [(["50"], 0.5), (["B", "100"], 1.0), (["interval", "0"], 0.1), (["W", "interval", "250"], 2.5),
                          (["b"], None), ([], None)]:
        assert gtp_analysis.parse_request("lz", args, 9).interval_s == seconds, args
    # avoid and allow are honoured at ply 1
    _, blocks, _ = parse_response(e.handle(f"lz-analyze 10 avoid b {base[0]},{base[2]} 1"), "lz", 9)
    assert [c["move"] for c in blocks[0]] == [v for v in base if v not in (base[0], base[2])][:10]
    _, blocks, _ = parse_response(e.handle("kata-analyze B 50 allow b A1,J9,E5 999 allow w C3 999"), "kata", 9)
    assert sorted(c["move"] for c in blocks[0]) == ["A1", "E5", "J9"]
    _, blocks, _ = parse_response(e.handle(f"lz-analyze W 50 avoid b {wbase[0]} 1"), "lz", 9)  # other colour
    assert blocks[0][0]["move"] == wbase[0]
    for bad in ["lz-analyze B 50 interval", "lz-analyze B 50 bogus 1", "lz-analyze B -5", "lz-analyze B 50 maxmoves x",
                "kata-analyze B 50 ownership maybe", "lz-analyze 10 avoid b D4 0", "lz-analyze 10 avoid x D4 1",
                "lz-analyze 10 avoid b Z9 1", "lz-analyze 10 avoid b D4", "lz-analyze 10 interval nan",
                "kata-analyze 10 allow b D4 1 avoid b E5 1", "kata-analyze 10 allow b D4 1 allow b E5 1",
                "lz-genmove_analyze B 10 bogus 1", "lz-analyze 50 B"]:
        assert e.handle(bad).startswith("? syntax error"), bad
        assert e.handle("7 " + bad).startswith("?7 syntax error"), bad
    assert e.state.moves == []  # nothing played by any of it


def test_pv_deepens_one_move_a_block_and_replays_legally():
    pol = FakePolicy(n=5, seed=3)
    e = Engine(pol, analysis_blocks=8, analysis_pv=5)
    for cmd in ("play b C3", "play w B2"):
        assert e.handle(cmd) == "= \n\n"
    _, blocks, _ = parse_response(e.handle("lz-analyze 10 avoid w A1,E5 3"), "lz", 5)
    assert len(blocks) == 8
    for b, block in enumerate(blocks, start=1):
        assert all(len(c["pv"]) == min(b, 5) for c in block), b
    for c in blocks[-1]:
        board = Board(5)
        board.play(flat("C3", 5), BLACK)
        board.play(flat("B2", 5), WHITE)
        colour = BLACK
        for ply, v in enumerate(c["pv"], start=1):
            p = flat(v, 5)
            assert board.is_legal(p, colour) and not own_eyes(board, colour)[p], (c["pv"], v)
            if ply > 1:  # a reply is the most probable allowed point
                allowed = board.legal_moves(colour)[:25] & ~own_eyes(board, colour)
                if colour == WHITE and ply <= 3:
                    allowed[[flat("A1", 5), flat("E5", 5)]] = False
                assert p == max(np.flatnonzero(allowed), key=lambda q: pol.probs[q]), (c["pv"], v)
            board.play(p, colour)
            colour = 3 - colour


def test_winrate_comes_from_the_value_of_the_position_after_each_move():
    def value(moves, colour):  # for the side to move; depends on the last move so that candidates differ
        return float(np.tanh((moves[-1][1] % 7 - 3) / 2)) if moves else 0.25

    pol = FakePolicy(value=value)
    e = Engine(pol)
    assert "; value head)" in e.handle("version")
    assert e.handle("play b C3") == "= \n\n"
    _, blocks, _ = parse_response(e.handle("lz-analyze 50"), "lz", 9)
    _, kblocks, _ = parse_response(e.handle("kata-analyze 50"), "kata", 9)
    for c, k in zip(blocks[0], kblocks[0]):
        after = value([(BLACK, flat("C3")), (WHITE, flat(c["move"]))], BLACK)  # for black, to move after it
        w = (1 - after) / 2  # for white, the analysed colour
        assert int(c["winrate"]) == round(10000 * w) == int(c["lcb"])
        assert float(k["winrate"]) == pytest.approx(w, abs=1e-6)
        assert float(k["utility"]) == pytest.approx(2 * w - 1, abs=1e-6)
    assert len({c["winrate"] for c in blocks[0]}) > 1


def test_scripted_session_ids_analysis_genmove_analyze_undo_and_cleanup():
    pol = FakePolicy(has_pass=True)
    e = Engine(pol, analysis_blocks=2)
    listed = e.handle("1 list_commands")[3:].split()
    for cmd in ("lz-analyze", "kata-analyze", "lz-genmove_analyze", "kata-genmove_analyze", "undo",
                "kgs-genmove_cleanup"):
        assert cmd in listed and e.handle(f"known_command {cmd}") == "= true\n\n"
    assert e.handle("2 play b D4") == "=2 \n\n"
    cid, blocks, _ = parse_response(e.handle("3 lz-analyze W 20"), "lz", 9)
    assert cid == "3" and len(blocks) == 2
    assert any(c["move"] == "pass" and c["pv"] == ["pass"] for c in blocks[0])  # a net with a pass output
    cid, blocks, played = parse_response(e.handle("4 lz-genmove_analyze W 10"), "lz", 9, genmove=True)
    assert cid == "4" and len(blocks) == 1 and played == blocks[0][0]["move"]  # arg-max: the order-0 candidate
    assert e.state.moves[-1] == (WHITE, flat(played))
    cid, blocks, played2 = parse_response(e.handle("5 kata-genmove_analyze"), "kata", 9, genmove=True)
    assert e.state.moves[-1] == (BLACK, flat(played2))  # no colour: the side to move (black, after white)
    assert blocks[0][0]["move"] == played2
    assert e.handle("6 kata-analyze b 10").startswith("=6\ninfo ")
    assert e.handle("7 undo") == "=7 \n\n" and e.handle("8 undo") == "=8 \n\n"
    assert e.state.moves == [(BLACK, flat("D4"))]
    assert e.handle("9 kgs-genmove_cleanup w").startswith("=9 ")
    assert e.handle("10 undo") == "=10 \n\n" and e.handle("11 undo") == "=11 \n\n"
    assert e.handle("12 undo") == "?12 cannot undo\n\n"
    # after handicap stones white moves first
    assert e.handle("fixed_handicap 2").startswith("= ")
    _, blocks, played = parse_response(e.handle("lz-genmove_analyze"), "lz", 9, genmove=True)
    assert e.state.moves == [(WHITE, flat(played))]


class LineFeed:
    """stdin for :meth:`Engine.serve` that hands over the lines the test puts, when it puts them."""

    def __init__(self):
        self.q: queue.Queue = queue.Queue()

    def __iter__(self):
        while (line := self.q.get()) is not None:
            yield line


class Recorder(io.TextIOBase):
    def __init__(self):
        self.lines: queue.Queue = queue.Queue()
        self.buf = ""

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.lines.put(line)
        return len(s)


def next_line(q: queue.Queue, timeout=10.0) -> str:
    return q.get(timeout=timeout)


def test_serve_streams_a_block_every_interval_until_the_next_line():
    e = Engine(FakePolicy(), analysis_pv=3)
    feed, out = LineFeed(), Recorder()
    t = threading.Thread(target=e.serve, args=(feed, out), daemon=True)
    t.start()
    feed.q.put("1 lz-analyze B 10\n")
    assert next_line(out.lines) == "=1"
    t0 = time.monotonic()
    infos = [next_line(out.lines) for _ in range(4)]  # one at once, then one every 0.1 s
    assert time.monotonic() - t0 >= 0.25
    pvs = [[len(c["pv"]) for c in parse_info_line(x, "lz", 9)] for x in infos]
    assert pvs[0] == [1] * 10 and pvs[1] == [2] * 10 and pvs[3] == [3] * 10  # deepens, up to analysis_pv
    feed.q.put("2 name\n")  # Lizzie's stop
    rest = []
    while (line := next_line(out.lines)) != "":
        rest.append(line)
    assert all(x.startswith("info move ") for x in rest)
    assert next_line(out.lines) == "=2 kifunet" and next_line(out.lines) == ""
    # an empty line stops an analysis and gets no answer; without interval one block, then silence
    feed.q.put("kata-analyze W\n")
    assert next_line(out.lines) == "=" and next_line(out.lines).startswith("info move ")
    with pytest.raises(queue.Empty):
        next_line(out.lines, timeout=0.3)
    feed.q.put("\n")
    assert next_line(out.lines) == ""
    feed.q.put("3 protocol_version\n")  # Sabaki's stop
    assert next_line(out.lines) == "=3 2" and next_line(out.lines) == ""
    # genmove_analyze is synchronous while streaming too; end of input ends an analysis cleanly
    feed.q.put("4 kata-genmove_analyze B 10\n")
    lines = [next_line(out.lines) for _ in range(4)]
    assert lines[0] == "=4" and lines[1].startswith("info ") and lines[2].startswith("play ") and lines[3] == ""
    # a net that fails while an analysis repeats: the analysis stops repeating, the session goes on
    pv_calls = e.policy.calls
    feed.q.put("lz-analyze 10\n")
    assert next_line(out.lines) == "=" and next_line(out.lines).startswith("info ")
    e.policy.value = lambda moves, colour: 1 / 0  # from the next evaluation on (extending the PVs)
    with pytest.raises(queue.Empty):
        next_line(out.lines, timeout=0.3)
    assert e.policy.calls > pv_calls
    e.policy.value = None
    feed.q.put("5 name\n")
    assert [next_line(out.lines) for _ in range(3)] == ["", "=5 kifunet", ""]
    feed.q.put("lz-analyze 10\n")
    assert next_line(out.lines) == "="
    feed.q.put(None)
    t.join(timeout=10)
    assert not t.is_alive()
    assert out.buf == "" and list(out.lines.queue)[-1] == ""  # the response was ended before serve returned


# --- a value head in a real net -----------------------------------------------------------------------------------
def test_policy_reads_a_value_head_from_a_tuple_output():
    import dataclasses

    import jax.numpy as jnp
    from flax import nnx

    from kifunet import models
    from kifunet.play.policy import Policy

    class WithValue(nnx.Module):
        def __init__(self, net):
            self.net, self.board_size, self.in_planes = net, net.board_size, net.in_planes
            self.facts = dataclasses.replace(net.facts, has_value=True)

        def __call__(self, planes, rank=None, to_move=None, profile=None):
            z = self.net(planes, rank=rank, to_move=to_move).logits
            return models.Outputs(z, jnp.tanh(z[:, 0] - z[:, 1]))

    # (a net without a value head: the subprocess test's version line and winrates)
    valued = Policy(WithValue(models.create("maddison_tiny", board_size=5, rngs=nnx.Rngs(0))), "maddison", 5)
    assert valued.has_value and valued.has_pass is False
    moves = [(BLACK, 12), (WHITE, 6)]
    p, v = valued.evaluate(moves, BLACK)
    z = valued.logits(moves, BLACK).astype(np.float64)
    assert z.shape == (26,) and v == pytest.approx(float(np.tanh(z[0] - z[1])), abs=1e-5) and -1 <= v <= 1
    np.testing.assert_allclose(p, np.exp(z - z.max()) / np.exp(z - z.max()).sum(), rtol=1e-9)
    np.testing.assert_array_equal(valued.probabilities(moves, BLACK), p)
    e = Engine(valued)
    assert e.handle("play b C3") == e.handle("play w B4") == "= \n\n" and e.state.moves == moves
    _, blocks, _ = parse_response(e.handle("kata-analyze maxmoves 2"), "kata", 5)
    for c in blocks[0]:
        after = valued.evaluate(moves + [(BLACK, flat(c["move"], 5))], WHITE)[1]
        assert float(c["winrate"]) == pytest.approx((1 - after) / 2, abs=1e-6)


# --- the real program ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_kifunet_gtp_process_analysis_session():
    """``kifunet gtp`` as Sabaki and Lizzie run it: streamed analysis stopped by the next command, genmove_analyze,
    undo, cleanup, ids echoed, plain GTP around it; stdout carries GTP responses only (every line read here
    belongs to one, and nothing follows ``quit``'s)."""
    cmd = [sys.executable, "-m", "kifunet.cli", "gtp", "--model", "maddison_tiny", "--board-size", "9", "--seed", "3"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x.rstrip("\n")) for x in proc.stdout] + [lines.put(None)],
                     daemon=True).start()

    def send(cmd):
        proc.stdin.write(cmd + "\n")
        proc.stdin.flush()

    def response(first_timeout=20.0):
        out = [lines.get(timeout=first_timeout)]
        while out[-1] != "":
            out.append(lines.get(timeout=20))
        return "\n".join(out) + "\n"

    try:
        send("1 protocol_version")
        assert response(first_timeout=240) == "=1 2\n\n"  # the net loads (and compiles) before the first answer
        send("1 name")
        assert response() == "=1 kifunet\n\n"
        send("version")
        assert response().endswith("(maddison_tiny (random weights, seed 3); no value head: analysis winrate 0.5 is "
                                   "not an estimate)\n\n")
        send("boardsize 9")
        assert response() == "= \n\n"
        send("2 play b E5")
        send("3 lz-analyze W 10")
        assert response() == "=2 \n\n"
        assert lines.get(timeout=20) == "=3"
        infos = [lines.get(timeout=20) for _ in range(3)]  # streamed: a block every 0.1 s
        send("4 name")  # Lizzie's stop
        text = "=3\n" + "\n".join(infos) + "\n" + response()
        _, blocks, _ = parse_response(text, "lz", 9)
        assert len(blocks) >= 3 and all(len(b) == gtp_analysis.DEFAULT_CANDIDATES for b in blocks)
        assert {c["winrate"] for b in blocks for c in b} == {"5000"}
        assert "E5" not in {c["move"] for b in blocks for c in b}
        assert response() == "=4 kifunet\n\n"
        send("kata-analyze B interval 10 maxmoves 4 ownership true")
        assert lines.get(timeout=20) == "="
        first = lines.get(timeout=20)
        send("")  # an empty line stops it too, with no response of its own
        text = "=\n" + first + "\n" + response()
        _, blocks, _ = parse_response(text, "kata", 9)
        assert all(len(b) == 4 for b in blocks)
        send("5 lz-genmove_analyze W 10")
        _, blocks, played = parse_response(response(), "lz", 9, genmove=True)
        assert played == blocks[0][0]["move"] and played != "E5"
        send("6 kata-genmove_analyze")
        _, blocks, played2 = parse_response(response(), "kata", 9, genmove=True)
        assert played2 not in ("E5", played)
        for i in (7, 8):
            send(f"{i} undo")
            assert response() == f"={i} \n\n"
        send("9 kgs-genmove_cleanup w")
        assert re.match(r"^=9 [A-HJ]\d\n\n$", response())
        send("10 list_commands")
        assert {"lz-analyze", "kata-analyze", "lz-genmove_analyze", "kata-genmove_analyze"} <= set(response().split())
        send("7 genmove b")
        assert re.match(r"^=7 [A-HJ]\d\n\n$", response())
        send("final_score")
        assert re.match(r"^= (W\+|B\+)\d+(\.\d)?\n\n$", response())
        send("nonsense")
        assert response() == "? unknown command\n\n"
        send("11 quit")
        assert response() == "=11 \n\n"
        assert proc.wait(timeout=20) == 0 and lines.get(timeout=5) is None
    finally:
        proc.kill()
        proc.wait()
