#!/usr/bin/env bash
# Copies the real upstream CRDs that the engines' children use (Velero, Argo Workflows, VolSync,
# external-snapshotter) out of their pinned Go modules (hack/versions.env) into bin/crds/ (Argo's
# minimal CRDs also into bin/crds/argo-minimal/), and OLM's own CRDs (operators.coreos.com) into
# bin/crds/olm/ for the e2e tests: those come from the operator-framework/api module at the version
# OLM_VERSION's go.mod requires, so they always match the olm and catalog operators
# hack/build-tools.sh builds. Read at build/test time, never committed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "$ROOT/hack/versions.env"
OUT="$ROOT/bin/crds"
STAMP="$OUT/.pins"
# LAYOUT changes when the set of copied files does (a new stamp makes existing checkouts re-fetch).
LAYOUT=2
PINS="$VELERO_VERSION $ARGO_WORKFLOWS_VERSION $VOLSYNC_VERSION $EXTERNAL_SNAPSHOTTER_CLIENT_VERSION $OLM_VERSION layout-$LAYOUT"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ]; then exit 0; fi
rm -rf "$OUT" && mkdir -p "$OUT"

# The module mirror here lacks checksum-database entries for some OLM releases (as in build-tools.sh).
export GONOSUMDB=github.com/operator-framework/operator-lifecycle-manager
modfield() { GOFLAGS=-mod=mod go mod download -json "$1" | sed -n "s/.*\"$2\": \"\(.*\)\",/\1/p"; }
moddir() { modfield "$1" Dir; }

velero=$(moddir "github.com/vmware-tanzu/velero@$VELERO_VERSION")
for k in backups restores backupstoragelocations deletebackuprequests; do
  cp "$velero/config/crd/v1/bases/velero.io_$k.yaml" "$OUT/"
done
argo=$(moddir "github.com/argoproj/argo-workflows/v3@$ARGO_WORKFLOWS_VERSION")
# The full CRDs (complete schemas) for the tests that create Workflows, and Argo's minimal CRDs (what
# its install manifests ship) for the e2e provider bundle: OLM inlines an image-less bundle's
# manifests into the InstallPlan, and the full ones would push it past the API server's 2 MiB limit.
mkdir -p "$OUT/argo-minimal"
for k in workflows workflowtemplates; do
  cp "$argo/manifests/base/crds/full/argoproj.io_$k.yaml" "$OUT/"
  cp "$argo/manifests/base/crds/minimal/argoproj.io_$k.yaml" "$OUT/argo-minimal/"
done
volsync=$(moddir "github.com/backube/volsync@$VOLSYNC_VERSION")
for k in replicationsources replicationdestinations; do
  cp "$volsync/config/crd/bases/volsync.backube_$k.yaml" "$OUT/"
done
snap=$(moddir "github.com/kubernetes-csi/external-snapshotter/client/v8@$EXTERNAL_SNAPSHOTTER_CLIENT_VERSION")
for k in volumesnapshots volumesnapshotclasses volumesnapshotcontents; do
  cp "$snap/config/crd/snapshot.storage.k8s.io_$k.yaml" "$OUT/"
done
olm_gomod=$(modfield "github.com/operator-framework/operator-lifecycle-manager@$OLM_VERSION" GoMod)
olm_api=$(awk '$1 == "github.com/operator-framework/api" { print $2; exit }' "$olm_gomod")
[ -n "$olm_api" ] || { echo "[crds] no operator-framework/api requirement in OLM $OLM_VERSION's go.mod" >&2; exit 1; }
api=$(moddir "github.com/operator-framework/api@$olm_api")
mkdir -p "$OUT/olm"
cp "$api"/crds/operators.coreos.com_*.yaml "$OUT/olm/"
chmod 644 "$OUT"/*.yaml "$OUT"/olm/*.yaml "$OUT"/argo-minimal/*.yaml
echo "$PINS" > "$STAMP"
echo "[crds] $(ls "$OUT"/*.yaml | wc -l) upstream CRDs in bin/crds/, $(ls "$OUT"/olm/*.yaml | wc -l) OLM CRDs (operator-framework/api $olm_api) in bin/crds/olm/" >&2
