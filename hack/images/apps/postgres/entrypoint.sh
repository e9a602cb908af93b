#!/bin/sh
# The PostgreSQL image's entrypoint (hack/images/apps/postgres.ts): on a first start, initdb makes the
# cluster in $PGDATA with the superuser's password read from $POSTGRES_PASSWORD_FILE (the chart's Secret);
# then the server runs in the foreground. Local (socket) connections are trusted — only the container's
# own processes reach the socket: the quiesce hooks and `kubectl exec … psql` — and every network
# connection needs the password (scram-sha-256).
set -eu
: "${PGDATA:?PGDATA names the data directory}"
: "${POSTGRES_PASSWORD_FILE:?POSTGRES_PASSWORD_FILE names the file holding the superuser password}"
SOCKETS=${PGSOCKETS:-/var/run/postgresql}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "initdb: a new cluster in $PGDATA"
  initdb -D "$PGDATA" -U postgres --pwfile="$POSTGRES_PASSWORD_FILE" -E UTF8 --no-locale \
    --auth-local=trust --auth-host=scram-sha-256
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
fi
# The kubelet gives a volume's files the pod's fsGroup with group write when it mounts it; PostgreSQL
# refuses a data directory others may write (0700 or 0750 only), as after a restore into a new volume.
chmod 0700 "$PGDATA"
exec postgres -D "$PGDATA" -c listen_addresses='*' -c "unix_socket_directories=$SOCKETS" -c jit=off "$@"
