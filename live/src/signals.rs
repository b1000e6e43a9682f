//! SIGTERM and SIGINT as a request to stop: `live serve` and `live agent` take their clean stop
//! path (the coordinator stops taking calls and writes its journal; the agent stops its tasks,
//! SIGTERM then SIGKILL after its grace period, and exits) instead of dying where they stand.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    SIGNAL.store(signal, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handlers (once is enough; again is harmless) and returns the flag they set.
pub fn stop_on_term_and_int() -> Result<&'static AtomicBool, String> {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction with a handler that only stores atomics; SA_RESTART so
        // that blocking calls elsewhere are not cut short by it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(format!("cannot handle signal {signal}: {}", std::io::Error::last_os_error()));
            }
        }
    }
    Ok(&STOP)
}

/// The signal that asked to stop (`SIGTERM`, `SIGINT`), if one did.
pub fn received() -> Option<&'static str> {
    match SIGNAL.load(Ordering::SeqCst) {
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGINT => Some("SIGINT"),
        _ => None,
    }
}
