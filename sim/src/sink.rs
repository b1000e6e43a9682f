//! Where a run's records go as they become final: a streamed run hands them to a
//! [`RecordSink`] (a writer of jobs.csv, tasks.csv and decisions.csv, a summary being built)
//! instead of keeping them until the run ends. [`Collect`] keeps them: what
//! [`crate::simulate`] returns in its [`RunResult`].

use crate::record::{DecisionRecord, JobRecord, RunResult, TaskRecord};

/// Receives a run's records in a fixed order, the same for every run of the same input (in
/// memory or streamed): decisions in the log's order (when the run keeps a log); jobs in job
/// order (the order of submission, ties in trace order), each as soon as it and every job
/// before it have ended, with one exception. A job still in the system while
/// `ControllerConfig::set_aside_after` (262,144) jobs after it have ended is set aside, so that
/// they can go: its record comes when it ends, after theirs (`RunStats::jobs_set_aside`
/// counts them). Jobs still in the system at the run's end come last, in job order, unfinished.
pub trait RecordSink {
    /// One line of the decision log, with its job's name and, for a task of a job of several
    /// tasks, the task's name (both gone from the run once the job has left it).
    fn decision(&mut self, decision: DecisionRecord, job_name: &str, task_name: Option<&str>);
    /// One job's record, with its tasks' records in task order when the run has jobs of
    /// several tasks (empty otherwise, as [`RunResult::tasks`]).
    fn job(&mut self, job: JobRecord, tasks: Vec<TaskRecord>);
}

/// Keeps every record, in the order handed over: the records of a [`RunResult`].
#[derive(Debug, Default)]
pub struct Collect {
    pub jobs: Vec<JobRecord>,
    pub tasks: Vec<TaskRecord>,
    pub decisions: Vec<DecisionRecord>,
}

impl RecordSink for Collect {
    fn decision(&mut self, decision: DecisionRecord, _job_name: &str, _task_name: Option<&str>) {
        self.decisions.push(decision);
    }
    fn job(&mut self, job: JobRecord, tasks: Vec<TaskRecord>) {
        self.jobs.push(job);
        self.tasks.extend(tasks);
    }
}

impl Collect {
    /// Room for `jobs` records from the start (a run in memory knows its count): growing the
    /// list by doubling copied every record about twice more.
    pub fn with_capacity(jobs: usize) -> Collect {
        Collect { jobs: Vec::with_capacity(jobs), ..Collect::default() }
    }

    /// The run's end (its records left empty by a streamed run) with these records in it.
    pub fn into_result(self, mut end: RunResult) -> RunResult {
        end.jobs = self.jobs;
        end.tasks = self.tasks;
        end.decisions = self.decisions;
        end
    }
}
