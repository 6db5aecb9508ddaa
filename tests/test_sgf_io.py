"""SGF reading: events of the main line, metadata, encodings, every bad input a named SgfError, real KGS data."""

from __future__ import annotations

import hashlib
import importlib.util
import random
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import require_path
from sgfmill import sgf

from kifunet.data_prep import coords, ranks
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.errors import SgfError
from kifunet.data_prep.game import BLACK, EMPTY, MOVE, SETUP, WHITE
from kifunet.data_prep.sgf.sgf_io import FALLBACK_ENCODINGS, REASONS, decode_sgf_bytes, load_game

FIXTURES = Path(__file__).parent / "fixtures" / "bad_inputs"
KGS = Path(__file__).parents[1] / ".." / "shared" / "data" / "kgs"
KGS_2017_01 = KGS / "KGS-2017_01-19-733-.tar.gz"
FOX = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fox" / "fox-pro-2012-2019.tar.gz"


def _generator():
    spec = importlib.util.spec_from_file_location("bad_inputs_generate", FIXTURES / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def flat(sgf_point: str, n: int = 19) -> int:
    return coords.to_flat(coords.from_sgf(sgf_point, n), n)


def events(g):
    return list(zip(g.kinds.tolist(), g.colours.tolist(), g.points.tolist()))


# ------------------------------------------------------------------------------------------ fixtures


def test_fixture_files_are_what_the_generator_writes():
    made = GEN.fixtures()
    on_disk = {p.name for p in FIXTURES.iterdir() if p.is_file() and p.suffix != ".py"}
    assert on_disk == set(made) == set(GEN.MANIFEST)
    for name, data in made.items():
        assert (FIXTURES / name).read_bytes() == data, name
    assert sum(len(d) for d in made.values()) < 4096


@pytest.mark.parametrize("name", sorted(GEN.MANIFEST))
def test_bad_inputs(name):
    reason = GEN.MANIFEST[name]
    path = FIXTURES / name
    display = f"archive.tar.gz:{name}"
    if reason is None:
        g = load_game(path)
        assert g.info.path == str(path)
        assert load_game(path.read_bytes(), path=display).info.path == display
        return
    assert reason in REASONS
    with pytest.raises(SgfError) as e:
        load_game(path)
    assert e.value.reason == reason and e.value.path == str(path)
    assert str(e.value).startswith(f"{path}: ")
    with pytest.raises(SgfError) as e:
        load_game(path.read_bytes(), path=display)
    assert e.value.reason == reason and e.value.path == display and display in str(e.value)


def test_error_messages_name_the_move():
    with pytest.raises(SgfError, match=r"move 3 \(B \[zz\]\) is malformed or off the 19x19 board"):
        load_game(FIXTURES / "move_off_board.sgf")
    with pytest.raises(SgfError, match=r"move 2 \(W \[jj\]\) .* 9x9"):
        load_game(FIXTURES / "move_off_9x9.sgf")
    with pytest.raises(SgfError, match=r"node 0: setup AB\[cc\]\[zz\]"):
        load_game(FIXTURES / "setup_off_board.sgf")
    with pytest.raises(SgfError, match=r"move 2 \(node 2\) has both B and W"):
        load_game(FIXTURES / "both_colours.sgf")
    with pytest.raises(SgfError, match=r"19:13"):
        load_game(FIXTURES / "size_19x13.sgf")


def test_games_without_moves_and_bad_ha_km_load():
    g = load_game(FIXTURES / "no_moves.sgf")
    assert g.num_moves == 0 and len(g.kinds) == 0 and g.size == 9 and g.info.komi == 7.5
    g = load_game(FIXTURES / "bad_ha_km.sgf")
    assert g.info.handicap == 0 and g.info.komi is None and g.info.year == 1846 and g.num_moves == 1


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


# ------------------------------------------------------------------------------------------ events


def test_main_line_setup_moves_and_passes():
    text = (
        "(;GM[1]FF[4]SZ[19]HA[2]AB[pd][dp]AW[aa:ab]"
        ";W[qp];B[]"
        "(;W[tt]AE[pd]AB[ss];B[dd]"
        "(;W[cc])(;W[ee]))"
        "(;W[jj]))"
    )
    g = load_game(text.encode())
    assert events(g) == [
        (SETUP, BLACK, flat("pd")), (SETUP, BLACK, flat("dp")),
        (SETUP, WHITE, flat("aa")), (SETUP, WHITE, flat("ab")),
        (MOVE, WHITE, flat("qp")),
        (MOVE, BLACK, 361),
        (SETUP, EMPTY, flat("pd")), (SETUP, BLACK, flat("ss")),
        (MOVE, WHITE, 361),
        (MOVE, BLACK, flat("dd")),
        (MOVE, WHITE, flat("cc")),
    ]
    assert g.kinds.dtype == np.int8 and g.colours.dtype == np.int8 and g.points.dtype == np.int16
    assert g.num_moves == 5 and g.info.handicap == 2
    # orientation: SGF 'pd' is the upper-right star point, row 3 from the top, column 15
    assert flat("pd") == 3 * 19 + 15 == coords.to_flat(coords.from_sgfmill((15, 15), 19), 19)


def test_setup_order_within_a_node_is_ae_ab_aw_sorted():
    g = load_game(b"(;SZ[9];B[ee];AW[ia][aa]AB[ii][bb]AE[ee])")
    assert events(g) == [
        (MOVE, BLACK, flat("ee", 9)),
        (SETUP, EMPTY, flat("ee", 9)),
        (SETUP, BLACK, flat("bb", 9)), (SETUP, BLACK, flat("ii", 9)),
        (SETUP, WHITE, flat("aa", 9)), (SETUP, WHITE, flat("ia", 9)),
    ]


@pytest.mark.parametrize(
    "sz,n", [("", 19), ("SZ[9]", 9), ("SZ[13]", 13), ("SZ[19:19]", 19), ("SZ[ 2 ]", 2)])
def test_board_sizes(sz, n):
    g = load_game(f"(;GM[1]{sz};B[aa];W[tt])".encode())
    assert g.size == n == g.info.size
    assert g.moves() == [(BLACK, 0), (WHITE, n * n)]  # 'tt' is pass on every board up to 19


def test_metadata():
    raw = ("(;GM[1]FF[4]CA[UTF-8]SZ[19]PB[Alice]PW[Bob]BR[6d]WR[9d?]KM[6.50]HA[0]RE[W+Resign]"
           "DT[2015-01-31]RU[Japanese];B[pd])").encode()
    g = load_game(raw, path="x.tar.gz:2015/01/31/a.sgf")
    i = g.info
    assert (i.black, i.white, i.black_rank_text, i.white_rank_text) == ("Alice", "Bob", "6d", "9d?")
    assert (i.black_rank, i.white_rank) == (5, 8)
    assert (i.komi, i.handicap, i.result, i.date, i.year, i.rules) == (6.5, 0, "W+Resign", "2015-01-31", 2015,
                                                                      "Japanese")
    assert (i.size, i.path, i.encoding) == (19, "x.tar.gz:2015/01/31/a.sgf", "utf-8")
    assert i.content_hash == hashlib.sha256(raw).hexdigest()
    bare = load_game(b"(;B[pd])").info
    assert (bare.black, bare.black_rank, bare.komi, bare.handicap, bare.year, bare.date, bare.path) == (
        "", ranks.UNKNOWN, None, 0, None, "", "<bytes>")
    assert load_game(b"(;PB[  Alice \n ]RE[ B+R ];B[pd])").info.black == "Alice"


@pytest.mark.parametrize(
    "props,komi,handicap,year",
    [("KM[7.5]HA[3]DT[1846]", 7.5, 3, 1846), ("KM[-3]HA[ 4 ]DT[15-01-01]", -3.0, 4, None),
     ("KM[6,5]HA[-2]DT[2003-01-01,02]", None, 0, 2003), ("KM[nan]HA[9999]DT[about 1700?]", None, 0, 1700),
     ("KM[inf]HA[2.5]DT[20150131]", None, 0, None),
     # Fox: hundredths of a point, and of a stone under Chinese rules (3.75 stones = 7.5 points); KM[0] as written
     ("KM[650]HA[0]DT[2017-11-12]", 6.5, 0, 2017), ("KM[450]HA[4]", 4.5, 4, None),
     ("KM[375]HA[0]RU[Chinese]", 7.5, 0, None), ("KM[0]HA[3]RU[Japanese]", 0.0, 3, None)])
def test_komi_handicap_year_parsing(props, komi, handicap, year):
    i = load_game(f"(;SZ[19]{props};B[pd])".encode()).info
    assert (i.komi, i.handicap, i.year) == (komi, handicap, year)


@pytest.mark.parametrize(
    "prop", ["CP[Copyright GoGoD 2010]", "SO[GoGoD]", "GC[From the gogod encyclopaedia]", "US[GoGoD95]",
             "AN[GoGoD team]"])
def test_gogod_records_read_bare_dan_as_professional(prop):
    i = load_game(f"(;SZ[19]{prop}BR[9d]WR[7d ama];B[pd])".encode()).info
    assert (i.black_rank, i.white_rank) == (17, 6)
    i = load_game(b"(;SZ[19]CP[Kiseido]BR[9d]WR[7d ama];B[pd])").info
    assert (i.black_rank, i.white_rank) == (8, 6)


# ------------------------------------------------------------------------------------------ robustness


def test_paths_that_cannot_be_read(tmp_path):
    for p in (tmp_path / "missing.sgf", tmp_path):
        with pytest.raises(SgfError) as e:
            load_game(p)
        assert e.value.reason == "unreadable" and e.value.path == str(p)
    with pytest.raises(TypeError):
        load_game(12345)


def test_unexpected_exceptions_become_internal_error(monkeypatch):
    def boom(_bb):
        raise RuntimeError("boom")

    monkeypatch.setattr(sgf_io.sgf_grammar, "parse_sgf_game", boom)
    with pytest.raises(SgfError) as e:
        load_game(b"(;B[pd])", path="p.sgf")
    assert e.value.reason == "internal_error" and isinstance(e.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    "raw", [b"(B[aa];W[bb])", b"(;B[aa]", b"(;B[aa](;W[bb])B[cc])", b"(;B[aa]W)", b"(;[aa])", b"();"])
def test_parse_errors(raw):
    with pytest.raises(SgfError) as e:
        load_game(raw)
    assert e.value.reason == "parse_error"


def test_collections_yield_the_first_game():
    g = load_game(b"(;SZ[9];B[aa])(;SZ[19];B[pd];W[dd])")
    assert g.size == 9 and g.moves() == [(BLACK, 0)]


def test_deep_variations_do_not_recurse_or_hang():
    depth = 5000
    raw = b"(;SZ[19]" + b"(;B[aa]" * depth + b")" * (depth + 1)
    t = time.perf_counter()
    assert load_game(raw).num_moves == depth
    with pytest.raises(SgfError) as e:
        load_game(b"(;SZ[19]" + b"(;B[aa]" * depth)  # never closed
    assert e.value.reason == "parse_error"
    assert time.perf_counter() - t < 5


def test_mutated_records_load_or_raise_sgf_error():
    """Fuzz: truncations and random byte edits of a real-looking record never raise anything but SgfError."""
    base = ("(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[6.5]HA[2]PB[黒]PW[w]BR[3d]WR[2k]AB[dd][pp]C[a \\] b]"
            ";W[qd];B[dc](;W[ce]AE[dd];B[])(;W[tt]))").encode()
    rng = random.Random(7)
    alphabet = b"()[];\\:ABWSZtzaq19 \xff\x82\x00"
    inputs = [base[:k] for k in range(len(base))]
    for _ in range(1500):
        b = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            op, pos = rng.randrange(3), rng.randrange(len(b))
            if op == 0:
                b[pos] = rng.choice(alphabet)
            elif op == 1:
                b.insert(pos, rng.choice(alphabet))
            else:
                del b[pos]
        inputs.append(bytes(b))
    outcomes = {}
    for raw in inputs:
        try:
            g = load_game(raw, path="fuzz.sgf")
            assert len(g.kinds) == len(g.colours) == len(g.points)
            assert ((g.points >= 0) & (g.points <= g.size * g.size)).all()
            outcomes["ok"] = outcomes.get("ok", 0) + 1
        except SgfError as e:
            assert e.reason in REASONS and e.reason != "internal_error", e
            assert e.path == "fuzz.sgf"
            outcomes[e.reason] = outcomes.get(e.reason, 0) + 1
    assert outcomes["ok"] > 100 and outcomes["parse_error"] > 100 and outcomes.get("bad_point", 0) > 10


# ------------------------------------------------------------------------------------------ real data


def test_every_game_of_the_kgs_2017_01_archive_loads(kgs_2017_01):
    """733 games; moves and setup equal what sgfmill itself reads; 153,800 non-pass moves (issue 2)."""
    games = moves = non_pass = 0
    with tarfile.open(KGS_2017_01) as tf:
        for member in tf:
            if not (member.isfile() and member.name.endswith(".sgf")):
                continue
            raw = tf.extractfile(member).read()
            name = f"{KGS_2017_01.name}:{member.name}"
            g = load_game(raw, path=name)
            games += 1
            assert g.info.path == name and g.info.encoding == "utf-8" and g.size == 19
            assert g.info.content_hash == hashlib.sha256(raw).hexdigest()
            ref = sgf.Sgf_game.from_bytes(raw)
            ref_moves, ref_setup = [], []
            for node in ref.get_main_sequence():
                colour, move = node.get_move()
                ab, aw, ae = node.get_setup_stones()
                for pts, c in ((ae, EMPTY), (ab, BLACK), (aw, WHITE)):
                    ref_setup += sorted((c, coords.to_flat(coords.from_sgfmill(p, 19), 19)) for p in pts)
                if colour is not None:
                    ref_moves.append((BLACK if colour == "b" else WHITE,
                                      coords.to_flat(coords.from_sgfmill(move, 19), 19)))
            assert g.moves() == ref_moves, name
            setup = g.kinds == SETUP
            assert list(zip(g.colours[setup].tolist(), g.points[setup].tolist())) == ref_setup, name
            moves += g.num_moves
            non_pass += int(np.count_nonzero((g.kinds == MOVE) & (g.points != 361)))
            for text, value in ((g.info.black_rank_text, g.info.black_rank),
                                (g.info.white_rank_text, g.info.white_rank)):
                assert ranks.is_known(value) == (text not in ("", "?", "-")), (name, text)
            assert g.info.year == 2017 and g.info.komi is not None
    print(f"KGS 2017-01: {games} games, {moves} moves, {non_pass} non-pass")
    assert games == 733
    assert non_pass == 153_800
