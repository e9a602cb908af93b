# Argo Workflows (docs/engines.md "workflow"): the workflow-controller and argoexec (the executor its
# workflow pods run: init, wait and emissary) in ONE wrapper module, so their shared dependencies
# (client-go, the Argo API types, the artifact drivers) compile once. Argo's Makefile builds both with
# CGO off and no build tags; its ldflags set the version variables of the root package (a clean tree at
# the release tag's commit makes `GetVersion()` report the tag). `-extldflags -static` is left out:
# with CGO off the binaries are static anyway. Argo's full CRDs (every kind the controller watches) are
# copied from the same module into bin/argo/crds/ for hack/lib/engines/argo.ts (never committed).
ARGO_MODULE=github.com/argoproj/argo-workflows/v3

argo_version_ldflags() {
  local v=$ARGO_WORKFLOWS_VERSION commit p=$ARGO_MODULE
  commit=$(go mod download -json "$p@$v" | sed -n 's/.*"Hash": "\([0-9a-f]*\)".*/\1/p')
  echo "-s -w -X $p.version=$v -X $p.gitTag=$v -X $p.gitCommit=${commit:-unknown} -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
}

# argo_source DIR: prints a copy of the module as its git tag has it. Module zips leave symlinks out, and
# upstream's workflow/executor/osspecific/signal_linux.go is a symlink to signal_darwin.go (the one .go
# symlink at v3.7.3), so argoexec does not compile from the zip ("undefined: Setpgid"); the copy puts
# back what the symlink names. (go build -overlay cannot add files beneath GOMODCACHE.)
argo_source() {
  local moddir out="$CACHE/src/argo-workflows-$ARGO_WORKFLOWS_VERSION" d
  take_lock "argo-workflows-src-$ARGO_WORKFLOWS_VERSION"
  if [ ! -f "$out/.complete" ]; then
    moddir=$(go mod download -json "$ARGO_MODULE@$ARGO_WORKFLOWS_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    rm -rf "$out" && mkdir -p "$(dirname "$out")" && cp -r "$moddir" "$out" && chmod -R u+w "$out"
    d="$out/workflow/executor/osspecific"
    [ -e "$d/signal_linux.go" ] || cp "$d/signal_darwin.go" "$d/signal_linux.go"
    touch "$out/.complete"
    log argo-workflows "module copy with signal_linux.go (upstream's symlink) in $out"
  fi
  release_lock
  echo "$out"
}

tool_argo_workflows() {
  local src moddir
  src=$(argo_source)
  EXTRA_REPLACES="$ARGO_MODULE=>$src" build argo-workflows "$ARGO_MODULE" "$ARGO_WORKFLOWS_VERSION" "$ARGO_WORKFLOWS_VERSION" \
    "$(argo_version_ldflags)" - "$ARGO_MODULE/cmd/workflow-controller" "$ARGO_MODULE/cmd/argoexec"
  moddir=$(go mod download -json "$ARGO_MODULE@$ARGO_WORKFLOWS_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  rm -rf "$BIN/argo/crds.tmp" && mkdir -p "$BIN/argo/crds.tmp"
  cp "$moddir"/manifests/base/crds/full/argoproj.io_*.yaml "$BIN/argo/crds.tmp/"
  chmod 644 "$BIN"/argo/crds.tmp/*.yaml
  rm -rf "$BIN/argo/crds" && mv "$BIN/argo/crds.tmp" "$BIN/argo/crds"
  log argo-workflows "ready in bin/argo/crds: $(ls "$BIN"/argo/crds | wc -l) full CRDs"
}
ENGINE_TOOLS+=(argo-workflows)
ENGINE_GROUP[argo]="argo-workflows"
