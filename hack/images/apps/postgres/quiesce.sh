#!/bin/sh
# The quiesce hook (ops.vworkspace.io/quiesce: exec; Velero runs it in this container before it copies the
# volume): a CHECKPOINT writes every dirty page to the data files and starts a new WAL segment, so the
# files Velero reads are what a restart needs, with the least WAL to replay. A failure fails the backup.
exec psql -h "${PGSOCKETS:-/var/run/postgresql}" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 -c CHECKPOINT
