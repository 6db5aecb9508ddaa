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


def test_docstring_table_19():
    n = 19
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
