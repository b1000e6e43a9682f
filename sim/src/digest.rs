//! A small, stable, dependency-free 64-bit hash (FNV-1a) used for run digests and for
//! deriving named RNG streams. Stability across versions and machines is the point: the
//! algorithm is fixed here, not borrowed from a crate whose output may change.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `FNV_PRIME` to the powers 0 to 8 (mod 2^64): what `k` zero bytes multiply the state by.
const PRIME_POWERS: [u64; 9] = {
    let mut powers = [1u64; 9];
    let mut k = 1;
    while k < 9 {
        powers[k] = powers[k - 1].wrapping_mul(FNV_PRIME);
        k += 1;
    }
    powers
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    state: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Digest { state: FNV_OFFSET }
    }
}

impl Digest {
    pub fn new() -> Digest {
        Digest::default()
    }
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.state ^= u64::from(b);
            self.state = self.state.wrapping_mul(FNV_PRIME);
        }
        self
    }
    /// A number's eight little-endian bytes. Its high bytes are mostly zero (times, ids,
    /// counts), and a zero byte leaves the state as it is before the multiplication, so `k`
    /// of them at the end multiply it by the prime `k` times: by `PRIME_POWERS[k]`, in one
    /// multiplication. The same hash as `bytes`, with a dependency chain of one multiplication
    /// where there were `k` multiplications and exclusive-ors (the decision log hashes two
    /// entries a job, and that chain was a tenth of the engine bench's wall time).
    pub fn u64(&mut self, value: u64) -> &mut Self {
        match value {
            // Nothing but zeros: the length of an empty string, in every log entry without
            // a detail.
            0 => self.low_bytes::<0, 8>(value),
            1..0x1_0000 => self.low_bytes::<2, 8>(value),
            0x1_0000..0x1_0000_0000 => self.low_bytes::<4, 8>(value),
            _ => self.low_bytes::<8, 8>(value),
        }
    }
    /// A number's four little-endian bytes (see `u64`).
    pub fn u32(&mut self, value: u32) -> &mut Self {
        // One byte: codes, counts, and the GPU ids of a cluster of up to 256 GPUs.
        match value {
            0..0x100 => self.low_bytes::<1, 4>(value.into()),
            0x100..0x1_0000 => self.low_bytes::<2, 4>(value.into()),
            _ => self.low_bytes::<4, 4>(value.into()),
        }
    }
    /// The `WIDTH` little-endian bytes of `value`, which has nothing above its low
    /// `SIGNIFICANT` ones: those, then a multiplication for the zeros. The counts are
    /// constants so that each case is unrolled (as one loop with a counted shift, it cost a
    /// shift by a register and a branch a byte).
    #[inline(always)]
    fn low_bytes<const SIGNIFICANT: usize, const WIDTH: usize>(&mut self, value: u64) -> &mut Self {
        let mut state = self.state;
        for i in 0..SIGNIFICANT {
            state = (state ^ ((value >> (8 * i)) & 0xff)).wrapping_mul(FNV_PRIME);
        }
        self.state = state.wrapping_mul(PRIME_POWERS[WIDTH - SIGNIFICANT]);
        self
    }
    /// A string, length-prefixed so that ("ab","c") and ("a","bc") differ.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }
    pub fn finish(&self) -> u64 {
        self.state
    }
    /// The digest as 16 lowercase hex digits, as written in summaries.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_published_vectors() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(Digest::new().finish(), 0xcbf29ce484222325);
        assert_eq!(Digest::new().bytes(b"a").finish(), 0xaf63dc4c8601ec8c);
        assert_eq!(Digest::new().bytes(b"foobar").finish(), 0x85944171f73967e8);
    }

    /// The hash of each byte in turn, as `bytes` takes them: what `u64` and `u32` must equal.
    fn bytewise(bytes: &[u8]) -> u64 {
        Digest::new().bytes(bytes).finish()
    }

    #[test]
    fn numbers_hash_as_their_bytes_at_every_magnitude() {
        let edges = [0, 1, 0xff, 0x100, 0xffff, 0x1_0000, 0xff_ffff, 0xffff_ffff, 0x1_0000_0000, u64::MAX];
        for value in edges.into_iter().chain((0..64).map(|b| 1u64 << b)).chain((0..64).map(|b| (1u64 << b) - 1)) {
            assert_eq!(Digest::new().u64(value).finish(), bytewise(&value.to_le_bytes()), "u64 {value:#x}");
            let low = value as u32;
            assert_eq!(Digest::new().u32(low).finish(), bytewise(&low.to_le_bytes()), "u32 {low:#x}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..Default::default() })]
        #[test]
        fn a_sequence_of_numbers_hashes_as_its_bytes(values in proptest::collection::vec((proptest::prelude::any::<u64>(), 0u32..64, proptest::prelude::any::<bool>()), 0..20)) {
            let (mut digest, mut bytes) = (Digest::new(), Vec::new());
            for (value, shift, wide) in values {
                let value = value >> shift; // every magnitude, not only the largest
                if wide {
                    digest.u64(value);
                    bytes.extend(value.to_le_bytes());
                } else {
                    digest.u32(value as u32);
                    bytes.extend((value as u32).to_le_bytes());
                }
            }
            proptest::prop_assert_eq!(digest.finish(), bytewise(&bytes));
        }
    }

    #[test]
    fn strings_are_length_prefixed() {
        let ab_c = Digest::new().str("ab").str("c").finish();
        let a_bc = Digest::new().str("a").str("bc").finish();
        assert_ne!(ab_c, a_bc);
    }
}
