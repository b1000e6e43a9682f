//! Campaigns: a test run on many inputs of a strategy, deterministic under
//! `PROPTEST_RNG_SEED`, sized by `SCHEDLAB_FUZZ_CASES`, each printing a line `fuzz NAME: ...`
//! (scripts/fuzz.sh adds them up).

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// This run's seed: CI's `PROPTEST_RNG_SEED`, else one drawn from the clock (printed with
/// every campaign's line, so that a failure can be run again).
pub fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        env_u64("PROPTEST_RNG_SEED").unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (nanos.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
        })
    })
}

/// Whether the sessions include what fuzz_findings.rs shows to be open defects.
pub fn all_classes() -> bool {
    std::env::var("SCHEDLAB_FUZZ_ALL").is_ok_and(|v| v == "1")
}

/// A campaign's cases: `short` (the run every `cargo test` makes), or SCHEDLAB_FUZZ_CASES
/// divided by the cost of one case (`per`).
pub fn cases(short: u32, per: u32) -> u32 {
    env_u64("SCHEDLAB_FUZZ_CASES").map_or(short, |n| (n / u64::from(per)).clamp(1, u64::from(u32::MAX)) as u32)
}

thread_local! {
    /// What the campaign running on this thread saw, by outcome (`parse error`, `refused 400`,
    /// `accepted`, `HTTP 201`...): printed with its line.
    static SEEN: RefCell<BTreeMap<String, u64>> = Default::default();
}

thread_local! {
    /// Whether this thread runs a campaign: its panics are caught and reported with the
    /// smallest input, not printed as they happen (shrinking makes hundreds).
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Panics on a thread running a campaign print nothing; others print as before.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                print(info);
            }
        }));
    });
}

/// Counts an outcome of the campaign running on this thread.
pub fn seen(what: impl Into<String>) {
    SEEN.with(|s| *s.borrow_mut().entry(what.into()).or_default() += 1);
}

/// A campaign: `cases` inputs of a strategy through a test, a failure shrunk to its smallest
/// input, and a line `fuzz NAME: N inputs in S s (seed X, C cases): F failures [OUTCOMES]`.
pub struct Campaign {
    pub name: &'static str,
    pub cases: u32,
    /// The steps taken to shrink a failure.
    pub max_shrink_iters: u32,
    /// Whether the line ends with the outcomes `seen`, and panics on the campaign's thread
    /// print nothing while it runs.
    pub tallied: bool,
}

impl Campaign {
    /// A campaign of the API's bodies or requests: up to 4096 steps to shrink, tallied.
    pub fn new(name: &'static str, cases: u32) -> Campaign {
        Campaign { name, cases, max_shrink_iters: 4096, tallied: true }
    }

    /// Runs `test` on the campaign's inputs of `strategy`, prints its line, and panics with
    /// the seed and smallest input on a failure.
    pub fn run<S>(&self, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
    where
        S: Strategy,
        S::Value: std::fmt::Debug,
    {
        let config = Config {
            cases: self.cases,
            failure_persistence: None,
            rng_seed: RngSeed::Fixed(seed()),
            max_shrink_iters: self.max_shrink_iters,
            ..Config::default()
        };
        if self.tallied {
            quiet_panics();
        }
        let tried = AtomicU64::new(0);
        SEEN.with(|s| s.borrow_mut().clear());
        let start = Instant::now();
        QUIET.with(|q| q.set(self.tallied));
        let result = TestRunner::new(config).run(&strategy, |value| {
            tried.fetch_add(1, Ordering::Relaxed);
            test(value)
        });
        QUIET.with(|q| q.set(false));
        self.report(tried.load(Ordering::Relaxed), start, result);
    }

    fn report<T: std::fmt::Debug>(&self, tried: u64, start: Instant, result: Result<(), TestError<T>>) {
        let failures = u32::from(result.is_err());
        let outcomes = if self.tallied {
            let seen = SEEN.with(|s| s.borrow().iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "));
            format!(" [{seen}]")
        } else {
            String::new()
        };
        eprintln!(
            "fuzz {}: {tried} inputs in {:.2} s (seed {}, {} cases): {failures} failures{outcomes}",
            self.name,
            start.elapsed().as_secs_f64(),
            seed(),
            self.cases
        );
        if let Err(e) = result {
            panic!("fuzz {} (PROPTEST_RNG_SEED={}): {e}", self.name, seed());
        }
    }
}
