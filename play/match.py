"""Matches between two GTP engines (``kifunet match``): the game loop, a referee, resuming, and the rank
experiment. What a game, a rerun and the results are: docs/matches.md (How a match is played)."""

from __future__ import annotations

import dataclasses
import json
import queue
import shlex
import threading
import time
from pathlib import Path
from typing import Callable

from kifunet.data_prep import coords
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.errors import UserError
from kifunet.data_prep.game import BLACK, WHITE

from kifunet.data_prep.rules import scoring
from .gtp_client import EngineError, GtpProcess, resolve_command
from .match_report import GameResult, LiveMoves, MatchSummary, running_score, summarise
from .match_sgf import finished_games, game_path, write_game

DEFAULT_OPPONENT = "gnugo --mode gtp --level 10"
DEFAULT_REFEREE = "gnugo --mode gtp --chinese-rules"


class MatchConfigError(UserError, ValueError):
    """The match cannot start: its directory holds games of another match, or a program cannot be found."""


class EngineStartError(EngineError):
    """A GTP program died or failed before the first game (bad command line, missing net...): the match stops,
    and the message ends with the last lines the program wrote on stderr."""


#: the kifunet engine's switch for resigning (``kifunet-resign on|off``); other programs do not know it
RESIGN_COMMAND = "kifunet-resign"


@dataclasses.dataclass
class MatchConfig:
    engine: str
    opponent: str = DEFAULT_OPPONENT
    games: int = 10
    board_size: int = 19
    komi: float = 7.5
    max_moves: int | None = None  # None: 3 * N * N
    referee: str | None = DEFAULT_REFEREE  # None: Tromp-Taylor
    parallel: int = 1
    out_dir: str = "runs/match"
    move_timeout: float = 600.0
    seed: int = 0  # games get set_random_seed seed + 2*i (black) and seed + 2*i + 1 (white) where known
    resign: bool = False  # kifunet players may resign (``kifunet-resign on``); off: ``kifunet-resign off``
    openings: tuple[str, ...] = ()  # SGF files, folders, archives: game pair i starts from opening i (play/openings.py)
    opening_moves: int = 0  # the openings' length in moves

    @property
    def cap(self) -> int:
        return self.max_moves if self.max_moves is not None else 3 * self.board_size ** 2

    def identity(self) -> dict:
        """Settings that must match for games in one directory to belong to one match."""
        ident = {"engine": self.engine, "opponent": self.opponent, "board_size": self.board_size, "komi": self.komi,
                 "max_moves": self.cap, "referee": self.referee or "tromp-taylor", "seed": self.seed,
                 "resign": self.resign}
        if self.openings:  # only then: a match without openings keeps the identity it had before they existed
            ident.update(openings=list(self.openings), opening_moves=self.opening_moves)
        return ident


def engine_colour(index: int) -> int:
    """The engine's colour in game ``index``: black in even games, white in odd ones."""
    return BLACK if index % 2 == 0 else WHITE


# --- one game ---------------------------------------------------------------------------------------------
class _Players:
    """A worker's processes: black/white roles swap per game; the referee is optional."""

    def __init__(self, cfg: MatchConfig, worker: int, log_dir: Path):
        """Start the programs and ask each its name: a failure is an :class:`EngineStartError` naming the
        program, with its last stderr lines (the processes already started are closed)."""
        self.cfg = cfg
        self.engine = self.opponent = self.referee = None
        self.names = {}
        self.seedable = {}
        labels = [label for label in ("engine", "opponent", "referee") if getattr(cfg, label)]
        label = labels[0]
        try:
            for label in labels:
                setattr(self, label, GtpProcess(getattr(cfg, label), label=label,
                                                stderr_path=log_dir / f"worker{worker}-{label}.stderr"))
            for label in labels:
                p = getattr(self, label)
                if label == "referee":  # asked only to score; now, only whether it answers at all
                    p.command("protocol_version")
                    continue
                name = p.ok("name")
                _, version = p.command("version")
                self.names[label] = f"{name} {version}".strip()
                self.seedable[label] = p.knows("set_random_seed")
                if p.knows(RESIGN_COMMAND):  # a kifunet player: resigns against people, not in matches unless asked
                    p.ok(f"{RESIGN_COMMAND} {'on' if cfg.resign else 'off'}")
        except (EngineError, OSError) as e:
            proc = getattr(self, label)
            tail = proc.stderr_tail() if proc is not None else []
            self.close()
            msg = f"the {label} failed to start ({getattr(cfg, label)}): {e}"
            if tail:
                msg += f"\n  its stderr ended with ({proc.stderr_path}):\n" + "\n".join(f"    {ln}" for ln in tail)
            elif proc is not None and proc.stderr_path:
                msg += f" (nothing on its stderr, {proc.stderr_path})"
            raise EngineStartError(msg) from e

    def close(self) -> None:
        for p in (self.engine, self.opponent, self.referee):
            if p is not None:
                p.close()


def _vertex(flat: int, n: int) -> str:
    return coords.to_gtp(coords.from_flat(flat, n), n)


def _new_game(index: int, players: _Players, cfg: MatchConfig, by_colour: dict) -> None:
    """Tell both players the board, komi and (to those that take one) game ``index``'s seed for its colour."""
    for colour, p in by_colour.items():
        p.ok(f"boardsize {cfg.board_size}")
        p.ok("clear_board")
        p.ok(f"komi {cfg.komi:g}")
        if players.seedable[p.label]:
            p.ok(f"set_random_seed {cfg.seed + 2 * index + (0 if colour == BLACK else 1)}")


def _score(players: _Players, cfg: MatchConfig, moves, board: Board) -> tuple[int | None, str, str]:
    """(winner or None, result, note) of a game that ended without resignation or forfeit: the referee's
    score, and whether the engine's own ``final_score`` agrees."""
    score, note = referee_score(players.referee, cfg.board_size, cfg.komi, moves, board)
    winner = BLACK if score > 0 else WHITE if score < 0 else None
    if players.referee is not None and note.startswith("referee final_score"):
        note += "; " + engine_agreement(players.engine, score, cfg.move_timeout)
    return winner, scoring.format_score(score), note


def _play_opening(opening, board: Board, by_colour: dict, cfg: MatchConfig) -> list[tuple[int, int]]:
    """Play ``opening`` [(colour, flat)] on ``board`` and tell both players with ``play``; returns the moves."""
    moves: list[tuple[int, int]] = []
    for colour, flat in opening:
        board.play(flat, colour)
        moves.append((colour, flat))
        vertex = _vertex(flat, cfg.board_size)
        for p in by_colour.values():
            good, text = p.command(f"play {'b' if colour == BLACK else 'w'} {vertex}", cfg.move_timeout)
            if not good:
                raise EngineError(f"{p.label} refused opening move {len(moves)} ({vertex}: {text})")
    return moves


def play_game(index: int, players: _Players, cfg: MatchConfig, on_move: Callable[[int, int], None] | None = None,
              opening=()) -> tuple[GameResult, list[tuple[int, int]], str]:
    """Game ``index`` from ``opening`` [(colour, flat)] (:func:`kifunet.play.openings.opening_of`) -> (result, moves
    [(colour, flat)] opening first, referee note); ``on_move(index, moves so far)`` after each move played."""
    n = cfg.board_size
    nn = n * n
    ecol = engine_colour(index)
    by_colour = {ecol: players.engine, 3 - ecol: players.opponent}
    t0 = time.monotonic()
    _new_game(index, players, cfg, by_colour)
    board = Board(n)
    moves = _play_opening(opening, board, by_colour, cfg)
    colour = 3 - moves[-1][0] if moves else BLACK
    passes = 0
    winner, result, ended = None, "", ""
    think = {"engine": 0.0, "opponent": 0.0}
    while True:
        if len(moves) >= cfg.cap:
            ended = "move cap"
            break
        mover = by_colour[colour]
        letter = "B" if colour == BLACK else "W"
        t_move = time.monotonic()
        answer = mover.ok(f"genmove {letter.lower()}", cfg.move_timeout).strip()
        think[mover.label] += time.monotonic() - t_move
        if answer.lower() == "resign":
            winner = 3 - colour
            result = f"{'B' if winner == BLACK else 'W'}+R"
            ended = "resignation"
            break
        try:
            flat = coords.to_flat(coords.from_gtp(answer, n), n)
        except ValueError:
            flat = None
        if flat is None or not board.is_legal(flat, colour):
            winner = 3 - colour
            result = f"{'B' if winner == BLACK else 'W'}+F"
            ended = f"forfeit: {letter} played {'unreadable' if flat is None else 'illegal'} move {answer!r}"
            break
        if flat != nn:
            board.play(flat, colour)
        moves.append((colour, flat))
        if on_move is not None:
            on_move(index, len(moves))
        other = by_colour[3 - colour]
        good, text = other.command(f"play {letter.lower()} {_vertex(flat, n)}", cfg.move_timeout)
        if not good:
            raise EngineError(f"{other.label} refused {letter} {_vertex(flat, n)} at move {len(moves)} "
                              f"({text}), which the runner's board accepts")
        passes = passes + 1 if flat == nn else 0
        if passes >= 2:
            ended = "two passes"
            break
        colour = 3 - colour
    note = ""
    if not result:
        winner, result, note = _score(players, cfg, moves, board)
    res = GameResult(index=index, engine_colour=ecol, winner=winner, result=result, moves=len(moves), ended=ended,
                     seconds=time.monotonic() - t0, think=think)
    return res, moves, note


def engine_agreement(engine: GtpProcess, referee: float, timeout: float) -> str:
    """The engine's own ``final_score`` of the final position and whether it names the winner of ``referee``
    (the referee's black-minus-white score), as the text of a game's note."""
    try:
        good, text = engine.command("final_score", timeout)
    except EngineError as e:
        return f"engine final_score: none ({e})"
    if not good:
        return f"engine final_score: none ({text.strip() or 'refused'})"
    try:
        winner, norm = scoring.parse_result(text)
    except ValueError:
        return f"engine final_score: unreadable {text.strip()!r}"
    ref = BLACK if referee > 0 else WHITE if referee < 0 else None
    verdict = "agrees with the referee on the winner" if winner == ref else "winner differs from the referee's"
    return f"engine final_score: {norm} ({verdict})"


def referee_score(referee: GtpProcess | None, n: int, komi: float, moves, board: Board) -> tuple[float, str]:
    """(black-minus-white score, how it was scored) of the final position."""
    tt = scoring.area_score(board.stones, komi)
    if referee is None:
        return tt, "Tromp-Taylor area score (all stones alive)"
    try:
        referee.ok(f"boardsize {n}")
        referee.ok("clear_board")
        referee.ok(f"komi {komi:g}")
        for colour, flat in moves:
            referee.ok(f"play {'b' if colour == BLACK else 'w'} {_vertex(flat, n)}")
        text = referee.ok("final_score", 900)
        winner, norm = scoring.parse_result(text)
    except (EngineError, ValueError) as e:
        return tt, f"referee failed ({e}); Tromp-Taylor area score used"
    if winner is None:
        return 0.0, f"referee final_score: {norm}"
    margin = float(norm[2:])
    return (margin if winner == BLACK else -margin), f"referee final_score: {norm}"


# --- the match ------------------------------------------------------------------------------------------
def _check_config(cfg: MatchConfig, out: Path) -> None:
    path = out / "match.json"
    ident = cfg.identity()
    if path.exists():
        old = json.loads(path.read_text())
        old.setdefault("resign", False)  # match.json files written before the switch existed
        diff = {k: (old.get(k), v) for k, v in ident.items() if old.get(k) != v}
        if not diff:
            return
        if finished_games(out):
            lines = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise MatchConfigError(f"{out} holds games of another match ({lines}); use another --out")
        # no game was played under the old settings (say, an engine that failed to start): take the new ones
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ident, indent=2) + "\n")


def check_programs(cfg: MatchConfig) -> None:
    """Every program of the match can be found (``MatchConfigError`` naming the option otherwise)."""
    for label, cmd in (("engine", cfg.engine), ("opponent", cfg.opponent), ("referee", cfg.referee)):
        if cmd is None and label == "referee":
            continue
        try:
            resolve_command(cmd)
        except (FileNotFoundError, ValueError) as e:
            raise MatchConfigError(f"--{label}: {e.args[0] if e.args else e}") from None


def run_match(cfg: MatchConfig, log: Callable[[str], None] = print, live: LiveMoves | None = None) -> MatchSummary:
    """Play the games of ``cfg`` that ``cfg.out_dir`` lacks; summarise every game there (index < games).
    ``log`` gets a line per finished game; ``live`` shows the move number of every game in play."""
    out = Path(cfg.out_dir)
    check_programs(cfg)
    chosen = _openings(cfg, log)
    _check_config(cfg, out)
    if cfg.openings:
        (out / "openings.json").write_text(json.dumps(
            {"source": list(cfg.openings), "moves": cfg.opening_moves, "rule": OPENINGS_RULE,
             "openings": [o.to_json() for o in chosen]}, indent=1) + "\n")
    done = finished_games(out)
    todo = [i for i in range(cfg.games) if i not in done]
    if done:
        log(f"{out}: {len([i for i in done if i < cfg.games])} of {cfg.games} games already played; "
            f"playing {len(todo)}")
    if live is not None:
        live.start(len(todo))
        log = live.wrap(log)
    run = _MatchRun(cfg, out, done, todo, log, live, chosen)
    threads = [threading.Thread(target=run.worker, args=(w,), daemon=True) for w in range(run.at_once)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if live is not None:
        live.close()
    remaining = [i for i in range(cfg.games) if i not in done]
    summary = summarise(done, cfg.games, out, failed=remaining)
    if cfg.openings:
        summary.openings = {"source": list(cfg.openings), "moves": cfg.opening_moves, "rule": OPENINGS_RULE,
                            "games": [o.path for o in chosen]}
    (out / "results.json").write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    if run.start_errors:
        raise run.start_errors[0]
    return summary


#: how the openings are chosen, as results.json and openings.json say it
OPENINGS_RULE = ("game pair i (games 2i and 2i+1, colours swapped) starts from the first moves of the i-th usable game "
                 "of the source in split-hash order (smallest first: a --hash-split test:F build's test games)")


def _openings(cfg: MatchConfig, log: Callable[[str], None]) -> list:
    """The match's openings (one per pair of games; none without ``cfg.openings``), and a line saying what they
    are and what was skipped."""
    if not cfg.openings:
        return []
    from . import openings

    if cfg.opening_moves < 1:
        raise MatchConfigError(f"--opening-moves must be at least 1 with --openings, not {cfg.opening_moves}")
    chosen, skipped = openings.choose(cfg.openings, cfg.opening_moves, (cfg.games + 1) // 2, cfg.board_size)
    log(f"openings: the first {cfg.opening_moves} moves of {len(chosen)} games of {', '.join(cfg.openings)} "
        f"(split-hash fractions {chosen[0].fraction:.6f} to {chosen[-1].fraction:.6f}); skipped "
        + (", ".join(f"{n} {r}" for r, n in sorted(skipped.items())) or "none"))
    return chosen


class _MatchRun:
    """The games ``todo`` of one :func:`run_match`, shared by its worker threads (one pair of programs each);
    game ``i`` starts from ``openings[i // 2]`` when there are openings."""

    def __init__(self, cfg: MatchConfig, out: Path, done: dict, todo: list[int], log: Callable[[str], None],
                 live: LiveMoves | None, openings=()):
        self.cfg, self.out, self.done, self.log, self.live = cfg, out, done, log, live
        self.openings = list(openings)
        self.log_dir = out / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.at_once = max(1, min(cfg.parallel, len(todo)))
        self.started = (f"playing {len(todo)} game{'s' if len(todo) != 1 else ''} of {cfg.board_size}x"
                        f"{cfg.board_size}{f', {self.at_once} at a time' if self.at_once > 1 else ''}: a line as "
                        "each one ends")
        self.queue: queue.Queue[int] = queue.Queue()
        for i in todo:
            self.queue.put(i)
        self.lock = threading.Lock()
        self.failed: list[int] = []
        self.errors: list[str] = []
        self.start_errors: list[EngineStartError] = []
        self.stop = threading.Event()
        self.announced = threading.Event()

    def worker(self, w: int) -> None:
        """Play games from the queue with worker ``w``'s programs until it is empty or the match stops."""
        players = None
        try:
            while not self.stop.is_set():
                try:
                    i = self.queue.get_nowait()
                except queue.Empty:
                    return
                try:
                    if players is None:
                        players = self._start(w)
                        if players is None:
                            return
                    self._play(i, players)
                except (EngineError, FileNotFoundError, OSError) as e:
                    self._game_failed(i, w, e)
                    if players is not None:
                        players.close()
                        players = None
                    if isinstance(e, FileNotFoundError):
                        return
        finally:
            if players is not None:
                players.close()

    def _start(self, w: int) -> _Players | None:
        """Worker ``w``'s programs; None (and the match stops) when one cannot start."""
        try:
            players = _Players(self.cfg, w, self.log_dir)
        except EngineStartError as e:
            with self.lock:
                self.start_errors.append(e)
            self.stop.set()
            return None
        with self.lock:  # said once, when the first worker's programs are up
            if not self.announced.is_set():
                self.announced.set()
                self.log(self.started)
        return players

    def _play(self, i: int, players: _Players) -> None:
        cfg, live = self.cfg, self.live
        opening = self.openings[i // 2] if self.openings else None
        res, moves, note = play_game(i, players, cfg, None if live is None else live.move,
                                     opening=opening.moves if opening else ())
        path = game_path(self.out, i)
        write_game(path, res, moves, board_size=cfg.board_size, komi=cfg.komi, engine=cfg.engine,
                   opponent=cfg.opponent, names=players.names, note=note,
                   opening=f"the first {len(opening.moves)} moves of {opening.path}" if opening else "")
        res.path = str(path)
        with self.lock:
            self.done[i] = res
            if live is not None:
                live.finished(i)
            who = "engine" if res.engine_won == 1 else "opponent" if res.engine_won == 0 else "jigo"
            self.log(f"game {i:4d}: engine {'B' if res.engine_colour == BLACK else 'W'}  {res.result:9s} "
                     f"({who}; {res.ended}; {res.moves} moves; {res.seconds:.0f} s, genmove: engine "
                     f"{res.think['engine']:.0f} s, opponent {res.think['opponent']:.0f} s)  "
                     f"[{running_score(self.done, cfg.games)}]{_own_score(note)}")

    def _game_failed(self, i: int, w: int, e: Exception) -> None:
        with self.lock:
            if self.live is not None:
                self.live.finished(i)
            self.failed.append(i)
            self.errors.append(f"game {i}: {e}")
            self.log(f"game {i:4d}: FAILED: {e} (see {self.log_dir}); restarting worker {w}'s processes")


def _own_score(note: str) -> str:
    """The ``engine final_score`` suffix of a game's line, taken from its referee note (``""`` when it has none)."""
    i = note.find("engine final_score:")
    return f" -- {note[i:]}" if i >= 0 else ""


def run_rank_experiment(cfg: MatchConfig, ranks: list[str], log: Callable[[str], None] = print,
                        live: Callable[[], LiveMoves] | None = None) -> dict[str, MatchSummary]:
    """Maddison's experiment: the engine told to imitate each rank (``--rank R`` appended) vs one opponent;
    ``live`` makes each match's :class:`LiveMoves`."""
    out = {}
    for r in ranks:
        sub = dataclasses.replace(cfg, engine=f"{cfg.engine} --rank {shlex.quote(r)}",
                                  out_dir=str(Path(cfg.out_dir) / f"rank-{r}"))
        log(f"--- rank {r}: {sub.engine}")
        out[r] = run_match(sub, log=log, live=None if live is None else live())
    (Path(cfg.out_dir) / "rank_experiment.json").write_text(
        json.dumps({r: s.to_json() for r, s in out.items()}, indent=2) + "\n")
    return out
