//! The registry: the policies a program can run, each built from its spec
//! (`name[key=value,...]`, a [`PolicySpec`]), and the catalogue `schedlab policies` prints.
//!
//! [`Registry::builtin`] holds the built-in policies; a program adds its own with
//! [`Registry::with`] (a name and a constructor) or [`Registry::with_info`] (a name, a summary
//! and declared parameters too), and hands the registry to the command line.

#![deny(missing_docs)]

use crate::params::{ParamInfo, Params, SpecError};
use crate::spec::PolicySpec;
use crate::{
    critical_path, drf, easy_backfill, fair_share, fifo, priority, sjf, slurm, srtf, themis, tiresias, weighted_score,
};
use sim::Policy;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Builds a policy from its parameters: what a program registers for each policy. It reads
/// every parameter it takes from `Params` and returns an error (never panics) on bad values.
pub type Constructor = Arc<dyn Fn(&Params) -> Result<Box<dyn Policy + Send>, SpecError> + Send + Sync>;

/// A built-in's constructor: a plain function, so the built-in table can be a constant.
type BuiltinFn = fn(&Params) -> Result<Box<dyn Policy + Send>, SpecError>;

#[derive(Clone)]
enum Build {
    Builtin(BuiltinFn),
    Added(Constructor),
}

/// One policy of a registry: its name, what `schedlab policies` says of it, and how to build it.
#[derive(Clone)]
pub struct PolicyInfo {
    /// The name a spec gives, e.g. `sjf`.
    pub name: Cow<'static, str>,
    /// One line on what it does.
    pub summary: Cow<'static, str>,
    /// The parameters it takes, with their defaults; empty for a policy registered with
    /// [`Registry::with`], which takes whatever keys its constructor reads.
    pub params: &'static [ParamInfo],
    /// Whether `params` is the whole list (keys outside it are refused before construction).
    pub(crate) declared: bool,
    build: Build,
}

impl PolicyInfo {
    /// A policy with a declared parameter list: a spec giving a key outside `params` is
    /// refused with the valid ones listed, and `Params::get` falls back to their defaults.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        summary: impl Into<Cow<'static, str>>,
        params: &'static [ParamInfo],
        constructor: impl Fn(&Params) -> Result<Box<dyn Policy + Send>, SpecError> + Send + Sync + 'static,
    ) -> PolicyInfo {
        PolicyInfo {
            name: name.into(),
            summary: summary.into(),
            params,
            declared: true,
            build: Build::Added(Arc::new(constructor)),
        }
    }

    /// Whether `params` lists every parameter the policy takes (false for one registered with
    /// [`Registry::with`]).
    pub fn declares_params(&self) -> bool {
        self.declared
    }

    fn construct(&self, params: &Params) -> Result<Box<dyn Policy + Send>, SpecError> {
        match &self.build {
            Build::Builtin(build) => build(params),
            Build::Added(build) => build(params),
        }
    }
}

impl fmt::Debug for PolicyInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyInfo")
            .field("name", &self.name)
            .field("summary", &self.summary)
            .field("params", &self.params)
            .field("declared", &self.declared)
            .finish_non_exhaustive()
    }
}

const fn builtin(
    name: &'static str,
    summary: &'static str,
    params: &'static [ParamInfo],
    build: BuiltinFn,
) -> PolicyInfo {
    PolicyInfo {
        name: Cow::Borrowed(name),
        summary: Cow::Borrowed(summary),
        params,
        declared: true,
        build: Build::Builtin(build),
    }
}

/// The built-in policies in catalogue order: what `Registry::builtin().policies()` lists.
pub const POLICIES: &[PolicyInfo] = &[
    builtin("fifo", "first in, first out; strict head-of-line unless skip=true", fifo::PARAMS, |p| {
        Ok(Box::new(fifo::Fifo::new(p)?))
    }),
    builtin("sjf", "shortest job first, non-preemptive", sjf::PARAMS, |p| Ok(Box::new(sjf::Sjf::new(p)?))),
    builtin("srtf", "shortest remaining time first, preemptive", srtf::PARAMS, |p| Ok(Box::new(srtf::Srtf::new(p)?))),
    builtin(
        "easy-backfill",
        "fifo with a reservation for the blocked head; later tasks start if they do not delay it",
        easy_backfill::PARAMS,
        |p| Ok(Box::new(easy_backfill::EasyBackfill::new(p)?)),
    ),
    builtin(
        "slurm",
        "Slurm 22.05's scheduler: multifactor or basic priority, main passes and backfill on Slurm's cadence",
        slurm::PARAMS,
        |p| Ok(Box::new(slurm::Slurm::new(p)?)),
    ),
    builtin(
        "fair-share",
        "weighted fair share across queues: the queue with the fewest allocated GPUs per weight starts next",
        fair_share::PARAMS,
        |p| Ok(Box::new(fair_share::FairShare::new(p)?)),
    ),
    builtin(
        "drf",
        "dominant resource fairness across queues, GPUs of each pool as resources (Ghodsi et al. 2011)",
        drf::PARAMS,
        |p| Ok(Box::new(drf::Drf::new(p)?)),
    ),
    builtin(
        "critical-path",
        "DAG-aware: zero-slack tasks first, then the longest remaining path; non-preemptive",
        critical_path::PARAMS,
        |p| Ok(Box::new(critical_path::CriticalPath::new(p)?)),
    ),
    builtin(
        "tiresias",
        "Tiresias (NSDI'19): discretised 2D least attained service (or Gittins), preemptive",
        tiresias::PARAMS,
        |p| Ok(Box::new(tiresias::Tiresias::new(p)?)),
    ),
    builtin(
        "themis",
        "Themis (NSDI'20) finish-time fairness: largest rho = T_shared / T_id first, preempting per lease",
        themis::PARAMS,
        |p| Ok(Box::new(themis::Themis::new(p)?)),
    ),
    builtin(
        "priority",
        "strict job priority; a waiting task preempts lower-priority tasks, least work lost first",
        priority::PARAMS,
        |p| Ok(Box::new(priority::Priority::new(p)?)),
    ),
    builtin(
        "weighted-score",
        "score = w_p x priority + w_d x locality + w_w x waiting s (aging), strict, non-preemptive",
        weighted_score::PARAMS,
        |p| Ok(Box::new(weighted_score::WeightedScore::new(p)?)),
    ),
];

/// Deliberately bad variants that `build` accepts but `POLICIES` (and so `schedlab policies`
/// and the policy property tests) leave out: test aids, not policies anyone should run.
const TEST_AIDS: &[PolicyInfo] = &[builtin(
    "fifo-idle",
    "test aid for CI regression: fifo that leaves GPUs idle on every N-th decision point",
    fifo::IDLE_PARAMS,
    |p| Ok(Box::new(fifo::Fifo::idling(p)?)),
)];

/// Builds the built-in policy `spec` names, e.g. `sjf[duration=estimate,placement=spread]`:
/// shorthand for `Registry::builtin().build(&spec.parse()?)`.
pub fn build(spec: &str) -> Result<Box<dyn Policy + Send>, SpecError> {
    Registry::builtin().build(&spec.parse()?)
}

/// The policies a program can run, in catalogue order. Cheap to clone, shareable between
/// threads (a sweep builds its runs' policies from one registry).
#[derive(Debug, Clone)]
pub struct Registry {
    listed: Vec<PolicyInfo>,
    /// Buildable, never listed (see `TEST_AIDS`).
    test_aids: Vec<PolicyInfo>,
}

impl Registry {
    /// The built-in policies (and the test aids, buildable but not listed).
    pub fn builtin() -> Registry {
        Registry { listed: POLICIES.to_vec(), test_aids: TEST_AIDS.to_vec() }
    }

    /// Adds the policy `name`, built by `constructor`, with no declared parameter list: every
    /// key of a spec reaches the constructor through `Params` (`get_or` for an optional one,
    /// `get` for a required one), and a key it does not read is refused.
    ///
    /// # Panics
    /// When `name` is already registered, or is no valid policy name (empty, spaces, or one
    /// of `[ ] = ,`): a mistake in the program, found when it starts.
    pub fn with(
        self,
        name: &str,
        constructor: impl Fn(&Params) -> Result<Box<dyn Policy + Send>, SpecError> + Send + Sync + 'static,
    ) -> Registry {
        self.with_info(PolicyInfo {
            name: Cow::Owned(name.to_string()),
            summary: Cow::Borrowed("added by this program; takes the parameters its constructor reads"),
            params: &[],
            declared: false,
            build: Build::Added(Arc::new(constructor)),
        })
    }

    /// Adds a policy described in full (see [`PolicyInfo::new`]).
    ///
    /// # Panics
    /// As [`Registry::with`]: a name already registered, or not a valid policy name.
    pub fn with_info(mut self, info: PolicyInfo) -> Registry {
        if let Err(e) = PolicySpec::new(&info.name) {
            panic!("Registry::with: `{}` cannot be a policy name: {e}", info.name);
        }
        if self.find(&info.name).is_some() {
            panic!("Registry::with: a policy named `{}` is already registered; choose another name", info.name);
        }
        self.listed.push(info);
        self
    }

    /// The listed policies, in order: for `schedlab policies` and for checks over every policy.
    pub fn policies(&self) -> impl Iterator<Item = &PolicyInfo> {
        self.listed.iter()
    }

    /// The policy named `name` (a test aid too), if registered.
    pub fn get(&self, name: &str) -> Option<&PolicyInfo> {
        self.find(name)
    }

    /// Builds the policy `spec` names with its parameters. Errors: an unknown name (the valid
    /// ones listed), a key the policy does not take, a bad value.
    pub fn build(&self, spec: &PolicySpec) -> Result<Box<dyn Policy + Send>, SpecError> {
        let info = self.find(spec.name()).ok_or_else(|| self.unknown(spec.name()))?;
        let declared = info.declared.then_some(info.params);
        let params = Params::new(&info.name, spec.params().clone(), declared)?;
        let policy = info.construct(&params)?;
        if let Some(unread) = params.unread().first() {
            let read = params.read_keys();
            let read = if read.is_empty() { "none".to_string() } else { read.join(", ") };
            return Err(SpecError(format!(
                "policy `{}` has no parameter `{unread}`; the parameters it reads: {read}",
                info.name
            )));
        }
        Ok(policy)
    }

    /// Whether `spec` would build: the name is known, every key is taken, every value is
    /// valid. (It builds the policy and drops it: policies are cheap until their first call.)
    pub fn check(&self, spec: &PolicySpec) -> Result<(), SpecError> {
        self.build(spec).map(drop)
    }

    pub(crate) fn find(&self, name: &str) -> Option<&PolicyInfo> {
        self.listed.iter().chain(&self.test_aids).find(|p| p.name == name)
    }

    fn unknown(&self, name: &str) -> SpecError {
        let valid: Vec<&str> = self.listed.iter().map(|p| &*p.name).collect();
        let aids: Vec<&str> = self.test_aids.iter().map(|p| &*p.name).collect();
        let aids = if aids.is_empty() { String::new() } else { format!(" (test aids: {})", aids.join(", ")) };
        SpecError(format!("unknown policy `{name}`; valid policies: {}{aids}", valid.join(", ")))
    }
}
