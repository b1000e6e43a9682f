//! The NVML backend: nvml-wrapper over the driver's libnvidia-ml.so.1 (or any library at a
//! given path, such as the fake one the tests build). XID errors arrive through an NVML event
//! set, waited on by one watcher thread that owns its borrow of the library; ECC counts and
//! lost devices are polled at each [`GpuBackend::health`] call.

use super::{BackendError, GpuBackend, GpuInfo, GpuProcess, HealthEvent};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const MIB: u64 = 1 << 20;

pub struct NvmlBackend {
    nvml: Arc<Nvml>,
    /// UUID of each index seen at start (to name a GPU once it is lost).
    uuids: BTreeMap<u32, String>,
    lost: BTreeMap<u32, bool>,
    ecc: BTreeMap<u32, u64>,
    events: Receiver<HealthEvent>,
    stop: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
    /// Why XID events are not watched, if they are not (no event support on this GPU).
    pub watch_error: Arc<Mutex<Option<String>>>,
}

fn err(what: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError(format!("NVML: {what}: {e}"))
}

impl NvmlBackend {
    /// Loads NVML from `path`, or from the system's `libnvidia-ml.so.1` when `None`.
    pub fn open(path: Option<&Path>) -> Result<NvmlBackend, BackendError> {
        let nvml = match path {
            Some(p) => Nvml::builder().lib_path(p.as_os_str()).init(),
            None => Nvml::init(),
        }
        .map_err(|e| {
            let from = path.map_or("libnvidia-ml.so.1".to_string(), |p| p.display().to_string());
            err(&format!("cannot load {from} (is the NVIDIA driver installed?)"), e)
        })?;
        let nvml = Arc::new(nvml);
        let count = nvml.device_count().map_err(|e| err("device count", e))?;
        let mut uuids = BTreeMap::new();
        for index in 0..count {
            let device = nvml.device_by_index(index).map_err(|e| err(&format!("GPU {index}"), e))?;
            uuids.insert(index, device.uuid().map_err(|e| err(&format!("GPU {index} UUID"), e))?);
        }
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let watch_error = Arc::new(Mutex::new(None));
        let watcher = {
            let (nvml, stop, watch_error, uuids) = (nvml.clone(), stop.clone(), watch_error.clone(), uuids.clone());
            std::thread::Builder::new()
                .name("nvml-events".into())
                .spawn(move || watch_events(&nvml, &uuids, &stop, &tx, &watch_error))
                .map_err(|e| err("cannot start the event thread", e))?
        };
        Ok(NvmlBackend {
            ecc: uuids.keys().map(|&i| (i, 0)).collect(),
            lost: uuids.keys().map(|&i| (i, false)).collect(),
            nvml,
            uuids,
            events: rx,
            stop,
            watcher: Some(watcher),
            watch_error,
        })
    }

    fn info(device: &Device<'_>, index: u32) -> Result<GpuInfo, NvmlError> {
        let memory = device.memory_info()?;
        Ok(GpuInfo {
            index,
            uuid: device.uuid()?,
            name: device.name()?,
            memory_total_mib: memory.total / MIB,
            memory_used_mib: memory.used / MIB,
            utilisation_pct: device.utilization_rates().map(|u| u.gpu).unwrap_or(0),
            temperature_c: device.temperature(TemperatureSensor::Gpu).unwrap_or(0),
        })
    }

    /// Marks `index` lost, once; the event to report if this is news.
    fn mark_lost(&mut self, index: u32) -> Option<HealthEvent> {
        let was = self.lost.insert(index, true).unwrap_or(false);
        (!was).then(|| HealthEvent::Lost { uuid: self.uuids.get(&index).cloned().unwrap_or_default() })
    }
}

/// Registers every GPU for XID (and double-bit ECC) events, then waits on the set until told
/// to stop, sending each event's GPU UUID and XID.
fn watch_events(
    nvml: &Nvml,
    uuids: &BTreeMap<u32, String>,
    stop: &AtomicBool,
    tx: &Sender<HealthEvent>,
    watch_error: &Mutex<Option<String>>,
) {
    let note = |e: String| {
        if let Ok(mut w) = watch_error.lock() {
            *w = Some(e);
        }
    };
    let mut set = match nvml.create_event_set() {
        Ok(set) => set,
        Err(e) => return note(format!("cannot create an event set: {e}")),
    };
    for &index in uuids.keys() {
        let Ok(device) = nvml.device_by_index(index) else { continue };
        let wanted = EventTypes::CRITICAL_XID_ERROR | EventTypes::DOUBLE_BIT_ECC_ERROR;
        let supported = device.supported_event_types().unwrap_or(EventTypes::CRITICAL_XID_ERROR);
        let types = wanted & supported;
        if types.is_empty() {
            continue;
        }
        set = match device.register_events(types, set) {
            Ok(set) => set,
            Err(e) => {
                // The wrapper frees the set on failure: start over without this GPU's events.
                note(format!("GPU {index}: cannot register events: {e}"));
                match nvml.create_event_set() {
                    Ok(set) => set,
                    Err(e) => return note(format!("cannot create an event set: {e}")),
                }
            }
        };
    }
    while !stop.load(Ordering::Relaxed) {
        match set.wait(200) {
            Ok(data) => {
                let uuid = data.device.uuid().unwrap_or_default();
                if let Some(xid) = data.event_data {
                    let code = match xid {
                        nvml_wrapper::enums::event::XidError::Value(v) => v,
                        nvml_wrapper::enums::event::XidError::Unknown => 999,
                    };
                    if tx.send(HealthEvent::Xid { uuid, code }).is_err() {
                        return;
                    }
                }
            }
            Err(NvmlError::Timeout) => {}
            Err(e) => {
                note(format!("event wait failed: {e}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

impl Drop for NvmlBackend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

impl GpuBackend for NvmlBackend {
    fn kind(&self) -> &'static str {
        "nvml"
    }

    fn gpus(&mut self) -> Result<Vec<GpuInfo>, BackendError> {
        let count = self.nvml.device_count().map_err(|e| err("device count", e))?;
        let mut out = Vec::new();
        for index in 0..count {
            if self.lost.get(&index).copied().unwrap_or(false) {
                continue;
            }
            let info = self.nvml.device_by_index(index).and_then(|d| Self::info(&d, index));
            match info {
                Ok(info) => out.push(info),
                Err(NvmlError::GpuLost) => {}
                Err(e) => return Err(err(&format!("GPU {index}"), e)),
            }
        }
        Ok(out)
    }

    fn health(&mut self, timeout_ms: u32) -> Result<Vec<HealthEvent>, BackendError> {
        let mut out = Vec::new();
        let indices: Vec<u32> = self.uuids.keys().copied().collect();
        for index in indices {
            if self.lost.get(&index).copied().unwrap_or(false) {
                continue;
            }
            let count = self
                .nvml
                .device_by_index(index)
                .and_then(|d| d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile));
            match count {
                Ok(count) => {
                    let before = self.ecc.insert(index, count).unwrap_or(0);
                    if count > before {
                        out.push(HealthEvent::Ecc { uuid: self.uuids[&index].clone(), count });
                    }
                }
                Err(NvmlError::GpuLost) => out.extend(self.mark_lost(index)),
                // ECC off or unsupported (consumer GPUs): nothing to count.
                Err(_) => {}
            }
        }
        let first = if out.is_empty() {
            match self.events.recv_timeout(Duration::from_millis(u64::from(timeout_ms))) {
                Ok(e) => Some(e),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => None,
            }
        } else {
            None
        };
        out.extend(first);
        out.extend(self.events.try_iter());
        Ok(out)
    }

    fn processes(&mut self) -> Result<Vec<GpuProcess>, BackendError> {
        let mut out = Vec::new();
        for (&index, uuid) in &self.uuids {
            if self.lost.get(&index).copied().unwrap_or(false) {
                continue;
            }
            let procs = self.nvml.device_by_index(index).and_then(|d| d.running_compute_processes());
            match procs {
                Ok(mut procs) => {
                    procs.sort_by_key(|p| p.pid);
                    out.extend(procs.into_iter().map(|p| GpuProcess {
                        uuid: uuid.clone(),
                        pid: p.pid,
                        used_memory_mib: match p.used_gpu_memory {
                            UsedGpuMemory::Used(bytes) => bytes / MIB,
                            UsedGpuMemory::Unavailable => 0,
                        },
                    }));
                }
                Err(NvmlError::GpuLost) => {}
                Err(e) => return Err(err(&format!("GPU {index} processes"), e)),
            }
        }
        Ok(out)
    }
}
