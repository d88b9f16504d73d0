"""``python -m replaybook.door door|serve-capsule|prune …`` (see :mod:`replaybook.door.cli`)."""

import sys

from .cli import main

sys.exit(main())
