"""How the profile readers (:mod:`kifunet.data_prep.profiles`) see real archives: the source and time-control class
of each record's first player to move, counted per archive group.

    python scripts/profile_headers.py ../shared/data/kgs/*.tar.gz --every 4 --records 3000
    python scripts/profile_headers.py ../shared/data/fox/fox-pro-2012-2019.tar.gz --records 3000

Reads the first ``--records`` SGF files of every ``--every``-th archive (``load_game``, the build's reader), prints
one line per (source, time control) pair and the records the reader rejects.
"""

from __future__ import annotations

import argparse
import collections
import tarfile

from kifunet.data_prep import profiles
from kifunet.data_prep.game import BLACK
from kifunet.data_prep.sgf.sgf_io import load_game


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("archives", nargs="+")
    p.add_argument("--every", type=int, default=1, help="read every N-th archive (1)")
    p.add_argument("--records", type=int, default=3000, help="records per archive (3000)")
    args = p.parse_args(argv)
    counts, bad, total = collections.Counter(), 0, 0
    for path in sorted(args.archives)[::args.every]:
        with tarfile.open(path) as tar:
            n = 0
            for m in tar:
                if not (m.isfile() and m.name.endswith(".sgf")) or n >= args.records:
                    continue
                n += 1
                total += 1
                try:
                    info = load_game(tar.extractfile(m).read(), path=f"{path}:{m.name}").info
                except Exception:  # noqa: BLE001 - a record the build would reject: counted, not profiled
                    bad += 1
                    continue
                prof = profiles.profile_of(info, BLACK)
                counts[(prof.source, prof.time_control)] += 1
    for (src, tc), c in sorted(counts.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        print(f"source {src or 'unknown':<8} time control {tc or 'unknown':<15} {c:>7,} ({100 * c / total:.2f}%)")
    print(f"{total:,} records, {bad:,} rejected by the reader")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
