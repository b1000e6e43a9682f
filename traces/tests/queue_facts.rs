//! The virtual-cluster importers on the real files, against their SOURCE.md facts: Philly's
//! philly_vc.csv (11 VCs, 352 nodes of quota) and Helios's per-day VC sizes (each day's VC
//! columns add up to its `total`; VCs with no GPUs that day are named, never dropped silently).

mod common;

use common::shared_traces;
use std::fs::File;

#[test]
fn philly_vc_quotas_become_eleven_capped_queues() {
    let Some(dir) = shared_traces() else { return };
    let file = File::open(dir.join("philly-pollux/philly_vc.csv")).expect("philly_vc.csv opens");
    let queues = traces::read_philly_vc_csv(file, "philly_vc.csv", 8, true).expect("philly_vc.csv reads");
    assert_eq!(queues.len(), 11, "SOURCE.md: 11 VCs");
    let gpus: u32 = queues.iter().map(|q| q.max_gpus.expect("every VC has a quota")).sum();
    assert_eq!(gpus, 352 * 8, "SOURCE.md: 352 nodes of 8 GPUs");
    assert!(queues.iter().all(|q| q.borrow && q.weight == 1));
    // The VC with the most jobs (SOURCE.md) has a quota; the four tiny VCs have none.
    assert!(queues.iter().any(|q| q.name == "6214e9"));
    for tiny in ["23dbec", "51b7ef", "925e2b", "795a4c"] {
        assert!(queues.iter().all(|q| q.name != tiny), "{tiny} has no quota in philly_vc.csv");
    }
}

/// (file, first day, its total GPUs and VCs with GPUs, last day, its total and VCs with GPUs),
/// read off the files' rows as SOURCE.md describes them (25 VC columns, 181 days).
const HELIOS: &[(&str, &str, u32, usize, &str, u32, usize)] = &[
    ("Venus_cluster_gpu_number.csv", "2020-04-01", 968, 18, "2020-09-28", 1080, 16),
    ("Earth_cluster_gpu_number.csv", "2020-04-01", 784, 16, "2020-09-28", 1208, 19),
];

#[test]
fn helios_vc_sizes_become_queues_for_the_chosen_day() {
    let Some(dir) = shared_traces() else { return };
    for &(name, first, first_gpus, first_vcs, last, last_gpus, last_vcs) in HELIOS {
        let path = dir.join("helios-aggregates").join(name);
        let read = |date: Option<&str>| {
            traces::read_helios_vc_csv(File::open(&path).expect("opens"), name, date, false).expect("reads")
        };
        for (date, gpus, vcs) in [(Some(first), first_gpus, first_vcs), (Some(last), last_gpus, last_vcs)] {
            let (queues, notes) = read(date);
            assert_eq!(queues.len(), vcs, "{name} {date:?}: VCs with GPUs");
            assert_eq!(queues.iter().filter_map(|q| q.max_gpus).sum::<u32>(), gpus, "{name} {date:?}: total");
            assert_eq!(notes.len(), 25 - vcs, "{name} {date:?}: every VC without GPUs is named");
        }
        // No date: the last day.
        assert_eq!(read(None), read(Some(last)), "{name}");
        let e = traces::read_helios_vc_csv(File::open(&path).unwrap(), name, Some("2019-01-01"), false).unwrap_err();
        assert!(e.to_string().contains("no row for date `2019-01-01`"), "{e}");
    }
}
