//! `schedlab._native`: what the Python package (python/schedlab/__init__.py) calls. Runs
//! release the GIL; a Python policy takes it back for each `decide` call.

mod call;
mod plan;
mod policy;
mod runs;
mod schema;
mod view;

use policy::PyPolicy;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    schedlab,
    PlanError,
    PyValueError,
    "A decision the Plan refused: the rule it broke, with the task or job named."
);
create_exception!(
    schedlab,
    RunError,
    PyRuntimeError,
    "A run that could not be set up or did not finish: bad settings, a bad trace, or an exception raised by a Python \
     policy (its traceback in the message)."
);

/// Runs the RunSpec spelled by `spec_json`, with `policy` (a Python object with
/// `decide(view, plan)`, named `policy_name` in the run) in place of the spec's policy when
/// given. Returns summary.json, jobs.csv, tasks.csv, timeseries.csv (and decisions.csv when
/// the spec keeps decisions) as bytes, and the trace's notes.
#[pyfunction]
#[pyo3(signature = (spec_json, policy = None, policy_name = None, force = false))]
fn simulate<'py>(
    py: Python<'py>,
    spec_json: &str,
    policy: Option<Bound<'py, PyAny>>,
    policy_name: Option<String>,
    force: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = runs::parse_spec(spec_json)?;
    let (outcome, notes) = match policy {
        None => py.detach(|| runs::simulate(&spec, None, force)),
        Some(object) => {
            let mut policy = PyPolicy::new(&object, policy_name.unwrap_or_else(|| "python".to_string()))?;
            let ran = py.detach(|| runs::simulate(&spec, Some(&mut policy), force));
            if let Some(error) = policy.take_error() {
                return Err(decide_raised(py, sim::Policy::name(&policy), error));
            }
            ran
        }
    }
    .map_err(RunError::new_err)?;
    let tables = py.detach(|| runs::tables(&outcome, spec.decisions)).map_err(RunError::new_err)?;
    let out = PyDict::new(py);
    out.set_item("summary", PyBytes::new(py, &tables.summary_json))?;
    out.set_item("jobs", PyBytes::new(py, &tables.jobs_csv))?;
    out.set_item("tasks", PyBytes::new(py, &tables.tasks_csv))?;
    out.set_item("timeseries", PyBytes::new(py, &tables.timeseries_csv))?;
    out.set_item("decisions", tables.decisions_csv.map(|csv| PyBytes::new(py, &csv)))?;
    out.set_item("digest", &outcome.summary.digest)?;
    out.set_item("notes", notes)?;
    Ok(out)
}

/// The run's error for an exception `decide` raised: RunError with the exception as Python
/// prints it (traceback included) and the exception as its cause. Ctrl-C stays itself.
fn decide_raised(py: Python<'_>, policy: &str, error: PyErr) -> PyErr {
    if error.is_instance_of::<PyKeyboardInterrupt>(py) {
        return error;
    }
    let text = policy::as_python_prints(py, &error);
    let run_error = RunError::new_err(format!("policy {policy}: decide raised an exception:\n{text}"));
    run_error.set_cause(py, Some(error));
    run_error
}

/// Runs every RunSpec of `specs_json` in parallel (the GIL released), on `threads` threads or
/// one per core. Returns sweep.csv as bytes. `force` as for `simulate`.
#[pyfunction]
#[pyo3(signature = (specs_json, threads = None, force = false))]
fn sweep<'py>(
    py: Python<'py>,
    specs_json: Vec<String>,
    threads: Option<usize>,
    force: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let specs = specs_json.iter().map(|json| runs::parse_spec(json)).collect::<PyResult<Vec<_>>>()?;
    let csv = py.detach(|| runs::sweep(&specs, threads, force)).map_err(RunError::new_err)?;
    Ok(PyBytes::new(py, &csv))
}

/// Reads a trace with the importer for `format`: its tasks as a canonical jobs.csv (bytes), its
/// cluster as cluster.csv (bytes, or None), and the importer's notes.
#[pyfunction]
fn read_trace<'py>(py: Python<'py>, path: std::path::PathBuf, format: &str) -> PyResult<Bound<'py, PyDict>> {
    let format: traces::Format = format.parse().map_err(|e: traces::TraceError| RunError::new_err(e.to_string()))?;
    let trace = py.detach(|| traces::load(&path, format)).map_err(|e| RunError::new_err(e.to_string()))?;
    let mut jobs = Vec::new();
    traces::write_trace_jobs_csv(&trace.workload, &mut jobs).map_err(|e| RunError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    out.set_item("tasks", PyBytes::new(py, &jobs))?;
    let cluster = match &trace.cluster {
        Some(spec) => {
            let mut csv = Vec::new();
            traces::write_cluster_csv(spec, &mut csv).map_err(|e| RunError::new_err(e.to_string()))?;
            Some(PyBytes::new(py, &csv))
        }
        None => None,
    };
    out.set_item("cluster", cluster)?;
    out.set_item("notes", trace.notes.clone())?;
    Ok(out)
}

/// Why `spec_json`'s seed can change nothing a built-in policy sees (in Python's keywords, as
/// `RunSpec::idle_seed_reason` gives it in the CLI's flags), or None when it feeds something.
#[pyfunction]
fn idle_seed_reason(spec_json: &str) -> PyResult<Option<String>> {
    let reason = runs::parse_spec(spec_json)?.idle_seed_reason();
    Ok(reason.map(|r| {
        r.replace("--failures events:", "failures=\"events:...\"")
            .replace("--failures", "failures=")
            .replace("--trace", "trace=")
    }))
}

/// sweep.csv's columns with their types (`int`, `float`, `str`, `bool`), from the writer's
/// header and the summary's fields.
#[pyfunction]
fn sweep_schema() -> PyResult<Vec<(String, &'static str)>> {
    schema::sweep_schema().map_err(RunError::new_err)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_function(wrap_pyfunction!(simulate, module)?)?;
    module.add_function(wrap_pyfunction!(sweep, module)?)?;
    module.add_function(wrap_pyfunction!(read_trace, module)?)?;
    module.add_function(wrap_pyfunction!(idle_seed_reason, module)?)?;
    module.add_function(wrap_pyfunction!(sweep_schema, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<view::View>()?;
    module.add_class::<plan::PlanHandle>()?;
    module.add("PlanError", py.get_type::<PlanError>())?;
    module.add("RunError", py.get_type::<RunError>())?;
    Ok(())
}
