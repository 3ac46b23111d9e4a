"""Running one parsed command: the exit status and what a learner sees when it fails.

Every command module (``labkit.cli`` and the layers' ``cli`` modules, also when run on their own
with ``python -m``) runs its commands through :func:`dispatch`, so errors read the same
everywhere. It lives apart from ``labkit.cli`` so that command modules never import the parser
that loads them.
"""

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
