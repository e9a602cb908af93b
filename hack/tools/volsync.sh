# VolSync (docs/engines.md#volsync--backup-restore): its controller and the parts of its restic mover
# image, sourced by hack/build-tools.sh. hack/images/engines/volsync.ts assembles the images from them.
#
#   bin/volsync-manager     VolSync's controller (the module's cmd/ package, all movers registered)
#   bin/restic              restic at the version VolSync's mover-restic/SOURCE_VERSIONS names
#   bin/volsync-restic/     the rest of the mover image as a root tree: mover-restic/entry.sh copied from
#                           the VolSync module, bash, and the GNU coreutils entry.sh calls with the
#                           glibc libraries they link (all from pinned Debian packages)
#   bin/volsync-bundle/     VolSync's own OLM bundle (manifests/, metadata/) from the module: its CSV's
#                           permissions are what hack/lib/engines/volsync.ts grants the controller, and
#                           it is the e2e catalog's VolSync package (test/e2e/support/providers.ts)

# The controller: upstream builds `./cmd/...` into /manager with main.volsyncVersion set.
tool_volsync_manager() {
  build volsync-manager github.com/backube/volsync "$VOLSYNC_VERSION" "$VOLSYNC_VERSION" \
    "-s -w -X main.volsyncVersion=$VOLSYNC_VERSION" - github.com/backube/volsync/cmd
  # build() names a package's binary after its directory (cmd).
  mv "$BIN/cmd" "$BIN/volsync-manager"
  log volsync-manager "ready in bin/: volsync-manager"
}

tool_restic() {
  build restic github.com/restic/restic "$RESTIC_VERSION" "$RESTIC_VERSION" "-s -w" - \
    github.com/restic/restic/cmd/restic
}

# The coreutils commands mover-restic/entry.sh calls. GNU's, not busybox's, because entry.sh relies on
# GNU behaviour: `ls --ignore=` (busybox ls rejects it, so every backup would fail), `date --date=` of an
# RFC 3339 time (restoreAsOf; busybox date rejects it) and `timeout` exiting 124 (busybox: 143), which
# entry.sh reads as "the repository is not there yet". grep and awk come from busybox (the image).
VOLSYNC_MOVER_COREUTILS="basename cat cp cut date dirname ls mktemp realpath rm sleep sync timeout touch"

tool_volsync_restic() {
  local root dir out lib need volsync
  root=$(deb_unpack volsync-restic "bash-static=$BASH_STATIC_DEB_VERSION" "coreutils=$COREUTILS_DEB_VERSION" \
    "libc6=$LIBC6_DEB_VERSION" "libselinux1=$LIBSELINUX1_DEB_VERSION" "libpcre2-8-0=$LIBPCRE2_8_0_DEB_VERSION" \
    "libacl1=$LIBACL1_DEB_VERSION" "libattr1=$LIBATTR1_DEB_VERSION")
  volsync=$(go mod download -json "github.com/backube/volsync@$VOLSYNC_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  out="$BIN/volsync-restic.tmp"
  rm -rf "$out" && mkdir -p "$out/bin" "$out/usr/bin" "$out/lib/x86_64-linux-gnu" "$out/lib64" "$out/mover-restic" \
    "$out/usr/share/doc"
  # entry.sh is VolSync's (AGPL); it is copied from the module at build time, never committed.
  install -m 0755 "$volsync/mover-restic/entry.sh" "$out/mover-restic/entry.sh"
  install -m 0755 "$root/bin/bash-static" "$out/bin/bash"
  for c in $VOLSYNC_MOVER_COREUTILS; do
    if [ -f "$root/bin/$c" ]; then dir=bin; else dir=usr/bin; fi
    install -m 0755 "$root/$dir/$c" "$out/usr/bin/$c"
  done
  # Every shared library those commands need, resolved in the unpacked packages (not on this machine).
  for lib in ld-linux-x86-64.so.2 libc.so.6 libselinux.so.1 libpcre2-8.so.0 libacl.so.1 libattr.so.1; do
    install -m 0755 "$(find "$root/lib/x86_64-linux-gnu" "$root/usr/lib/x86_64-linux-gnu" -name "$lib" -print -quit | xargs readlink -f)" \
      "$out/lib/x86_64-linux-gnu/$lib"
  done
  ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$out/lib64/ld-linux-x86-64.so.2"
  for c in $VOLSYNC_MOVER_COREUTILS; do
    for need in $(readelf -d "$out/usr/bin/$c" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [ -f "$out/lib/x86_64-linux-gnu/$need" ] || { echo "volsync-restic: $c needs $need, which is not in the image" >&2; exit 1; }
    done
  done
  for p in bash-static coreutils libc6 libselinux1 libpcre2-8-0 libacl1 libattr1; do
    mkdir -p "$out/usr/share/doc/$p" && cp "$root/usr/share/doc/$p/copyright" "$out/usr/share/doc/$p/"
  done
  rm -rf "$BIN/volsync-restic" && mv "$out" "$BIN/volsync-restic"
  log volsync-restic "ready in bin/: volsync-restic/ (entry.sh of VolSync $VOLSYNC_VERSION, $("$BIN/volsync-restic/bin/bash" --version | head -1))"
}

# Copied from the module at build time, never committed. Both the e2e group and the engines' build copy it,
# and hack/test.sh runs those two builds at once: one copies under a lock per checkout, the other finds the
# stamp of the version it wants and leaves the directory alone (the kwok journeys may be reading it).
tool_volsync_bundle() {
  local volsync tmp
  take_lock "volsync-bundle-$(printf '%s' "$BIN" | sha256sum | cut -c1-16)"
  if [ "$(cat "$BIN/volsync-bundle.version" 2>/dev/null)" != "$VOLSYNC_VERSION" ] || [ ! -d "$BIN/volsync-bundle" ]; then
    volsync=$(go mod download -json "github.com/backube/volsync@$VOLSYNC_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    tmp="$BIN/volsync-bundle.tmp"
    rm -rf "$tmp" && mkdir -p "$tmp"
    cp -r "$volsync/bundle/manifests" "$volsync/bundle/metadata" "$tmp/"
    chmod -R u+w,a+r "$tmp"
    rm -f "$BIN/volsync-bundle.version"
    rm -rf "$BIN/volsync-bundle" && mv "$tmp" "$BIN/volsync-bundle"
    echo "$VOLSYNC_VERSION" >"$BIN/volsync-bundle.version"
  fi
  release_lock
  log volsync-bundle "ready in bin/: volsync-bundle/ (VolSync $VOLSYNC_VERSION's OLM bundle)"
}

ENGINE_TOOLS+=(volsync-bundle volsync-manager restic volsync-restic)
ENGINE_GROUP[volsync]="volsync-bundle volsync-manager restic volsync-restic"
