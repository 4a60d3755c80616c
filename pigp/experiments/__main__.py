"""``python -m pigp.experiments NAME``: the same as ``pigp NAME``."""

import sys

from .cli import main

sys.exit(main())
