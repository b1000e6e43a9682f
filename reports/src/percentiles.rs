//! Nearest-rank percentiles of whole milliseconds in bounded memory.
//!
//! [`Percentiles`] keeps every value, exactly, while it holds at most a cap of them
//! ([`EXACT_CAP`], 2^23 = 8,388,608 values, 64 MiB), and answers exactly what the nearest rank
//! over the sorted values is (the smallest value with at least p% of the values at or below
//! it; [`crate::percentile_s`]). One value past the cap it moves them into a [`Sketch`], a
//! histogram of logarithmic buckets whose answers are within [`SKETCH_RELATIVE_ERROR`]
//! (2^-10, under 0.1%) of the exact nearest-rank value, in at most 28,672 buckets (224 KiB)
//! however many values come. Both are deterministic: integer arithmetic only, no sampling.
//!
//! The cap: every public trace replayed so far has fewer succeeded jobs than 2^23, so their
//! summaries stay exact and byte for byte what they were; sorting 2^23 values takes well
//! under a second; and 64 MiB per metric bounds a streamed run of 10^8 jobs (which would
//! otherwise keep 800 MB of JCTs) at no cost to runs of today's sizes.

/// How many values a [`Percentiles`] keeps exactly before it sketches them.
pub const EXACT_CAP: usize = 1 << 23;

/// Sub-buckets per power of two above [`Sketch`]'s unit buckets: 2^SUB_BITS.
const SUB_BITS: u32 = 9;
const SUB: u64 = 1 << SUB_BITS;
/// Values below this have a bucket each (exact).
const UNIT_BUCKETS: u64 = 2 * SUB;
/// Buckets of values up to `u64::MAX`.
const BUCKETS: usize = ((64 - SUB_BITS as usize - 1) * SUB as usize) + UNIT_BUCKETS as usize;

/// The largest relative error of a [`Sketch`]'s percentile: 2^-(SUB_BITS + 1) = 0.0977%.
pub const SKETCH_RELATIVE_ERROR: f64 = 1.0 / (2 * SUB) as f64;

/// How a summary names percentiles that came from the sketch (`None` in the summary: exact).
pub const SKETCH_METHOD: &str = "sketch(0.1%)";

/// A histogram of whole-millisecond values in logarithmic buckets: below 1024 a bucket per
/// value; above, 512 buckets of equal width per power of two, each bucket's width at most
/// 1/512 of its lowest value. A percentile is read as the middle of the bucket holding the
/// nearest-rank value, so it is within half a bucket, 1/1024 of that value (0.0977%). Two
/// sketches merge by adding their counts: the merge is exactly the sketch of both sets of
/// values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sketch {
    /// Counts by bucket, from bucket 0 to the highest bucket seen.
    counts: Vec<u64>,
    total: u64,
}

impl Default for Sketch {
    fn default() -> Self {
        Sketch::new()
    }
}

impl Sketch {
    pub fn new() -> Sketch {
        Sketch { counts: Vec::new(), total: 0 }
    }

    /// The bucket of `v`.
    fn bucket(v: u64) -> usize {
        if v < UNIT_BUCKETS {
            return v as usize;
        }
        let shift = v.ilog2() - SUB_BITS; // >= 1
        (u64::from(shift) * SUB + (v >> shift)) as usize
    }

    /// The values bucket `b` holds: its lowest and its width.
    fn range(b: usize) -> (u64, u64) {
        let b = b as u64;
        if b < UNIT_BUCKETS {
            return (b, 1);
        }
        let shift = b / SUB - 1;
        let mantissa = b - shift * SUB;
        (mantissa << shift, 1 << shift)
    }

    pub fn add(&mut self, v: u64) {
        let b = Sketch::bucket(v);
        debug_assert!(b < BUCKETS);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.total += 1;
    }

    /// Adds `other`'s values to these.
    pub fn merge(&mut self, other: &Sketch) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
    }

    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The nearest-rank `p`th percentile, ms, to within [`SKETCH_RELATIVE_ERROR`]: the middle
    /// of its bucket (rounded down to a whole ms). `None` without values.
    pub fn percentile_ms(&self, p: u32) -> Option<u64> {
        let rank = nearest_rank(self.total, p)?;
        let mut seen = 0;
        for (b, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let (low, width) = Sketch::range(b);
                return Some(low + (width - 1) / 2);
            }
        }
        unreachable!("the counts sum to the total")
    }
}

/// The 1-based nearest rank of the `p`th percentile of `n` values; `None` for none.
fn nearest_rank(n: u64, p: u32) -> Option<u64> {
    (n > 0).then(|| (u64::from(p) * n).div_ceil(100).max(1))
}

/// Values (ms) whose nearest-rank percentiles are asked for: exact up to a cap, then sketched.
#[derive(Debug, Clone)]
pub struct Percentiles {
    values: Vec<u64>,
    sorted: bool,
    cap: usize,
    sketch: Option<Sketch>,
}

impl Default for Percentiles {
    fn default() -> Self {
        Percentiles::new()
    }
}

impl Percentiles {
    /// Exact up to [`EXACT_CAP`] values.
    pub fn new() -> Percentiles {
        Percentiles::with_cap(EXACT_CAP)
    }

    /// Exact up to `cap` values (tests use small caps).
    pub fn with_cap(cap: usize) -> Percentiles {
        Percentiles { values: Vec::new(), sorted: true, cap, sketch: None }
    }

    pub fn add(&mut self, ms: u64) {
        match &mut self.sketch {
            Some(sketch) => sketch.add(ms),
            None if self.values.len() < self.cap => {
                self.sorted &= self.values.last().is_none_or(|&last| last <= ms);
                self.values.push(ms);
            }
            None => {
                self.to_sketch();
                self.add(ms);
            }
        }
    }

    /// Moves the values into a sketch (and frees them): from now on, percentiles are sketched.
    pub fn to_sketch(&mut self) {
        if self.sketch.is_none() {
            let mut sketch = Sketch::new();
            for &v in &self.values {
                sketch.add(v);
            }
            self.values = Vec::new();
            self.sketch = Some(sketch);
        }
    }

    /// Adds `other`'s values: exact while both are and the cap holds them all.
    pub fn merge(&mut self, other: &Percentiles) {
        match (&mut self.sketch, &other.sketch) {
            (None, None) if self.values.len() + other.values.len() <= self.cap => {
                self.values.extend_from_slice(&other.values);
                self.sorted = false;
            }
            _ => {
                self.to_sketch();
                let sketch = self.sketch.as_mut().expect("just made");
                match &other.sketch {
                    Some(theirs) => sketch.merge(theirs),
                    None => other.values.iter().for_each(|&v| sketch.add(v)),
                }
            }
        }
    }

    pub fn len(&self) -> u64 {
        self.sketch.as_ref().map_or(self.values.len() as u64, Sketch::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the percentiles are exact (no sketch).
    pub fn is_exact(&self) -> bool {
        self.sketch.is_none()
    }

    /// The nearest-rank `p`th percentile in seconds, 0 without values: exact (as
    /// [`crate::percentile_s`] of the sorted values) or within the sketch's bound.
    pub fn percentile_s(&mut self, p: u32) -> f64 {
        match &self.sketch {
            Some(sketch) => sketch.percentile_ms(p).map_or(0.0, |ms| ms as f64 / 1000.0),
            None if self.sorted => crate::summary::percentile_s(&self.values, p),
            None => {
                // The value of that rank in sorted order, found without sorting: a selection
                // is linear, where sorting millions of values took a tenth of a second at the
                // end of every large run.
                let Some(rank) = nearest_rank(self.values.len() as u64, p) else { return 0.0 };
                let (_, &mut ms, _) = self.values.select_nth_unstable(rank as usize - 1);
                ms as f64 / 1000.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::percentile_s;
    use proptest::prelude::*;

    const PS: [u32; 8] = [0, 1, 10, 50, 90, 95, 99, 100];

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut next = 0u64;
        for b in 0..BUCKETS {
            let (low, width) = Sketch::range(b);
            assert_eq!(low, next, "bucket {b}");
            assert_eq!(Sketch::bucket(low), b);
            assert_eq!(Sketch::bucket(low + (width - 1)), b);
            assert!(width == 1 || (width as f64) <= low as f64 / SUB as f64, "bucket {b}");
            next = low.wrapping_add(width);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
        assert_eq!(Sketch::bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn sketch_of_no_values_and_of_one() {
        let mut p = Percentiles::with_cap(0);
        assert_eq!(p.percentile_s(50), 0.0);
        p.add(7_000);
        assert!(!p.is_exact());
        let got = p.percentile_s(99);
        assert!((got - 7.0).abs() <= 7.0 * SKETCH_RELATIVE_ERROR, "{got}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Under the cap: bit for bit today's nearest rank over the sorted values.
        #[test]
        fn exact_under_the_cap(values in prop::collection::vec(prop_oneof![0u64..10_000, any::<u64>()], 0..2_000)) {
            let mut p = Percentiles::new();
            values.iter().for_each(|&v| p.add(v));
            let mut sorted = values.clone();
            sorted.sort_unstable();
            prop_assert!(p.is_exact());
            prop_assert_eq!(p.len(), values.len() as u64);
            // Asked in rising and then falling order: each answer partly orders the values.
            for q in PS.into_iter().chain(PS.into_iter().rev()) {
                prop_assert_eq!(p.percentile_s(q).to_bits(), percentile_s(&sorted, q).to_bits());
            }
        }

        /// Past a small cap: within the stated bound of the exact nearest-rank value.
        #[test]
        fn sketch_within_its_bound(values in prop::collection::vec(prop_oneof![0u64..5_000, 0u64..100_000_000, any::<u64>()], 1..3_000)) {
            let mut p = Percentiles::with_cap(64);
            values.iter().for_each(|&v| p.add(v));
            let mut sorted = values.clone();
            sorted.sort_unstable();
            prop_assert_eq!(p.is_exact(), values.len() <= 64);
            for q in PS {
                let exact = percentile_s(&sorted, q);
                let got = p.percentile_s(q);
                prop_assert!((got - exact).abs() <= exact * SKETCH_RELATIVE_ERROR, "p{} {} vs {}", q, got, exact);
            }
        }

        /// Merging two sketches is sketching the union; so is merging two capped sets.
        #[test]
        fn merge_is_the_sketch_of_the_union(
            a in prop::collection::vec(0u64..1u64 << 40, 0..500),
            b in prop::collection::vec(0u64..1u64 << 40, 0..500),
        ) {
            let sketch = |values: &[u64]| {
                let mut s = Sketch::new();
                values.iter().for_each(|&v| s.add(v));
                s
            };
            let mut merged = sketch(&a);
            merged.merge(&sketch(&b));
            let union: Vec<u64> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(&merged, &sketch(&union));

            let (mut pa, mut pb) = (Percentiles::with_cap(300), Percentiles::with_cap(300));
            a.iter().for_each(|&v| pa.add(v));
            b.iter().for_each(|&v| pb.add(v));
            pa.merge(&pb);
            let mut whole = Percentiles::with_cap(300);
            union.iter().for_each(|&v| whole.add(v));
            prop_assert_eq!(pa.is_exact(), whole.is_exact());
            for q in PS {
                prop_assert_eq!(pa.percentile_s(q).to_bits(), whole.percentile_s(q).to_bits());
            }
        }
    }
}
