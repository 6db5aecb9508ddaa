import re
from pathlib import Path

import pytest

from kifunet.data_prep import coords


@pytest.mark.parametrize("n", [9, 13, 19])
def test_round_trips_every_point(n):
    for flat in range(n * n + 1):
        rc = coords.from_flat(flat, n)
        assert coords.to_flat(rc, n) == flat
        assert coords.from_sgf(coords.to_sgf(rc, n), n) == rc
        assert coords.from_gtp(coords.to_gtp(rc, n), n) == rc
        assert coords.from_sgfmill(coords.to_sgfmill(rc, n), n) == rc


def _page_table() -> dict[str, list[str]]:
    """docs/positions.md's coordinate table: system -> its cells (top-left, bottom-right, example, pass)."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "positions.md").read_text(encoding="utf-8")
    section = page.split("**Coordinates**")[1].split("\n**")[0]
    rows = re.findall(r"^\| (.+?) \| (.+?) \| (.+?) \| (.+?) \| (.+?) \|$", section, re.M)
    return {r[0]: [re.sub(r" \(N = 19\)$", "", c) for c in r[1:]] for r in rows if not r[0].startswith("-")}


def test_coordinate_table_19():
    n = 19
    table = _page_table()
    points = [(0, 0), (18, 18), (3, 15)]
    assert [eval(c, {"N": n}) for c in table["(row, col)"][:3]] == points  # (N-1, N-1) at N = 19
    assert [coords.from_sgf(c.strip("`"), n) for c in table["SGF `xy` (x = col)"][:3]] == points
    assert [coords.from_gtp(c.strip("`"), n) for c in table["GTP (no letter `I`)"][:3]] == points
    assert [eval(c, {"N": n}) for c in table["sgfmill (row, col)"][:3]] == [
        coords.to_sgfmill(rc, n) for rc in points]
    assert coords.from_sgf("aa", n) == (0, 0) == coords.from_gtp("A19", n)
    assert coords.from_sgf("ss", n) == (18, 18) == coords.from_gtp("T1", n)
    assert coords.from_sgf("pd", n) == (3, 15) == coords.from_gtp("Q16", n)
    assert coords.to_flat((3, 15), n) == 3 * 19 + 15
    assert coords.to_sgfmill((3, 15), n) == (15, 15)
    assert coords.pass_index(n) == 361 == coords.to_flat(None, n)
    assert coords.from_sgf("", n) is None and coords.from_sgf("tt", n) is None
    assert coords.from_gtp("pass", n) is None and coords.to_gtp(None, n) == "pass"


def test_gtp_has_no_letter_i():
    assert "I" not in coords.GTP_COLUMNS
    assert coords.from_gtp("J10", 19) == (9, 8)
    with pytest.raises(ValueError):
        coords.from_gtp("I5", 19)


@pytest.mark.parametrize("bad", ["Z1", "A20", "A0", "", "pa"])
def test_bad_gtp_vertex(bad):
    with pytest.raises(ValueError):
        coords.from_gtp(bad, 19)


def test_off_board():
    with pytest.raises(ValueError):
        coords.from_sgf("jj", 9)
    with pytest.raises(ValueError):
        coords.to_flat((9, 0), 9)
    with pytest.raises(ValueError):
        coords.from_flat(82, 9)


@pytest.mark.parametrize("n", [2, 20, 25])
def test_gtp_and_sgf_names_reach_25x25(n):
    """GTP names boards up to 25x25 (columns A..Z without I); the conversions cover them all."""
    assert len(coords.GTP_COLUMNS) == coords.GTP_MAX_SIZE == 25
    for flat in range(n * n + 1):
        rc = coords.from_flat(flat, n)
        assert coords.from_gtp(coords.to_gtp(rc, n), n) == rc
        assert coords.from_sgf(coords.to_sgf(rc, n), n) == rc


def test_25x25_corners_and_the_letters_beyond_t():
    n = 25
    assert coords.from_gtp("A25", n) == (0, 0) and coords.from_gtp("Z1", n) == (24, 24)
    assert coords.to_gtp((24, 24), n) == "Z1" and coords.to_gtp((0, 19), n) == "U25"
    assert coords.to_sgf((24, 24), n) == "yy"
    assert coords.from_sgf("tt", n) == (19, 19)  # a point beyond 19x19, not pass
    assert coords.from_sgf("tt", 19) is None
    for bad in ("I5", "A26", "z0"):
        with pytest.raises(ValueError):
            coords.from_gtp(bad, n)
    with pytest.raises(ValueError):
        coords.from_gtp("U1", 19)  # U is a column of boards above 19 only
    assert coords.MAX_SIZE == 19  # records, datasets and the rules engine stay at 19
