//! What a report reads: a run folder (`schedlab simulate --out`) or a sweep folder (`schedlab
//! sweep --out`, whose sweep.json lists its run folders). summary.json and jobs.csv are
//! required; timeseries.csv, queue_timeseries.csv and tasks.csv are optional (older run
//! folders lack them) and the charts that need them are left out with a note.
//!
//! Bad input is an error naming the file, the line and the field, never a panic.

use crate::sweep::{SYNTHETIC_TRACE, read_sweep_json};
use csv::ByteRecord;
use std::path::Path;

/// One job of jobs.csv, as the report needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub queue: String,
    /// JCT of a finished job; None otherwise.
    pub jct_s: Option<f64>,
    /// First start - submit; None for a job that never started.
    pub queue_s: Option<f64>,
    /// GPUs of all its tasks.
    pub gpus: f64,
    /// End - first start; None unless it started and ended.
    pub run_s: Option<f64>,
    /// Attempts ended by failures or preemptions; None in run folders written before the
    /// column existed.
    pub interruptions: Option<f64>,
}

/// One fixed-width bucket of timeseries.csv: GPU and task columns are time-averages over the
/// bucket, arrivals/completions/failures counts of events in it, lost_gpu_h the GPU-hours lost
/// by attempts that ended in it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bucket {
    pub start_s: f64,
    pub end_s: f64,
    pub capacity_gpus: f64,
    pub allocated_gpus: f64,
    pub stalled_gpus: f64,
    pub failed_gpus: f64,
    pub waiting_tasks: f64,
    pub running_tasks: f64,
    pub arrivals: f64,
    pub completions: f64,
    pub failures: f64,
    pub lost_gpu_h: f64,
}

/// The columns of timeseries.csv, in `Bucket`'s field order.
pub const TIMESERIES_COLUMNS: [&str; 12] = [
    "start_s",
    "end_s",
    "capacity_gpus",
    "allocated_gpus",
    "stalled_gpus",
    "failed_gpus",
    "waiting_tasks",
    "running_tasks",
    "arrivals",
    "completions",
    "failures",
    "lost_gpu_h",
];

/// One (bucket, queue) row of queue_timeseries.csv.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueBucket {
    pub start_s: f64,
    pub end_s: f64,
    /// The job's queue name, `-` when none.
    pub queue: String,
    pub allocated_gpus: f64,
    pub waiting_tasks: f64,
    pub running_tasks: f64,
}

pub const QUEUE_TIMESERIES_COLUMNS: [&str; 6] =
    ["start_s", "end_s", "queue", "allocated_gpus", "waiting_tasks", "running_tasks"];

/// One task of tasks.csv (for Gantt charts of DAG jobs).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The trace's job id (`job_id`, as in jobs.csv).
    pub job: String,
    /// The simulator's number of the task (`task_index`).
    pub task: u64,
    /// The trace's task id (`task_id`).
    pub name: String,
    pub state: String,
    pub first_start_s: Option<f64>,
    pub finish_s: Option<f64>,
    pub gpus: f64,
    /// The tasks of the same job it depends on.
    pub depends_on: Vec<Upstream>,
}

/// One dependency of a task, as tasks.csv's `depends_on` spells it: `task` or `task:kind`.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// The upstream's task id.
    pub task: String,
    /// `any`, `failure`, `data=SECONDS`, `checkpoint=N`; None for the default, success.
    pub kind: Option<String>,
}

pub const TASKS_COLUMNS: [&str; 9] =
    ["job_id", "task_id", "job_index", "task_index", "state", "first_start_s", "finish_s", "gpus", "depends_on"];

/// One run: where it came from, its summary and its tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The run folder as the report names it (relative to the report's input folder).
    pub dir: String,
    /// The trace as the sweep gave it; `run` for a lone run folder.
    pub trace: String,
    /// The policy as given (a sweep's spec with the grid applied; a lone run's full policy).
    pub spec: String,
    pub seed: u64,
    /// summary.json, key by key, in file order.
    pub summary: serde_json::Map<String, serde_json::Value>,
    pub jobs: Vec<Job>,
    pub timeseries: Option<Vec<Bucket>>,
    pub queue_timeseries: Option<Vec<QueueBucket>>,
    pub tasks: Option<Vec<Task>>,
}

impl Run {
    /// A numeric summary key; None when absent or not a number.
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.summary.get(key)?.as_f64()
    }

    /// A short name for the trace: its file name.
    pub fn trace_name(&self) -> String {
        Path::new(&self.trace).file_name().map_or(self.trace.clone(), |n| n.to_string_lossy().into_owned())
    }
}

/// Whether the report is of one run or of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Run,
    Sweep,
}

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub source: Source,
    /// The folder's name, for the title.
    pub name: String,
    pub runs: Vec<Run>,
}

/// Reads a run folder or a sweep folder.
pub fn load(dir: &Path) -> Result<Input, String> {
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string());
    if dir.join("sweep.json").is_file() {
        let text = read_text(&dir.join("sweep.json"))?;
        let manifest = read_sweep_json(&text).map_err(|e| format!("{}: {e}", dir.join("sweep.json").display()))?;
        let mut runs = Vec::with_capacity(manifest.runs.len());
        for r in &manifest.runs {
            let trace = if r.trace.is_empty() { SYNTHETIC_TRACE.to_string() } else { r.trace.clone() };
            runs.push(load_run(&dir.join(&r.dir), r.dir.clone(), trace, Some((r.label(), r.seed)))?);
        }
        if runs.is_empty() {
            return Err(format!("{}: the sweep holds no runs", dir.join("sweep.json").display()));
        }
        Ok(Input { source: Source::Sweep, name, runs })
    } else if dir.join("summary.json").is_file() {
        // A lone run is named by its folder (`out/philly-sjf`: philly-sjf), where a sweep
        // names each run's trace.
        let run = load_run(dir, name.clone(), name.clone(), None)?;
        Ok(Input { source: Source::Run, name, runs: vec![run] })
    } else if dir.is_dir() {
        Err(format!(
            "{}: neither a run folder (summary.json, written by `schedlab simulate --out`) nor a sweep folder \
             (sweep.json, written by `schedlab sweep --out`)",
            dir.display()
        ))
    } else {
        Err(format!("{}: no such folder", dir.display()))
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// One run folder. `given` is the sweep's (spec, seed) for the run; a lone run takes both
/// from its summary.
fn load_run(dir: &Path, label: String, trace: String, given: Option<(String, u64)>) -> Result<Run, String> {
    let summary_path = dir.join("summary.json");
    let text = read_text(&summary_path)?;
    let summary: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", summary_path.display()))?;
    let (spec, seed) = match given {
        Some(given) => given,
        None => {
            let policy = summary
                .get("policy")
                .and_then(|p| p.as_str())
                .ok_or_else(|| format!("{}: field `policy`: expected a string", summary_path.display()))?;
            let seed = summary
                .get("seed")
                .and_then(|s| s.as_u64())
                .ok_or_else(|| format!("{}: field `seed`: expected a whole number", summary_path.display()))?;
            (policy.to_string(), seed)
        }
    };
    let jobs_path = dir.join("jobs.csv");
    if !jobs_path.is_file() {
        return Err(format!("{}: missing (every run folder has one)", jobs_path.display()));
    }
    Ok(Run {
        dir: label,
        trace,
        spec,
        seed,
        summary,
        jobs: read_jobs(&jobs_path)?,
        timeseries: optional(&dir.join("timeseries.csv"), read_timeseries)?,
        queue_timeseries: optional(&dir.join("queue_timeseries.csv"), read_queue_timeseries)?,
        tasks: optional(&dir.join("tasks.csv"), read_tasks)?,
    })
}

fn optional<T>(path: &Path, read: fn(&Path) -> Result<T, String>) -> Result<Option<T>, String> {
    if path.is_file() { read(path).map(Some) } else { Ok(None) }
}

/// One CSV row with the positions of the columns asked for, for field-level errors.
pub struct Fields<'a> {
    path: &'a Path,
    line: u64,
    names: &'a [&'a str],
    /// Where each asked-for column is in the record; None: an optional one the file lacks.
    columns: &'a [Option<usize>],
    record: &'a ByteRecord,
}

impl Fields<'_> {
    /// The `i`-th asked-for column's field as text (empty for an optional column the file
    /// lacks).
    pub fn text(&self, i: usize) -> Result<&str, String> {
        let Some(column) = self.columns[i] else { return Ok("") };
        let bytes = self.record.get(column).ok_or_else(|| self.error(i, "a value", "nothing"))?;
        std::str::from_utf8(bytes).map_err(|_| self.error(i, "UTF-8 text", "invalid bytes"))
    }

    /// A finite number.
    pub fn number(&self, i: usize) -> Result<f64, String> {
        let text = self.text(i)?;
        match text.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(n),
            _ => Err(self.error(i, "a number", &format!("`{text}`"))),
        }
    }

    /// A number, or None for an empty field.
    pub fn optional_number(&self, i: usize) -> Result<Option<f64>, String> {
        if self.text(i)?.trim().is_empty() { Ok(None) } else { self.number(i).map(Some) }
    }

    pub fn whole(&self, i: usize) -> Result<u64, String> {
        let text = self.text(i)?;
        text.trim().parse::<u64>().map_err(|_| self.error(i, "a whole number", &format!("`{text}`")))
    }

    /// An error for the `i`-th asked-for column of this row: `file:line: field `name`: expected
    /// EXPECTED, got GOT`.
    pub fn error(&self, i: usize, expected: &str, got: &str) -> String {
        format!(
            "{}:{}: field `{}`: expected {expected}, got {got}",
            self.path.display(),
            self.line,
            self.names[i].trim_start_matches('?')
        )
    }
}

/// Reads `path`, calling `row` on each record with the `columns` asked for (by name, in any
/// order in the file; other columns are ignored; a name starting with `?` is optional, read as
/// empty where the file lacks it).
pub fn read_csv(
    path: &Path,
    columns: &[&str],
    mut row: impl FnMut(&Fields<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(std::io::BufReader::new(file));
    let header = reader.byte_headers().map_err(|e| csv_error(path, &e))?.clone();
    let positions: Vec<Option<usize>> = columns
        .iter()
        .map(|name| {
            if let Some(optional) = name.strip_prefix('?') {
                return Ok(header.iter().position(|h| h == optional.as_bytes()));
            }
            header.iter().position(|h| h == name.as_bytes()).map(Some).ok_or_else(|| {
                let found: Vec<String> = header.iter().map(|h| String::from_utf8_lossy(h).into_owned()).collect();
                format!("{}:1: no `{name}` column (the header is `{}`)", path.display(), found.join(","))
            })
        })
        .collect::<Result<_, _>>()?;
    let mut record = ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {
                let line = record.position().map_or(0, |p| p.line());
                row(&Fields { path, line, names: columns, columns: &positions, record: &record })?;
            }
            Err(e) => return Err(csv_error(path, &e)),
        }
    }
}

fn csv_error(path: &Path, e: &csv::Error) -> String {
    match e.position() {
        Some(p) => format!("{}:{}: {e}", path.display(), p.line()),
        None => format!("{}: {e}", path.display()),
    }
}

pub fn read_jobs(path: &Path) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    read_csv(path, &["queue", "jct_s", "queue_s", "gpus", "run_s", "?interruptions"], |f| {
        jobs.push(Job {
            queue: f.text(0)?.to_string(),
            jct_s: f.optional_number(1)?,
            queue_s: f.optional_number(2)?,
            gpus: f.number(3)?,
            run_s: f.optional_number(4)?,
            interruptions: f.optional_number(5)?,
        });
        Ok(())
    })?;
    Ok(jobs)
}

pub fn read_timeseries(path: &Path) -> Result<Vec<Bucket>, String> {
    let mut buckets = Vec::new();
    read_csv(path, &TIMESERIES_COLUMNS, |f| {
        let v: Vec<f64> = (0..TIMESERIES_COLUMNS.len()).map(|i| f.number(i)).collect::<Result<_, _>>()?;
        buckets.push(Bucket {
            start_s: v[0],
            end_s: v[1],
            capacity_gpus: v[2],
            allocated_gpus: v[3],
            stalled_gpus: v[4],
            failed_gpus: v[5],
            waiting_tasks: v[6],
            running_tasks: v[7],
            arrivals: v[8],
            completions: v[9],
            failures: v[10],
            lost_gpu_h: v[11],
        });
        Ok(())
    })?;
    Ok(buckets)
}

pub fn read_queue_timeseries(path: &Path) -> Result<Vec<QueueBucket>, String> {
    let mut rows = Vec::new();
    read_csv(path, &QUEUE_TIMESERIES_COLUMNS, |f| {
        rows.push(QueueBucket {
            start_s: f.number(0)?,
            end_s: f.number(1)?,
            queue: f.text(2)?.to_string(),
            allocated_gpus: f.number(3)?,
            waiting_tasks: f.number(4)?,
            running_tasks: f.number(5)?,
        });
        Ok(())
    })?;
    Ok(rows)
}

pub fn read_tasks(path: &Path) -> Result<Vec<Task>, String> {
    let mut tasks = Vec::new();
    read_csv(path, &TASKS_COLUMNS, |f| {
        let depends = f.text(8)?;
        // `name` or `name:kind`; a task others depend on has no `:` in its name.
        let upstream = |item: &str| match item.split_once(':') {
            Some((task, kind)) => Upstream { task: task.to_string(), kind: Some(kind.to_string()) },
            None => Upstream { task: item.to_string(), kind: None },
        };
        tasks.push(Task {
            job: f.text(0)?.to_string(),
            task: f.whole(3)?,
            name: f.text(1)?.to_string(),
            state: f.text(4)?.to_string(),
            first_start_s: f.optional_number(5)?,
            finish_s: f.optional_number(6)?,
            gpus: f.number(7)?,
            depends_on: depends.split(';').map(str::trim).filter(|d| !d.is_empty()).map(upstream).collect(),
        });
        Ok(())
    })?;
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("schedlab-report-input-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_garbled_field_names_file_line_and_column() {
        let dir = scratch("garbled");
        let path = write(
            &dir,
            "timeseries.csv",
            &format!("{}\n0,60,8,4,0,0,1,2,1,0,0,0\n60,120,8,x,0,0,1,2,1,0,0,0\n", TIMESERIES_COLUMNS.join(",")),
        );
        let err = read_timeseries(&path).unwrap_err();
        assert!(err.contains("timeseries.csv:3: field `allocated_gpus`: expected a number, got `x`"), "{err}");
    }

    #[test]
    fn a_missing_column_is_named() {
        let dir = scratch("column");
        let path = write(&dir, "tasks.csv", "job_id,task_id,job_index,task_index\n1,a,1,2\n");
        let err = read_tasks(&path).unwrap_err();
        assert!(err.contains("tasks.csv:1: no `state` column"), "{err}");
    }

    #[test]
    fn a_ragged_row_is_an_error_with_its_line() {
        let dir = scratch("ragged");
        let path = write(&dir, "jobs.csv", "queue,jct_s,queue_s,gpus,run_s\na,1,2,8,1\nb,1\n");
        let err = read_jobs(&path).unwrap_err();
        assert!(err.contains("jobs.csv:3"), "{err}");
    }

    #[test]
    fn tasks_read_with_their_dependencies() {
        let dir = scratch("tasks");
        let path = write(
            &dir,
            "tasks.csv",
            "job_id,task_id,job_index,task_index,state,first_start_s,finish_s,gpus,depends_on\nj3,prep,3,7,succeeded,0.000,10.500,1,\nj3,train,3,8,succeeded,10.500,99.000,8,prep\nj3,eval,3,9,pending,,,1,train:failure;prep\n",
        );
        let tasks = read_tasks(&path).unwrap();
        assert_eq!(tasks.len(), 3);
        let up = |task: &str, kind: Option<&str>| Upstream { task: task.into(), kind: kind.map(str::to_string) };
        assert_eq!(tasks[1].depends_on, vec![up("prep", None)]);
        assert_eq!((tasks[1].job.as_str(), tasks[1].task, tasks[1].name.as_str()), ("j3", 8, "train"));
        assert_eq!(tasks[2].depends_on, vec![up("train", Some("failure")), up("prep", None)]);
        assert_eq!(tasks[2].first_start_s, None);
        assert_eq!(tasks[1].finish_s, Some(99.0));
    }

    #[test]
    fn a_folder_that_is_neither_is_refused() {
        let dir = scratch("neither");
        std::fs::create_dir_all(&dir).unwrap();
        let err = load(&dir).unwrap_err();
        assert!(err.contains("neither a run folder"), "{err}");
    }
}
