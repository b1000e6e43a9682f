//! A small, stable, dependency-free 64-bit hash (FNV-1a) used for run digests and for
//! deriving named RNG streams. Stability across versions and machines is the point: the
//! algorithm is fixed here, not borrowed from a crate whose output may change.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

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
    pub fn u64(&mut self, value: u64) -> &mut Self {
        self.bytes(&value.to_le_bytes())
    }
    pub fn u32(&mut self, value: u32) -> &mut Self {
        self.bytes(&value.to_le_bytes())
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

    #[test]
    fn strings_are_length_prefixed() {
        let ab_c = Digest::new().str("ab").str("c").finish();
        let a_bc = Digest::new().str("a").str("bc").finish();
        assert_ne!(ab_c, a_bc);
    }
}
