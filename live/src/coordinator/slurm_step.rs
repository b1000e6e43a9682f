//! The coordinator with the Slurm executor ([`crate::slurm`]): set up from Slurm at start-up
//! (its configuration checked, its partition's nodes as the cluster), then, every poll, one
//! batch of what Slurm reports, journaled and applied like any other, and the engine's
//! decisions carried out.

use super::Coordinator;
use super::settings::Given;
use super::store::Store;
use crate::slurm::{Commands, Slurm, SlurmExecutor, SlurmOptions, ctl, forecaster, mapping};
use crate::wire::Refusal;
use std::path::Path;
use std::time::Instant;

/// Checks Slurm's configuration, reads the partition's nodes, and gives the settings of a new
/// state directory its cluster (or checks an existing one's against them).
pub(super) fn open_executor(
    options: SlurmOptions,
    settings: &mut Given,
    dir: &Path,
) -> Result<(SlurmExecutor, Vec<String>), String> {
    let mut slurm = Commands;
    let problems = if options.shadow { Vec::new() } else { ctl::config_problems(&slurm.config()?) };
    if !problems.is_empty() {
        return Err(format!(
            "Slurm is not set up for schedlab to schedule partition `{}` (docs/slurm-executor.md):\n  {}",
            options.partition,
            problems.join("\n  ")
        ));
    }
    let (spec, names) = mapping::cluster(&slurm.nodes()?, &options.partition)?;
    if settings.cluster.is_some() {
        return Err("--executor slurm reads the cluster from Slurm: give no --cluster".into());
    }
    if !Store::exists(dir) {
        let mut csv = Vec::new();
        traces::write_cluster_csv(&spec, &mut csv).map_err(|e| e.to_string())?;
        settings.cluster = Some(String::from_utf8(csv).map_err(|e| e.to_string())?);
    }
    let executor = SlurmExecutor::new(Box::new(slurm), options, names.clone());
    Ok((executor, names))
}

impl Coordinator {
    /// `GET /v1/forecast`: the last forecast finished ([`crate::slurm::forecaster`]): each
    /// pending job's start under the session's policy from the partition's state then and, in
    /// shadow mode, Slurm against the policy since the start (see [`crate::slurm::shadow`]).
    pub(crate) fn forecast_json(&self) -> Result<serde_json::Value, Refusal> {
        if self.executor.is_none() {
            return Err(Refusal::new(409, "forecasts need --executor slurm (the partition's state is Slurm's)"));
        }
        match self.forecaster.last() {
            None => Err(Refusal::new(503, "the first forecast is still being computed: ask again shortly")),
            Some(result) => result.map_err(|e| Refusal::new(500, format!("the last forecast failed: {e}"))),
        }
    }

    /// Starts the next forecast when the last is a poll (at least 5 s) old.
    fn forecast_step(&mut self, executor: &SlurmExecutor) {
        let every = executor.options.poll.max(std::time::Duration::from_secs(5));
        let (driver, registry) = (&self.driver, &self.registry);
        self.forecaster.step(every, || forecaster::Inputs {
            mirror: executor.mirror.clone(),
            cluster: driver.cluster_spec().clone(),
            names: executor.node_names().to_vec(),
            out: executor.out.clone(),
            now_unix: crate::slurm::executor::unix_now(),
            run: driver.config().run.clone(),
            registry: registry.clone(),
            compare: executor.options.shadow,
        });
    }

    /// The node names a state directory was made for must be Slurm's now: node ids are
    /// positions in that list, in the journal and in every record.
    pub(super) fn adopt_slurm_nodes(&mut self, names: &[String]) -> Result<(), String> {
        match self.store.slurm_nodes()? {
            None => self.store.set_slurm_nodes(names),
            Some(stored) if stored == names => Ok(()),
            Some(stored) => Err(format!(
                "{}: made for Slurm nodes {} but the partition now has {}: start a new state directory",
                self.state_dir.display(),
                stored.join(","),
                names.join(",")
            )),
        }
    }

    /// One poll of Slurm, when due: its report journaled and applied as a batch, then the
    /// engine's decisions carried out. A Slurm that does not answer is logged and asked again
    /// on the next poll; the journal not written, the same.
    pub(super) fn slurm_step(&mut self) {
        let Some(mut executor) = self.executor.take() else { return };
        if self.next_poll.is_some_and(|t| Instant::now() < t) {
            self.executor = Some(executor);
            return;
        }
        self.next_poll = Some(Instant::now() + executor.options.poll);
        match executor.observe(&self.driver) {
            Ok(inputs) => {
                if let Err(e) = self.commit(inputs) {
                    self.log(format!("cannot write the journal: {e}; Slurm is read again on the next poll"));
                }
            }
            Err(e) => self.log(format!("cannot read Slurm: {e}")),
        }
        let store = &self.store;
        executor.act(&self.driver, Instant::now(), &mut |job, attempt, run| store.put_slurm_run(job, attempt, run));
        for message in executor.take_messages() {
            self.log(message);
        }
        self.forecast_step(&executor);
        self.executor = Some(executor);
    }
}
