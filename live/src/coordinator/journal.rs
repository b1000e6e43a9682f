//! What the coordinator journals, and when: each batch into SQLite ([`super::store`]) before
//! it is applied to the [`Driver`](crate::driver::Driver), with what fell due before it; and the
//! session as a canonical trace directory, `STATE/journal/` ([`super::replay`]), written off the
//! coordinator's thread at most every `--journal-every-s`.

use super::Coordinator;
use super::replay::{journal_snapshot, write_journal};
use super::store::Store;
use crate::config::LiveConfig;
use crate::driver::{Batch, Driver, Input};
use sim::SimTime;
use std::thread::JoinHandle;
use std::time::Instant;

/// The Driver of a state directory: its journal replayed, or for a new directory a fresh one
/// whose start batch is journaled and applied; and the SimTime the clock resumes at (1 ms after
/// the journal's last batch: time while the coordinator was down does not count).
pub(super) fn replay(
    store: &mut Store,
    config: LiveConfig,
    registry: &policies::Registry,
) -> Result<(Driver, u64), String> {
    let journal = store.batches()?;
    let Some(last) = journal.last().map(|b| b.time_ms) else {
        let mut driver = Driver::with_registry(config, registry)?;
        let start = driver.start_batch();
        store.append(std::slice::from_ref(&start))?;
        driver.apply(start)?;
        return Ok((driver, 1));
    };
    Ok((Driver::replay_with(config, registry, journal)?, last + 1))
}

impl Coordinator {
    /// SimTime now by the wall clock.
    pub(super) fn clock(&self) -> SimTime {
        SimTime(self.base_ms + self.epoch.elapsed().as_millis() as u64)
    }

    /// Journals and applies what fell due up to now, then `inputs` (if any) at now.
    pub(super) fn commit(&mut self, inputs: Vec<Input>) -> Result<(), String> {
        let now = self.clock().max(self.driver.now() + sim::SimDuration(1));
        while let Some(due) = self.driver.next_due().filter(|&d| d < now || (inputs.is_empty() && d <= now)) {
            self.write_and_apply(Batch { time_ms: due.as_ms(), inputs: vec![Input::Tick] })?;
        }
        if !inputs.is_empty() {
            self.write_and_apply(Batch { time_ms: now.as_ms(), inputs })?;
        }
        Ok(())
    }

    fn write_and_apply(&mut self, batch: Batch) -> Result<(), String> {
        self.store.append(std::slice::from_ref(&batch))?;
        let decisions = self.driver.decisions().len();
        let started = Instant::now();
        let ticks = self.driver.apply(batch)?;
        self.apply_time += started.elapsed();
        self.batches_applied += 1;
        debug_assert!(ticks.is_empty(), "due ticks are applied first");
        self.journal_dirty = true;
        for d in &self.driver.decisions()[decisions..] {
            let task = d.task.map(|t| format!(" task {}", t.0)).unwrap_or_default();
            let gpus: Vec<String> = d.gpus.iter().map(|g| g.0.to_string()).collect();
            let detail = if d.detail.is_empty() { String::new() } else { format!(" ({})", d.detail) };
            self.log(format!("{} job {}{task} gpus [{}]{detail}", d.kind.as_str(), d.job.0, gpus.join(",")));
        }
        Ok(())
    }

    /// Starts writing `STATE/journal/` when something changed, no writing is under way, and
    /// the last one ended long enough ago (see [`Coordinator::journal_next`]); collects the
    /// one under way when it ended. A snapshot of the session is taken here (the trace in
    /// memory: 2.7 ms for a 16-node hour of heartbeats) and written on a thread of its own
    /// (14 to 27 ms for that hour), so the writing, which grows with the session, never holds
    /// up this thread.
    pub(super) fn journal_step(&mut self) {
        if self.journal_writer.as_ref().is_some_and(JoinHandle::is_finished) {
            self.collect_journal_writer();
        }
        if !self.journal_dirty || self.journal_writer.is_some() || Instant::now() < self.journal_next {
            return;
        }
        let dir = self.state_dir.join("journal");
        self.journal_dirty = false;
        match journal_snapshot(&self.driver, &dir) {
            Ok(None) => {}
            Ok(Some(snapshot)) => {
                let writer = std::thread::Builder::new().name("journal".into()).spawn(move || {
                    let started = Instant::now();
                    (snapshot.write(), started.elapsed())
                });
                match writer {
                    Ok(writer) => self.journal_writer = Some(writer),
                    Err(e) => self.journal_failed(format!("cannot start its thread: {e}")),
                }
            }
            Err(e) => self.journal_failed(e),
        }
    }

    /// Waits for the journal writing under way, if any, and logs how it ended. The next one
    /// starts `--journal-every-s` after it, or ten times as long as it took if that is longer:
    /// writing a long session's journal takes at most a tenth of a core.
    fn collect_journal_writer(&mut self) {
        let Some(writer) = self.journal_writer.take() else { return };
        match writer.join() {
            Ok((Ok(()), took)) => self.journal_next = Instant::now() + self.journal_every.max(took * 10),
            Ok((Err(e), _)) => self.journal_failed(e),
            Err(_) => self.journal_failed("its thread panicked".into()),
        }
    }

    /// The trace journal is a copy of what SQLite holds: failing to write it is logged, and
    /// retried at the next interval, never fatal.
    fn journal_failed(&mut self, why: String) {
        self.log(format!("cannot write the journal: {why}"));
        self.journal_dirty = true;
        self.journal_next = Instant::now() + self.journal_every;
    }

    /// Writes the session as a canonical trace directory, `STATE/journal/`, replaced whole,
    /// after the writing under way (if any) ended: what `run` does last.
    pub fn write_journal(&mut self) -> Result<(), String> {
        self.collect_journal_writer();
        write_journal(&self.driver, &self.state_dir.join("journal"))?;
        self.journal_dirty = false;
        Ok(())
    }
}
