#!/usr/bin/env python3
"""The Slurm executor against a real Slurm (docs/slurm-executor.md, "Checked in CI").

Run by scripts/slurm-live-ci.sh inside the live profile of scripts/slurm-dump.sh (4 nodes
n1..n4 with gpu:8, partition `gpu` held by live/slurm/job_submit.lua), with SLURM_CONF set and
$SCHEDLAB the binary. Two sessions, each a coordinator `live serve --executor slurm`:

  fifo: a seeded workload of short jobs (1 to 16 GPUs, two-node gangs, a dependency chain,
        failures, a cancel while held and one while running); mid-run node n3 is set DOWN and
        resumed, and the coordinator is killed with SIGKILL and started again.
  srtf: long jobs fill the nodes, short ones arrive: the policy preempts, the executor
        requeues the long runs held and starts them again later.

Checks, each failing the script with what differed:
  - every Slurm run of every job (sacct --duplicates) is, in order, one start schedlab decided,
    on the same nodes (a start the engine took back before Slurm made it has no run), and the
    run that ended a job is schedlab's last start of it;
  - no job of the partition ran without schedlab's release (a run for each start, no more);
  - no attempt was released twice (the coordinators' logs, both starts of the fifo session);
  - the node set DOWN ended a run, and that job ran again and completed;
  - srtf preempted at least one job, which then had two runs and completed;
  - every job ended as the workload says (completed, failed or cancelled);
  - `live export` replays in `simulate` to the live session's digest.

  shadow: partition `batch`, which Slurm schedules itself (sched/builtin); the coordinator
        with --shadow changes nothing. Jobs that run to (nearly) their time limits; the
        forecast under fifo, taken once they are queued, against the starts Slurm made: every
        pending job forecast, each within 20 s; the comparison counts every job.
"""

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SCHEDLAB = os.path.realpath(os.environ.get("SCHEDLAB", "target/release/schedlab"))
OUT = os.environ.get("SLURM_EXECUTOR_OUT") or tempfile.mkdtemp(prefix="schedlab-slurm-executor.")
os.makedirs(OUT, exist_ok=True)
SEED = int(os.environ.get("SLURM_EXECUTOR_SEED", "7"))
# The account the coordinator runs as: a Slurm Operator, not root (docs/slurm-executor.md).
OPERATOR = os.environ.get("SLURM_EXECUTOR_USER", "schedlab")
AS_OPERATOR = {}
COORDINATOR = SCHEDLAB
FAILURES = []


def say(text):
    print(f"slurm-executor-check: {text}", flush=True)


def check(ok, text):
    if not ok:
        FAILURES.append(text)
        say(f"FAILED: {text}")


def sh(*args, check_rc=True):
    out = subprocess.run(args, capture_output=True, text=True)
    if check_rc and out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {out.returncode} {out.stderr.strip()}")
    return out.stdout


def sbatch(gpus, seconds, limit_min=2, code=0, depends=None):
    """One job of `gpus` GPUs (two nodes with half each above 8) that sleeps, then exits `code`."""
    shape = ["-N", "1", f"--gres=gpu:{gpus}"] if gpus <= 8 else ["-N", "2", f"--gres=gpu:{gpus // 2}"]
    extra = [f"--dependency=afterok:{depends}"] if depends else []
    cmd = f"sleep {seconds}; exit {code}"
    out = sh("sbatch", "--parsable", "-p", "gpu", "-t", str(limit_min), "-o", "/dev/null", *shape, *extra,
             "--wrap", cmd)
    return int(out.strip().split(";")[0])


class Coordinator:
    def __init__(self, name, policy, partition="gpu", shadow=False):
        self.state = os.path.join(OUT, name)
        self.policy = policy
        self.extra = ["--partition", partition] + (["--shadow"] if shadow else [])
        self.logs = []
        self.proc = None

    def start(self):
        log = os.path.join(OUT, f"{os.path.basename(self.state)}.{len(self.logs)}.log")
        self.logs.append(log)
        self.proc = subprocess.Popen(
            [COORDINATOR, "live", "serve", "--executor", "slurm", *self.extra, "--state", self.state,
             "--listen", "127.0.0.1:0", "--policy", self.policy, "--slurm-poll-s", "0.5",
             "--start-deadline-s", "20"],
            stdout=open(log, "w"), stderr=subprocess.STDOUT, **AS_OPERATOR)
        for _ in range(100):
            if os.path.exists(os.path.join(self.state, "addr")) and "listening" in open(log).read():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the coordinator exited: {open(log).read()}")
            time.sleep(0.1)
        raise RuntimeError("the coordinator did not start")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        os.remove(os.path.join(self.state, "addr"))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)

    def status(self, *flags):
        addr = open(os.path.join(self.state, "addr")).read().strip()
        return sh(SCHEDLAB, "live", "status", "--coordinator", f"http://{addr}",
                  "--token-file", os.path.join(self.state, "token"), *flags)

    def node_names(self):
        db = sqlite3.connect(os.path.join(self.state, "live.db"))
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'slurm_nodes'").fetchone()
        return json.loads(text)


def wait_until_done(jobs, limit_s, partition="gpu"):
    """Until every job of `jobs` has ended in Slurm."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        out = sh("squeue", "-h", "-p", partition, "-t", "PD,R,CG,CF,RQ,S", "-o", "%i")
        left = {int(x) for x in out.split()} & set(jobs)
        if not left:
            return True
        time.sleep(1)
    say(f"jobs still not ended after {limit_s} s: {sorted(left)}")
    return False


def sacct_runs(jobs):
    """Each job's Slurm runs in order: (state, nodes, start) per run that started."""
    out = sh("sacct", "-X", "-n", "-P", "--duplicates", "-j", ",".join(map(str, jobs)),
             "-o", "JobIDRaw,State,NodeList,Start")
    runs = {j: [] for j in jobs}
    for line in out.splitlines():
        jid, state, nodes, start = line.split("|")
        if start in ("Unknown", "None", "") or nodes in ("None assigned", ""):
            continue
        runs[int(jid)].append((state.split()[0], expand(nodes), start))
    for j in runs:
        runs[j].sort(key=lambda r: r[2])
    return runs


def expand(hostlist):
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist):
        m = re.match(r"(.*)\[(.*)\]$", part)
        if not m:
            names.append(part)
            continue
        for item in m.group(2).split(","):
            lo, _, hi = item.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{m.group(1)}{i}")
    return names


def engine_starts(coordinator):
    """Each engine job's starts as the engine decided them: [(time_s, nodes)], and the digest."""
    names = coordinator.node_names()
    gpus_per_node = 8
    text = coordinator.status("--decisions")
    starts, jobs_of = {}, {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+) s\s+(\S+)\s+job (\d+) task (\d+) gpus \[([\d,]*)\]\s*(.*)", line)
        if not m:
            continue
        t, kind, job, _, gpus, _ = m.groups()
        gpus = [int(g) for g in gpus.split(",") if g]
        nodes = sorted({names[g // gpus_per_node] for g in gpus}, key=lambda n: int(n[1:]))
        if kind == "start":
            starts.setdefault(int(job), []).append((float(t), nodes))
    digest = re.search(r"digest (\S+)", text).group(1)
    return starts, digest


def slurm_ids(coordinator):
    """Engine job index -> Slurm job id (the submissions are named slurm-ID, in order)."""
    db = sqlite3.connect(os.path.join(coordinator.state, "live.db"))
    ids = []
    for (inputs,) in db.execute("SELECT inputs FROM batches ORDER BY time_ms"):
        for i in json.loads(inputs):
            if i.get("kind") == "submit":
                ids.append(int(i["job"]["name"].split("-")[1]))
    return ids


def compare_runs(coordinator, jobs):
    starts, digest = engine_starts(coordinator)
    ids = slurm_ids(coordinator)
    by_slurm = {ids[j]: s for j, s in starts.items()}
    runs = sacct_runs(jobs)
    matched = []
    for jid in jobs:
        decided = by_slurm.get(jid, [])
        ran = runs[jid]
        # Every run is one of schedlab's starts, in order; a start the engine took back before
        # Slurm made it (its node went out, the start deadline passed) has no run. The run
        # that ended the job is the last start.
        pairs = match(ran, decided)
        check(pairs is not None,
              f"Slurm job {jid}: schedlab started it on {[d[1] for d in decided]}, Slurm ran it on {[r[1] for r in ran]}")
        matched += pairs or []
        ended = ran and ran[-1][0] in ("COMPLETED", "FAILED")
        check(not ended or (decided and decided[-1][1] == ran[-1][1]),
              f"Slurm job {jid}: its last run {ran[-1:]} is not schedlab's last start {decided[-1:]}")
    check_order(matched)
    return runs, digest


def match(ran, decided):
    """Each run paired, in order, with the start of schedlab's it carries out (same nodes):
    [(engine time s, Slurm start)], or None when a run has no such start."""
    pairs, i = [], 0
    for state, nodes, start in ran:
        while i < len(decided) and decided[i][1] != nodes:
            i += 1
        if i == len(decided):
            return None
        pairs.append((decided[i][0], start))
        i += 1
    return pairs


def check_order(matched):
    """Slurm started the runs in the order schedlab decided them: of two starts decided more
    than 5 s apart (session time), the earlier did not start later in Slurm (1 s resolution).
    Nearer ones may swap: a release takes Slurm up to a few seconds to act on."""
    to_s = lambda when: time.mktime(time.strptime(when, "%Y-%m-%dT%H:%M:%S"))
    runs = sorted((t, to_s(start)) for t, start in matched)
    swapped = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:] if b[0] - a[0] > 5 and a[1] > b[1] + 1]
    check(not swapped, f"runs Slurm started out of schedlab's order (decided s, started): {swapped[:5]}")


def check_releases(coordinator):
    released = {}
    for log in coordinator.logs:
        for m in re.finditer(r"Slurm job (\d+) released on \S+ \(attempt (\d+)\)", open(log).read()):
            key = (int(m.group(1)), int(m.group(2)))
            released[key] = released.get(key, 0) + 1
    twice = {k: n for k, n in released.items() if n > 1}
    check(not twice, f"attempts released more than once: {twice}")
    return len(released)


def check_replay(coordinator, live_digest):
    export = os.path.join(OUT, os.path.basename(coordinator.state) + "-export")
    sh(SCHEDLAB, "live", "export", "--state", coordinator.state, "--out", export)
    replay = json.load(open(os.path.join(export, "live.json")))["replay"]
    env = dict(os.environ, PATH=os.path.dirname(SCHEDLAB) + ":" + os.environ["PATH"])
    done = subprocess.run(["bash", "-c", replay], capture_output=True, text=True, env=env)
    check(done.returncode == 0, f"the replay `{replay}` failed: {done.stderr.strip()}")
    summary = json.load(open(os.path.join(json.load(open(os.path.join(export, "live.json")))["replay_out"],
                                          "summary.json")))
    check(summary["digest"] == live_digest,
          f"{coordinator.policy}: the export replays to digest {summary['digest']}, the live session's is {live_digest}")


def check_node_out(coordinator, name):
    """The node's GPUs were out in the engine (the export's gpu_fail rows) while Slurm had it
    drained: every slot out for more than a second."""
    node = coordinator.node_names().index(name)
    events = os.path.join(OUT, os.path.basename(coordinator.state) + "-export", "events.csv")
    slots = set()
    for line in open(events).read().splitlines()[1:]:
        _, kind, n, gpu, repair = line.split(",")
        if kind == "gpu_fail" and n == str(node) and repair and float(repair) > 1:
            slots.add(int(gpu))
    check(slots == set(range(8)), f"{name}'s 8 GPUs out while drained: out were {sorted(slots)}")


def fifo_session():
    say("session 1: fifo, a node set DOWN, the coordinator killed with SIGKILL")
    rng = random.Random(SEED)
    c = Coordinator("fifo", "fifo")
    c.start()
    jobs, expect = [], {}
    start = time.time()
    node_down = killed = resumed = False
    chain = None
    for i in range(48):
        gpus = rng.choice([1, 1, 2, 2, 4, 8, 8, 16, 12])
        code = 1 if i % 13 == 5 else 0
        seconds = rng.randint(3, 14)
        depends = chain if i % 16 == 9 and chain else None
        jid = sbatch(gpus, seconds, code=code, depends=depends)
        jobs.append(jid)
        expect[jid] = "FAILED" if code else "COMPLETED"
        if i % 16 == 8:
            chain = jid
        if i == 10:
            cancel_held = sbatch(16, 5)
            jobs.append(cancel_held)
            sh("scancel", str(cancel_held))
            expect[cancel_held] = "CANCELLED"
        if i == 20 and not node_down:
            running_n3 = sh("squeue", "-h", "-p", "gpu", "-t", "R", "-w", "n3", "-o", "%i").split()
            sh("scontrol", "update", "NodeName=n3", "State=DOWN", "Reason=schedlab-check")
            # Kept out (its slurmd would register it back at once): drained until resumed.
            sh("scontrol", "update", "NodeName=n3", "State=DRAIN", "Reason=schedlab-check")
            node_down = [int(j) for j in running_n3]
            say(f"n3 set DOWN under jobs {node_down}")
        if i == 28 and not killed:
            c.kill()
            say("coordinator killed (SIGKILL); started again")
            c.start()
            killed = True
        if i == 32 and not resumed:
            sh("scontrol", "update", "NodeName=n3", "State=RESUME", check_rc=False)  # back already?
            resumed = True
        if i == 36:
            running = sh("squeue", "-h", "-p", "gpu", "-t", "R", "-o", "%i").split()
            if running:
                victim = int(running[-1])
                sh("scancel", str(victim))
                expect[victim] = "CANCELLED"
        time.sleep(rng.uniform(0.3, 1.5))
    check(wait_until_done(jobs, 300), "fifo: every job ended within 5 minutes")
    time.sleep(3)
    runs, digest = compare_runs(c, jobs)
    for jid in jobs:
        last = runs[jid][-1][0] if runs[jid] else "CANCELLED"
        check(last == expect[jid] or (expect[jid] == "CANCELLED" and last == "CANCELLED"),
              f"Slurm job {jid} ended {last}, expected {expect[jid]}")
    lost = [j for j in node_down if len(runs[j]) >= 2 and runs[j][-1][0] == expect[j]]
    check(bool(node_down), "n3 had running jobs when it was set DOWN")
    check(lost == node_down, f"each job running on n3 when it went down ran again to its end: {node_down} vs {lost}")
    away = [j for j in node_down if "n3" in runs[j][1][1]]
    check(not away, f"jobs run again on n3 while it was drained: {away}")
    releases = check_releases(c)
    check_replay(c, digest)
    check_node_out(c, "n3")
    c.stop()
    say(f"session 1: {len(jobs)} jobs, {releases} releases, {sum(len(r) for r in runs.values())} Slurm runs, "
        f"re-run after n3 went down: {lost}, digest {digest}, {time.time() - start:.0f} s")


def srtf_session():
    say("session 2: srtf (preemptive)")
    c = Coordinator("srtf", "srtf[duration=estimate]")
    c.start()
    start = time.time()
    longs = [sbatch(8, 25, limit_min=10) for _ in range(4)]
    time.sleep(6)
    shorts = [sbatch(8, 4, limit_min=1) for _ in range(2)]
    jobs = longs + shorts
    check(wait_until_done(jobs, 240), "srtf: every job ended within 4 minutes")
    time.sleep(3)
    runs, digest = compare_runs(c, jobs)
    preempted = [j for j in longs if len(runs[j]) >= 2]
    check(len(preempted) >= 1, f"srtf preempted a long job (runs: {runs})")
    for jid in jobs:
        check(runs[jid] and runs[jid][-1][0] == "COMPLETED", f"Slurm job {jid} completed: {runs[jid]}")
    releases = check_releases(c)
    check_replay(c, digest)
    c.stop()
    say(f"session 2: {len(jobs)} jobs, {releases} releases, preempted and run again: {preempted}, "
        f"digest {digest}, {time.time() - start:.0f} s")


def fresh_forecast(coordinator, after):
    """The coordinator's forecast once one made at or after `after` (Unix s) is served: they
    are computed off its thread, at most every 5 s."""
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            forecast = json.loads(coordinator.status("--forecast", "--json"))["forecast"]
            if forecast["now_unix"] >= after:
                return forecast
        except RuntimeError:
            pass  # 503 until the first forecast
        time.sleep(1)
    raise RuntimeError("no fresh forecast within 60 s")


def shadow_session():
    """Shadow mode on partition `batch`, which Slurm (sched/builtin) schedules itself: the
    forecast under fifo, taken once the queue is in, against the starts Slurm then made."""
    say("session 3: shadow mode on partition batch (Slurm schedules), forecast under fifo")
    c = Coordinator("shadow", "fifo", partition="batch", shadow=True)
    c.start()
    start = time.time()
    jobs = []
    for gpus in [16, 8, 4, 8, 16, 4, 8, 4]:
        shape = ["-N", "1", f"--gres=gpu:{gpus}"] if gpus <= 8 else ["-N", "2", f"--gres=gpu:{gpus // 2}"]
        out = sh("sbatch", "--parsable", "-p", "batch", "-t", "1", "-o", "/dev/null", *shape, "--wrap", "sleep 58")
        jobs.append(int(out.strip().split(";")[0]))
    forecast = fresh_forecast(c, after=time.time() + 1)
    predicted = {j["job"]: j["start_unix"] for j in forecast["jobs"]}
    check(wait_until_done(jobs, 420, partition="batch"), "shadow: every job ended within 7 minutes")
    time.sleep(2)
    comparison = json.loads(c.status("--forecast", "--json"))["comparison"]
    out = sh("sacct", "-X", "-n", "-P", "-j", ",".join(map(str, jobs)), "-o", "JobIDRaw,Start")
    actual = {}
    for line in out.splitlines():
        jid, when = line.split("|")
        actual[int(jid)] = int(time.mktime(time.strptime(when, "%Y-%m-%dT%H:%M:%S")) - time.timezone)
    errors = sorted(abs(predicted[j] - actual[j]) for j in predicted if predicted[j] is not None)
    check(len(errors) == len(predicted) and len(predicted) >= 4,
          f"a forecast start for every pending job: {predicted}")
    check(errors and errors[-1] <= 20, f"the forecast within 20 s of Slurm's starts: errors {errors}")
    check(comparison and comparison["jobs"] == len(jobs), f"the comparison counts the {len(jobs)} jobs: {comparison}")
    c.stop()
    say(f"session 3: {len(predicted)} pending jobs forecast; |forecast - Slurm's start| s: {errors} "
        f"(within 5 s: {sum(e <= 5 for e in errors)}); mean wait Slurm {comparison['slurm_mean_wait_s']:.1f} s, "
        f"fifo {comparison['policy_mean_wait_s']:.1f} s; {time.time() - start:.0f} s")


def operator_account():
    """As docs/slurm-executor.md sets it up: a system user with Slurm's Operator level, its uid
    among job_submit.lua's SCHEDLAB_UIDS. The coordinator runs as it, from a copy of the
    binary it can read, in a directory it owns."""
    global AS_OPERATOR, COORDINATOR
    if subprocess.run(["id", "-u", OPERATOR], capture_output=True).returncode != 0:
        sh("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OPERATOR)
    uid = int(sh("id", "-u", OPERATOR))
    sh("sacctmgr", "-i", "add", "user", OPERATOR, "Account=root", "AdminLevel=Operator", check_rc=False)
    lua = os.path.join(os.environ["SLURM_STATE"], "etc", "job_submit.lua")
    text = open(lua).read().replace("local SCHEDLAB_UIDS = { [0] = true }",
                                    f"local SCHEDLAB_UIDS = {{ [0] = true, [{uid}] = true }}")
    open(lua, "w").write(text)
    sh("scontrol", "reconfigure")
    time.sleep(2)
    for d in (os.path.dirname(OUT), OUT):
        os.chmod(d, 0o755)
    shutil.chown(OUT, OPERATOR)
    COORDINATOR = os.path.join(OUT, "schedlab")
    shutil.copy(SCHEDLAB, COORDINATOR)
    os.chmod(COORDINATOR, 0o755)
    # The coordinator is the process itself (SIGKILL reaches it), with the operator's ids.
    AS_OPERATOR = {"user": uid, "group": int(sh("id", "-g", OPERATOR)), "extra_groups": []}
    say(f"the coordinator runs as {OPERATOR} (uid {uid}), a Slurm Operator")


def main():
    say(f"schedlab {SCHEDLAB}, files in {OUT}")
    if os.geteuid() == 0:
        operator_account()
    fifo_session()
    srtf_session()
    shadow_session()
    if FAILURES:
        say(f"{len(FAILURES)} checks failed; files in {OUT}")
        sys.exit(1)
    say("every check passed")


if __name__ == "__main__":
    main()
