#!/usr/bin/env bash
# `make demo`: builds what is missing (first run only), then runs hack/demo.ts on Node 24.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:$PATH"
# NODE=real|kwok. Default: the real node as root (warm, it is up in about 20 s: the command really
# runs), kwok otherwise (the real node needs root: containerd, runc, bridges, iptables).
if [ -z "${VWS_NODE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then VWS_NODE=real; else VWS_NODE=kwok; fi
fi
export VWS_NODE
case $VWS_NODE in real | kwok) ;; *) echo "NODE must be real or kwok, not '$VWS_NODE'" >&2; exit 2 ;; esac
hack/build-tools.sh cluster
# The real node's tools and the image tools too (docs/real-node.md), and what the database story runs:
# PostgreSQL from Debian's packages, Velero with MinIO and the local-path provisioner (docs/production.md).
[ "$VWS_NODE" != real ] || hack/build-tools.sh node images postgres velero object-store storage
hack/fetch-crds.sh
exec node hack/demo.ts
