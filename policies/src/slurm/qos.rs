//! The limits a QOS puts on the jobs that name it (`--qos`), across partitions, as Slurm's
//! accounting policy enforces them (`src/slurmctld/acct_policy.c`): `GrpTRES=gres/gpu=N` and
//! `GrpJobs` on all its running jobs together, `MaxTRESPU=gres/gpu=N` and `MaxJobsPU` on each
//! user's. A job over a limit stays pending; neither pass starts it, and it blocks nothing:
//! the main scheduler passes over it without stopping its partition
//! (`acct_policy_job_runnable_pre_select`, or `ESLURM_ACCOUNTING_POLICY` from the node
//! selection, which stops a partition only under `assoc_limit_stop`), and backfill skips it
//! with no reservation ("unknown future start time"). Backfill skips a job over a job-count
//! limit before counting it against `bf_max_job_test`, and one over a GPU limit after.
//! (A partition's own QOS limits all of its jobs: that is its queue's caps, `queues.csv`.)

use super::priority::JobFacts;
use std::collections::BTreeMap;

/// One QOS's limits; `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosLimits {
    pub grp_gpus: Option<u32>,
    pub grp_jobs: Option<u32>,
    pub user_gpus: Option<u32>,
    pub user_jobs: Option<u32>,
}

impl QosLimits {
    /// Each QOS named in any of the four lists, with its limits.
    pub fn of_each(
        grp_gpus: BTreeMap<String, u32>,
        grp_jobs: BTreeMap<String, u32>,
        user_gpus: BTreeMap<String, u32>,
        user_jobs: BTreeMap<String, u32>,
    ) -> BTreeMap<String, QosLimits> {
        let mut each: BTreeMap<String, QosLimits> = BTreeMap::new();
        type Field = fn(&mut QosLimits) -> &mut Option<u32>;
        let lists: [(BTreeMap<String, u32>, Field); 4] = [
            (grp_gpus, |l| &mut l.grp_gpus),
            (grp_jobs, |l| &mut l.grp_jobs),
            (user_gpus, |l| &mut l.user_gpus),
            (user_jobs, |l| &mut l.user_jobs),
        ];
        for (list, field) in lists {
            for (qos, limit) in list {
                *field(each.entry(qos).or_default()) = Some(limit);
            }
        }
        each
    }
}

/// GPUs held and jobs running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Held {
    gpus: u32,
    jobs: u32,
}

/// What the running jobs of each limited QOS hold, all together and per user.
#[derive(Debug, Clone, Default)]
pub struct QosUsage {
    by_qos: BTreeMap<String, Held>,
    by_user: BTreeMap<(String, String), Held>,
}

/// Which of a QOS's limits a job is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// None: it may start.
    Nothing,
    /// A job-count limit (`GrpJobs`, `MaxJobsPU`).
    Jobs,
    /// A GPU limit (`GrpTRES`, `MaxTRESPU`).
    Gpus,
}

impl QosUsage {
    /// Whether `jobs` more jobs of `facts`'s QOS and user, holding `gpus`, pass its limits.
    pub fn check(&self, limits: &BTreeMap<String, QosLimits>, facts: &JobFacts, jobs: u32, gpus: u32) -> Over {
        let Some(limit) = limits.get(&facts.qos) else { return Over::Nothing };
        let all = self.by_qos.get(&facts.qos).copied().unwrap_or_default();
        let user = self.by_user.get(&(facts.qos.clone(), facts.assoc.1.clone())).copied().unwrap_or_default();
        let past = |limit: Option<u32>, held: u32, more: u32| limit.is_some_and(|l| held + more > l);
        if past(limit.grp_jobs, all.jobs, jobs) || past(limit.user_jobs, user.jobs, jobs) {
            Over::Jobs
        } else if past(limit.grp_gpus, all.gpus, gpus) || past(limit.user_gpus, user.gpus, gpus) {
            Over::Gpus
        } else {
            Over::Nothing
        }
    }

    /// A job of `facts` holding `gpus` started (`add`) or stopped; QOSes with no limit are not
    /// counted.
    pub fn count(&mut self, limits: &BTreeMap<String, QosLimits>, facts: &JobFacts, gpus: u32, add: bool) {
        if !limits.contains_key(&facts.qos) {
            return;
        }
        let user = (facts.qos.clone(), facts.assoc.1.clone());
        for held in [self.by_qos.entry(facts.qos.clone()).or_default(), self.by_user.entry(user).or_default()] {
            if add {
                held.gpus += gpus;
                held.jobs += 1;
            } else {
                held.gpus -= gpus;
                held.jobs -= 1;
            }
        }
    }
}
