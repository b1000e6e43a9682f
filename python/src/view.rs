//! `schedlab.View`: what a Python policy reads at a decision point (`sim::ClusterView`), valid
//! for one `decide` call. Times are integer milliseconds of simulated time, ids are integers.

use crate::call::Call;
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sim::{Change, ClusterView, DurationSource, JobId, TaskId, TaskState};

#[pyclass(frozen, name = "View", module = "schedlab")]
pub struct View {
    pub(crate) call: Call,
}

/// The task `id`, or Python's IndexError naming the ids there are.
pub(crate) fn checked_task(view: &ClusterView<'_>, id: u32) -> PyResult<TaskId> {
    if view.holds_task(TaskId(id)) {
        Ok(TaskId(id))
    } else {
        Err(PyIndexError::new_err(format!(
            "no task {id} in the run (tasks joined so far: {}; a job's tasks leave once it has ended)",
            view.task_count()
        )))
    }
}

/// The job `id`, or Python's IndexError naming the ids there are.
pub(crate) fn checked_job(view: &ClusterView<'_>, id: u32) -> PyResult<JobId> {
    if view.holds_job(JobId(id)) {
        Ok(JobId(id))
    } else {
        Err(PyIndexError::new_err(format!(
            "no job {id} in the run (jobs joined so far: {}; a job leaves once it has ended)",
            view.job_count()
        )))
    }
}

/// `t12 (job "name", task "name")`: how a task is named in errors raised to Python.
pub(crate) fn describe_task(view: &ClusterView<'_>, task: TaskId) -> String {
    if task.index() >= view.task_count() {
        return task.to_string();
    }
    let job = view.task(task).job;
    let spec = view.job_spec(job);
    let in_job = task.0 - view.job(job).first_task.0;
    let name = spec.tasks.get(in_job as usize).map_or("", |t| t.name.as_str());
    format!("{task} (job \"{}\", task \"{name}\")", spec.name.as_str())
}

fn task_state<'v>(view: &'v ClusterView<'v>, id: u32) -> PyResult<&'v TaskState> {
    Ok(view.task(checked_task(view, id)?))
}

fn source(name: &str) -> PyResult<DurationSource> {
    match name {
        "oracle" => Ok(DurationSource::Oracle),
        "estimate" => Ok(DurationSource::Estimate),
        _ => Err(PyValueError::new_err(format!("duration source `{name}`: expected oracle or estimate"))),
    }
}

#[pymethods]
impl View {
    /// Simulated time now, in milliseconds.
    #[getter]
    fn now(&self) -> PyResult<u64> {
        self.call.with(|view, _| Ok(view.now().as_ms()))
    }

    /// What happened since the previous call, in order: a list of `(kind, id)` with kind one
    /// of "ready", "started", "preempted", "finished", "failed" (a task id) or "job_ended"
    /// (a job id). A "failed" task waits to start again when `startable(id)` is true.
    #[getter]
    fn changes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.call.with(|view, _| {
            let kinds = [
                intern!(py, "ready"),
                intern!(py, "started"),
                intern!(py, "preempted"),
                intern!(py, "finished"),
                intern!(py, "failed"),
                intern!(py, "job_ended"),
            ];
            let items = view.changes().iter().map(|change| {
                let (kind, id) = match *change {
                    Change::TaskReady(t) => (0, t.0),
                    Change::TaskStarted(t) => (1, t.0),
                    Change::TaskPreempted(t) => (2, t.0),
                    Change::TaskFinished(t) => (3, t.0),
                    Change::TaskFailed(t) => (4, t.0),
                    Change::JobEnded(j) => (5, j.0),
                };
                PyTuple::new(py, [kinds[kind].clone().into_any(), id.into_pyobject(py)?.into_any()])
            });
            PyList::new(py, items.collect::<PyResult<Vec<_>>>()?)
        })
    }

    #[getter]
    fn task_count(&self) -> PyResult<usize> {
        self.call.with(|view, _| Ok(view.task_count()))
    }

    #[getter]
    fn job_count(&self) -> PyResult<u32> {
        self.call.with(|view, _| Ok(view.job_count() as u32))
    }

    #[getter]
    fn gpu_count(&self) -> PyResult<u32> {
        self.call.with(|view, _| Ok(view.cluster().gpu_count()))
    }

    #[getter]
    fn node_count(&self) -> PyResult<usize> {
        self.call.with(|view, _| Ok(view.cluster().nodes().len()))
    }

    /// The node a GPU is on.
    fn node_of(&self, gpu: u32) -> PyResult<u32> {
        self.call.with(|view, _| {
            if gpu >= view.cluster().gpu_count() {
                return Err(PyIndexError::new_err(format!(
                    "no GPU {gpu}: GPU ids are 0..{}",
                    view.cluster().gpu_count()
                )));
            }
            Ok(view.cluster().node_of(sim::GpuId(gpu)).0)
        })
    }

    /// GPUs the task's gang needs.
    fn task_gpus(&self, task_id: u32) -> PyResult<u32> {
        self.call.with(|view, _| Ok(task_state(view, task_id)?.gpus))
    }

    fn task_job(&self, task_id: u32) -> PyResult<u32> {
        self.call.with(|view, _| Ok(task_state(view, task_id)?.job.0))
    }

    /// pending, ready, running, preempted, retrying, succeeded, failed, unschedulable or
    /// skipped.
    fn task_status(&self, task_id: u32) -> PyResult<&'static str> {
        self.call.with(|view, _| Ok(task_state(view, task_id)?.status.as_str()))
    }

    /// Whether the task waits for GPUs now (ready, preempted, or retrying after a failure).
    fn startable(&self, task_id: u32) -> PyResult<bool> {
        self.call.with(|view, _| Ok(task_state(view, task_id)?.status.is_startable()))
    }

    /// The task's whole duration in milliseconds, by "oracle" (the truth) or "estimate".
    #[pyo3(signature = (task_id, source = "oracle"))]
    fn expected_duration(&self, task_id: u32, source: &str) -> PyResult<u64> {
        let source = self::source(source)?;
        self.call.with(|view, _| Ok(view.expected_duration(checked_task(view, task_id)?, source).as_ms()))
    }

    /// Work left in milliseconds, by "oracle" or "estimate".
    #[pyo3(signature = (task_id, source = "oracle"))]
    fn expected_remaining(&self, task_id: u32, source: &str) -> PyResult<u64> {
        let source = self::source(source)?;
        self.call.with(|view, _| Ok(view.expected_remaining(checked_task(view, task_id)?, source).as_ms()))
    }

    /// The task's ids in its job.
    fn job_tasks(&self, job_id: u32) -> PyResult<Vec<u32>> {
        self.call.with(|view, _| Ok(view.job(checked_job(view, job_id)?).tasks().map(|t| t.0).collect()))
    }

    /// The job's name in the trace.
    fn job_name(&self, job_id: u32) -> PyResult<String> {
        self.call.with(|view, _| Ok(view.job_spec(checked_job(view, job_id)?).name.to_string()))
    }

    /// When the job was submitted, in milliseconds.
    fn job_submit(&self, job_id: u32) -> PyResult<u64> {
        self.call.with(|view, _| Ok(view.job_spec(checked_job(view, job_id)?).submit.as_ms()))
    }

    fn job_priority(&self, job_id: u32) -> PyResult<i32> {
        self.call.with(|view, _| Ok(view.job_spec(checked_job(view, job_id)?).priority))
    }

    /// Whether the job's tasks start together (a co-start job: `plan.start_together`).
    fn job_co_start(&self, job_id: u32) -> PyResult<bool> {
        self.call.with(|view, _| Ok(view.job_spec(checked_job(view, job_id)?).co_start))
    }

    /// The job's queue name in the trace, if any.
    fn job_queue(&self, job_id: u32) -> PyResult<Option<String>> {
        self.call.with(|view, _| Ok(view.job_spec(checked_job(view, job_id)?).queue.as_ref().map(|q| q.to_string())))
    }

    /// `t12 (job "name", task "name")`.
    fn describe(&self, task_id: u32) -> PyResult<String> {
        self.call.with(|view, _| Ok(describe_task(view, checked_task(view, task_id)?)))
    }
}
