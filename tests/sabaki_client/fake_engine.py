"""A small, net-free GTP engine that checks the Sabaki client driver itself (``drive.js``).

It is a test double, not a player: it plays the first legal point (row by row from A9) that is not its own
eye, and its analysis lists the first five legal points of the colour asked with made-up priors. Its rules
(:class:`Board`: captures, no suicide, simple ko) are its own, in plain Python so that it starts in a few tens
of milliseconds; the driver checks them against Sabaki's ``@sabaki/go-board`` through ``showboard``. Its score
is Tromp-Taylor area.

``python fake_engine.py FLAW``: with FLAW ``none`` it speaks correct GTP and answers an empty response with a
bare ``=``; with ``space`` it answers ``= `` (a trailing space, as a GTP 2 engine may): the driver must pass
both. Every other FLAW is one way an engine can break a GUI, and the driver must report it (the Python test
names the error it expects):

==============  ==============================================================================================
``log-stdout``  a log line on stdout before the first response (@sabaki/gtp skips it silently)
``bad-vertex``  ``genmove`` answers ``= Z99``
``occupied``    ``genmove`` answers a point that holds a stone
``bad-info``    analysis lists an occupied point as a candidate
``no-stop``     analysis goes on after the next command arrives (it never answers that command)
``transposed``  ``showboard`` prints the board transposed
``bad-score``   ``final_score`` answers ``= black wins``
``exit-3``      exits with status 3 after answering ``quit``
==============  ==============================================================================================
"""

from __future__ import annotations

import os
import queue
import sys
import threading

FLAWS = ("none", "space", "log-stdout", "bad-vertex", "occupied", "bad-info", "no-stop", "transposed", "bad-score",
         "exit-3")
COMMANDS = ("protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize",
            "clear_board", "komi", "play", "genmove", "undo", "showboard", "final_score", "lz-analyze",
            "kata-analyze")
COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
EMPTY, BLACK, WHITE = ".", "X", "O"


class Board:
    """Stones on an n x n grid, {(row, col): 'X' | 'O'} with row 0 on top; captures, no suicide, simple ko."""

    def __init__(self, n: int):
        self.n, self.stones, self.ko = n, {}, None

    def neighbours(self, p):
        r, c = p
        return [(r + dr, c + dc) for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
                if 0 <= r + dr < self.n and 0 <= c + dc < self.n]

    def group(self, p):
        """The chain at p and its liberties."""
        colour, chain, libs, todo = self.stones[p], {p}, set(), [p]
        while todo:
            for q in self.neighbours(todo.pop()):
                if q not in self.stones:
                    libs.add(q)
                elif self.stones[q] == colour and q not in chain:
                    chain.add(q)
                    todo.append(q)
        return chain, libs

    def play(self, p, colour) -> None:
        """Play p (None: pass), or raise ValueError naming why it is illegal."""
        if p is None:
            self.ko = None
            return
        if p in self.stones:
            raise ValueError("illegal move (occupied)")
        if p == self.ko:
            raise ValueError("illegal move (ko)")
        self.stones[p] = colour
        captured = set()
        for q in self.neighbours(p):
            if self.stones.get(q, colour) != colour:
                chain, libs = self.group(q)
                if not libs:
                    captured |= chain
        for q in captured:
            del self.stones[q]
        if not self.group(p)[1]:
            del self.stones[p]
            raise ValueError("illegal move (suicide)")
        self.ko = next(iter(captured)) if len(captured) == 1 and len(self.group(p)[0]) == 1 else None

    def is_legal(self, p, colour) -> bool:
        trial = Board(self.n)
        trial.stones, trial.ko = dict(self.stones), self.ko
        try:
            trial.play(p, colour)
        except ValueError:
            return False
        return True


class FakeEngine:
    def __init__(self, flaw: str, out=sys.stdout):
        self.flaw, self.out = flaw, out
        self.size, self.komi, self.moves = 19, 7.5, []
        self.board = Board(self.size)
        self.lines: queue.Queue = queue.Queue()

    # --- state ---------------------------------------------------------------------------------------------
    def replay(self):
        self.board = Board(self.size)
        for colour, p in self.moves:
            self.board.play(p, colour)

    def colour(self, text: str) -> str:
        t = text.lower()
        if t in ("b", "black"):
            return BLACK
        if t in ("w", "white"):
            return WHITE
        raise ValueError(f"syntax error (bad colour {text!r})")

    def vertex(self, p) -> str:
        return "pass" if p is None else f"{COLUMNS[p[1]]}{self.size - p[0]}"

    def point(self, text: str):
        t = text.upper()
        if t == "PASS":
            return None
        if len(t) < 2 or t[0] not in COLUMNS[: self.size] or not t[1:].isdigit() or not 1 <= int(t[1:]) <= self.size:
            raise ValueError(f"syntax error (bad vertex {text!r})")
        return self.size - int(t[1:]), COLUMNS.index(t[0])

    def candidates(self, colour: str, k: int) -> list:
        out = []
        for p in ((r, c) for r in range(self.size) for c in range(self.size)):
            eye = all(self.board.stones.get(q) == colour for q in self.board.neighbours(p))
            if not eye and self.board.is_legal(p, colour):
                out.append(p)
                if len(out) == k:
                    break
        return out

    def area_score(self) -> str:
        stones = self.board.stones
        points = {BLACK: sum(v == BLACK for v in stones.values()), WHITE: sum(v == WHITE for v in stones.values())}
        seen = set()
        for p in ((r, c) for r in range(self.size) for c in range(self.size)):
            if p in stones or p in seen:
                continue
            region, borders, todo = 0, set(), [p]
            seen.add(p)
            while todo:
                region += 1
                for q in self.board.neighbours(todo.pop()):
                    if q in stones:
                        borders.add(stones[q])
                    elif q not in seen:
                        seen.add(q)
                        todo.append(q)
            if len(borders) == 1:
                points[borders.pop()] += region
        diff = points[BLACK] - points[WHITE] - self.komi
        return "0" if diff == 0 else f"{'B' if diff > 0 else 'W'}+{abs(diff):g}"

    # --- commands ----------------------------------------------------------------------------------------------
    def answer(self, name: str, args: list[str]) -> str:
        """The text of a successful response; ValueError for a ``?`` one."""
        if name == "protocol_version":
            return "2"
        if name == "name":
            return "fake"
        if name == "version":
            return f"1 (flaw {self.flaw})"
        if name == "list_commands":
            return "\n".join(COMMANDS)
        if name == "known_command":
            return "true" if args and args[0] in COMMANDS else "false"
        if name == "boardsize":
            self.size, self.moves = int(args[0]), []
            self.replay()
            return ""
        if name == "clear_board":
            self.moves = []
            self.replay()
            return ""
        if name == "komi":
            self.komi = float(args[0])
            return ""
        if name == "play":
            colour, p = self.colour(args[0]), self.point(args[1])
            self.board.play(p, colour)
            self.moves.append((colour, p))
            return ""
        if name == "genmove":
            colour = self.colour(args[0])
            if self.flaw == "bad-vertex":
                return "Z99"
            if self.flaw == "occupied" and self.moves:
                return self.vertex(next(p for _, p in self.moves if p is not None))
            cands = self.candidates(colour, 1)
            p = cands[0] if cands else None
            self.board.play(p, colour)
            self.moves.append((colour, p))
            return self.vertex(p)
        if name == "undo":
            if not self.moves:
                raise ValueError("cannot undo")
            self.moves.pop()
            self.replay()
            return ""
        if name == "showboard":
            n, stones = self.size, self.board.stones
            at = (lambda r, c: (c, r)) if self.flaw == "transposed" else (lambda r, c: (r, c))
            cols = " ".join(COLUMNS[:n])
            rows = [f"{n - r:2d} " + " ".join(stones.get(at(r, c), EMPTY) for c in range(n)) + f" {n - r:2d}"
                    for r in range(n)]
            return "\n" + "\n".join([f"   {cols}", *rows, f"   {cols}"])
        if name == "final_score":
            return "black wins" if self.flaw == "bad-score" else self.area_score()
        if name == "quit":
            return ""
        raise ValueError("unknown command")

    def info_line(self, kind: str, colour: str) -> str:
        cands = self.candidates(colour, 5)
        if self.flaw == "bad-info" and self.moves:
            cands[0] = next(p for _, p in self.moves if p is not None)
        parts = []
        for i, p in enumerate(cands):
            v = self.vertex(p)
            if kind == "lz":
                parts.append(f"info move {v} visits {50 - i} winrate 5000 prior {2000 - 100 * i} lcb 5000 order {i} pv {v}")
            else:
                parts.append(f"info move {v} visits {50 - i} utility 0.0 winrate 0.5 prior {0.2 - 0.01 * i:.2f} "
                             f"lcb 0.5 order {i} pv {v}")
        return " ".join(parts)

    def write(self, text: str):
        self.out.write(text)
        self.out.flush()

    def serve(self):
        def read():
            for line in sys.stdin:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        if self.flaw == "log-stdout":
            self.write("loading the net...\n")
        pending = None
        while True:
            line = pending if pending is not None else self.lines.get()
            pending = None
            if line is None:
                return 0
            parts = line.split("#", 1)[0].split()
            if not parts:
                continue
            cid = parts.pop(0) if parts[0].isdigit() else ""
            name, args = parts[0], parts[1:]
            if name in ("lz-analyze", "kata-analyze"):
                colour = self.colour(args[0]) if args and args[0].lower() in ("b", "w", "black", "white") else (
                    WHITE if self.moves and self.moves[-1][0] == BLACK else BLACK)
                interval = float(next((a for a in args if a.replace(".", "").isdigit()), "10")) / 100
                self.write(f"={cid}\n")
                while True:
                    self.write(self.info_line("lz" if name == "lz-analyze" else "kata", colour) + "\n")
                    try:
                        pending = self.lines.get(timeout=max(interval, 0.01))
                    except queue.Empty:
                        continue
                    if self.flaw == "no-stop":
                        pending = None
                        continue
                    break
                self.write("\n")
                continue
            try:
                text = self.answer(name, args)
                head = f"={cid} {text}" if text else f"={cid} " if self.flaw == "space" else f"={cid}"
                self.write(head + "\n\n")
            except (ValueError, IndexError) as e:
                self.write(f"?{cid} {e}\n\n")
            if name == "quit":
                return 3 if self.flaw == "exit-3" else 0


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in FLAWS:
        sys.stderr.write(f"usage: fake_engine.py {{{','.join(FLAWS)}}}\n")
        return 2
    return FakeEngine(argv[0]).serve()


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(status)  # not sys.exit: the reader thread blocked on stdin would hold up the interpreter's exit
