//! Which clock sacct's times are on. Slurm writes local time without an offset
//! (`2026-03-29T02:30:00`), in the time zone of the process that ran sacct (`TZ`). schedlab
//! reads them as:
//!
//! - **naive** (the default): as written, like Philly's; exact when the dump was made with
//!   `TZ=UTC` or never crosses a daylight-saving change;
//! - **`tz=+HH:MM`** / **`tz=-HH:MM`**: a fixed offset from UTC (subtracted: `+02:00` local
//!   is two hours ahead of UTC);
//! - **`tz=Area/City`**: an IANA time zone, from the tz database compiled into schedlab
//!   (chrono-tz), so the same on every machine. A time in the hour a change to summer time
//!   skips cannot have been written by Slurm: an error. A time in the hour that a change back
//!   repeats is ambiguous (sacct does not say which of the two it was): it is read as the
//!   first, and counted in the notes.
//!
//! Times become UTC milliseconds since 1970, so only differences change: a replay of a
//! history across a change no longer gains or loses the hour.

use chrono::{DateTime, LocalResult, TimeZone};
use std::fmt;

/// sacct's clock: naive, a fixed offset, or a named zone (by its IANA name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum SacctClock {
    #[default]
    Naive,
    /// Seconds east of UTC.
    Offset(i32),
    /// An IANA name that `chrono_tz` knows, as it spells it.
    Zone(&'static str),
}

/// A naive time read on a [`SacctClock`] as UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instant {
    Exact(u64),
    /// In the repeated hour of a change back from summer time: the first of the two.
    Ambiguous(u64),
}

impl SacctClock {
    /// The value of `tz=`: `+HH:MM`, `-HH:MM` or an IANA name such as `Europe/Berlin`.
    pub fn parse(value: &str) -> Result<SacctClock, String> {
        if let Some(sign) = value.chars().next().filter(|c| *c == '+' || *c == '-') {
            let offset = value[1..]
                .split_once(':')
                .filter(|(h, m)| h.len() == 2 && m.len() == 2)
                .and_then(|(h, m)| Some((h.parse::<i32>().ok()?, m.parse::<i32>().ok()?)))
                .filter(|&(h, m)| h <= 14 && m < 60)
                .ok_or_else(|| format!("`{value}`: a UTC offset is written +HH:MM or -HH:MM, at most 14 hours"))?;
            let seconds = (offset.0 * 60 + offset.1) * 60;
            return Ok(SacctClock::Offset(if sign == '-' { -seconds } else { seconds }));
        }
        value
            .parse::<chrono_tz::Tz>()
            .map(|tz| SacctClock::Zone(tz.name()))
            .map_err(|_| format!("`{value}` is neither a UTC offset (+HH:MM) nor an IANA time zone (Europe/Berlin)"))
    }

    /// `naive` (milliseconds of the written clock since 1970) as UTC milliseconds.
    pub fn to_utc(self, naive: u64) -> Result<Instant, String> {
        let before_1970 = || "the time is before 1970-01-01 in UTC".to_owned();
        match self {
            SacctClock::Naive => Ok(Instant::Exact(naive)),
            SacctClock::Offset(seconds) => {
                let utc = i64::try_from(naive).map_err(|_| before_1970())? - i64::from(seconds) * 1000;
                u64::try_from(utc).map(Instant::Exact).map_err(|_| before_1970())
            }
            SacctClock::Zone(name) => {
                let tz: chrono_tz::Tz = name.parse().map_err(|_| format!("unknown time zone {name}"))?;
                let local = i64::try_from(naive)
                    .ok()
                    .and_then(DateTime::from_timestamp_millis)
                    .ok_or_else(|| "a time schedlab can represent".to_owned())?
                    .naive_utc();
                let utc = |dt: DateTime<chrono_tz::Tz>| u64::try_from(dt.timestamp_millis()).map_err(|_| before_1970());
                match tz.from_local_datetime(&local) {
                    LocalResult::Single(dt) => utc(dt).map(Instant::Exact),
                    LocalResult::Ambiguous(first, _) => utc(first).map(Instant::Ambiguous),
                    LocalResult::None => {
                        Err(format!("{local} does not exist in {name}: a daylight-saving change skips it"))
                    }
                }
            }
        }
    }
}

impl fmt::Display for SacctClock {
    /// The `tz=` value that parses back to this clock (empty for naive).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SacctClock::Naive => Ok(()),
            SacctClock::Offset(seconds) => {
                let sign = if seconds < 0 { '-' } else { '+' };
                let minutes = seconds.unsigned_abs() / 60;
                write!(f, "{sign}{:02}:{:02}", minutes / 60, minutes % 60)
            }
            SacctClock::Zone(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeparse::parse_datetime_ms;

    fn naive(text: &str) -> u64 {
        parse_datetime_ms(text).unwrap()
    }

    #[test]
    fn offsets_parse_print_and_convert() {
        let clock = SacctClock::parse("+02:00").unwrap();
        assert_eq!(clock, SacctClock::Offset(7200));
        assert_eq!(clock.to_string(), "+02:00");
        assert_eq!(SacctClock::parse("-05:30").unwrap().to_string(), "-05:30");
        let utc = naive("2026-01-01 10:00:00") - 7_200_000;
        assert_eq!(clock.to_utc(naive("2026-01-01 10:00:00")), Ok(Instant::Exact(utc)));
        for bad in ["+2", "+02:60", "+15:00", "2:00", "Mars/Olympus", "+aa:bb"] {
            assert!(SacctClock::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn europe_berlin_across_both_changes_of_2026() {
        let clock = SacctClock::parse("Europe/Berlin").unwrap();
        assert_eq!(clock.to_string(), "Europe/Berlin");
        let utc = |t: &str| naive(t);
        // 29 March 2026: 02:00 CET becomes 03:00 CEST. 01:59:59 local is 00:59:59 UTC,
        // 03:00:00 local is 01:00:00 UTC: one second apart, not an hour.
        assert_eq!(clock.to_utc(naive("2026-03-29 01:59:59")), Ok(Instant::Exact(utc("2026-03-29 00:59:59"))));
        assert_eq!(clock.to_utc(naive("2026-03-29 03:00:00")), Ok(Instant::Exact(utc("2026-03-29 01:00:00"))));
        let skipped = clock.to_utc(naive("2026-03-29 02:30:00")).unwrap_err();
        assert_eq!(skipped, "2026-03-29 02:30:00 does not exist in Europe/Berlin: a daylight-saving change skips it");
        // 25 October 2026: 03:00 CEST becomes 02:00 CET; 02:30 happens twice: the first
        // (CEST, 00:30 UTC) is taken. 03:00 local is CET: 02:00 UTC.
        assert_eq!(clock.to_utc(naive("2026-10-25 02:30:00")), Ok(Instant::Ambiguous(utc("2026-10-25 00:30:00"))));
        assert_eq!(clock.to_utc(naive("2026-10-25 03:00:00")), Ok(Instant::Exact(utc("2026-10-25 02:00:00"))));
    }
}
