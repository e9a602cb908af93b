#!/usr/bin/env bash
# reaper.sh PARENT_PID COMMAND [ARGS...]
# Runs COMMAND and makes sure it dies with PARENT_PID (or with this script): the test harness
# starts etcd and kube-apiserver through it so a crashed or SIGKILLed test run leaves nothing
# behind. SIGTERM/SIGINT are forwarded to COMMAND; the exit code is COMMAND's.
set -u
parent=$1
shift
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
self=$$
(
  while kill -0 "$parent" 2>/dev/null && kill -0 "$self" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1; done
  if kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$child" 2>/dev/null || exit 0; sleep 1; done
    kill -KILL "$child" 2>/dev/null
  fi
) &
watcher=$!
rc=0
while :; do
  wait "$child"
  rc=$?
  kill -0 "$child" 2>/dev/null || break
done
kill "$watcher" 2>/dev/null
exit "$rc"
