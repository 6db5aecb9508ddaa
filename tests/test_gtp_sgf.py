"""``loadsgf`` and ``printsgf``: a KGS-style record loaded at a move number and at a vertex (checked against GNU Go
3.8, the reference implementation, where it is installed), the engine's game round-tripped, and every failure one
line that changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require_gnugo

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import gtp_sgf
from kifunet.play.gtp_client import GtpProcess
from kifunet.play.gtp_engine import Engine
from gtp_fakes import FakePolicy

# A record as KGS writes it (CGoban 3): root properties over several lines, handicap 2 (White first), a comment
# with an escaped bracket, time left on every move (BL/WL); 53 moves, the 51st (W T1) capturing four black stones.
_MOVES = ("W[dd] B[qp] W[fq] B[cn] W[dj] B[qf] W[nc] B[pc] W[nd] B[pj] W[jq] B[jp] W[iq] B[ip] W[hq] B[kq] W[kr] "
          "B[lr] W[jr] B[lq] W[hp] B[ho] W[go] B[hn] W[gn] B[gm] W[fm] B[gl] W[qq] B[pq] W[qr] B[rq] W[pr] B[rr] "
          "W[or] B[rs] W[qo] B[po] W[qn] B[pn] W[rp] B[qs] W[ps] B[rn] W[ro] B[qm] W[sq] B[de] W[sr] B[ed] W[ss] "
          "B[gq] W[gp]").split()
KGS_SGF = ("(;GM[1]FF[4]CA[UTF-8]AP[CGoban:3]ST[2]\nRU[Japanese]SZ[19]HA[2]KM[0.50]TM[1800]OT[5x30 byo-yomi]\n"
           "PW[whitebot]PB[blackcat]WR[5d]BR[3d]DT[2015-03-14]PC[The KGS Go Server at http://www.gokgs.com/]"
           "RE[W+Resign]\nAB[dp][pd]C[blackcat [3d\\]: hi, have a good game\n]\n"
           + "\n".join(f";{m}{m[0]}L[{1700 - 7 * i}]" for i, m in enumerate(_MOVES)) + ")\n")


class Fake(FakePolicy):
    """A policy for any of ``sizes`` (the engine only needs its size for these commands)."""

    def __init__(self, n=19, sizes=(9, 19)):
        self.board_size, self.has_pass, self.description, self.sizes = n, False, "fake", sizes
        self.trained_size = 19

    def size_problem(self, n):
        return None if n in self.sizes else f"not {n}x{n}"

    def resized(self, n):
        return Fake(n, self.sizes)

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        p = np.linspace(1, 2, self.board_size ** 2 + 1)
        return p / p.sum()


@pytest.fixture
def kgs_file(tmp_path):
    path = tmp_path / "kgs game.sgf"  # a space in the name: GoGui quotes it
    path.write_text(KGS_SGF, encoding="utf-8")
    return path


def stones(e: Engine) -> tuple[set, set]:
    st = e.state.board.stones
    n = e.size
    pts = lambda c: {coords.to_gtp((r, col), n) for r, col in zip(*np.nonzero(st == c))}  # noqa: E731
    return pts(BLACK), pts(WHITE)


@pytest.mark.parametrize("until, to_play, moves", [("", "black", 53), ("1", "white", 0), ("0", "white", 0),
                                                   ("2", "black", 1), ("20", "black", 19), ("100", "black", 53),
                                                   ("T1", "white", 50), ("Q1", "white", 42), ("A1", "black", 53)])
def test_loadsgf_of_a_kgs_record_at_a_move_number_and_a_vertex(kgs_file, until, to_play, moves):
    e = Engine(Fake())
    assert e.handle(f'7 loadsgf "{kgs_file}" {until}') == f"=7 {to_play}\n\n"
    assert len(e.state.moves) == moves and e.komi == 0.5
    handicap = sorted(coords.to_flat(coords.from_sgf(v, 19), 19) for v in ("dp", "pd"))
    assert sorted(p for _, p in e.state.setup) == handicap
    black, white = stones(e)
    assert {"D4", "Q16"} <= black
    if moves == 53:
        assert not {"Q1", "S1", "S2", "S3"} & black and {"T1", "T2"} <= white  # W T1 took four stones
        assert e.state.board.captures(WHITE) + e.state.board.captures(BLACK) == 4
    assert e.handle("genmove b" if to_play == "black" else "genmove w").startswith("= ")
    assert e.handle("undo") == "= \n\n"  # the loaded moves are the engine's history


def test_the_same_positions_as_gnu_go(kgs_file):
    """GNU Go 3.8 defines loadsgf (its manual): the answered colour and every stone agree with it."""
    require_gnugo()
    gnugo = GtpProcess("gnugo --mode gtp", label="gnugo")
    try:
        e = Engine(Fake())
        path = str(kgs_file).replace(" ", "_")
        kgs_file.rename(path)
        for until in ("", "1", "2", "20", "T1", "Q1", "A1"):
            want = gnugo.ok(f"loadsgf {path} {until}")
            assert e.handle(f"loadsgf {path} {until}") == f"= {want}\n\n", until
            assert stones(e) == tuple(set(gnugo.ok(f"list_stones {c}").split()) for c in ("black", "white")), until
    finally:
        gnugo.close()


def test_printsgf_then_loadsgf_gives_the_same_position(tmp_path):
    e = Engine(Fake(9))
    script = ["komi 5.5", "fixed_handicap 2", "play w E5", "play b D5", "play w pass", "play b E6", "play w F5",
              "play b E4", "play w D4", "genmove b", "play w C5", "play b D6", "play w pass"]
    for cmd in script:
        assert e.handle(cmd).startswith("= "), cmd
    text = e.handle("printsgf")
    assert text.startswith("= (;") and text.endswith(")\n\n") and "\n\n" not in text[:-2]
    sgf_text = text[2:-2]
    assert "KM[5.5]" in sgf_text and "SZ[9]" in sgf_text and "HA[2]" in sgf_text and "RU[Chinese]" in sgf_text
    path = tmp_path / "my game.sgf"
    assert e.handle(f'printsgf "{path}"') == "= \n\n" and path.read_text().strip() == sgf_text
    before = (e.state.board.stones.copy(), list(e.state.moves), sorted(e.state.setup), e.komi, e.state.board.ko)
    other = Engine(Fake(19))
    assert other.handle(f'loadsgf "{path}"') == "= black\n\n"  # white passed last
    after = (other.state.board.stones, other.state.moves, sorted(other.state.setup), other.komi, other.state.board.ko)
    assert other.size == 9 and np.array_equal(before[0], after[0]) and before[1:] == after[1:]
    # and the same with no moves: White plays first after the handicap
    assert e.handle("clear_board") == "= \n\n" and e.handle("fixed_handicap 3").startswith("= ")
    e.handle(f'printsgf "{path}"')
    assert other.handle(f'loadsgf "{path}"') == "= white\n\n" and other.state.moves == []
    # an even game's setup (AB and AW, no HA): Black first
    (tmp_path / "setup.sgf").write_text("(;SZ[9]KM[7]AB[cc][dd]AW[ee])")
    assert other.handle(f"loadsgf {tmp_path / 'setup.sgf'}") == "= black\n\n" and other.komi == 7.0
    assert other.handle("printsgf").count("HA[") == 0


def test_setup_in_mid_game_becomes_setup_stones(tmp_path):
    path = tmp_path / "edited.sgf"
    path.write_text("(;SZ[9];B[ee];W[cc];AB[gg]AE[cc];W[dd];B[ff])")
    e = Engine(Fake(9))
    assert e.handle(f"loadsgf {path} 3") == "= white\n\n"
    assert e.state.moves == [] and stones(e) == ({"E5", "G3"}, set())
    assert e.handle(f"loadsgf {path}") == "= white\n\n" and len(e.state.moves) == 2


@pytest.mark.parametrize("content, arg, error", [
    (None, "", "cannot open file '{p}': No such file or directory"),
    ("this is not sgf", "", "cannot load file '{p}': not a valid SGF game: no SGF data found"),
    ("(;SZ[9];B[ee];W[ee])", "", "cannot load file '{p}': move 2 (W E5) is illegal: illegal move E5: occupied"),
    ("(;SZ[9];B[zz])", "", "cannot load file '{p}': move 1 (B [zz]) is malformed or off the 9x9 board"),
    ("(;SZ[13];B[ee])", "", "cannot load file '{p}': board size 13x13 is unacceptable: not 13x13"),
    ("(;SZ[9]KM[90.5];B[ee])", "", "cannot load file '{p}': komi 90.5 is out of range: at most 81 in size on 9x9"),
    ("(;SZ[9];B[ee])", "K9", "syntax error: 'K9' is neither a move number nor a vertex of a 9x9 board"),
    ("(;SZ[9];B[ee])", "3 4", "syntax error: loadsgf FILE [MOVE_NUMBER|VERTEX]"),
])
def test_loadsgf_failures_are_one_line_and_change_nothing(tmp_path, content, arg, error):
    p = tmp_path / "x.sgf"
    if content is not None:
        p.write_text(content)
    e = Engine(Fake(19))
    assert e.handle("komi 6.5") == "= \n\n" and e.handle("play b Q16") == "= \n\n"
    reply = e.handle(f"loadsgf {p} {arg}")
    assert reply == f"? {error.format(p=p)}\n\n", reply
    assert e.size == 19 and e.komi == 6.5 and len(e.state.moves) == 1
    assert e.handle("loadsgf") == "? syntax error: loadsgf FILE [MOVE_NUMBER|VERTEX]\n\n"
    assert e.handle('loadsgf "unterminated') == "? syntax error: unterminated quoted file name\n\n"


def test_printsgf_errors(tmp_path):
    e = Engine(Fake(9))
    assert e.handle("printsgf a b") == "? syntax error: printsgf [FILE]\n\n"
    reply = e.handle(f"printsgf {tmp_path / 'no' / 'such' / 'dir.sgf'}")
    where = tmp_path / "no" / "such" / "dir.sgf"
    assert reply.startswith(f"? cannot write file '{where}': ") and reply.count("\n") == 2
    assert e.handle("printsgf -").startswith("= (;")


def test_file_argument_reads_quoted_names():
    assert gtp_sgf.file_argument(['"a', 'b.sgf"', "12"]) == ("a b.sgf", ["12"])
    assert gtp_sgf.file_argument(['"a.sgf"']) == ("a.sgf", [])
    assert gtp_sgf.file_argument(["a.sgf", "D4"]) == ("a.sgf", ["D4"])
    assert gtp_sgf.file_argument([]) == (None, [])
    with pytest.raises(gtp_sgf.LoadError):
        gtp_sgf.file_argument(['"'])


def test_printsgf_keeps_a_loaded_game_s_rules_and_players_and_writes_passes_as_ff4_does(kgs_file):
    """A game loaded with RU[Japanese], PB, PW, BR, WR prints them back (not RU[Chinese], not without players);
    a pass on 19x19 is ``B[]``/``W[]`` (FF[4]), not sgfmill's ``B[tt]``; a new game is the engine's own again."""
    e = Engine(Fake(19))
    assert e.handle(f'loadsgf "{kgs_file}"') == "= black\n\n"
    assert e.handle("play b pass") == e.handle("play w pass") == "= \n\n"
    text = e.handle("printsgf")[2:-2].replace("\n", "")  # sgfmill wraps long lines
    for prop in ("RU[Japanese]", "PB[blackcat]", "PW[whitebot]", "BR[3d]", "WR[5d]", ";B[]", ";W[]"):
        assert prop in text, prop
    assert "RU[Chinese]" not in text and "[tt]" not in text
    other = Engine(Fake(19))  # and the file reads back with the passes and the players
    path = kgs_file.parent / "again.sgf"
    path.write_text(text, encoding="utf-8")
    assert other.handle(f"loadsgf {path}") == "= black\n\n" and other.state.moves == e.state.moves
    assert "PB[blackcat]" in other.handle("printsgf")
    assert e.handle("clear_board") == "= \n\n" and e.handle("play b pass") == "= \n\n"
    text = e.handle("printsgf").replace("\n", "")
    assert "RU[Chinese]" in text and "PB[" not in text and ";B[]" in text
