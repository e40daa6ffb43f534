#!/usr/bin/env bash
# The test suite against the newest release of every dependency instead of constraints.txt's versions: the same
# steps as scripts/test.sh, in a virtual environment of its own (.venv-newest), printing first which versions
# differ from the lock. Green here and the lock is stale: `.venv-newest/bin/python scripts/lock.py` refreshes it.
set -euo pipefail
cd "$(dirname "$0")/.."
RESCUE_NEWEST=1 exec bash scripts/test.sh "$@"
