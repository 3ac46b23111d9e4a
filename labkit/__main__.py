"""``python -m labkit`` runs the command line."""

import sys

from labkit.cli import main

sys.exit(main())
