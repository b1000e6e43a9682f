//! A streamed run's reading and writing on threads of their own, beside the simulation's: jobs
//! are read (parsed, or drawn) ahead of the engine on one thread, and its records are written
//! (formatted, summed) behind it on another, each in batches through a bounded channel. The
//! simulation stays on the caller's thread, alone and deterministic: a channel keeps the
//! order of what passes through it, so the engine sees the same jobs in the same order and the
//! sink the same records in the same order as without the threads. On two cores this takes
//! the reading and writing (about a third of a run) off the engine's path.

use sim::{DecisionRecord, JobRecord, Name, RecordSink, TaskRecord};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Items to a batch: enough that a batch's hand-over costs little beside its items, few enough
/// that the batches in flight hold little memory (a few MB at most). Each hand-over wakes the
/// other side's thread (the reader waits on a full channel, the writer on an empty one), and
/// on a virtual machine a wake-up took about 5 % of the engine's thread at 1,024 a batch.
const BATCH: usize = 4096;
/// Batches in flight a side: the reader may get this far ahead, the writer this far behind.
const IN_FLIGHT: usize = 2;

/// `items` (jobs, parsed or drawn), read on a thread of `scope` in batches, handed out as
/// they come: the items before an error, then the error, where the thread stops reading.
/// The thread also stops when the items run out or the iterator returned is dropped (a run
/// that stops early). The engine admits a job straight from its batch ([`sim::JobFeed`]).
pub(crate) fn read_ahead<'scope, T: Send + 'static, E: Send + 'static>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    mut items: impl Iterator<Item = Result<T, E>> + Send + 'scope,
) -> impl Iterator<Item = Result<Vec<T>, E>> + Send + 'static {
    let (send, receive) = sync_channel::<Result<Vec<T>, E>>(IN_FLIGHT);
    scope.spawn(move || {
        loop {
            let (batch, error) = next_batch(&mut items);
            let last = batch.len() < BATCH;
            if !batch.is_empty() && send.send(Ok(batch)).is_err() {
                return;
            }
            if let Some(error) = error {
                let _ = send.send(Err(error));
            }
            if last {
                return;
            }
        }
    });
    receive.into_iter()
}

/// The next items, up to a batch's, and the error that stopped it short.
fn next_batch<T, E>(items: &mut impl Iterator<Item = Result<T, E>>) -> (Vec<T>, Option<E>) {
    let mut batch = Vec::with_capacity(BATCH);
    for item in items.take(BATCH) {
        match item {
            Ok(item) => batch.push(item),
            Err(error) => return (batch, Some(error)),
        }
    }
    (batch, None)
}

/// One record in a batch on its way to the sink.
enum Record {
    Decision(DecisionRecord, Name, Option<Name>),
    Job(JobRecord, Vec<TaskRecord>),
}

/// The engine's side of a sink on a thread of its own: records gathered into batches and sent.
/// [`WriteBehind::finish`] sends the last batch; the sink's thread then ends. The sink's thread
/// gives each batch back empty, and the next is gathered in it: a new batch each time (a
/// megabyte) was fresh pages to fault in on the engine's thread.
pub(crate) struct WriteBehind {
    batch: Vec<Record>,
    send: SyncSender<Vec<Record>>,
    emptied: Receiver<Vec<Record>>,
}

/// `sink`, fed on a thread of `scope` from the [`WriteBehind`] returned; the thread ends once
/// that is finished (or dropped).
pub(crate) fn write_behind<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    sink: &'env mut (dyn RecordSink + Send),
) -> WriteBehind {
    let (send, receive) = sync_channel::<Vec<Record>>(IN_FLIGHT);
    let (give_back, emptied) = sync_channel::<Vec<Record>>(IN_FLIGHT + 1);
    scope.spawn(move || drain(receive, &give_back, sink));
    WriteBehind { batch: Vec::with_capacity(BATCH), send, emptied }
}

fn drain(receive: Receiver<Vec<Record>>, give_back: &SyncSender<Vec<Record>>, sink: &mut (dyn RecordSink + Send)) {
    for mut batch in receive {
        for record in batch.drain(..) {
            match record {
                Record::Decision(decision, job, task) => sink.decision(decision, &job, task.as_deref()),
                Record::Job(job, tasks) => sink.job(job, tasks),
            }
        }
        // Never waits: with more room than batches in flight, a full channel means the
        // engine's side is gone or has batches enough.
        let _ = give_back.try_send(batch);
    }
}

impl WriteBehind {
    fn push(&mut self, record: Record) {
        self.batch.push(record);
        if self.batch.len() == BATCH {
            self.send_batch();
        }
    }

    fn send_batch(&mut self) {
        let next = self.emptied.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        // The sink's thread only stops early by panicking, which the scope then raises.
        let _ = self.send.send(batch);
    }

    /// Sends what is gathered; the sink's thread ends once it has written it.
    pub(crate) fn finish(mut self) {
        if !self.batch.is_empty() {
            self.send_batch();
        }
    }
}

impl RecordSink for WriteBehind {
    fn decision(&mut self, decision: DecisionRecord, job_name: &str, task_name: Option<&str>) {
        self.push(Record::Decision(decision, job_name.into(), task_name.map(Name::from)));
    }
    fn job(&mut self, job: JobRecord, tasks: Vec<TaskRecord>) {
        self.push(Record::Job(job, tasks));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{JobId, JobSpec, SimTime};

    /// `n` single-task jobs named by their number, an error after the last when `fail` (as a
    /// trace with a bad row past its good ones).
    fn feed(n: usize, fail: bool) -> impl Iterator<Item = Result<JobSpec, String>> + Send {
        let jobs = (0..n).map(|i| {
            Ok(JobSpec::single(i.to_string(), SimTime::from_secs(i as u64), 1, sim::SimDuration::from_secs(1)))
        });
        jobs.chain(fail.then(|| Err("jobs.csv:9: bad".to_string())))
    }

    /// The items of batches read ahead, one by one, the error in its place.
    fn one_by_one<T>(batches: impl Iterator<Item = Result<Vec<T>, String>>) -> Vec<Result<T, String>> {
        batches
            .flat_map(|batch| match batch {
                Ok(items) => items.into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error)],
            })
            .collect()
    }

    #[test]
    fn jobs_read_ahead_arrive_all_and_in_order() {
        for n in [0, 1, BATCH - 1, BATCH, BATCH + 1, 5 * BATCH + 7] {
            let got = std::thread::scope(|s| one_by_one(read_ahead(s, feed(n, true))));
            assert_eq!(got.len(), n + 1, "{n} jobs and the error");
            for (i, job) in got[..n].iter().enumerate() {
                assert_eq!(job.as_ref().map(|j| j.name.as_str()), Ok(i.to_string().as_str()));
            }
            assert_eq!(got[n], Err("jobs.csv:9: bad".to_string()));
        }
    }

    #[test]
    fn a_feed_dropped_early_stops_its_reader() {
        // Only two batches are read here; the reader, blocked on a full channel, must see the
        // channel closed and end, or the scope never returns.
        let first = std::thread::scope(|s| one_by_one(read_ahead(s, feed(100 * BATCH, false)).take(2)));
        assert_eq!(first.len(), 2 * BATCH);
    }

    #[test]
    fn records_written_behind_reach_the_sink_in_order() {
        let mut collect = sim::Collect::default();
        let n = 3 * BATCH + 5;
        std::thread::scope(|s| {
            let mut behind = write_behind(s, &mut collect);
            for i in 0..n {
                let decision = DecisionRecord {
                    time: SimTime::from_secs(i as u64),
                    kind: sim::DecisionKind::Start,
                    job: JobId::from_index(i),
                    task: None,
                    gpus: Vec::new(),
                    detail: String::new(),
                };
                behind.decision(decision, "j", None);
            }
            behind.finish();
        });
        let times: Vec<u64> = collect.decisions.iter().map(|d| d.time.as_ms() / 1000).collect();
        assert_eq!(times, (0..n as u64).collect::<Vec<_>>());
    }
}
