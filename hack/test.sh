#!/usr/bin/env bash
# Runs every test and check the project has, then prints the totals alone on the last line as
# "N passed, N failed[, N skipped]". Every stage runs even when an earlier one failed, so one run
# shows everything that is broken; the exit code is non-zero when anything failed.
#
# Stages: static checks (biome, tsc, the import layers, commit subjects, generated files: each counted
# as one test), tool build (a failure here fails the run loudly), vitest unit, vitest integration (real
# apiserver + etcd), vitest e2e (OLM on a kwok cluster, image mirroring, the real node), then the leak
# checks (the real node's leftovers, the tests' temporary files).
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

# The real engines' tools (hack/tools/*.sh: Velero, MinIO, Argo, VolSync, CSI, ...) are needed only by the
# real node's engine and production journeys, the last thing a run waits for. On a cold machine their
# build starts first, in the background, beside the static checks and the other tools' build: a cold Go
# build does not keep both cores busy (module downloads, single-threaded links), and the tests that start
# after the tools stage mostly wait on API servers and pods, so the two builds overlap where the machine has
# room, and the engine journeys no longer wait for a build that began only after every other tool. Warm,
# the tools are copies. The node's journeys that need them wait for the exit code this writes
# (VWS_ENGINES_BUILD_RC, hack/lib/engines/built.ts).
ENGINES_LOG="$OUT/engines-build.log"
ENGINES_RC="$OUT/engines-build.rc"
(
  hack/build-tools.sh engines >"$ENGINES_LOG" 2>&1
  echo $? >"$ENGINES_RC.tmp" && mv "$ENGINES_RC.tmp" "$ENGINES_RC"
) &
engines_build=$!

check "lint (biome, warnings are errors)" biome check --error-on-warnings .
check "typecheck (tsc --noEmit)" tsc -p tsconfig.json
check "imports go down the layers (dependency-cruiser)" npm run --silent check:imports
# Subjects of the commits after hack/commit-subjects.ts's baseline (in a git checkout only).
if git rev-parse --git-dir >/dev/null 2>&1; then
  check "commit subjects of at most 72 characters" node hack/commit-subjects.ts
fi
if grep -q '"check:generated"' package.json; then
  check "generated files are fresh" npm run --silent check:generated
fi

stage "tools (hack/build-tools.sh e2e images node, hack/fetch-crds.sh)"
if ! { hack/build-tools.sh e2e images node && hack/fetch-crds.sh; }; then
  echo "FATAL: building the test tools failed (see above)" >&2
  failed_stages+=("tools")
fi

run_vitest() { # run_vitest NAME [VITEST ARGS...]: one vitest run, its JSON report as NAME.json
  local name=$1
  shift
  stage "vitest $name"
  if ! vitest run "$@" --reporter=default --reporter=json --outputFile.json="$OUT/$name.json"; then
    failed_stages+=("vitest $name")
  fi
}
# run_tagged NAME [VITEST ARGS...]: the same, every output line prefixed with NAME, the exit code in NAME.rc.
run_tagged() {
  local name=$1
  shift
  vitest run "$@" --reporter=default --reporter=json --outputFile.json="$OUT/$name.json" 2>&1 | sed -u "s/^/[$name] /"
  echo "${PIPESTATUS[0]}" >"$OUT/$name.rc"
}
KWOK_E2E=(--project e2e --exclude 'test/e2e/real-node/**')
# The real node's journeys, all on one node (real-node.test.ts: its own, then the engines' and the
# production journey once the engines' tools are built), and the killed run on a node of its own (ADR 0048).
NODE_E2E=(--project e2e test/e2e/real-node/)
node_e2e() { # node_e2e RUNNER: the node's journeys, told where the engines' build writes its exit code
  VWS_ENGINES_BUILD_RC="$ENGINES_RC" VWS_ENGINES_BUILD_LOG="$ENGINES_LOG" "$1" e2e-node "${NODE_E2E[@]}"
}

hack/lib/temp-leaks.sh snapshot "$OUT/tmp-before.txt"
tools_ok=true
[[ ! " ${failed_stages[*]} " =~ " tools " ]] || tools_ok=false
if [ -n "${VWS_TEST_SERIAL:-}" ]; then
  run_vitest unit --project unit
  if $tools_ok; then
    run_vitest integration --project integration
    run_vitest e2e-kwok "${KWOK_E2E[@]}"
    node_e2e run_vitest
  fi
else
  # The real node's journeys are the longest stream and mostly wait on pods: they start first, beside the
  # unit tests; then the integration project (about half a core) and the OLM-on-kwok journeys join them.
  # The streams share nothing (the integration API server, the kwok clusters and the real node each have
  # their own ports, directories and locks); the node runs its own journeys at once and the engines' once
  # their tools are there (one node at a time: the node's lock). VWS_TEST_SERIAL=1 runs everything one
  # after the other.
  if $tools_ok; then
    stage "vitest e2e-node (the real node's journeys, the engines' once their tools are built), in the background"
    node_e2e run_tagged &
  fi
  run_vitest unit --project unit
  if $tools_ok; then
    stage "vitest integration and e2e-kwok, side by side with the real node's stream"
    run_tagged integration --project integration &
    run_tagged e2e-kwok "${KWOK_E2E[@]}" &
    wait
    for p in integration e2e-kwok e2e-node; do
      [ -f "$OUT/$p.rc" ] || continue
      [ "$(cat "$OUT/$p.rc")" = 0 ] || failed_stages+=("vitest $p")
    done
  fi
fi
wait "$engines_build" 2>/dev/null
if [ "$(cat "$ENGINES_RC" 2>/dev/null)" != 0 ]; then
  tail -40 "$ENGINES_LOG" >&2
  echo "FATAL: building the engines' tools failed (log: $ENGINES_LOG)" >&2
  failed_stages+=("tools (engines)")
fi

# After every test: nothing a real node (test/e2e/real-node/) started may be left on this machine.
check "real node left nothing behind (hack/lib/real-node-leaks.sh)" hack/lib/real-node-leaks.sh
check "tests left no temporary files (hack/lib/temp-leaks.sh)" hack/lib/temp-leaks.sh check "$OUT/tmp-before.txt"

stage "summary"
node hack/test-summary.ts "$OUT" "$checks_passed" "$checks_failed" "${failed_stages[@]}"
