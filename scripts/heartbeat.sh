# Sourced by scripts/test.sh: `beat STEP CMD ARGS...` runs CMD and, while it runs, prints the step and the
# elapsed time on stderr every HEARTBEAT_S seconds (default 20), so a long pip compile or test run never
# looks hung. CMD's exit status is returned; the ticker (and its sleep) end with it.
beat() {
  local what=$1
  shift
  local started
  started=$(date +%s)
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    while :; do
      sleep "${HEARTBEAT_S:-20}" &
      nap=$!
      wait "$nap"
      elapsed=$(( $(date +%s) - started ))
      printf '    ... %dm%02ds elapsed: %s\n' $(( elapsed / 60 )) $(( elapsed % 60 )) "$what" >&2
    done
  ) &
  local ticker=$!
  local status=0
  "$@" || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$status"
}
