//! A pure-Rust GPU backend: made-up GPUs whose health changes only when a test says so,
//! either through [`SimBackend::injector`] (same process) or by appending lines to an injection
//! file (another process: `sim:inject=FILE`, the format of the fake NVML library).

use super::{BackendError, GpuBackend, GpuInfo, GpuProcess, HealthEvent, Injection, parse_injection};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct SimBackend {
    gpus: Vec<GpuInfo>,
    lost: Vec<bool>,
    ecc: Vec<u64>,
    processes: Vec<GpuProcess>,
    pending: Arc<Mutex<Vec<Injection>>>,
    inject_file: Option<PathBuf>,
    consumed_lines: usize,
}

/// Injects health events into a [`SimBackend`] from another thread.
#[derive(Clone)]
pub struct SimInjector(Arc<Mutex<Vec<Injection>>>);

impl SimInjector {
    pub fn xid(&self, index: u32, code: u64) {
        self.push(Injection::Xid(index, code));
    }
    pub fn lose(&self, index: u32) {
        self.push(Injection::Lost(index));
    }
    pub fn ecc(&self, index: u32, count: u64) {
        self.push(Injection::Ecc(index, count));
    }
    fn push(&self, i: Injection) {
        if let Ok(mut p) = self.0.lock() {
            p.push(i);
        }
    }
}

impl SimBackend {
    /// `count` GPUs named `name`, with UUIDs `GPU-<prefix>-<index>`.
    pub fn new(count: u32, name: &str, prefix: &str) -> SimBackend {
        let gpus = (0..count)
            .map(|index| GpuInfo {
                index,
                uuid: format!("GPU-{prefix}-{index}"),
                name: name.to_string(),
                memory_total_mib: 40_960,
                memory_used_mib: 0,
                utilisation_pct: 0,
                temperature_c: 30,
            })
            .collect();
        SimBackend {
            gpus,
            lost: vec![false; count as usize],
            ecc: vec![0; count as usize],
            processes: Vec::new(),
            pending: Arc::default(),
            inject_file: None,
            consumed_lines: 0,
        }
    }

    /// `gpus=N,name=NAME,prefix=P,inject=FILE` (all optional: 1 GPU named `SIM`, prefix `sim`).
    pub fn from_params(params: &str) -> Result<SimBackend, BackendError> {
        let (mut count, mut name, mut prefix, mut inject) = (1u32, "SIM".to_string(), "sim".to_string(), None);
        for part in params.split(',').filter(|p| !p.is_empty()) {
            let (key, value) =
                part.split_once('=').ok_or_else(|| BackendError(format!("sim backend: `{part}` is not key=value")))?;
            match key {
                "gpus" => {
                    count = value
                        .parse()
                        .ok()
                        .filter(|&n| (1..=64).contains(&n))
                        .ok_or_else(|| BackendError(format!("sim backend: gpus must be 1 to 64, not `{value}`")))?
                }
                "name" => name = value.to_string(),
                "prefix" => prefix = value.to_string(),
                "inject" => inject = Some(PathBuf::from(value)),
                _ => {
                    return Err(BackendError(format!(
                        "sim backend: unknown key `{key}`; valid keys: gpus, name, prefix, inject"
                    )));
                }
            }
        }
        let mut backend = SimBackend::new(count, &name, &prefix);
        backend.inject_file = inject;
        Ok(backend)
    }

    pub fn injector(&self) -> SimInjector {
        SimInjector(self.pending.clone())
    }

    fn take_injections(&mut self) -> Vec<Injection> {
        let mut out: Vec<Injection> = self.pending.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
        if let Some(path) = &self.inject_file
            && let Ok(text) = std::fs::read_to_string(path)
        {
            // Only whole lines count: a line still being written is read next time.
            let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
            for line in complete.lines().skip(self.consumed_lines) {
                self.consumed_lines += 1;
                out.extend(parse_injection(line));
            }
        }
        out
    }

    fn apply(&mut self, injections: Vec<Injection>) -> Vec<HealthEvent> {
        let mut events = Vec::new();
        for i in injections {
            let uuid = |s: &SimBackend, d: u32| s.gpus.get(d as usize).map(|g| g.uuid.clone());
            match i {
                Injection::Xid(d, code) => events.extend(uuid(self, d).map(|uuid| HealthEvent::Xid { uuid, code })),
                Injection::Ecc(d, count) => {
                    if let Some(uuid) = uuid(self, d)
                        && count > self.ecc[d as usize]
                    {
                        self.ecc[d as usize] = count;
                        events.push(HealthEvent::Ecc { uuid, count });
                    }
                }
                Injection::Lost(d) => {
                    if let Some(uuid) = uuid(self, d)
                        && !std::mem::replace(&mut self.lost[d as usize], true)
                    {
                        events.push(HealthEvent::Lost { uuid });
                    }
                }
                Injection::Proc(d, pid, mib) => {
                    if let Some(uuid) = uuid(self, d) {
                        self.processes.push(GpuProcess { uuid, pid, used_memory_mib: mib });
                    }
                }
            }
        }
        events
    }
}

impl GpuBackend for SimBackend {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn gpus(&mut self) -> Result<Vec<GpuInfo>, BackendError> {
        let lost = &self.lost;
        Ok(self.gpus.iter().filter(|g| !lost[g.index as usize]).cloned().collect())
    }

    fn health(&mut self, timeout_ms: u32) -> Result<Vec<HealthEvent>, BackendError> {
        let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
        loop {
            let injections = self.take_injections();
            let events = self.apply(injections);
            if !events.is_empty() || Instant::now() >= deadline {
                return Ok(events);
            }
            std::thread::sleep(Duration::from_millis(10).min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    fn processes(&mut self) -> Result<Vec<GpuProcess>, BackendError> {
        let injections = self.take_injections();
        let _ = self.apply(injections);
        Ok(self.processes.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_events_come_out_once_in_order() {
        let mut b = SimBackend::new(2, "SIM", "n0");
        assert_eq!(b.gpus().unwrap().len(), 2);
        assert_eq!(b.health(0).unwrap(), vec![]);
        let inj = b.injector();
        inj.xid(1, 79);
        inj.ecc(0, 2);
        inj.lose(1);
        let events = b.health(0).unwrap();
        assert_eq!(
            events,
            vec![
                HealthEvent::Xid { uuid: "GPU-n0-1".into(), code: 79 },
                HealthEvent::Ecc { uuid: "GPU-n0-0".into(), count: 2 },
                HealthEvent::Lost { uuid: "GPU-n0-1".into() },
            ]
        );
        assert_eq!(b.health(0).unwrap(), vec![]);
        assert_eq!(b.gpus().unwrap().iter().map(|g| g.index).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn params_are_checked() {
        assert!(SimBackend::from_params("gpus=0").is_err());
        let e = SimBackend::from_params("colour=red").err().unwrap();
        assert!(e.0.contains("valid keys"), "{e}");
        let b = SimBackend::from_params("gpus=3,name=T4,prefix=x").unwrap();
        assert_eq!(b.gpus[2].uuid, "GPU-x-2");
    }
}
