//! The real NVML backend, driven through nvml-wrapper against a fake libnvidia-ml built from
//! C (tests/fake_nvml/fake_nvml.c) with the system C compiler. Each test compiles its own copy
//! at its own path: the library's globals are per copy, so tests may run in parallel.

use schedlab_live::agent::backend::{GpuBackend, NvmlBackend};
use schedlab_live::wire::HealthEvent;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Builds the fake library at a fresh path; returns it and its control file.
fn fake_nvml(test: &str, control: &str) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-nvml-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let so = dir.join("libnvidia-ml.so.1");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_nvml/fake_nvml.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&so)
        .arg(&source)
        .arg("-lpthread")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ctl = PathBuf::from(format!("{}.ctl", so.display()));
    std::fs::write(&ctl, control).unwrap();
    (so, ctl)
}

fn append(ctl: &PathBuf, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(ctl).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Polls `health` until `want` events came or 20 s passed.
fn collect(backend: &mut NvmlBackend, want: usize) -> Vec<HealthEvent> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        got.extend(backend.health(100).unwrap());
    }
    got
}

#[test]
fn discovers_gpus_and_processes() {
    let (so, ctl) = fake_nvml("discover", "devices 3\nproc 1 4242 1024\n");
    let mut b = NvmlBackend::open(Some(&so)).unwrap();
    let gpus = b.gpus().unwrap();
    assert_eq!(gpus.len(), 3);
    assert_eq!(gpus[1].index, 1);
    assert_eq!(gpus[1].uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
    assert_eq!(gpus[1].name, "Fake NVIDIA A100-SXM4-40GB");
    assert_eq!(gpus[1].memory_total_mib, 40 * 1024);
    assert_eq!(gpus[1].memory_used_mib, 1024);
    assert_eq!(gpus[1].utilisation_pct, 97);
    assert_eq!(gpus[0].utilisation_pct, 0);
    assert_eq!(gpus[2].temperature_c, 32);
    let procs = b.processes().unwrap();
    assert_eq!(procs.len(), 1);
    assert_eq!((procs[0].uuid.as_str(), procs[0].pid, procs[0].used_memory_mib), (gpus[1].uuid.as_str(), 4242, 1024));
    append(&ctl, "proc 0 7 10");
    assert_eq!(b.processes().unwrap().len(), 2);
    drop(b); // nvmlShutdown and nvmlEventSetFree must exist, or this panics
}

#[test]
fn injected_xid_ecc_and_lost_gpu_are_reported() {
    let (so, ctl) = fake_nvml("health", "devices 2\n");
    let mut b = NvmlBackend::open(Some(&so)).unwrap();
    assert_eq!(b.health(50).unwrap(), vec![]);
    append(&ctl, "xid 1 79");
    let events = collect(&mut b, 1);
    assert_eq!(events, vec![HealthEvent::Xid { uuid: "GPU-fa4e0000-0000-4000-8000-000000000001".into(), code: 79 }]);
    append(&ctl, "ecc 0 3");
    let events = collect(&mut b, 1);
    assert!(
        events.contains(&HealthEvent::Ecc { uuid: "GPU-fa4e0000-0000-4000-8000-000000000000".into(), count: 3 }),
        "{events:?}"
    );
    append(&ctl, "lost 0");
    let events = collect(&mut b, 1);
    assert!(
        events.contains(&HealthEvent::Lost { uuid: "GPU-fa4e0000-0000-4000-8000-000000000000".into() }),
        "{events:?}"
    );
    // Reported once; the lost GPU is no longer listed.
    assert!(!b.health(50).unwrap().iter().any(|e| matches!(e, HealthEvent::Lost { .. })));
    assert_eq!(b.gpus().unwrap().iter().map(|g| g.index).collect::<Vec<_>>(), vec![1]);
    assert!(b.watch_error.lock().unwrap().is_none());
}

#[test]
fn a_missing_library_is_an_error_not_a_panic() {
    let e = NvmlBackend::open(Some(std::path::Path::new("/nonexistent/libnvidia-ml.so.1"))).err().unwrap();
    assert!(e.0.contains("cannot load /nonexistent/libnvidia-ml.so.1"), "{e}");
}
