//! Finish-time fairness rho as an exact fraction, compared fast.
//!
//! A round compares rhos all the time: the ranked order's heaps and every pool's victims are
//! sorted by them, lazily. Compared exactly (two u128 products), that was about a tenth of
//! themis' time at a million jobs. So each rho also carries its value in f64, compared first:
//! when numerator and denominator are below 2^53 both are exact in f64, and a correctly
//! rounded division is monotone (if a/b < c/d then fl(a/b) <= fl(c/d)), so two different
//! approximations order their rhos as the exact values do. Equal approximations, and values
//! too large to approximate (NaN), are compared exactly: the order is exactly the exact one.

use std::cmp::Ordering;

/// Below this, an integer converts to f64 exactly.
const EXACT_IN_F64: u128 = 1 << 53;

/// rho = num / den, exact (ordered by value: 1/2 equals 2/4). Aligned to 4 bytes, not a
/// u128's 16: 40 bytes, not 48, in the heaps that move rhos around, and beside a u32 (the
/// ranked order's index, a victim's task id) 44, not 48 (fields are only ever read by value,
/// which a packed struct allows; x86 reads them unaligned at no cost in instructions).
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(4))]
pub(super) struct Rho {
    /// num / den in f64 when both are exact in f64 and den is not 0; else NaN.
    approx: f64,
    num: u128,
    den: u128,
}

impl Rho {
    pub(super) fn new(num: u128, den: u128) -> Rho {
        let approx =
            if num < EXACT_IN_F64 && den < EXACT_IN_F64 && den > 0 { num as f64 / den as f64 } else { f64::NAN };
        Rho { approx, num, den }
    }

    /// rho x 1000, cut: what the decision log prints. In u64 where it fits (a u128 division
    /// is a call, and this runs once per preemption).
    pub(super) fn thousandths(self) -> u128 {
        let (num, den) = (self.num, self.den.max(1));
        match (u64::try_from(num * 1000), u64::try_from(den)) {
            (Ok(num), Ok(den)) => u128::from(num / den),
            _ => num * 1000 / den,
        }
    }

    fn exact_cmp(&self, other: &Rho) -> Ordering {
        let (num, den, other_num, other_den) = (self.num, self.den, other.num, other.den);
        (num * other_den).cmp(&(other_num * den))
    }
}

impl Ord for Rho {
    fn cmp(&self, other: &Rho) -> Ordering {
        let (approx, other_approx) = (self.approx, other.approx);
        match approx.partial_cmp(&other_approx) {
            Some(Ordering::Less) => Ordering::Less,
            Some(Ordering::Greater) => Ordering::Greater,
            Some(Ordering::Equal) | None => self.exact_cmp(other),
        }
    }
}

impl PartialOrd for Rho {
    fn partial_cmp(&self, other: &Rho) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Rho {
    fn eq(&self, other: &Rho) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Rho {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fractions near one another (the approximations collide), of every size (some beyond
    /// 2^53, some with a zero denominator).
    fn samples() -> Vec<(u128, u128)> {
        let mut next = crate::test_numbers(0x2545_f491_4f6c_dd1d);
        let mut out = vec![(0, 0), (0, 1), (1, 0), (5, 0), (1, 3), (2, 6), (3, 9)];
        let big = EXACT_IN_F64;
        out.extend([(big - 1, big - 2), (big - 2, big - 3), (big, big - 1), (big + 1, big), (big * 3, 3)]);
        for _ in 0..400 {
            let scale = [10, 1_000, 1 << 40, 1 << 53, 1 << 58][(next() % 5) as usize];
            let den = u128::from(next()) % scale + 1;
            let num = den * u128::from(next() % 4) + u128::from(next()) % scale;
            out.push((num, den));
            out.push((num + 1, den)); // a neighbour: the same f64 when large
            out.push((num * 7, den * 7)); // the same value
        }
        out
    }

    #[test]
    fn orders_exactly_as_the_cross_products() {
        let samples = samples();
        for &(an, ad) in &samples {
            for &(bn, bd) in &samples {
                let exact = (an * bd).cmp(&(bn * ad));
                assert_eq!(Rho::new(an, ad).cmp(&Rho::new(bn, bd)), exact, "{an}/{ad} against {bn}/{bd}");
            }
        }
    }

    #[test]
    fn equal_values_are_equal_whatever_their_terms() {
        assert_eq!(Rho::new(1, 2), Rho::new(2, 4));
        assert_eq!(Rho::new(EXACT_IN_F64 * 2, 2), Rho::new(EXACT_IN_F64, 1));
        assert!(Rho::new(EXACT_IN_F64 + 1, 1) > Rho::new(EXACT_IN_F64, 1));
        assert!(Rho::new(1, 3) < Rho::new(EXACT_IN_F64 + 1, EXACT_IN_F64));
    }

    #[test]
    fn is_forty_bytes() {
        assert_eq!(std::mem::size_of::<Rho>(), 40);
        assert_eq!(std::mem::align_of::<Rho>(), 4);
    }

    #[test]
    fn thousandths_are_cut() {
        assert_eq!(Rho::new(2, 3).thousandths(), 666);
        assert_eq!(Rho::new(5, 0).thousandths(), 5000);
        assert_eq!(Rho::new(u128::from(u64::MAX), 1).thousandths(), u128::from(u64::MAX) * 1000);
    }
}
