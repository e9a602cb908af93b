#!/usr/bin/env bash
# reaper.sh PARENT_PID COMMAND [ARGS...]
# Runs COMMAND and makes sure it dies with PARENT_PID (or with this script): the test harness
# starts etcd and kube-apiserver through it so a crashed or SIGKILLed test run leaves nothing
# behind. SIGTERM/SIGINT are forwarded to COMMAND; the exit code is COMMAND's.
set -u
parent=$1
shift
# The trap goes in before the command starts: a SIGTERM that came between the two used to end this
# script by default and leave COMMAND running (seen under load in reaper.test.ts).
child=
term=0
trap 'term=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT
"$@" &
child=$!
[ "$term" = 1 ] && kill -TERM "$child" 2>/dev/null
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
