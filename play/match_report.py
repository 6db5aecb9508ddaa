"""Results of match games and matches: win rate (a jigo counts half), its 95% Wilson interval, the tables,
and the progress lines printed while a match plays."""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time

import numpy as np

from kifunet.data_prep.game import BLACK, WHITE


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


def wilson_interval(successes: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion (``(0, 1)`` when ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


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
    openings: dict = dataclasses.field(default_factory=dict)  # where the games' first moves came from; {}: none

    def to_json(self) -> dict:
        """The fields as a dict; ``openings`` only when the match had some (as results.json was before them)."""
        d = dataclasses.asdict(self)
        if not d["openings"]:
            del d["openings"]
        return d


def summarise(results: dict[int, GameResult], requested: int, out_dir, failed=()) -> MatchSummary:
    """The games with index below ``requested``; ``failed``: the indices still missing."""
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


def _settings_lines(cfg, engine_suffix: str = "") -> list[str]:
    """The header of a table: ``cfg`` is a :class:`kifunet.play.match.MatchConfig` (or None: no header)."""
    if cfg is None:
        return []
    lines = [f"engine:   {cfg.engine}{engine_suffix}",
             f"opponent: {cfg.opponent}",
             f"{cfg.board_size}x{cfg.board_size}, komi {cfg.komi:g}, move cap {cfg.cap}, referee: "
             f"{cfg.referee or 'Tromp-Taylor'}"]
    if getattr(cfg, "openings", ()):
        lines.append(f"openings: the first {cfg.opening_moves} moves of held-out games of {', '.join(cfg.openings)}, "
                     "one per pair of games (colours swapped within the pair; openings.json names them)")
    return lines


def format_summary(s: MatchSummary, cfg=None) -> str:
    """One match as a Markdown table; ``cfg`` (a :class:`kifunet.play.match.MatchConfig`) adds the settings."""
    lines = _settings_lines(cfg)
    lines.append("| games | engine wins | win rate | 95% CI (Wilson) | as black | as white | mean moves | "
                 "mean s/game | ended by |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    lines.append(_row(s))
    if s.failed:
        lines.append(f"missing games (failed or not yet played): {s.failed[:20]}{' ...' if len(s.failed) > 20 else ''}"
                     f" -- rerun the same command to play them")
    return "\n".join(lines)


def format_rank_table(results: dict[str, MatchSummary], cfg=None) -> str:
    """The rank experiment: one row per rank; ``cfg`` is the experiment's base config (engine without --rank)."""
    lines = _settings_lines(cfg, " --rank R")
    lines.append("| rank | games | engine wins | win rate | 95% CI (Wilson) | as black | as white | mean moves | "
                 "mean s/game | ended by |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r, s in results.items():
        lines.append(_row(s, first=r))
    missing = {r: s.failed for r, s in results.items() if s.failed}
    if missing:
        lines.append(f"missing games: {missing} -- rerun the same command to play them")
    return "\n".join(lines)


def _fmt_wins(x: float) -> str:
    return f"{x:g}"


def running_score(done: dict[int, GameResult], requested: int) -> str:
    """``3/10 played; engine 2 of 3`` over the match's finished games (index below ``requested``; a jigo counts
    half), for the line printed as each game ends."""
    rs = [r for i, r in done.items() if i < requested]
    return f"{len(rs)}/{requested} played; engine {_fmt_wins(sum(r.engine_won for r in rs))} of {len(rs)}"


class LiveMoves:
    """A live status line for a terminal (a tqdm bar on ``file``, default stderr): the games finished of those to
    play, and the move number each game in play has reached, redrawn at most every ``interval`` seconds; lines
    logged through :meth:`wrap` are written above it. Safe to call from the match's worker threads."""

    def __init__(self, file=None, interval: float = 0.5):
        self.file, self.interval = file, interval
        self._bar = None
        self._moves: dict[int, int] = {}
        self._lock = threading.Lock()
        self._drawn = 0.0

    def start(self, games: int) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=games, desc="match", file=self.file or sys.stderr, leave=False, dynamic_ncols=True,
                         bar_format="{desc}: {n}/{total} games finished [{elapsed}]{postfix}")

    def wrap(self, log):
        """``log``, writing its lines above the bar."""
        def write(line: str) -> None:
            with self._lock:
                if self._bar is None:
                    return log(line)
                self._bar.clear()
                log(line)
                self._bar.refresh()
        return write

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._bar is not None and (force or now - self._drawn >= self.interval):
            self._bar.set_postfix_str(", ".join(f"game {i}: move {m}" for i, m in sorted(self._moves.items())),
                                      refresh=True)
            self._drawn = now

    def move(self, index: int, moves: int) -> None:
        """Game ``index`` has ``moves`` moves now."""
        with self._lock:
            self._moves[index] = moves
            self._draw()

    def finished(self, index: int) -> None:
        """Game ``index`` is over (played or failed)."""
        with self._lock:
            self._moves.pop(index, None)
            if self._bar is not None:
                self._bar.update(1)
            self._draw(force=True)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None


def _row(s: MatchSummary, first: str | None = None) -> str:
    rate = "-" if s.games == 0 else f"{100 * s.win_rate:.1f}%"
    ci = "-" if s.games == 0 else f"{100 * s.ci_low:.1f}-{100 * s.ci_high:.1f}%"
    ended = ", ".join(f"{k} {v}" for k, v in sorted(s.ended.items()))
    cells = [str(s.games), _fmt_wins(s.engine_wins), rate, ci, f"{_fmt_wins(s.as_black[0])}/{s.as_black[1]}",
             f"{_fmt_wins(s.as_white[0])}/{s.as_white[1]}", "-" if s.games == 0 else f"{s.mean_moves:.0f}",
             "-" if s.games == 0 else f"{s.mean_seconds:.1f}", ended or "-"]
    if first is not None:
        cells.insert(0, first)
    return "| " + " | ".join(cells) + " |"
