#!/usr/bin/env bash
# Copies the real upstream CRDs that the engines' children use (Velero, Argo Workflows, VolSync,
# external-snapshotter) out of their pinned Go modules (hack/versions.env) into bin/crds/.
# They are read at build/test time and never committed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "$ROOT/hack/versions.env"
OUT="$ROOT/bin/crds"
STAMP="$OUT/.pins"
PINS="$VELERO_VERSION $ARGO_WORKFLOWS_VERSION $VOLSYNC_VERSION $EXTERNAL_SNAPSHOTTER_CLIENT_VERSION"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ]; then exit 0; fi
rm -rf "$OUT" && mkdir -p "$OUT"

moddir() { GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)",/\1/p'; }

velero=$(moddir "github.com/vmware-tanzu/velero@$VELERO_VERSION")
for k in backups restores backupstoragelocations deletebackuprequests; do
  cp "$velero/config/crd/v1/bases/velero.io_$k.yaml" "$OUT/"
done
argo=$(moddir "github.com/argoproj/argo-workflows/v3@$ARGO_WORKFLOWS_VERSION")
for k in workflows workflowtemplates; do
  cp "$argo/manifests/base/crds/full/argoproj.io_$k.yaml" "$OUT/"
done
volsync=$(moddir "github.com/backube/volsync@$VOLSYNC_VERSION")
for k in replicationsources replicationdestinations; do
  cp "$volsync/config/crd/bases/volsync.backube_$k.yaml" "$OUT/"
done
snap=$(moddir "github.com/kubernetes-csi/external-snapshotter/client/v8@$EXTERNAL_SNAPSHOTTER_CLIENT_VERSION")
for k in volumesnapshots volumesnapshotclasses volumesnapshotcontents; do
  cp "$snap/config/crd/snapshot.storage.k8s.io_$k.yaml" "$OUT/"
done
chmod 644 "$OUT"/*.yaml
echo "$PINS" > "$STAMP"
echo "[crds] $(ls "$OUT"/*.yaml | wc -l) upstream CRDs in bin/crds/" >&2
