"""``--allow-unsealed``: the option of the commands that load a checkpoint for use (eval, gtp, show, export).

An *unsealed* step has no ``kifunet_checksums.json`` (its save was cut short after orbax committed it, or it predates
checksums): :func:`kifunet.train.checkpointing.require_loadable` refuses it unless asked. This option asks, for the
whole command (and the processes it starts), by setting :data:`ENV`; the step then loads with one warning line.
Imports nothing heavy (every command's parser is built at start-up).
"""

from __future__ import annotations

import argparse
import os

#: the variable the checkpoint loader reads (:data:`kifunet.train.checkpointing.ALLOW_UNSEALED_ENV`)
ENV = "KIFUNET_ALLOW_UNSEALED"


def add_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-unsealed", action="store_true",
                   help="load a checkpoint step that has no kifunet_checksums.json (unchecked: a damaged byte in it "
                        f"cannot be told; one warning line); {ENV}=1 does the same for any command")


def apply(args) -> None:
    """Allow unsealed steps for the rest of the process when ``--allow-unsealed`` was given."""
    if getattr(args, "allow_unsealed", False):
        os.environ[ENV] = "1"
