//! The end of a run that could not finish: stopped at its horizon, or out of events with jobs
//! still waiting. Each job that did not end is reported with the reason, in words.

use super::Controller;
use crate::state::{JobState, TaskStatus};
use crate::time::SimTime;
use crate::workload::JobSpec;

impl Controller {
    /// Stops the run at `at`, its horizon: time is integrated up to it, and the jobs still in
    /// the system are reported unfinished.
    pub(crate) fn stop_at_horizon(&mut self, at: SimTime) {
        self.advance_to(at.max(self.now));
        self.stats.horizon_reached = Some(at);
    }

    /// Why `state`'s job did not end; `None` when it did.
    pub(crate) fn unfinished_reason(&self, state: &JobState, spec: &JobSpec) -> Option<String> {
        if state.outcome.is_some() {
            return None;
        }
        let when = match self.stats.horizon_reached {
            Some(at) => format!("the run reached its horizon at {at}"),
            None => "the run ran out of events (the policy stopped starting it)".into(),
        };
        let running = state.tasks().filter(|t| self.tasks[t.index()].status == TaskStatus::Running).count();
        if running > 0 {
            return Some(format!("{when} with {running} of its tasks running"));
        }
        let gang = spec.tasks.iter().map(|t| t.gpus).max().unwrap_or(0);
        let total = self.cluster.gpu_count();
        let usable = total - self.health.unusable_gpus();
        Some(format!(
            "{when} with the job waiting: its largest task needs {gang} GPUs at once; {usable} of the cluster's {total} \
             GPUs were usable then"
        ))
    }
}
