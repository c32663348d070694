#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, for tests and for trying
# profiles/slurm without a cluster. Needs root (and apt-get, unless the Debian
# packages slurmctld, slurmd, slurm-client and munge are installed already).
#
#   tests/slurm/local-cluster.sh start    install if needed, start, wait for an idle node
#   tests/slurm/local-cluster.sh stop     stop only the daemons this script started
#   tests/slurm/local-cluster.sh status   show the node and this script's daemons
#
# Its state and logs live in $MOTORFLOW_SLURM_DIR (default ${TMPDIR:-/tmp}/motorflow-slurm);
# its config is /etc/slurm/slurm.conf, where every SLURM command looks (the
# SLURM executor's job steps drop SLURM_CONF from their environment, so no
# other place works). An existing slurm.conf it did not write is never touched:
# `start` refuses instead, and `stop` removes only its own.
# No slurmdbd: poll job status with squeue (--slurm-status-command squeue).
set -euo pipefail

DIR=${MOTORFLOW_SLURM_DIR:-${TMPDIR:-/tmp}/motorflow-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# written by motorflow's tests/slurm/local-cluster.sh"
STARTED=$DIR/started # one line per daemon this script started: name pidfile
PACKAGES=(slurmctld slurmd slurm-client munge)

say() { echo "local-cluster: $*" >&2; }
die() {
    say "$*"
    exit 1
}

alive() { # pidfile -> is that process running?
    [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_packages() {
    local missing=()
    for command in slurmctld slurmd sbatch munged; do
        command -v "$command" >/dev/null || missing+=("$command")
    done
    [[ ${#missing[@]} -eq 0 ]] && return
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install ${PACKAGES[*]}"
    say "installing ${PACKAGES[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Debian's maintainer scripts try to start the daemons; there is no init
    # system to do that here, and we start them ourselves below.
    apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null; } ||
        die "apt-get install ${PACKAGES[*]} failed"
}

write_conf() {
    local host mem_mib
    host=$(hostname -s)
    mem_mib=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    mkdir -p "$DIR"/{ctld,spool,log,pids} "$(dirname "$CONF")"
    if [[ -e $CONF ]] && ! grep -qxF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script; not touching it"
    fi
    # Accounting and cgroups are off: a CI machine has neither a database nor a
    # systemd-managed cgroup tree. Each finished job is a line of $DIR/log/jobcomp.log
    # (what the tests count submissions by; sacct would need slurmdbd and a database).
    cat >"$CONF" <<EOF
$MARK
ClusterName=motorflow
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/pids/slurmctld.pid
SlurmdPidFile=$DIR/pids/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# Finished jobs stay visible to squeue (and to the test) for 5 minutes.
MinJobAge=300
KillWait=5
InactiveLimit=0
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mib State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    if pgrep -x munged >/dev/null; then
        return # someone's munged: use it, never stop it
    fi
    [[ -s /etc/munge/munge.key ]] || mungekey -c >/dev/null
    install -d -o munge -g munge -m 0755 /run/munge
    runuser -u munge -- /usr/sbin/munged
    echo "munged /run/munge/munged.pid" >>"$STARTED"
}

wait_for_idle() {
    local state=""
    for _ in $(seq 1 120); do
        state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1 || true)
        [[ $state == idle* ]] && return
        sleep 0.5
    done
    die "the node did not become idle (state: '${state:-none}'); see $DIR/log/"
}

start() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (it installs packages and starts munged, slurmctld and slurmd)"
    if alive "$DIR/pids/slurmctld.pid" && alive "$DIR/pids/slurmd.pid"; then
        wait_for_idle
        say "already running"
        return
    fi
    pgrep -x slurmctld >/dev/null && die "a slurmctld not started by this script is running; stop it first"
    install_packages
    write_conf
    : >>"$STARTED"
    start_munge
    slurmctld -f "$CONF"
    echo "slurmctld $DIR/pids/slurmctld.pid" >>"$STARTED"
    slurmd -f "$CONF"
    echo "slurmd $DIR/pids/slurmd.pid" >>"$STARTED"
    wait_for_idle
    say "node $(hostname -s) is idle"
}

stop() {
    [[ -f $STARTED ]] || {
        say "nothing started by this script"
        return
    }
    local name pidfile pids=()
    # Newest first: slurmd, slurmctld, then munged.
    while read -r name pidfile; do
        if alive "$pidfile"; then
            pids+=("$(cat "$pidfile")")
            kill "$(cat "$pidfile")"
            say "stopped $name"
        fi
    done < <(tac "$STARTED")
    for pid in "${pids[@]}"; do
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    done
    rm -f "$STARTED"
    if [[ -f $CONF ]] && grep -qxF "$MARK" "$CONF"; then
        rm -f "$CONF"
    fi
}

status() {
    sinfo -N -l 2>/dev/null || say "no cluster answers"
    [[ -f $STARTED ]] && while read -r name pidfile; do
        alive "$pidfile" && state=running || state=stopped
        echo "$name: $state"
    done <"$STARTED"
    return 0
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
