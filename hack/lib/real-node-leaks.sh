#!/usr/bin/env bash
# real-node-leaks.sh: fails (exit 1, one line per leak) when a real node (hack/lib/real-node.ts) left
# anything on this machine; hack/test.sh runs it after the tests. Checks what the node's cleanup
# (real-node-cleanup.sh) removes: processes, links, iptables chains, mounts, cgroups, sockets, files.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PATH="$ROOT/bin:$PATH"
leaks=0
leak() { echo "LEAK: $*"; leaks=$((leaks + 1)); }

for p in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
  case $cmd in
    *real-node-leaks.sh*) ;;
    *vws-node-*) leak "process ${p#/proc/}: ${cmd:0:160}" ;;
  esac
done
l=$(ip -o link show | grep -E '^[0-9]+: (vws|veth)' | awk -F': ' '{ print $2 }')
[ -z "$l" ] || leak "links: $(echo "$l" | tr '\n' ' ')"
for cmd in iptables ip6tables; do
  if command -v "$cmd-save" >/dev/null; then
    n=$("$cmd-save" 2>/dev/null | grep -cE '(KUBE|CNI)-')
    [ "$n" -eq 0 ] || leak "$n $cmd rule/chain line(s) naming KUBE-/CNI- ($cmd-save | grep -E '(KUBE|CNI)-')"
  fi
done
a=$(ip -o addr show dev lo | grep -F ' 10.250.250.1/')
[ -z "$a" ] || leak "the node address on lo: $a"
m=$(grep -E 'vws-node-|kubelet|containerd|/run/netns|cni-' /proc/self/mounts)
[ -z "$m" ] || leak "mounts: $(echo "$m" | awk '{ print $2 }' | head -5 | tr '\n' ' ')"
c=$(ls -d /sys/fs/cgroup/*/vws-node* /sys/fs/cgroup/*/kubepods* 2>/dev/null)
[ -z "$c" ] || leak "cgroups: $(echo "$c" | head -5 | tr '\n' ' ')"
[ ! -e /run/containerd ] || leak "/run/containerd: $(ls -A /run/containerd | head -5 | tr '\n' ' ')"
[ ! -e /run/vws-real-node.lock ] || leak "/run/vws-real-node.lock names $(cat /run/vws-real-node.lock)"
d=$(ls -d /tmp/vws-node-* /var/lib/cni /var/lib/kubelet /var/log/pods /var/log/containers /opt/containerd 2>/dev/null)
[ -z "$d" ] || leak "files: $(echo "$d" | tr '\n' ' ')"

if [ "$leaks" -gt 0 ]; then
  echo "real node: $leaks leak(s) (hack/lib/real-node-cleanup.sh <workdir> removes a node's leftovers)"
  exit 1
fi
echo "real node: nothing left behind (processes, links, iptables, mounts, cgroups, files)"
