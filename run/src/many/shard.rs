//! A plan sliced into shards (`--shard I/N`: the runs numbered I modulo N), and the manifest
//! (sweep.json) of the folder that holds one slice, or the whole sweep.

use super::Plan;
use reports::sweep::{Shard, SweepManifest, SweepRun};

/// The version written in sweep.json: shards merge only with the version that wrote them.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

impl Plan {
    /// The runs `shard` holds, in run order; every run without a shard.
    pub fn slice(&self, shard: Option<Shard>) -> Vec<SweepRun> {
        self.runs.iter().filter(|r| shard.is_none_or(|s| s.holds(r.run))).cloned().collect()
    }

    /// sweep.json of the folder holding `shard` (the whole sweep without one).
    pub fn manifest(&self, shard: Option<Shard>) -> SweepManifest {
        SweepManifest {
            schedlab_version: VERSION.to_string(),
            settings: self.settings.clone(),
            runs_total: self.runs.len(),
            shard,
            runs: self.slice(shard),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policies::Registry;
    use reports::sweep::SweepSettings;

    fn plan(seeds: u64) -> Plan {
        let settings = SweepSettings {
            traces: vec![],
            policies: vec!["fifo".into(), "sjf".into(), "srtf".into()],
            grid: vec![],
            seeds: (0..seeds).collect(),
            run: serde_json::Map::new(),
        };
        Plan::new(settings, &Registry::builtin()).unwrap()
    }

    #[test]
    fn the_shards_of_a_plan_partition_it_exactly() {
        for (seeds, count) in [(1, 1), (2, 4), (3, 5), (5, 7), (4, 12), (1, 9)] {
            let plan = plan(seeds);
            let mut held = vec![0; plan.runs.len()];
            for index in 0..count {
                let slice = plan.slice(Some(Shard { index, count }));
                assert!(slice.windows(2).all(|w| w[0].run < w[1].run), "run order");
                for run in slice {
                    assert_eq!(run, plan.runs[run.run]);
                    assert_eq!(run.run % count, index);
                    held[run.run] += 1;
                }
            }
            assert!(held.iter().all(|&h| h == 1), "{seeds} seeds in {count} shards: {held:?}");
        }
    }

    #[test]
    fn a_manifest_lists_its_shard_of_the_whole_sweep() {
        let plan = plan(2);
        let shard = Shard { index: 1, count: 4 };
        let manifest = plan.manifest(Some(shard));
        assert_eq!((manifest.runs_total, manifest.shard), (6, Some(shard)));
        assert_eq!(manifest.runs.iter().map(|r| r.run).collect::<Vec<_>>(), [1, 5]);
        assert_eq!(plan.manifest(None).runs, plan.runs);
    }
}
