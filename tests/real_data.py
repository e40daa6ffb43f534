"""Where the real RESCUE-Bench samples are for the tests that need them: ``$RESCUE_REAL_DATA`` (a .jsonl file or a
folder), else the shared subset beside the repository (``../shared``, outside a fresh clone).

A module of its own so a test can import it: ``conftest`` names a different module in each test folder."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_DATA_ENV = "RESCUE_REAL_DATA"
DEFAULT_REAL_DATA = REPO_ROOT.parent / "shared" / "data" / "rescue" / "rescue_subset.jsonl"
REAL_DATA = Path(os.environ[REAL_DATA_ENV]) if os.environ.get(REAL_DATA_ENV) else DEFAULT_REAL_DATA
