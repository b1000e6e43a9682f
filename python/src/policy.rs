//! A policy written in Python, as a `sim::Policy`: an object with `decide(self, view, plan)`
//! and, optionally, `needs_estimates` (a bool or a method returning one).
//!
//! `decide` cannot return an error to the engine, so an exception raised in Python is kept and
//! the run winds down: from then on every job that can be is rejected, so the run ends soon,
//! and the caller turns the kept exception into the run's error ([`PyPolicy::take_error`],
//! [`as_python_prints`]). Nothing panics.

use crate::call::Call;
use crate::plan::PlanHandle;
use crate::view::View;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use sim::{Change, ClusterView, JobId, Plan, Policy, TaskId};
use std::collections::BTreeSet;
use std::sync::Mutex;

pub struct PyPolicy {
    /// The object's bound `decide` method, looked up once.
    decide: Py<PyAny>,
    name: String,
    needs_estimates: bool,
    /// The first exception `decide` raised.
    error: Option<PyErr>,
    /// After an error: jobs still to reject (arrived, not ended).
    doomed: BTreeSet<JobId>,
}

impl PyPolicy {
    /// `object` with the run's name for it (`fifo.py:Fifo`: the file and the class, or the
    /// object's `name`): it names the policy's random stream and the summary's `policy`.
    pub fn new(object: &Bound<'_, PyAny>, name: String) -> PyResult<PyPolicy> {
        let decide = object.getattr("decide").ok().filter(|d| d.is_callable()).ok_or_else(|| {
            PyTypeError::new_err(format!("policy {name}: the object has no decide(view, plan) method"))
        })?;
        let needs_estimates = match object.getattr_opt("needs_estimates")? {
            None => false,
            Some(value) if value.is_callable() => value.call0()?.extract()?,
            Some(value) => value.extract()?,
        };
        Ok(PyPolicy { decide: decide.unbind(), name, needs_estimates, error: None, doomed: BTreeSet::new() })
    }

    /// The exception `decide` raised, if it raised one.
    pub fn take_error(&mut self) -> Option<PyErr> {
        self.error.take()
    }

    /// Calls Python's `decide` with handles valid for this call only.
    fn call_python(&self, view: &ClusterView<'_>, plan: &mut Plan<'_>) -> PyResult<()> {
        Python::attach(|py| {
            let (call, _closes) = Call::open(view, plan);
            let view = Py::new(py, View { call: call.clone() })?;
            let plan = Py::new(py, PlanHandle { call, savepoints: Mutex::default() })?;
            self.decide.call1(py, (view, plan)).map(drop)
        })
    }

    /// Rejects what can be rejected, so that a run whose policy failed ends soon.
    fn wind_down(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        for change in view.changes() {
            if let Change::TaskReady(t) | Change::TaskPreempted(t) | Change::TaskFailed(t) | Change::TaskFinished(t) =
                *change
            {
                self.doomed.insert(view.task(t).job);
            }
        }
        self.doomed.retain(|&job| {
            let ended = view.job(job).outcome.is_some();
            !ended && plan.reject(job, "the Python policy raised an exception").is_err()
        });
    }

    /// Every job in the system when `decide` first failed. Jobs that have left the run are
    /// skipped (a job leaves whole, so the next task held is its job's first).
    fn doom_all(&mut self, view: &ClusterView<'_>) {
        let mut task = 0;
        while task < view.task_count() {
            if !view.holds_task(TaskId(task as u32)) {
                task += 1;
                continue;
            }
            let job = view.task(TaskId(task as u32)).job;
            let state = view.job(job);
            if state.in_system() {
                self.doomed.insert(job);
            }
            task += state.task_count.max(1) as usize;
        }
    }
}

/// The exception as Python prints it (`traceback.format_exception`: the traceback, chained
/// causes, the message), or its bare message if even that fails.
pub fn as_python_prints(py: Python<'_>, error: &PyErr) -> String {
    let formatted = (|| -> PyResult<String> {
        let (kind, value, traceback) = (error.get_type(py), error.value(py), error.traceback(py));
        let lines = py.import("traceback")?.call_method1("format_exception", (kind, value, traceback))?;
        Ok(lines.extract::<Vec<String>>()?.concat())
    })();
    formatted.unwrap_or_else(|_| error.to_string())
}

impl Policy for PyPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        if self.error.is_none()
            && let Err(error) = self.call_python(view, plan)
        {
            self.error = Some(error);
            self.doom_all(view);
        }
        if self.error.is_some() {
            self.wind_down(view, plan);
        }
    }

    fn needs_estimates(&self) -> bool {
        self.needs_estimates
    }
}
