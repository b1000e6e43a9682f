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
#
# SLURM_DUMP_PROFILE=fairshare (default: unset, the dump above) instead declares 8 nodes
# n1..n8 (n1-n4 gpu:a100:8, n5-n8 gpu:v100:8), partitions `main` (all nodes, default,
# PriorityJobFactor=1) and `urgent` (n5-n8, PriorityJobFactor=4), PriorityType=priority/multifactor
# (weights: fair share 100000, age 10000, job size 10000, partition 20000, QOS 0; half-life
# 10 min, PriorityCalcPeriod 1 min, PriorityMaxAge 20 min; usage billed in GPUs:
# TRESBillingWeights=GRES/gpu=1), 3 accounts with Fairshare 50/30/20 and 2 Unix users each
# (created with useradd when missing; jobs submitted as them with runuser), and a workload of
# SLURM_DUMP_JOBS (default 1000) jobs, 1-16 GPUs, time limits 2x-10x the work; see
# run_workload_fairshare. Its other knobs:
#
#   SLURM_DUMP_FAIRSHARE=tree|classic   Fair Tree (22.05's default) or PriorityFlags=NO_FAIR_TREE
#   SLURM_DUMP_PORT_BASE=16800          every port moves with it (slurmctld BASE+17, slurmdbd
#                                       BASE+19, MariaDB BASE-3494, slurmd n BASE+200+n), so
#                                       two runs with distinct bases (and states) coexist
#   SLURM_STATE                         default /tmp/schedlab-slurm-fairshare-<port base>
#
# and it also writes config.txt (scontrol show config), assoc.txt (sacctmgr show assoc
# --parsable2), sshare.txt (sshare -a -l --parsable2 at the end), sshare-series.txt and
# sprio-series.txt (sshare -a -l and sprio of every pending job, once a minute while jobs
# remain; first column the UTC time of the snapshot).
#
# SLURM_DUMP_PROFILE=live starts the Slurm that `live serve --executor slurm` drives
# (docs/slurm-executor.md): 4 nodes n1..n4 with gpu:8 each, partition `gpu` (default; every
# job entering it is held by live/slurm/job_submit.lua, JobSubmitPlugins=lua), partition
# `batch` (same nodes, not held: what Slurm schedules itself), PreemptType=none,
# priority/basic, accounting in slurmdbd. It runs no workload: SLURM_DUMP_RUN (a command, run
# with bash -c while the daemons are up, with SLURM_CONF, SLURM_STATE and SLURM_DUMP_OUT set)
# does the work, and its exit status is the script's. SLURM_DUMP_RUN works with every profile
# (instead of the workload and the dump).
set -euo pipefail

OUT=${1:?usage: slurm-dump.sh OUT_DIR [builtin|backfill] [SEED] [SCHEDULER_PARAMETERS]}
SCHED=${2:-builtin}
SEED=${3:-17}
# slurm.conf's SchedulerParameters, such as batch_sched_delay=0 (empty: Slurm's defaults).
SCHED_PARAMS=${4:-}
PROFILE=${SLURM_DUMP_PROFILE:-}
case $PROFILE in "" | fairshare | live) ;; *) echo "SLURM_DUMP_PROFILE must be unset, fairshare or live, got $PROFILE" >&2; exit 2 ;; esac
FAIRSHARE=${SLURM_DUMP_FAIRSHARE:-tree}
case $FAIRSHARE in tree | classic) ;; *) echo "SLURM_DUMP_FAIRSHARE must be tree or classic, got $FAIRSHARE" >&2; exit 2 ;; esac
# Every port is the default one plus (PORT_BASE - 16800).
PORT_BASE=${SLURM_DUMP_PORT_BASE:-16800}
CTLD_PORT=$((PORT_BASE + 17)) DBD_PORT=$((PORT_BASE + 19)) MYSQL_PORT=$((PORT_BASE - 3494))
if [[ $PROFILE == fairshare ]]; then
    STATE=${SLURM_STATE:-/tmp/schedlab-slurm-fairshare-$PORT_BASE}
    NODES=8
    JOBS=${SLURM_DUMP_JOBS:-1000}
elif [[ $PROFILE == live ]]; then
    STATE=${SLURM_STATE:-/tmp/schedlab-slurm-live-$PORT_BASE}
    NODES=4
else
    STATE=${SLURM_STATE:-/tmp/schedlab-slurm-$SCHED}
    NODES=4
    # Submissions of the workload (0: start Slurm, dump its configuration and QOS, stop).
    JOBS=${SLURM_DUMP_JOBS:-300}
fi
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
    local pid f stopping=()
    series_stop
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null && stopping+=("$pid"); done
    # Only this run's daemons (their pid files), so that another run's keep going.
    for f in "$STATE/mysql.pid" "$STATE/slurmctld.pid" "$STATE/slurmdbd.pid" "$STATE"/d/n*.pid "$STATE/munged.pid"; do
        [[ -f $f ]] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null && stopping+=("$pid")
    done
    # Daemons write their state as they stop; the next run removes the directory.
    for ((i = 0; i < 40; i++)); do
        local alive=0
        for pid in "${stopping[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.5
    done
}
trap cleanup EXIT

wait_for() { # wait_for SECONDS WHAT COMMAND...
    local limit=$1 what=$2 i
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
SlurmctldPort=$CTLD_PORT
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
EOF
    if [[ $PROFILE == fairshare ]]; then
        # Weights as a site would set them: fair share first, then partition, age and size.
        # Usage (for fair share) counts GPU-seconds: TRESBillingWeights on both partitions.
        # AccountingStorageEnforce needs `limits`: without it slurmctld never calls
        # priority_g_job_end, so a job's usage since the last decay pass (PriorityCalcPeriod)
        # is dropped when it ends, and a job shorter than a pass adds none (seen: 20% of the
        # GPU-seconds of a 40-job run reached sshare's RawUsage).
        cat >>"$STATE/etc/slurm.conf" <<EOF
PriorityType=priority/multifactor
PriorityWeightFairshare=100000
PriorityWeightAge=10000
PriorityWeightJobSize=10000
PriorityWeightPartition=20000
PriorityWeightQOS=0
PriorityDecayHalfLife=0:10:00
PriorityCalcPeriod=1
PriorityMaxAge=0:20:00
PriorityUsageResetPeriod=NONE
$([[ $FAIRSHARE == classic ]] && echo PriorityFlags=NO_FAIR_TREE)
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$STATE/munge.socket
AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/gpu:v100
AccountingStorageEnforce=associations,limits
EOF
        local n type
        for ((n = 1; n <= NODES; n++)); do
            type=a100 && ((n > NODES / 2)) && type=v100
            echo "NodeName=n$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT_BASE + 200 + n)) CPUs=16 RealMemory=4000 Gres=gpu:$type:8 State=UNKNOWN" >>"$STATE/etc/slurm.conf"
        done
        cat >>"$STATE/etc/slurm.conf" <<EOF
PartitionName=main Nodes=n[1-8] Default=YES MaxTime=60 PriorityJobFactor=1 TRESBillingWeights=GRES/gpu=1.0 State=UP
PartitionName=urgent Nodes=n[5-8] MaxTime=60 PriorityJobFactor=4 TRESBillingWeights=GRES/gpu=1.0 State=UP
EOF
        cat >"$STATE/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=n[1-4] Name=gpu Type=a100 File=$STATE/dev/gpu[0-7]
NodeName=n[5-8] Name=gpu Type=v100 File=$STATE/dev/gpu[0-7]
EOF
    elif [[ $PROFILE == live ]]; then
        write_live_config "$host"
    else
        cat >>"$STATE/etc/slurm.conf" <<EOF
PriorityType=priority/basic
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$STATE/munge.socket
AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/gpu:v100
AccountingStorageEnforce=limits,qos
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT_BASE + 201)) CPUs=16 RealMemory=4000 Gres=gpu:a100:8 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT_BASE + 202)) CPUs=16 RealMemory=4000 Gres=gpu:a100:8 State=UNKNOWN
NodeName=n3 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT_BASE + 203)) CPUs=16 RealMemory=4000 Gres=gpu:v100:8 State=UNKNOWN
NodeName=n4 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT_BASE + 204)) CPUs=16 RealMemory=4000 Gres=gpu:v100:8 State=UNKNOWN
PartitionName=main Nodes=n[1-4] Default=YES MaxTime=60 State=UP
PartitionName=debug Nodes=n[3-4] MaxTime=10 QOS=debug8 State=UP
EOF
        cat >"$STATE/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=n[1-2] Name=gpu Type=a100 File=$STATE/dev/gpu[0-7]
NodeName=n[3-4] Name=gpu Type=v100 File=$STATE/dev/gpu[0-7]
EOF
    fi
    cat >"$STATE/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$STATE/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$STATE/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=schedlab
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$STATE/etc/slurmdbd.conf"
}

# The live profile: partition `gpu` is schedlab's (held at submission by job_submit.lua,
# no preemption by Slurm), `batch` is Slurm's own.
write_live_config() {
    local host=$1 n
    cp live/slurm/job_submit.lua "$STATE/etc/job_submit.lua"
    cat >>"$STATE/etc/slurm.conf" <<EOF
PriorityType=priority/basic
JobSubmitPlugins=lua
PreemptType=preempt/none
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$STATE/munge.socket
AccountingStorageTRES=gres/gpu
EOF
    for ((n = 1; n <= NODES; n++)); do
        echo "NodeName=n$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT_BASE + 200 + n)) CPUs=16 RealMemory=4000 Gres=gpu:8 State=UNKNOWN" >>"$STATE/etc/slurm.conf"
    done
    cat >>"$STATE/etc/slurm.conf" <<EOF
PartitionName=gpu Nodes=n[1-$NODES] Default=YES MaxTime=60 State=UP
PartitionName=batch Nodes=n[1-$NODES] MaxTime=60 State=UP
EOF
    cat >"$STATE/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=n[1-$NODES] Name=gpu File=$STATE/dev/gpu[0-7]
EOF
}

start_daemons() {
    munged --key-file="$STATE/munge.key" --socket="$STATE/munge.socket" --pid-file="$STATE/munged.pid" \
        --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge.seed" --force
    mariadb-install-db --datadir="$STATE/mysql" --user=root --auth-root-authentication-method=normal \
        >"$STATE/log/mysql-install.log" 2>&1
    mariadbd --datadir="$STATE/mysql" --user=root --bind-address=127.0.0.1 --port=$MYSQL_PORT \
        --socket="$STATE/mysql.sock" --pid-file="$STATE/mysql.pid" \
        --log-error="$STATE/log/mysql.log" &
    PIDS+=($!)
    wait_for 60 MariaDB mysql --socket="$STATE/mysql.sock" -uroot -e 'select 1'
    mysql --socket="$STATE/mysql.sock" -uroot -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'schedlab';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
    slurmdbd
    wait_for 60 slurmdbd sacctmgr -n show cluster
    sacctmgr -i add cluster schedlab >/dev/null 2>&1 || true
    if [[ $PROFILE == fairshare ]]; then
        add_accounts
    else
        # The partition QOS of `debug` (slurm.conf), created before slurmctld reads the partition;
        # its GPU limit once slurmctld has registered the gres/gpu TRES (below).
        sacctmgr -i add qos debug8 GrpJobs=4 >/dev/null
    fi
    slurmctld -i
    for ((n = 1; n <= NODES; n++)); do slurmd -N "n$n"; done
    wait_for 60 "$NODES idle nodes" bash -c "[[ \$(sinfo -h -N -t idle -o %N | sort -u | wc -l) == $NODES ]]"
    [[ $PROFILE == fairshare ]] || sacctmgr -i modify qos debug8 set GrpTRES=gres/gpu=8 >/dev/null
}

# The fairshare profile's accounts (Fairshare 50/30/20) and users (2 each, shares within the
# account 3:1, 1:1 and 1:2), as Unix users (no home, no login shell) and as associations.
ACCOUNTS=(alpha:50 beta:30 gamma:20)
USERS=(ann:alpha:3 al:alpha:1 ben:beta:1 bo:beta:1 gil:gamma:1 guy:gamma:2)
add_accounts() {
    local a u name acct share try
    for a in "${ACCOUNTS[@]}"; do
        sacctmgr -i add account "${a%%:*}" Fairshare="${a##*:}" Description=schedlab Organization=schedlab >/dev/null
    done
    for u in "${USERS[@]}"; do
        IFS=: read -r name acct share <<<"$u"
        # A concurrent run may be adding the same user (useradd then fails on the lock).
        for ((try = 0; try < 10; try++)); do
            id -u "$name" >/dev/null 2>&1 && break
            useradd --system --no-create-home --shell /usr/sbin/nologin "$name" 2>/dev/null || sleep 1
        done
        id -u "$name" >/dev/null
        sacctmgr -i add user "$name" Account="$acct" DefaultAccount="$acct" Fairshare="$share" >/dev/null
    done
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

# The fairshare profile's workload: JOBS batch jobs from 6 users at uneven rates (which shift
# halfway, so fair share moves), submitted faster than the cluster runs them, so a queue builds.
# Each job picks a time limit L in whole minutes (1-4) and an overestimate k in 2..10, and works
# (sleeps) round(60 L / k) s; about 3% end `exit 1`, 2% are cancelled (pending or running) a
# few dozen submissions later, 1% outwork their limit (TIMEOUT); 15% go to `urgent`.
run_workload_fairshare() {
    RANDOM=$SEED
    # GPUs (mean 2.95; 10% gangs: more than 8 run as -N 2 with half on each node).
    local gpus=(1 1 1 1 1 1 1 1 1 1 1 2 2 2 2 4 4 6 10 16)
    local limits=(1 1 1 2 2 3 4)
    # Users' weights (percent) before and after the midpoint: gamma first, then alpha.
    local names=(ann al ben bo gil guy) early=(5 10 15 10 40 20) late=(35 15 10 10 20 10)
    local to_cancel=() i j r g lim k work kind part user flags script
    : >"$OUT/workload.txt"
    series_start
    for ((i = 1; i <= JOBS; i++)); do
        local w=("${early[@]}")
        ((i > JOBS / 2)) && w=("${late[@]}")
        r=$((RANDOM % 100))
        for ((j = 0; j < ${#names[@]}; j++)); do
            ((r < w[j])) && break
            r=$((r - w[j]))
        done
        user=${names[j]}
        g=${gpus[RANDOM % ${#gpus[@]}]} lim=${limits[RANDOM % ${#limits[@]}]} k=$((2 + RANDOM % 9))
        work=$(((lim * 60 + k / 2) / k)) kind=$((RANDOM % 100)) part=main
        ((RANDOM % 100 < 15)) && part=urgent
        flags=$(gpu_flags "$g")
        # shellcheck disable=SC2086
        if ((kind < 3)); then
            submit_as "$user" -J fail -p $part $flags -t "$lim" --wrap "sleep $((work / 2)); exit 1" >/dev/null
        elif ((kind < 5)); then
            to_cancel+=("$(submit_as "$user" -J cancel -p $part $flags -t "$lim" --wrap "sleep $work")")
        elif ((kind < 6)); then
            submit_as "$user" -J timeout -p $part $flags -t "$lim" --wrap "sleep $((lim * 60 + 60))" >/dev/null
        else
            submit_as "$user" -J work -p $part $flags -t "$lim" --wrap "sleep $work" >/dev/null
        fi
        if ((i % 40 == 0)); then
            for id in "${to_cancel[@]}"; do
                echo "scancel $id" >>"$OUT/workload.txt"
                scancel "$id"
            done
            to_cancel=()
        fi
        sleep 0.$((RANDOM % 8))
    done
    for id in "${to_cancel[@]}"; do
        echo "scancel $id" >>"$OUT/workload.txt"
        scancel "$id"
    done
    wait_for 5400 "the queue to empty" bash -c '[[ -z $(squeue -h -o %i) ]]'
    series_stop
}

# One submission as USER (runuser, so that Slurm sees the user's uid); its job id on stdout.
submit_as() {
    local user=$1
    shift
    echo "runuser -u $user -- sbatch $*" >>"$OUT/workload.txt"
    runuser -u "$user" -- sbatch --parsable -D /tmp -o /dev/null -e /dev/null "$@" | cut -d';' -f1
}

# sshare and sprio once a minute in the background, each row led by the snapshot's UTC time.
SERIES_PID=
series_start() {
    echo "Time|$(sshare -a -l --parsable2 | head -1)" >"$OUT/sshare-series.txt"
    echo "Time|JobID|Partition|User|Priority|Age|Fairshare|JobSize|PartitionW|QOS|AgeN|FairshareN|JobSizeN|PartitionN" >"$OUT/sprio-series.txt"
    (
        while sleep 60; do
            local t
            t=$(date -u +%Y-%m-%dT%H:%M:%S)
            sshare -a -l --parsable2 -n | sed "s/^/$t|/" >>"$OUT/sshare-series.txt"
            sprio -h -o '%i|%r|%u|%Y|%A|%F|%J|%P|%Q|%a|%f|%j|%p' | sed "s/^/$t|/; s/ //g" >>"$OUT/sprio-series.txt"
        done
    ) &
    SERIES_PID=$!
}
series_stop() {
    [[ -n $SERIES_PID ]] && kill "$SERIES_PID" 2>/dev/null || true
    SERIES_PID=
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
    if [[ $PROFILE == fairshare ]]; then
        scontrol show config >"$OUT/config.txt"
        sacctmgr show assoc --parsable2 >"$OUT/assoc.txt"
        sshare -a -l --parsable2 >"$OUT/sshare.txt"
        # Whole words only: a host named `vm` must leave `vmem` alone.
        sed -i "s/\\b$(hostname -s)\\b/HOST/g; s#$STATE#STATE#g" "$OUT/config.txt"
    fi
}

main() {
    local started=$SECONDS
    install_if_absent
    rm -rf "$STATE"
    mkdir -p "$STATE"/{etc,ctld,log,dev} "$OUT"
    for ((n = 1; n <= NODES; n++)); do mkdir -p "$STATE/d/n$n"; done
    # Stand-ins for /dev/nvidia*: gres.conf needs device files for GPUs; nothing opens them.
    touch "$STATE"/dev/gpu{0..7}
    export SLURM_CONF=$STATE/etc/slurm.conf
    dd if=/dev/urandom of="$STATE/munge.key" bs=1024 count=1 status=none
    chmod 400 "$STATE/munge.key"
    write_configs
    start_daemons
    if [[ -n ${SLURM_DUMP_RUN:-} ]]; then
        local status=0
        SLURM_STATE=$STATE SLURM_DUMP_OUT=$OUT bash -c "$SLURM_DUMP_RUN" || status=$?
        echo "slurm-dump: SLURM_DUMP_RUN exited with $status after $((SECONDS - started)) s" >&2
        return $status
    elif [[ $PROFILE == fairshare ]]; then
        run_workload_fairshare
    else
        run_workload
    fi
    dump
    echo "slurm-dump: $(($(wc -l <"$OUT/sacct.txt") - 1)) sacct rows in $OUT, $((SECONDS - started)) s" >&2
}

main
