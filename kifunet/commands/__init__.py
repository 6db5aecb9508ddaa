"""Subcommands of the kifunet CLI (see kifunet/cli.py)."""
