//! Hardware failures for the simulator: real failure histories, seeded failure models, and the
//! step from either to the `sim::ClusterEvent`s one run replays.
//!
//! - [`FailureTrace`] is a real history in trace terms: a population of nodes (including those
//!   that never failed), the span it was observed over, and its faults. Importers:
//!   [`infinitehbd`] (StepFun LLM cluster, node faults with repair times), [`titan`] (OLCF
//!   Titan, GPU failures and replacements), [`alibaba2017`] (Alibaba 2017 machine errors).
//! - [`map_onto`] replays a trace on a simulated cluster of another size and over another
//!   period (seeded, rate-preserving; the rule is documented there).
//! - [`FailureModel`] draws failures from Weibull times to failure and lognormal repairs.
//! - [`fit()`] fits such a model to a trace and says how well it fits ([`FitReport`]).
//! - [`FailureSpec`] is the `simulate --failures SPEC` string, resolved to events for a
//!   cluster and window.
//!
//! Architecture Invariant: floats (trace days, scale factors, distribution samples) become
//! integer milliseconds once, here; what leaves this module is `ClusterEvent`s, sorted by
//! [`event_order`], the same for the same inputs and seed on every machine. Randomness comes
//! from `sim::rng::stream(seed, "failures")` and its numbered ChaCha sub-streams only.

pub mod alibaba2017;
pub mod fit;
pub mod infinitehbd;
pub mod map;
pub mod model;
mod numeric;
pub mod spec;
pub mod titan;
pub mod trace;

pub use alibaba2017::{load_alibaba2017, read_alibaba2017};
pub use fit::{FitReport, GoodnessOfFit, LogNormalFit, WeibullFit, fit};
pub use infinitehbd::{InfiniteHbdOptions, load_infinitehbd, read_infinitehbd};
pub use map::{MappedFeed, PastEnd, map_onto};
pub use model::{FailureModel, LogNormal, ModelFeed, Weibull};
pub use spec::{FailureFormat, FailureSpec, Failures, load};
pub use titan::{load_titan, read_titan};
pub use trace::{FailureTrace, Fault};

use crate::error::TraceError;
use rand::SeedableRng;
use sim::ClusterEvent;
use sim::rng::StreamRng;

/// The most events one resolution may produce (a failure model or a trace mapped onto a
/// cluster): a guard against a typo such as `scale=0.00001`, not a model limit.
pub const MAX_FAILURE_EVENTS: usize = 20_000_000;

/// The order of every event list this module returns: time, then node, then node failures
/// before GPU failures before heartbeats, then GPU slot, then repair (`None` first). A total
/// order on everything an event holds, so equal inputs give equal lists.
pub fn event_order(event: &ClusterEvent) -> (u64, u32, u8, u32, Option<u64>) {
    match *event {
        ClusterEvent::NodeFail { time, node, repair } => (time.as_ms(), node.0, 0, 0, repair.map(|r| r.as_ms())),
        ClusterEvent::GpuFail { time, node, gpu, repair } => (time.as_ms(), node.0, 1, gpu, repair.map(|r| r.as_ms())),
        ClusterEvent::Heartbeat { time, node } => (time.as_ms(), node.0, 2, 0, None),
    }
}

/// The key of `sim::rng::stream(seed, "failures")`, from which [`substream`]s are made.
fn failures_key(seed: u64) -> [u8; 32] {
    sim::rng::stream(seed, "failures").get_seed()
}

/// ChaCha sub-stream `id` (its nonce) of the stream with `key`: independent of every other id.
fn substream(key: [u8; 32], id: u64) -> StreamRng {
    let mut rng = StreamRng::from_seed(key);
    rng.set_stream(id);
    rng
}

fn sort_events(events: &mut [ClusterEvent]) {
    events.sort_by_key(event_order);
}

/// An error when `count` events would be more than [`MAX_FAILURE_EVENTS`].
fn check_event_budget(what: &str, count: f64) -> Result<(), TraceError> {
    if count.is_finite() && count <= MAX_FAILURE_EVENTS as f64 {
        return Ok(());
    }
    Err(TraceError::value(
        what,
        format!(
            "about {count:.0} failure events would be generated, more than the limit of {MAX_FAILURE_EVENTS}; \
             use a shorter window, a smaller cluster or longer times between failures"
        ),
    ))
}

/// Milliseconds (as a float) to whole milliseconds, rounding half away from zero; NaN and
/// negatives become 0, huge values saturate (`as` does both).
fn round_ms(ms: f64) -> u64 {
    ms.round() as u64
}

/// Milliseconds in an hour, for the `_h` parameters.
const MS_PER_HOUR: f64 = 3_600_000.0;
