//! `Seconds`: a duration as users write it (decimal seconds, `0.5`, `1800`) held as whole
//! milliseconds, read by the same exact parser the traces use. Written back in its shortest
//! exact spelling, so a RunSpec read from TOML, JSON or flags and printed again is unchanged.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sim::SimDuration;
use std::fmt;
use std::str::FromStr;

/// A non-negative duration in whole milliseconds, given and printed as decimal seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Seconds(pub SimDuration);

impl Seconds {
    /// Whole seconds.
    pub const fn secs(s: u64) -> Seconds {
        Seconds(SimDuration(s * 1000))
    }
    /// The duration.
    pub fn duration(self) -> SimDuration {
        self.0
    }
}

impl FromStr for Seconds {
    type Err = String;
    fn from_str(text: &str) -> Result<Seconds, String> {
        traces::parse_seconds_ms(text.trim())
            .map(|ms| Seconds(SimDuration(ms)))
            .map_err(|e| format!("`{text}`: expected {}", e.expected()))
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&traces::format_thousandths(self.0.as_ms()))
    }
}

impl Serialize for Seconds {
    /// A whole number of seconds as an integer, otherwise as a decimal number.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ms = self.0.as_ms();
        if ms.is_multiple_of(1000) { s.serialize_u64(ms / 1000) } else { s.serialize_f64(ms as f64 / 1000.0) }
    }
}

impl<'de> Deserialize<'de> for Seconds {
    /// A number or a string of decimal seconds. A float is read through its shortest
    /// spelling (`0.1` -> "0.1" -> 100 ms), so no binary rounding reaches the milliseconds.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Seconds, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Whole(u64),
            Float(f64),
            Text(String),
        }
        let text = match Given::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected a number of seconds (like 30 or 0.5) or a string of one"))?
        {
            Given::Whole(n) => n.to_string(),
            Given::Float(x) => x.to_string(),
            Given::Text(t) => t,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_read_exactly_and_print_shortest() {
        for (text, ms, printed) in
            [("10", 10_000, "10"), ("0.5", 500, "0.5"), ("0.0015", 2, "0.002"), ("1800.", 1_800_000, "1800")]
        {
            let s: Seconds = text.parse().unwrap();
            assert_eq!(s.0.as_ms(), ms, "{text}");
            assert_eq!(s.to_string(), printed);
        }
        for bad in ["-1", "1e3", "ten", ""] {
            assert!(bad.parse::<Seconds>().is_err(), "{bad}");
        }
    }

    #[test]
    fn seconds_round_trip_through_json_as_numbers() {
        for ms in [0, 1, 100, 1_500, 10_000, 86_400_000] {
            let s = Seconds(SimDuration(ms));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<Seconds>(&json).unwrap(), s, "{json}");
        }
        assert_eq!(serde_json::from_str::<Seconds>("\"0.25\"").unwrap().0.as_ms(), 250);
        assert!(serde_json::from_str::<Seconds>("-3").is_err());
        assert!(serde_json::from_str::<Seconds>("true").is_err());
    }
}

/// A non-negative number of hours, given and printed as a decimal (`720`, `0.5`), read
/// exactly as [`Seconds`] are (to a thousandth).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Hours(Seconds);

impl Hours {
    /// Whole hours.
    pub const fn whole(h: u64) -> Hours {
        Hours(Seconds::secs(h))
    }
    /// The duration, None if it overflows.
    pub fn duration(self) -> Option<SimDuration> {
        self.0.0.as_ms().checked_mul(3_600).map(SimDuration)
    }
}

impl FromStr for Hours {
    type Err = String;
    fn from_str(text: &str) -> Result<Hours, String> {
        text.parse().map(Hours).map_err(|e: String| e.replace("seconds", "hours"))
    }
}

impl fmt::Display for Hours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
