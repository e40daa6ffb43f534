"""Moved to :mod:`rescue.llm.limiter`; this name stays an alias of that module so existing imports keep working."""

import sys

from rescue.llm import limiter as _moved

sys.modules[__name__] = _moved
