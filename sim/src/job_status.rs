//! A job's status in one vocabulary for every output: how it ended ([`JobOutcome`], with its
//! reason) and where it stands ([`JobStatus`]): a run's jobs.csv, the summary's counts, live
//! mode's job states and metrics, and a live session's replay all say the same word for the
//! same thing (a cancelled job is `cancelled` in each).

use crate::workload::CANCELLED_BY_THE_USER;

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    Succeeded,
    /// It can never fit the cluster; the reason names the task and the limit.
    Unschedulable(Box<str>),
    /// The policy refused it; the reason is the policy's.
    Rejected(Box<str>),
    /// The user cancelled it (a trace's `cancel_s`, live mode's `live cancel`): what of it had
    /// not ended then stopped.
    Cancelled,
    /// A task failed for good (hardware failures past its retry budget, its start window
    /// closed, or a non-zero exit code) and, in a DAG job, no `failure` dependent handled it;
    /// the reason names the task.
    Failed(Box<str>),
}

impl JobOutcome {
    pub fn as_str(&self) -> &'static str {
        self.status().as_str()
    }
    pub fn reason(&self) -> &str {
        match self {
            JobOutcome::Succeeded => "",
            JobOutcome::Cancelled => CANCELLED_BY_THE_USER,
            JobOutcome::Unschedulable(r) | JobOutcome::Rejected(r) | JobOutcome::Failed(r) => r,
        }
    }
    /// The status a job with this outcome has.
    pub fn status(&self) -> JobStatus {
        match self {
            JobOutcome::Succeeded => JobStatus::Succeeded,
            JobOutcome::Unschedulable(_) => JobStatus::Unschedulable,
            JobOutcome::Rejected(_) => JobStatus::Rejected,
            JobOutcome::Cancelled => JobStatus::Cancelled,
            JobOutcome::Failed(_) => JobStatus::Failed,
        }
    }
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobStatus {
    /// Arrived, no task running (live mode).
    Waiting,
    /// A task of it runs (live mode).
    Running,
    Succeeded,
    Failed,
    Cancelled,
    Rejected,
    Unschedulable,
    /// Not ended when the run stopped (at its horizon, or with a stalled policy): a run's word
    /// for a job still waiting or running at its end.
    Unfinished,
}

impl JobStatus {
    /// Every status, in the order outputs list them.
    pub const ALL: [JobStatus; 8] = [
        JobStatus::Waiting,
        JobStatus::Running,
        JobStatus::Succeeded,
        JobStatus::Failed,
        JobStatus::Cancelled,
        JobStatus::Rejected,
        JobStatus::Unschedulable,
        JobStatus::Unfinished,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Waiting => "waiting",
            JobStatus::Running => "running",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
            JobStatus::Rejected => "rejected",
            JobStatus::Unschedulable => "unschedulable",
            JobStatus::Unfinished => "unfinished",
        }
    }

    /// Whether the job has ended (an outcome's status).
    pub fn is_final(self) -> bool {
        !matches!(self, JobStatus::Waiting | JobStatus::Running | JobStatus::Unfinished)
    }

    /// The status of a job with `outcome` at a run's end: its outcome's, else unfinished.
    pub fn at_end(outcome: Option<&JobOutcome>) -> JobStatus {
        outcome.map_or(JobStatus::Unfinished, JobOutcome::status)
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_names_its_status_and_only_outcomes_are_final() {
        let outcomes = [
            JobOutcome::Succeeded,
            JobOutcome::Unschedulable("u".into()),
            JobOutcome::Rejected("r".into()),
            JobOutcome::Cancelled,
            JobOutcome::Failed("f".into()),
        ];
        let words: Vec<&str> = outcomes.iter().map(JobOutcome::as_str).collect();
        assert_eq!(words, ["succeeded", "unschedulable", "rejected", "cancelled", "failed"]);
        assert!(outcomes.iter().all(|o| o.status().is_final()));
        let open: Vec<JobStatus> = JobStatus::ALL.into_iter().filter(|s| !s.is_final()).collect();
        assert_eq!(open, [JobStatus::Waiting, JobStatus::Running, JobStatus::Unfinished]);
        assert_eq!(JobOutcome::Cancelled.reason(), "cancelled by the user");
        assert_eq!(JobStatus::at_end(None), JobStatus::Unfinished);
    }
}
