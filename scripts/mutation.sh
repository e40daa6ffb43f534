#!/usr/bin/env bash
# Mutation testing (mutmut) of metrics, tasks, the model layer's cache and retries, and the report's statistics.
#   bash scripts/mutation.sh [module ...] [--children N]    # modules: bash scripts/mutation.sh --list
# Prints the score per module (also written to .mutation/scores.json). Slow (minutes per module), so not part
# of scripts/test.sh; the environment is the one scripts/test.sh makes, plus the `mutation` extra (mutmut).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
if ! "$PY" -c "import mutmut" 2>/dev/null; then
  "$PY" -m pip install --quiet 'mutmut>=3.3'
fi
exec "$PY" scripts/mutation.py "$@"
