"""Running one parsed command: the exit status and what a learner sees when it fails, alike for every
command module (kept apart from ``labkit.cli`` so command modules never import the parser)."""

from __future__ import annotations

import argparse
import os
import sys

from labkit.core.errors import LabkitError


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed command; a LabkitError becomes its message on stderr and exit status 2."""
    try:
        return int(args.func(args) or 0)
    except LabkitError as exc:
        print(f"labkit: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `labkit show ... | head` closed the pipe early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
