//! schedlab's scheduling policies, one file each, and the registry that builds them from
//! `name[key=value,...]`. Every policy implements `sim::Policy` and nothing else: it cannot
//! tell simulation from live mode.

mod critical_path;
mod drf;
mod easy_backfill;
mod fair_share;
mod fifo;
mod params;
pub mod placement;
mod priority;
mod queue_share;
mod quota;
mod registry;
mod running;
mod sjf;
mod srtf;
mod themis;
mod tiresias;
mod tracking;
mod wait_queue;
mod weighted_score;

pub use params::{ParamInfo, SpecError};
pub use placement::{Placement, Placer, Shape};
pub use registry::{POLICIES, PolicyInfo, build};
