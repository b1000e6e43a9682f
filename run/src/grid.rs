//! The run settings a sweep's `--grid` may vary, set from the grid's text.

use crate::{RunSpec, Seconds};

/// The run settings a sweep's `--grid` may vary (their flags' names, without dashes).
pub const GRID_KEYS: [&str; 7] = [
    "checkpoint_s",
    "checkpoint_cost_s",
    "restart_overhead_s",
    "pass_interval_s",
    "release_latency_s",
    "spare_nodes",
    "max_retries",
];

impl RunSpec {
    /// Sets one of [`GRID_KEYS`] to `value`, read as its flag reads it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let seconds = || value.parse::<Seconds>().map_err(|e| format!("--grid {key}: {e}"));
        let whole = || value.parse::<u32>().map_err(|_| format!("--grid {key}: `{value}` is not a whole number"));
        match key {
            "checkpoint_s" => self.checkpoint_s = seconds()?,
            "checkpoint_cost_s" => self.checkpoint_cost_s = seconds()?,
            "restart_overhead_s" => self.restart_overhead_s = seconds()?,
            "pass_interval_s" => self.pass_interval_s = seconds()?,
            "release_latency_s" => self.release_latency_s = seconds()?,
            "spare_nodes" => self.spare_nodes = whole()?,
            "max_retries" => self.max_retries = whole()?,
            _ => return Err(format!("--grid {key}: not a run setting a grid can vary ({})", GRID_KEYS.join(", "))),
        }
        Ok(())
    }
}
