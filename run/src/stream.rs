//! Streamed runs: jobs read from the trace (or drawn, for the built-in workload) as simulated
//! time reaches them, and every record handed to a sink as soon as it is final, so that a
//! run's memory follows the jobs in the system, not the jobs in the trace. The jobs are read
//! twice: a first pass checks every job and gathers what the run must know beforehand (the
//! workload's shape: its span, queue names, kinds of job), as a run in memory checks its
//! whole workload before it starts; the second feeds the run.

use crate::pipeline::read_ahead;
use crate::{Keep, RunError, RunSpec, Runner, Setup};
use sim::{JobSpec, Policy, RecordSink, RunResult, Workload, WorkloadShape};
use std::path::Path;

/// Jobs in arrival order, each shaped by the run's options.
type Jobs = Box<dyn Iterator<Item = Result<JobSpec, RunError>> + Send>;

impl Runner {
    /// Runs `spec` streamed (see the module's text): its records go to `sink` in the order
    /// [`RecordSink`] states, and the result's records are left empty. `order` says what to
    /// do with a trace whose rows are not in submission order. A trace that is a folder, or
    /// of a format read whole (sacct, openb), is refused with what to do instead.
    pub fn run_streamed(
        &self,
        setup: &Setup,
        policy: &mut dyn Policy,
        keep: Keep,
        order: traces::Order,
        sink: &mut (dyn RecordSink + Send),
    ) -> Result<RunResult, RunError> {
        let spec = setup.spec();
        let config = Runner::config(setup, keep);
        let mut report = |p: sim::RunProgress| self.report_progress(p);
        std::thread::scope(|threads| {
            let shape = self.check_pass(threads, setup, &*policy, &config, order)?;
            let start = shape.submit_span().map_or(sim::SimTime::ZERO, |(first, _)| first);
            let (events, feed) = crate::runner::resolve_failures(spec, setup, start, Vec::new())?;
            let jobs = open_jobs(spec, setup, order)?.map(|job| job.map_err(|e| e.to_string()));
            let jobs: sim::JobFeed = Box::new(read_ahead(threads, jobs));
            let scenario = setup.streamed_scenario(shape, jobs, events, feed)?;
            let mut behind = crate::pipeline::write_behind(threads, sink);
            let end = sim::Engine::new(scenario, policy, config)?.run_into(policy, &mut behind, &mut report);
            behind.finish();
            Ok(end?)
        })
    }

    /// The first pass: every job checked as a run in memory checks its workload, and the
    /// workload's shape gathered.
    fn check_pass<'scope>(
        &self,
        threads: &'scope std::thread::Scope<'scope, '_>,
        setup: &Setup,
        policy: &dyn Policy,
        config: &sim::ControllerConfig,
        order: traces::Order,
    ) -> Result<WorkloadShape, RunError> {
        let spec = setup.spec();
        let checker = setup.scenario(Workload::default(), Vec::new(), None)?;
        let shape = if spec.trace.is_some() {
            let mut shape = WorkloadShape::default();
            for batch in read_ahead(threads, open_jobs(spec, setup, order)?) {
                for job in batch? {
                    checker.check_job(&job, policy, config)?;
                    shape.add(&job)?;
                }
            }
            shape
        } else {
            // Each kind of synthetic job passes or fails as every job like it does: checking
            // them in the order they first appear finds the first job a check refuses.
            let mut survey = crate::builtin::jobs(setup.cluster().gpu_count(), spec)?.survey()?;
            for (job, _) in &mut survey.kinds {
                setup.shape_job(job);
                checker.check_job(job, policy, config)?;
                job.check()?;
            }
            WorkloadShape::of_kinds(&survey.kinds, survey.span)?
        };
        setup.check_queue_settings_used(&shape)?;
        if let (true, Some(limit)) = (config.record_series, self.series_limit()) {
            crate::series_limit::check(spec, shape.submit_span(), limit, self.spelling_used())?;
        }
        Ok(shape)
    }

    /// The setup of a streamed run of `spec`: a trace of jobs alone describes no cluster,
    /// queues or datasets, so they come from the run's settings (or the built-in cluster).
    pub fn streamed_setup(&self, spec: &RunSpec) -> Result<Setup, RunError> {
        if let Some(path) = spec.trace.as_deref().filter(|p| p.is_dir()) {
            return Err(RunError::new(format!(
                "{}: a trace folder is read whole; stream its jobs.csv, with its cluster, queues and datasets \
                 given as --cluster, --queues and --datasets",
                path.display()
            )));
        }
        let cluster = crate::runner::choose_cluster(spec, None, self.spelling_used())?;
        let queues = spec.queues.as_deref().map(traces::load_queues_file).transpose()?.unwrap_or_default();
        let datasets = spec.datasets.as_deref().map(traces::load_datasets_file).transpose()?.unwrap_or_default();
        Setup::new(spec.clone(), cluster, queues, datasets)
    }
}

/// `spec`'s jobs as a streamed run reads them: its trace's, or the built-in workload drawn one
/// job at a time; each shaped as the run's options shape it.
fn open_jobs(spec: &RunSpec, setup: &Setup, order: traces::Order) -> Result<Jobs, RunError> {
    let jobs: Box<dyn Iterator<Item = Result<JobSpec, traces::TraceError>> + Send> = match spec.trace.as_deref() {
        None => Box::new(crate::builtin::jobs(setup.cluster().gpu_count(), spec)?),
        Some(path) => Box::new(open_trace(path, spec.format, order)?),
    };
    let setup = setup.clone();
    Ok(Box::new(jobs.map(move |job| {
        let mut job = job?;
        setup.shape_job(&mut job);
        Ok(job)
    })))
}

fn open_trace(path: &Path, format: traces::Format, order: traces::Order) -> Result<traces::JobStream, RunError> {
    Ok(traces::stream_jobs(path, format, order)?)
}
