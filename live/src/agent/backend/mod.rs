//! GPU backends: what a node agent knows of its GPUs. [`NvmlBackend`] reads NVML through
//! nvml-wrapper (the real driver, or any library at a given path); [`SimBackend`] is pure Rust,
//! for tests and for machines without GPUs. Both report the same things: the GPUs (index,
//! UUID, name, memory, utilisation, temperature), health events (XID errors, uncorrected ECC
//! errors, lost devices) and the processes running on them.

mod nvml;
mod simulated;

pub use nvml::NvmlBackend;
pub use simulated::{SimBackend, SimInjector};

use crate::wire::{GpuInfo, GpuProcess, HealthEvent};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError(pub String);

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BackendError {}

/// What a node agent needs of its GPUs.
pub trait GpuBackend: Send {
    /// `nvml` or `sim`, for logs.
    fn kind(&self) -> &'static str;
    /// The GPUs that answer now, by index (a lost GPU is left out and reported by
    /// [`GpuBackend::health`] once).
    fn gpus(&mut self) -> Result<Vec<GpuInfo>, BackendError>;
    /// Health events since the last call, in the order they happened; waits up to
    /// `timeout_ms` for the first one when there is none yet.
    fn health(&mut self, timeout_ms: u32) -> Result<Vec<HealthEvent>, BackendError>;
    /// Compute processes on the GPUs, by GPU index then pid.
    fn processes(&mut self) -> Result<Vec<GpuProcess>, BackendError>;
}

/// Builds a backend from its spec: `nvml` (the system's libnvidia-ml.so.1),
/// `nvml:PATH` (a library at PATH), or `sim[:gpus=N][,name=NAME][,prefix=P][,inject=FILE]`.
pub fn from_spec(spec: &str) -> Result<Box<dyn GpuBackend>, BackendError> {
    if spec == "nvml" {
        return Ok(Box::new(NvmlBackend::open(None)?));
    }
    if let Some(path) = spec.strip_prefix("nvml:") {
        return Ok(Box::new(NvmlBackend::open(Some(std::path::Path::new(path)))?));
    }
    if spec == "sim" || spec.starts_with("sim:") {
        return Ok(Box::new(SimBackend::from_params(spec.strip_prefix("sim").unwrap_or("").trim_start_matches(':'))?));
    }
    Err(BackendError(format!(
        "unknown GPU backend `{spec}`; valid: nvml, nvml:PATH, sim[:gpus=N,name=NAME,prefix=P,inject=FILE]"
    )))
}

/// One line of an injection file (the simulated backend's, and the fake NVML library's):
/// `xid DEV CODE`, `ecc DEV COUNT`, `lost DEV`, `proc DEV PID MIB`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Injection {
    Xid(u32, u64),
    Ecc(u32, u64),
    Lost(u32),
    Proc(u32, u32, u64),
}

pub(crate) fn parse_injection(line: &str) -> Option<Injection> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
    let dev = n(1).and_then(|d| u32::try_from(d).ok());
    match words.first().copied() {
        Some("xid") => Some(Injection::Xid(dev?, n(2)?)),
        Some("ecc") => Some(Injection::Ecc(dev?, n(2)?)),
        Some("lost") => Some(Injection::Lost(dev?)),
        Some("proc") => Some(Injection::Proc(dev?, u32::try_from(n(2)?).ok()?, n(3)?)),
        _ => None,
    }
}
