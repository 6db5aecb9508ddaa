"""kifunet.eval.page_blocks: a block is replaced in place, read back, and refused without its two markers."""

import pytest

from kifunet.eval import page_blocks as pb


def test_replace_then_read_back_touches_nothing_else():
    start, end = pb.markers("t")
    assert (start, end) == ("<!-- t:start -->", "<!-- t:end -->")
    page = f"# p\n{start}\nold\n{end}\ntail <!-- u:start -->\n"
    new = pb.replace_block(page, "t", "A\nB")
    assert new == f"# p\n{start}\nA\nB\n{end}\ntail <!-- u:start -->\n"
    assert pb.block(new, "t") == "A\nB" and pb.replace_block(new, "t", "A\nB") == new


@pytest.mark.parametrize("page", ["none", "<!-- t:start -->", "<!-- t:end -->\n<!-- t:start -->",
                                  "<!-- t:start -->\n<!-- t:start -->\n<!-- t:end -->"])
def test_missing_doubled_or_reversed_markers_are_refused(page):
    with pytest.raises(ValueError, match="t:start"):
        pb.replace_block(page, "t", "x")
    with pytest.raises(ValueError, match="t:start"):
        pb.block(page, "t")
