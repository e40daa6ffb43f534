"""Moved to :mod:`rescue.llm.reliable`; this name stays an alias of that module so existing imports keep working."""

import sys

from rescue.llm import reliable as _moved

sys.modules[__name__] = _moved
