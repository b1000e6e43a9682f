//! A long run tells its runner how far it has got: jobs arrived of the workload's, in order,
//! every `sim::PROGRESS_EVERY` timestamps and once at the end, without changing the run.

use std::sync::{Arc, Mutex};

#[test]
fn a_long_run_reports_its_progress_in_order_and_the_run_is_the_same() {
    let spec = run::RunSpec { jobs: 40_000, ..run::RunSpec::default() };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let runner = run::Runner::default().with_progress(move |p| sink.lock().unwrap().push((p.arrived, p.jobs)));
    let reported = runner.run(&spec, run::Keep::SUMMARY).unwrap();
    let seen = seen.lock().unwrap().clone();
    // 40,000 jobs are about 80,000 timestamps: one report on the way, one at the end.
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen.iter().all(|&(_, jobs)| jobs == 40_000), "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "arrivals only grow: {seen:?}");
    assert!(seen[0].0 > 0 && seen[0].0 < 40_000, "a report before the end: {seen:?}");
    assert_eq!(seen.last(), Some(&(40_000, 40_000)));
    let quiet = run::Runner::default().run(&spec, run::Keep::SUMMARY).unwrap();
    assert_eq!(reported.summary.digest, quiet.summary.digest);
}
