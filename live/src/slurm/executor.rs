//! The Slurm executor's two steps, around each batch the coordinator journals and applies:
//! [`SlurmExecutor::observe`] turns what Slurm reports into the batch's inputs (nodes in
//! service beat, held jobs arrive, runs that ended exit, a node failure under a run is a node
//! failure), and [`SlurmExecutor::act`] carries out what the engine decided (pin and release
//! a start, requeue held what it stopped, hold a start Slurm did not make in time and give
//! the attempt back to the engine as a failure).
//!
//! Runs and attempts. Each time Slurm runs a job, the run has its own requeue count
//! (`restart_cnt`), and schedlab records which attempt of the engine's task each run is, in
//! the coordinator's store, *before* it acts (`record`). That record is the fence: an exit
//! counts only for the run of the task's latest attempt, a requeue is issued only while the
//! run to stop is still the counted one, and after a crash the executor reads the records
//! and Slurm's counts to tell what it did from what it was about to do. So a restarted
//! coordinator releases no attempt twice and never runs one as two Slurm runs.

use super::ctl::Slurm;
use super::mapping::{job_id, job_name, node_ids, request};
use super::report::{End, Phase, SlurmJob};
use crate::driver::{Driver, Input, Placement};
use sim::TaskStatus;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// `live serve --executor slurm`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmOptions {
    /// The partition schedlab schedules (its jobs held by job_submit.lua).
    pub partition: String,
    /// How often Slurm is asked (squeue, sinfo).
    pub poll: Duration,
    /// How long a released job may stay pending before it is held again and its attempt
    /// given back to the engine.
    pub start_deadline: Duration,
    /// Change nothing in Slurm: mirror the partition, forecast, compare ([`super::shadow`]).
    pub shadow: bool,
}

impl Default for SlurmOptions {
    fn default() -> SlurmOptions {
        SlurmOptions {
            partition: "gpu".into(),
            poll: Duration::from_secs(1),
            start_deadline: Duration::from_secs(30),
            shadow: false,
        }
    }
}

pub struct SlurmExecutor {
    slurm: Box<dyn Slurm + Send>,
    pub options: SlurmOptions,
    /// Slurm's node names by node id.
    nodes: Vec<String>,
    /// (job, attempt) -> the restart count of the Slurm run that carries it (the store's
    /// records, read at start-up).
    runs: BTreeMap<(u64, u32), u32>,
    /// Attempts released and not yet seen running: when.
    released: BTreeMap<(u64, u32), Instant>,
    /// Jobs refused (said once; they stay held).
    refused: BTreeSet<u64>,
    /// Jobs found running without schedlab's release (said once).
    escaped: BTreeSet<u64>,
    /// Attempts to give back to the engine in the next batch, each as the failure of one of
    /// its GPUs (node, slot), repaired at once: released ones Slurm did not start in time,
    /// runs Slurm requeued itself.
    give_back: Vec<(u32, u32, String)>,
    /// What to log.
    messages: Vec<String>,
    /// Every job of the partition seen since the start, as last reported (what `act` reads,
    /// and what forecasts start from).
    pub mirror: super::shadow::Mirror,
    /// The nodes Slurm has out of service now (node ids).
    pub out: BTreeSet<u32>,
}

impl SlurmExecutor {
    pub fn new(slurm: Box<dyn Slurm + Send>, options: SlurmOptions, nodes: Vec<String>) -> SlurmExecutor {
        SlurmExecutor {
            slurm,
            options,
            nodes,
            runs: BTreeMap::new(),
            released: BTreeMap::new(),
            refused: BTreeSet::new(),
            escaped: BTreeSet::new(),
            give_back: Vec::new(),
            messages: Vec::new(),
            mirror: super::shadow::Mirror::new(unix_now()),
            out: BTreeSet::new(),
        }
    }

    /// Slurm's node names by node id.
    pub fn node_names(&self) -> &[String] {
        &self.nodes
    }

    /// The run records of a state directory (see the module's doc).
    pub fn load_runs(&mut self, runs: BTreeMap<(u64, u32), u32>) {
        self.runs = runs;
    }

    /// What happened since the last call, to log.
    pub fn take_messages(&mut self) -> Vec<String> {
        std::mem::take(&mut self.messages)
    }

    /// The inputs of the next batch: Slurm's nodes and jobs, read now.
    pub fn observe(&mut self, driver: &Driver) -> Result<Vec<Input>, String> {
        let nodes = self.slurm.nodes()?;
        let jobs = self.slurm.jobs(&self.options.partition)?;
        let mut inputs = Vec::new();
        let going_out = self.node_inputs(driver, &nodes, &mut inputs);
        self.mirror.update(&jobs);
        if self.options.shadow {
            return Ok(inputs);
        }
        let mut failed_nodes = BTreeSet::new();
        for job in jobs {
            match driver.find(&job_name(job.job_id)) {
                None => self.newcomer(driver, &job, &mut inputs),
                Some(s) => self.known(driver, s, &job, &mut inputs, &mut failed_nodes),
            }
        }
        inputs.extend(failed_nodes.into_iter().map(|node| Input::NodeRestarted { node }));
        // A GPU given back is repaired in the same batch, which would also end the outage of
        // a node going out now: its going out ends the attempt anyway.
        for (node, slot, what) in std::mem::take(&mut self.give_back) {
            if !going_out.contains(&node) {
                inputs.push(Input::GpuFail { node, slot, what });
                inputs.push(Input::GpuRepair { node, slot });
            }
        }
        Ok(inputs)
    }

    /// Slurm's nodes for the engine. Slurm is their health's authority: every node it lists
    /// beats (every half heartbeat interval), and a node it takes out of service (down,
    /// drained, not responding) has its GPUs taken out in the engine until Slurm puts it back
    /// (a GPU failure per slot, then its repair: what the session's trace writes). Compared
    /// with what the engine holds now, so a restarted coordinator neither repeats nor misses one.
    /// Keeps the nodes out of service (a node Slurm no longer lists among them) in `out`, and
    /// returns those taken out now.
    fn node_inputs(
        &mut self,
        driver: &Driver,
        nodes: &[super::report::SlurmNode],
        inputs: &mut Vec<Input>,
    ) -> BTreeSet<u32> {
        let by_name: BTreeMap<&str, &super::report::SlurmNode> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let mut going_out = BTreeSet::new();
        self.out.clear();
        let half_beat = driver.config().run.heartbeat_s.0.as_ms() / 2;
        for (id, name) in self.nodes.iter().enumerate() {
            let id = id as u32;
            let Some(node) = by_name.get(name.as_str()) else {
                self.out.insert(id);
                continue;
            };
            if node.out_of_service() {
                self.out.insert(id);
            }
            if driver.last_beat(id).is_none_or(|b| driver.now().as_ms() >= b.as_ms() + half_beat) {
                inputs.push(Input::Beat { node: id });
            }
            let gpus = driver.cluster().node(sim::NodeId(id)).gpu_count;
            let engine_out = driver.gpu_out(driver.cluster().node(sim::NodeId(id)).first_gpu);
            match (node.out_of_service(), engine_out) {
                (true, false) => {
                    let reason: String = node.reason.chars().take(100).collect();
                    let what = format!("Slurm: node {name} {} {reason}", node.state);
                    inputs.extend((0..gpus).map(|slot| Input::GpuFail { node: id, slot, what: what.clone() }));
                    going_out.insert(id);
                }
                (false, true) => inputs.extend((0..gpus).map(|slot| Input::GpuRepair { node: id, slot })),
                _ => {}
            }
        }
        going_out
    }

    /// A job of the partition the engine does not know yet.
    fn newcomer(&mut self, driver: &Driver, job: &SlurmJob, inputs: &mut Vec<Input>) {
        let id = job.job_id;
        match job.phase() {
            Phase::Held if !self.refused.contains(&id) && job.dependency.is_empty() => {
                let checked = request(job).and_then(|r| {
                    let spec = driver.check_submission(&r).map_err(|e| e.reason)?;
                    match crate::coordinator::admission::never_fits(driver.cluster(), &spec) {
                        Some(why) => Err(why),
                        None => Ok(r),
                    }
                });
                match checked {
                    Ok(r) => inputs.push(Input::submit(r)),
                    Err(why) => {
                        self.refused.insert(id);
                        self.messages.push(format!("Slurm job {id} refused, it stays held: {why}"));
                    }
                }
            }
            Phase::Released => self.hold_escaped(id),
            Phase::Running if self.escaped.insert(id) => {
                self.messages.push(format!("Slurm job {id} runs without schedlab's release (check job_submit.lua)"));
            }
            _ => {}
        }
    }

    /// A job released by someone else: held again (only schedlab starts the partition's jobs).
    fn hold_escaped(&mut self, id: u64) {
        match self.slurm.hold(id) {
            Ok(()) => self.messages.push(format!("Slurm job {id} was released outside schedlab: held again")),
            Err(e) => self.messages.push(format!("Slurm job {id} was released outside schedlab, cannot hold it: {e}")),
        }
    }

    /// A job the engine knows: the end of its counted run becomes the engine's.
    fn known(
        &mut self,
        driver: &Driver,
        s: usize,
        job: &SlurmJob,
        inputs: &mut Vec<Input>,
        failed_nodes: &mut BTreeSet<u32>,
    ) {
        let Some(task) = driver.submissions()[s].task_ids[0] else { return };
        let state = driver.controller().task(task);
        let run = self.runs.get(&(job.job_id, state.attempt)).copied();
        let running = state.status == TaskStatus::Running;
        if running && run.is_some_and(|r| job.restart_cnt > r) && !matches!(job.phase(), Phase::Ended(_)) {
            // Slurm requeued the run itself (its node failed, or an admin asked): over.
            self.run_lost(driver, task, state.attempt, job);
            return;
        }
        let Phase::Ended(end) = job.phase() else { return };
        let counted = running && run == Some(job.restart_cnt) && job.start_time != 0;
        match end {
            End::Cancelled if !driver.job_state(s).is_final() => inputs.push(Input::Cancel { job: s as u32 }),
            End::Exited(code) if counted => inputs.push(Input::Exit { task: task.0, attempt: state.attempt, code }),
            End::NodeFailed if counted => failed_nodes.extend(node_ids(&job.nodes, &self.nodes)),
            _ => {}
        }
    }

    /// The attempt whose run Slurm ended on its own: given back to the engine as the failure
    /// of one of its GPUs, repaired at once (the task runs again as a new attempt).
    fn run_lost(&mut self, driver: &Driver, task: sim::TaskId, attempt: u32, job: &SlurmJob) {
        let Some(p) = driver.placements().into_iter().find(|p| p.task == task && p.attempt == attempt) else { return };
        let (node, slot) = p.gpus[0];
        let what = format!("Slurm requeued job {} itself ({})", job.job_id, job.state_reason);
        self.messages.push(what.clone());
        self.give_back.push((node, slot, what));
    }

    /// Carries out the engine's decisions (after the batch `observe` gave was applied).
    /// `record(job, attempt, restart_cnt)` stores which run carries an attempt; it is called
    /// before the command that makes the run, and nothing is done when it fails.
    pub fn act(&mut self, driver: &Driver, now: Instant, record: &mut dyn FnMut(u64, u32, u32) -> Result<(), String>) {
        if self.options.shadow {
            return;
        }
        let mut acted = BTreeSet::new();
        for p in driver.placements() {
            let Some(id) = job_id(&driver.submissions()[p.submission].request.name) else { continue };
            let Some(job) = self.mirror.jobs.get(&id).cloned() else { continue };
            acted.insert(id);
            if let Err(e) = self.carry_out(&p, id, &job, now, record) {
                self.messages.push(format!("Slurm job {id}, attempt {}: {e}", p.attempt));
            }
        }
        self.stop_what_the_engine_stopped(driver, &acted);
    }

    /// One running attempt: started in Slurm, confirmed, or given back.
    fn carry_out(
        &mut self,
        p: &Placement,
        id: u64,
        job: &SlurmJob,
        now: Instant,
        record: &mut dyn FnMut(u64, u32, u32) -> Result<(), String>,
    ) -> Result<(), String> {
        let key = (id, p.attempt);
        let names: Vec<String> = p.nodes().iter().map(|&n| self.nodes[n as usize].clone()).collect();
        let Some(&run) = self.runs.get(&key) else {
            // This attempt has no run yet: the next one of the job's.
            let run = match job.phase() {
                Phase::Held | Phase::Released => job.restart_cnt,
                Phase::Running | Phase::Ended(_) => job.restart_cnt + 1,
                Phase::Completing => return Ok(()),
            };
            record(id, p.attempt, run)?;
            self.runs.insert(key, run);
            return self.launch(key, job, run, &names, now);
        };
        if job.restart_cnt + 1 == run && matches!(job.phase(), Phase::Running | Phase::Ended(_)) {
            // The requeue that makes its run did not happen (its count did not move).
            return self.slurm.requeue_held(id);
        }
        if job.restart_cnt != run {
            return Ok(());
        }
        match job.phase() {
            Phase::Held if !self.released.contains_key(&key) => self.launch(key, job, run, &names, now),
            Phase::Held | Phase::Released => self.check_deadline(p, key, job, now),
            Phase::Running => {
                if self.released.remove(&key).is_some() {
                    let ran_on = traces::inventory::expand_hostlist(&job.nodes).unwrap_or_default();
                    if ran_on != names {
                        self.messages.push(format!(
                            "Slurm job {id} started on {} but schedlab placed it on {}",
                            ran_on.join(","),
                            names.join(",")
                        ));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Makes run `run` of the job carry the attempt: requeued held first if an earlier run
    /// holds the job, else pinned and released.
    fn launch(
        &mut self,
        key: (u64, u32),
        job: &SlurmJob,
        run: u32,
        nodes: &[String],
        now: Instant,
    ) -> Result<(), String> {
        if job.restart_cnt < run {
            return self.slurm.requeue_held(key.0);
        }
        if job.phase() == Phase::Released {
            // Released without schedlab (a pin must come first): held, pinned on the next turn.
            return self.slurm.hold(key.0);
        }
        self.slurm.pin_and_release(key.0, nodes)?;
        self.released.insert(key, now);
        self.messages.push(format!("Slurm job {} released on {} (attempt {})", key.0, nodes.join(","), key.1));
        Ok(())
    }

    /// A released attempt Slurm has not started within the deadline: held again, and given
    /// back to the engine as the failure of one of its GPUs (repaired at once), so that the
    /// policy places it anew. Only once the hold took: a job that started meanwhile runs.
    fn check_deadline(&mut self, p: &Placement, key: (u64, u32), job: &SlurmJob, now: Instant) -> Result<(), String> {
        let Some(&at) = self.released.get(&key) else { return Ok(()) };
        if now.duration_since(at) < self.options.start_deadline {
            return Ok(());
        }
        if job.phase() == Phase::Released {
            self.slurm.hold(key.0)?;
        }
        self.released.remove(&key);
        let (node, slot) = p.gpus[0];
        let what = format!(
            "Slurm did not start job {} within {:?} ({})",
            key.0, self.options.start_deadline, job.state_reason
        );
        self.messages.push(what.clone());
        self.give_back.push((node, slot, what));
        Ok(())
    }

    /// Runs the engine no longer counts (it preempted the attempt, failed it, or ended the
    /// job): stopped in Slurm, requeued held; a release not yet taken, held.
    fn stop_what_the_engine_stopped(&mut self, driver: &Driver, acted: &BTreeSet<u64>) {
        // Only jobs that hold or may take nodes: the mirror keeps every job ever seen.
        let ours: Vec<(u64, Phase, bool)> = self
            .mirror
            .jobs
            .values()
            .filter(|j| matches!(j.phase(), Phase::Running | Phase::Released))
            .filter(|j| !acted.contains(&j.job_id) && driver.find(&job_name(j.job_id)).is_some())
            .map(|j| {
                let runs = self.runs.range((j.job_id, 0)..=(j.job_id, u32::MAX));
                let counted = runs.into_iter().any(|(_, &run)| run == j.restart_cnt);
                (j.job_id, j.phase(), counted)
            })
            .collect();
        for (id, phase, counted) in ours {
            let done = match phase {
                Phase::Running if counted => self.slurm.requeue_held(id).map(|()| "requeued held"),
                // Released by schedlab for an attempt since stopped, or requeued by Slurm
                // itself (a begin time 20 minutes ahead, not held): only schedlab starts it.
                Phase::Released => self.slurm.hold(id).map(|()| "held"),
                _ => continue,
            };
            match done {
                Ok(what) => self.messages.push(format!("Slurm job {id} stopped by schedlab: {what}")),
                Err(e) => self.messages.push(format!("Slurm job {id}: cannot stop it: {e}")),
            }
        }
    }
}

/// Unix seconds now (the mirror's times are Slurm's).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
