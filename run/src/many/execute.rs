//! Many runs in parallel: the one loop over runs of `schedlab sweep`, `schedlab regress` and
//! Python's `sweep`. Parallel across runs, never inside one; each trace read once (the
//! runner keeps what it read); results in run order whatever the threads.

use crate::{Folder, Keep, RunSpec, Runner};
use rayon::prelude::*;
use reports::Summary;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One finished run: its summary (without its wall time) and its wall time.
#[derive(Debug)]
pub struct Done {
    /// The run's summary, `wall_s` taken out (it is `wall_s` below).
    pub summary: Summary,
    /// Wall-clock seconds the simulation took.
    pub wall_s: f64,
}

/// The run that failed: the lowest-numbered of those that failed, so the error a sweep
/// reports does not depend on the threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// Its index among the runs given.
    pub index: usize,
    /// What went wrong, unprefixed: the caller names the run in its own terms.
    pub error: String,
}

type Progress = Box<dyn Fn() + Send + Sync>;

/// Runs many RunSpecs on a pool of threads of its own.
pub struct Executor {
    pool: rayon::ThreadPool,
    progress: Progress,
    wall_in_files: bool,
}

impl Executor {
    /// An executor on `threads` threads (rayon's default, one per core, without).
    pub fn new(threads: Option<usize>) -> Result<Executor, String> {
        let n = threads.unwrap_or(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| format!("cannot start {n} threads: {e}"))?;
        Ok(Executor { pool, progress: Box::new(|| {}), wall_in_files: true })
    }

    /// The threads its runs share.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Calls `tick` as each run ends (a progress bar).
    pub fn with_progress(mut self, tick: impl Fn() + Send + Sync + 'static) -> Executor {
        self.progress = Box::new(tick);
        self
    }

    /// Leaves the wall time out of the summary.json each run writes, so that two identical
    /// sweeps write the same bytes (a sweep keeps it in wall.csv, from [`Done::wall_s`]).
    /// Without, a run's folder is what `simulate --out` writes, wall time included.
    pub fn wall_time_apart(mut self) -> Executor {
        self.wall_in_files = false;
        self
    }

    /// Runs every spec of `specs` (see [`Executor::execute`]).
    pub fn execute_specs(&self, runner: &Runner, specs: &[RunSpec]) -> Result<Vec<Done>, Failed> {
        self.execute(runner, specs.len(), |i| Ok(specs[i].clone()))
    }

    /// Runs `count` runs, run `i` as `spec(i)` says (made as it starts, so a million-run sweep
    /// holds no million specs), and returns them in order. Each keeps its decision log when
    /// its spec asks for it and its time series when it writes files, which go into its
    /// spec's `out`. After a failure, runs numbered above it are not started; the
    /// lowest-numbered failure is returned.
    pub fn execute(
        &self,
        runner: &Runner,
        count: usize,
        spec: impl Fn(usize) -> Result<RunSpec, String> + Sync,
    ) -> Result<Vec<Done>, Failed> {
        // The lowest index that failed so far (none: usize::MAX). Every run below the final
        // one is started, so the failure returned is the lowest there is.
        let failed = AtomicUsize::new(usize::MAX);
        let results: Vec<Option<Result<Done, String>>> = self.pool.install(|| {
            (0..count)
                .into_par_iter()
                .map(|i| {
                    if i > failed.load(Ordering::Relaxed) {
                        return None;
                    }
                    let done = spec(i).and_then(|spec| self.run_one(runner, &spec));
                    if done.is_err() {
                        failed.fetch_min(i, Ordering::Relaxed);
                    }
                    (self.progress)();
                    Some(done)
                })
                .collect()
        });
        let mut done = Vec::with_capacity(count);
        for (index, result) in results.into_iter().enumerate() {
            match result {
                Some(Ok(run)) => done.push(run),
                Some(Err(error)) => return Err(Failed { index, error }),
                None => unreachable!("a run is skipped only after one numbered below it failed"),
            }
        }
        Ok(done)
    }

    /// One run, as `simulate` runs it, its files written into its spec's `out` as it goes
    /// (its records are not kept: see [`Runner::run_summarised`]).
    fn run_one(&self, runner: &Runner, spec: &RunSpec) -> Result<Done, String> {
        let keep = Keep { decisions: spec.decisions, series: spec.out.is_some() };
        let out = spec.out.as_deref().map(|dir| Folder { dir, wall_s: self.wall_in_files });
        let mut summary = runner.run_summarised(spec, keep, out).map_err(|e| e.to_string())?;
        let wall_s = summary.wall_s.take().unwrap_or(0.0);
        Ok(Done { summary, wall_s })
    }
}
