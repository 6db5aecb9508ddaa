"""The default net: ``cpu_default`` with an ownership head (the claims table's best extra head, issue 51), weighted
1.5. Command, hardware and result: docs/training.md (Each config)."""

from __future__ import annotations

from kifunet.train.configs import cpu_default, default


def get_config():
    return default.derive(cpu_default.get_config(), model=dict(kwargs=dict(ownership_head=True)), ownership_weight=1.5)
