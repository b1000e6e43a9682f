//! Slurm's QOS limits: `sacctmgr show qos --parsable2`, a `|`-separated header then one QOS per
//! line. Columns read, by name: `Name`, `GrpTRES` (the limits on everything the QOS's jobs run
//! at once: its `gres/gpu=N` is a GPU cap), `GrpJobs` (jobs running at once), `MaxTRESPU`
//! (`gres/gpu=N`: GPUs each user's jobs hold at once) and `MaxJobsPU` (each user's jobs
//! running at once); for the `slurm` policy's spec ([`super::slurm_sched`]) also `Priority`
//! (the QOS factor's input) and `UsageFactor` (named when it is not 1). Every other column
//! (`Preempt`, `MaxWall`, ...) is not modelled.
//!
//! A **partition QOS** (slurm.conf's `PartitionName=... QOS=NAME`) limits the partition's jobs
//! all together, which is what a schedlab queue's `max_gpus` and `max_running_jobs` are;
//! [`super::slurm`] applies it to the partition's queue. A QOS that jobs ask for (`--qos`)
//! limits them across partitions, which no queue is: the `slurm` policy's spec carries those
//! limits (`qos_grp_gpus`, `qos_grp_jobs`, `qos_max_gpus_per_user`, `qos_max_jobs_per_user`).

use crate::error::TraceError;
use crate::sacct::table::{Row, Table, tres_count};

/// One QOS's limits that a queue can take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosLimits {
    pub name: String,
    /// `gres/gpu` of `GrpTRES`; `None`: no GPU limit.
    pub max_gpus: Option<u32>,
    /// `GrpJobs`; `None`: no limit.
    pub max_running_jobs: Option<u32>,
    /// `gres/gpu` of `MaxTRESPU`; `None`: no limit (or no such column).
    pub max_gpus_per_user: Option<u32>,
    /// `MaxJobsPU`; `None`: no limit (or no such column).
    pub max_jobs_per_user: Option<u32>,
    /// `Priority` (empty or no such column: 0).
    pub priority: u32,
    /// `UsageFactor` as written; `None`: empty or no such column (Slurm's 1).
    pub usage_factor: Option<String>,
}

impl QosLimits {
    /// A QOS with no limits, priority 0 and usage factor 1.
    pub fn new(name: impl Into<String>) -> QosLimits {
        QosLimits {
            name: name.into(),
            max_gpus: None,
            max_running_jobs: None,
            max_gpus_per_user: None,
            max_jobs_per_user: None,
            priority: 0,
            usage_factor: None,
        }
    }
}

const FIELDS: &[(&str, bool)] = &[
    ("Name", true),
    ("GrpTRES", true),
    ("GrpJobs", false),
    ("Priority", false),
    ("UsageFactor", false),
    ("MaxTRESPU", false),
    ("MaxJobsPU", false),
];

/// Reads `sacctmgr show qos --parsable2` output; `file` names it in errors.
pub fn read_sacctmgr_qos(text: &str, file: &str) -> Result<Vec<QosLimits>, TraceError> {
    let table = Table::split(text, file).map_err(|mut errors| errors.remove(0))?;
    let cols = table.columns(file, FIELDS, "sacctmgr show qos format=")?;
    let mut limits = Vec::new();
    for (line, fields) in &table.rows {
        let row = Row { file, line: *line, header: &table.header, fields };
        let name = row.get(cols[0]);
        if name.is_empty() {
            return Err(row.error(cols[0], "a QOS name"));
        }
        let max_gpus = gpu_limit(&row, cols[1])?;
        let max_running_jobs = count(&row, cols[2], "a job count up to 4294967295")?;
        let max_gpus_per_user = gpu_limit(&row, cols[5])?;
        let max_jobs_per_user = count(&row, cols[6], "a job count up to 4294967295")?;
        let priority = count(&row, cols[3], "a priority up to 4294967295")?.unwrap_or(0);
        let usage_factor = Some(row.get(cols[4])).filter(|u| !u.is_empty()).map(str::to_owned);
        limits.push(QosLimits {
            name: name.to_owned(),
            max_gpus,
            max_running_jobs,
            max_gpus_per_user,
            max_jobs_per_user,
            priority,
            usage_factor,
        });
    }
    Ok(limits)
}

/// The `gres/gpu` count of a TRES limit column (`GrpTRES`, `MaxTRESPU`); `None`: empty, or no
/// GPU limit in it.
fn gpu_limit(row: &Row<'_, '_>, col: Option<usize>) -> Result<Option<u32>, TraceError> {
    let tres = row.get(col);
    let shaped =
        tres.is_empty() || tres.split(',').all(|item| item.split_once('=').is_some_and(|(k, _)| !k.is_empty()));
    let has_gpus = tres.split(',').any(|item| item.starts_with("gres/gpu="));
    let gpus = tres_count(tres, "gres/gpu").and_then(|n| u32::try_from(n).ok());
    if !shaped || (has_gpus && gpus.is_none()) {
        return Err(row.error(col, "TRES limits written TYPE=COUNT,..., such as cpu=64,gres/gpu=16"));
    }
    Ok(gpus)
}

/// A whole number up to u32's limit, or `None` when empty.
fn count(row: &Row<'_, '_>, col: Option<usize>, expected: &str) -> Result<Option<u32>, TraceError> {
    row.number(col)?.map(|n| u32::try_from(n).map_err(|_| row.error(col, expected))).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_and_per_user_gpu_and_job_limits_are_read() {
        let text = "Name|Priority|GrpTRES|GrpJobs|MaxTRESPU|MaxJobsPU|UsageFactor\nnormal|0|||||1.000000\n\
                    debug8|10|cpu=64,gres/gpu=8|4|gres/gpu=2|3|\n";
        let limits = read_sacctmgr_qos(text, "qos.txt").unwrap();
        assert_eq!(
            limits,
            [
                QosLimits { usage_factor: Some("1.000000".into()), ..QosLimits::new("normal") },
                QosLimits {
                    max_gpus: Some(8),
                    max_running_jobs: Some(4),
                    max_gpus_per_user: Some(2),
                    max_jobs_per_user: Some(3),
                    priority: 10,
                    ..QosLimits::new("debug8")
                },
            ]
        );
        let e = |t: &str| read_sacctmgr_qos(t, "qos.txt").unwrap_err().to_string();
        assert_eq!(
            e("Name|GrpTRES\nx|gpus\n"),
            "qos.txt:2: field `GrpTRES`: expected TRES limits written TYPE=COUNT,..., such as cpu=64,gres/gpu=16, got \
             \"gpus\""
        );
        assert!(e("Name|GrpTRES\nx|gres/gpu=x\n").starts_with("qos.txt:2: field `GrpTRES`"));
        assert!(e("Name|GrpTRES|MaxTRESPU\nx||gres/gpu=x\n").starts_with("qos.txt:2: field `MaxTRESPU`"));
        assert_eq!(
            e("Name|GrpTRES|GrpJobs\nx||many\n"),
            "qos.txt:2: field `GrpJobs`: expected a whole number, got \"many\""
        );
        assert_eq!(
            e("Name|GrpTRES|Priority\nx||-1\n"),
            "qos.txt:2: field `Priority`: expected a whole number, got \"-1\""
        );
        assert!(e("Name|GrpTRES|Priority\nx||4294967296\n").contains("expected a priority up to 4294967295"));
        assert!(
            e("Name|Priority\nx|1\n").starts_with("qos.txt:1: the header has no field `GrpTRES`"),
            "{}",
            e("Name\nx\n")
        );
    }
}
