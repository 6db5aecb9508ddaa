"""A recorded GTP session against the default net: ``kifunet gtp`` must answer every line as it did when recorded.

``tests/fixtures/gtp_session/session.gtp`` sends every command group (core, analysis, GoGui, SGF, time, errors);
``session.out`` is what ``kifunet gtp`` (no options: the default net, :func:`kifunet.data_prep.paths.default_net`) wrote
on stdout. Three things in an answer are not the engine's to decide and are normalised on both sides: the
number ``cputime`` answers, the date ``printsgf`` writes (``DT``), and the folders the placeholders ``{samples}``
and ``{tmp}`` stand for. Analyses are sent without an interval, so each answers exactly one block.

The session must also end with exit status 0 (``quit`` soon after ``time_settings``: see ``docs/building.md``'s
reliability table).

Record again (only when a change of behaviour is meant): ``python tests/test_gtp_transcript.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kifunet.data_prep.paths import sample_games

HERE = Path(__file__).resolve().parent / "fixtures" / "gtp_session"
SESSION, RECORD = HERE / "session.gtp", HERE / "session.out"


def replay(tmp: Path) -> str:
    """``kifunet gtp``'s stdout for the session, with ``tmp`` as ``{tmp}`` (normalised: module docstring)."""
    samples = str(sample_games())
    text = SESSION.read_text().replace("{samples}", samples).replace("{tmp}", str(tmp))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "KIFUNET_JAX_CACHE": "off"}
    proc = subprocess.run([sys.executable, "-m", "kifunet.cli", "gtp"], input=text, capture_output=True, text=True,
                          env=env, timeout=600, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.replace(samples, "{samples}").replace(str(tmp), "{tmp}")
    out = re.sub(r"DT\[[0-9-]+\]", "DT[DATE]", out)
    return re.sub(r"(?m)^=(\d*) [0-9]+\.[0-9]{3}$", r"=\1 SECONDS", out)  # cputime's answer


def responses(text: str) -> list[str]:
    """The responses of a GTP stdout (each ends with a blank line)."""
    return text.split("\n\n")[:-1]


@pytest.mark.slow  # loads the default net and compiles it for three board sizes (over 15 s loaded)
def test_the_recorded_session_gets_the_same_answers(tmp_path):
    sent = [line for line in SESSION.read_text().splitlines() if line.split("#", 1)[0].strip()]
    want, got = responses(RECORD.read_text()), responses(replay(tmp_path))
    assert len(want) == len(sent), (len(want), len(sent))  # one response a command, the quit included
    for i, (line, a, b) in enumerate(zip(sent, want, got)):
        assert a == b, f"response {i} to {line!r}:\nrecorded {a!r}\nnow      {b!r}"
    assert len(got) == len(want)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        RECORD.write_text(replay(Path(d)))
    print(f"wrote {RECORD}")
