"""Decompression bombs against the inputs reader: seconds and peak RSS per container, next to the system tools.

Builds (once, cached in ``--dir``) small archives whose one big member inflates far past the record cap
(``sources.MAX_MEMBER_BYTES``, 64 MiB), between two small games, then reads each with ``inputs.iter_sources`` in
a fresh process and reports what came out, the wall time and the process's peak RSS (``ru_maxrss``). Next to
it, the time the system's own decompressor takes to stream the same file (``gzip -dc FILE | wc -c`` and the
like): a linear reader costs about that plus tarfile's skipping, whatever the member size.

=============  ==========================================================================================
case           archive
=============  ==========================================================================================
tar.bz2        256 MiB of zeros in ``bomb.sgf`` (the file is a few hundred bytes)
tar.gz         1 GiB of zeros in ``bomb.sgf``
tar.xz         1 GiB of zeros in ``bomb.sgf``
zip            1 GiB of zeros, deflate, in ``bomb.sgf`` whose headers claim 100 bytes (a lying zip bomb)
zip-in-tar.gz  that zip inside a .tar.gz
=============  ==========================================================================================

    python benchmarks/bench_bombs.py [--dir DIR] [--cases tar.bz2,tar.gz,...] [--timeout S] [--out FILE.json]
    python benchmarks/bench_bombs.py --inputs OLD/inputs.py       # the same cases against another reader

``--inputs`` loads a stand-alone copy of ``data_prep/sgf/inputs.py`` (one that imports only the standard library,
as the reader before issue 13 did) in place of the package's. A case that runs past ``--timeout`` is reported
as such, with the RSS it had reached.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

MiB = 1 << 20
SMALL = b"(;GM[1]FF[4]SZ[19]PB[a]PW[b];B[pd];W[dp])"


class _Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def _tar(path: Path, mode: str, big: int, big_bytes: bytes | None = None, big_name: str = "bomb.sgf") -> None:
    kw = {"preset": 1} if mode.endswith("xz") else {"compresslevel": 6}
    tmp = path.with_suffix(path.suffix + ".part")
    with tarfile.open(tmp, mode, **kw) as tf:
        for name, data, n in (("a.sgf", SMALL, None), (big_name, big_bytes, big), ("b.sgf", SMALL, None)):
            ti = tarfile.TarInfo(name)
            ti.size = len(data) if data is not None else n
            tf.addfile(ti, io.BytesIO(data) if data is not None else _Zeros(n))
    tmp.rename(path)


def _lying_zip(big: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.sgf", SMALL)
        zi = zipfile.ZipInfo("bomb.sgf")
        zi.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(zi, "w") as w:  # under 4 GiB: 32-bit sizes, no zip64 fields
            for _ in range(big // MiB):
                w.write(bytes(MiB))
        zf.writestr("b.sgf", SMALL)
    raw = bytearray(buf.getvalue())
    # claim 100 bytes, in the local header and in the central directory entry
    local = raw.find(b"bomb.sgf") - 30
    assert raw[local:local + 4] == b"PK\x03\x04"
    struct.pack_into("<I", raw, local + 22, 100)
    cd = raw.find(b"PK\x01\x02")
    while cd >= 0:
        nlen = struct.unpack_from("<H", raw, cd + 28)[0]
        if raw[cd + 46:cd + 46 + nlen] == b"bomb.sgf":
            struct.pack_into("<I", raw, cd + 24, 100)
        cd = raw.find(b"PK\x01\x02", cd + 4)
    assert zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo("bomb.sgf").file_size == 100
    return bytes(raw)


CASES = {
    "tar.bz2": (256 * MiB, "bzip2 -dc"),
    "tar.gz": (1024 * MiB, "gzip -dc"),
    "tar.xz": (1024 * MiB, "xz -dc"),
    "zip": (1024 * MiB, "unzip -p"),
    "zip-in-tar.gz": (1024 * MiB, None),
}


def build(d: Path, case: str) -> Path:
    big = CASES[case][0]
    p = d / f"bomb-{big // MiB}MiB.{case.replace('-tar.', '.tar.')}"  # zip-in-tar.gz -> ...zip-in.tar.gz
    if p.exists():
        return p
    t0 = time.perf_counter()
    if case.startswith("tar."):
        _tar(p, "w:" + case[4:], big)
    elif case == "zip":
        p.write_bytes(_lying_zip(big))
    else:
        _tar(p, "w:gz", 0, _lying_zip(big), "inner.zip")
    print(f"  built {p.name}: {p.stat().st_size:,} bytes in {time.perf_counter() - t0:.1f} s", flush=True)
    return p


CHILD = r"""
import importlib.util, json, resource, sys, time
alt = sys.argv[1]
if alt:
    spec = importlib.util.spec_from_file_location("bench_inputs_alt", alt)
    inputs = importlib.util.module_from_spec(spec)
    sys.modules["bench_inputs_alt"] = inputs
    spec.loader.exec_module(inputs)
    caps = inputs
else:
    from kifunet.data_prep.sgf import inputs
    from kifunet.data_prep.sgf import sources as caps
t0 = time.perf_counter()
infos = []
out = [(s.path.rsplit("/", 1)[-1], s.error, len(s.data) if s.data is not None else None)
       for s in inputs.iter_sources([sys.argv[2]], infos)]
print(json.dumps({"seconds": time.perf_counter() - t0, "cap": caps.MAX_MEMBER_BYTES,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "sources": out,
                  "errors": [(e["reason"], e["detail"][:160]) for e in infos[0].errors]}))
"""


def run_reader(path: Path, alt: str, timeout: float) -> dict:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, alt, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    peak = 0
    while proc.poll() is None and time.perf_counter() - t0 < timeout:
        try:  # the child's RSS as it runs (VmHWM: its peak so far), for a run that will be cut off
            for line in open(f"/proc/{proc.pid}/status"):
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except OSError:
            pass
        time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        return {"timeout": True, "seconds": time.perf_counter() - t0, "rss_mib": peak}
    out, err = proc.communicate()
    if proc.returncode != 0:
        return {"failed": err[-2000:], "seconds": time.perf_counter() - t0}
    return json.loads(out.strip().splitlines()[-1])


def run_tool(path: Path, tool: str | None) -> float | None:
    if tool is None:
        return None
    t0 = time.perf_counter()
    subprocess.run(f"{tool} {path} | wc -c", shell=True, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kifunet-bombs"))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--inputs", default="", help="a stand-alone inputs.py to run instead of the package's")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    load = lambda: os.getloadavg()  # noqa: E731
    print(f"load average before: {load()}; reader: {args.inputs or 'kifunet.data_prep.sgf.inputs'}", flush=True)
    results = {}
    for case in args.cases.split(","):
        path = build(args.dir, case)
        tool = run_tool(path, CASES[case][1])
        r = run_reader(path, args.inputs, args.timeout)
        r.update(case=case, file_bytes=path.stat().st_size, member_mib=CASES[case][0] // MiB,
                 tool=CASES[case][1], tool_seconds=tool)
        results[case] = r
        got = ("TIMEOUT" if r.get("timeout") else "FAILED" if "failed" in r
               else " ".join(f"{n.split('!', 1)[-1]}:{e or 'ok'}" for n, e, _ in r["sources"]))
        tool_s = f"{tool:6.2f} s" if tool is not None else "     -  "
        print(f"{case:14s} {r['member_mib']:5d} MiB member, {r['file_bytes']:>9,} B file | reader "
              f"{r['seconds']:7.2f} s, peak RSS {r.get('rss_mib', 0):7.1f} MiB | {CASES[case][1] or '':10s} "
              f"{tool_s} | {got}", flush=True)
        if r.get("errors"):
            print(f"{'':14s} errors: {r['errors']}")
    print(f"load average after: {load()}")
    if args.out:
        args.out.write_text(json.dumps({"load_after": load(), "reader": args.inputs or "package",
                                        "results": results}, indent=1))


if __name__ == "__main__":
    main()
