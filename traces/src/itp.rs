//! Importer for the Microsoft ITP per-cluster job traces released with ElasticFlow
//! (`clusterNN.csv`: `job_id,submission_time,duration,num_gpu`, seconds as integers, rows
//! sorted by submission). Every row is one single-task job; the trace has no queue, GPU type
//! or status. Columns other than those four are ignored (the ElasticFlow variant of the trace
//! adds synthetic ones).

use crate::error::{Sink, TraceError, first_error};
use crate::names::NameIndex;
use crate::rows::{Column, Row, Rows, Unknown};
use sim::{JobSpec, SimDuration, SimTime, Workload};
use std::io::Read;

pub(crate) const KNOWN: &[Column] = &[
    Column { name: "job_id", required: true },
    Column { name: "submission_time", required: true },
    Column { name: "duration", required: true },
    Column { name: "num_gpu", required: true },
];

/// Reads one ITP cluster file; `file` names it in errors.
pub fn read_itp_csv<R: Read>(source: R, file: &str) -> Result<Workload, TraceError> {
    first_error(file, |sink| read_itp_into(source, file, sink))
}

pub(crate) fn read_itp_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<Workload> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Ignore, sink)?;
    let mut itp = ItpRows::new(&c)?;
    let jobs = rows.parse_all(sink, |row| itp.parse(row))?;
    finish(jobs, rows.file(), sink)
}

/// The one parser of ITP rows, for the whole-file reader and the stream: a row becomes a job.
pub(crate) struct ItpRows {
    id_col: usize,
    submit_col: usize,
    duration_col: usize,
    gpus_col: usize,
    /// Job ids are the names reports show; two jobs with one id could not be told apart:
    /// the line of each id's row. `None`: rows read again, checked the first time.
    first_line: Option<NameIndex>,
}

impl ItpRows {
    /// The parser for a header whose [`KNOWN`] columns are `c` (`None` if one is missing).
    pub(crate) fn new(c: &[Option<usize>]) -> Option<ItpRows> {
        Some(ItpRows {
            id_col: (*c.first()?)?,
            submit_col: (*c.get(1)?)?,
            duration_col: (*c.get(2)?)?,
            gpus_col: (*c.get(3)?)?,
            first_line: Some(NameIndex::new()),
        })
    }

    /// The same parser for rows read again, after this one read them: without the check
    /// that each id is new (each is, and the ids it holds would be the file's).
    pub(crate) fn rereading(&self) -> ItpRows {
        ItpRows { first_line: None, ..*self }
    }

    /// The column of the submit time.
    pub(crate) fn submit_column(&self) -> usize {
        self.submit_col
    }

    /// Reads one row.
    pub(crate) fn parse(&mut self, row: &Row<'_>) -> Result<JobSpec, TraceError> {
        let id = row.name_field(self.id_col, "a job id")?;
        let submit_ms = row.seconds_ms(self.submit_col)?;
        let work_ms = row.positive_seconds_ms(self.duration_col)?;
        let gpus = row.gpus(self.gpus_col)?;
        if let Some(first) = self.first_line.as_mut().and_then(|seen| seen.insert_if_new(id, row.line)) {
            return Err(row.error(self.id_col, format!("a job id not used before (line {first} has it)"), id));
        }
        Ok(JobSpec::single(id, SimTime(submit_ms), gpus, SimDuration(work_ms)))
    }
}

/// The end every jobs reader shares (canonical, ITP, Philly): at least one job, then the
/// workload (sorted by submit time, file order breaking ties).
pub(crate) fn finish(jobs: Vec<JobSpec>, file: &str, sink: &mut Sink) -> Option<Workload> {
    if jobs.is_empty() {
        if sink.is_empty() {
            sink.push(TraceError::file(file, "no jobs: the file has a header but no rows"));
        }
        return None;
    }
    sink.ok(Workload::new(in_submit_order(jobs)).map_err(|e| TraceError::file(file, e.0)))
}

/// The positions of `submits` (submit times in milliseconds) in submit order, ties in
/// position order: the stable order. Sorted as distinct keys (time since the earliest, then
/// position) packed in one `u64` where both fit, as nearly always (a trace spanning under
/// 2^47 ms, about 4,400 years, with up to 2^17 jobs), else in a `u128`; an unstable sort of
/// distinct keys is stable.
pub(crate) fn stable_order(submits: impl ExactSizeIterator<Item = u64> + Clone) -> Vec<usize> {
    let n = submits.len();
    // Bits that hold any position below n.
    let bits = usize::BITS - n.leading_zeros();
    let (earliest, latest) = submits.clone().fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let span = latest.saturating_sub(earliest);
    if bits < 64 && span.checked_shr(64 - bits).unwrap_or(0) == 0 {
        let mut keys: Vec<u64> = submits.enumerate().map(|(i, t)| (t - earliest) << bits | i as u64).collect();
        sort_keys(&mut keys, bits);
        let mask = (1u64 << bits) - 1;
        return keys.iter().map(|&k| (k & mask) as usize).collect();
    }
    let mut keys: Vec<u128> = submits.enumerate().map(|(i, t)| u128::from(t) << 64 | i as u128).collect();
    keys.sort_unstable();
    keys.iter().map(|&k| k as u64 as usize).collect()
}

/// Sorts `keys`: distinct, and in order of their low `position_bits` bits (each key's position,
/// as [`stable_order`] makes them). Once there are enough keys to pay for its counts, a radix
/// sort of the bits above, 12 at a time from the lowest: each pass keeps the order of keys
/// that tie on its digit, so keys equal above end in position order, as a sort of the whole
/// keys puts them. A few passes over the keys (a digit that all keys share costs none) where
/// a comparison sort makes about log2(n) rounds of comparisons.
fn sort_keys(keys: &mut Vec<u64>, position_bits: u32) {
    const DIGIT: u32 = 12;
    const RADIX: usize = 1 << DIGIT;
    let n = keys.len();
    if n < 1024 {
        keys.sort_unstable();
        return;
    }
    let digit = |key: u64, pass: usize| ((key >> position_bits >> (DIGIT as usize * pass)) as usize) & (RADIX - 1);
    let highest = keys.iter().fold(0, |all, &key| all | key >> position_bits);
    let passes = (u64::BITS - highest.leading_zeros()).div_ceil(DIGIT) as usize;
    let mut counts = vec![[0usize; RADIX]; passes];
    for &key in keys.iter() {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[digit(key, pass)] += 1;
        }
    }
    let mut sorted = vec![0u64; n];
    for (pass, count) in counts.iter().enumerate() {
        if count.contains(&n) {
            continue;
        }
        let mut next = [0usize; RADIX];
        let mut start = 0;
        for (next, &count) in next.iter_mut().zip(count) {
            *next = start;
            start += count;
        }
        for &key in keys.iter() {
            let slot = &mut next[digit(key, pass)];
            sorted[*slot] = key;
            *slot += 1;
        }
        std::mem::swap(keys, &mut sorted);
    }
}

/// The jobs sorted by submit time, file order breaking ties: the order `Workload::new` gives,
/// found here by sorting small (time, position) keys and moving each job once, where the
/// stable sort inside `Workload::new` would move the large jobs about log n times each. Its
/// own sort then finds one sorted run and moves nothing.
pub(crate) fn in_submit_order(jobs: Vec<JobSpec>) -> Vec<JobSpec> {
    if jobs.is_sorted_by_key(|j| j.submit) {
        return jobs;
    }
    let order = stable_order(jobs.iter().map(|j| j.submit.as_ms()));
    let mut slots: Vec<Option<JobSpec>> = jobs.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots.get_mut(i).and_then(Option::take)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn stable_order_is_the_stable_sort(
            times in proptest::collection::vec(0u64..50, 0..3000),
            scale in proptest::sample::select(vec![1u64, 1000, 1 << 40, 1 << 57]),
        ) {
            // Small and large keys: the radix sort and the comparison sort, of u64 and u128 keys.
            let times: Vec<u64> = times.iter().map(|&t| t * scale).collect();
            let mut expected: Vec<usize> = (0..times.len()).collect();
            expected.sort_by_key(|&i| times[i]);
            proptest::prop_assert_eq!(stable_order(times.iter().copied()), expected);
        }
    }

    const HEAD: &str = "job_id,submission_time,duration,num_gpu\n";

    #[test]
    fn rows_become_single_task_jobs() {
        let text = format!("{HEAD}b,20,600,8\na,10,1032,1");
        let w = read_itp_csv(text.as_bytes(), "cluster01.csv").unwrap();
        let a = &w.jobs()[0];
        assert_eq!(a.name, "a");
        assert_eq!(a.submit, SimTime(10_000));
        assert_eq!(a.tasks[0].work, SimDuration(1_032_000));
        assert_eq!(a.queue, None);
        assert_eq!(w.jobs()[1].gpus(), 8);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = |t: &str| read_itp_csv(format!("{HEAD}{t}").as_bytes(), "c.csv").unwrap_err().to_string();
        assert_eq!(
            e("a,1,600,1\na,2,600,1\n"),
            "c.csv:3: field `job_id`: expected a job id not used before (line 2 has it), got \"a\""
        );
        assert!(e("a,1,600,x\n").starts_with("c.csv:2: field `num_gpu`"));
        assert!(e("a,1,-600,1\n").starts_with("c.csv:2: field `duration`"));
        assert!(e("a,,600,1\n").starts_with("c.csv:2: field `submission_time`"));
        let e = read_itp_csv("job_id,duration,num_gpu\n".as_bytes(), "c.csv").unwrap_err().to_string();
        assert!(e.contains("no column `submission_time`"), "{e}");
    }

    #[test]
    fn submit_order_is_the_stable_sort() {
        let submits = [5, 1, 5, 0, 1, 5, 3, 0];
        let jobs: Vec<JobSpec> = submits
            .iter()
            .enumerate()
            .map(|(i, &s)| JobSpec::single(format!("j{i}"), SimTime(s), 1, SimDuration(1)))
            .collect();
        let mut expected = jobs.clone();
        expected.sort_by_key(|j| j.submit);
        assert_eq!(in_submit_order(jobs.clone()), expected);
        assert_eq!(in_submit_order(expected.clone()), expected);
        assert_eq!(in_submit_order(Vec::new()), Vec::<JobSpec>::new());
    }

    #[test]
    fn extra_columns_are_ignored() {
        let text = "job_id,model,submission_time,duration,num_gpu\na,resnet,1,600,2\n";
        let w = read_itp_csv(text.as_bytes(), "c.csv").unwrap();
        assert_eq!(w.jobs()[0].gpus(), 2);
    }
}
