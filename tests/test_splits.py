"""Split rules: date ranges, rest, game-hash fractions; a game lands in exactly one split."""

from __future__ import annotations

import hashlib

import pytest

from kifunet.data_prep.building import splits
from kifunet.data_prep.game import GameInfo


def _mh(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()[:32]


def test_date_rules_assign_and_filter():
    rule = splits.make_rule(["train:2000-2014", "test:2015"])
    assert rule.names() == ["train", "test"]
    assert rule.assign(GameInfo(date="2000-01-01"), _mh(0)) == ("train", None)
    assert rule.assign(GameInfo(date="2014-12-31"), _mh(0)) == ("train", None)
    assert rule.assign(GameInfo(date="2015-07-01"), _mh(0)) == ("test", None)
    assert rule.assign(GameInfo(date="2017-01-01"), _mh(0)) == (None, "no_split")
    assert rule.assign(GameInfo(date=""), _mh(0)) == (None, "no_date")


def test_repeated_names_lists_months_and_rest():
    rule = splits.make_rule(["train:2001-2003,2006", "test:2015-01..2015-06", "train:2017", "other:rest"])
    assert rule.names() == ["train", "test", "other"]
    assert rule.assign(GameInfo(date="2006-05-05"), _mh(1))[0] == "train"
    assert rule.assign(GameInfo(date="2017-02-01"), _mh(1))[0] == "train"
    assert rule.assign(GameInfo(date="2015-06-30"), _mh(1))[0] == "test"
    assert rule.assign(GameInfo(date="2015-07-01"), _mh(1))[0] == "other"
    assert rule.assign(GameInfo(date="2004-01-01"), _mh(1))[0] == "other"


@pytest.mark.parametrize("specs", [["train:2000-2015", "test:2015"], ["a:2010-01..2010-06", "b:2010-06-30"]])
def test_overlapping_ranges_refused(specs):
    with pytest.raises(ValueError, match="overlap"):
        splits.make_rule(specs)


@pytest.mark.parametrize("spec", ["train", "train:", ":2015", "tr ain:2015", "train:2015-2014", "x:20150"])
def test_bad_specs(spec):
    with pytest.raises(ValueError):
        splits.make_rule([spec])


def test_no_date_rule_everything_train():
    rule = splits.make_rule()
    assert rule.names() == ["train"]
    assert rule.assign(GameInfo(date=""), _mh(3)) == ("train", None)


def test_val_fraction_is_deterministic_and_proportional():
    rule = splits.make_rule(["train:2000-2014", "test:2015"], val_fraction=0.1)
    assert rule.names() == ["train", "test", "val"]
    n = 20000
    got = [rule.assign(GameInfo(date="2010-01-01"), _mh(i))[0] for i in range(n)]
    frac = got.count("val") / n
    assert 0.09 < frac < 0.11
    assert got == [rule.assign(GameInfo(date="2010-01-01"), _mh(i))[0] for i in range(n)]
    # test games never move to val, and the same game (moves hash) always lands on the same side
    assert {rule.assign(GameInfo(date="2015-01-01"), _mh(i))[0] for i in range(2000)} == {"test"}
    assert all((g == "val") == (splits.hash_fraction(_mh(i)) < 0.1) for i, g in enumerate(got))


def test_several_hash_rules_take_disjoint_slices():
    rule = splits.make_rule(None, ["val:0.1", "calib:0.2:train"])
    names = [rule.assign(GameInfo(), _mh(i))[0] for i in range(10000)]
    assert 0.08 < names.count("val") / 1e4 < 0.12 and 0.17 < names.count("calib") / 1e4 < 0.23
    for i, g in enumerate(names):
        u = splits.hash_fraction(_mh(i))
        assert g == ("val" if u < 0.1 else "calib" if u < 0.3 else "train")


@pytest.mark.parametrize("kw", [dict(hash_specs=["val:1.5"]), dict(hash_specs=["val:0.6", "x:0.5"]),
                                dict(hash_specs=["val:0.1:nosuch"]), dict(split_specs=["val:2015"], val_fraction=0.1)])
def test_bad_hash_rules(kw):
    with pytest.raises(ValueError):
        splits.make_rule(**kw)


def test_to_json_round_trips_the_rule():
    rule = splits.make_rule(["train:2000-2014", "test:2015"], val_fraction=0.01)
    d = rule.to_json()
    assert d["dates"][0] == {"split": "train", "ranges": [["2000-00-00", "2014-99-99"]], "rest": False}
    assert d["hashes"] == [{"name": "val", "fraction": 0.01, "source": "train"}]
