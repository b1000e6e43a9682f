//! The memory bound's mechanism: a run holds the jobs from the oldest one still in the system
//! to the newest arrived, not the whole workload. Each job is let go, oldest first, once it has
//! ended and the policy has been told so; its record leaves then, in job order. A job still in
//! the system while `set_aside_after` later ones have ended is set aside (held alone), so a
//! run holds at most the jobs in the system plus that many.

mod common;

use common::{ALL_SPECS, cluster, job};
use sim::{Collect, ControllerConfig, Engine, JobRecord, RunResult, Scenario, SimTime, Workload};

/// 2,500 jobs on 32 GPUs at about 80 % load: mostly short, one in 50 a hundred times longer
/// (the long ones are what keep old jobs in the system while thousands pass them).
fn workload() -> Workload {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut submit_s = 0;
    let jobs = (0..2_500)
        .map(|i| {
            submit_s += next(134);
            let long = next(50) == 0;
            let work_s = if long { 20_000 + next(10_000) } else { 30 + next(300) };
            let mut j = job(&format!("j{i}"), submit_s, 1 + next(4) as u32, work_s);
            j.tasks[0].estimate = j.tasks[0].work.into();
            j
        })
        .collect();
    Workload::new(jobs).expect("valid")
}

/// The most jobs a run must hold under this rule, from the records alone: at each arrival, the
/// jobs from the oldest one that had not ended before it to the newest submitted by then.
fn span_bound(records: &[JobRecord]) -> usize {
    let mut by_end: Vec<(SimTime, usize)> =
        records.iter().enumerate().map(|(i, r)| (r.end.unwrap_or(SimTime(u64::MAX)), i)).collect();
    by_end.sort();
    let mut ended = vec![false; records.len()];
    let (mut oldest, mut next_end, mut bound) = (0, 0, 0);
    for (newest, r) in records.iter().enumerate() {
        while next_end < by_end.len() && by_end[next_end].0 < r.submit {
            ended[by_end[next_end].1] = true;
            next_end += 1;
        }
        while oldest < newest && ended[oldest] {
            oldest += 1;
        }
        bound = bound.max(newest - oldest + 1);
    }
    bound
}

/// The most jobs in the system at once, from the records alone: at each arrival, the jobs
/// submitted by then that had not ended before it (one ending at that instant is still held).
fn in_system_bound(records: &[JobRecord]) -> usize {
    let mut ends: Vec<SimTime> = records.iter().map(|r| r.end.unwrap_or(SimTime(u64::MAX))).collect();
    ends.sort();
    let mut submits: Vec<SimTime> = records.iter().map(|r| r.submit).collect();
    submits.sort();
    let arrived_by = |t: SimTime| submits.partition_point(|&s| s <= t);
    let ended_before = |t: SimTime| ends.partition_point(|&e| e < t);
    submits.iter().map(|&t| arrived_by(t) - ended_before(t)).max().unwrap_or(0)
}

/// `spec` on [`workload`], records handed over as the run goes.
fn run(spec: &str, set_aside_after: usize) -> (RunResult, Collect) {
    let mut policy = policies::build(spec).expect(spec);
    let scenario = Scenario::new(cluster(&[(4, 8, "V100")]), workload());
    let config = ControllerConfig { check_invariants: false, set_aside_after, ..ControllerConfig::default() };
    let engine = Engine::new(scenario, policy.as_ref(), config).expect("runs");
    let mut records = Collect::default();
    let end = engine.run_into(policy.as_mut(), &mut records, &mut |_| {}).expect("runs");
    (end, records)
}

#[test]
fn a_run_holds_the_jobs_from_the_oldest_in_the_system_to_the_newest_arrived() {
    for spec in ALL_SPECS {
        let (end, records) = run(spec, sim::SET_ASIDE_AFTER);
        assert_eq!(end.stats.jobs_set_aside, 0, "{spec}");
        let ids: Vec<u32> = records.jobs.iter().map(|r| r.job.0).collect();
        assert!(ids.iter().enumerate().all(|(i, &id)| id as usize == i), "{spec}: records leave in job order");
        let held = end.stats.peak_jobs_held as usize;
        // A job that ends at an instant is let go after that instant's decision (the policy
        // has seen it end), and the jobs arriving at the same instant join first: a few more
        // than the span at an arrival.
        let bound = span_bound(&records.jobs) + 8;
        assert!(held <= bound, "{spec}: held {held} jobs at once, more than the span bound {bound}");
        assert!(held < records.jobs.len() / 3, "{spec}: held {held} of {} jobs", records.jobs.len());
    }
}

#[test]
fn a_job_still_in_the_system_is_set_aside_and_the_ended_jobs_after_it_leave() {
    const AFTER: usize = 16;
    for spec in ALL_SPECS {
        let (in_order, mut want) = run(spec, sim::SET_ASIDE_AFTER);
        let (end, mut got) = run(spec, AFTER);
        let held = end.stats.peak_jobs_held as usize;
        // As above, a few more for the jobs ending and arriving at the same instant.
        let bound = in_system_bound(&got.jobs) + AFTER + 8;
        assert!(held <= bound, "{spec}: held {held} jobs at once, more than those in the system and {AFTER}: {bound}");
        assert!(
            held < in_order.stats.peak_jobs_held as usize / 2,
            "{spec}: held {held}, {} in job order",
            in_order.stats.peak_jobs_held
        );
        // Each record out of job order is a job set aside's.
        let early = got.jobs.windows(2).filter(|w| w[0].job > w[1].job).count() as u64;
        assert!(
            end.stats.jobs_set_aside > 0 && early <= end.stats.jobs_set_aside,
            "{spec}: {early} early, {} set aside",
            end.stats.jobs_set_aside
        );
        // The same run otherwise: the same decisions, the same records once in job order.
        assert_eq!(end.stats.digest, in_order.stats.digest, "{spec}");
        assert_eq!(ControllerConfig::default().set_aside_after, sim::SET_ASIDE_AFTER);
        got.jobs.sort_by_key(|r| r.job);
        got.tasks.sort_by_key(|t| t.task);
        want.tasks.sort_by_key(|t| t.task);
        assert!(got.jobs == want.jobs && got.tasks == want.tasks, "{spec}: the records differ");
    }
}
