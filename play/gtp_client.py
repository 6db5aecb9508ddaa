"""Talking to a GTP program over pipes: start it, send one command, read one response.

:class:`GtpProcess` runs a command line (split like a shell does, :func:`resolve_command`) with its stdin and
stdout on pipes and its stderr to a file or nowhere. :meth:`GtpProcess.command` sends one command and returns
``(ok, text)``: ``ok`` is False for a ``?`` answer; the text has the ``=``/``?``, any id and surrounding
whitespace removed, multi-line responses kept whole. Blank lines before a response are skipped; a response ends
at its blank line. A process that dies, closes its input, answers anything but a GTP response, or does not
answer within the timeout raises :class:`EngineError` (the first command is given at least
:data:`STARTUP_TIMEOUT`, since loading JAX and a net is slow).

Programs are looked for on ``PATH`` and in ``/usr/games`` (Debian's ``gnugo``, :func:`child_env`); ``kifunet
...`` runs this Python's CLI when ``kifunet`` is not on ``PATH``.

Used by the match runner (:mod:`kifunet.play.match`) and ``scripts/make_sample_corpus.py``.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time

STARTUP_TIMEOUT = 300.0  # seconds for a process to answer its first command (loading JAX and a net is slow)


class EngineError(RuntimeError):
    """A GTP process died, timed out or answered nonsense: the game in progress is abandoned."""


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
        self.stderr_path = os.fspath(stderr_path) if stderr_path else None
        self._err = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL
        self._err_start = self._err.tell() if stderr_path else 0  # this process's part of an appended log
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     bufsize=0, env=child_env())
        self._buf = b""
        self.first = True

    def command(self, cmd: str, timeout: float = 600.0) -> tuple[bool, str]:
        """(ok, text): ok is False for a ``?`` answer. Raises :class:`EngineError` on death or timeout
        (``timeout`` in seconds; ``math.inf`` waits as long as it takes)."""
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
                    try:
                        code = self.proc.wait(timeout=2)  # its output closed: it is exiting
                    except subprocess.TimeoutExpired:
                        code = None
                    raise EngineError(f"{self.label} exited (code {code}) while answering {cmd!r}")
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

    def stderr_tail(self, lines: int = 10, wait: float = 2.0) -> list[str]:
        """The last ``lines`` non-blank lines this process wrote on stderr (``[]`` without a ``stderr_path``);
        waits up to ``wait`` seconds for a dying process to exit first, so that its last words are on disk."""
        if self.stderr_path is None:
            return []
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(self._err_start)
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return []
        return [ln.rstrip() for ln in text.splitlines() if ln.strip()][-lines:]

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
