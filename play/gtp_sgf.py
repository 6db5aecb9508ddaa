"""``loadsgf FILE [MOVE_NUMBER | VERTEX]`` and ``printsgf [FILE]`` as GNU Go defines them (the rules:
docs/playing.md, The engine's protocol). Failures are one line and change nothing; only a regular file of at
most :data:`MAX_SGF_BYTES` is read."""

from __future__ import annotations

import datetime
import os
import stat
from dataclasses import dataclass, field

from sgfmill import sgf, sgf_grammar, sgf_properties

from kifunet.data_prep import coords
from kifunet.data_prep.sgf import sgf_io
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.errors import SgfError
from kifunet.data_prep.game import BLACK, EMPTY, MOVE, WHITE
from kifunet.data_prep.rules import scoring

from . import gtp_args
from .gtp_protocol import GtpError, command, package_version


#: the largest file ``loadsgf`` reads (bytes): a game of 100,000 moves (``;B[dd]``) is about 600 KB; the worst
#: file of this size (nothing but passes, 262,140 nodes) loads within the 1 GiB ``tests/test_gtp_bounds.py`` sets
MAX_SGF_BYTES = 1 << 20


class LoadError(Exception):
    """``loadsgf`` failed; the message is the one-line GTP error."""


@dataclass
class LoadedGame:
    """A game read up to the stopping point: the setup stones when play starts, the moves after them."""

    size: int
    komi: float | None
    setup: list = field(default_factory=list)  # [(colour, flat)]
    moves: list = field(default_factory=list)  # [(colour, flat)]
    first: int = BLACK  # who plays first after the setup (when there are no moves)
    to_play: int = BLACK  # the answer of loadsgf
    info: dict = field(default_factory=dict)  # the root's PB, PW, BR, WR, RU (text) where set


def file_argument(args: list[str]) -> tuple[str | None, list[str]]:
    """(file name, the remaining arguments): a name in double quotes may hold spaces (GoGui quotes those)."""
    if not args:
        return None, []
    if args[0].startswith('"'):
        for i in range(len(args)):
            if args[i].endswith('"') and (i > 0 or len(args[0]) > 1):
                return " ".join(args[: i + 1])[1:-1], args[i + 1:]
        raise LoadError("syntax error: unterminated quoted file name")
    return args[0], args[1:]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _stop_rule(arg: str | None, n: int) -> tuple[int | None, int | None]:
    """(move number, flat vertex) where loading stops; (None, None): the whole game."""
    if arg is None:
        return None, None
    if gtp_args.is_digits(arg):  # a number past the game's end loads it whole
        number = gtp_args.bounded_int(arg, MAX_SGF_BYTES)
        return (MAX_SGF_BYTES + 1 if number is None else number), None
    try:
        return None, coords.to_flat(coords.from_gtp(arg, n), n)
    except ValueError:
        raise LoadError(f"syntax error: {arg!r} is neither a move number nor a vertex of a {n}x{n} board") from None


def read_file(path: str) -> bytes:
    """The bytes of the regular file at ``path``, at most :data:`MAX_SGF_BYTES`, opened without blocking; anything
    else is a :class:`LoadError` at once."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise LoadError(f"cannot open file '{path}': {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LoadError(f"cannot open file '{path}': not a regular file")
        if info.st_size > MAX_SGF_BYTES:
            raise LoadError(f"cannot load file '{path}': {info.st_size} bytes, more than the {MAX_SGF_BYTES} "
                            f"an SGF game may have")
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_SGF_BYTES + 1)
    except OSError as e:
        raise LoadError(f"cannot open file '{path}': {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_SGF_BYTES:  # grew while being read
        raise LoadError(f"cannot load file '{path}': more than the {MAX_SGF_BYTES} bytes an SGF game may have")
    return raw


def _read_record(path: str):
    """The SGF record at ``path`` (:func:`read_file`, :func:`kifunet.data_prep.sgf.sgf_io.load_game`), or
    :class:`LoadError`: ``cannot open file`` (unreadable) or ``cannot load file`` and the reason in one line."""
    raw = read_file(path)
    try:
        return sgf_io.load_game(raw, path=path)
    except SgfError as e:
        reason = _one_line(str(e))
        if reason.startswith(f"{path}: "):
            reason = reason[len(path) + 2:]
        reason = reason.removeprefix("cannot read: ")
        verb = "open" if e.reason == "unreadable" else "load"
        raise LoadError(f"cannot {verb} file '{path}': {reason}") from None


def read_game(path: str, until: str | None = None) -> LoadedGame:
    """The main line of the SGF file at ``path`` up to ``until`` (a move number or a GTP vertex, not included).
    Raises :class:`LoadError` with the GTP error text."""
    record = _read_record(path)
    n = record.size
    stop_number, stop_vertex = _stop_rule(until, n)
    board = Board(n)
    setup: list = []
    moves: list = []
    folded_first = None  # after setup in mid-game: the other colour than the last move's
    last_colour = None
    number = 0
    to_play = None
    events = list(zip(record.kinds.tolist(), record.colours.tolist(), record.points.tolist()))
    i = 0
    while i < len(events):
        kind, colour, point = events[i]
        if kind != MOVE:  # a run of setup events: AE, AB, AW of one node
            run = []
            while i < len(events) and events[i][0] != MOVE:
                run.append(events[i][1:])
                i += 1
            for c in (EMPTY, BLACK, WHITE):
                pts = [p for cc, p in run if cc == c]
                if pts:
                    board.setup(pts, c)
            st = board.stones.reshape(-1)
            setup = [(int(st[p]), p) for p in range(n * n) if st[p] != EMPTY]
            if moves or last_colour is not None:  # setup in mid-game: the position so far becomes setup
                moves = []
                folded_first = 3 - last_colour
            continue
        number += 1
        if (stop_number is not None and number >= stop_number) or (stop_vertex is not None and point == stop_vertex):
            to_play = colour
            break
        if point != n * n:
            try:
                board.play(point, colour)
            except ValueError as e:
                side = "B" if colour == BLACK else "W"
                raise LoadError(f"cannot load file '{path}': move {number} ({side} "
                                f"{coords.to_gtp(coords.from_flat(point, n), n)}) is illegal: {e}") from None
        moves.append((colour, point))
        last_colour = colour
        i += 1
    if folded_first is not None:
        first = folded_first
    else:  # White starts after a handicap: HA with black setup stones only
        first = WHITE if record.info.handicap > 0 and setup and all(c == BLACK for c, _ in setup) else BLACK
    if to_play is None:
        to_play = 3 - moves[-1][0] if moves else first
    i = record.info
    kept = {"PB": i.black, "PW": i.white, "BR": i.black_rank_text, "WR": i.white_rank_text, "RU": i.rules}
    return LoadedGame(size=n, komi=i.komi, setup=setup, moves=moves, first=first, to_play=to_play,
                      info={k: v for k, v in kept.items() if v})


def game_sgf(size: int, komi: float, setup, moves, first: int, *, app: tuple[str, str] = ("kifunet", ""),
             info: dict | None = None) -> str:
    """The game as SGF text: ``setup`` and ``moves`` ``[(colour, flat)]``, ``first`` the colour to play after the
    setup, ``app`` the ``AP`` property, ``info`` root properties of a loaded game to write back."""
    game = sgf.Sgf_game(size)
    root = game.get_root()
    root.set("KM", float(komi))
    info = dict(info or {})
    root.set("RU", info.pop("RU", "Chinese"))
    for ident, text in info.items():
        root.set(ident, text)
    root.set("AP", app)
    root.set("DT", datetime.date.today().isoformat())
    black = {coords.to_sgfmill(coords.from_flat(p, size), size) for c, p in setup if c == BLACK}
    white = {coords.to_sgfmill(coords.from_flat(p, size), size) for c, p in setup if c == WHITE}
    if black or white:
        root.set_setup_stones(black, white)
    if black and not white and first == WHITE:
        root.set("HA", len(black))
    # the moves go straight into sgfmill's parse tree (a Tree_node per move costs 15 us; 100,000 moves, 1.5 s)
    raw = [sgf_properties.serialise_go_point(coords.to_sgfmill(coords.from_flat(p, size), size), size)
           for p in range(size * size)] + [b""]  # FF[4]'s pass (sgfmill's own would be B[tt])
    tree = sgf_grammar.Coarse_game_tree()
    tree.sequence = [root.get_raw_property_map()]
    tree.sequence += [{"B" if colour == BLACK else "W": [raw[flat]]} for colour, flat in moves]
    text = sgf_grammar.serialise_game_tree(tree).decode("utf-8").strip()
    while "\n\n" in text:  # a GTP response may not hold an empty line
        text = text.replace("\n\n", "\n")
    return text


class SgfCommands:
    """The SGF handler group over ``engine`` (its ``game``, ``nets``, ``name`` and ``set_size``)."""

    def __init__(self, engine):
        self.engine = engine

    @command("loadsgf")
    def loadsgf(self, a):
        try:
            path, rest = file_argument(a)
            if path is None or len(rest) > 1:
                raise LoadError("syntax error: loadsgf FILE [MOVE_NUMBER|VERTEX]")
            game = read_game(path, rest[0] if rest else None)
        except LoadError as e:
            raise GtpError(str(e)) from None
        e = self.engine
        problem = e.nets.size_problem(game.size)
        if problem:
            raise GtpError(f"cannot load file '{path}': board size {game.size}x{game.size} is unacceptable: "
                           f"{problem}")
        komi = e.game.komi if game.komi is None else game.komi
        problem = scoring.komi_problem(komi, game.size)
        if problem:
            raise GtpError(f"cannot load file '{path}': {problem}")
        e.set_size(game.size)
        e.game.load(game, komi)
        return "black" if game.to_play == BLACK else "white"

    @command("printsgf")
    def printsgf(self, a):
        try:
            path, rest = file_argument(a)
        except LoadError as e:
            raise GtpError(str(e)) from None
        if rest:
            raise GtpError("syntax error: printsgf [FILE]")
        text = self.engine.game.sgf(app=(self.engine.name, package_version()))
        if path is None or path == "-":
            return text
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as e:
            raise GtpError(f"cannot write file '{path}': {e.strerror or e}") from None
        return ""
