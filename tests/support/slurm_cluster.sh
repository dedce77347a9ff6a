#!/usr/bin/env bash
# A real single-node Slurm for the tests (docs/scale-out.md): munged on a private socket and key,
# slurmctld and slurmd on free loopback ports, proctrack/linuxproc, task/none, select/cons_tres,
# every file under DIR. Two partitions: main (the default) and gpu, whose node declares one GPU
# (a count only: no device is touched) so that `--gres=gpu:1` is schedulable.
#
#   slurm_cluster.sh start DIR   starts it and waits until the node is idle; DIR/slurm.conf is
#                                what SLURM_CONF must name. Without the packages or root it writes
#                                the reason to DIR/absent and exits 0: the tests that need it skip
#                                with that reason.
#   slurm_cluster.sh stop DIR    stops what start started.
set -uo pipefail
action=${1:?start or stop}
dir=$(mkdir -p "${2:?DIR}" && cd "$2" && pwd)

stop() {
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null
  done
  sleep 1
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pid_file" ] && kill -9 "$(cat "$pid_file")" 2>/dev/null
    rm -f "$pid_file"
  done
  return 0
}

if [ "$action" = stop ]; then
  stop
  exit 0
fi

absent() {
  stop
  echo "$1" > "$dir/absent"
  echo "slurm_cluster: $1 (the Slurm tests will skip)"
  exit 0
}
rm -f "$dir/absent"
stop
for tool in slurmctld slurmd munged sbatch squeue; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] ||
    absent "$tool is not installed (Debian: apt-get install slurm-wlm munge)"
done
[ "$(id -u)" = 0 ] || absent "a test cluster runs slurmd as root; this is uid $(id -u)"
export PATH="$PATH:/usr/sbin"

rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" "$dir/cgroup.conf"
mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
chmod 700 "$dir/munge"
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" || absent "munged did not start: $(tail -3 "$dir/munge/munged.log" 2>/dev/null)"

# Two free TCP ports on loopback.
read -r ctld_port d_port < <(/usr/bin/python3 - <<'PY'
import socket
ports = []
socks = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    ports.append(s.getsockname()[1])
print(*ports)
PY
)
host=$(hostname -s)
cpus=$(nproc)
# The node's memory as the machine has it, less a tenth: a job's --mem is judged as on a real
# cluster.
memory_mb=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
cat > "$dir/slurm.conf" <<EOF
# Written by tests/support/slurm_cluster.sh: a single-node test cluster.
ClusterName=upskilltest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
PartitionName=gpu Nodes=ALL Default=NO MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
cat > "$dir/gres.conf" <<EOF
AutoDetect=off
NodeName=$host Name=gpu File=/dev/null Count=1
EOF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i || absent "slurmctld did not start: $(tail -3 "$dir/log/slurmctld.log" 2>/dev/null)"
slurmd || absent "slurmd did not start: $(tail -3 "$dir/log/slurmd.log" 2>/dev/null)"
for _ in $(seq 1 60); do
  state=$(sinfo --noheader --partition=main --format=%t 2>/dev/null | head -1)
  case "$state" in
    idle*|mix*|alloc*) echo "slurm_cluster: up ($SLURM_CONF, node $host $state)"; exit 0 ;;
    inval*|drain*|down*) scontrol update nodename="$host" state=resume >/dev/null 2>&1 ;;
  esac
  sleep 1
done
absent "the node did not become idle: $(tail -5 "$dir/log/slurmctld.log" 2>/dev/null)"
