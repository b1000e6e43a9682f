//! Placement: which GPUs a gang gets. Pure functions of the task's shape and the free-GPU index,
//! so policies reuse them on what is free now and (backfill) on projections.
//!
//! A gang always lies inside one pool (one GPU type). A task that fits on one node gets one
//! node; a larger task (or one whose single-node placement is impossible right now, when it
//! allows spanning) takes the emptiest nodes first, which uses the fewest nodes, and its last
//! piece goes to the fullest node that can hold it. A task that fixes its GPUs per node (whole
//! nodes, Slurm's `--gpus-per-node`) takes that many on each of as many nodes as it needs.

mod candidates;
mod pack;
mod share;
mod spread;

use crate::params::{AVOID_FAILED, PLACEMENT, Params, SpecError};
use candidates::Candidates;
use sim::{Cluster, ClusterView, FreeGpus, NodeId, PoolId, PoolMask, SimDuration, SimTime, TaskState, WHOLE_GPU_MILLI};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// A gang's GPUs as placement chooses them (defined beside the free set that fills it).
pub use sim::GpuList;

/// No node to avoid (placement without `avoid_failed_h`, or nothing failed recently).
static AVOID_NONE: BTreeSet<NodeId> = BTreeSet::new();

/// The part of a task that placement looks at. Tasks of one shape fit or not together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shape {
    /// GPUs of the gang (1 for a share of one GPU).
    pub gpus: u32,
    /// The pools (GPU types) it may run in.
    pub pools: PoolMask,
    /// GPUs on each node the gang uses when its shape fixes them (all of them: one node).
    pub gpus_per_node: Option<u32>,
    /// Milli-GPUs of each GPU: 1000 for whole GPUs, less for a share of one GPU.
    pub milli: u32,
    /// The dataset it reads (an index into the cluster's datasets), for `placement=local`.
    pub dataset: Option<u32>,
    /// Its own speeds per pool (`TaskState::speed_profile`), for `placement=fastest`.
    pub speeds: Option<u32>,
}

impl Shape {
    /// The shape of `task`.
    pub fn of(task: &TaskState) -> Shape {
        Shape {
            gpus: task.gpus,
            pools: task.pools,
            gpus_per_node: task.per_node(),
            milli: task.milli,
            dataset: task.dataset.get(),
            speeds: task.speed_profile.get(),
        }
    }

    /// A share of one GPU, not whole GPUs.
    pub fn is_share(self) -> bool {
        self.milli < WHOLE_GPU_MILLI
    }

    /// Whether the gang must lie on one node.
    pub fn single_node(self) -> bool {
        self.gpus_per_node == Some(self.gpus)
    }

    /// For a gang over several nodes with its GPUs per node fixed: that many, and the nodes.
    fn split_over_nodes(self) -> Option<(u32, u32)> {
        self.gpus_per_node.filter(|&n| n < self.gpus).map(|n| (n, self.gpus / n))
    }

    /// Whether `pool` can host this shape with the GPUs free now (a share: on a shared GPU
    /// with room, or on a free GPU).
    pub fn fits_in(self, pool: PoolId, free: &FreeGpus) -> bool {
        if self.is_share() {
            free.shared_with_room(pool, self.milli).next().is_some() || free.in_pool(pool) >= 1
        } else if self.single_node() {
            free.max_on_one_node(pool) >= self.gpus
        } else if let Some((per_node, nodes)) = self.split_over_nodes() {
            free.nodes_with_at_least(pool, per_node).nth(nodes as usize - 1).is_some()
        } else {
            free.in_pool(pool) >= self.gpus
        }
    }

    /// Whether some eligible pool can host this shape now.
    pub fn fits(self, free: &FreeGpus) -> bool {
        self.pools.iter().any(|p| self.fits_in(p, free))
    }
}

/// Whether no task of any shape fits in `cluster` now: no whole GPU is free and no shared GPU
/// has room. A policy's pass that looks for a waiting task that fits (`first_fitting`, which
/// tests each shape's first task) can then be skipped: at high load the cluster is often
/// full when a decision's preemptive pass ends.
pub fn nothing_fits(cluster: &Cluster, free: &FreeGpus) -> bool {
    free.total() == 0 && cluster.pools().iter().all(|p| free.shared_with_room(p.id, 1).next().is_none())
}

/// The placement algorithm: how a gang's GPUs are chosen among those free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Consolidate: the fewest nodes, fullest node first (best fit). The default.
    #[default]
    Pack,
    /// Spread load: a gang that fits on one node goes to the emptiest node, in the pool with
    /// the most free GPUs (worst fit).
    Spread,
    /// Heterogeneity-aware: the pool where the task runs fastest (its own `speeds` for the
    /// GPU type, else the pool's `speed`) that can host the gang now, ties by pool id; inside
    /// it, pack. O(eligible pools) pack attempts.
    Fastest,
    /// Data-local: a task reading a dataset goes, packed, to nodes holding it when they have
    /// room, else (packed) anywhere, paying the transfer. O(nodes of its pools) per placement.
    Local,
}

impl Placement {
    /// Every algorithm's name, as a spec writes it.
    pub const NAMES: &'static [&'static str] = &["pack", "spread", "fastest", "local"];

    /// GPUs for a task of `shape`, or `None` when it does not fit now. Ties break by pool id,
    /// then node id, then GPU slot, so the answer is a function of the free set alone.
    /// The GPUs go to `gpus` (empty); `None` leaves it empty, for the caller's next try.
    #[inline]
    fn place(self, shape: Shape, candidates: &Candidates<'_>, gpus: &mut GpuList) -> Option<()> {
        let placed = match self {
            // `fastest` has chosen one pool before it gets here and packs inside it.
            _ if shape.is_share() => share::place(self, shape, candidates, gpus),
            Placement::Pack | Placement::Fastest | Placement::Local => pack::place(shape, candidates, gpus),
            Placement::Spread => spread::place(shape, candidates, gpus),
        };
        if placed.is_none() {
            gpus.clear(); // a walk that ran out part way (it cannot, given the fit)
        }
        placed
    }
    /// The name, as a spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Pack => "pack",
            Placement::Spread => "spread",
            Placement::Fastest => "fastest",
            Placement::Local => "local",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pack" => Ok(Placement::Pack),
            "spread" => Ok(Placement::Spread),
            "fastest" => Ok(Placement::Fastest),
            "local" => Ok(Placement::Local),
            _ => Err(format!("expected one of {}", Placement::NAMES.join("|"))),
        }
    }
}

/// Which GPUs a policy's tasks get: the placement algorithm, and whether to steer clear of
/// nodes where a failure was seen recently (a preference: when only such nodes fit, they are
/// used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placer {
    /// The algorithm.
    pub kind: Placement,
    /// Avoid nodes with a failure seen within this long (zero: off).
    pub avoid_failed_for: SimDuration,
}

impl Placer {
    /// From the `placement` and `avoid_failed_h` parameters (their defaults when not given,
    /// in any policy: see [`Params::get_info`]).
    pub fn from_params(params: &Params) -> Result<Placer, SpecError> {
        let hours: f64 = params.get_info(&AVOID_FAILED)?;
        if !(hours.is_finite() && (0.0..=1e6).contains(&hours)) {
            return Err(SpecError(format!("policy `{}`: avoid_failed_h must be 0..=1000000 hours", params.policy)));
        }
        Ok(Placer {
            kind: params.get_info(&PLACEMENT)?,
            avoid_failed_for: SimDuration((hours * 3_600_000.0).round() as u64),
        })
    }

    /// GPUs for a task of `shape` among those free now (`free`), avoiding recently failed
    /// nodes when it can; `None` when the shape does not fit at all.
    pub fn place(&self, shape: Shape, view: &ClusterView<'_>, free: &FreeGpus) -> Option<GpuList> {
        let mut gpus = GpuList::new();
        self.place_into(shape, view, free, &mut gpus).then_some(gpus)
    }

    /// As [`Self::place`], into `gpus` (empty; left empty when the shape does not fit), for a
    /// caller that starts the task on them where they lie (`tracking::place_and_start`).
    pub fn place_into(&self, shape: Shape, view: &ClusterView<'_>, free: &FreeGpus, gpus: &mut GpuList) -> bool {
        if self.kind == Placement::Fastest {
            let mut pools: smallvec::SmallVec<[PoolId; 8]> = shape.pools.iter().collect();
            pools.sort_by_key(|&p| (std::cmp::Reverse(view.speed_in(shape.speeds, p)), p));
            pools.into_iter().any(|p| {
                let one = Shape { pools: PoolMask::EMPTY.with(p), ..shape };
                self.place_among(one, view, free, gpus).is_some()
            })
        } else {
            self.place_among(shape, view, free, gpus).is_some()
        }
    }

    #[inline]
    fn place_among(&self, shape: Shape, view: &ClusterView<'_>, free: &FreeGpus, gpus: &mut GpuList) -> Option<()> {
        if self.kind == Placement::Local && self.place_local_into(shape, view, free, gpus).is_some() {
            return Some(());
        }
        // Nodes of its pools without its data were tried last (`local`), or never avoided.
        self.place_avoiding(shape, view, free, &AVOID_NONE, gpus)
    }

    /// GPUs for a task reading a dataset on nodes that hold it, packed, avoiding recently
    /// failed nodes when it can; `None` when those nodes have no room for it now, or when the
    /// task reads no dataset. For policies that wait for locality (delay scheduling) and for
    /// `placement=local`'s first choice. O(nodes of its pools).
    pub fn place_local(&self, shape: Shape, view: &ClusterView<'_>, free: &FreeGpus) -> Option<GpuList> {
        let mut gpus = GpuList::new();
        self.place_local_into(shape, view, free, &mut gpus)?;
        Some(gpus)
    }

    fn place_local_into(
        &self,
        shape: Shape,
        view: &ClusterView<'_>,
        free: &FreeGpus,
        gpus: &mut GpuList,
    ) -> Option<()> {
        let d = shape.dataset?;
        let holding = &view.datasets().get(d).nodes;
        let cluster = view.cluster();
        let away: BTreeSet<NodeId> =
            shape.pools.iter().flat_map(|p| cluster.pool(p).nodes()).filter(|n| !holding.contains(n)).collect();
        let packed = Placer { kind: Placement::Pack, ..*self };
        packed.place_avoiding(shape, view, free, &away, gpus)
    }

    /// Placement off `away` nodes, and off recently failed ones when it can.
    #[inline]
    fn place_avoiding(
        &self,
        shape: Shape,
        view: &ClusterView<'_>,
        free: &FreeGpus,
        away: &BTreeSet<NodeId>,
        gpus: &mut GpuList,
    ) -> Option<()> {
        if self.avoid_failed_for > SimDuration::ZERO {
            let since = SimTime(view.now().as_ms().saturating_sub(self.avoid_failed_for.as_ms()));
            let mut avoid: BTreeSet<NodeId> = view.failures_seen_since(since).collect();
            if !avoid.is_empty() {
                avoid.extend(away.iter().copied());
                if self.kind.place(shape, &Candidates { free, avoid: &avoid }, gpus).is_some() {
                    return Some(());
                }
            }
        }
        self.kind.place(shape, &Candidates { free, avoid: away }, gpus)
    }
}

impl fmt::Display for Placer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hours = self.avoid_failed_for.as_ms() as f64 / 3_600_000.0;
        write!(f, "placement={},avoid_failed_h={hours}", self.kind)
    }
}

/// Whether `pool` can host whole-GPU `shape` on the candidate GPUs.
fn fits_in(shape: Shape, pool: PoolId, candidates: &Candidates<'_>) -> bool {
    if shape.single_node() {
        candidates.max_on_one_node(pool) >= shape.gpus
    } else if let Some((per_node, nodes)) = shape.split_over_nodes() {
        candidates.nodes_with_at_least(pool, per_node).nth(nodes as usize - 1).is_some()
    } else {
        candidates.in_pool(pool) >= shape.gpus
    }
}

/// How an algorithm picks among nodes with room: the fullest (best fit, `pack`) or the
/// emptiest (worst fit, `spread`), ties by node id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Best,
    Worst,
}

impl Fit {
    /// The node this fit picks for `gpus` GPUs on one node, if one has room.
    fn one_node(self, pool: PoolId, gpus: u32, free: &Candidates<'_>) -> Option<NodeId> {
        match self {
            Fit::Best => free.best_fit(pool, gpus),
            Fit::Worst => free.emptiest(pool).filter(|&n| free.on_node(n) >= gpus),
        }
    }

    /// Takes `per_node` GPUs from each of the first `nodes` nodes this fit picks among those
    /// with that many free (taking reads the free set, it does not change it: the walk goes on).
    fn take_per_node(self, pool: PoolId, per_node: u32, nodes: u32, free: &Candidates<'_>, gpus: &mut GpuList) {
        let take = nodes as usize;
        let mut take_from = |(node, _)| free.take_from(node, per_node, gpus);
        match self {
            Fit::Best => free.nodes_with_at_least(pool, per_node).take(take).for_each(&mut take_from),
            Fit::Worst => {
                let roomy = free.nodes_emptiest_first(pool).take_while(|&(_, count)| count >= per_node);
                roomy.take(take).for_each(&mut take_from);
            }
        }
    }
}

/// The pool of least `key` among `pools` (the ones that can host a gang), computing keys only
/// when there is a choice: a cluster has a pool per GPU type, so most gangs have one pool.
fn least_by_key<K: Ord>(mut pools: impl Iterator<Item = PoolId>, key: impl Fn(PoolId) -> K) -> Option<PoolId> {
    let first = pools.next()?;
    match pools.next() {
        None => Some(first),
        Some(second) => [first, second].into_iter().chain(pools).min_by_key(|&p| key(p)),
    }
}

/// Takes `gpus` GPUs from `pool`, which can host the shape now (`fits_in`): one node when one
/// node can hold them (chosen by `fit`), else the emptiest nodes first with the last piece on
/// the fullest node that holds it; a gang that fixes its GPUs per node takes them from the
/// nodes `fit` picks. Into `gpus` (empty); `None` only if a node runs out under the walk (it
/// cannot, given the fit).
fn take_from_pool(shape: Shape, pool: PoolId, free: &Candidates<'_>, fit: Fit, gpus: &mut GpuList) -> Option<()> {
    debug_assert!(fits_in(shape, pool, free), "the caller chose a pool that hosts the shape");
    if let Some((per_node, nodes)) = shape.split_over_nodes() {
        fit.take_per_node(pool, per_node, nodes, free, gpus);
        return Some(());
    }
    if let Some(node) = fit.one_node(pool, shape.gpus, free) {
        free.take_from(node, shape.gpus, gpus);
        return Some(());
    }
    debug_assert!(!shape.single_node(), "fits_in promised a single node");
    // No node holds the whole gang (`one_node` found none, for either fit). Emptiest nodes
    // first: the fewest nodes for the gang, each holding less than what is left. `free` is not
    // changed as we go: the nodes used are those the emptiest-first walk has reached, skipped
    // by their order (O(nodes used), not O(nodes used^2)).
    let mut emptiest_first = free.nodes_emptiest_first(pool);
    let mut left = shape.gpus;
    while left > 0 {
        let (node, count) = emptiest_first.next()?;
        free.take_from(node, count, gpus);
        left -= count;
        if let Some(last_piece) = free.best_fit_not_reached(pool, left, (count, node)) {
            free.take_from(last_piece, left, gpus);
            break;
        }
    }
    Some(())
}

/// Nodes a multi-node gang of `gpus` would span in `pool` (1 when one node holds it).
fn nodes_needed(pool: PoolId, gpus: u32, free: &Candidates<'_>) -> u32 {
    let mut left = gpus;
    let mut nodes = 0;
    for (_, count) in free.nodes_emptiest_first(pool) {
        nodes += 1;
        if count >= left {
            break;
        }
        left -= count;
    }
    nodes
}
