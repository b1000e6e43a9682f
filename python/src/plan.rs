//! `schedlab.Plan`: a Python policy's decisions at one decision point, each checked by
//! `sim::Plan` as it is made (the same checks a Rust policy meets), valid for one `decide`
//! call. A refused decision raises `schedlab.PlanError` with the Plan's reason and the task
//! (or job) named.

use crate::PlanError;
use crate::call::Call;
use crate::view::{checked_job, checked_task, describe_task};
use policies::{Placement, Placer, Shape};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rand::RngExt;
use sim::{ClusterView, GpuId, NodeId, Savepoint, SimDuration, SimTime};
use std::sync::Mutex;

#[pyclass(frozen, name = "Plan", module = "schedlab")]
pub struct PlanHandle {
    pub(crate) call: Call,
    /// The savepoints taken in this call; Python gets their index.
    pub(crate) savepoints: Mutex<Vec<Savepoint>>,
}

/// The Plan's refusal as `schedlab.PlanError`: `plan.start(t3 (job "a", task "0")): <why>`.
fn refused(what: &str, subject: String, error: sim::PlanError) -> PyErr {
    PlanError::new_err(format!("plan.{what}({subject}): {error}"))
}

fn job_subject(view: &ClusterView<'_>, job: sim::JobId) -> String {
    format!("{job} (job \"{}\")", view.job_spec(job).name.as_str())
}

/// The placer `plan.place` uses: the kit's, as the built-in policies' `placement` and
/// `avoid_failed_h` parameters set it.
fn placer(placement: &str, avoid_failed_h: f64) -> PyResult<Placer> {
    let kind: Placement =
        placement.parse().map_err(|e| PyValueError::new_err(format!("placement `{placement}`: {e}")))?;
    if !(avoid_failed_h.is_finite() && (0.0..=1e6).contains(&avoid_failed_h)) {
        return Err(PyValueError::new_err(format!("avoid_failed_h={avoid_failed_h}: expected 0..=1000000 hours")));
    }
    Ok(Placer { kind, avoid_failed_for: SimDuration((avoid_failed_h * 3_600_000.0).round() as u64) })
}

#[pymethods]
impl PlanHandle {
    /// Simulated time now, in milliseconds.
    #[getter]
    fn now(&self) -> PyResult<u64> {
        self.call.with(|_, plan| Ok(plan.now().as_ms()))
    }

    /// Starts the task on exactly these GPUs (all free, one pool, one node if it asks).
    fn start(&self, task_id: u32, gpus: Vec<u32>) -> PyResult<()> {
        self.call.with(|view, plan| {
            let task = checked_task(view, task_id)?;
            let gpus: Vec<GpuId> = gpus.into_iter().map(GpuId).collect();
            plan.start(task, &gpus).map_err(|e| refused("start", describe_task(view, task), e))
        })
    }

    /// Starts several tasks of one job at once, each on its GPUs, all or none: how the tasks
    /// of a co-start job (`view.job_co_start(job)`) start, every waiting one named.
    fn start_together(&self, starts: Vec<(u32, Vec<u32>)>) -> PyResult<()> {
        self.call.with(|view, plan| {
            let mut tasks = Vec::with_capacity(starts.len());
            for (task_id, gpus) in &starts {
                tasks.push((checked_task(view, *task_id)?, gpus.iter().copied().map(GpuId).collect::<Vec<_>>()));
            }
            let named: Vec<(sim::TaskId, &[GpuId])> = tasks.iter().map(|(t, g)| (*t, g.as_slice())).collect();
            plan.start_together(&named).map_err(|e| {
                let subject = named.iter().map(|&(t, _)| describe_task(view, t)).collect::<Vec<_>>().join(", ");
                refused("start_together", subject, e)
            })
        })
    }

    /// Preempts a running task (`reason` goes to the decision log).
    #[pyo3(signature = (task_id, reason = String::new()))]
    fn preempt(&self, task_id: u32, reason: String) -> PyResult<()> {
        self.call.with(|view, plan| {
            let task = checked_task(view, task_id)?;
            plan.preempt_for(task, reason).map_err(|e| refused("preempt", describe_task(view, task), e))
        })
    }

    /// Rejects a waiting job: it ends `rejected` with `reason`.
    #[pyo3(signature = (job_id, reason = String::new()))]
    fn reject(&self, job_id: u32, reason: String) -> PyResult<()> {
        self.call.with(|view, plan| {
            let job = checked_job(view, job_id)?;
            plan.reject(job, reason).map_err(|e| refused("reject", job_subject(view, job), e))
        })
    }

    /// Asks to be called again at `at_ms` even if nothing happens then.
    fn wake_at(&self, at_ms: u64) -> PyResult<()> {
        self.call.with(|_, plan| plan.wake_at(SimTime(at_ms)).map_err(|e| refused("wake_at", at_ms.to_string(), e)))
    }

    /// The GPUs the built-in policies' placement would give the task on what is free now
    /// (after this plan's decisions so far), or None when it does not fit. `placement` and
    /// `avoid_failed_h` are the built-in policies' parameters of those names.
    #[pyo3(signature = (task_id, placement = "pack", avoid_failed_h = 0.0))]
    fn place(&self, task_id: u32, placement: &str, avoid_failed_h: f64) -> PyResult<Option<Vec<u32>>> {
        let placer = placer(placement, avoid_failed_h)?;
        self.call.with(|view, plan| {
            let shape = Shape::of(view.task(checked_task(view, task_id)?));
            Ok(placer.place(shape, view, plan.free()).map(|gpus| gpus.into_iter().map(|g| g.0).collect()))
        })
    }

    /// Free GPUs in the whole cluster now, after this plan's decisions so far.
    #[getter]
    fn free_gpus(&self) -> PyResult<u32> {
        self.call.with(|_, plan| Ok(plan.free().total()))
    }

    /// Free GPUs on a node now, after this plan's decisions so far.
    fn free_on(&self, node: u32) -> PyResult<u32> {
        self.call.with(|view, plan| {
            if node as usize >= view.cluster().nodes().len() {
                return Err(PyValueError::new_err(format!(
                    "no node {node}: node ids are 0..{}",
                    view.cluster().nodes().len()
                )));
            }
            Ok(plan.free().on_node(NodeId(node)))
        })
    }

    /// Whether the task's queue quota lets it start now (GPUs aside).
    fn quota_allows(&self, task_id: u32) -> PyResult<bool> {
        self.call.with(|view, plan| Ok(plan.quota_allows(checked_task(view, task_id)?)))
    }

    /// A number in [0, 1) from the policy's own random stream ("policy:<name>" under the run
    /// seed): the one randomness that keeps a run reproducible.
    fn random(&self) -> PyResult<f64> {
        self.call.with(|_, plan| Ok(plan.rng().random::<f64>()))
    }

    /// A point to roll this plan back to (an integer, good for this call).
    fn savepoint(&self) -> PyResult<usize> {
        let point = self.call.with(|_, plan| Ok(plan.savepoint()))?;
        let mut taken = self.savepoints.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        taken.push(point);
        Ok(taken.len() - 1)
    }

    /// Undoes every decision made after `savepoint` (what `savepoint()` returned).
    fn rollback(&self, savepoint: usize) -> PyResult<()> {
        let point = self.savepoints.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(savepoint).copied();
        let point = point.ok_or_else(|| PyValueError::new_err(format!("no savepoint {savepoint} in this plan")))?;
        self.call.with(|_, plan| {
            plan.rollback(point);
            Ok(())
        })
    }
}
