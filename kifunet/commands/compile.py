"""``kifunet compile``: compile configs' training steps for TPU slices (or this CPU) without the hardware.

Each config x target is compiled with XLA for the target (:mod:`kifunet.train.aot`) and printed as one line of
the compile table: XLA's FLOPs and bytes per chip beside the model's, memory per chip against the chip's HBM
(with the largest batch that fits when the asked one does not), op count, and a roofline step time and MFU from
the chip's datasheet. ``--out FILE.json`` keeps the rows (a rerun adds to it and skips rows it already holds);
``--into PAGE.md`` writes the table from that file between the page's ``compile-table`` markers.
"""

from __future__ import annotations

import argparse
import json
import os

from kifunet.errors import CommandError

HELP = "compile configs' training steps for TPU slices or this CPU without the hardware: FLOPs, memory, ops, roofline"

START, END = "<!-- compile-table:start -->", "<!-- compile-table:end -->"
DEFAULT_TARGETS = ("v5e-8", "v5p-8", "v6e-8", "v5e-16", "2xv5e-8", "cpu")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", nargs="+", default=None, metavar="NAME",
                   help="shipped config names or config files; default: every shipped config")
    p.add_argument("--target", nargs="+", default=list(DEFAULT_TARGETS), metavar="TARGET",
                   help=f"targets (default: {' '.join(DEFAULT_TARGETS)}; also v5e-4)")
    p.add_argument("--batch", type=int, nargs="+", default=[256], help="global batch sizes (default 256)")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32", "config"),
                   help="the model's dtype on TPU targets (default bfloat16); the CPU compiles the config's own")
    p.add_argument("--libtpu", default=None, metavar="DIR",
                   help="a `pip install --target` folder holding libtpu (default: TPU_LIBRARY_PATH or an installed "
                        "libtpu)")
    p.add_argument("--out", default=None, metavar="FILE.json", help="keep the rows here (rows already in it are "
                   "not compiled again)")
    p.add_argument("--into", default=None, metavar="PAGE.md", help="write the table of --out's rows into PAGE "
                   "between its compile-table markers, compiling nothing else")


def read_rows(path: str | None) -> list[dict]:
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise CommandError(f"{path}: not a compile table written by kifunet compile ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise CommandError(f"{path}: not a compile table written by kifunet compile (no list of rows)")
    return doc["rows"]


def write_rows(path: str, rows: list[dict]) -> None:
    from kifunet.data_prep.fileio.atomic import write_json_atomic

    write_json_atomic(path, {"command": "kifunet compile", "rows": rows})


def into_page(page: str, rows: list[dict]) -> None:
    from kifunet.train import aot

    text = open(page).read()
    if START not in text or END not in text:
        raise CommandError(f"{page}: no {START} ... {END} markers to write the table between")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    with open(page, "w") as f:
        f.write(f"{head}{START}\n{aot.table(rows)}\n{END}{tail}")


def run(args) -> int:
    from kifunet.train import aot
    from kifunet.train.configs import ConfigError

    rows = read_rows(args.out)
    if args.into:
        if not args.out:
            raise CommandError("--into needs --out FILE.json, the rows to write")
        into_page(args.into, rows)
        return 0
    unknown = [t for t in args.target if t not in aot.TARGETS]
    if unknown:
        raise CommandError(f"unknown target {unknown[0]!r}; targets: {', '.join(aot.TARGETS)}")
    from kifunet.commands.train import config_file, config_names

    if min(args.batch) < 1:
        raise CommandError("--batch must be at least 1")
    names = args.config or [n for n in config_names() if n != "default"]
    files = {n: config_file(n) for n in names}
    done = {(r["config"], r["target"], int(r["batch"])) for r in rows}
    print(aot.TABLE_HEAD, flush=True)
    for target in args.target:
        for name in names:
            stem = os.path.splitext(os.path.basename(files[name].partition(":")[0]))[0]
            for batch in args.batch:
                if (stem, target, batch) in done:
                    continue
                t = aot.TARGETS[target]
                dtype = None if t.chip is None or args.dtype == "config" else args.dtype
                try:
                    row = aot.compile_step(files[name], t, batch=batch, dtype=dtype, libtpu=args.libtpu)
                except (aot.BatchError, ConfigError) as e:  # NoLibtpu, a missing file: reported as they are
                    raise CommandError(f"{name} on {target}: {e}") from None
                rows.append(row)
                print(aot.table([row]).splitlines()[-1], flush=True)
                if args.out:
                    write_rows(args.out, rows)
    return 0
