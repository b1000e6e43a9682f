//! Runs of a trace the runner keeps (a sweep's): the trace is read once and every run reads
//! its jobs from that one copy, not a copy of its own; such a run is the run in memory, byte
//! for byte, and refuses what the run in memory refuses, with the same error.

use run::many::Executor;
use run::{Keep, RunSpec, Runner};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kept").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A canonical trace of 400 jobs in three queues, every fifth a DAG whose last task waits
/// for a checkpoint of the one before, with estimates; and its queues.csv.
fn trace(dir: &Path) -> (PathBuf, PathBuf) {
    let mut jobs = String::from("job_id,task_id,submit_s,duration_s,gpus,estimate_s,checkpoint_s,depends_on,queue\n");
    for i in 0..400u64 {
        let (submit, queue) = (i * 37 % 10_000 / 7 + i * 40, ["a", "b", "c"][(i % 3) as usize]);
        if i % 5 == 0 {
            jobs += &format!("p{i},prep,{submit},{},1,100,,,{queue}\n", 60 + i % 50);
            jobs += &format!("p{i},train,{submit},{},{},4000,600,prep,{queue}\n", 3_000 + i * 7 % 2_000, 2 + i % 7);
            jobs += &format!("p{i},eval,{submit},300,1,300,,train:checkpoint=2,{queue}\n");
        } else {
            jobs += &format!("j{i},,{submit},{},{},{},,,{queue}\n", 100 + i * 13 % 3_000, 1 + i % 4, 200 + i % 900);
        }
    }
    let (trace, queues) = (dir.join("jobs.csv"), dir.join("queues.csv"));
    std::fs::write(&trace, jobs).expect("written");
    let quotas = "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\n\
                  a,,16,,0,2,true\nb,,8,,0,1,false\nc,,,4,1,1,false\n";
    std::fs::write(&queues, quotas).expect("written");
    (trace, queues)
}

fn spec(trace: &Path, queues: &Path, policy: &str, seed: u64) -> RunSpec {
    RunSpec {
        trace: Some(trace.to_path_buf()),
        cluster: Some("6x8:V100".into()),
        queues: Some(queues.to_path_buf()),
        policy: policy.parse().expect("a policy"),
        failures: Some("weibull:node_mtbf_h=100".into()),
        seed,
        ..RunSpec::default()
    }
}

/// 16 runs: 4 policies x 4 seeds, with options that reshape jobs (per-queue defaults, whole
/// nodes), run by run as each is numbered.
fn sixteen(trace: &Path, queues: &Path, out: Option<&Path>) -> Vec<RunSpec> {
    let policies = ["fifo", "fair-share", "critical-path", "srtf[duration=estimate]"];
    let mut specs = Vec::new();
    for (p, policy) in policies.into_iter().enumerate() {
        for seed in 0..4 {
            let mut spec = spec(trace, queues, policy, seed);
            spec.whole_nodes = (p % 2 == 1).then_some(8);
            spec.queue_checkpoint_s = vec!["a=300".parse().expect("a per-queue setting")];
            spec.out = out.map(|dir| dir.join(format!("{p}-{seed}")));
            specs.push(spec);
        }
    }
    specs
}

#[test]
fn sixteen_runs_read_the_trace_once_and_each_reads_the_one_copy_kept() {
    let dir = scratch("once");
    let (trace, queues) = trace(&dir);
    let specs = sixteen(&trace, &queues, None);
    // At the end of each run (its last progress report, the run still under way), how many
    // holders the kept trace has, besides the runner and this look.
    let holders = Arc::new(Mutex::new(Vec::new()));
    let runner = Arc::new_cyclic(|me: &std::sync::Weak<Runner>| {
        let (me, holders, path) = (me.clone(), Arc::clone(&holders), trace.clone());
        Runner::default().keeping_traces().with_progress(move |p| {
            let kept = me.upgrade().and_then(|r| r.kept_trace(&path, traces::Format::Canonical));
            if p.arrived == p.jobs
                && let Some(kept) = kept
            {
                holders.lock().unwrap().push(Arc::strong_count(&kept) - 2);
            }
        })
    });
    // One thread: one run at a time, so each look sees that run alone.
    let done = Executor::new(Some(1)).unwrap().execute_specs(&runner, &specs).expect("every run");
    assert_eq!(done.len(), 16);
    assert_eq!(runner.traces_read(), 1, "the trace is read once for 16 runs");
    let holders = holders.lock().unwrap().clone();
    // A run that took a copy of the trace's jobs would leave the kept one held by none.
    assert_eq!(holders, vec![1; 16], "each run reads its jobs from the kept copy");
    let kept = runner.kept_trace(&trace, traces::Format::Canonical).expect("kept");
    assert_eq!(Arc::strong_count(&kept), 2, "no run holds it once all have ended");
    assert_eq!(kept.workload.len(), 400);
}

/// Every file of each run folder under `dir`, by path.
fn folders(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for run in std::fs::read_dir(dir).expect("listed") {
        for file in std::fs::read_dir(run.expect("an entry").path()).expect("listed") {
            let path = file.expect("an entry").path();
            let name = path.strip_prefix(dir).expect("under dir").display().to_string();
            files.push((name, std::fs::read(&path).expect("read")));
        }
    }
    files.sort();
    files
}

#[test]
fn runs_of_a_kept_trace_write_what_the_runs_in_memory_write() {
    let dir = scratch("same");
    let (trace, queues) = trace(&dir);
    let (kept_out, memory_out) = (dir.join("kept"), dir.join("memory"));
    let kept = sixteen(&trace, &queues, Some(&kept_out));
    let executor = Executor::new(Some(2)).unwrap().wall_time_apart();
    let done = executor.execute_specs(&Runner::default().keeping_traces(), &kept).expect("every run");
    for (spec, done) in sixteen(&trace, &queues, Some(&memory_out)).iter().zip(&done) {
        let mut outcome = Runner::default().run(spec, Keep { decisions: false, series: true }).expect("runs");
        outcome.summary.wall_s = None;
        assert_eq!(outcome.summary.digest, done.summary.digest, "{}", spec.policy);
        assert!(outcome.result.stats.events > 1_000, "a real run");
        outcome.write(spec.out.as_deref().expect("an out"), false).expect("written");
    }
    let (kept_files, memory_files) = (folders(&kept_out), folders(&memory_out));
    assert!(kept_files.iter().any(|(name, _)| name.ends_with("tasks.csv")), "DAG jobs: tasks.csv");
    assert!(kept_files.iter().any(|(name, _)| name.ends_with("gpu_health.csv")), "failures: gpu_health.csv");
    assert_eq!(kept_files.len(), memory_files.len());
    for ((name, kept), (other, memory)) in kept_files.iter().zip(&memory_files) {
        assert_eq!(name, other);
        assert!(kept == memory, "{name} differs between the run of the kept trace and the run in memory");
    }
}

/// The error of `spec` run by a runner that keeps traces, and by one that does not.
fn errors(spec: &RunSpec) -> (String, String) {
    let kept = Runner::default().keeping_traces().run(spec, Keep::SUMMARY).expect_err("refused").to_string();
    let memory = Runner::default().run(spec, Keep::SUMMARY).expect_err("refused").to_string();
    (kept, memory)
}

#[test]
fn a_run_of_a_kept_trace_is_refused_as_the_run_in_memory_is_in_the_same_order() {
    let dir = scratch("refused");
    let (trace, queues) = trace(&dir);
    // Queue `c` undefined, under a policy that reads estimates of jobs that have none, with
    // continuous checkpoints (the run's default) under a checkpoint dependency: the queue is
    // refused first, then the estimates, then the dependency.
    let no_c = dir.join("no-c.csv");
    std::fs::write(&no_c, "queue,max_gpus\na,16\nb,8\n").expect("written");
    let bare = dir.join("bare.csv");
    let text = std::fs::read_to_string(&trace).expect("read").replace(",4000,600,", ",,0,");
    std::fs::write(&bare, text).expect("written");
    let mut cases = Vec::new();
    let mut all = spec(&bare, &no_c, "sjf[duration=estimate]", 0);
    cases.push(("queue, estimate, checkpoint", all.clone()));
    all.queues = Some(queues.clone());
    cases.push(("estimate, checkpoint", all.clone()));
    all.policy = "fifo".parse().expect("a policy");
    cases.push(("checkpoint", all.clone()));
    let mut unused = spec(&trace, &queues, "fifo", 0);
    unused.queue_checkpoint_s = vec!["nosuch=60".parse().expect("a per-queue setting")];
    cases.push(("a per-queue setting of no queue", unused));
    let mut spares = spec(&trace, &queues, "fifo", 0);
    spares.spare_nodes = 6;
    cases.push(("spares", spares));
    let mut seen = Vec::new();
    for (case, spec) in cases {
        let (kept, memory) = errors(&spec);
        assert_eq!(kept, memory, "{case}");
        seen.push(kept);
    }
    seen.dedup();
    assert_eq!(seen.len(), 5, "five different refusals: {seen:?}");
}
