//! How many tasks wait to be started and how many jobs are in the system (arrived, not
//! ended): the counts the run integrates (the waiting level, Little's law). A task's status and
//! a job's arrival and outcome are written only here, together with the counts they make up;
//! [`Census::check`] recounts both from the tables.

use crate::job_status::JobOutcome;
use crate::resident::Resident;
use crate::state::{JobState, TaskState, TaskStatus};
use crate::time::SimTime;

#[derive(Debug, Default)]
pub(crate) struct Census {
    /// Tasks a policy may start (ready, preempted, retrying).
    waiting_tasks: u64,
    /// Jobs arrived and not ended.
    in_system: u64,
}

impl Census {
    /// Moves `t` (of job `j`) to `status` at `now`; the change in waiting tasks (-1, 0 or 1),
    /// for the caller's per-queue levels. The job's wait runs while any of its tasks waits.
    pub(crate) fn set_status(&mut self, t: &mut TaskState, j: &mut JobState, status: TaskStatus, now: SimTime) -> i64 {
        let delta = i64::from(status.is_startable()) - i64::from(t.status.is_startable());
        t.status = status;
        self.waiting_tasks = self.waiting_tasks.checked_add_signed(delta).expect("waiting count below zero");
        let before = j.waiting_tasks;
        j.waiting_tasks = before.checked_add_signed(delta as i32).expect("a job's waiting count below zero");
        match (before, j.waiting_tasks) {
            (0, 1..) => j.wait_mark -= now.as_ms() as i64,
            (1.., 0) => j.wait_mark += now.as_ms() as i64,
            _ => {}
        }
        delta
    }

    /// The job `j` arrived now: it is in the system until it ends (even a job found
    /// unschedulable, which ends at once).
    pub(crate) fn arrive(&mut self, j: &mut JobState) {
        j.arrived = true;
        self.in_system += 1;
    }

    /// The job `j`, in the system, ends now with `outcome`.
    pub(crate) fn end(&mut self, j: &mut JobState, outcome: JobOutcome, now: SimTime) {
        debug_assert!(j.in_system(), "a job ends once, after it arrived");
        j.outcome = Some(outcome);
        j.end = now.into();
        self.in_system -= 1;
    }

    pub(crate) fn waiting_tasks(&self) -> u64 {
        self.waiting_tasks
    }

    pub(crate) fn in_system(&self) -> u64 {
        self.in_system
    }

    /// Recounts both from the tables.
    pub(crate) fn check(&self, tasks: &Resident<TaskState>, jobs: &Resident<JobState>) -> Result<(), String> {
        let waiting = tasks.iter().filter(|(_, t)| t.status.is_startable()).count() as u64;
        if waiting != self.waiting_tasks {
            return Err(format!("{waiting} waiting tasks, the counter says {}", self.waiting_tasks));
        }
        for (index, j) in jobs.iter() {
            let waiting = j.tasks().filter(|t| tasks[t.index()].status.is_startable()).count() as u32;
            if waiting != j.waiting_tasks {
                return Err(format!("job {index}: {waiting} waiting tasks, its counter says {}", j.waiting_tasks));
            }
        }
        let in_system = jobs.iter().filter(|(_, j)| j.in_system()).count() as u64;
        if in_system != self.in_system {
            return Err(format!("{in_system} jobs in the system, the counter says {}", self.in_system));
        }
        Ok(())
    }
}
