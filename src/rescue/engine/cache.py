"""Moved to :mod:`rescue.llm.cache`; this name stays an alias of that module so existing imports keep working."""

import sys

from rescue.llm import cache as _moved

sys.modules[__name__] = _moved
