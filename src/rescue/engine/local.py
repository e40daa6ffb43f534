"""Moved to :mod:`rescue.llm.local`; this name stays an alias of that module so existing imports keep working."""

import sys

from rescue.llm import local as _moved

sys.modules[__name__] = _moved
