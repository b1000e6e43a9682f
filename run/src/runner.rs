//! Running a [`RunSpec`]: the trace read (or the built-in workload made), the cluster chosen,
//! failures resolved, the scenario assembled and simulated, the summary computed. The one way
//! a run happens, for the command line, sweeps, regression checks and Python alike.

use crate::{RunError, RunSpec, Setup, builtin};
use policies::Registry;
use sim::{ClusterSpec, ControllerConfig, Policy, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What a run keeps beyond its summary and job records: only what will be used is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// The decision log (decisions.csv).
    pub decisions: bool,
    /// The time series (timeseries.csv, queue_timeseries.csv).
    pub series: bool,
}

impl Keep {
    /// Everything: the decision log and the time series.
    pub const ALL: Keep = Keep { decisions: true, series: true };
    /// Only the summary and the records (a sweep or regression check that writes nothing).
    pub const SUMMARY: Keep = Keep { decisions: false, series: false };
}

/// A finished run: its records and its summary (with its wall time).
#[derive(Debug)]
pub struct RunOutcome {
    /// Every job's and task's record, the time series, the decision log (as kept).
    pub result: sim::RunResult,
    /// The metrics of summary.json.
    pub summary: reports::Summary,
    /// The run's starts against those its trace recorded (a sacct dump); `None` when the
    /// trace records none.
    pub vs_recorded: Option<reports::recorded::StartDeviations>,
}

type NoteSink = Box<dyn Fn(&Path, &str) + Send + Sync>;
type ProgressSink = Box<dyn Fn(sim::RunProgress) + Send + Sync>;
type RecordedStarts = BTreeMap<String, sim::SimTime>;
type FailureFeed = Box<dyn sim::HardwareFeed>;

/// A trace as a run takes it: its own (read for it alone, or handed in by the caller), or the
/// one the runner keeps for every run of it, shared.
pub(crate) enum Loaded {
    Own(Box<traces::Trace>),
    Kept(Arc<traces::Trace>),
}

/// The starts a run's trace recorded: taken from its own trace, or read in the kept one.
pub(crate) enum Recorded {
    Own(RecordedStarts),
    Kept(Arc<traces::Trace>),
}

impl Recorded {
    pub(crate) fn starts(&self) -> &RecordedStarts {
        match self {
            Recorded::Own(starts) => starts,
            Recorded::Kept(trace) => &trace.recorded_starts,
        }
    }
}

/// A run ready to start: its scenario, checked; the Controller's settings with what the run
/// keeps; the starts its trace recorded.
pub(crate) struct Prepared {
    pub(crate) scenario: Scenario,
    pub(crate) config: ControllerConfig,
    pub(crate) recorded: Recorded,
}

/// Runs RunSpecs. Hands the notes of each trace it reads (what its importer skipped or does
/// not model) to a sink, and may keep the traces it read for later runs (a sweep reads each
/// trace once).
pub struct Runner {
    registry: Registry,
    keep_traces: bool,
    /// The most time-series buckets a run may write (None: no limit).
    series_limit: Option<u64>,
    /// How errors spell the settings (the command line's flags, or Python's keywords).
    spelling: crate::Spelling,
    /// The traces kept (see [`Runner::keeping_traces`]), each shared by every run of it.
    traces: Mutex<BTreeMap<(PathBuf, traces::Format), Arc<traces::Trace>>>,
    /// How many times a trace file was read.
    reads: AtomicUsize,
    notes: NoteSink,
    /// Told how far each run has got (see [`sim::Engine::run_with_progress`]).
    progress: Option<ProgressSink>,
}

impl Default for Runner {
    fn default() -> Runner {
        Runner::new(Registry::builtin())
    }
}

impl Runner {
    /// A runner that builds policies from `registry`.
    pub fn new(registry: Registry) -> Runner {
        Runner {
            registry,
            keep_traces: false,
            series_limit: Some(crate::MAX_SERIES_BUCKETS),
            spelling: crate::Spelling::Cli,
            traces: Mutex::default(),
            reads: AtomicUsize::new(0),
            notes: Box::new(|_, _| {}),
            progress: None,
        }
    }

    /// The policies this runner builds.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Keeps every trace it reads, keyed by path and format, for the runs that follow: each
    /// is read once, and every run of it reads its jobs from the one copy kept (cloning each
    /// as it admits it), so parallel runs of one trace hold it once.
    pub fn keeping_traces(mut self) -> Runner {
        self.keep_traces = true;
        self
    }

    /// Lets runs write time series of any number of buckets when `forced` (`simulate --force`,
    /// Python's `force=True`); by default a run that would write more than
    /// [`crate::MAX_SERIES_BUCKETS`] is refused before it starts.
    pub fn forced(mut self, forced: bool) -> Runner {
        if forced {
            self.series_limit = None;
        }
        self
    }

    /// Spells the settings in its errors as `spelling` does (the command line's by default).
    pub fn spelling(mut self, spelling: crate::Spelling) -> Runner {
        self.spelling = spelling;
        self
    }

    /// Gives the notes of each trace read to `sink` (the command line prints them on stderr).
    pub fn with_notes(mut self, sink: impl Fn(&Path, &str) + Send + Sync + 'static) -> Runner {
        self.notes = Box::new(sink);
        self
    }

    /// Tells `sink` how far each run has got: jobs arrived of the workload's, now and then and
    /// once at the end (the command line draws a bar on a terminal).
    pub fn with_progress(mut self, sink: impl Fn(sim::RunProgress) + Send + Sync + 'static) -> Runner {
        self.progress = Some(Box::new(sink));
        self
    }

    /// The trace kept for `path` read as `format`, if one is (see [`Runner::keeping_traces`]):
    /// the very copy its runs share.
    pub fn kept_trace(&self, path: &Path, format: traces::Format) -> Option<Arc<traces::Trace>> {
        let kept = self.traces.lock().ok()?;
        kept.get(&(path.to_path_buf(), format)).cloned()
    }

    /// How many times this runner has read a trace file (each kept trace counts once).
    pub fn traces_read(&self) -> usize {
        self.reads.load(Ordering::Relaxed)
    }

    /// The most time-series buckets a run may write (`None`: no limit).
    pub(crate) fn series_limit(&self) -> Option<u64> {
        self.series_limit
    }
    /// How errors spell the settings.
    pub(crate) fn spelling_used(&self) -> crate::Spelling {
        self.spelling
    }
    /// Tells the progress sink, if any, how far a run has got.
    pub(crate) fn report_progress(&self, progress: sim::RunProgress) {
        self.progress.iter().for_each(|sink| sink(progress));
    }

    /// Runs `spec` under the policy it names.
    pub fn run(&self, spec: &RunSpec, keep: Keep) -> Result<RunOutcome, RunError> {
        let mut policy = spec.build_policy(&self.registry)?;
        self.run_with_policy(spec, policy.as_mut(), keep)
    }

    /// Runs `spec` under `policy` instead of the one it names (a policy built by the caller,
    /// such as one written in Python).
    pub fn run_with_policy(&self, spec: &RunSpec, policy: &mut dyn Policy, keep: Keep) -> Result<RunOutcome, RunError> {
        let trace = self.load_trace_of(spec)?;
        self.run_parts(spec, trace, policy, keep)
    }

    /// Runs `spec` on `trace`, a trace already in memory (a live session's, say), in place of
    /// the one `spec` names, under `spec`'s policy.
    pub fn run_trace(&self, spec: &RunSpec, trace: traces::Trace, keep: Keep) -> Result<RunOutcome, RunError> {
        let mut policy = spec.build_policy(&self.registry)?;
        self.run_parts(spec, Some(Loaded::Own(Box::new(trace))), policy.as_mut(), keep)
    }

    /// [`Runner::run_trace`] under `policy` instead of the one `spec` names (a forecast's,
    /// which wraps the spec's policy).
    pub fn run_trace_with_policy(
        &self,
        spec: &RunSpec,
        trace: traces::Trace,
        policy: &mut dyn Policy,
        keep: Keep,
    ) -> Result<RunOutcome, RunError> {
        self.run_parts(spec, Some(Loaded::Own(Box::new(trace))), policy, keep)
    }

    fn run_parts(
        &self,
        spec: &RunSpec,
        trace: Option<Loaded>,
        policy: &mut dyn Policy,
        keep: Keep,
    ) -> Result<RunOutcome, RunError> {
        let prepared = self.prepare(spec, trace, policy, keep)?;
        self.run_prepared(prepared, policy)
    }

    /// Runs `prepared` under `policy` with every record kept in memory.
    pub(crate) fn run_prepared(&self, prepared: Prepared, policy: &mut dyn Policy) -> Result<RunOutcome, RunError> {
        let Prepared { scenario, config, recorded } = prepared;
        let started = Instant::now();
        let mut report = |p: sim::RunProgress| self.report_progress(p);
        let result = sim::Engine::new(scenario, policy, config)?.run_with_progress(policy, &mut report);
        let mut summary = reports::Summary::of(&result);
        summary.wall_s = Some(started.elapsed().as_secs_f64());
        // Only a trace that records starts (sacct) pays for the comparison.
        let recorded_starts = recorded.starts();
        let vs_recorded = (!recorded_starts.is_empty())
            .then(|| reports::recorded::start_deviations(&result, recorded_starts))
            .and_then(|deviations| reports::recorded::StartDeviations::of(deviations.values()));
        if let Some(vs) = &vs_recorded {
            vs.fill_summary(&mut summary);
        }
        Ok(RunOutcome { result, summary, vs_recorded })
    }

    /// The run of `spec` on `trace` (or the built-in workload) under `policy`, ready to start.
    pub(crate) fn prepare(
        &self,
        spec: &RunSpec,
        trace: Option<Loaded>,
        policy: &dyn Policy,
        keep: Keep,
    ) -> Result<Prepared, RunError> {
        match trace {
            Some(Loaded::Kept(trace)) => self.kept_scenario(spec, trace, policy, keep),
            Some(Loaded::Own(trace)) => self.scenario(spec, Some(*trace), keep),
            None => self.scenario(spec, None, keep),
        }
    }

    /// The trace `spec` names, if any, read or shared (see [`Runner::keeping_traces`]).
    pub(crate) fn load_trace_of(&self, spec: &RunSpec) -> Result<Option<Loaded>, RunError> {
        spec.trace.as_deref().map(|path| self.load_trace(path, spec.format)).transpose()
    }

    /// The Controller's settings of `setup`, keeping what `keep` says.
    pub(crate) fn config(setup: &Setup, keep: Keep) -> ControllerConfig {
        let mut config = setup.config();
        config.record_decisions = keep.decisions;
        config.record_series = keep.series;
        config
    }

    /// Refuses a run that keeps time series of more buckets than allowed over the
    /// submissions of `span`.
    fn check_series(
        &self,
        spec: &RunSpec,
        span: Option<(sim::SimTime, sim::SimTime)>,
        keep: Keep,
    ) -> Result<(), RunError> {
        match (keep.series, self.series_limit) {
            (true, Some(limit)) => crate::series_limit::check(spec, span, limit, self.spelling),
            _ => Ok(()),
        }
    }

    /// The setup of `spec` on a cluster chosen from `spec` and `trace_cluster`, with the
    /// queues and datasets `spec` names, else the trace's.
    fn setup(
        &self,
        spec: &RunSpec,
        trace_cluster: Option<ClusterSpec>,
        trace_queues: Vec<sim::QueueSpec>,
        trace_datasets: Vec<sim::DatasetSpec>,
    ) -> Result<Setup, RunError> {
        let cluster_spec = choose_cluster(spec, trace_cluster, self.spelling)?;
        let datasets = match &spec.datasets {
            Some(path) => traces::load_datasets_file(path)?,
            None => trace_datasets,
        };
        let queues = match &spec.queues {
            Some(path) => traces::load_queues_file(path)?,
            None => trace_queues,
        };
        Setup::new(spec.clone(), cluster_spec, queues, datasets)
    }

    /// The run of `spec` on its own `trace` (or the built-in workload without one): the
    /// workload moved into the scenario (failures resolved on its cluster), checked.
    fn scenario(&self, spec: &RunSpec, trace: Option<traces::Trace>, keep: Keep) -> Result<Prepared, RunError> {
        let (workload, events, setup, recorded_starts) = match trace {
            Some(mut trace) => {
                let recorded_starts = std::mem::take(&mut trace.recorded_starts);
                let setup = self.setup(spec, trace.cluster, trace.queues, trace.datasets)?;
                (Some(trace.workload), trace.events, setup, recorded_starts)
            }
            None => (None, Vec::new(), self.setup(spec, None, Vec::new(), Vec::new())?, RecordedStarts::new()),
        };
        let workload = match workload {
            Some(workload) => workload,
            None => builtin::workload(setup.cluster().gpu_count(), spec)?,
        };
        let start = workload.jobs().first().map_or(sim::SimTime::ZERO, |j| j.submit);
        let (events, feed) = resolve_failures(spec, &setup, start, events)?;
        let scenario = setup.scenario(workload, events, feed)?;
        self.check_series(spec, scenario.workload.shape().submit_span(), keep)?;
        Ok(Prepared { scenario, config: Runner::config(&setup, keep), recorded: Recorded::Own(recorded_starts) })
    }

    /// The run of `spec` on the kept `trace` under `policy`: its jobs fed from the one copy
    /// (see crate::kept), refused for what the same run in memory is refused for, in the same
    /// order.
    fn kept_scenario(
        &self,
        spec: &RunSpec,
        trace: Arc<traces::Trace>,
        policy: &dyn Policy,
        keep: Keep,
    ) -> Result<Prepared, RunError> {
        let setup = self.setup(spec, trace.cluster.clone(), trace.queues.clone(), trace.datasets.clone())?;
        let config = Runner::config(&setup, keep);
        let start = trace.workload.jobs().first().map_or(sim::SimTime::ZERO, |j| j.submit);
        let (events, feed) = resolve_failures(spec, &setup, start, trace.events.clone())?;
        let mut checked = crate::kept::check(&trace.workload, &setup, policy, &config)?;
        let jobs = crate::kept::feed(Arc::clone(&trace), &setup);
        let scenario = setup.streamed_scenario(checked.shape.clone(), jobs, events, feed)?;
        checked.refuse_placement()?;
        self.check_series(spec, checked.shape.submit_span(), keep)?;
        checked.refuse_run()?;
        Ok(Prepared { scenario, config, recorded: Recorded::Kept(trace) })
    }

    /// Reads the trace at `path`, or shares the copy kept from an earlier run.
    fn load_trace(&self, path: &Path, format: traces::Format) -> Result<Loaded, RunError> {
        if !self.keep_traces {
            return Ok(Loaded::Own(Box::new(self.read_trace(path, format)?)));
        }
        // Held while reading, so parallel runs of one sweep read (and note) each trace once.
        let mut kept = self.traces.lock().map_err(|_| RunError::new("the trace cache is poisoned"))?;
        let key = (path.to_path_buf(), format);
        if let Some(trace) = kept.get(&key) {
            return Ok(Loaded::Kept(Arc::clone(trace)));
        }
        let trace = Arc::new(self.read_trace(path, format)?);
        kept.insert(key, Arc::clone(&trace));
        Ok(Loaded::Kept(trace))
    }

    fn read_trace(&self, path: &Path, format: traces::Format) -> Result<traces::Trace, RunError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let trace = traces::load(path, format)?;
        for note in &trace.notes {
            (self.notes)(path, note);
        }
        Ok(trace)
    }
}

/// `events` with `spec`'s failures (`--failures`) on the setup's cluster added: drawn up
/// front (a fixed history) or as the run goes (a model's feed), from `start`, the first
/// submission.
pub(crate) fn resolve_failures(
    spec: &RunSpec,
    setup: &Setup,
    start: sim::SimTime,
    mut events: Vec<sim::ClusterEvent>,
) -> Result<(Vec<sim::ClusterEvent>, Option<FailureFeed>), RunError> {
    let Some(text) = &spec.failures else { return Ok((events, None)) };
    let failures: traces::FailureSpec = text.parse()?;
    Ok(match failures.resolve(setup.cluster(), start, spec.seed)? {
        traces::Failures::Events(fixed) => {
            events.extend(fixed);
            (events, None)
        }
        traces::Failures::Feed(feed) => (events, Some(feed)),
    })
}

/// The cluster of `spec`: its --cluster (a file or a shorthand), else the trace's, else the
/// built-in one (only without a trace: a trace that does not describe its cluster needs one).
/// Errors spell the setting as `spelling` does.
pub(crate) fn choose_cluster(
    spec: &RunSpec,
    from_trace: Option<ClusterSpec>,
    spelling: crate::Spelling,
) -> Result<ClusterSpec, RunError> {
    let cluster = |text: &str| spelling.setting("cluster", text);
    if let Some(text) = &spec.cluster {
        let path = Path::new(text);
        if path.is_file() {
            return Ok(traces::load_cluster_file(path)?);
        }
        if path.is_dir() {
            return Err(RunError::new(format!(
                "{}: a folder; expected a cluster.csv file or a shorthand such as 40x8:V100",
                cluster(text)
            )));
        }
        // A shorthand has neither a path separator nor a file extension: a text with one was
        // meant as a file.
        let meant_as_file = text.contains(['/', '\\']) || text.to_ascii_lowercase().ends_with(".csv");
        return match traces::parse_cluster_shorthand(text) {
            Err(_) if meant_as_file => {
                Err(RunError::new(format!("{}: no such file (nor a shorthand such as 40x8:V100)", cluster(text))))
            }
            parsed => Ok(parsed?),
        };
    }
    if let Some(cluster) = from_trace {
        return Ok(cluster);
    }
    if spec.trace.is_some() {
        return Err(RunError::new(format!(
            "this trace does not describe its cluster: give one, e.g. {}",
            cluster("40x8:V100")
        )));
    }
    Ok(traces::parse_cluster_shorthand(crate::BUILTIN_CLUSTER)?)
}
