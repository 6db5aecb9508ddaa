"""The time manager: GTP's time commands read, the per-move budget, the symmetries a move affords, the clock."""

from __future__ import annotations

import pytest

from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import time_manager as tm
from kifunet.play.time_manager import Clock, TimeSettings


@pytest.mark.parametrize("args, settings", [
    (["0", "1", "0"], TimeSettings(tm.NONE)),  # GoGui's "no time limit"
    (["300", "0", "0"], TimeSettings(tm.ABSOLUTE, 300)),
    (["0", "0", "0"], TimeSettings(tm.ABSOLUTE, 0)),
    (["600", "30", "5"], TimeSettings(tm.CANADIAN, 600, 30, stones=5)),
    (["0", "60", "10"], TimeSettings(tm.CANADIAN, 0, 60, stones=10)),
])
def test_time_settings_read_as_the_gtp_spec_says(args, settings):
    assert tm.parse_time_settings(args) == settings


@pytest.mark.parametrize("args, settings", [
    (["none"], TimeSettings(tm.NONE)),
    (["absolute", "900"], TimeSettings(tm.ABSOLUTE, 900)),
    (["byoyomi", "1200", "30", "5"], TimeSettings(tm.BYOYOMI, 1200, 30, periods=5)),
    (["BYOYOMI", "0", "10", "3"], TimeSettings(tm.BYOYOMI, 0, 10, periods=3)),
    (["byoyomi", "300", "0", "5"], TimeSettings(tm.ABSOLUTE, 300)),  # no period time: no byo-yomi
    (["canadian", "600", "300", "25"], TimeSettings(tm.CANADIAN, 600, 300, stones=25)),
])
def test_kgs_time_settings(args, settings):
    assert tm.parse_kgs_time_settings(args) == settings


@pytest.mark.parametrize("parse, args, words", [
    (tm.parse_time_settings, ["300", "30"], "takes main_time"),
    (tm.parse_time_settings, ["300", "x", "5"], "byo-yomi time must be a number"),
    (tm.parse_time_settings, ["-5", "30", "5"], ">= 0"),
    (tm.parse_time_settings, ["nan", "30", "5"], "finite"),
    (tm.parse_time_settings, ["300", "30", "2.5"], "whole number"),
    (tm.parse_kgs_time_settings, [], "takes a time system"),
    (tm.parse_kgs_time_settings, ["fischer", "300", "10"], "unknown time system 'fischer'"),
    (tm.parse_kgs_time_settings, ["byoyomi", "300", "30"], "takes 3 numbers, not 2"),
    (tm.parse_kgs_time_settings, ["none", "5"], "takes 0 numbers, not 1"),
    (tm.parse_time_left, ["b", "10"], "takes colour time stones"),
    (tm.parse_time_left, ["b", "ten", "0"], "time must be a number"),
    (tm.parse_time_left, ["b", "10", "-1"], "whole number"),
])
def test_bad_arguments_name_the_problem(parse, args, words):
    with pytest.raises(ValueError, match=words):
        parse(args)


def test_time_left_reads_a_negative_time_as_zero():
    assert tm.parse_time_left(["w", "12.5", "3"]) == ("w", 12.5, 3)
    assert tm.parse_time_left(["b", "-2", "0"]) == ("b", 0.0, 0)


def test_moves_to_go():
    assert tm.moves_to_go(19, 0) == 0.75 * 361 / 2  # 135.375
    assert tm.moves_to_go(19, 200) == pytest.approx((270.75 - 200) / 2)
    assert tm.moves_to_go(19, 300) == 361 / 16  # the floor
    assert tm.moves_to_go(9, 0) == 0.75 * 81 / 2


def test_move_budget_in_each_time_system():
    budget = tm.move_budget
    assert budget(TimeSettings(), None, board_size=19, moves_played=0) is None
    absolute = TimeSettings(tm.ABSOLUTE, 300)
    # 300 s over 135.375 moves, minus the lag, halved
    assert budget(absolute, Clock(300), board_size=19, moves_played=0) == pytest.approx((300 / 135.375 - 0.1) * 0.5)
    assert budget(absolute, Clock(0.05), board_size=19, moves_played=250) == 0.0  # less than the lag: nothing
    canadian = TimeSettings(tm.CANADIAN, 600, 30, stones=5)
    # in main time, a byo-yomi move (30/5 = 6 s) is the least a move gets
    assert budget(canadian, Clock(10), board_size=19, moves_played=100) == pytest.approx((6 - 0.1) * 0.5)
    assert budget(canadian, Clock(1000), board_size=19, moves_played=0) == pytest.approx((1000 / 135.375 - 0.1) * 0.5)
    # in byo-yomi: the time left over the stones left
    assert budget(canadian, Clock(12, 3), board_size=19, moves_played=100) == pytest.approx((4 - 0.1) * 0.5)
    japanese = TimeSettings(tm.BYOYOMI, 0, 10, periods=3)
    assert budget(japanese, Clock(10, 3), board_size=19, moves_played=0) == pytest.approx((10 - 0.1) * 0.5)
    assert budget(japanese, Clock(0.3, 1), board_size=19, moves_played=0) == pytest.approx(0.1)


def test_symmetries_fit_the_budget_and_fall_to_one_when_time_is_short():
    choose = tm.choose_symmetries
    costs = {1: 0.01, 2: 0.015, 8: 0.05}
    assert choose(None, costs) == 1  # no time limit: today's behaviour
    assert choose(None, costs, unlimited=8) == 8 and choose(None, {}, unlimited=20) == 8
    assert choose(1.0, {}) == 1  # nothing measured yet
    assert choose(1.0, costs) == 8
    assert choose(0.049, costs) == 2  # 8 does not fit; 2 does; 3..7 were never measured (they may compile)
    assert choose(0.012, costs) == 1
    assert choose(0.009, costs) == 1  # not even one fits: the least there is
    assert choose(0.0, costs) == 1
    assert choose(1.0, {1: 0.01, 9: 0.02, 16: 0.03}) == 1  # only 1..8 are symmetries
    for budget in (0.004, 0.014, 0.02, 0.05, 0.079):
        k = choose(budget, costs)
        assert k == 1 or costs[k] <= budget  # never over the budget when more than one is used


def test_the_clock_follows_each_time_system():
    after = tm.after_move
    absolute = TimeSettings(tm.ABSOLUTE, 60)
    assert after(absolute, Clock(60), 10) == Clock(50, 0)
    assert after(absolute, Clock(5), 10) == Clock(0, 0)
    canadian = TimeSettings(tm.CANADIAN, 60, 30, stones=3)
    assert after(canadian, Clock(60), 10) == Clock(50, 0)
    # main ran out during the move: its last 5 s came off the first period, and it was the period's first stone
    assert after(canadian, Clock(5), 10) == Clock(25, 2)
    assert after(canadian, Clock(25, 3), 5) == Clock(20, 2)  # each stone counts down
    assert after(canadian, Clock(20, 1), 5) == Clock(30, 3)  # the period's last stone: a fresh period
    assert after(canadian, Clock(3, 2), 5) == Clock(0, 2)  # over time
    japanese = TimeSettings(tm.BYOYOMI, 60, 10, periods=3)
    assert after(japanese, Clock(60), 70) == Clock(10, 3)  # 10 s into the first period: it is kept whole
    assert after(japanese, Clock(10, 3), 9) == Clock(10, 3)
    assert after(japanese, Clock(10, 3), 15) == Clock(10, 2)  # one period overrun costs one
    assert after(japanese, Clock(10, 3), 25) == Clock(10, 1)
    assert after(japanese, Clock(10, 1), 11) == Clock(0, 1)  # the last period gone


def test_time_manager_decides_from_the_reported_clock_and_the_measured_costs():
    m = tm.TimeManager()
    assert m.symmetries(BLACK, board_size=19, moves_played=0) == 1  # unlimited, unconfigured
    m.set(tm.parse_time_settings(["0", "10", "1"]))  # 10 s a move
    assert m.symmetries(BLACK, board_size=19, moves_played=0) == 1  # nothing measured yet
    m.measured(1, 0.02)
    m.measured(8, 0.1)
    assert m.symmetries(BLACK, board_size=19, moves_played=0) == 8
    m.time_left(WHITE, 0.32, 1)  # white is nearly out of time: (0.32 - 0.1) / 2 = 0.11 s: 8 still fits
    assert m.symmetries(WHITE, board_size=19, moves_played=0) == 8
    m.time_left(WHITE, 0.28, 1)  # 0.09 s: only one
    assert m.symmetries(WHITE, board_size=19, moves_played=0) == 1
    assert m.symmetries(BLACK, board_size=19, moves_played=0) == 8
    # without time_left the engine's own clock runs: 9.9 s of black's 10 s period spent, then a fresh period
    m.spent(BLACK, 9.9)
    assert m.clock(BLACK) == Clock(10, 1)
    m.set(TimeSettings(tm.ABSOLUTE, 1.0))
    m.spent(BLACK, 0.9)
    assert m.clock(BLACK).time == pytest.approx(0.1)
    assert m.symmetries(BLACK, board_size=19, moves_played=0) == 1
    m.reset_clocks()
    assert m.clock(BLACK) == Clock(1.0, 0)
    m.set(TimeSettings())
    m.spent(BLACK, 5)
    assert m.clock(BLACK) is None and m.budget(BLACK, board_size=9, moves_played=0) is None
