//! A hint to the processor to start loading a value it will soon need. At 100,000 GPUs a run
//! holds over a million jobs, and the task a completion ends was started long ago: its state
//! is cold, a cache miss at each completion, and its GPU list, a block of its own, a second
//! one behind it. The engine knows the next two completions (the heap's top and the least of
//! its children): while it applies one, it asks for the state of the one after next, and for
//! the GPU list of the next (whose state, asked for an event earlier, tells where it lies).
//! A streamed run's reader asks for the job after the next in its batch the same way.

const LINE: usize = 64;

/// Asks for the cache lines of `value` (up to three); changes nothing else.
pub fn prefetch<T>(value: &T) {
    prefetch_bytes(value, 3 * LINE);
}

/// Asks for the cache lines of `value`'s first `bytes` bytes (all of it if shorter).
#[inline]
pub fn prefetch_bytes<T>(value: &T, bytes: usize) {
    prefetch_span(std::ptr::from_ref(value).cast::<u8>(), size_of::<T>().min(bytes));
}

/// Asks for every cache line that the `bytes` bytes from `start` touch: the one holding the
/// first byte, then one every 64 bytes up to the one holding the last. A counted loop over
/// line addresses: an iterator of offsets (a range stepped by 64, then the last byte) cost
/// the engine's heap pops more instructions than the prefetches themselves.
#[inline]
pub fn prefetch_span(start: *const u8, bytes: usize) {
    if bytes == 0 {
        return;
    }
    // From the start of the first byte's line to the last byte's, in whole lines.
    let lead = start.addr() % LINE;
    let lines = (lead + bytes).div_ceil(LINE);
    let first_line = start.wrapping_sub(lead);
    for line in 0..lines {
        prefetch_line(first_line.wrapping_add(line * LINE));
    }
}

/// Asks for the cache line holding `address`, which need not be valid (nothing is read).
#[inline]
pub fn prefetch_line(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch never dereferences its address and cannot fault (SSE, and so
        // the instruction, is part of every x86_64 target).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
