//! The report's table of interruptions by job size: how often jobs of each size were
//! interrupted (hardware failures and preemptions) and the mean time between interruptions,
//! the figure operators compare with their own fleet. Bins of up to 8, 64, 512, 4,096 and
//! 16,384 GPUs, and above.

use super::build::{Cell, Item, Table};
use super::input::Job;

/// Upper bounds (GPUs) of the size bins; a last bin takes what is above.
const BINS: [f64; 5] = [8.0, 64.0, 512.0, 4_096.0, 16_384.0];

/// Jobs that ran, interruptions and run time, per size bin.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    jobs: u64,
    interruptions: f64,
    run_s: f64,
}

fn bin_name(bin: usize) -> String {
    match bin {
        0 => "1-8 GPUs".into(),
        b if b < BINS.len() => format!("{}-{} GPUs", BINS[b - 1] as u64 + 1, BINS[b] as u64),
        _ => format!("over {} GPUs", BINS[BINS.len() - 1] as u64),
    }
}

/// Per bin, over the jobs that started and ended; None when the run folder predates the
/// `interruptions` column.
fn tally(jobs: &[Job]) -> Option<Vec<Tally>> {
    let mut bins = vec![Tally::default(); BINS.len() + 1];
    for job in jobs {
        let Some(run_s) = job.run_s else { continue };
        let bin = BINS.iter().position(|&max| job.gpus <= max).unwrap_or(BINS.len());
        bins[bin].jobs += 1;
        bins[bin].interruptions += job.interruptions?;
        bins[bin].run_s += run_s;
    }
    Some(bins)
}

/// The table for one trace: a row per policy (its lowest seed) and size bin that ran jobs.
/// None when no run has the column.
pub(super) fn table(id: &str, trace: &str, runs: &[(&str, &[Job])]) -> Option<Item> {
    let mut rows = Vec::new();
    for &(spec, jobs) in runs {
        let Some(bins) = tally(jobs) else { continue };
        for (bin, t) in bins.iter().enumerate().filter(|(_, t)| t.jobs > 0) {
            let per_day = if t.run_s > 0.0 { t.interruptions * 86_400.0 / t.run_s } else { 0.0 };
            let mtbi = if t.interruptions > 0.0 { crate::tables::human(t.run_s / t.interruptions) } else { "-".into() };
            rows.push(vec![
                Cell::text(spec),
                Cell::text(bin_name(bin)),
                Cell::text(t.jobs.to_string()),
                Cell::text(format!("{}", t.interruptions)),
                Cell::text(format!("{per_day:.3}")),
                Cell::text(mtbi),
            ]);
        }
    }
    if rows.is_empty() {
        return None;
    }
    let header = ["policy", "job size", "jobs", "interruptions", "per job-day", "mean time between"];
    Some(Item::Table(Table {
        id: format!("interruptions-{id}"),
        caption: format!("{trace}: interruptions by job size"),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
        foot: "Jobs that started and ended, lowest seed of each policy: attempts ended by a hardware failure or a \
               preemption, per day that the jobs of the bin ran (first start to end), and the mean time between \
               them. A gang of N GPUs is hit by the failures of all its nodes: its rate grows with N."
            .into(),
        more: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(gpus: f64, run_s: Option<f64>, interruptions: Option<f64>) -> Job {
        Job { queue: String::new(), jct_s: None, queue_s: None, gpus, run_s, interruptions }
    }

    #[test]
    fn jobs_fall_in_their_size_bins() {
        let jobs = [
            job(8.0, Some(86_400.0), Some(1.0)),
            job(9.0, Some(43_200.0), Some(2.0)),
            job(64.0, Some(43_200.0), Some(2.0)),
            job(20_000.0, Some(3_600.0), Some(3.0)),
            job(16.0, None, Some(0.0)),
        ];
        let bins = tally(&jobs).unwrap();
        assert_eq!((bins[0].jobs, bins[0].interruptions), (1, 1.0));
        assert_eq!((bins[1].jobs, bins[1].interruptions, bins[1].run_s), (2, 4.0, 86_400.0));
        assert_eq!((bins[5].jobs, bins[5].interruptions), (1, 3.0));
        assert_eq!(bin_name(1), "9-64 GPUs");
        assert_eq!(bin_name(5), "over 16384 GPUs");
        let Some(Item::Table(t)) = table("t", "trace", &[("fifo", &jobs)]) else { panic!() };
        assert_eq!(t.rows.len(), 3);
        assert_eq!(
            t.rows[1].iter().map(|c| c.text.as_str()).collect::<Vec<_>>(),
            ["fifo", "9-64 GPUs", "2", "4", "4.000", "6.00 h"]
        );
        assert!(tally(&[job(8.0, Some(1.0), None)]).is_none());
    }
}
