#!/usr/bin/env bash
# real-node-cleanup.sh WORKDIR: takes down everything a real node (hack/lib/real-node.ts) started or
# changed, whatever state it is in: run by stop(), and by the node's guard when the test process dies
# first (a killed run). Idempotent; every step goes on when one fails.
#
# What a node leaves on the host, and how each goes: its processes (every one names WORKDIR on its
# command line: control plane, containerd, the runc shims, kubelet, kube-proxy) are killed; the pods'
# processes by the pid lists of the node's cgroup tree, which is then removed; the mounts under
# WORKDIR (overlay rootfs, volumes, network namespaces) are unmounted; the shims' sockets in
# /run/containerd/s and the kubelet's links in /var/log/containers are removed; the node's links (its
# bridge, its address, any veth left) are deleted; every KUBE-* and CNI-* iptables chain and the rules
# that jump to them are deleted; the sysctls the node's components set are restored; WORKDIR goes
# unless VWS_KEEP_CLUSTER=1 (then only its data stays).
set -u
W=${1:?usage: real-node-cleanup.sh WORKDIR}
[ -f "$W/node.env" ] || { echo "cleanup: $W/node.env missing: not a real node's directory" >&2; exit 0; }
# shellcheck source=/dev/null
source "$W/node.env" # NODE_BRIDGE NODE_IP CGROUP_ROOT BIN HOST_DIR_*
PATH="$BIN:$PATH"
say() { echo "[real-node cleanup] $*"; }

# 1. Processes naming WORKDIR (never this script or its parent).
pids_naming() {
  local p cmd
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] || [ "$p" = "$PPID" ] && continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
    case $cmd in *real-node-cleanup.sh*) continue ;; *"$W"*) echo "$p" ;; esac
  done
}
kill_all() { # kill_all LISTER: TERM, up to 10 s, then KILL
  local pids i
  pids=$($1)
  [ -n "$pids" ] || return 0
  say "stopping $(echo "$pids" | wc -l) process(es) ($1)"
  kill -TERM $pids 2>/dev/null
  for i in $(seq 20); do
    pids=$($1)
    [ -n "$pids" ] || return 0
    sleep 0.5
  done
  kill -KILL $pids 2>/dev/null
  sleep 0.5
}
# The shims' (namespace, id) from their command lines (-namespace NS -id ID -address W/containerd.sock),
# read before they die: a shim killed while containerd was deleting its task has no task directory
# left, but its socket in /run/containerd/s stays (step 4).
shim_ids() {
  local p
  for p in $(pids_naming); do
    tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | awk '
      /^-namespace$/ { getline ns } /^-id$/ { getline id } END { if (ns != "" && id != "") print ns "/" id }'
  done | sort -u
}
SHIMS=$(shim_ids)
kill_all pids_naming

# 2. The pods' processes: everything in the node's cgroup tree, then the tree itself.
cgroup_pids() { cat /sys/fs/cgroup/*/"$CGROUP_ROOT"/cgroup.procs /sys/fs/cgroup/*/"$CGROUP_ROOT"/**/cgroup.procs 2>/dev/null | sort -u; }
shopt -s globstar nullglob
for i in 1 2 3; do
  pids=$(cgroup_pids)
  [ -n "$pids" ] || break
  say "killing $(echo "$pids" | wc -l) pod process(es)"
  kill -KILL $pids 2>/dev/null
  sleep 0.5
done
for d in /sys/fs/cgroup/*/"$CGROUP_ROOT" /sys/fs/cgroup/"$CGROUP_ROOT"; do
  [ -d "$d" ] || continue
  find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  [ -d "$d" ] && say "cgroup $d could not be removed"
done

# 3. Mounts under WORKDIR, deepest first (lazily when busy).
for i in 1 2 3; do
  mounts=$(awk -v w="$W" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r)
  [ -n "$mounts" ] || break
  for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done

# 4. Shim sockets (containerd names them sha256(<its socket>/<namespace>/<id>)) and log links.
tasks() {
  local t
  for t in "$W"/containerd/state/io.containerd.runtime.v2.task/*/*; do
    [ -d "$t" ] && echo "$(basename "$(dirname "$t")")/$(basename "$t")"
  done
  [ -z "$SHIMS" ] || echo "$SHIMS"
}
for task in $(tasks | sort -u); do
  for path in "$W/containerd.sock/$task" "$W/containerd.sock/$task/debug"; do
    rm -f "/run/containerd/s/$(printf '%s' "$path" | sha256sum | cut -c1-64)"
  done
done
# Then any socket there that nothing listens on (not in /proc/net/unix): only a dead shim leaves one,
# and the node is the only containerd here while it holds the lock (a live one's sockets stay).
for s in /run/containerd/s/*; do
  [ -S "$s" ] || continue
  grep -qF " $s" /proc/net/unix || { say "removing a dead shim's socket $s"; rm -f "$s"; }
done
rmdir /run/containerd/s /run/containerd 2>/dev/null
for l in /var/log/containers/*.log; do
  case $(readlink "$l") in "$W"/*) rm -f "$l" ;; esac
done
rmdir /var/log/containers 2>/dev/null

# 5. Links: any veth still on the node's bridge, the bridge, the node's address on lo.
for v in $(ip -o link show master "$NODE_BRIDGE" 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
  ip link del "$v" 2>/dev/null
done
ip link del "$NODE_BRIDGE" 2>/dev/null
ip addr del "$NODE_IP/32" dev lo 2>/dev/null

# Host directories the kubelet (device plugin socket) and libcni (result cache) created.
for d in "${HOST_DIR_0:-}" "${HOST_DIR_1:-}"; do [ -n "$d" ] && rm -rf "$d"; done
rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/cni/results/vws-pods-* 2>/dev/null

# 6. iptables: rules that jump to or live in KUBE-*/CNI-* chains, then the chains.
for cmd in iptables ip6tables; do
  for table in filter nat mangle raw; do
    "$cmd-save" -t "$table" >/dev/null 2>&1 || continue
    if "$cmd-save" -t "$table" | grep -qE '(KUBE|CNI)-'; then
      say "removing KUBE-/CNI- chains from $cmd -t $table"
      "$cmd-save" -t "$table" | awk '
        /^\*/ || /^COMMIT/ { print; next }
        /^:/ { if ($1 !~ /^:(KUBE|CNI)-/) print; next }
        !/(KUBE|CNI)-/ { print }
      ' | "$cmd-restore" -T "$table" 2>&1 | head -5
    fi
  done
done

# 7. Sysctls back to what they were before the node started.
if [ -f "$W/sysctl.saved" ]; then
  while read -r key value; do
    [ -n "$key" ] && [ -w "/proc/sys/$key" ] && echo "$value" >"/proc/sys/$key" 2>/dev/null
  done <"$W/sysctl.saved"
fi

# 8. The directory, then the one-node-per-machine lock: the lock going is the sign that everything is gone.
if [ "${VWS_KEEP_CLUSTER:-}" = 1 ]; then
  say "kept $W (VWS_KEEP_CLUSTER=1)"
else
  rm -rf "$W" 2>/dev/null || say "could not remove $W: $(find "$W" -maxdepth 3 | head -5)"
fi
[ "$(head -n 1 /run/vws-real-node.lock 2>/dev/null)" = "$W" ] && rm -f /run/vws-real-node.lock
exit 0
