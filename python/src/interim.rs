//! INTERIM: a stand-in for the root crate's `schedlab::RunSpec` until it lands on main (then
//! this file goes). Only trace, format, cluster, policy, failures and seed.

use serde::Deserialize;
use sim::{Cluster, ControllerConfig, Policy, Scenario};
use std::path::PathBuf;

pub type RunError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct RunSpec {
    pub trace: Option<PathBuf>,
    pub format: String,
    pub cluster: Option<String>,
    pub policy: String,
    pub failures: Option<String>,
    pub seed: u64,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            trace: None,
            format: "canonical".into(),
            cluster: None,
            policy: "fifo".into(),
            failures: None,
            seed: 0,
        }
    }
}

pub struct RunOutcome {
    pub result: sim::RunResult,
    pub summary: reports::Summary,
}

impl RunSpec {
    pub fn run(&self) -> Result<RunOutcome, RunError> {
        let mut policy = policies::build(&self.policy).map_err(|e| e.to_string())?;
        self.run_with_policy(policy.as_mut())
    }

    pub fn run_with_policy(&self, policy: &mut dyn Policy) -> Result<RunOutcome, RunError> {
        let path = self.trace.as_ref().ok_or("interim: give a trace")?;
        let trace = traces::load(path, self.format.parse()?)?;
        let spec = match &self.cluster {
            Some(text) => traces::parse_cluster_shorthand(text)?,
            None => trace.cluster.clone().ok_or("give a cluster")?,
        };
        let cluster = Cluster::new(&spec)?;
        let mut events = trace.events;
        let mut feed = None;
        if let Some(spec) = &self.failures {
            let spec: traces::FailureSpec = spec.parse()?;
            let start = trace.workload.jobs().first().map_or(sim::SimTime::ZERO, |j| j.submit);
            match spec.resolve(&cluster, start, self.seed)? {
                traces::Failures::Events(fixed) => events.extend(fixed),
                traces::Failures::Feed(f) => feed = Some(f),
            }
        }
        let mut scenario = Scenario::new(cluster, trace.workload).with_events(events)?;
        if let Some(feed) = feed {
            scenario = scenario.with_feed(feed);
        }
        let config = ControllerConfig { seed: self.seed, record_series: true, ..ControllerConfig::default() };
        let result = sim::simulate(scenario, policy, config)?;
        let summary = reports::Summary::of(&result);
        Ok(RunOutcome { result, summary })
    }
}
