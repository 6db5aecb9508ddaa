"""The sha256 of what the pipeline makes, to show a restructure changed no output.

Builds the sample corpus (``samples/gnugo``) with three feature sets (``maddison``, ``alphago`` with its ladder
planes, ``gonn``), and, where ``../shared/data/kgs`` is present, one real KGS archive with ``gonn``; then trains
``tiny`` (20 steps, no input workers) and ``cpu_small`` for 20 steps with two input workers on the sample build,
and the default net's recipe ``cpu_default`` for 20 steps on the ``gonn`` sample build.
It prints one line per output: the sha256 of every shard file (``*.h5``) and of the games tables and manifest's
rows, and the sha256 of every trained array (parameters and BatchNorm statistics) of the final checkpoint.

Command: ``python scripts/output_fingerprint.py --out /tmp/fp > before.txt``, change the code, run it again into
another ``--out`` and ``diff`` the two outputs: they must be identical (same machine; about 2 minutes).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KGS = ROOT.parent / "shared" / "data" / "kgs" / "KGS-2017_04-19-913-.tar.gz"


def _run(args: list[str]) -> None:
    subprocess.run([sys.executable, "-c", "import sys; from kifunet.cli import main; sys.exit(main())", *args], check=True, stdout=subprocess.DEVNULL)


def _file_hashes(out: Path) -> list[str]:
    lines = []
    for p in sorted(out.rglob("*")):
        if p.is_file() and (p.suffix == ".h5"):
            lines.append(f"{p.relative_to(out.parent)} {hashlib.sha256(p.read_bytes()).hexdigest()}")
    return lines


def _weights(workdir: Path) -> list[str]:
    from kifunet.train import checkpointing

    steps = sorted((int(d.name) for d in (workdir / "checkpoints").iterdir() if d.name.isdigit()))
    weights, meta = checkpointing.load_weights(str(workdir / "checkpoints" / str(steps[-1])))
    lines = [f"{workdir.name} step {meta.get('step')}"]
    for k in sorted(weights):
        a = weights[k]
        lines.append(f"{workdir.name} {k} {a.dtype} {a.shape} {hashlib.sha256(a.tobytes()).hexdigest()}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="a scratch directory (replaced)")
    args = ap.parse_args()
    out = Path(args.out)
    subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir(parents=True)
    samples = ROOT / "samples" / "gnugo"
    splits = ["--split", "test:2015", "--split", "train:rest"]
    lines: list[str] = []
    for fs in ("maddison", "alphago", "gonn"):
        d = out / f"sample_{fs}"
        _run(["build", str(samples), "--out", str(d), "--features", fs, "--workers", "2", *splits])
        lines += _file_hashes(d)
    if KGS.exists():
        d = out / "kgs_gonn"
        _run(["build", str(KGS), "--out", str(d), "--features", "gonn", "--workers", "2",
              "--split", "train:rest", "--hash-split", "test:0.05"])
        lines += _file_hashes(d)
    else:
        print(f"# {KGS} absent: the KGS build is left out", file=sys.stderr)
    configs = ROOT / "train" / "configs"
    data = out / "sample_maddison"
    _run(["train", "--config", str(configs / "tiny.py"), "--workdir", str(out / "tiny"), f"--config.dataset={data}"])
    lines += _weights(out / "tiny")
    _run(["train", "--config", str(configs / "cpu_small.py"), "--workdir", str(out / "cpu_small"),
          f"--config.dataset={data}", "--config.train_positions=" + str(20 * 256), "--config.batch_size=256",
          "--config.input.workers=2", "--config.eval_every_positions=2560", "--config.eval_positions=512",
          "--config.final_eval_positions=512", "--config.checkpoint_every_positions=2560"])
    lines += _weights(out / "cpu_small")
    # the default net's recipe (a GoNN ResNet: centre weights, PReLU, dilation, global pooling) on its planes
    _run(["train", "--config", str(configs / "cpu_default.py"), "--workdir", str(out / "cpu_default"),
          f"--config.dataset={out / 'sample_gonn'}", "--config.train_positions=" + str(20 * 64),
          "--config.batch_size=64", "--config.input.workers=0", "--config.eval_every_positions=640",
          "--config.eval_positions=128", "--config.final_eval_positions=128", "--config.checkpoint_every_positions=640",
          "--config.time_limit_s=0"])
    lines += _weights(out / "cpu_default")
    print("\n".join(lines))
    os.sys.stdout.flush()


if __name__ == "__main__":
    main()
