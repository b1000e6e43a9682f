//! Importer for the pod list of Alibaba's GPU-sharing cluster trace v2023 ("openb", FGD,
//! USENIX ATC'23): `openb_pod_list_default.csv`, with the columns
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`
//! (times in whole seconds from a relative origin; `scheduled_time` is empty for pods that were
//! never scheduled). The cluster is in the node lists, see [`crate::inventory`].
//!
//! The mapping (also in traces/FORMAT.md, "Alibaba openb"):
//!
//! - Each pod with GPUs becomes a **single-task job** named by `name` (a repeated name is an
//!   error), submitted at `creation_time` (converted exactly to milliseconds), in the **queue**
//!   `qos` (`LS`, `BE`, `Burstable`, `Guaranteed`; empty: no queue). A pod runs on one node, so
//!   the task is `single_node`.
//! - **Work** is the pod's occupancy, `deletion_time - scheduled_time`: the trace's deletion is
//!   the end of resource occupancy (Running pods included, whose phase is only what the
//!   collector last saw). A pod **never scheduled** (empty `scheduled_time`, the `Pending` pods)
//!   has no occupancy; it is still a real demand that waited its whole life, so its work is
//!   `deletion_time - creation_time`. A zero occupancy (the two times equal: deleted within the
//!   trace's one-second resolution) becomes **1 ms** of work, the least a task can have, and is
//!   counted in the notes; a negative one (deletion before the start) is an error naming the
//!   line, as is a `scheduled_time` before `creation_time`.
//! - **GPUs**: `num_gpu` GPUs. A pod with `num_gpu` = 1 and `gpu_milli` below 1000 shares its
//!   GPU: the task gets `gpu_milli` as its share; `gpu_milli` = 1000 is a whole GPU. Pods with
//!   several GPUs must have `gpu_milli` = 1000 (schedlab shares single-GPU tasks only), else
//!   the row is an error.
//! - **`gpu_spec`** (required GPU types, `A|B`; empty in the default list): empty is any GPU
//!   type; one type becomes the task's `gpu_type` (matching the pool types of the openb node
//!   lists, which are the node `model`s); several types cannot be expressed by a task, which runs
//!   on one type or on any, so a row with several is an error naming the line, rather than
//!   being narrowed to one type or widened to any.
//! - **CPU-only pods** (`num_gpu` = 0) cannot be tasks (schedlab schedules GPUs); they are
//!   skipped and counted, never silently: the [`OpenbReport`] and [`crate::Trace::notes`] say
//!   how many.
//! - Not modelled, and said so in the notes: `cpu_milli` and `memory_mib` (CPU and memory do
//!   not limit placement), and `pod_phase`: `Failed` pods (no failure reason in the trace) are
//!   replayed as normal jobs, whose occupancy already includes the time they ran.
//!
//! Columns other than those are ignored; `gpu_spec`, `pod_phase`, `cpu_milli` and `memory_mib`
//! may be absent.

use crate::error::{Sink, TraceError, first_error};
use crate::itp::finish;
use crate::names::NameIndex;
use crate::rows::{Column, Row, Rows, Unknown, parse_u32};
use crate::stats::grouped;
use sim::{JobSpec, SimDuration, SimTime, Workload};
use std::io::Read;

pub(crate) const KNOWN: &[Column] = &[
    Column { name: "name", required: true },
    Column { name: "num_gpu", required: true },
    Column { name: "gpu_milli", required: true },
    Column { name: "qos", required: true },
    Column { name: "creation_time", required: true },
    Column { name: "deletion_time", required: true },
    Column { name: "scheduled_time", required: true },
    Column { name: "gpu_spec", required: false },
    Column { name: "pod_phase", required: false },
    Column { name: "cpu_milli", required: false },
    Column { name: "memory_mib", required: false },
];

/// The first of [`KNOWN`]'s columns that are read only to be reported as not modelled.
const NOT_MODELLED_FROM: usize = 9;

/// A whole GPU, in milli-GPUs.
const WHOLE_GPU_MILLI: u32 = 1000;

/// An imported pod list: the jobs, and what the import did to get them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenbImport {
    pub workload: Workload,
    pub report: OpenbReport,
}

/// What an openb import read and what it left out or changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpenbReport {
    /// Every pod (data row) read.
    pub pods: u64,
    /// Pods imported as jobs: those with at least one GPU.
    pub imported: u64,
    /// Pods without GPUs (`num_gpu` = 0), skipped: schedlab schedules GPUs only.
    pub cpu_only: u64,
    /// Imported pods that share a GPU (`num_gpu` = 1, `gpu_milli` < 1000).
    pub fractional: u64,
    /// Imported pods never scheduled (empty `scheduled_time`): work = deletion - creation.
    pub never_scheduled: u64,
    /// Imported pods whose occupancy was zero, given 1 ms of work.
    pub zero_occupancy: u64,
    /// Imported pods with `pod_phase` = `Failed`, replayed as normal jobs.
    pub failed: u64,
    /// The columns present in the file that schedlab does not model (`cpu_milli`, `memory_mib`).
    pub not_modelled: Vec<&'static str>,
}

impl OpenbReport {
    /// One line per thing the import skipped, changed or does not model, for stderr: what a
    /// command prints when it loads the trace ([`crate::Trace::notes`]).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let s = |n: u64| if n == 1 { "" } else { "s" };
        let pods = |n: u64| format!("{} pod{}", grouped(n), s(n));
        if self.cpu_only > 0 {
            let n = self.cpu_only;
            notes.push(format!("skipped {} CPU-only pod{} (num_gpu = 0; schedlab schedules GPUs)", grouped(n), s(n)));
        }
        if !self.not_modelled.is_empty() {
            let names: Vec<String> = self.not_modelled.iter().map(|c| format!("`{c}`")).collect();
            notes.push(format!("not modelled: {} (CPU and memory requests do not limit placement)", names.join(", ")));
        }
        if self.never_scheduled > 0 {
            notes.push(format!(
                "{} never scheduled (empty scheduled_time) replayed with work = deletion_time - creation_time",
                pods(self.never_scheduled)
            ));
        }
        if self.zero_occupancy > 0 {
            notes.push(format!(
                "{} with zero occupancy (deleted in the second it was scheduled, or created if never scheduled) given \
                 1 ms of work",
                pods(self.zero_occupancy)
            ));
        }
        if self.failed > 0 {
            notes.push(format!(
                "{} with pod_phase Failed replayed as normal jobs (the trace gives no failure reason; their \
                 occupancy already includes the time they ran)",
                pods(self.failed)
            ));
        }
        notes
    }
}

/// Reads an openb pod list; `file` names it in errors.
pub fn read_openb_pods<R: Read>(source: R, file: &str) -> Result<OpenbImport, TraceError> {
    first_error(file, |sink| read_openb_into(source, file, sink))
}

/// Column indexes in the file at hand.
struct Cols {
    name: usize,
    gpus: usize,
    milli: usize,
    qos: usize,
    creation: usize,
    deletion: usize,
    scheduled: usize,
    spec: Option<usize>,
    phase: Option<usize>,
}

/// One row as the importer sees it: a job, or a CPU-only pod to count.
enum Pod {
    Job { job: JobSpec, fractional: bool, never_scheduled: bool, zero: bool, failed: bool },
    CpuOnly,
}

pub(crate) fn read_openb_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<OpenbImport> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Ignore, sink)?;
    let cols = Cols {
        name: c[0]?,
        gpus: c[1]?,
        milli: c[2]?,
        qos: c[3]?,
        creation: c[4]?,
        deletion: c[5]?,
        scheduled: c[6]?,
        spec: c[7],
        phase: c[8],
    };
    let not_modelled = KNOWN[NOT_MODELLED_FROM..]
        .iter()
        .zip(&c[NOT_MODELLED_FROM..])
        .filter(|(_, i)| i.is_some())
        .map(|(k, _)| k.name);
    let mut report = OpenbReport { not_modelled: not_modelled.collect(), ..OpenbReport::default() };
    let mut first_line = NameIndex::new();
    let mut jobs = Vec::new();
    let pods = rows.parse_all(sink, |row| {
        let name = row.name_field(cols.name, "a pod name")?;
        if let Some(first) = first_line.get(name) {
            return Err(row.error(cols.name, format!("a pod name not used before (line {first} has it)"), name));
        }
        let pod = read_pod(row, &cols, name)?;
        first_line.insert(name, row.line);
        Ok(pod)
    })?;
    for pod in pods {
        report.pods += 1;
        match pod {
            Pod::CpuOnly => report.cpu_only += 1,
            Pod::Job { job, fractional, never_scheduled, zero, failed } => {
                report.imported += 1;
                report.fractional += u64::from(fractional);
                report.never_scheduled += u64::from(never_scheduled);
                report.zero_occupancy += u64::from(zero);
                report.failed += u64::from(failed);
                jobs.push(job);
            }
        }
    }
    if jobs.is_empty() && report.cpu_only > 0 && sink.is_empty() {
        sink.push(TraceError::file(
            rows.file(),
            format!(
                "no GPU pods: {} CPU-only (num_gpu = 0), and schedlab schedules GPUs",
                match report.cpu_only {
                    1 => "the one pod is".to_owned(),
                    n => format!("all {} pods are", grouped(n)),
                }
            ),
        ));
        return None;
    }
    let workload = finish(jobs, rows.file(), sink)?;
    Some(OpenbImport { workload, report })
}

fn read_pod(row: &Row<'_>, cols: &Cols, name: &str) -> Result<Pod, TraceError> {
    let gpus_text = row.text(cols.gpus)?;
    let gpus =
        parse_u32(gpus_text).ok_or_else(|| row.error(cols.gpus, "a whole number of GPUs, 0 or more", gpus_text))?;
    let milli_text = row.text(cols.milli)?;
    let milli = parse_u32(milli_text)
        .filter(|&m| m <= WHOLE_GPU_MILLI)
        .ok_or_else(|| row.error(cols.milli, "a share of a GPU in milli-GPUs, 0 to 1000", milli_text))?;
    let creation_ms = row.seconds_ms(cols.creation)?;
    let deletion_ms = row.seconds_ms(cols.deletion)?;
    let scheduled_text = row.text(cols.scheduled)?;
    let scheduled_ms = if scheduled_text.is_empty() { None } else { Some(row.seconds_ms(cols.scheduled)?) };
    if gpus == 0 {
        return Ok(Pod::CpuOnly);
    }
    let gpu_milli = match (gpus, milli) {
        (_, WHOLE_GPU_MILLI) => None,
        (1, _) => Some(sim::gpu_share(milli).ok_or_else(|| {
            row.error(cols.milli, "1 to 1000 milli-GPUs for a pod with 1 GPU (0 is for CPU-only pods)", milli_text)
        })?),
        (_, _) => {
            return Err(row.error(
                cols.milli,
                format!(
                    "1000 (whole GPUs) for a pod of {gpus} GPUs: schedlab shares a GPU only between single-GPU tasks"
                ),
                milli_text,
            ));
        }
    };
    let gpu_type = match cols.spec {
        Some(column) => gpu_type(row, column)?,
        None => None,
    };
    if let Some(scheduled) = scheduled_ms
        && scheduled < creation_ms
    {
        return Err(row.error(
            cols.scheduled,
            format!("a time at or after creation_time ({})", row.text(cols.creation)?),
            scheduled_text,
        ));
    }
    let (start_ms, start_column) = match scheduled_ms {
        Some(ms) => (ms, "scheduled_time"),
        None => (creation_ms, "creation_time"),
    };
    if deletion_ms < start_ms {
        let start_text = row.text(if scheduled_ms.is_some() { cols.scheduled } else { cols.creation })?;
        return Err(row.error(
            cols.deletion,
            format!("a time at or after {start_column} ({start_text}): the pod's occupancy cannot be negative"),
            row.text(cols.deletion)?,
        ));
    }
    let zero = deletion_ms == start_ms;
    let work_ms = if zero { 1 } else { deletion_ms - start_ms };
    let qos = row.text(cols.qos)?;
    let failed = match cols.phase {
        Some(column) => row.text(column)? == "Failed",
        None => false,
    };
    let mut job = JobSpec::single(name, SimTime(creation_ms), gpus, SimDuration(work_ms));
    job.queue = (!qos.is_empty()).then(|| qos.into());
    let task = &mut job.tasks[0];
    task.gpu_milli = gpu_milli;
    task.gpu_type = gpu_type;
    // A pod runs on one node.
    task.single_node = true;
    Ok(Pod::Job { job, fractional: gpu_milli.is_some(), never_scheduled: scheduled_ms.is_none(), zero, failed })
}

/// `gpu_spec`: empty is any type; one type is the task's type; several (`A|B`) are refused.
fn gpu_type(row: &Row<'_>, column: usize) -> Result<Option<Box<str>>, TraceError> {
    let text = row.text(column)?;
    if text.is_empty() {
        return Ok(None);
    }
    let is_type = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if text.contains('|') && text.split('|').all(is_type) {
        return Err(row.error(
            column,
            "at most one GPU type: a schedlab task runs on one named type or on any, so a pod that accepts \
             several types cannot be expressed (only the augmented gpuspec pod lists have such rows)",
            text,
        ));
    }
    if !is_type(text) {
        return Err(row.error(column, "a GPU type (letters, digits, `-`, `_` or `.`) or an empty field", text));
    }
    Ok(Some(text.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,\
                        deletion_time,scheduled_time\n";

    fn read(rows: &str) -> Result<OpenbImport, TraceError> {
        read_openb_pods(format!("{HEAD}{rows}").as_bytes(), "pods.csv")
    }

    fn err(rows: &str) -> String {
        read(rows).expect_err("should be refused").to_string()
    }

    #[test]
    fn pods_become_single_node_jobs() {
        let import = read(
            "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n\
             p1,6000,12288,1,460,,BE,Failed,5,100,7\n\
             p2,88000,327680,8,1000,V100M16,LS,Succeeded,10,110.5,12\n\
             p3,4000,8192,0,0,,Burstable,Running,11,20,11\n\
             p4,6000,12288,1,230,,BE,Pending,12,40,\n\
             p5,6000,12288,2,1000,,,Pending,12,12,\n",
        )
        .unwrap();
        let w = &import.workload;
        let names: Vec<&str> = w.jobs().iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["p0", "p1", "p2", "p4", "p5"]);
        let p0 = &w.jobs()[0];
        assert_eq!((p0.submit, p0.queue.as_deref(), p0.gpus()), (SimTime(0), Some("LS"), 1));
        let t = &p0.tasks[0];
        assert_eq!(
            (t.work, t.gpu_milli, t.gpu_type.as_deref(), t.single_node),
            (SimDuration(12_537_496_000), None, None, true)
        );
        let p1 = &w.jobs()[1].tasks[0];
        // Occupancy: deletion - scheduled.
        assert_eq!((p1.work, p1.gpu_milli.map(|m| m.get())), (SimDuration(93_000), Some(460)));
        let p2 = &w.jobs()[2];
        assert_eq!(
            (p2.gpus(), p2.tasks[0].work, p2.tasks[0].gpu_type.as_deref()),
            (8, SimDuration(98_500), Some("V100M16"))
        );
        // Never scheduled: deletion - creation.
        assert_eq!(w.jobs()[3].tasks[0].work, SimDuration(28_000));
        let p5 = &w.jobs()[4];
        assert_eq!((p5.tasks[0].work, p5.queue.as_deref()), (SimDuration(1), None));
        let r = &import.report;
        assert_eq!(
            (r.pods, r.imported, r.cpu_only, r.fractional, r.never_scheduled, r.zero_occupancy, r.failed),
            (6, 5, 1, 2, 2, 1, 1)
        );
        assert_eq!(
            r.notes(),
            [
                "skipped 1 CPU-only pod (num_gpu = 0; schedlab schedules GPUs)",
                "not modelled: `cpu_milli`, `memory_mib` (CPU and memory requests do not limit placement)",
                "2 pods never scheduled (empty scheduled_time) replayed with work = deletion_time - creation_time",
                "1 pod with zero occupancy (deleted in the second it was scheduled, or created if never scheduled) given 1 \
                 ms of work",
                "1 pod with pod_phase Failed replayed as normal jobs (the trace gives no failure reason; their occupancy \
                 already includes the time they ran)",
            ]
        );
    }

    #[test]
    fn minimal_columns_give_no_notes() {
        let text = "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\na,1,500,LS,0,10,0\n";
        let import = read_openb_pods(text.as_bytes(), "p.csv").unwrap();
        assert_eq!(import.report.notes(), Vec::<String>::new());
        assert_eq!(import.workload.jobs()[0].tasks[0].gpu_milli.map(|m| m.get()), Some(500));
    }

    #[test]
    fn bad_rows_name_line_and_field() {
        assert_eq!(
            err("a,1,1,1,500,,LS,Running,0,10,0\na,1,1,1,500,,LS,Running,0,10,0\n"),
            "pods.csv:3: field `name`: expected a pod name not used before (line 2 has it), got \"a\""
        );
        assert_eq!(
            err("a,1,1,2,500,,LS,Running,0,10,0\n"),
            "pods.csv:2: field `gpu_milli`: expected 1000 (whole GPUs) for a pod of 2 GPUs: schedlab shares a GPU \
             only between single-GPU tasks, got \"500\""
        );
        assert!(err("a,1,1,1,0,,LS,Running,0,10,0\n").starts_with("pods.csv:2: field `gpu_milli`: expected 1 to 1000"));
        assert!(
            err("a,1,1,1,1001,,LS,Running,0,10,0\n").starts_with("pods.csv:2: field `gpu_milli`: expected a share")
        );
        assert!(err("a,1,1,x,1000,,LS,Running,0,10,0\n").starts_with("pods.csv:2: field `num_gpu`"));
        assert_eq!(
            err("a,1,1,1,1000,A|B,LS,Running,0,10,0\n"),
            "pods.csv:2: field `gpu_spec`: expected at most one GPU type: a schedlab task runs on one named type or \
             on any, so a pod that accepts several types cannot be expressed (only the augmented gpuspec pod lists \
             have such rows), got \"A|B\""
        );
        assert!(
            err("a,1,1,1,1000,A|,LS,Running,0,10,0\n").starts_with("pods.csv:2: field `gpu_spec`: expected a GPU type")
        );
        assert_eq!(
            err("a,1,1,1,1000,,LS,Running,5,10,4\n"),
            "pods.csv:2: field `scheduled_time`: expected a time at or after creation_time (5), got \"4\""
        );
        assert_eq!(
            err("a,1,1,1,1000,,LS,Running,5,9,10\n"),
            "pods.csv:2: field `deletion_time`: expected a time at or after scheduled_time (10): the pod's occupancy \
             cannot be negative, got \"9\""
        );
        assert!(
            err("a,1,1,1,1000,,LS,Pending,5,4,\n")
                .starts_with("pods.csv:2: field `deletion_time`: expected a time at or after creation_time (5)")
        );
        assert!(err("a,1,1,1,1000,,LS,Running,,10,0\n").starts_with("pods.csv:2: field `creation_time`"));
        assert!(err(",1,1,1,1000,,LS,Running,0,10,0\n").starts_with("pods.csv:2: field `name`: expected a pod name"));
    }

    #[test]
    fn a_list_without_gpu_pods_says_so() {
        assert_eq!(
            err("a,1,1,0,0,,LS,Running,0,10,0\n"),
            "pods.csv: no GPU pods: the one pod is CPU-only (num_gpu = 0), and schedlab schedules GPUs"
        );
        assert_eq!(err(""), "pods.csv: no jobs: the file has a header but no rows");
        let e = read_openb_pods("name,num_gpu\n".as_bytes(), "p.csv").unwrap_err().to_string();
        assert!(e.starts_with("p.csv:1: the header has no column `gpu_milli`"), "{e}");
    }
}
