//! Failures of the node, not of a task's program: its work directory cannot be written (the
//! disk is full, over quota, read-only or failing). Reported as the attempt's exit (127, as
//! it once was), such a failure failed the task for good, as the program's own, while the node
//! looked healthy and kept getting work that failed the same way.
//!
//! Instead the agent takes GPUs of its node out of service: those of the attempt that could
//! not start (the coordinator retries it elsewhere, as after any GPU failure) and every idle
//! one (no more work comes). GPUs busy with running tasks stay in service (a full disk need
//! not stop what runs) until a start on them fails in turn. Once the disk is freed, an
//! operator returns the GPUs (`live return-gpu`).
//!
//! The GPUs are reported as [`HealthEvent::WorkDir`], with the system's error: the
//! coordinator takes them out as it does a lost GPU, and its log says why.

use super::Agent;
use crate::wire::{Assignment, HealthEvent};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// Whether `e` says the node's disk cannot be written, whatever the task: not the task's
/// failure.
pub fn is_node_fault(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT | libc::EROFS | libc::EIO))
}

/// A node fault seen away from the agent's loop (by a task log's thread), for the loop to act
/// on: the first reason raised since it last looked.
#[derive(Clone, Default)]
pub struct FaultFlag(Arc<Mutex<Option<String>>>);

impl FaultFlag {
    pub fn raise(&self, why: String) {
        let mut fault = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if fault.is_none() {
            *fault = Some(why);
        }
    }

    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The health event that takes `uuid` out of service for a node fault, `why`.
fn out_of_service(uuid: &str, why: &str) -> HealthEvent {
    HealthEvent::WorkDir { uuid: uuid.to_string(), error: why.to_string() }
}

impl Agent {
    /// Takes out of service, for `why`, the GPUs of `attempt` (one that could not start) and
    /// every idle GPU of the node; none it reported out already and was not given back.
    pub(super) fn drain(&mut self, attempt: Option<&Assignment>, why: &str) {
        let busy: BTreeSet<&String> = self.running.values().flat_map(|r| &r.gpus).collect();
        let idle = self.backend.gpus().unwrap_or_default().into_iter().map(|g| g.uuid).filter(|u| !busy.contains(u));
        let candidates: Vec<String> =
            attempt.map(|a| a.gpus.clone()).unwrap_or_default().into_iter().chain(idle).collect();
        let mut out = Vec::new();
        for uuid in candidates {
            // An empty UUID (a slot the coordinator could not name) would get the whole
            // heartbeat refused, and resent forever.
            if !uuid.is_empty() && self.reported_out.insert(uuid.clone()) {
                self.health.push(out_of_service(&uuid, why));
                out.push(uuid);
            }
        }
        let what = if out.is_empty() { "no GPU left to take out".to_string() } else { out.join(", ") };
        self.log(format!("{why}: a fault of this node, not of the task; out of service: {what}"));
    }

    /// A new attempt on a GPU it reported out means the GPU is back in service (returned by an
    /// operator): a later fault takes it out again.
    pub(super) fn note_returned(&mut self, assignments: &[Assignment]) {
        for a in assignments.iter().filter(|a| !self.started.contains(&(a.task, a.attempt))) {
            for uuid in &a.gpus {
                self.reported_out.remove(uuid);
            }
        }
    }

    /// Acts on a fault a task log's thread raised.
    pub(super) fn drain_on_fault(&mut self) {
        if let Some(why) = self.fault.take() {
            self.drain(None, &why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_read_only_or_failing_disk_is_the_nodes_fault_anything_else_is_not() {
        for errno in [libc::ENOSPC, libc::EDQUOT, libc::EROFS, libc::EIO] {
            assert!(is_node_fault(&std::io::Error::from_raw_os_error(errno)), "{errno}");
        }
        for errno in [libc::E2BIG, libc::ENOENT, libc::EACCES, libc::ENAMETOOLONG] {
            assert!(!is_node_fault(&std::io::Error::from_raw_os_error(errno)), "{errno}");
        }
        assert!(!is_node_fault(&std::io::Error::other("not a plain name")));
    }

    #[test]
    fn a_fault_flag_keeps_the_first_reason_until_taken() {
        let flag = FaultFlag::default();
        assert_eq!(flag.take(), None);
        flag.clone().raise("first".into());
        flag.raise("second".into());
        assert_eq!(flag.take().as_deref(), Some("first"));
        assert_eq!(flag.take(), None);
    }
}
