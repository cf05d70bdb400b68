#!/usr/bin/env bash
# An isolated Slurm cluster on this machine, for llmwatch's tests and demo.
#
#   slurm/local-cluster.sh start DIR [NODES]   prints "export SLURM_CONF=..." lines on success
#   slurm/local-cluster.sh stop DIR
#
# With LLMWATCH_CLUSTER_ACCOUNTING=1 the cluster also keeps accounting, as production clusters
# do: a MariaDB server and a slurmdbd of its own (Debian's mariadb-server and slurmdbd), so
# that `sacct` answers for jobs slurmctld has already forgotten. LLMWATCH_CLUSTER_MIN_JOB_AGE
# sets how long slurmctld keeps an ended job (MinJobAge, default 60 s). With
# LLMWATCH_CLUSTER_NODE_ADDRS=loopback each node gets an address of its own (node-N at
# 127.0.0.N+1, all this host), so an address in a log names one node, as on a real cluster.
# LLMWATCH_CLUSTER_PROLOG=PATH runs PATH as each node's Prolog (one that fails makes a failed
# launch: Slurm drains the node and holds the job); LLMWATCH_CLUSTER_CRED_EXPIRE=SECONDS sets
# the credential lifetime, which is also how long a requeued job waits before it may start
# again (Slurm's default: 120 s).
#
# Everything lives under DIR: munge key and socket, slurm.conf, state, spool and logs.
# Ports are picked free at start and reserved on this machine until `stop`, so two runs never
# collide, even starting side by side. Every process started here
# carries LLMWATCH_CLUSTER_DIR=DIR in its environment (slurmstepd and the jobs inherit
# it), which is how `stop` finds and kills exactly what this cluster started, by pid.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
nodes=${3:-4}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR [NODES]" >&2; exit 2; }

die() { echo "local-cluster: $*" >&2; exit 1; }

# Processes of this cluster: the daemons carry LLMWATCH_CLUSTER_DIR in their environment;
# slurmstepd wipes its environment but works inside our log or spool dir; jobs descend
# from those. The caller (a test, the demo) is never matched, whatever its environment.
cluster_pids() {
  # Bash builtins only, per process: with three clusters and their tests running this walks
  # hundreds of processes, several times a stop, and three forks each cost 2.6 s of CPU a stop.
  local p var roots="" where=() w
  local -a env
  [ -d "$dir" ] && mapfile -t where < <(find "$dir/log" "$dir/spool" -type d 2>/dev/null)
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    mapfile -d '' -t env 2>/dev/null <"/proc/$p/environ" || continue
    for var in "${env[@]}"; do
      [[ "$var" == "LLMWATCH_CLUSTER_DIR=$dir" ]] && { roots="$roots $p"; continue 2; }
    done
    for w in "${where[@]}"; do
      [[ /proc/$p/cwd -ef "$w" ]] && { roots="$roots $p"; continue 2; }
    done
  done
  [ -n "$roots" ] || return 0
  ps -eo pid=,ppid= | awk -v roots="$roots" -v self=$$ '
    { parent[$1] = $2 }
    END {
      n = split(roots, r, " "); for (i = 1; i <= n; i++) mine[r[i]] = 1
      for (p in parent) {
        for (q = p; q > 1; q = parent[q]) if (q in mine) { if (p != self) print p; break }
      }
    }'
}

stop_cluster() {
  [ -d "$dir" ] || return 0
  local pids p deadline
  # Cancel jobs first so slurmd tears their steps down the normal way.
  SLURM_CONF=$dir/slurm.conf timeout 5 scancel --quiet --full -u "$(id -un)" 2>/dev/null || true
  pids=$(cat "$dir"/run/*.pid 2>/dev/null || true; cluster_pids)
  [ -n "$pids" ] && kill -TERM $pids 2>/dev/null || true
  deadline=$((SECONDS + 10))
  while [ $SECONDS -lt $deadline ]; do
    pids=$(cluster_pids)
    [ -z "$pids" ] && break
    sleep 0.2
  done
  pids=$(cluster_pids)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
  rm -f "$dir"/run/*.pid
  release_ports
  return 0
}

# Ports reserved on this machine, a directory each (mkdir is atomic): clusters started side by
# side (ctest -j) could otherwise each find the same range free before either had bound it.
# A cluster's reservations are listed in DIR/run/ports and released at `stop`; one over a day
# old is from a run that was killed, and is taken back.
port_locks=${TMPDIR:-/tmp}/llmwatch-cluster-ports
reserve_ports() {  # PORT COUNT: all of them, or none
  local i
  [ -w "$port_locks" ] || return 0  # another user's registry: checked free, as before
  for ((i = 0; i < $2; i++)); do
    if ! mkdir "$port_locks/$(($1 + i))" 2>/dev/null; then
      for ((i--; i >= 0; i--)); do rm -rf "${port_locks:?}/$(($1 + i))"; done
      return 1
    fi
  done
  echo "$1 $2" >>"$dir/run/ports"
}
release_ports() {
  local port count i
  [ -f "$dir/run/ports" ] || return 0
  while read -r port count; do
    for ((i = 0; i < count; i++)); do rm -rf "${port_locks:?}/$((port + i))"; done
  done <"$dir/run/ports"
  rm -f "$dir/run/ports"
}

# The first of COUNT consecutive TCP ports nobody listens on, away from Slurm's defaults and
# below the kernel's ephemeral range: an outgoing connection of another cluster's daemons
# (ctest -j runs clusters side by side) may hold any ephemeral port, and a slurmd that cannot
# bind its port never registers. Every port of the range is checked.
free_port() {
  local port count=${1:-1} i busy low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 12000 ] || low=32768
  while :; do
    port=$((10000 + RANDOM % (low - 10000 - count)))
    busy=0
    for ((i = 0; i < count; i++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((port + i))") 2>/dev/null; then busy=1; break; fi
    done
    [ $busy -eq 0 ] && reserve_ports "$port" "$count" && { echo "$port"; return; }
  done
}

# MariaDB and slurmdbd for this cluster only: their own data directory, socket, ports and pid
# files under DIR; slurmdbd runs as root and stores in the server on 127.0.0.1:DB_PORT.
start_accounting() {
  local host=$1 db_port=$2 dbd_port=$3
  command -v mariadbd >/dev/null || PATH=$PATH:/usr/sbin
  command -v slurmdbd >/dev/null || die "slurmdbd not found (install slurmdbd mariadb-server)"
  command -v mariadbd >/dev/null || die "mariadbd not found (install mariadb-server)"
  local sock=$dir/mysql/mysqld.sock
  mkdir -p "$dir/mysql"
  if [ ! -d "$dir/mysql/data/mysql" ]; then
    mariadb-install-db --user=root --datadir="$dir/mysql/data" --skip-test-db \
      >"$dir/log/mariadb-install.log" 2>&1 ||
      die "mariadb-install-db failed: $(tail -n 3 "$dir/log/mariadb-install.log")"
  fi
  # Its own session, as the Slurm daemons have: mariadbd does not daemonize, and whoever ran
  # this script may end its process group when the script returns.
  setsid mariadbd --no-defaults --user=root --datadir="$dir/mysql/data" --socket="$sock" \
    --port="$db_port" --bind-address=127.0.0.1 --pid-file="$dir/run/mariadbd.pid" \
    --log-error="$dir/log/mariadbd.log" --innodb-buffer-pool-size=32M </dev/null >/dev/null 2>&1 &
  local deadline=$((SECONDS + 60))
  until mariadb-admin --no-defaults -S "$sock" -u root ping >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "mariadbd did not answer: $(tail -n 3 "$dir/log/mariadbd.log")"
    sleep 0.2
  done
  mariadb --no-defaults -S "$sock" -u root -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'llmwatch-test';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
    die "could not create the accounting user"
  cat >"$dir/slurmdbd.conf" <<EOF
# Generated by llmwatch slurm/local-cluster.sh for a throw-away test cluster.
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock
DbdHost=$host
DbdPort=$dbd_port
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=llmwatch-test
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$dir/slurmdbd.conf"
  # slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
  slurmdbd || die "slurmdbd failed: $(tail -n 3 "$dir/log/slurmdbd.log")"
  deadline=$((SECONDS + 60))
  until sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx llmwatch-test; do
    [ $SECONDS -lt $deadline ] || die "slurmdbd did not answer: $(tail -n 3 "$dir/log/slurmdbd.log")"
    sacctmgr -i add cluster llmwatch-test >/dev/null 2>&1 || sleep 0.5
  done
}

start_cluster() {
  command -v slurmctld >/dev/null || PATH=$PATH:/usr/sbin
  command -v slurmctld >/dev/null || die "slurmctld not found (install slurmctld slurmd munge)"
  mkdir -p "$dir"/{run,log,state,spool,munge}
  dir=$(cd "$dir" && pwd)
  export LLMWATCH_CLUSTER_DIR=$dir
  local host ctld_port base_port
  host=$(hostname)
  mkdir -p "$port_locks" && chmod 1777 "$port_locks" 2>/dev/null || true
  find "$port_locks" -mindepth 1 -maxdepth 1 -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
  release_ports  # a cluster started again in the same DIR
  ctld_port=$(free_port)
  base_port=$(free_port "$nodes")
  local node_addrs=""
  [ "${LLMWATCH_CLUSTER_NODE_ADDRS:-}" = loopback ] && node_addrs="NodeAddr=127.0.0.[2-$((nodes + 1))]"
  local accounting="AccountingStorageType=accounting_storage/none" db_port dbd_port
  if [ "${LLMWATCH_CLUSTER_ACCOUNTING:-0}" = 1 ]; then
    db_port=$(free_port)
    dbd_port=$(free_port)
    accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$host
AccountingStoragePort=$dbd_port
AccountingStoragePass=$dir/run/munge.sock"
  fi

  # munge: its own key, socket and pid file; never the system daemon. As on a real cluster, the
  # key is root's alone and the socket everyone's: a job's user runs srun (a step as its owner).
  chmod 700 "$dir/munge"
  chmod 755 "$dir/run"
  [ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/run/munge.sock" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munge.seed" || die "munged failed: $(tail -n 3 "$dir/log/munged.log")"

  # LLMWATCH_CLUSTER_REBOOT=<fake_boot_time.so>: `scontrol reboot` works. All nodes share
  # this host, so a node's "reboot" restarts its slurmd with a boot time of now
  # (slurm/local-reboot-program, tests/helpers/fake_boot_time.cpp).
  local reboot=""
  if [ -n "${LLMWATCH_CLUSTER_REBOOT:-}" ]; then
    [ -f "$LLMWATCH_CLUSTER_REBOOT" ] || die "LLMWATCH_CLUSTER_REBOOT: no $LLMWATCH_CLUSTER_REBOOT"
    printf '%s\n' "$LLMWATCH_CLUSTER_REBOOT" >"$dir/reboot-preload"
    reboot="RebootProgram=$(cd "$(dirname "$0")" && pwd)/local-reboot-program
ResumeTimeout=60"
  fi
  # A job submitted with --export=NONE (llmwatch's restarts: the owner's environment, never
  # llmwatch's) gets its owner's login environment. Slurm reads it by running `su - USER` and
  # kills that shell's process group after GetEnvTimeout: on a loaded machine whose root login
  # runs `pyenv rehash`, the kill left pyenv's lock behind, and every later login then waited
  # 60 s on it, so every such job failed to launch. Here it comes from a file instead
  # (GetEnvTimeout=0: Slurm reads StateSaveLocation/env_cache/USER and runs no shell).
  mkdir -p "$dir/state/env_cache"
  local user uhome ushell
  while IFS=: read -r user _ _ _ _ uhome ushell; do
    printf 'HOME=%s\nSHELL=%s\nUSER=%s\nLOGNAME=%s\nPATH=%s\n' "$uhome" "$ushell" "$user" \
      "$user" /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      >"$dir/state/env_cache/$user"
  done < <(getent passwd)
  cat >"$dir/slurm.conf" <<EOF
# Generated by llmwatch slurm/local-cluster.sh for a throw-away test cluster.
ClusterName=llmwatch-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock${LLMWATCH_CLUSTER_CRED_EXPIRE:+,cred_expire=$LLMWATCH_CLUSTER_CRED_EXPIRE}
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
$accounting
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
InactiveLimit=0
GetEnvTimeout=0
KillWait=5
MinJobAge=${LLMWATCH_CLUSTER_MIN_JOB_AGE:-60}
ReturnToService=2
$reboot
${LLMWATCH_CLUSTER_PROLOG:+Prolog=$LLMWATCH_CLUSTER_PROLOG}
SchedulerParameters=sched_interval=2,bf_interval=2
NodeName=node-[1-$nodes] NodeHostname=$host $node_addrs CPUs=1 RealMemory=1000 Port=$base_port-$((base_port + nodes - 1)) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  if [ "${LLMWATCH_CLUSTER_ACCOUNTING:-0}" = 1 ]; then
    start_accounting "$host" "$db_port" "$dbd_port"
  fi
  slurmctld -f "$SLURM_CONF" -c || die "slurmctld failed: $(tail -n 3 "$dir/log/slurmctld.log")"
  local n
  for n in $(seq 1 "$nodes"); do
    slurmd -f "$SLURM_CONF" -N "node-$n" || die "slurmd node-$n failed: $(tail -n 3 "$dir/log/slurmd-node-$n.log")"
  done

  # Ready when every node answers idle; poll, never sleep-and-hope.
  # Generous: under ctest -j several clusters start at once on a 2-core machine.
  local deadline=$((SECONDS + 120)) idle=0
  while [ $SECONDS -lt $deadline ]; do
    idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$' || true)
    [ "$idle" -eq "$nodes" ] && break
    sleep 0.2
  done
  if [ "$idle" -ne "$nodes" ]; then
    sinfo -N >&2 || true
    tail -n 5 "$dir/log/slurmctld.log" >&2 || true
    # Why a node never answered is in its own slurmd's log (a port taken, a crash): say it.
    local down
    for down in $(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 != "idle" {print $1}'); do
      echo "--- $down's slurmd: $(tail -n 5 "$dir/log/slurmd-$down.log" 2>/dev/null | tr '\n' ' ')" >&2
      [ -f "$dir/run/slurmd-$down.pid" ] && ! kill -0 "$(cat "$dir/run/slurmd-$down.pid")" 2>/dev/null &&
        echo "--- $down's slurmd is not running" >&2 || true
    done
    stop_cluster
    die "only $idle of $nodes nodes idle after 120 s"
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

case "$cmd" in
  start) start_cluster ;;
  stop) stop_cluster ;;
  *) die "unknown command '$cmd' (start|stop)" ;;
esac
