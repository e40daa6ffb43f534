"""Moved to :mod:`rescue.llm.client`; this name stays an alias of that module so existing imports keep working."""

import sys

from rescue.llm import client as _moved

sys.modules[__name__] = _moved
