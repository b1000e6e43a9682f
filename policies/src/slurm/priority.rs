//! A job's priority as Slurm's priority plugin sets it. priority/basic: every job the same
//! (Slurm's counter falls with each submission, which the queue's tie-break on submission
//! and job id already orders). priority/multifactor (`priority_multifactor.c`):
//!
//! `P = Wage·age + Wfs·fairshare + Wjs·size + Wpart·partition + Wqos·qos`, at least 1,
//! truncated to a whole number; set at submission (age 0) and recomputed for every pending
//! job every `PriorityCalcPeriod`, when past usage is decayed and running jobs' usage added:
//! between two calculations a job's priority does not move.

use super::config::{Billing, PriorityType, SlurmConfig};
use super::fairshare::{Assoc, FairShare, powi};
use sim::{ClusterView, JobId, SimDuration, SimTime};
use std::collections::BTreeMap;

/// What the priority of one job is computed from.
#[derive(Debug, Clone)]
pub struct JobFacts {
    pub assoc: Assoc,
    pub partition: String,
    pub qos: String,
    /// Nodes it asks for (each holds one of its CPUs).
    pub nodes: u32,
    pub gpus: u32,
    /// When it began to accrue age (became eligible).
    pub eligible: SimTime,
}

impl JobFacts {
    pub fn of(view: &ClusterView<'_>, job: JobId, eligible: SimTime) -> JobFacts {
        let spec = view.job_spec(job);
        let owner = spec.owner.as_deref();
        let text = |f: fn(&sim::Owner) -> &str| owner.map(f).unwrap_or("").to_string();
        let nodes = spec.tasks.iter().map(|t| nodes_of(t.gpus, t.fixed_gpus_per_node())).sum();
        JobFacts {
            assoc: (text(|o| &o.account), text(|o| &o.user)),
            partition: spec.queue.as_deref().unwrap_or("").to_string(),
            qos: text(|o| &o.qos),
            nodes,
            gpus: spec.tasks.iter().map(|t| t.gpus).sum(),
            eligible,
        }
    }

    /// Its usage per second: the billing units it holds.
    pub fn billable(&self, billing: Billing) -> f64 {
        f64::from(match billing {
            Billing::Cpu => self.nodes,
            Billing::Gpu => self.gpus,
        })
    }
}

/// Nodes a task of `gpus` spans: `gpus / per_node` for a gang split evenly, else one.
pub fn nodes_of(gpus: u32, per_node: Option<u32>) -> u32 {
    per_node.map_or(1, |n| gpus.div_ceil(n.max(1)))
}

/// The priority plugin's state: usage, and each pending job's priority.
#[derive(Debug, Clone)]
pub struct Priorities {
    fair: FairShare,
    /// Decay per second of past usage (1: none).
    decay_per_s: f64,
    last_calc: Option<SimTime>,
    /// Each known job's priority.
    priority: BTreeMap<JobId, u32>,
    cluster_nodes: f64,
    cluster_cpus: f64,
}

impl Priorities {
    pub fn new(config: &SlurmConfig, cluster_nodes: u32, cluster_cpus: u32) -> Priorities {
        let half_life = config.decay_half_life.as_ms() / 1000;
        Priorities {
            fair: FairShare::new(config.shares.clone(), config.fair_tree),
            decay_per_s: if half_life > 0 { 1.0 - 0.693 / half_life as f64 } else { 1.0 },
            last_calc: None,
            priority: BTreeMap::new(),
            cluster_nodes: f64::from(cluster_nodes.max(1)),
            cluster_cpus: f64::from(cluster_cpus.max(1)),
        }
    }

    pub fn of(&self, job: JobId) -> u32 {
        self.priority.get(&job).copied().unwrap_or(1)
    }

    pub fn forget(&mut self, job: JobId) {
        self.priority.remove(&job);
    }

    /// A job submitted: its priority with age 0 and today's fair share.
    pub fn submitted(&mut self, config: &SlurmConfig, job: JobId, facts: &JobFacts) {
        if config.priority == PriorityType::Basic {
            return;
        }
        self.fair.know(&facts.assoc);
        let factors = self.fair.factors();
        let p = self.compute(config, facts, facts.eligible, &factors);
        self.priority.insert(job, p);
    }

    /// Usage of a job that ran from `from` (or the last calculation, if later) to `to`,
    /// charged at once (Slurm charges a job's last stretch when it ends).
    pub fn charge(&mut self, config: &SlurmConfig, facts: &JobFacts, from: SimTime, to: SimTime) {
        if config.priority == PriorityType::Basic {
            return;
        }
        let from = self.last_calc.map_or(from, |last| from.max(last));
        let seconds = (to.as_ms().saturating_sub(from.as_ms()) / 1000) as i64;
        let decayed = seconds as f64 * powi(self.decay_per_s, seconds);
        self.fair.add(&facts.assoc, decayed * facts.billable(config.billing));
    }

    /// The calculation at `at`: decay since the last one, the running jobs' usage since then
    /// (`running`: facts and start), and every pending job's priority anew.
    pub fn recalculate<'a>(
        &mut self,
        config: &SlurmConfig,
        at: SimTime,
        running: impl Iterator<Item = (&'a JobFacts, SimTime)>,
        pending: impl Iterator<Item = (JobId, &'a JobFacts)>,
    ) {
        if config.priority == PriorityType::Basic {
            return;
        }
        if let Some(last) = self.last_calc {
            let seconds = ((at.as_ms() - last.as_ms()) / 1000) as i64;
            self.fair.decay(powi(self.decay_per_s, seconds));
        }
        let running: Vec<(&JobFacts, SimTime)> = running.collect();
        for (facts, started) in running {
            self.charge(config, facts, started, at);
        }
        self.last_calc = Some(at);
        let factors = self.fair.factors();
        for (job, facts) in pending {
            let p = self.compute(config, facts, at, &factors);
            self.priority.insert(job, p);
        }
    }

    fn compute(&self, config: &SlurmConfig, facts: &JobFacts, at: SimTime, fs: &BTreeMap<Assoc, f64>) -> u32 {
        let w = &config.weights;
        let age = if config.max_age == SimDuration::ZERO {
            1.0
        } else {
            let waited = at.as_ms().saturating_sub(facts.eligible.as_ms()) / 1000;
            (waited as f64 / (config.max_age.as_ms() / 1000) as f64).min(1.0)
        };
        let fair = fs.get(&facts.assoc).copied().unwrap_or(0.0);
        let nodes = f64::from(facts.nodes);
        let size = if config.favor_small {
            ((self.cluster_nodes - nodes) / self.cluster_nodes + (self.cluster_cpus - nodes) / self.cluster_cpus) / 2.0
        } else {
            (nodes / self.cluster_nodes + nodes / self.cluster_cpus) / 2.0
        };
        let partition = ratio(&config.partition_factors, &facts.partition, 1);
        let qos = ratio(&config.qos_priorities, &facts.qos, 0);
        let p = f64::from(w.age) * age
            + f64::from(w.fairshare) * fair
            + f64::from(w.jobsize) * size
            + f64::from(w.partition) * partition
            + f64::from(w.qos) * qos;
        if p < 1.0 { 1 } else { p.min(f64::from(u32::MAX)) as u32 }
    }
}

/// `values[name]` over the largest value (`default` for a name not listed); 0 when all are 0.
fn ratio(values: &BTreeMap<String, u32>, name: &str, default: u32) -> f64 {
    let max = values.values().copied().max().unwrap_or(default).max(default);
    let own = values.get(name).copied().unwrap_or(default);
    if max == 0 { 0.0 } else { f64::from(own) / f64::from(max) }
}
