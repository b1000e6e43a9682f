//! Named random streams. One user seed feeds every consumer ("synth", "failures",
//! "policy:<name>") through its own ChaCha8 stream keyed by hash(seed, name), so adding a
//! consumer never shifts the numbers another one draws.

use crate::digest::Digest;
use rand::SeedableRng;
pub use rand::rngs::ChaCha8Rng;

/// The generator behind every stream: ChaCha8, portable and documented as stable, unlike `StdRng`.
pub type StreamRng = ChaCha8Rng;

/// The stream called `name` under the run seed `seed`.
pub fn stream(seed: u64, name: &str) -> StreamRng {
    let mut key = [0u8; 32];
    for (i, chunk) in key.chunks_mut(8).enumerate() {
        let word = Digest::new().u64(seed).str(name).u64(i as u64).finish();
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    StreamRng::from_seed(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a1: Vec<u64> = (0..4)
            .map({
                let mut r = stream(7, "synth");
                move |_| r.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut r = stream(7, "synth");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = stream(7, "failures");
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = stream(8, "synth");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }
}
