#!/usr/bin/env bash
# `make demo`: builds what is missing (first run only), then runs hack/demo.ts on Node 24.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:$PATH"
hack/build-tools.sh cluster
# NODE=real (VWS_NODE=real): the real node's tools and the image tools too (docs/real-node.md).
[ "${VWS_NODE:-}" != real ] || hack/build-tools.sh node images
hack/fetch-crds.sh
exec node hack/demo.ts
