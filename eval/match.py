"""Matches between two GTP engines: games, a referee, SGFs, and a results table with a 95% interval.

``kifunet match --engine CMD --opponent CMD --games N --out DIR`` plays N games between two GTP programs
(command lines, split like a shell does). Game ``i`` (0-based) has the engine as black when ``i`` is even,
as white when odd. ``--parallel P`` runs P games at once, each worker with its own engine, opponent and referee
processes (started once, reused with ``clear_board``).

A game ends at two passes in a row, a resignation (``B+R``/``W+R``), an illegal or unreadable move (the mover
forfeits: ``B+F``/``W+F``), or the move cap (``--max-moves``, default ``3*N*N``; the position is then scored
as it stands). The runner keeps its own board (simple ko, no suicide) and checks every move before passing it
on. Scores come from a referee: a separate ``gnugo --mode gtp --chinese-rules`` process (default) is given the
moves and asked ``final_score`` (area scoring, GNU Go's dead-stone judgement); ``--referee none`` scores
Tromp-Taylor (all stones alive, :mod:`kifunet.eval.scoring`). When the referee cannot score a game, the
Tromp-Taylor score is used and the SGF says so. GNU Go reads out every unsettled group in ``final_score``:
quick on a finished game, slow on one stopped by the move cap (a 60-move 19x19 position took 174 s at GNU Go's
default level 10 and 32 s at ``--level 0`` on a loaded 2-core machine, and the two judged it W+130.5 and
W+132.5); pass ``--referee "gnugo --mode gtp --chinese-rules --level 0"`` for quick smoke runs.

Each finished game is written to ``DIR/games/game-NNNN.sgf`` (atomically: a game is on disk whole or not at
all), with the result in ``RE`` and the ending, referee and timing in the root comment. ``DIR/match.json``
records the settings; a rerun with the same ``DIR`` counts the games already there and plays only the missing
indices (a rerun with different engine/opponent/size/komi/cap/referee settings is refused). If an engine dies
or times out, that game is not saved, the worker restarts its processes, and the match goes on; the summary
names the failed games and a rerun plays them.

Results: ``DIR/results.json`` and a table: games, engine wins (a jigo counts half), win rate, its 95% Wilson
score interval, wins as black and as white, mean game length and how games ended.

The rank experiment (:func:`run_rank_experiment`): the same engine command with ``--rank R`` appended for each
rank, each against the same opponent in ``DIR/rank-R``, and one table.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import queue
import re
import select
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.board import Board
from kifunet.data_prep.game import BLACK, WHITE

from . import scoring

DEFAULT_OPPONENT = "gnugo --mode gtp --level 10"
DEFAULT_REFEREE = "gnugo --mode gtp --chinese-rules"
STARTUP_TIMEOUT = 300.0  # seconds for a process to answer its first command (loading JAX and a net is slow)
_GAME_RE = re.compile(r"^game-(\d{4,})\.sgf$")


class EngineError(RuntimeError):
    """A GTP process died, timed out or answered nonsense: the game in progress is abandoned."""


class MatchConfigError(ValueError):
    """The output directory holds a different match."""


def child_env() -> dict:
    """The environment of engine processes: ours, with ``/usr/games`` (Debian's ``gnugo``) on PATH."""
    env = dict(os.environ)
    path = env.get("PATH", os.defpath)
    if os.path.isdir("/usr/games") and "/usr/games" not in path.split(os.pathsep):
        env["PATH"] = path + os.pathsep + "/usr/games"
    return env


def resolve_command(cmd: str | list[str]) -> list[str]:
    """Split a command line like a shell; ``kifunet ...`` runs this Python's CLI when ``kifunet`` is not on
    PATH; programs are also looked for in ``/usr/games`` (see :func:`child_env`)."""
    argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    if not argv:
        raise ValueError("empty command")
    prog = argv[0]
    if shutil.which(prog, path=child_env()["PATH"]) is None:
        if prog == "kifunet":
            return [sys.executable, "-m", "kifunet.cli"] + argv[1:]
        raise FileNotFoundError(f"program not found: {prog!r} (from {cmd!r})")
    return argv


class GtpProcess:
    """A GTP program on pipes: :meth:`command` sends one command and returns its response text."""

    def __init__(self, cmd: str | list[str], *, stderr_path: str | os.PathLike | None = None,
                 label: str = "engine"):
        self.argv = resolve_command(cmd)
        self.label = label
        self._err = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     bufsize=0, env=child_env())
        self._buf = b""
        self.first = True

    def command(self, cmd: str, timeout: float = 600.0) -> tuple[bool, str]:
        """(ok, text): ok is False for a ``?`` answer. Raises :class:`EngineError` on death or timeout."""
        if self.proc.poll() is not None:
            raise EngineError(f"{self.label} exited with code {self.proc.returncode} before {cmd!r}")
        try:
            self.proc.stdin.write((cmd + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise EngineError(f"{self.label} closed its input ({e}) at {cmd!r}") from None
        limit = max(timeout, STARTUP_TIMEOUT) if self.first else timeout
        self.first = False
        deadline = time.monotonic() + limit
        fd = self.proc.stdout.fileno()
        while True:
            text = self._buf.replace(b"\r", b"")
            # skip anything before the response (blank lines), then wait for the blank line ending it
            text = text.lstrip(b"\n")
            end = text.find(b"\n\n")
            if end >= 0:
                self._buf = text[end + 2:]
                return self._parse(text[:end].decode("utf-8", "replace"), cmd)
            left = deadline - time.monotonic()
            if left <= 0:
                raise EngineError(f"{self.label} did not answer {cmd!r} within {limit:.0f} s")
            ready, _, _ = select.select([fd], [], [], min(left, 5.0))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EngineError(f"{self.label} exited (code {self.proc.poll()}) while answering {cmd!r}")
                self._buf += chunk

    def _parse(self, resp: str, cmd: str) -> tuple[bool, str]:
        if not resp or resp[0] not in "=?":
            raise EngineError(f"{self.label} answered {cmd!r} with {resp[:200]!r}, not a GTP response")
        body = resp[1:]
        m = re.match(r"^\d*", body)
        body = body[m.end():]
        return resp[0] == "=", body.strip()

    def ok(self, cmd: str, timeout: float = 600.0) -> str:
        """Like :meth:`command`, but a ``?`` answer raises :class:`EngineError`."""
        good, text = self.command(cmd, timeout)
        if not good:
            raise EngineError(f"{self.label} refused {cmd!r}: {text}")
        return text

    def knows(self, name: str) -> bool:
        good, text = self.command(f"known_command {name}")
        return good and text.strip().lower() == "true"

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("quit", timeout=10)
            except EngineError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._err is not subprocess.DEVNULL:
            self._err.close()


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

    @property
    def cap(self) -> int:
        return self.max_moves if self.max_moves is not None else 3 * self.board_size ** 2

    def identity(self) -> dict:
        """Settings that must match for games in one directory to belong to one match."""
        return {"engine": self.engine, "opponent": self.opponent, "board_size": self.board_size, "komi": self.komi,
                "max_moves": self.cap, "referee": self.referee or "tromp-taylor", "seed": self.seed}


@dataclasses.dataclass
class GameResult:
    index: int
    engine_colour: int  # BLACK / WHITE
    winner: int | None  # BLACK / WHITE, None = jigo
    result: str  # SGF RE text
    moves: int
    ended: str  # "two passes", "resignation", "forfeit: ...", "move cap"
    seconds: float
    path: str = ""
    think: dict = dataclasses.field(default_factory=dict)  # seconds spent in genmove: {"engine": s, "opponent": s}

    @property
    def engine_won(self) -> float:
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == self.engine_colour else 0.0


def engine_colour(index: int) -> int:
    return BLACK if index % 2 == 0 else WHITE


def game_path(out_dir, index: int) -> Path:
    return Path(out_dir) / "games" / f"game-{index:04d}.sgf"


def wilson_interval(successes: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion (``(0, 1)`` when ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# --- one game ---------------------------------------------------------------------------------------------
class _Players:
    """A worker's processes: black/white roles swap per game; the referee is optional."""

    def __init__(self, cfg: MatchConfig, worker: int, log_dir: Path):
        self.cfg = cfg
        self.engine = GtpProcess(cfg.engine, stderr_path=log_dir / f"worker{worker}-engine.stderr", label="engine")
        self.opponent = GtpProcess(cfg.opponent, stderr_path=log_dir / f"worker{worker}-opponent.stderr",
                                   label="opponent")
        self.referee = (GtpProcess(cfg.referee, stderr_path=log_dir / f"worker{worker}-referee.stderr",
                                   label="referee") if cfg.referee else None)
        self.names = {}
        self.seedable = {}
        for p in (self.engine, self.opponent):
            name = p.ok("name")
            _, version = p.command("version")
            self.names[p.label] = f"{name} {version}".strip()
            self.seedable[p.label] = p.knows("set_random_seed")

    def close(self) -> None:
        for p in (self.engine, self.opponent, self.referee):
            if p is not None:
                p.close()


def _vertex(flat: int, n: int) -> str:
    return coords.to_gtp(coords.from_flat(flat, n), n)


def play_game(index: int, players: _Players, cfg: MatchConfig) -> tuple[GameResult, list[tuple[int, int]], str]:
    """Play game ``index``; returns (result, moves [(colour, flat)], referee note)."""
    n = cfg.board_size
    nn = n * n
    ecol = engine_colour(index)
    by_colour = {ecol: players.engine, 3 - ecol: players.opponent}
    t0 = time.monotonic()
    for colour, p in by_colour.items():
        p.ok(f"boardsize {n}")
        p.ok("clear_board")
        p.ok(f"komi {cfg.komi:g}")
        if players.seedable[p.label]:
            p.ok(f"set_random_seed {cfg.seed + 2 * index + (0 if colour == BLACK else 1)}")
    board = Board(n)
    moves: list[tuple[int, int]] = []
    colour = BLACK
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
        score, note = referee_score(players.referee, n, cfg.komi, moves, board)
        winner = BLACK if score > 0 else WHITE if score < 0 else None
        result = scoring.format_score(score)
    res = GameResult(index=index, engine_colour=ecol, winner=winner, result=result, moves=len(moves), ended=ended,
                     seconds=time.monotonic() - t0, think=think)
    return res, moves, note


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


# --- SGF ------------------------------------------------------------------------------------------------
def write_sgf(path: Path, res: GameResult, moves, cfg: MatchConfig, names: dict, note: str) -> None:
    from sgfmill import sgf

    n = cfg.board_size
    game = sgf.Sgf_game(size=n)
    root = game.get_root()
    root.set("KM", cfg.komi)
    root.set("RU", "Chinese")
    engine_name = names.get("engine", "engine")
    opponent_name = names.get("opponent", "opponent")
    root.set("PB", engine_name if res.engine_colour == BLACK else opponent_name)
    root.set("PW", opponent_name if res.engine_colour == BLACK else engine_name)
    root.set("RE", res.result)
    root.set("DT", _dt.date.today().isoformat())
    root.set("GN", f"game {res.index}")
    root.set("AP", ("kifunet", "match"))
    comment = {"engine": cfg.engine, "opponent": cfg.opponent, "engine_colour": "B" if res.engine_colour == BLACK
               else "W", "ended": res.ended, "moves": res.moves, "seconds": round(res.seconds, 1),
               "engine_genmove_seconds": round(res.think.get("engine", 0.0), 1),
               "opponent_genmove_seconds": round(res.think.get("opponent", 0.0), 1), "scored_by": note or "-"}
    root.set("C", "\n".join(f"{k}: {v}" for k, v in comment.items()))
    node = root
    for colour, flat in moves:
        node = node.new_child()
        node.set_move("b" if colour == BLACK else "w", coords.to_sgfmill(coords.from_flat(flat, n), n))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".sgf.tmp")
    tmp.write_bytes(game.serialise())
    os.replace(tmp, path)


def read_game(path: Path) -> GameResult:
    """A finished game back from its SGF (result, colours, length, ending)."""
    from sgfmill import sgf

    m = _GAME_RE.match(path.name)
    if not m:
        raise ValueError(f"not a match game file: {path}")
    index = int(m.group(1))
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    root = game.get_root()
    winner, result = scoring.parse_result(root.get("RE"))
    meta = {}
    if root.has_property("C"):
        for line in root.get("C").splitlines():
            k, _, v = line.partition(": ")
            meta[k] = v
    moves = sum(1 for node in game.get_main_sequence()[1:] if node.get_move()[0] is not None)
    ecol = BLACK if meta.get("engine_colour", "B" if index % 2 == 0 else "W") == "B" else WHITE
    think = {k: float(meta[f"{k}_genmove_seconds"]) for k in ("engine", "opponent") if f"{k}_genmove_seconds" in meta}
    return GameResult(index=index, engine_colour=ecol, winner=winner, result=result, moves=moves,
                      ended=meta.get("ended", "?"), seconds=float(meta.get("seconds", "nan")), path=str(path),
                      think=think)


def finished_games(out_dir) -> dict[int, GameResult]:
    d = Path(out_dir) / "games"
    out = {}
    if d.is_dir():
        for p in sorted(d.iterdir()):
            if _GAME_RE.match(p.name):
                r = read_game(p)
                out[r.index] = r
    return out


# --- the match ------------------------------------------------------------------------------------------
@dataclasses.dataclass
class MatchSummary:
    games: int
    engine_wins: float
    win_rate: float
    ci_low: float
    ci_high: float
    as_black: tuple[float, int]
    as_white: tuple[float, int]
    mean_moves: float
    mean_seconds: float
    ended: dict
    failed: list
    requested: int
    out_dir: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def summarise(results: dict[int, GameResult], requested: int, out_dir, failed=()) -> MatchSummary:
    rs = [results[i] for i in sorted(results) if i < requested]
    n = len(rs)
    wins = sum(r.engine_won for r in rs)
    lo, hi = wilson_interval(wins, n)
    ended: dict[str, int] = {}
    for r in rs:
        key = "forfeit" if r.ended.startswith("forfeit") else r.ended
        ended[key] = ended.get(key, 0) + 1
    secs = [r.seconds for r in rs if not math.isnan(r.seconds)]
    b = [r for r in rs if r.engine_colour == BLACK]
    w = [r for r in rs if r.engine_colour == WHITE]
    return MatchSummary(games=n, engine_wins=wins, win_rate=wins / n if n else float("nan"), ci_low=lo, ci_high=hi,
                        as_black=(sum(r.engine_won for r in b), len(b)),
                        as_white=(sum(r.engine_won for r in w), len(w)),
                        mean_moves=float(np.mean([r.moves for r in rs])) if rs else float("nan"),
                        mean_seconds=float(np.mean(secs)) if secs else float("nan"), ended=ended,
                        failed=sorted(failed), requested=requested, out_dir=str(out_dir))


def _check_config(cfg: MatchConfig, out: Path) -> None:
    path = out / "match.json"
    ident = cfg.identity()
    if path.exists():
        old = json.loads(path.read_text())
        diff = {k: (old.get(k), v) for k, v in ident.items() if old.get(k) != v}
        if diff:
            lines = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise MatchConfigError(f"{out} holds games of another match ({lines}); use another --out")
    else:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(ident, indent=2) + "\n")


def run_match(cfg: MatchConfig, log: Callable[[str], None] = print) -> MatchSummary:
    """Play the games of ``cfg`` that ``cfg.out_dir`` lacks; summarise every game there (index < games)."""
    out = Path(cfg.out_dir)
    _check_config(cfg, out)
    log_dir = out / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    done = finished_games(out)
    todo = [i for i in range(cfg.games) if i not in done]
    if done:
        log(f"{out}: {len([i for i in done if i < cfg.games])} of {cfg.games} games already played; "
            f"playing {len(todo)}")
    q: queue.Queue[int] = queue.Queue()
    for i in todo:
        q.put(i)
    lock = threading.Lock()
    failed: list[int] = []
    errors: list[str] = []

    def worker(w: int) -> None:
        players = None
        try:
            while True:
                try:
                    i = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    if players is None:
                        players = _Players(cfg, w, log_dir)
                    res, moves, note = play_game(i, players, cfg)
                    path = game_path(out, i)
                    write_sgf(path, res, moves, cfg, players.names, note)
                    res.path = str(path)
                    with lock:
                        done[i] = res
                        who = "engine" if res.engine_won == 1 else "opponent" if res.engine_won == 0 else "jigo"
                        log(f"game {i:4d}: engine {'B' if res.engine_colour == BLACK else 'W'}  {res.result:9s} "
                            f"({who}; {res.ended}; {res.moves} moves; {res.seconds:.0f} s, genmove: engine "
                            f"{res.think['engine']:.0f} s, opponent {res.think['opponent']:.0f} s)  "
                            f"[{len(done)}/{cfg.games}]")
                except (EngineError, FileNotFoundError, OSError) as e:
                    with lock:
                        failed.append(i)
                        errors.append(f"game {i}: {e}")
                        log(f"game {i:4d}: FAILED: {e} (see {log_dir}); restarting worker {w}'s processes")
                    if players is not None:
                        players.close()
                        players = None
                    if isinstance(e, FileNotFoundError):
                        return
        finally:
            if players is not None:
                players.close()

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(max(1, min(cfg.parallel,
                                                                                                  len(todo))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    remaining = [i for i in range(cfg.games) if i not in done]
    summary = summarise(done, cfg.games, out, failed=remaining)
    (out / "results.json").write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    return summary


def format_summary(s: MatchSummary, cfg: MatchConfig | None = None) -> str:
    lines = []
    if cfg is not None:
        lines.append(f"engine:   {cfg.engine}")
        lines.append(f"opponent: {cfg.opponent}")
        lines.append(f"{cfg.board_size}x{cfg.board_size}, komi {cfg.komi:g}, move cap {cfg.cap}, referee: "
                     f"{cfg.referee or 'Tromp-Taylor'}")
    lines.append("| games | engine wins | win rate | 95% CI (Wilson) | as black | as white | mean moves | "
                 "mean s/game | ended by |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    lines.append(_row(s))
    if s.failed:
        lines.append(f"missing games (failed or not yet played): {s.failed[:20]}{' ...' if len(s.failed) > 20 else ''}"
                     f" -- rerun the same command to play them")
    return "\n".join(lines)


def _fmt_wins(x: float) -> str:
    return f"{x:g}"


def _row(s: MatchSummary, first: str | None = None) -> str:
    rate = "-" if s.games == 0 else f"{100 * s.win_rate:.1f}%"
    ci = "-" if s.games == 0 else f"{100 * s.ci_low:.1f}-{100 * s.ci_high:.1f}%"
    ended = ", ".join(f"{k} {v}" for k, v in sorted(s.ended.items()))
    cells = [str(s.games), _fmt_wins(s.engine_wins), rate, ci, f"{_fmt_wins(s.as_black[0])}/{s.as_black[1]}",
             f"{_fmt_wins(s.as_white[0])}/{s.as_white[1]}", f"{s.mean_moves:.0f}", f"{s.mean_seconds:.1f}", ended]
    if first is not None:
        cells.insert(0, first)
    return "| " + " | ".join(cells) + " |"


def run_rank_experiment(cfg: MatchConfig, ranks: list[str], log: Callable[[str], None] = print
                        ) -> dict[str, MatchSummary]:
    """Maddison's experiment: the engine told to imitate each rank (``--rank R`` appended) vs one opponent."""
    out = {}
    for r in ranks:
        sub = dataclasses.replace(cfg, engine=f"{cfg.engine} --rank {shlex.quote(r)}",
                                  out_dir=str(Path(cfg.out_dir) / f"rank-{r}"))
        log(f"--- rank {r}: {sub.engine}")
        out[r] = run_match(sub, log=log)
    (Path(cfg.out_dir) / "rank_experiment.json").write_text(
        json.dumps({r: s.to_json() for r, s in out.items()}, indent=2) + "\n")
    return out


def format_rank_table(results: dict[str, MatchSummary], cfg: MatchConfig | None = None) -> str:
    lines = []
    if cfg is not None:
        lines.append(f"engine:   {cfg.engine} --rank R")
        lines.append(f"opponent: {cfg.opponent}")
        lines.append(f"{cfg.board_size}x{cfg.board_size}, komi {cfg.komi:g}, move cap {cfg.cap}, referee: "
                     f"{cfg.referee or 'Tromp-Taylor'}")
    lines.append("| rank | games | engine wins | win rate | 95% CI (Wilson) | as black | as white | mean moves | "
                 "mean s/game | ended by |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r, s in results.items():
        lines.append(_row(s, first=r))
    missing = {r: s.failed for r, s in results.items() if s.failed}
    if missing:
        lines.append(f"missing games: {missing} -- rerun the same command to play them")
    return "\n".join(lines)
