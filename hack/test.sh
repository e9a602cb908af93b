#!/usr/bin/env bash
# Runs every test and check the project has, then prints the totals alone on the last line as
# "N passed, N failed[, N skipped]". Every stage runs even when an earlier one failed, so one run
# shows everything that is broken; the exit code is non-zero when anything failed.
#
# Stages: static checks (biome, tsc, generated files: each counted as one test), tool build
# (a failure here fails the run loudly), vitest unit, vitest integration (real apiserver + etcd),
# vitest e2e (OLM on a kwok cluster, image mirroring, the real node), then the real node's leak check.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:$PATH"
OUT="$ROOT/bin/test-results"
rm -rf "$OUT" && mkdir -p "$OUT"
START=$(date +%s)
checks_passed=0
checks_failed=0
failed_stages=()

stage() { printf '\n=== %s (%ss)\n' "$1" "$(($(date +%s) - START))"; }
check() { # check NAME CMD...: a static check counted as one test
  local name=$1
  shift
  stage "$name"
  if "$@"; then checks_passed=$((checks_passed + 1)); else checks_failed=$((checks_failed + 1)); failed_stages+=("$name"); fi
}

check "lint (biome, warnings are errors)" biome check --error-on-warnings .
check "typecheck (tsc --noEmit)" tsc -p tsconfig.json
if grep -q '"check:generated"' package.json; then
  check "generated files are fresh" npm run --silent check:generated
fi

stage "tools (hack/build-tools.sh all, hack/fetch-crds.sh)"
if ! { hack/build-tools.sh all && hack/fetch-crds.sh; }; then
  echo "FATAL: building the test tools failed (see above)" >&2
  failed_stages+=("tools")
fi

run_vitest() { # run_vitest PROJECT
  stage "vitest --project $1"
  if ! vitest run --project "$1" --reporter=default --reporter=json --outputFile.json="$OUT/$1.json"; then
    failed_stages+=("vitest $1")
  fi
}
# run_vitest_tagged PROJECT: the same, every output line prefixed with the project, the exit code in a file.
run_vitest_tagged() {
  vitest run --project "$1" --reporter=default --reporter=json --outputFile.json="$OUT/$1.json" 2>&1 |
    sed -u "s/^/[$1] /"
  echo "${PIPESTATUS[0]}" >"$OUT/$1.rc"
}
run_vitest unit
if [[ ! " ${failed_stages[*]} " =~ " tools " ]]; then
  if [ -n "${VWS_TEST_SERIAL:-}" ]; then
    run_vitest integration
    run_vitest e2e
  else
    # integration and e2e side by side: each waits on API servers and pods far more than it computes
    # (the integration project used about half a core), and they share nothing: the integration API
    # server, the e2e clusters and the real node each have their own ports, directories and locks.
    # VWS_TEST_SERIAL=1 runs them one after the other.
    stage "vitest --project integration and --project e2e, side by side"
    run_vitest_tagged integration &
    run_vitest_tagged e2e &
    wait
    for p in integration e2e; do
      [ "$(cat "$OUT/$p.rc" 2>/dev/null)" = 0 ] || failed_stages+=("vitest $p")
    done
  fi
fi

# After every test: nothing a real node (test/e2e/real-node/) started may be left on this machine.
check "real node left nothing behind (hack/lib/real-node-leaks.sh)" hack/lib/real-node-leaks.sh

stage "summary"
node hack/test-summary.ts "$OUT" "$checks_passed" "$checks_failed" "${failed_stages[@]}"
