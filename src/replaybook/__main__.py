"""``python -m replaybook …``: the ``replaybook`` command (see :mod:`replaybook.cli`), for an
environment where the console script is not on ``PATH``."""

import sys

from .cli import main

sys.exit(main())
