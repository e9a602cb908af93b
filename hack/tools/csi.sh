# CSI snapshots (issue 13; docs/engines.md "snapshot — Backup", docs/real-node.md, ADR 0019): the real snapshot
# machinery from its pinned Go modules, and our own small hostpath CSI driver (hack/csi-hostpath), the
# stand-in for a storage vendor's driver: the upstream csi-driver-host-path and node-driver-registrar
# modules are refused by the module proxy here ("This module version is not available", HTTP 403).
# Sourced by hack/build-tools.sh (hack/tools/README.md).

# snapshot-controller and csi-snapshotter share one module; its `client/v8 => ./client` replace becomes
# the published client module at the same tag.
tool_external_snapshotter() {
  build external-snapshotter github.com/kubernetes-csi/external-snapshotter/v8 "$EXTERNAL_SNAPSHOTTER_VERSION" "$EXTERNAL_SNAPSHOTTER_VERSION" \
    "-s -w -X main.version=$EXTERNAL_SNAPSHOTTER_VERSION" - \
    github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller \
    github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter
}
# A module of its own: external-provisioner replaces k8s.io/* with v0.33 and external-snapshotter with
# v0.34, so one wrapper module cannot hold both.
tool_csi_provisioner() {
  build csi-provisioner github.com/kubernetes-csi/external-provisioner/v5 "$EXTERNAL_PROVISIONER_VERSION" "$EXTERNAL_PROVISIONER_VERSION" \
    "-s -w -X main.version=$EXTERNAL_PROVISIONER_VERSION" - \
    github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner
}
# Our driver: its own module in the repository (go.mod and go.sum committed), built like hack/images/pause.
tool_csi_hostpath() {
  local src="$ROOT/hack/csi-hostpath" key out
  key=$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go <(go version) | sha256sum | cut -c1-16)
  out="$CACHE/bin/csi-hostpath-$key"
  take_lock "csi-hostpath-$key"
  if [ ! -f "$out/.complete" ]; then
    log csi-hostpath "compiling hack/csi-hostpath"
    mkdir -p "$out" && (cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$out/csi-hostpath" .) &&
      touch "$out/.complete"
    log csi-hostpath built
  fi
  release_lock
  cp "$out/csi-hostpath" "$BIN/csi-hostpath.tmp" && mv "$BIN/csi-hostpath.tmp" "$BIN/csi-hostpath"
  log csi-hostpath "ready in bin/: csi-hostpath"
}
ENGINE_TOOLS+=(external-snapshotter csi-provisioner csi-hostpath)
ENGINE_GROUP[csi]="external-snapshotter csi-provisioner csi-hostpath"
