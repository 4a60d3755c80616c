"""``warn``: a warning that points at the user's line, however deep in pigp it starts."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def warn(message, category=RuntimeWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line: the first
    caller outside the pigp package."""
    frame, level = sys._getframe(1), 2  # stacklevel 2: warn's caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)
