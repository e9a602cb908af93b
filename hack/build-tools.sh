#!/usr/bin/env bash
# Builds the project's tools from pinned Go modules (hack/versions.env) into bin/.
#
#   hack/build-tools.sh [group|tool ...]     groups: core cluster olm e2e images node all (default: all)
#
# No Docker and no binary downloads exist on these machines, so every tool is compiled from the
# Go module proxy. Each tool becomes a throw-away Go module under the tool cache that requires the
# upstream module at its pinned version; upstream `replace` directives that point into the
# upstream repository (k8s staging, etcd's sibling modules) are rewritten to the published module
# at the matching version. Finished binaries are kept in a shared cache keyed by everything that
# affects them, so a fresh clone on the same machine only copies them (VWS_TOOLS_CACHE overrides
# the location). Idempotent; prints tool, step and elapsed time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "$ROOT/hack/versions.env"
CACHE=${VWS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vworkspace-operator/tools}
BIN="$ROOT/bin"
mkdir -p "$CACHE" "$BIN"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
# The module mirror reachable here serves some operator-framework releases whose checksums the
# checksum database it fronts does not know; only those module paths skip the sumdb lookup.
export GONOSUMDB=github.com/operator-framework/operator-sdk,github.com/operator-framework/operator-lifecycle-manager
START=$(date +%s)

# take_lock KEY / release_lock: one holder per cache entry across processes (fd 9, one at a time).
take_lock() { mkdir -p "$CACHE/locks"; exec 9>"$CACHE/locks/$1.lock"; flock 9; }
release_lock() { flock -u 9; exec 9>&-; }

log() { printf '[tools %4ss] %-22s %s\n' "$(($(date +%s) - START))" "$1" "$2" >&2; }

# rewrite_replaces MODFILE VERSION_FOR_LOCAL: prints replace lines for a wrapper module.
# Local-path replaces become "X => X <version>"; the FORBIDDEN_DEPENDENCY guards are dropped;
# replaces to other modules are kept verbatim.
rewrite_replaces() {
  awk -v ver="$2" '
    function emit(line,   parts) {
      n = split(line, parts, /[ \t]+/)
      # parts: X [vX] => target [vT]
      for (i = 1; i <= n; i++) if (parts[i] == "=>") arrow = i
      target = parts[arrow + 1]
      if (target ~ /FORBIDDEN/) return
      if (target ~ /^\.\.?\//) { print "replace " parts[1] " => " parts[1] " " ver; return }
      print "replace " line
    }
    /^replace \(/ { inblock = 1; next }
    inblock && /^\)/ { inblock = 0; next }
    inblock { sub(/^[ \t]+/, ""); if ($0 != "" && $0 !~ /^\/\//) emit($0); next }
    /^replace / { sub(/^replace[ \t]+/, ""); emit($0) }
  ' "$1"
}

# [TAGS=...] [EXTRA_REQUIRES="mod@ver ..."] [EXTRA_REPLACES="mod=>dir ..."] build NAME MODULE VERSION LOCAL_REPLACE_VERSION LDFLAGS MAIN_GO PKG...
# MAIN_GO, when not "-", is the body of a main package written into the wrapper module itself.
# EXTRA_REPLACES points a module at a local directory (a prepared copy of it; its caller keys the copy).
build() {
  local name=$1 module=$2 version=$3 localver=$4 ldflags=$5 maingo=$6
  shift 6
  local pkgs=("$@")
  local key
  local tags=${TAGS:-} extra=${EXTRA_REQUIRES:-} replaces=${EXTRA_REPLACES:-}
  # (EXTRA_REPLACES joins the key only when set: the other tools' cache entries keep their keys)
  key=$(printf '%s\n' "$name" "$module" "$version" "$localver" "$ldflags" "$tags" "$extra" ${replaces:+"$replaces"} "$maingo" "${pkgs[@]}" "$(go version)" | sha256sum | cut -c1-16)
  local out="$CACHE/bin/$name-$key"
  local bins=()
  if [ "$maingo" != "-" ]; then bins=("$name"); else for p in "${pkgs[@]}"; do bins+=("$(basename "$p")"); done; fi

  # Several checkouts on one machine share the cache: one builds a tool, the others wait for it.
  take_lock "$name-$key"
  if [ ! -f "$out/.complete" ]; then
    local work="$CACHE/mod/$name-$key"
    rm -rf "$work" "$out"; mkdir -p "$work" "$out"
    log "$name" "resolving $module@$version"
    local modfile
    modfile=$(go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
    {
      echo "module vworkspace.io/tools/$name"
      echo
      echo "go $(go env GOVERSION | sed 's/^go//; s/\.[0-9]*$//')"
      echo
      echo "require $module $version"
      for r in $extra; do echo "require ${r/@/ }"; done
      rewrite_replaces "$modfile" "$localver"
      for r in $replaces; do echo "replace ${r/=>/ => }"; done
    } > "$work/go.mod"
    if [ "$maingo" != "-" ]; then
      printf '%s\n' "$maingo" > "$work/main.go"
    else
      { echo "//go:build tools"; echo; echo "package tools"; echo; echo "import ("; for p in "${pkgs[@]}"; do echo "	_ \"$p\""; done; echo ")"; } > "$work/tools.go"
    fi
    (cd "$work" && go mod tidy >/dev/null 2>"$work/tidy.log") || { cat "$work/tidy.log" >&2; exit 1; }
    log "$name" "compiling ${bins[*]} (cold builds take minutes on 2 cores)"
    if [ "$maingo" != "-" ]; then
      (cd "$work" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/$name" .)
    else
      (cd "$work" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
    fi
    touch "$out/.complete"
    log "$name" "built"
  fi
  release_lock
  for b in "${bins[@]}"; do
    if ! cmp -s "$out/$b" "$BIN/$b" 2>/dev/null; then
      cp "$out/$b" "$BIN/$b.tmp" && chmod +x "$BIN/$b.tmp" && mv "$BIN/$b.tmp" "$BIN/$b"
    fi
  done
  log "$name" "ready in bin/: ${bins[*]}"
}

k8s_ldflags() {
  local v=$KUBERNETES_VERSION minor
  minor=$(echo "$v" | cut -d. -f2)
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
}
staging_version() { echo "$KUBERNETES_VERSION" | sed 's/^v1\./v0./'; }

tool_etcd() {
  build etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION" \
    "-s -w" 'package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }'
}
tool_kube_apiserver() {
  build kube-apiserver k8s.io/kubernetes "$KUBERNETES_VERSION" "$(staging_version)" "$(k8s_ldflags)" - \
    k8s.io/kubernetes/cmd/kube-apiserver
}
tool_kube_cluster() {
  build kube-cluster k8s.io/kubernetes "$KUBERNETES_VERSION" "$(staging_version)" "$(k8s_ldflags)" - \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
}
tool_kwok() {
  build kwok sigs.k8s.io/kwok "$KWOK_VERSION" "$KWOK_VERSION" \
    "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$KUBERNETES_VERSION" - \
    sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
}
tool_helm() {
  build helm helm.sh/helm/v3 "$HELM_VERSION" "$HELM_VERSION" \
    "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" - helm.sh/helm/v3/cmd/helm
}
# containers/image: pure-Go OpenPGP instead of cgo gpgme, no cgo storage drivers (upstream's own tags).
IMAGE_TAGS=containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper,containers_image_storage_stub
tool_opm() {
  TAGS=$IMAGE_TAGS build opm github.com/operator-framework/operator-registry "$OPERATOR_REGISTRY_VERSION" "$OPERATOR_REGISTRY_VERSION" \
    "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.gitCommit=$OPERATOR_REGISTRY_VERSION -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$OPERATOR_REGISTRY_VERSION" - \
    github.com/operator-framework/operator-registry/cmd/opm
}
tool_operator_sdk() {
  # The newest operator-sdk the module mirror serves pins golang.org/x/tools v0.17, which does not
  # compile with Go >= 1.23 (tokeninternal); a newer x/tools is the only change.
  TAGS=$IMAGE_TAGS EXTRA_REQUIRES="golang.org/x/tools@v0.30.0" build operator-sdk github.com/operator-framework/operator-sdk "$OPERATOR_SDK_VERSION" "$OPERATOR_SDK_VERSION" \
    "-s -w -X github.com/operator-framework/operator-sdk/internal/version.Version=$OPERATOR_SDK_VERSION -X github.com/operator-framework/operator-sdk/internal/version.GitVersion=$OPERATOR_SDK_VERSION" - \
    github.com/operator-framework/operator-sdk/cmd/operator-sdk
}

# promtool checks and unit-tests the alerts we ship (packaging/monitoring/prometheusrule.yaml). Upstream's
# remove_all_sd tag leaves out the cloud service discoveries, which rule tests never use.
tool_promtool() {
  local release
  release=$(echo "$PROMETHEUS_VERSION" | sed -E 's/^v0\.([0-9])([0-9]+)\.([0-9]+)$/\1.\2.\3/')
  TAGS=remove_all_sd build promtool github.com/prometheus/prometheus "$PROMETHEUS_VERSION" "$PROMETHEUS_VERSION" \
    "-s -w -X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Revision=$PROMETHEUS_VERSION -X github.com/prometheus/common/version.Branch=HEAD" - \
    github.com/prometheus/prometheus/cmd/promtool
}

tool_olm_operators() {
  # OLM's olm and catalog operators, run as processes against the e2e kwok cluster.
  build olm-operators github.com/operator-framework/operator-lifecycle-manager "$OLM_VERSION" "$OLM_VERSION" \
    "-s -w -X github.com/operator-framework/operator-lifecycle-manager/pkg/version.GitCommit=$OLM_VERSION -X github.com/operator-framework/operator-lifecycle-manager/pkg/version.OLMVersion=$OLM_VERSION" - \
    github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
    github.com/operator-framework/operator-lifecycle-manager/cmd/catalog
}

# Images without a Docker daemon (hack/images.ts, the mirror journey): crane pushes and copies images
# by digest; the CNCF distribution registry is the loopback registry they go to; grpc_health_probe goes
# into the catalog image because OLM's catalog pods probe their registry container with it.
tool_crane() {
  build crane github.com/google/go-containerregistry "$CRANE_VERSION" "$CRANE_VERSION" \
    "-s -w -X github.com/google/go-containerregistry/cmd/crane/cmd.Version=$CRANE_VERSION" - \
    github.com/google/go-containerregistry/cmd/crane
}
tool_registry() {
  build registry github.com/distribution/distribution/v3 "$DISTRIBUTION_VERSION" "$DISTRIBUTION_VERSION" \
    "-s -w -X github.com/distribution/distribution/v3/version.version=$DISTRIBUTION_VERSION" - \
    github.com/distribution/distribution/v3/cmd/registry
}
tool_grpc_health_probe() {
  build grpc-health-probe github.com/grpc-ecosystem/grpc-health-probe "$GRPC_HEALTH_PROBE_VERSION" "$GRPC_HEALTH_PROBE_VERSION" \
    "-s -w -X main.versionTag=$GRPC_HEALTH_PROBE_VERSION" - github.com/grpc-ecosystem/grpc-health-probe
}

# Debian packages unpacked into the cache without installing (apt-get download + dpkg-deb -x), for
# tools that are not Go modules here. If the archive has replaced a pinned version (security updates
# do), the candidate version is used and said.
deb_fetch() { # deb_fetch TOOL PACKAGE VERSION: downloads PACKAGE=VERSION, or the candidate if that is gone
  if ! apt-get download "$2=$3" >/dev/null 2>&1; then
    log "$1" "$2=$3 is no longer in the archive; taking the candidate $(apt-cache policy "$2" | sed -n 's/ *Candidate: //p')"
    apt-get download "$2" >&2
  fi
}
# deb_unpack TOOL PACKAGE=VERSION...: unpacks the packages into one root in the cache once; prints the root.
deb_unpack() {
  local tool=$1 key out spec
  shift
  key=$(printf '%s\n' "$tool" "$@" | sha256sum | cut -c1-16)
  out="$CACHE/bin/$tool-$key"
  take_lock "$tool-$key"
  if [ ! -f "$out/.complete" ]; then
    rm -rf "$out" && mkdir -p "$out/dl" "$out/root"
    # apt allows one process on its package lists at a time, and hack/test.sh builds two tool groups at
    # once: the lists' update and the downloads happen under one lock (fd 8, beside the entry's on fd 9).
    exec 8>"$CACHE/locks/apt.lock" && flock 8
    # A machine whose package lists were never fetched knows no candidate: fetch them (root), or say how.
    if ! apt-cache policy "${1%%=*}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      if [ "$(id -u)" = 0 ]; then log "$tool" "no package lists: apt-get update"; apt-get update -qq >&2
      else echo "$tool: apt knows no ${1%%=*} package; run 'sudo apt-get update' and retry" >&2; exit 1; fi
    fi
    log "$tool" "apt-get download $*"
    for spec in "$@"; do (cd "$out/dl" && deb_fetch "$tool" "${spec%%=*}" "${spec#*=}"); done
    flock -u 8 && exec 8>&-
    for d in "$out"/dl/*.deb; do dpkg-deb -x "$d" "$out/root"; done
    rm -rf "$out/dl"
    touch "$out/.complete"
    log "$tool" "unpacked"
  fi
  release_lock
  echo "$out/root"
}
# wrapper NAME DIR EXEC [ARG...]: bin/NAME runs bin/DIR/EXEC [ARG...] with the libraries of bin/DIR/lib.
wrapper() {
  local name=$1 dir=$2 exe=$3
  shift 3
  cat > "$BIN/$name.tmp" <<WRAPPER
#!/bin/sh
# From Debian, unpacked by hack/build-tools.sh; its libraries sit next to it.
d=\$(dirname "\$0")/$dir
LD_LIBRARY_PATH="\$d/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" ${WRAPPER_ENV:-}exec "\$d/$exe" $* "\$@"
WRAPPER
  chmod +x "$BIN/$name.tmp" && mv "$BIN/$name.tmp" "$BIN/$name"
}
# copy_tree SRC DEST: replaces DEST with a copy of SRC (bin/ holds copies, never links into the cache).
copy_tree() { rm -rf "$2.tmp" && cp -a "$1" "$2.tmp" && rm -rf "$2" && mv "$2.tmp" "$2"; }

# skopeo (the mirror journey, `make mirror TOOL=skopeo`); its one library Debian does not ship by
# default rides along.
tool_skopeo() {
  local root
  root=$(deb_unpack skopeo "skopeo=$SKOPEO_DEB_VERSION" "libgpgme11=$LIBGPGME11_DEB_VERSION")
  mkdir -p "$BIN/skopeo.d/lib"
  cp -a "$root/usr/bin/skopeo" "$BIN/skopeo.d/"
  cp -a "$root/usr/lib/x86_64-linux-gnu/." "$BIN/skopeo.d/lib/"
  wrapper skopeo skopeo.d skopeo
  log skopeo "ready in bin/: skopeo ($("$BIN/skopeo" --version))"
}

# The real node (hack/lib/real-node.ts, docs/real-node.md): the kubelet and kube-proxy of the API
# server's pin; containerd 2.x and its runc shim from the Go module (Kubernetes v1.36 needs containerd
# 2.x; CGO off, so no btrfs snapshotter); the CNI plugins the node's bridge network uses; CoreDNS.
tool_kube_node() {
  build kube-node k8s.io/kubernetes "$KUBERNETES_VERSION" "$(staging_version)" "$(k8s_ldflags)" - \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
}
tool_containerd() {
  TAGS=no_btrfs,no_devmapper,no_zfs build containerd github.com/containerd/containerd/v2 "$CONTAINERD_VERSION" "$CONTAINERD_VERSION" \
    "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION -X github.com/containerd/containerd/v2/version.Revision=$CONTAINERD_VERSION" - \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
}
tool_cni_plugins() {
  build cni-plugins github.com/containernetworking/plugins "$CNI_PLUGINS_VERSION" "$CNI_PLUGINS_VERSION" \
    "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION" - \
    github.com/containernetworking/plugins/plugins/main/bridge github.com/containernetworking/plugins/plugins/main/loopback \
    github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/meta/portmap
  # containerd looks for CNI plugins in one directory: bin/cni/ holds exactly these four.
  mkdir -p "$BIN/cni"
  for p in bridge loopback host-local portmap; do cp "$BIN/$p" "$BIN/cni/$p.tmp" && mv "$BIN/cni/$p.tmp" "$BIN/cni/$p"; rm -f "$BIN/$p"; done
}
tool_coredns() {
  build coredns github.com/coredns/coredns "$COREDNS_VERSION" "$COREDNS_VERSION" \
    "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" - github.com/coredns/coredns
}
tool_runc() {
  local root
  root=$(deb_unpack runc "runc=$RUNC_DEB_VERSION" "libseccomp2=$LIBSECCOMP2_DEB_VERSION")
  mkdir -p "$BIN/runc.d/lib"
  cp -a "$root/usr/sbin/runc" "$BIN/runc.d/"
  cp -a "$root/usr/lib/x86_64-linux-gnu/." "$BIN/runc.d/lib/"
  wrapper runc runc.d runc
  log runc "ready in bin/: runc ($("$BIN/runc" --version | head -1))"
}
# iptables (nft flavour) for kube-proxy, the kubelet and the CNI plugins, which all call it by name.
tool_iptables() {
  local root t
  root=$(deb_unpack iptables "iptables=$IPTABLES_DEB_VERSION" "libnftnl11=$LIBNFTNL11_DEB_VERSION" \
    "libnetfilter-conntrack3=$LIBNETFILTER_CONNTRACK3_DEB_VERSION" "libnfnetlink0=$LIBNFNETLINK0_DEB_VERSION" \
    "libmnl0=$LIBMNL0_DEB_VERSION" "libxtables12=$LIBXTABLES12_DEB_VERSION" "libip4tc2=$LIBIP4TC2_DEB_VERSION" \
    "libip6tc2=$LIBIP6TC2_DEB_VERSION")
  mkdir -p "$BIN/iptables.d"
  cp -a "$root/usr/sbin/xtables-nft-multi" "$BIN/iptables.d/"
  copy_tree "$root/usr/lib/x86_64-linux-gnu" "$BIN/iptables.d/lib"
  # xtables-nft-multi picks the command from its first argument when its own name is not one.
  for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    WRAPPER_ENV='XTABLES_LIBDIR="$d/lib/xtables" ' wrapper "$t" iptables.d xtables-nft-multi "${t/iptables/iptables-nft}"
  done
  log iptables "ready in bin/: $("$BIN/iptables" --version)"
}
# cpb, the copy tool of OLM's util image: the bundle unpack Job's pull container runs it on a real node.
tool_olm_cpb() {
  build olm-cpb github.com/operator-framework/operator-lifecycle-manager "$OLM_VERSION" "$OLM_VERSION" "-s -w" - \
    github.com/operator-framework/operator-lifecycle-manager/util/cpb
}
# The sandbox image's program (hack/images/pause): ours, standard library only.
tool_pause() {
  local src="$ROOT/hack/images/pause" key out
  key=$(cat "$src/go.mod" "$src/main.go" <(go version) | sha256sum | cut -c1-16)
  out="$CACHE/bin/pause-$key"
  take_lock "pause-$key"
  if [ ! -f "$out/.complete" ]; then
    mkdir -p "$out" && (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$out/pause" .) && touch "$out/.complete"
    log pause built
  fi
  release_lock
  cp "$out/pause" "$BIN/pause.tmp" && mv "$BIN/pause.tmp" "$BIN/pause"
  log pause "ready in bin/: pause"
}
# busybox for the test image (hack/images/node-images.ts).
tool_busybox() {
  local root
  root=$(deb_unpack busybox "busybox-static=$BUSYBOX_STATIC_DEB_VERSION")
  cp "$root/bin/busybox" "$BIN/busybox.tmp" && mv "$BIN/busybox.tmp" "$BIN/busybox"
  log busybox "ready in bin/: busybox ($("$BIN/busybox" | head -1))"
}

# The real engines (issue 13, docs/engines.md): each engine's tools live in hack/tools/<engine>.sh, which
# defines its tool_<name> functions and adds them to ENGINE_TOOLS (in build order). `engines` builds them all,
# `<engine>` (the file's name) builds one engine's.
ENGINE_TOOLS=()
declare -A ENGINE_GROUP=()
for f in "$ROOT"/hack/tools/*.sh; do
  [ -e "$f" ] || continue
  # shellcheck source=/dev/null
  source "$f"
done

run_group() {
  case $1 in
    core) tool_etcd; tool_kube_apiserver ;;
    cluster) run_group core; tool_kube_cluster; tool_kwok; tool_helm ;;
    olm) tool_opm; tool_operator_sdk; tool_promtool ;;
    # VolSync's OLM bundle (a copy from its module) is a dependency provider in the OLM journeys on kwok.
    e2e) run_group cluster; run_group olm; tool_olm_operators; tool_volsync_bundle ;;
    images) tool_crane; tool_registry; tool_grpc_health_probe; tool_skopeo ;;
    node) tool_kube_node; tool_containerd; tool_runc; tool_cni_plugins; tool_iptables; tool_coredns; tool_busybox; tool_pause; tool_olm_cpb ;;
    engines) for t in "${ENGINE_TOOLS[@]}"; do "tool_${t//-/_}"; done ;;
    all) run_group e2e; run_group images; run_group node; run_group engines ;;
    etcd | kube-apiserver | kube-cluster | kwok | helm | opm | operator-sdk | promtool | olm-operators | crane | registry | grpc-health-probe | skopeo | \
      kube-node | containerd | runc | cni-plugins | iptables | coredns | busybox | pause | olm-cpb)
      "tool_$(echo "$1" | tr - _)" ;;
    *)
      if [ -n "${ENGINE_GROUP[$1]:-}" ]; then
        for t in ${ENGINE_GROUP[$1]}; do "tool_${t//-/_}"; done
      elif declare -F "tool_${1//-/_}" >/dev/null; then
        "tool_${1//-/_}"
      else
        echo "unknown tool or group: $1 (groups: core cluster olm e2e images node engines ${!ENGINE_GROUP[*]} all)" >&2; exit 2
      fi ;;
  esac
}

[ $# -gt 0 ] || set -- all
for g in "$@"; do run_group "$g"; done
log "all" "done"
