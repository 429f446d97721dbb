#!/usr/bin/env bash
#===- netns-hosts.sh - Network namespaces as the hosts of a test cluster ---===#
#
#   scripts/netns-hosts.sh up --hosts N [--prefix P] [--subnet 10.77.0]
#   scripts/netns-hosts.sh down [--prefix P]
#   scripts/netns-hosts.sh reap
#
# `up` makes N "hosts" on this machine: network namespaces P-h0 .. P-h<N-1>,
# each with loopback and one veth into a bridge that lives in a namespace
# of its own (P-br, away from the root namespace's firewall), host i at
# address <subnet>.(10+i)/24. The root namespace gets no address. It prints
# one line per host, "P-h<i> <address>", for the caller (run a process on
# host i with `nsenter --net=/run/netns/P-h<i> CMD`; not `ip netns exec`,
# which remounts /sys). `down` deletes the namespaces, and with them the
# veths and the bridge. `reap` deletes the namespaces of prefixes
# `mc<letters><pid>` (the tests' and benches' prefixes) whose process is
# gone: what a killed test could not take down. Needs root; measured facts: ../shared/notes or
# docs/executor.md, "Across hosts".
#
#===------------------------------------------------------------------------===#
set -euo pipefail

usage() {
  echo "usage: $0 up --hosts N [--prefix P] [--subnet A.B.C] | down [--prefix P] | reap" >&2
  exit 2
}

[ $# -ge 1 ] || usage
action="$1"
shift
hosts=0
prefix=mc
subnet=10.77.0
while [ $# -gt 0 ]; do
  case "$1" in
  --hosts) hosts="${2:?}"; shift 2 ;;
  --prefix) prefix="${2:?}"; shift 2 ;;
  --subnet) subnet="${2:?}"; shift 2 ;;
  *) usage ;;
  esac
done
case "$prefix" in
*[!a-zA-Z0-9_-]* | "") echo "netns-hosts: bad prefix '$prefix'" >&2; exit 2 ;;
esac

down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}'); do
    case "$ns" in
    "$prefix"-h[0-9]* | "$prefix"-br) ip netns del "$ns" ;;
    esac
  done
}

case "$action" in
up)
  case "$hosts" in
  '' | *[!0-9]*) usage ;;
  esac
  if [ "$hosts" -lt 1 ] || [ "$hosts" -gt 200 ]; then
    echo "netns-hosts: --hosts must be 1..200" >&2
    exit 2
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "netns-hosts: needs root (network namespaces)" >&2
    exit 77
  fi
  down
  trap 'down' ERR
  ip netns add "$prefix-br"
  ip -n "$prefix-br" link add br0 type bridge
  ip -n "$prefix-br" link set br0 up
  ip -n "$prefix-br" link set lo up
  for ((i = 0; i < hosts; i++)); do
    ns="$prefix-h$i"
    ip netns add "$ns"
    # Interface names are at most 15 characters: short ones, renamed inside.
    ip link add "mcv$$-$i" type veth peer name "mcp$$-$i"
    ip link set "mcv$$-$i" netns "$ns"
    ip link set "mcp$$-$i" netns "$prefix-br"
    ip -n "$ns" link set "mcv$$-$i" name eth0
    ip -n "$prefix-br" link set "mcp$$-$i" name "h$i"
    ip -n "$prefix-br" link set "h$i" master br0
    ip -n "$prefix-br" link set "h$i" up
    ip -n "$ns" addr add "$subnet.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    echo "$ns $subnet.$((10 + i))"
  done
  ;;
down)
  down
  ;;
reap)
  for ns in $(ip netns list | awk '{print $1}'); do
    if [[ "$ns" =~ ^mc[a-z]*([0-9]+)-(h[0-9]+|br)$ ]] &&
      ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
      ip netns del "$ns"
    fi
  done
  ;;
*)
  usage
  ;;
esac
