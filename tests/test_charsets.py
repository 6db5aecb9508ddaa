"""SGF text decoding (data_prep/sgf/charsets.py): the codec chosen for declared, undeclared, mislabelled and
broken files, seen through ``load_game`` (names and ranks) and ``decode_sgf_bytes``."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest import require_path
from sgfmill import sgf

from kifunet.data_prep import coords, ranks
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.errors import SgfError
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.sgf.charsets import FALLBACK_ENCODINGS, decode_sgf_bytes
from kifunet.data_prep.sgf.sgf_io import load_game

FIXTURES = Path(__file__).parent / "fixtures" / "bad_inputs"
FOX = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fox" / "fox-pro-2012-2019.tar.gz"


def flat(sgf_point: str, n: int = 19) -> int:
    return coords.to_flat(coords.from_sgf(sgf_point, n), n)


# ------------------------------------------------------------------------------------------ encodings


def test_gb2312_declared_as_utf8():
    g = load_game(FIXTURES / "gb2312_declares_utf8.sgf")
    assert g.info.encoding == "gb18030"
    assert (g.info.black, g.info.white, g.info.result) == ("古力", "常昊", "黑中盘胜")
    assert (g.info.black_rank_text, g.info.black_rank, g.info.white_rank) == ("九段", 8, 8)


def test_shift_jis_without_ca():
    g = load_game(FIXTURES / "shiftjis_no_ca.sgf")
    assert g.info.encoding == "cp932"
    assert (g.info.black, g.info.white, g.info.black_rank_text, g.info.black_rank) == ("本因坊秀策", "代表", "七段", 6)
    assert g.moves() == [(BLACK, flat("qd")), (WHITE, flat("dc")), (BLACK, flat("pq"))]


def test_decoding_before_tokenising_protects_shift_jis_trail_bytes():
    # 表 is 95 5C in Shift-JIS: its trail byte is a backslash, which escapes the closing bracket of PW[代表]
    # when the raw bytes are tokenised (what sgfmill does with from_bytes, even given the right codec).
    raw = (FIXTURES / "shiftjis_no_ca.sgf").read_bytes()
    assert "表".encode("shift_jis") == b"\x95\x5c"
    naive = sgf.Sgf_game.from_bytes(raw, override_encoding="cp932").get_root()
    assert naive.get("PW") != "代表" and not naive.has_property("BR")
    assert load_game(raw).info.white == "代表"


def test_latin1_without_ca():
    g = load_game(FIXTURES / "latin1_no_ca.sgf")
    assert g.info.encoding == "iso8859-1"
    assert (g.info.black, g.info.white) == ("Sébastien Müller", "Jörg Ærøskøbing")
    assert (g.info.black_rank, g.info.white_rank) == (-3, 1)


def test_euc_kr_declared_and_utf16_bom():
    g = load_game(FIXTURES / "euckr_declared.sgf")
    assert (g.info.encoding, g.info.black, g.info.white, g.info.black_rank) == ("cp949", "이창호", "조훈현", 8)
    g = load_game(FIXTURES / "utf16_with_bom.sgf")
    assert (g.info.encoding, g.info.black, g.size, g.moves()) == ("utf-16", "Ōta", 9, [(BLACK, flat("ee", 9))])


def _sgf_with(text: str, ca: str | None = None) -> str:
    head = f"CA[{ca}]" if ca else ""
    return f"(;GM[1]FF[4]{head}SZ[19]PB[{text}]PW[w]C[{text}];B[pd])"


@pytest.mark.parametrize(
    "text,codec,ca,expected",
    [
        ("plain ascii", "ascii", None, "utf-8"),
        ("囲碁の対局です、こんにちは", "utf-8", None, "utf-8"),
        ("이창호 국수", "utf-8", "EUC-KR", "utf-8"),  # declared EUC-KR fails, UTF-8 decodes
        ("黑中盘胜，古力执白", "gb2312", None, "gb18030"),
        ("古力", "gb2312", "GB2312", "gb18030"),
        ("聶衛平", "gbk", "GBK", "gb18030"),  # GBK-only (traditional) characters, declared
        ("囲碁の対局です、こんにちは", "shift_jis", None, "cp932"),
        ("本因坊秀策", "shift_jis", "Shift_JIS", "cp932"),
        ("①番勝負", "cp932", "SJIS", "cp932"),  # NEC extension: not in strict Shift_JIS
        ("이창호", "euc_kr", "EUC-KR", "cp949"),
        ("François Gaëtan", "latin-1", None, "iso8859-1"),
        ("François Gaëtan", "latin-1", "ISO-8859-1", "iso8859-1"),
        ("吳清源", "big5", "Big5", "big5"),  # a declared codec outside the fallback list is honoured
        ("Zoë", "latin-1", "no-such-charset", "iso8859-1"),  # unknown CA: ignored
        ("Zoë", "latin-1", "UTF-16", "iso8859-1"),  # not ASCII-compatible, cannot be right: ignored
        ("Zoë", "latin-1", "base64", "iso8859-1"),  # not a text codec: ignored
    ],
)
def test_codec_choice(text, codec, ca, expected):
    raw = _sgf_with(text, ca).encode(codec)
    decoded, used = decode_sgf_bytes(raw)
    assert used == expected
    g = load_game(raw)
    assert g.info.encoding == expected and g.info.black == text


def test_known_limit_euc_kr_without_ca_reads_as_gb18030():
    # The documented limit: EUC-KR Hangul bytes are valid GB2312, and without CA nothing tells them apart.
    raw = _sgf_with("이창호").encode("euc_kr")
    assert decode_sgf_bytes(raw)[1] == "gb18030"
    assert load_game(raw).info.black != "이창호"


def test_utf8_bom_and_fallback_list():
    assert FALLBACK_ENCODINGS == ("utf-8", "gb18030", "cp932", "cp949", "iso8859-1")
    raw = b"\xef\xbb\xbf" + _sgf_with("Ōta").encode("utf-8")
    g = load_game(raw)
    assert (g.info.encoding, g.info.black) == ("utf-8", "Ōta")


# ------------------------------------------------------------------------------------- broken bytes

def _game_bytes(black: bytes, white: bytes, *, ca: str | None = None, br: str = "9d", wr: str = "3k",
                comment: bytes = b"") -> bytes:
    head = f"CA[{ca}]".encode() if ca else b""
    return (b"(;GM[1]FF[4]" + head + b"SZ[19]PB[" + black + b"]BR[" + br.encode("utf-8") + b"]PW[" + white
            + b"]WR[" + wr.encode("utf-8") + b"]DT[2015-01-01]" + (b"C[" + comment + b"]" if comment else b"")
            + b";B[pd];W[dd])")


def _cut(text: str, codec: str, drop: int = 1) -> bytes:
    """``text`` encoded, less its last ``drop`` bytes: a name cut in the middle of its last character."""
    return text.encode(codec)[:-drop]


# (label, raw, codec used, black, white, black rank, white rank, replaced bytes)
BROKEN = [
    # the case: CA[UTF-8], a name cut in the middle of a 3-byte character, then BR
    ("utf8-declared-cut", _game_bytes(_cut("李世石", "utf-8"), "古力".encode(), ca="UTF-8"),
     "utf-8", "李世\ufffd", "古力", 8, -3, 2),
    ("utf8-declared-cut-1-byte-left", _game_bytes(_cut("李世石", "utf-8", 2), "古力".encode(), ca="UTF-8"),
     "utf-8", "李世\ufffd", "古力", 8, -3, 1),
    ("utf8-undeclared-cut", _game_bytes(_cut("李世石", "utf-8"), "古力".encode()),
     "utf-8", "李世\ufffd", "古力", 8, -3, 2),
    ("utf8-declared-cut-cjk-ranks", _game_bytes(_cut("이창호", "utf-8"), "조훈현".encode(), ca="UTF-8", br="9단",
                                                wr="P9段"), "utf-8", "이창\ufffd", "조훈현", 8, 17, 2),
    # declared East Asian charsets with a broken lead byte right before ']' (GBK, Big5 and Shift-JIS would
    # take the ']' as its trail byte and swallow BR into the name; EUC-KR fails to decode)
    ("gb2312-declared-cut", _game_bytes(_cut("古力", "gb2312"), "常昊".encode("gb2312"), ca="GB2312"),
     "gb18030", "古\ufffd", "常昊", 8, -3, 1),
    ("gbk-declared-cut", _game_bytes(_cut("聶衛平", "gbk"), "馬曉春".encode("gbk"), ca="GBK"),
     "gb18030", "聶衛\ufffd", "馬曉春", 8, -3, 1),
    ("big5-declared-cut", _game_bytes(_cut("吳清源", "big5"), "林海峰".encode("big5"), ca="Big5"),
     "big5", "吳清\ufffd", "林海峰", 8, -3, 1),
    ("big5-declared-cut-after-backslash-trail", _game_bytes(_cut("吳清源許功", "big5"), "林海峰".encode("big5"),
                                                            ca="Big5"), "big5", "吳清源許\ufffd", "林海峰", 8, -3, 1),
    ("shift-jis-declared-cut", _game_bytes(_cut("本因坊秀策", "shift_jis"), "井上".encode("shift_jis"),
                                           ca="Shift_JIS"), "cp932", "本因坊秀\ufffd", "井上", 8, -3, 1),
    ("shift-jis-declared-cut-after-backslash-trail", _game_bytes(_cut("代表ソ", "shift_jis"), "井上".encode(
        "shift_jis"), ca="Shift_JIS"), "cp932", "代表\ufffd", "井上", 8, -3, 1),
    ("euc-kr-declared-cut", _game_bytes(_cut("이창호", "euc_kr"), "조훈현".encode("euc_kr"), ca="EUC-KR"),
     "cp949", "이창\ufffd", "조훈현", 8, -3, 1),
    # undeclared, cut: the codec that reads the rest wins, with U+FFFD for the cut
    ("gbk-undeclared-cut", _game_bytes(_cut("古力", "gbk"), "常昊".encode("gbk")),
     "gb18030", "古\ufffd", "常昊", 8, -3, 1),
    ("shift-jis-undeclared-cut", _game_bytes(_cut("本因坊秀策", "shift_jis"), "井上幻庵因碩".encode("shift_jis")),
     "cp932", "本因坊秀\ufffd", "井上幻庵因碩", 8, -3, 1),
    # undeclared mixed files: UTF-8 names and one Latin-1 name; the Fox archive's lost bytes (a UTF-8 byte that
    # cp1252 lacks written as '?')
    ("mixed-utf8-latin1", _game_bytes("李世石".encode(), "José".encode("latin-1")),
     "utf-8", "李世石", "Jos\ufffd", 8, -3, 1),
    ("fox-question-mark", _game_bytes("马逸超".encode(), b"\xe6?\x8e" + "维清".encode(), br="9段", wr="P1段",
                                      comment=b"\xe7\x8b?"), "utf-8", "马逸超", "\ufffd?\ufffd维清", 8, 9, 4),
    # a declaration that lies about the whole file loses to the codec that reads it all
    ("latin1-declared-utf8", _game_bytes("José".encode("latin-1"), "Zoë".encode("latin-1"), ca="UTF-8"),
     "iso8859-1", "José", "Zoë", 8, -3, 0),
    # legitimate trail bytes equal to '[', ']', '\' (ー 81 5B, 運 89 5D, 表 95 5C; 許 B3 5C, 功 A5 5C) stay
    # characters: no broken byte, nothing replaced
    ("shift-jis-trail-bytes-declared", _game_bytes("運表ソニー".encode("cp932"), "井上".encode("cp932"),
                                                   ca="Shift_JIS"), "cp932", "運表ソニー", "井上", 8, -3, 0),
    ("shift-jis-trail-bytes-undeclared", _game_bytes("運表ソニー".encode("cp932"), "井上".encode("cp932")),
     "cp932", "運表ソニー", "井上", 8, -3, 0),
    ("big5-trail-bytes-declared", _game_bytes("許功".encode("big5"), "吳清源".encode("big5"), ca="Big5"),
     "big5", "許功", "吳清源", 8, -3, 0),
]


@pytest.mark.parametrize("label,raw,codec,black,white,black_rank,white_rank,replaced", BROKEN,
                         ids=[b[0] for b in BROKEN])
def test_broken_bytes_keep_names_and_ranks(label, raw, codec, black, white, black_rank, white_rank, replaced):
    g = load_game(raw)
    i = g.info
    assert (i.encoding, i.black, i.white) == (codec, black, white)
    assert (i.black_rank, i.white_rank, i.date) == (black_rank, white_rank, "2015-01-01")
    assert i.encoding_replaced == replaced
    assert g.moves() == [(BLACK, flat("pd")), (WHITE, flat("dd"))]
    d = sgf_io.decode_sgf(raw)
    assert (d.text, d.codec, d.replaced) == (decode_sgf_bytes(raw)[0], codec, replaced)
    assert d.escaped.encode(codec, "surrogateescape") == raw  # positions in the text map back to bytes


# A name in each codec, cut at every byte: the structure must survive every cut (ranks, the other name, the
# comment, the moves), and the name must read as its whole characters plus U+FFFD, whenever the codec is
# declared, or is one the fallback can tell (not Big5, absent from it, nor EUC-KR, read as GB2312 without CA).
CUT_NAMES = [
    ("utf-8", "UTF-8", "李世石九段", "이창호"), ("gb2312", "GB2312", "古力常昊", "聂卫平"),
    ("gbk", "GBK", "聶衛平", "馬曉春"), ("big5", "Big5", "吳清源許功", "林海峰"),
    ("shift_jis", "Shift_JIS", "本因坊秀策表ソ", "井上幻庵因碩"), ("euc_kr", "EUC-KR", "이창호조훈현", "박정환"),
]


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
@pytest.mark.parametrize("codec,ca,black,white", CUT_NAMES, ids=[c[0] for c in CUT_NAMES])
def test_every_cut_of_a_name_keeps_the_structure(codec, ca, black, white, declared):
    whole = black.encode(codec)
    names_known = declared or codec not in ("big5", "euc_kr")
    for cut in range(1, len(whole)):
        raw = _game_bytes(whole[:cut], white.encode(codec), ca=ca if declared else None, br="9d", wr="3k",
                          comment=white.encode(codec))
        g = load_game(raw)
        i = g.info
        where = (codec, declared, cut, i.encoding, i.black)
        assert (i.black_rank_text, i.white_rank_text, i.date) == ("9d", "3k", "2015-01-01"), where
        assert g.num_moves == 2, where
        if names_known:
            assert i.white == white, where
            assert i.black.rstrip("\ufffd") == whole[:cut].decode(codec, "ignore"), where
            assert (i.encoding_replaced > 0) == (whole[:cut].decode(codec, "ignore").encode(codec) != whole[:cut])


def test_fox_archive_decodes_as_utf8_with_ranks():
    """The Fox archive has no CA and loses bytes (issue 13): its records read as UTF-8, ranks known."""
    fox = require_path(FOX, "the Fox archive")
    seen = replaced = 0
    with tarfile.open(fox, "r|gz") as tf:
        for m in tf:
            if not (m.isfile() and m.name.endswith(".sgf")):
                continue
            raw = tf.extractfile(m).read()
            try:
                g = load_game(raw, path=m.name)
            except SgfError as e:
                assert e.reason == "parse_error", e  # 14 truncated files in the whole archive
                continue
            seen += 1
            replaced += g.info.encoding_replaced > 0
            assert g.info.encoding == "utf-8", m.name
            for text, value in ((g.info.black_rank_text, g.info.black_rank),
                                (g.info.white_rank_text, g.info.white_rank)):
                assert ranks.is_known(value) == (text != ""), (m.name, text)
            if seen == 600:
                break
    assert seen == 600 and replaced > 400
