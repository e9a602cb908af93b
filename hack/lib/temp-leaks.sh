#!/usr/bin/env bash
# temp-leaks.sh snapshot FILE | check FILE: the tests' temporary files (every test names them
# "$TMPDIR/vws-*") must be gone when the run ends. hack/test.sh takes a snapshot before the tests and
# checks after them; an entry that is new since the snapshot is a leak (exit 1, one line each).
# Another run on the machine at the same time (make bench, a second make test) would show up here too.
set -u
TMP=${TMPDIR:-/tmp}
list() { find "$TMP" -mindepth 1 -maxdepth 1 -name 'vws-*' ! -name '*.lock' 2>/dev/null | sort; }
case ${1:-} in
  snapshot) list >"$2" ;;
  check)
    leaked=$(list | comm -13 "$2" -)
    if [ -n "$leaked" ]; then
      echo "$leaked" | sed 's/^/LEAK: /'
      echo "tests left $(echo "$leaked" | wc -l) temporary entr(y/ies) in $TMP (each test removes what it creates)"
      exit 1
    fi
    echo "tests left no temporary files in $TMP"
    ;;
  *)
    echo "usage: $0 snapshot FILE | check FILE" >&2
    exit 2
    ;;
esac
