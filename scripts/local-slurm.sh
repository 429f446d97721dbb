#!/usr/bin/env bash
#===- local-slurm.sh - A real SLURM cluster on this machine ----------------===#
#
#   eval "$(scripts/local-slurm.sh up --hosts N [--dir D] [--prefix P])"
#   scripts/local-slurm.sh down [--dir D] [--prefix P]
#
# `up` makes N hosts as network namespaces (scripts/netns-hosts.sh, prefix
# P: P-h0 .. P-h<N-1>, addresses 10.77.0.10+i), starts munge with its own
# key and socket, slurmctld on host 0 and one slurmd per host inside its
# namespace (nsenter --net: `ip netns exec` remounts /sys, which breaks
# SLURM's cgroup probe), everything under D, and waits until every node is
# idle. It prints `export` lines: SLURM_CONF, and MONARCH_SLURM_NETNS (the
# namespace of host 0, where the client commands and a controller reach
# the cluster: `nsenter --net=$MONARCH_SLURM_NETNS srun ...`).
# `down` stops the daemons by their pid files, removes the namespaces and D.
# Debian's slurmd, slurmctld, slurm-client and munge (scripts/setup.sh
# installs them); needs root. Facts measured on this machine kind:
# ../shared/notes/cluster-testing.md.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  echo "usage: $0 up --hosts N [--dir D] [--prefix P] | down [--dir D] [--prefix P]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
action="$1"
shift
hosts=0
dir=/tmp/monarch-slurm
prefix=mcslurm
while [ $# -gt 0 ]; do
  case "$1" in
  --hosts) hosts="${2:?}"; shift 2 ;;
  --dir) dir="${2:?}"; shift 2 ;;
  --prefix) prefix="${2:?}"; shift 2 ;;
  *) usage ;;
  esac
done

# Alive and not a zombie (daemons are reparented to a pid 1 that, in a
# container, may never reap them).
running() {
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)"
  [ -n "$state" ] && [ "$state" != Z ]
}

# The daemons of this cluster: munged by its pid file, and every slurmctld,
# slurmd and slurmstepd started with this cluster's SLURM_CONF (their pid
# files go early in a shutdown that may then wait, and a step's slurmstepd
# has none).
cluster_pids() {
  local p comm
  [ -f "$dir/munged.pid" ] && cat "$dir/munged.pid"
  for p in /proc/[0-9]*; do
    comm="$(cat "$p/comm" 2>/dev/null || true)"
    case "$comm" in
    slurmctld | slurmd | slurmstepd)
      grep -qxzF "SLURM_CONF=$dir/slurm.conf" "$p/environ" 2>/dev/null &&
        echo "${p#/proc/}"
      ;;
    esac
  done
  return 0
}

stop_daemons() {
  local pids pid
  pids="$(cluster_pids)"
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  # Up to 3 s for them to go, then SIGKILL.
  for _ in $(seq 30); do
    local alive=0
    for pid in $pids; do running "$pid" && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
}

down() {
  stop_daemons
  "$HERE/netns-hosts.sh" down --prefix "$prefix"
  rm -rf "$dir"
}

case "$action" in
down)
  down
  exit 0
  ;;
up) ;;
*) usage ;;
esac

case "$hosts" in
'' | *[!0-9]*) usage ;;
esac
[ "$hosts" -ge 1 ] || usage
if [ "$(id -u)" -ne 0 ]; then
  echo "local-slurm: needs root (network namespaces, munge, slurmd)" >&2
  exit 77
fi
for tool in munged slurmctld slurmd srun sinfo nsenter; do
  if ! command -v "$tool" >/dev/null; then
    echo "local-slurm: $tool is missing (apt-get install slurmd slurmctld slurm-client munge)" >&2
    exit 77
  fi
done

down
trap 'down' ERR
mkdir -p "$dir/state" "$dir/munge"
chmod 755 "$dir" "$dir/munge"
addresses=()
while read -r ns address; do
  addresses+=("$address")
done < <("$HERE/netns-hosts.sh" up --hosts "$hosts" --prefix "$prefix")

head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 600 "$dir/munge.key"
munged --force --socket="$dir/munge/munge.socket.2" --key-file="$dir/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge.seed"

{
  echo "ClusterName=monarch"
  echo "SlurmctldHost=$(hostname -s)(${addresses[0]})"
  echo "SlurmctldPort=16817"
  echo "SlurmdPort=16818"
  echo "AuthType=auth/munge"
  echo "AuthInfo=socket=$dir/munge/munge.socket.2"
  echo "CredType=cred/munge"
  echo "MailProg=/bin/true"
  echo "StateSaveLocation=$dir/state"
  echo "SlurmdSpoolDir=$dir/spool-%n"
  echo "SlurmctldPidFile=$dir/slurmctld.pid"
  echo "SlurmdPidFile=$dir/slurmd-%n.pid"
  echo "SlurmctldLogFile=$dir/slurmctld.log"
  echo "SlurmdLogFile=$dir/slurmd-%n.log"
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "SelectType=select/cons_tres"
  echo "SlurmUser=root"
  echo "SlurmdUser=root"
  echo "ReturnToService=2"
  echo "MpiDefault=none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "AccountingStorageType=accounting_storage/none"
  # More CPUs than cores, or an srun asking for more tasks waits forever.
  echo "SlurmdParameters=config_overrides"
  for ((i = 0; i < hosts; i++)); do
    echo "NodeName=h$i NodeAddr=${addresses[$i]} CPUs=8 State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$dir/slurm.conf"

export SLURM_CONF="$dir/slurm.conf"
nsenter --net="/run/netns/$prefix-h0" slurmctld -f "$SLURM_CONF"
for ((i = 0; i < hosts; i++)); do
  mkdir -p "$dir/spool-h$i"
  nsenter --net="/run/netns/$prefix-h$i" slurmd -f "$SLURM_CONF" -N "h$i"
done
for _ in $(seq 100); do
  idle="$(nsenter --net="/run/netns/$prefix-h0" sinfo -h -t idle -o '%D' 2>/dev/null | head -1 || true)"
  [ "${idle:-0}" = "$hosts" ] && break
  sleep 0.1
done
if [ "${idle:-0}" != "$hosts" ]; then
  echo "local-slurm: the nodes did not become idle (logs in $dir)" >&2
  down
  exit 1
fi
trap - ERR
echo "export SLURM_CONF=$dir/slurm.conf"
echo "export MONARCH_SLURM_NETNS=/run/netns/$prefix-h0"
