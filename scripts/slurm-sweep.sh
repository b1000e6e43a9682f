#!/usr/bin/env bash
# A schedlab sweep run as a Slurm job array, one shard per array task, merged into the folder
# the same sweep writes on one machine (byte for byte, wall.csv aside: it holds wall times).
#
#   SCHEDLAB=target/release/schedlab scripts/slurm-sweep.sh [OPTIONS] -o OUT -- SWEEP_ARGS...
#
#   scripts/slurm-sweep.sh -n 8 -p batch -t 30 -o sweep -- \
#       --trace philly.csv --format philly --cluster 60x8:V100 --policy fifo --policy sjf --seeds 0..5
#
# Run it where sbatch, squeue and scancel work (a login node). It writes a batch script into
# the work folder and submits it with `sbatch --array=0-(N-1)` (shards count from 0): task I
# runs `schedlab sweep SWEEP_ARGS --threads C --shard I/N --out WORK/shard-I` in the current
# directory. It polls squeue until no task of the array is left, checks that every shard ended
# with exit status 0 (each task writes WORK/shard-I.status last; one a node wrote and this
# machine does not see yet is waited for up to 30 s), and merges with `schedlab merge
# WORK/shard-0 ... --out OUT` here. The binary, the traces, the current directory and the work
# folder must be at the same paths on every node (a shared file system); relative paths in
# SWEEP_ARGS are read from the current directory, as a local sweep reads them.
#
# Options:
#   -o, --out DIR         the merged sweep; a new or empty folder (checked before submitting)
#   -n, --shards N        shards = array tasks (default 4)
#   -p, --partition P     sbatch --partition (default: the cluster's default partition)
#   -t, --time LIMIT      sbatch --time per task, e.g. 30 or 2:00:00 (default: the partition's)
#   -c, --cpus C          sbatch --cpus-per-task, and the sweep's --threads (default 1) unless
#                         SWEEP_ARGS set --threads (the outputs do not depend on it)
#   -J, --job-name NAME   sbatch --job-name (default schedlab-sweep)
#   -m, --max-running M   at most M tasks at once (--array=0-(N-1)%M)
#   -s, --sbatch ARG      one more sbatch flag, repeatable: -s --account=proj -s --qos=low
#   -w, --work DIR        shards, logs and the batch script (default OUT.slurm); emptied first
#                         if an earlier run of this script made it, refused if it holds other files
#   -W, --max-wait S      give up after S seconds: cancel the array, exit 1 (default 0: no limit)
#   -i, --poll S          seconds between squeue polls (default 2)
#   -k, --keep            keep the work folder after a successful merge (default: removed;
#                         always kept on failure)
#   -h, --help
#
# SCHEDLAB: the binary (default: `schedlab` on PATH, else target/release/schedlab).
#
# Exit status: 0 merged into OUT; 1 a shard failed (each failed shard is named with its exit
# status or Slurm state, its log and the log's tail), the merge failed, or --max-wait ran out;
# 2 bad usage or no Slurm. Interrupted (Ctrl-C, SIGTERM), it cancels the array.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "slurm-sweep: $*" >&2; exit 2; }

shards=4 out='' work='' partition='' time_limit='' cpus=1 name=schedlab-sweep max_running='' max_wait=0 poll=2 keep=0
extra=()
while (($#)); do
    case $1 in
        -o | --out) out=${2:?$1 needs a value}; shift 2 ;;
        -n | --shards) shards=${2:?$1 needs a value}; shift 2 ;;
        -p | --partition) partition=${2:?$1 needs a value}; shift 2 ;;
        -t | --time) time_limit=${2:?$1 needs a value}; shift 2 ;;
        -c | --cpus) cpus=${2:?$1 needs a value}; shift 2 ;;
        -J | --job-name) name=${2:?$1 needs a value}; shift 2 ;;
        -m | --max-running) max_running=${2:?$1 needs a value}; shift 2 ;;
        -s | --sbatch) extra+=("${2:?$1 needs a value}"); shift 2 ;;
        -w | --work) work=${2:?$1 needs a value}; shift 2 ;;
        -W | --max-wait) max_wait=${2:?$1 needs a value}; shift 2 ;;
        -i | --poll) poll=${2:?$1 needs a value}; shift 2 ;;
        -k | --keep) keep=1; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option $1 (the sweep's own flags go after --; --help lists these)" ;;
    esac
done
sweep_args=("$@")

[[ -n $out ]] || die "-o OUT is required (--help)"
((${#sweep_args[@]})) || die "no sweep arguments: give them after --, e.g. -- --policy fifo --seeds 0..3"
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive integer, got '$shards'"
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "-c must be a positive integer, got '$cpus'"
[[ -z $max_running || $max_running =~ ^[1-9][0-9]*$ ]] || die "-m must be a positive integer, got '$max_running'"
[[ $max_wait =~ ^[0-9]+$ ]] || die "-W must be whole seconds, got '$max_wait'"
[[ $poll =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-i must be seconds, got '$poll'"
threads=(--threads "$cpus")
for a in "${sweep_args[@]}"; do
    case $a in
        --out | --out=* | -o | --shard | --shard=*) die "$a is this script's to set: give the output folder as -o, the shards as -n" ;;
        --threads | --threads=*) threads=() ;;
    esac
done
for tool in sbatch squeue scancel; do
    command -v "$tool" >/dev/null || die "no $tool on PATH: run this where Slurm's client commands work"
done

if [[ -z ${SCHEDLAB:-} ]]; then
    SCHEDLAB=$(command -v schedlab || echo target/release/schedlab)
fi
[[ -x $SCHEDLAB ]] || die "no schedlab binary at $SCHEDLAB (set SCHEDLAB)"
SCHEDLAB=$(realpath "$SCHEDLAB")

out=$(realpath -m "$out")
work=$(realpath -m "${work:-$out.slurm}")
if [[ -e $out ]] && [[ ! -d $out || -n $(ls -A "$out") ]]; then
    die "--out $out exists and is not an empty folder (schedlab merge writes into a new or empty one)"
fi
if [[ -d $work && -n $(ls -A "$work") ]]; then
    [[ -f $work/.slurm-sweep ]] || die "work folder $work holds files this script did not write (choose another with -w)"
    rm -rf "$work"
fi
mkdir -p "$work/logs"
touch "$work/.slurm-sweep"

# The batch script: one shard per array task. Its last act is its status file (exit status,
# task, node); a task killed by Slurm (time limit, cancel, node failure) leaves none.
# shellcheck disable=SC2016 # what is single-quoted expands in the batch script, not here
{
    echo '#!/usr/bin/env bash'
    echo '# Written by scripts/slurm-sweep.sh: one shard of a schedlab sweep per array task.'
    echo 'set -uo pipefail'
    echo 'i=${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}'
    printf 'work=%q\n' "$work"
    echo 'rm -rf "$work/shard-$i" "$work/shard-$i.status"'
    printf '%q sweep' "$SCHEDLAB"
    printf ' %q' "${sweep_args[@]}" "${threads[@]}"
    printf ' --shard "$i/%d" --out "$work/shard-$i"\n' "$shards"
    echo 'rc=$?'
    echo 'echo "$rc ${SLURM_ARRAY_JOB_ID:-?}_$i ${SLURMD_NODENAME:-$(hostname)}" >"$work/shard-$i.status.tmp"'
    echo 'mv "$work/shard-$i.status.tmp" "$work/shard-$i.status"'
    echo 'exit "$rc"'
} >"$work/shard.sbatch"

sbatch_args=(--parsable --array="0-$((shards - 1))${max_running:+%$max_running}" --job-name="$name"
    --output="$work/logs/shard-%a.log" --chdir="$PWD" --cpus-per-task="$cpus")
[[ -n $partition ]] && sbatch_args+=(--partition="$partition")
[[ -n $time_limit ]] && sbatch_args+=(--time="$time_limit")
sbatch_args+=("${extra[@]}")

started=$SECONDS
submitted=$(sbatch "${sbatch_args[@]}" "$work/shard.sbatch") || {
    echo "slurm-sweep: sbatch refused the array: sbatch ${sbatch_args[*]} $work/shard.sbatch" >&2
    exit 1
}
array=${submitted%%;*}
echo "slurm-sweep: submitted array job $array: $shards shards${partition:+ on partition $partition}; logs in $work/logs"

# Until every task has left the queue, an interrupted or timed-out run cancels the array.
waiting=1
cancel() {
    if ((waiting)); then
        echo "slurm-sweep: cancelling array job $array" >&2
        scancel "$array" || true
        waiting=0
    fi
}
trap cancel EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

user=$(id -un)
last_left=-1 failed_polls=0
while :; do
    # Every job of this user, one line per array task (-r), by array job id: a job id squeue
    # no longer knows is no error this way, and a failed squeue is never taken for "done".
    if queue=$(squeue -h -r -u "$user" -o '%F' 2>&1); then
        failed_polls=0
        left=$(grep -cx "$array" <<<"$queue" || true)
        if ((left != last_left)); then
            echo "slurm-sweep: $((shards - left))/$shards shards done, $left in the queue ($((SECONDS - started)) s)"
            last_left=$left
        fi
        ((left == 0)) && break
    else
        ((++failed_polls % 10 == 1)) && echo "slurm-sweep: squeue failed (retrying): $queue" >&2
    fi
    if ((max_wait > 0 && SECONDS - started >= max_wait)); then
        echo "slurm-sweep: FAILED: shards still queued or running after --max-wait ${max_wait} s" >&2
        exit 1 # the EXIT trap cancels the array
    fi
    sleep "$poll"
done
waiting=0
trap - EXIT INT TERM

# What Slurm says of a task that left no exit status: accounting if there is any, else
# slurmctld's memory of the job (MinJobAge).
slurm_state() {
    local id=$1 line st ec nl
    line=$(sacct -n -X -P -j "$id" -o State,ExitCode,NodeList 2>/dev/null | head -1) || true
    if [[ -n $line ]]; then
        IFS='|' read -r st ec nl <<<"$line"
        echo "Slurm state $st, exit code $ec, node ${nl:-none}"
        return
    fi
    line=$(scontrol -o show job "$id" 2>/dev/null) || true
    if [[ -n $line ]]; then
        grep -oE '(JobState|Reason|ExitCode|NodeList)=[^ ]*' <<<"$line" | paste -sd' '
        return
    fi
    echo "Slurm no longer knows the job"
}

# A shared file system (NFS's attribute cache) may show a file written on a node late.
missing() {
    local i m=()
    for ((i = 0; i < shards; i++)); do [[ -f $work/shard-$i.status ]] || m+=("$i"); done
    echo "${m[*]}"
}
late=$(missing)
if [[ -n $late ]]; then
    echo "slurm-sweep: no status file yet from shard(s) $late; waiting up to 30 s for the file system"
    for ((try = 0; try < 15; try++)); do
        sleep 2
        ls "$work" >/dev/null
        late=$(missing)
        [[ -z $late ]] && break
    done
fi

failed=0 where=()
for ((i = 0; i < shards; i++)); do
    status=$work/shard-$i.status log=$work/logs/shard-$i.log
    if [[ -f $status ]]; then
        read -r rc task node <"$status"
        if [[ $rc == 0 ]]; then
            where+=("$i:$node")
            continue
        fi
        why="schedlab sweep exited with status $rc (task $task on $node)"
    else
        why="no exit status: killed or never run ($(slurm_state "${array}_$i"))"
    fi
    failed=$((failed + 1))
    echo "slurm-sweep: FAILED: shard $i/$shards: $why; log $log" >&2
    if [[ -s $log ]]; then
        tail -n 15 "$log" | sed "s/^/    shard $i| /" >&2
    fi
done
if ((failed)); then
    echo "slurm-sweep: FAILED: $failed of $shards shards failed; nothing merged; shards and logs kept in $work" >&2
    exit 1
fi
echo "slurm-sweep: every shard succeeded (shard:node ${where[*]}) in $((SECONDS - started)) s; merging"

parts=()
for ((i = 0; i < shards; i++)); do parts+=("$work/shard-$i"); done
if ! "$SCHEDLAB" merge "${parts[@]}" --out "$out"; then
    echo "slurm-sweep: FAILED: schedlab merge ${parts[*]} --out $out; shards kept in $work" >&2
    exit 1
fi
if ((keep)); then
    echo "slurm-sweep: merged into $out; shards and logs kept in $work"
else
    rm -rf "$work"
    echo "slurm-sweep: merged into $out"
fi
