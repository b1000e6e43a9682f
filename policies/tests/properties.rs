//! Properties every policy must hold on random clusters and workloads.
//!
//! Each case is run with the Controller's own invariant checks on (double allocation, split
//! gangs, GPU-time conservation panic at the step that breaks them), and then the run is checked
//! against a model kept here, independent of `sim`: which jobs can never fit is computed from the
//! cluster description, and the decision log is replayed on a GPU-ownership table of our own
//! (every start on free GPUs of an eligible pool, every attempt as long as the work and restart
//! overhead say, every record and integral of the result recomputed from the log).
//!
//! Policy-specific properties checked at every decision point of the replay: greedy policies
//! (`fifo[skip=true]`, `sjf`, `srtf`) leave no waiting task that fits the free GPUs; strict
//! `fifo` and `easy-backfill` leave the queue's head unable to fit, and strict `fifo` starts
//! tasks in arrival order.

mod common;

use common::random::{PoolDesc, arb_gpu_type, arb_gpus, arb_pools, arb_submit_ms, arb_work_ms, build_cluster};

use common::ALL_SPECS;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sim::{ControllerConfig, DecisionKind, JobOutcome, JobSpec, RunResult, SimDuration, SimTime, TaskSpec, Workload};

// ---------------------------------------------------------------------------------------------
// Random cases
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Case {
    pools: Vec<PoolDesc>,
    jobs: Vec<JobSpec>,
    seed: u64,
}

fn arb_task() -> impl Strategy<Value = TaskSpec> {
    // Estimate = work x q/4 (q = 0 gives a zero estimate), or exact.
    let estimate_quarters = prop_oneof![1 => Just(4u64), 4 => 0u64..=16];
    // Node shape: 0 any split, 1 single-node, 2 a divisor of its GPUs on each node it uses.
    let node_shape = prop_oneof![7 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)];
    (arb_gpus(), arb_gpu_type(), node_shape, any::<u8>(), arb_work_ms(7200), estimate_quarters).prop_map(
        |(gpus, gpu_type, node_shape, pick, work_ms, quarters)| {
            let mut task = TaskSpec::new("", gpus, SimDuration(work_ms));
            task.gpu_type = gpu_type.map(Into::into);
            task.single_node = node_shape == 1;
            task.gpus_per_node = (node_shape == 2)
                .then(|| {
                    let divisors: Vec<u32> = (1..=gpus).filter(|d| gpus.is_multiple_of(*d)).collect();
                    divisors[usize::from(pick) % divisors.len()]
                })
                .and_then(std::num::NonZeroU32::new);
            task.estimate = SimDuration(work_ms * quarters / 4).into();
            task
        },
    )
}

fn arb_job() -> impl Strategy<Value = JobSpec> {
    let tasks = prop_oneof![
        8 => prop::collection::vec(arb_task(), 1..=1),
        2 => prop::collection::vec(arb_task(), 2..=3),
    ];
    (arb_submit_ms(&[0, 1_000, 60_000, 3_600_000], 20), tasks).prop_map(|(submit_ms, mut tasks)| {
        for (i, t) in tasks.iter_mut().enumerate() {
            t.name = i.to_string().into();
        }
        JobSpec {
            name: String::new().into(),
            submit: SimTime(submit_ms),
            queue: None,
            deadline: sim::OptDuration::NONE,
            priority: 0,
            cancel: sim::OptTime::NONE,
            owner: None,
            co_start: false,
            tasks: tasks.into(),
        }
    })
}

fn arb_case() -> impl Strategy<Value = Case> {
    (arb_pools(6, 3), prop::collection::vec(arb_job(), 1..=60), any::<u64>()).prop_map(|(pools, mut jobs, seed)| {
        for (i, j) in jobs.iter_mut().enumerate() {
            j.name = format!("j{i}").into();
        }
        Case { pools, jobs, seed }
    })
}

// ---------------------------------------------------------------------------------------------
// The independent model
// ---------------------------------------------------------------------------------------------

struct TaskModel {
    job: usize,
    gpus: u32,
    /// GPUs on each node it uses, when fixed (all of them: single-node).
    per_node: Option<u32>,
    /// Pool indexes of the task's type (all pools when it names none).
    eligible: Vec<usize>,
    work_ms: u64,
}

struct JobModel {
    submit_ms: u64,
    tasks: std::ops::Range<usize>,
    /// Every task fits an empty cluster.
    schedulable: bool,
}

/// The cluster laid out as `sim` numbers it: pools in order, nodes in order, GPUs in order.
struct Model {
    pools: Vec<PoolDesc>,
    gpu_node: Vec<usize>,
    node_pool: Vec<usize>,
    tasks: Vec<TaskModel>,
    jobs: Vec<JobModel>,
}

impl Model {
    fn new(pools: &[PoolDesc], workload: &Workload) -> Model {
        let (mut gpu_node, mut node_pool) = (Vec::new(), Vec::new());
        for (p, pool) in pools.iter().enumerate() {
            for _ in 0..pool.nodes {
                let node = node_pool.len();
                node_pool.push(p);
                gpu_node.extend(std::iter::repeat_n(node, pool.gpus_per_node as usize));
            }
        }
        let (mut tasks, mut jobs) = (Vec::new(), Vec::new());
        for (j, spec) in workload.jobs().iter().enumerate() {
            let first = tasks.len();
            let mut schedulable = true;
            for t in &spec.tasks {
                let eligible: Vec<usize> = (0..pools.len())
                    .filter(|&p| t.gpu_type.as_deref().is_none_or(|ty| ty.eq_ignore_ascii_case(pools[p].gpu_type)))
                    .collect();
                let largest = eligible
                    .iter()
                    .map(|&p| {
                        let pool = &pools[p];
                        match t.fixed_gpus_per_node() {
                            Some(n) if n > pool.gpus_per_node => 0,
                            Some(n) if n == t.gpus => pool.gpus_per_node,
                            Some(n) => n * pool.nodes,
                            None => pool.gpus_per_node * pool.nodes,
                        }
                    })
                    .max();
                schedulable &= largest.is_some_and(|cap| t.gpus <= cap);
                tasks.push(TaskModel {
                    job: j,
                    gpus: t.gpus,
                    per_node: t.fixed_gpus_per_node(),
                    eligible,
                    work_ms: t.work.as_ms(),
                });
            }
            jobs.push(JobModel { submit_ms: spec.submit.as_ms(), tasks: first..tasks.len(), schedulable });
        }
        Model { pools: pools.to_vec(), gpu_node, node_pool, tasks, jobs }
    }

    fn gpu_count(&self) -> usize {
        self.gpu_node.len()
    }
}

/// What the policy is checked for at each decision point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Discipline {
    /// No waiting task fits the free GPUs after a decision (srtf's fresh victims included).
    Greedy,
    /// The first waiting task (arrival order) does not fit after a decision; strict fifo also
    /// starts tasks in arrival order.
    ///
    /// `shadow_check` is EASY's promise, for `easy-backfill` with oracle durations: a head that
    /// does not ask for a single node (the reservation counts GPUs per pool, not per node)
    /// starts no later than its shadow time, computed here from the true ends of the running
    /// tasks at any decision point where it is the head.
    HeadBlocks { in_order: bool, shadow_check: bool },
}

fn discipline(policy_name: &str) -> Discipline {
    // weighted-score with every priority 0 (as here) orders by queue entry, i.e. arrival.
    if policy_name.starts_with("fifo[skip=false") || policy_name.starts_with("weighted-score[") {
        Discipline::HeadBlocks { in_order: true, shadow_check: false }
    } else if policy_name.starts_with("easy-backfill[") {
        let shadow_check = policy_name.starts_with("easy-backfill[duration=oracle");
        Discipline::HeadBlocks { in_order: false, shadow_check }
    } else {
        assert!(
            ["fifo[skip=true", "sjf[", "srtf[", "tiresias[", "themis[", "priority["]
                .iter()
                .any(|p| policy_name.starts_with(p)),
            "no discipline known for policy {policy_name}: add it here"
        );
        Discipline::Greedy
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Waiting,
    Running { since_ms: u64, gpus: Vec<u32> },
    Done,
}

#[derive(Debug, Clone)]
struct TaskReplay {
    phase: Phase,
    /// (start, end) of every attempt that ended.
    attempts: Vec<(u64, u64)>,
    first_start_ms: Option<u64>,
    finish_ms: Option<u64>,
    preemptions: u32,
    remaining_ms: u64,
}

/// The GPU-ownership table and the per-task state, rebuilt from the decision log alone.
struct Replay<'m> {
    m: &'m Model,
    overhead_ms: u64,
    owner: Vec<Option<usize>>,
    node_free: Vec<u32>,
    pool_free: Vec<u32>,
    tasks: Vec<TaskReplay>,
    unschedulable_logged: Vec<bool>,
    /// For heads checked by [`ShadowCheck`]: the earliest shadow time seen while head.
    shadow_ms: Vec<Option<u64>>,
    starts: u64,
    preempts: u64,
}

impl<'m> Replay<'m> {
    fn new(m: &'m Model, overhead_ms: u64) -> Replay<'m> {
        Replay {
            m,
            overhead_ms,
            owner: vec![None; m.gpu_count()],
            node_free: m.node_pool.iter().map(|&p| m.pools[p].gpus_per_node).collect(),
            pool_free: m.pools.iter().map(|p| p.nodes * p.gpus_per_node).collect(),
            tasks: m
                .tasks
                .iter()
                .map(|t| TaskReplay {
                    phase: Phase::Waiting,
                    attempts: Vec::new(),
                    first_start_ms: None,
                    finish_ms: None,
                    preemptions: 0,
                    remaining_ms: t.work_ms,
                })
                .collect(),
            unschedulable_logged: vec![false; m.jobs.len()],
            shadow_ms: vec![None; m.tasks.len()],
            starts: 0,
            preempts: 0,
        }
    }

    /// Restart overhead paid by attempt number `k` (0-based) of a task.
    fn overhead_of_attempt(&self, k: usize) -> u64 {
        if k == 0 { 0 } else { self.overhead_ms }
    }

    fn apply(&mut self, d: &sim::DecisionRecord) -> Result<(), String> {
        let now = d.time.as_ms();
        let job = d.job.index();
        let jm = self.m.jobs.get(job).ok_or(format!("log names unknown {}", d.job))?;
        if d.kind == DecisionKind::Unschedulable {
            if jm.schedulable || now != jm.submit_ms || d.task.is_some() || !d.gpus.is_empty() {
                return Err(format!("bad unschedulable record {d:?}: job fits the cluster or the record is odd"));
            }
            if std::mem::replace(&mut self.unschedulable_logged[job], true) {
                return Err(format!("{} logged unschedulable twice", d.job));
            }
            return Ok(());
        }
        if matches!(d.kind, DecisionKind::Reject | DecisionKind::Cancel) {
            return Err(format!("no built-in policy rejects and these workloads cancel nothing, got {d:?}"));
        }
        let t = d.task.ok_or(format!("{d:?} has no task"))?.index();
        let tm = self.m.tasks.get(t).ok_or(format!("log names unknown task {t}"))?;
        if tm.job != job {
            return Err(format!("{d:?}: task t{t} belongs to job j{}", tm.job));
        }
        let gpus: Vec<u32> = d.gpus.iter().map(|g| g.0).collect();
        match d.kind {
            DecisionKind::Start => {
                if now < jm.submit_ms || !jm.schedulable {
                    return Err(format!("{d:?}: starts a task before its job arrived, or of an unschedulable job"));
                }
                if self.tasks[t].phase != Phase::Waiting {
                    return Err(format!("{d:?}: task is {:?}, not waiting", self.tasks[t].phase));
                }
                if gpus.len() != tm.gpus as usize {
                    return Err(format!("{d:?}: gang of {} GPUs given {}", tm.gpus, gpus.len()));
                }
                let mut seen = vec![false; self.m.gpu_count()];
                let first_node = *self.m.gpu_node.get(gpus[0] as usize).ok_or(format!("{d:?}: unknown GPU"))?;
                let pool = self.m.node_pool[first_node];
                if !tm.eligible.contains(&pool) {
                    return Err(format!("{d:?}: pool p{pool} is not of the task's GPU type"));
                }
                for &g in &gpus {
                    let node = *self.m.gpu_node.get(g as usize).ok_or(format!("{d:?}: unknown GPU g{g}"))?;
                    if std::mem::replace(&mut seen[g as usize], true) {
                        return Err(format!("{d:?}: g{g} listed twice"));
                    }
                    if let Some(other) = self.owner[g as usize] {
                        return Err(format!("{d:?}: g{g} already held by t{other} (double allocation)"));
                    }
                    if self.m.node_pool[node] != pool {
                        return Err(format!("{d:?}: gang split across pools"));
                    }
                }
                if let Some(per_node) = tm.per_node {
                    let mut on_node = std::collections::BTreeMap::<usize, u32>::new();
                    for &g in &gpus {
                        *on_node.entry(self.m.gpu_node[g as usize]).or_default() += 1;
                    }
                    if on_node.values().any(|&n| n != per_node) {
                        return Err(format!("{d:?}: gang not split {per_node} GPUs a node: {on_node:?}"));
                    }
                }
                for &g in &gpus {
                    let node = self.m.gpu_node[g as usize];
                    self.owner[g as usize] = Some(t);
                    self.node_free[node] -= 1;
                    self.pool_free[pool] -= 1;
                }
                let r = &mut self.tasks[t];
                r.phase = Phase::Running { since_ms: now, gpus };
                r.first_start_ms.get_or_insert(now);
                self.starts += 1;
            }
            DecisionKind::Preempt | DecisionKind::Finish => {
                let Phase::Running { since_ms, gpus: held } = self.tasks[t].phase.clone() else {
                    return Err(format!("{d:?}: task is {:?}, not running", self.tasks[t].phase));
                };
                if held != gpus {
                    return Err(format!("{d:?}: releases {gpus:?} but holds {held:?}"));
                }
                for &g in &gpus {
                    let node = self.m.gpu_node[g as usize];
                    self.owner[g as usize] = None;
                    self.node_free[node] += 1;
                    self.pool_free[self.m.node_pool[node]] += 1;
                }
                let overhead = self.overhead_of_attempt(self.tasks[t].attempts.len());
                let r = &mut self.tasks[t];
                let len = now - since_ms;
                r.attempts.push((since_ms, now));
                if d.kind == DecisionKind::Preempt {
                    let progress = len.saturating_sub(overhead).min(r.remaining_ms);
                    r.remaining_ms -= progress;
                    r.preemptions += 1;
                    r.phase = Phase::Waiting;
                    self.preempts += 1;
                } else {
                    if len != overhead + r.remaining_ms {
                        return Err(format!(
                            "{d:?}: attempt ran {len} ms, but overhead {overhead} + remaining work {} ms",
                            r.remaining_ms
                        ));
                    }
                    r.remaining_ms = 0;
                    r.phase = Phase::Done;
                    r.finish_ms = Some(now);
                }
            }
            DecisionKind::Reject | DecisionKind::Cancel | DecisionKind::Unschedulable => unreachable!("handled above"),
            DecisionKind::Fail => return Err(format!("{d:?}: no hardware fails in these runs")),
        }
        Ok(())
    }

    /// Whether task `t` could start on the GPUs free now.
    fn fits(&self, t: usize) -> bool {
        let tm = &self.m.tasks[t];
        tm.eligible.iter().any(|&p| {
            if let Some(per_node) = tm.per_node {
                let roomy =
                    (0..self.node_free.len()).filter(|&n| self.m.node_pool[n] == p && self.node_free[n] >= per_node);
                roomy.count() as u32 >= tm.gpus / per_node
            } else {
                self.pool_free[p] >= tm.gpus
            }
        })
    }

    /// Waiting tasks (arrived, schedulable, not running, not done), in arrival order.
    fn waiting(&self, now_ms: u64) -> impl Iterator<Item = usize> + '_ {
        (0..self.tasks.len()).filter(move |&t| {
            let jm = &self.m.jobs[self.m.tasks[t].job];
            jm.schedulable && jm.submit_ms <= now_ms && self.tasks[t].phase == Phase::Waiting
        })
    }

    /// When `head` would fit if the tasks running before this decision's backfills ran to their
    /// true ends and nothing else started: the soonest over its eligible pools, counting GPUs
    /// per pool. Backfills are the tasks started now behind the head; they count as free.
    fn shadow(&self, head: usize, now_ms: u64) -> Option<u64> {
        let need = self.m.tasks[head].gpus;
        let mut ends: Vec<(usize, u64, u32)> = Vec::new(); // (pool, true end, GPUs)
        let mut backfilled = vec![0u32; self.pool_free.len()];
        for (t, r) in self.tasks.iter().enumerate() {
            if let Phase::Running { since_ms, gpus } = &r.phase {
                let pool = self.m.node_pool[self.m.gpu_node[gpus[0] as usize]];
                if t > head && *since_ms == now_ms {
                    backfilled[pool] += self.m.tasks[t].gpus;
                    continue;
                }
                let end = since_ms + self.overhead_of_attempt(r.attempts.len()) + r.remaining_ms;
                ends.push((pool, end, self.m.tasks[t].gpus));
            }
        }
        ends.sort_unstable();
        self.m.tasks[head]
            .eligible
            .iter()
            .filter_map(|&p| {
                let mut free = self.pool_free[p] + backfilled[p];
                if free >= need {
                    return Some(now_ms);
                }
                for &(_, end, gpus) in ends.iter().filter(|e| e.0 == p) {
                    free += gpus;
                    if free >= need {
                        return Some(end.max(now_ms));
                    }
                }
                None
            })
            .min()
    }

    fn check_decision_point(&mut self, now_ms: u64, discipline: Discipline) -> Result<(), String> {
        let head = self.waiting(now_ms).next();
        if let Discipline::HeadBlocks { shadow_check: true, .. } = discipline
            && let Some(head) = head
            && self.m.tasks[head].per_node.is_none()
            && let Some(at) = self.shadow(head, now_ms)
        {
            let earliest = self.shadow_ms[head].get_or_insert(at);
            *earliest = (*earliest).min(at);
        }
        match discipline {
            Discipline::Greedy => match self.waiting(now_ms).find(|&t| self.fits(t)) {
                Some(t) => Err(format!("at {now_ms} ms, waiting task t{t} fits the free GPUs but was not started")),
                None => Ok(()),
            },
            Discipline::HeadBlocks { .. } => match self.waiting(now_ms).next() {
                Some(head) if self.fits(head) => {
                    Err(format!("at {now_ms} ms, the head t{head} fits the free GPUs but was not started"))
                }
                _ => Ok(()),
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------

fn run_case(spec: &str, overhead_ms: u64, pass_ms: u64, case: &Case) -> (RunResult, Workload) {
    let workload = Workload::new(case.jobs.clone()).expect("valid random workload");
    let mut policy = policies::build(spec).expect("valid policy spec");
    let config = ControllerConfig {
        seed: case.seed,
        restart_overhead: SimDuration(overhead_ms),
        pass_interval: SimDuration(pass_ms),
        check_invariants: true,
        record_decisions: true,
        ..ControllerConfig::default()
    };
    let result =
        sim::simulate(sim::Scenario::new(build_cluster(&case.pools), workload.clone()), policy.as_mut(), config)
            .unwrap_or_else(|e| panic!("{spec}: simulation refused the workload: {e}"));
    (result, workload)
}

/// Every property of one run of `spec` on `case`.
fn check(spec: &str, overhead_ms: u64, case: &Case) -> Result<(), TestCaseError> {
    check_in_passes(spec, overhead_ms, 0, case)
}

/// Every property of one run of `spec` on `case` deciding in passes `pass_ms` apart (0: at
/// every event): the discipline holds at every pass, where the policy decides.
fn check_in_passes(spec: &str, overhead_ms: u64, pass_ms: u64, case: &Case) -> Result<(), TestCaseError> {
    let (r, workload) = run_case(spec, overhead_ms, pass_ms, case);
    let ctx = format!(
        "spec {spec} (run as {}), restart overhead {overhead_ms} ms, passes every {pass_ms} ms, seed {}",
        r.policy, case.seed
    );
    let m = Model::new(&case.pools, &workload);
    let discipline = match discipline(&r.policy) {
        // EASY's promise is against the shadow time, not the pass after it.
        Discipline::HeadBlocks { in_order, .. } if pass_ms > 0 => {
            Discipline::HeadBlocks { in_order, shadow_check: false }
        }
        other => other,
    };
    let preemptive = ["srtf[", "tiresias[", "themis[", "priority["].iter().any(|p| r.policy.starts_with(p));

    // Replay the log at every event time (each one is a decision point: arrivals and
    // completions both call the policy), checking the discipline after each; in passes, the
    // pass after each event time is the decision point.
    let mut replay = Replay::new(&m, overhead_ms);
    let mut times: Vec<u64> =
        m.jobs.iter().map(|j| j.submit_ms).chain(r.decisions.iter().map(|d| d.time.as_ms())).collect();
    if pass_ms > 0 {
        times.extend(times.clone().iter().map(|t| t.div_ceil(pass_ms) * pass_ms));
    }
    times.sort_unstable();
    times.dedup();
    let mut next = 0;
    for &now in &times {
        while let Some(d) = r.decisions.get(next).filter(|d| d.time.as_ms() == now) {
            replay.apply(d).map_err(|e| TestCaseError::fail(format!("{ctx}: {e}")))?;
            next += 1;
        }
        if pass_ms == 0 || now.is_multiple_of(pass_ms) {
            replay.check_decision_point(now, discipline).map_err(|e| TestCaseError::fail(format!("{ctx}: {e}")))?;
        }
    }
    prop_assert_eq!(next, r.decisions.len(), "{}: decision log is not in time order", ctx);
    // A policy's own decisions fall on passes; ends and failures come when they happen.
    let decided = |d: &&sim::DecisionRecord| matches!(d.kind, DecisionKind::Start | DecisionKind::Preempt);
    if let Some(d) = r.decisions.iter().filter(decided).find(|d| pass_ms > 0 && !d.time.as_ms().is_multiple_of(pass_ms))
    {
        prop_assert!(false, "{}: {:?} between passes", ctx, d);
    }
    for (t, shadow) in replay.shadow_ms.iter().enumerate() {
        if let Some(shadow) = *shadow {
            let start = replay.tasks[t].first_start_ms;
            prop_assert!(
                start.is_some_and(|s| s <= shadow),
                "{}: head t{} had its shadow time at {} ms but started at {:?} ms (a backfill delayed it)",
                ctx,
                t,
                shadow,
                start
            );
        }
    }

    // Outcomes: nothing left unfinished, nothing rejected, unschedulable iff it can never fit.
    prop_assert_eq!(r.jobs.len(), m.jobs.len(), "{}", ctx);
    for (i, (rec, jm)) in r.jobs.iter().zip(&m.jobs).enumerate() {
        let jctx = format!("{ctx}, job {} ({:?})", rec.name, workload.jobs()[i]);
        prop_assert_eq!(rec.job.index(), i, "{}", jctx);
        prop_assert_eq!(&rec.name, &workload.jobs()[i].name, "{}", jctx);
        prop_assert_eq!(rec.submit.as_ms(), jm.submit_ms, "{}", jctx);
        prop_assert_eq!(rec.tasks as usize, jm.tasks.len(), "{}", jctx);
        prop_assert_eq!(rec.gpus, m.tasks[jm.tasks.clone()].iter().map(|t| u64::from(t.gpus)).sum::<u64>(), "{}", jctx);
        match &rec.outcome {
            Some(JobOutcome::Succeeded) => {
                prop_assert!(jm.schedulable, "{}: succeeded, but it can never fit", jctx)
            }
            Some(JobOutcome::Unschedulable(why)) => {
                prop_assert!(!jm.schedulable, "{}: reported unschedulable ({}), but it fits", jctx, why);
                prop_assert!(replay.unschedulable_logged[i], "{}: unschedulable but not in the log", jctx);
                prop_assert_eq!(rec.end.map(SimTime::as_ms), Some(jm.submit_ms), "{}", jctx);
                prop_assert_eq!(rec.first_start, None, "{}", jctx);
                prop_assert_eq!(rec.mgpu_ms / 1000, 0, "{}", jctx);
                continue;
            }
            other => prop_assert!(false, "{}: outcome {:?}, expected succeeded or unschedulable", jctx, other),
        }
        // Succeeded: times and GPU-time against the replay and the truth.
        let tasks = &replay.tasks[jm.tasks.clone()];
        let models = &m.tasks[jm.tasks.clone()];
        prop_assert!(
            tasks.iter().all(|t| t.phase == Phase::Done),
            "{}: succeeded with tasks not done: {:?}",
            jctx,
            tasks
        );
        let first_start = tasks.iter().filter_map(|t| t.first_start_ms).min();
        let end = tasks.iter().filter_map(|t| t.finish_ms).max();
        prop_assert_eq!(rec.first_start.map(SimTime::as_ms), first_start, "{}: first start vs the log", jctx);
        prop_assert_eq!(rec.end.map(SimTime::as_ms), end, "{}: end vs the log", jctx);
        let (first_start, end) = (first_start.unwrap_or(0), end.unwrap_or(0));
        let longest = models.iter().map(|t| t.work_ms).max().unwrap_or(0);
        prop_assert!(first_start >= jm.submit_ms, "{}: starts at {} before its submit", jctx, first_start);
        prop_assert!(
            end >= first_start + longest,
            "{}: ends at {}, before first start {} + longest work {}",
            jctx,
            end,
            first_start,
            longest
        );
        let preemptions: u32 = tasks.iter().map(|t| t.preemptions).sum();
        prop_assert_eq!(rec.preemptions, preemptions, "{}: preemptions vs the log", jctx);
        if !preemptive {
            prop_assert_eq!(preemptions, 0, "{}: a non-preemptive policy preempted", jctx);
        }
        let held: u64 = tasks
            .iter()
            .zip(models)
            .map(|(t, tm)| t.attempts.iter().map(|&(s, e)| (e - s) * u64::from(tm.gpus)).sum::<u64>())
            .sum();
        prop_assert_eq!(rec.mgpu_ms / 1000, held, "{}: GPU-time vs the log", jctx);
        let work: u64 = models.iter().map(|t| t.work_ms * u64::from(t.gpus)).sum();
        if overhead_ms == 0 {
            prop_assert_eq!(
                rec.mgpu_ms / 1000,
                work,
                "{}: GPU-time with no restart overhead must be work x GPUs",
                jctx
            );
        } else {
            // Each restart pays the overhead in full, or part of it when preempted again during it.
            let max_overhead: u64 = tasks
                .iter()
                .zip(models)
                .map(|(t, tm)| u64::from(t.preemptions) * overhead_ms * u64::from(tm.gpus))
                .sum();
            prop_assert!(
                work <= rec.mgpu_ms / 1000 && rec.mgpu_ms / 1000 <= work + max_overhead,
                "{}: GPU-time {} outside [{}, {}]",
                jctx,
                rec.mgpu_ms / 1000,
                work,
                work + max_overhead
            );
        }
    }

    // Run-wide counters and integrals.
    let s = &r.stats;
    let total_gpus: u32 = case.pools.iter().map(|p| p.nodes * p.gpus_per_node).sum();
    let first_submit = m.jobs.iter().map(|j| j.submit_ms).min();
    let last_end = r.jobs.iter().filter_map(|j| j.end.map(SimTime::as_ms)).max();
    prop_assert_eq!(s.cluster_gpus, total_gpus, "{}", ctx);
    prop_assert_eq!(s.first_submit.map(SimTime::as_ms), first_submit, "{}", ctx);
    prop_assert_eq!(s.last_end.map(SimTime::as_ms), last_end, "{}", ctx);
    prop_assert_eq!(s.starts, replay.starts, "{}: starts vs the log", ctx);
    prop_assert_eq!(s.preemptions, replay.preempts, "{}: preemptions vs the log", ctx);
    prop_assert_eq!(s.rejects, 0, "{}", ctx);
    prop_assert_eq!(s.refused, 0, "{}: a built-in policy made decisions the plan refused", ctx);
    let job_gpu_ms: u64 = r.jobs.iter().map(|j| j.mgpu_ms / 1000).sum();
    prop_assert_eq!(s.allocated_mgpu_ms as u64 / 1000, job_gpu_ms, "{}: allocated GPU-time vs the jobs' GPU-time", ctx);
    let window = last_end.unwrap_or(0) - first_submit.unwrap_or(0);
    prop_assert!(
        s.allocated_mgpu_ms as u64 / 1000 <= u64::from(total_gpus) * window,
        "{}: allocated {} GPU-ms in a {} ms window on {} GPUs",
        ctx,
        s.allocated_mgpu_ms as u64 / 1000,
        window,
        total_gpus
    );
    // Little's law, exactly: the jobs-in-system integral is the sum of the jobs' times in system.
    let in_system: u128 = r.jobs.iter().map(|j| u128::from(j.end.map_or(0, |e| e.as_ms()) - j.submit.as_ms())).sum();
    prop_assert_eq!(s.in_system_job_ms, in_system, "{}: Little's law", ctx);
    common::check_series(&r).map_err(|e| TestCaseError::fail(format!("{ctx}: time series: {e}")))?;

    // Strict fifo: first starts in arrival (task id) order.
    if matches!(discipline, Discipline::HeadBlocks { in_order: true, .. }) {
        let starts: Vec<u64> = replay.tasks.iter().filter_map(|t| t.first_start_ms).collect();
        prop_assert!(
            starts.windows(2).all(|w| w[0] <= w[1]),
            "{}: strict fifo started out of order: {:?}",
            ctx,
            starts
        );
    }
    Ok(())
}

fn config() -> ProptestConfig {
    // No regression files: this crate's tests directory is shared; failures print the case.
    ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(64) }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fifo_properties(case in arb_case()) {
        check("fifo", 0, &case)?;
    }

    #[test]
    fn fifo_skip_properties(case in arb_case()) {
        check("fifo[skip=true]", 0, &case)?;
    }

    #[test]
    fn fifo_spread_properties(case in arb_case()) {
        check("fifo[placement=spread]", 0, &case)?;
    }

    #[test]
    fn sjf_properties(case in arb_case()) {
        check("sjf", 0, &case)?;
    }

    #[test]
    fn sjf_estimate_properties(case in arb_case()) {
        check("sjf[duration=estimate]", 0, &case)?;
    }

    #[test]
    fn sjf_spread_properties(case in arb_case()) {
        check("sjf[placement=spread]", 0, &case)?;
    }

    #[test]
    fn srtf_properties(case in arb_case()) {
        check("srtf", 0, &case)?;
    }

    #[test]
    fn srtf_estimate_spread_properties(case in arb_case()) {
        check("srtf[duration=estimate,placement=spread]", 0, &case)?;
    }

    #[test]
    fn srtf_restart_overhead_properties(case in arb_case(), overhead_ms in 1u64..=120_000) {
        check("srtf", overhead_ms, &case)?;
    }

    #[test]
    fn easy_backfill_properties(case in arb_case()) {
        check("easy-backfill", 0, &case)?;
    }

    #[test]
    fn easy_backfill_estimate_depth_properties(case in arb_case()) {
        check("easy-backfill[duration=estimate,depth=3]", 0, &case)?;
    }

    #[test]
    fn easy_backfill_spread_properties(case in arb_case()) {
        check("easy-backfill[placement=spread]", 0, &case)?;
    }

    #[test]
    fn tiresias_properties(case in arb_case()) {
        check("tiresias[thresholds=60;600]", 0, &case)?;
    }

    #[test]
    fn tiresias_gittins_promote_overhead_properties(case in arb_case(), overhead_ms in 0u64..=60_000) {
        check("tiresias[mode=gittins,thresholds=30;300;3000,promote_after=1]", overhead_ms, &case)?;
    }

    #[test]
    fn themis_properties(case in arb_case()) {
        check("themis[lease_s=300]", 0, &case)?;
    }

    #[test]
    fn themis_share_estimate_overhead_properties(case in arb_case(), overhead_ms in 0u64..=60_000) {
        check("themis[lease_s=30,t_id=share,duration=estimate]", overhead_ms, &case)?;
    }

    #[test]
    fn priority_properties(case in arb_case()) {
        check("priority", 0, &case)?;
    }

    #[test]
    fn policies_in_passes_properties(case in arb_case(), pass_ms in prop_oneof![Just(1_000u64), 1u64..=120_000]) {
        for spec in ["fifo", "sjf", "srtf", "easy-backfill", "tiresias[thresholds=60;600]", "themis[lease_s=300]"] {
            check_in_passes(spec, 0, pass_ms, &case)?;
        }
    }

    #[test]
    fn weighted_score_properties(case in arb_case()) {
        check("weighted-score[w_p=1,w_w=3]", 0, &case)?;
    }
}

/// 2 nodes x 2 GPUs, srtf (pack). At 0: f (1 GPU, 5 s) -> g0, x (1, 100 s) -> g1, v (1, 1000 s)
/// -> g2. At 5 f ends: g0 free. At 10, d (2 GPUs on one node, 500 s) fits no node: srtf
/// preempts v (ends after 10 + 500) and starts d on node 1 (g2, g3). v has 990 s left and fits
/// on g0, free since 5, so it must restart at 10 and end at 1000. (A bug once left v waiting
/// until the next event, x's end at 100, so it ended at 1090 with g0 idle meanwhile.)
#[test]
fn srtf_restarts_a_victim_that_fits_elsewhere_at_once() {
    use common::{cluster, job, run, sched, schedule};
    let mut d = job("d", 10, 2, 500);
    d.tasks[0].single_node = true;
    let jobs = vec![job("f", 0, 1, 5), job("x", 0, 1, 100), job("v", 0, 1, 1000), d];
    let r = run("srtf", cluster(&[(2, 2, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("f", 0, 5), ("x", 0, 100), ("v", 0, 1000), ("d", 10, 510)]));
}

/// 1 node x 8 GPUs, easy-backfill (oracle). L1 (2 GPUs) 0..50, L2 (2) 0..100. At 10, in order:
/// t1 (2, 5 s) starts in the in-order pass; H (6, 10 s) blocks: 2 free, 4 more at 50 (t1 at
/// 15, L1 at 50), so its shadow is 50 with no extra GPUs. B (2, 80 s) would end at 90 > 50 and
/// must wait: H 50..60, B 60..140 (as it does when t1 arrives at 9 instead). A bug once
/// left t1 (started in this same decision) out of the running index, so the reservation found
/// the shadow at 100 (L2), backfilled B 10..90, and H started only at 90.
#[test]
fn easy_backfill_reservation_counts_tasks_started_in_the_same_decision() {
    use common::{cluster, job, run, sched, schedule};
    let jobs =
        vec![job("L1", 0, 2, 50), job("L2", 0, 2, 100), job("t1", 10, 2, 5), job("H", 10, 6, 10), job("B", 10, 2, 80)];
    let r = run("easy-backfill", cluster(&[(1, 8, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("L1", 0, 50), ("L2", 0, 100), ("t1", 10, 15), ("H", 50, 60), ("B", 60, 140)]));
}

/// The same with t1 arriving at 9: it is running (and indexed) when H blocks at 10, and the
/// reservation protects H. Guards the expected schedule of the ignored test above.
#[test]
fn easy_backfill_reservation_counts_tasks_started_earlier() {
    use common::{cluster, job, run, sched, schedule};
    let jobs =
        vec![job("L1", 0, 2, 50), job("L2", 0, 2, 100), job("t1", 9, 2, 5), job("H", 10, 6, 10), job("B", 10, 2, 80)];
    let r = run("easy-backfill", cluster(&[(1, 8, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("L1", 0, 50), ("L2", 0, 100), ("t1", 9, 14), ("H", 50, 60), ("B", 60, 140)]));
}

/// The spec list above and `ALL_SPECS` name every policy and every value of each enumerated
/// parameter (`a|b`); open-ended parameters (`1..`) are set to a non-default value at least once.
#[test]
fn the_spec_list_covers_every_policy_and_parameter_value() {
    let covered: Vec<(String, String, String)> = ALL_SPECS
        .iter()
        .flat_map(|spec| {
            let name = policies::build(spec).unwrap_or_else(|e| panic!("{spec}: {e}")).name().to_string();
            let (policy, rest) = name.split_once('[').unwrap_or((name.as_str(), "]"));
            let policy = policy.to_string();
            rest.trim_end_matches(']')
                .split(',')
                .filter(|kv| !kv.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("{spec}: name {name} is not key=value"));
                    (policy.clone(), k.to_string(), v.to_string())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // A policy whose name leaves out its defaults (`slurm`) runs a default value in every spec
    // whose name does not give the key.
    let names: Vec<String> =
        ALL_SPECS.iter().map(|spec| policies::build(spec).expect("a valid spec").name().to_string()).collect();
    let default_run = |policy: &str, key: &str| {
        names.iter().any(|n| {
            n.split('[').next() == Some(policy) && !n.contains(&format!("[{key}=")) && !n.contains(&format!(",{key}="))
        })
    };
    for info in policies::Registry::builtin().policies() {
        assert!(
            ALL_SPECS.iter().any(|s| s.split('[').next() == Some(&*info.name)),
            "policy {} is missing from ALL_SPECS",
            info.name
        );
        for p in info.params {
            let has = |v: &str| {
                covered.iter().any(|(pol, k, val)| *pol == info.name && k == p.key && val == v)
                    || (v == p.default && default_run(&info.name, p.key))
            };
            if p.values.contains('|') {
                for value in p.values.split('|') {
                    assert!(has(value), "ALL_SPECS never runs {}[{}={}]", info.name, p.key, value);
                }
            } else {
                assert!(
                    covered.iter().any(|(pol, k, v)| *pol == info.name && k == p.key && v != p.default),
                    "ALL_SPECS never sets {}[{}] to a non-default value",
                    info.name,
                    p.key
                );
            }
        }
    }
}

/// The model above must agree with hand-made cases, or every property would be checked
/// against a wrong oracle: a fixed cluster where each way of not fitting occurs once.
#[test]
fn the_unschedulable_oracle_matches_hand_computed_cases() {
    let pools = vec![
        PoolDesc { nodes: 2, gpus_per_node: 4, gpu_type: "A" },
        PoolDesc { nodes: 3, gpus_per_node: 2, gpu_type: "B" },
    ];
    let task = |gpus: u32, ty: Option<&str>, single_node: bool| {
        let mut task = TaskSpec::new("0", gpus, SimDuration(1000));
        task.gpu_type = ty.map(Into::into);
        task.single_node = single_node;
        task.estimate = SimDuration(1000).into();
        task
    };
    let cases = [
        (task(8, None, false), true),
        (task(9, None, false), false),
        (task(4, None, true), true),
        (task(5, None, true), false),
        (task(6, Some("b"), false), true),
        (task(7, Some("B"), false), false),
        (task(2, Some("B"), true), true),
        (task(3, Some("B"), true), false),
        (task(1, Some("C"), false), false),
    ];
    let jobs: Vec<JobSpec> = cases
        .iter()
        .enumerate()
        .map(|(i, (t, _))| JobSpec {
            name: format!("j{i}").into(),
            submit: SimTime(0),
            queue: None,
            deadline: sim::OptDuration::NONE,
            cancel: sim::OptTime::NONE,
            priority: 0,
            owner: None,
            co_start: false,
            tasks: [t.clone()].into(),
        })
        .collect();
    let m = Model::new(&pools, &Workload::new(jobs.clone()).unwrap());
    let got: Vec<bool> = m.jobs.iter().map(|j| j.schedulable).collect();
    let want: Vec<bool> = cases.iter().map(|&(_, ok)| ok).collect();
    assert_eq!(got, want);
    // And the full check passes on it, for a policy of each discipline.
    let case = Case { pools, jobs, seed: 7 };
    for spec in ["fifo", "sjf", "easy-backfill"] {
        check(spec, 0, &case).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
}
