//! Integer simulated time. All of schedlab's model runs on whole milliseconds so that
//! every run is reproducible bit for bit; floats from traces are converted once, in `traces`.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in milliseconds since the trace's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

/// A span of simulated time in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimDuration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn from_secs(secs: u64) -> SimTime {
        SimTime(secs.saturating_mul(1000))
    }
    pub fn as_ms(self) -> u64 {
        self.0
    }
    /// `self + d`, or [`SimTime::MAX`] past it.
    pub fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
    /// Seconds as a float, for reports only (never fed back into the model).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }
    /// Time elapsed from `earlier` to `self`; zero when `earlier` is later.
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub fn from_secs(secs: u64) -> SimDuration {
        SimDuration(secs.saturating_mul(1000))
    }
    pub fn as_ms(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }
    pub fn saturating_sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}

impl AddAssign for SimDuration {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Sub for SimDuration {
    type Output = SimDuration;
    fn sub(self, d: SimDuration) -> SimDuration {
        self.saturating_sub(d)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

/// The earlier of two times, either of which may be missing (the next event of two sources,
/// the first start of a job's tasks).
#[inline]
pub(crate) fn earliest(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A [`SimTime`] or [`SimDuration`]: what [`OptMs`] keeps in one `u64`.
pub trait Millis: Copy {
    fn from_ms(ms: u64) -> Self;
    fn ms(self) -> u64;
}

impl Millis for SimTime {
    fn from_ms(ms: u64) -> SimTime {
        SimTime(ms)
    }
    fn ms(self) -> u64 {
        self.0
    }
}

impl Millis for SimDuration {
    fn from_ms(ms: u64) -> SimDuration {
        SimDuration(ms)
    }
    fn ms(self) -> u64 {
        self.0
    }
}

/// An optional time or duration in 8 bytes, where `Option` takes 16: the run-time state
/// holds several per task for a whole run, so a million-job run pays each one 8 MB
/// (docs/performance.md, "Memory"). Read it with [`OptMs::get`]; build it from an `Option`
/// or a value with `into()`.
///
/// `u64::MAX` milliseconds means none. A time or duration reaches it only by saturating (it
/// is 584 million years), and is then kept as one millisecond less.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OptMs<T>(u64, std::marker::PhantomData<T>);

/// An optional [`SimTime`] in 8 bytes.
pub type OptTime = OptMs<SimTime>;
/// An optional [`SimDuration`] in 8 bytes.
pub type OptDuration = OptMs<SimDuration>;

impl<T: Millis> OptMs<T> {
    pub const NONE: OptMs<T> = OptMs(u64::MAX, std::marker::PhantomData);

    pub fn some(value: T) -> OptMs<T> {
        OptMs(value.ms().min(u64::MAX - 1), std::marker::PhantomData)
    }
    pub fn get(self) -> Option<T> {
        (self.0 != u64::MAX).then(|| T::from_ms(self.0))
    }
    pub fn is_some(self) -> bool {
        self.0 != u64::MAX
    }
    pub fn is_none(self) -> bool {
        self.0 == u64::MAX
    }
    /// Leaves none and returns what there was, as [`Option::take`].
    pub fn take(&mut self) -> Option<T> {
        std::mem::take(self).get()
    }
    /// Sets `value` where there is none, and returns what is there then.
    pub fn get_or_insert(&mut self, value: T) -> T {
        if self.is_none() {
            *self = OptMs::some(value);
        }
        T::from_ms(self.0)
    }
}

impl<T: Millis> Default for OptMs<T> {
    fn default() -> OptMs<T> {
        OptMs::NONE
    }
}

impl<T: Millis> From<Option<T>> for OptMs<T> {
    fn from(value: Option<T>) -> OptMs<T> {
        value.map_or(OptMs::NONE, OptMs::some)
    }
}

impl<T: Millis> From<T> for OptMs<T> {
    fn from(value: T) -> OptMs<T> {
        OptMs::some(value)
    }
}

impl<T: Millis + fmt::Debug> fmt::Debug for OptMs<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod opt_ms_tests {
    use super::*;

    #[test]
    fn keeps_every_value_but_the_saturated_one_exactly() {
        for ms in [0, 1, 86_400_000, u64::MAX - 2, u64::MAX - 1] {
            assert_eq!(OptTime::from(SimTime(ms)).get(), Some(SimTime(ms)));
            assert_eq!(OptDuration::from(Some(SimDuration(ms))).get(), Some(SimDuration(ms)));
        }
        assert_eq!(OptTime::from(SimTime::MAX).get(), Some(SimTime(u64::MAX - 1)));
        assert_eq!(OptTime::from(None).get(), None);
        assert_eq!(OptTime::default(), OptTime::NONE);
        assert!(OptTime::NONE.is_none() && OptTime::from(SimTime::ZERO).is_some());
        assert_eq!(std::mem::size_of::<OptTime>(), 8);
        assert_eq!(format!("{:?}", OptTime::from(SimTime(5))), "Some(SimTime(5))");
        let mut t = OptTime::NONE;
        assert_eq!(t.get_or_insert(SimTime(3)), SimTime(3));
        assert_eq!(t.get_or_insert(SimTime(4)), SimTime(3));
        assert_eq!((t.take(), t), (Some(SimTime(3)), OptTime::NONE));
    }
}
