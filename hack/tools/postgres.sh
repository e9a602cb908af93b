# PostgreSQL for the production journey (test/e2e/production/, docs/production.md): the server, psql,
# pgbench and initdb from Debian's packages, unpacked without installing, as a root tree that
# hack/images/engines/postgres.ts turns into an image. Not an engine: the application the engines carry.
#
#   bin/postgres/usr/lib/postgresql/15/{bin,lib}   the programs and the server's modules (without the LLVM
#                                                   JIT: the chart turns jit off, so libLLVM stays out)
#   bin/postgres/usr/share/postgresql/15/          what initdb and the server read (catalog, time zone sets)
#   bin/postgres/usr/share/zoneinfo/               tzdata (Debian builds PostgreSQL with the system's)
#   bin/postgres/{lib,usr/lib}/x86_64-linux-gnu/   every shared library the programs link, from the pinned
#                                                   packages (checked: no NEEDED library is missing)
POSTGRES_PROGRAMS="postgres initdb pg_ctl pg_controldata psql pgbench pg_isready"

tool_postgres() {
  local root out major p need lib
  # shellcheck disable=SC2086 # the library list is one word per package
  root=$(deb_unpack postgres "postgresql-15=$POSTGRESQL_DEB_VERSION" "postgresql-client-15=$POSTGRESQL_DEB_VERSION" \
    "libpq5=$POSTGRESQL_DEB_VERSION" $POSTGRESQL_LIBRARY_DEBS)
  major=${POSTGRESQL_DEB_VERSION%%.*}
  out="$BIN/postgres.tmp"
  rm -rf "$out" && mkdir -p "$out/usr/lib/postgresql/$major/bin" "$out/usr/share" "$out/lib64" "$out/usr/share/doc"
  for p in $POSTGRES_PROGRAMS; do install -m 0755 "$root/usr/lib/postgresql/$major/bin/$p" "$out/usr/lib/postgresql/$major/bin/$p"; done
  cp -a "$root/usr/lib/postgresql/$major/lib" "$out/usr/lib/postgresql/$major/lib"
  rm -rf "$out/usr/lib/postgresql/$major/lib/bitcode" "$out/usr/lib/postgresql/$major/lib"/llvmjit*
  mkdir -p "$out/usr/share/postgresql"
  cp -a "$root/usr/share/postgresql/$major" "$out/usr/share/postgresql/$major"
  rm -rf "$out/usr/share/postgresql/$major/man"
  cp -a "$root/usr/share/zoneinfo" "$out/usr/share/zoneinfo"
  # The libraries: shared objects and their links only (no gconv modules, no plugin directories).
  for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
    mkdir -p "$out/$d"
    find "$root/$d" -maxdepth 1 \( -type f -o -type l \) -name '*.so*' -exec cp -a {} "$out/$d/" \;
  done
  ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$out/lib64/ld-linux-x86-64.so.2"
  for p in $POSTGRES_PROGRAMS; do
    for need in $(readelf -d "$out/usr/lib/postgresql/$major/bin/$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      lib=$(find "$out/lib/x86_64-linux-gnu" "$out/usr/lib/x86_64-linux-gnu" -name "$need" -print -quit)
      [ -n "$lib" ] || { echo "postgres: $p needs $need, which no pinned package holds (POSTGRESQL_LIBRARY_DEBS)" >&2; exit 1; }
    done
  done
  for p in "$root"/usr/share/doc/*/copyright; do
    mkdir -p "$out/usr/share/doc/$(basename "$(dirname "$p")")" && cp "$p" "$out/usr/share/doc/$(basename "$(dirname "$p")")/"
  done
  rm -rf "$BIN/postgres" && mv "$out" "$BIN/postgres"
  log postgres "ready in bin/: postgres/ ($(LD_LIBRARY_PATH="$BIN/postgres/lib/x86_64-linux-gnu:$BIN/postgres/usr/lib/x86_64-linux-gnu" \
    "$BIN/postgres/lib64/ld-linux-x86-64.so.2" "$BIN/postgres/usr/lib/postgresql/$major/bin/postgres" --version))"
}

ENGINE_TOOLS+=(postgres)
ENGINE_GROUP[postgres]="postgres"
