//! Forecasts off the coordinator's thread. A forecast is a simulation whose cost grows with
//! the partition's queue (36 ms to 1.5 minutes for 10,000 pending jobs, by policy:
//! docs/performance.md): run on the one thread that polls Slurm and answers the API, a slow
//! one would hold up releases and every call. So each is computed on a thread of its own from
//! a copy of the mirror, at most one at a time, refreshed once the last is `every` old; the API
//! and `/metrics` serve the last one finished, with its time.

use super::shadow::{self, Mirror};
use run::RunSpec;
use serde_json::{Value, json};
use sim::ClusterSpec;
use std::collections::BTreeSet;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What one forecast reads, copied so that the coordinator goes on meanwhile.
pub struct Inputs {
    pub mirror: Mirror,
    pub cluster: ClusterSpec,
    pub names: Vec<String>,
    pub out: BTreeSet<u32>,
    pub now_unix: u64,
    pub run: RunSpec,
    pub registry: policies::Registry,
    /// Also compare Slurm with the policy since the shadow started.
    pub compare: bool,
}

#[derive(Default)]
pub struct Forecaster {
    /// The last forecast finished (its JSON, or why it failed) and when it started.
    last: Option<(Instant, Result<Value, String>)>,
    running: Option<(Instant, JoinHandle<Result<Value, String>>)>,
}

impl Forecaster {
    /// Collects a finished forecast; starts the next when none runs and the last is `every`
    /// old (`inputs` is asked for only then).
    pub fn step(&mut self, every: Duration, inputs: impl FnOnce() -> Inputs) {
        if self.running.as_ref().is_some_and(|(_, h)| h.is_finished()) {
            let (started, handle) = self.running.take().expect("checked");
            let result = handle.join().unwrap_or_else(|_| Err("the forecast's thread panicked".into()));
            self.last = Some((started, result));
        }
        let due = self.last.as_ref().is_none_or(|(at, _)| at.elapsed() >= every);
        if self.running.is_none() && due {
            let inputs = inputs();
            self.running = Some((Instant::now(), std::thread::spawn(move || compute(inputs))));
        }
    }

    /// The last forecast finished, with its age in seconds; None before the first.
    pub fn last(&self) -> Option<Result<Value, String>> {
        let (at, result) = self.last.as_ref()?;
        Some(result.clone().map(|mut v| {
            v["age_s"] = json!(at.elapsed().as_secs_f64());
            v
        }))
    }
}

fn compute(i: Inputs) -> Result<Value, String> {
    let forecast = shadow::forecast(&i.mirror, &i.cluster, &i.names, &i.out, i.now_unix, &i.run, &i.registry)?;
    let comparison =
        if i.compare { Some(shadow::compare(&i.mirror, &i.cluster, i.now_unix, &i.run, &i.registry)?) } else { None };
    Ok(json!({ "forecast": forecast, "comparison": comparison }))
}
