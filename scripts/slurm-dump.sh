#!/usr/bin/env bash
# A real Slurm on one machine, a seeded workload, and its accounting dumped for schedlab.
#
#   scripts/slurm-dump.sh OUT_DIR [builtin|backfill] [SEED] [SCHEDULER_PARAMETERS]
#
# Installs (apt, only when absent) munge, MariaDB, slurmdbd, slurmctld, slurmd and the client
# commands; starts them by hand (no systemd) on loopback with every file under a private state
# directory ($SLURM_STATE, default /tmp/schedlab-slurm-<sched>); declares 4 nodes n1..n4 (one
# slurmd each, `slurmd -N`, distinct ports), each with 8 GPUs as gres (AutoDetect=off, no
# real devices: gres.conf names empty files as the devices, which Slurm accepts when devices
# are not constrained by cgroups); runs a seeded workload of a few hundred short `sleep` jobs (1-16 GPUs, some
# `exit 1`, some cancelled pending or running, one timeout, a node drained and resumed, a node
# set DOWN under running jobs (NODE_FAIL, requeued), job arrays, dependencies, a
# heterogeneous job); waits for them; and writes into OUT_DIR:
#
#   sacct.txt        sacct --allusers --parsable2 --duplicates --state=$SACCT_STATES
#                    --format=$SACCT_FORMAT
#   nodes.txt        scontrol show nodes --oneliner
#   partitions.txt   scontrol show partitions --oneliner
#   qos.txt          sacctmgr show qos --parsable2 (partition debug's QOS debug8 caps it at
#                    GrpTRES=gres/gpu=8, GrpJobs=4)
#   slurm.conf gres.conf   the configuration used
#   workload.txt     the submissions as run (one line each), for reading the dump
#
# All daemons and sacct run with TZ=UTC, so the dump's local times are UTC.
# Stops every daemon it started at the end (the state directory stays for inspection).
set -euo pipefail

OUT=${1:?usage: slurm-dump.sh OUT_DIR [builtin|backfill] [SEED] [SCHEDULER_PARAMETERS]}
SCHED=${2:-builtin}
SEED=${3:-17}
# slurm.conf's SchedulerParameters, such as batch_sched_delay=0 (empty: Slurm's defaults).
SCHED_PARAMS=${4:-}
STATE=${SLURM_STATE:-/tmp/schedlab-slurm-$SCHED}
# Submissions of the workload (0: start Slurm, dump its configuration and QOS, stop).
JOBS=${SLURM_DUMP_JOBS:-300}
export TZ=UTC SLURM_TIME_FORMAT=standard

# The sacct fields schedlab's `--format sacct` reads (traces/FORMAT.md, "Slurm sacct").
SACCT_FORMAT=JobID,JobIDRaw,JobName,Partition,Account,User,QOS,Priority,Submit,Eligible,Start,End,Elapsed,Timelimit,State,ExitCode,NNodes,NodeList,ReqTRES,AllocTRES,Reason

# Every state: without --state, sacct leaves out jobs cancelled before they became eligible
# (a --begin in the future, a dependency never met); with it, they are there (Start None).
SACCT_STATES=BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO

case $SCHED in builtin | backfill) ;; *) echo "scheduler must be builtin or backfill, got $SCHED" >&2; exit 2 ;; esac

install_if_absent() {
    local missing=()
    command -v munged >/dev/null || missing+=(munge)
    command -v mariadbd >/dev/null || missing+=(mariadb-server)
    command -v slurmdbd >/dev/null || missing+=(slurmdbd)
    command -v slurmctld >/dev/null || missing+=(slurmctld)
    command -v slurmd >/dev/null || missing+=(slurmd)
    command -v sacct >/dev/null || missing+=(slurm-client)
    if ((${#missing[@]})); then
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [[ -f $STATE/mysql.pid ]] && kill "$(cat "$STATE/mysql.pid")" 2>/dev/null || true
    [[ -f $STATE/slurmctld.pid ]] && kill "$(cat "$STATE/slurmctld.pid")" 2>/dev/null || true
    [[ -f $STATE/slurmdbd.pid ]] && kill "$(cat "$STATE/slurmdbd.pid")" 2>/dev/null || true
    for n in 1 2 3 4; do
        [[ -f $STATE/d/n$n.pid ]] && kill "$(cat "$STATE/d/n$n.pid")" 2>/dev/null || true
    done
    [[ -f $STATE/munged.pid ]] && kill "$(cat "$STATE/munged.pid")" 2>/dev/null || true
    # Daemons write their state as they stop; the next run removes the directory.
    for ((i = 0; i < 40; i++)); do
        pgrep -f "$STATE/" >/dev/null || pgrep -x "slurmctld|slurmd|slurmdbd" >/dev/null || break
        sleep 0.5
    done
}
trap cleanup EXIT

wait_for() { # wait_for SECONDS WHAT COMMAND...
    local limit=$1 what=$2
    shift 2
    for ((i = 0; i < limit * 2; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    echo "timed out after ${limit}s waiting for $what" >&2
    return 1
}

write_configs() {
    local host
    host=$(hostname -s)
    cat >"$STATE/etc/slurm.conf" <<EOF
ClusterName=schedlab
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$STATE/munge.socket
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdSpoolDir=$STATE/d/%n
SlurmdPidFile=$STATE/d/%n.pid
SlurmdLogFile=$STATE/log/slurmd.%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=3600
SchedulerType=sched/$SCHED
${SCHED_PARAMS:+SchedulerParameters=$SCHED_PARAMS}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PriorityType=priority/basic
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=16819
AccountingStoragePass=$STATE/munge.socket
AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/gpu:v100
AccountingStorageEnforce=limits,qos
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=17001 CPUs=16 RealMemory=4000 Gres=gpu:a100:8 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=17002 CPUs=16 RealMemory=4000 Gres=gpu:a100:8 State=UNKNOWN
NodeName=n3 NodeHostname=$host NodeAddr=127.0.0.1 Port=17003 CPUs=16 RealMemory=4000 Gres=gpu:v100:8 State=UNKNOWN
NodeName=n4 NodeHostname=$host NodeAddr=127.0.0.1 Port=17004 CPUs=16 RealMemory=4000 Gres=gpu:v100:8 State=UNKNOWN
PartitionName=main Nodes=n[1-4] Default=YES MaxTime=60 State=UP
PartitionName=debug Nodes=n[3-4] MaxTime=10 QOS=debug8 State=UP
EOF
    cat >"$STATE/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=n[1-2] Name=gpu Type=a100 File=$STATE/dev/gpu[0-7]
NodeName=n[3-4] Name=gpu Type=v100 File=$STATE/dev/gpu[0-7]
EOF
    cat >"$STATE/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$STATE/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=16819
SlurmUser=root
PidFile=$STATE/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=13306
StorageUser=slurm
StoragePass=schedlab
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$STATE/etc/slurmdbd.conf"
}

start_daemons() {
    munged --key-file="$STATE/munge.key" --socket="$STATE/munge.socket" --pid-file="$STATE/munged.pid" \
        --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge.seed" --force
    mariadb-install-db --datadir="$STATE/mysql" --user=root --auth-root-authentication-method=normal \
        >"$STATE/log/mysql-install.log" 2>&1
    mariadbd --datadir="$STATE/mysql" --user=root --bind-address=127.0.0.1 --port=13306 \
        --socket="$STATE/mysql.sock" --pid-file="$STATE/mysql.pid" \
        --log-error="$STATE/log/mysql.log" &
    PIDS+=($!)
    wait_for 60 MariaDB mysql --socket="$STATE/mysql.sock" -uroot -e 'select 1'
    mysql --socket="$STATE/mysql.sock" -uroot -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'schedlab';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
    slurmdbd
    wait_for 60 slurmdbd sacctmgr -n show cluster
    sacctmgr -i add cluster schedlab >/dev/null 2>&1 || true
    # The partition QOS of `debug` (slurm.conf), created before slurmctld reads the partition;
    # its GPU limit once slurmctld has registered the gres/gpu TRES (below).
    sacctmgr -i add qos debug8 GrpJobs=4 >/dev/null
    slurmctld -i
    for n in 1 2 3 4; do slurmd -N "n$n"; done
    wait_for 60 "4 idle nodes" bash -c '[[ $(sinfo -h -N -t idle -o %N | sort -u | wc -l) == 4 ]]'
    sacctmgr -i modify qos debug8 set GrpTRES=gres/gpu=8 >/dev/null
}

# One submission; its job id (the first, for a heterogeneous job) on stdout.
submit() {
    echo "sbatch $*" >>"$OUT/workload.txt"
    sbatch --parsable -o /dev/null -e /dev/null "$@" | cut -d';' -f1 | cut -d+ -f1
}

# sbatch flags for G GPUs: one node for 8 or fewer, else 2 nodes with half each.
gpu_flags() {
    local g=$1
    if ((g <= 8)); then echo "-N 1 --gres=gpu:$g"; else echo "-N 2 --gres=gpu:$(((g + 1) / 2))"; fi
}

run_workload() {
    RANDOM=$SEED
    local gpus=(1 1 1 1 2 2 2 4 4 8 8 16 12)
    local pending_to_cancel=() running_to_cancel=() last=
    : >"$OUT/workload.txt"
    for ((i = 1; i <= JOBS; i++)); do
        local g=${gpus[RANDOM % ${#gpus[@]}]} secs=$((1 + RANDOM % 8)) kind=$((RANDOM % 20)) flags
        flags=$(gpu_flags "$g")
        local part=main
        ((RANDOM % 25 == 0)) && part=debug && flags="-N 1 --gres=gpu:$((1 + RANDOM % 4))"
        [[ -z $last ]] && kind=4 # a dependency needs an earlier job
        # shellcheck disable=SC2086
        case $kind in
            0) last=$(submit -J fail -p $part $flags -t 5 --wrap "sleep $secs; exit 1") ;;
            1) pending_to_cancel+=("$(submit -J cancel-pending -p $part -N 1 --gres=gpu:8 -t 5 --begin=now+600 --wrap "sleep $secs")") ;;
            2) running_to_cancel+=("$(submit -J cancel-running -p $part $flags -t 5 --wrap "sleep 30")") ;;
            3) submit -J dep -p $part $flags -t 5 -d "afterany:$last" --wrap "sleep $secs" >/dev/null ;;
            *) last=$(submit -J work -p $part $flags -t $((1 + secs % 5)) --wrap "sleep $secs") ;;
        esac
        case $i in
            40) submit -J array -p main -N 1 --gres=gpu:2 -t 5 --array=0-9 --wrap "sleep 3" >/dev/null ;;
            # Slurm schedules heterogeneous jobs with sched/backfill only.
            80) [[ $SCHED == backfill ]] && submit -J het -t 5 -N 1 --gres=gpu:2 : -N 1 --gres=gpu:4 --wrap "sleep 4" >/dev/null ;;
            100) submit -J timeout -p main -N 1 --gres=gpu:1 -t 1 --wrap "sleep 600" >/dev/null ;;
            120) submit -J array -p main -N 1 --gres=gpu:1 -t 5 --array=1-7%2 --wrap "sleep 2" >/dev/null ;;
            150)
                echo "scontrol update NodeName=n4 State=DRAIN Reason=maintenance" >>"$OUT/workload.txt"
                scontrol update NodeName=n4 State=DRAIN Reason=maintenance
                ;;
            200)
                echo "scontrol update NodeName=n4 State=RESUME" >>"$OUT/workload.txt"
                scontrol update NodeName=n4 State=RESUME
                ;;
            230)
                echo "scontrol update NodeName=n2 State=DOWN Reason=node-fail-test" >>"$OUT/workload.txt"
                scontrol update NodeName=n2 State=DOWN Reason=node-fail-test
                # ReturnToService=2: n2 is back as soon as its slurmd answers (a second).
                ;;
        esac
        if ((i % 25 == 0)); then
            for id in "${running_to_cancel[@]}"; do
                echo "scancel $id" >>"$OUT/workload.txt"
                scancel "$id"
            done
            running_to_cancel=()
        fi
        sleep 0.$((RANDOM % 6))
    done
    for id in "${pending_to_cancel[@]}" "${running_to_cancel[@]}"; do
        echo "scancel $id" >>"$OUT/workload.txt"
        scancel "$id"
    done
    wait_for 900 "the queue to empty" bash -c '[[ -z $(squeue -h -o %i) ]]'
}

dump() {
    # slurmdbd receives job ends asynchronously; wait until no job still reads as running.
    wait_for 60 "accounting to catch up" bash -c \
        '! sacct --allusers -X -n -S 2000-01-01 -o State | grep -qE "RUNNING|PENDING|REQUEUED"'
    sacct --allusers --parsable2 --duplicates -S 2000-01-01 -E now --state="$SACCT_STATES" \
        --format="$SACCT_FORMAT" >"$OUT/sacct.txt"
    scontrol show nodes --oneliner >"$OUT/nodes.txt"
    scontrol show partitions --oneliner >"$OUT/partitions.txt"
    sacctmgr show qos --parsable2 >"$OUT/qos.txt"
    cp "$STATE/etc/slurm.conf" "$STATE/etc/gres.conf" "$OUT/"
    sed -i "s/$(hostname -s)/HOST/g" "$OUT/slurm.conf" "$OUT/nodes.txt"
    sed -i "s#$STATE#STATE#g" "$OUT/slurm.conf" "$OUT/gres.conf" "$OUT/nodes.txt"
    sacct -V >"$OUT/version.txt"
}

main() {
    local started=$SECONDS
    install_if_absent
    rm -rf "$STATE"
    mkdir -p "$STATE"/{etc,ctld,d/n1,d/n2,d/n3,d/n4,log,dev} "$OUT"
    # Stand-ins for /dev/nvidia*: gres.conf needs device files for GPUs; nothing opens them.
    touch "$STATE"/dev/gpu{0..7}
    export SLURM_CONF=$STATE/etc/slurm.conf
    dd if=/dev/urandom of="$STATE/munge.key" bs=1024 count=1 status=none
    chmod 400 "$STATE/munge.key"
    write_configs
    start_daemons
    run_workload
    dump
    echo "slurm-dump: $(($(wc -l <"$OUT/sacct.txt") - 1)) sacct rows in $OUT, $((SECONDS - started)) s" >&2
}

main
