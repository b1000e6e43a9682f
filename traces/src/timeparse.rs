//! Text to integer milliseconds, exactly. Traces write times as decimal seconds or as calendar
//! dates; the simulator runs on whole milliseconds. Parsing with integer arithmetic only (no
//! `f64` on the way) makes the conversion identical on every machine and every libm, which the
//! determinism contract needs: this is the one place where trace time becomes `SimTime`.

/// The largest number of seconds accepted anywhere (about 31,700 years). Far above any real
/// trace, and low enough that sums of times and of GPU-milliseconds in the simulator cannot
/// overflow `u64`.
pub const MAX_SECONDS: u64 = 1_000_000_000_000;

/// Why a decimal-seconds value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondsError {
    Empty,
    Negative,
    /// `1e3` and friends: refused so that every accepted value has one plain spelling.
    Exponent,
    NotDecimal,
    TooLarge,
}

impl SecondsError {
    /// What a valid value looks like, phrased to follow "expected".
    pub fn expected(self) -> &'static str {
        match self {
            SecondsError::Empty => "a number of seconds (the field is required)",
            SecondsError::Negative => "a non-negative number of seconds",
            SecondsError::Exponent => {
                "a plain decimal number of seconds (exponent notation such as 1e3 is not accepted; write 1000)"
            }
            SecondsError::NotDecimal => "a non-negative number of seconds (decimal digits, like 66 or 0.25)",
            SecondsError::TooLarge => "at most 1000000000000 seconds",
        }
    }
}

/// Parses non-negative decimal seconds (`66`, `66.0`, `0.0015`, `.5`, `7.`) into milliseconds.
///
/// Rounding: half away from zero at the millisecond, decided by the fourth decimal digit alone
/// (`0.0015` -> 2 ms, `0.00149999` -> 1 ms). Signs, exponents, spaces, `inf` and `nan` are errors.
///
/// Inlined: most fields of every trace are read here, and the common spelling takes
/// [`plain_seconds_ms`] without a call; the rest goes to the full pass.
#[inline]
pub fn parse_seconds_ms(text: &str) -> Result<u64, SecondsError> {
    match plain_seconds_ms(text.as_bytes()) {
        Some(ms) => Ok(ms),
        None => full_seconds_ms(text),
    }
}

/// [`parse_seconds_ms`] for any text: the verdict on every spelling, valid or not.
#[inline(never)]
fn full_seconds_ms(text: &str) -> Result<u64, SecondsError> {
    let bytes = text.as_bytes();
    match bytes.first() {
        None => return Err(SecondsError::Empty),
        Some(b'-') => return Err(SecondsError::Negative),
        Some(_) => {}
    }
    // One pass over the bytes (this runs for most fields of every trace); the verdicts are
    // then given in a fixed order: exponent, shape, size.
    let mut seconds: u64 = 0;
    let mut overflow = false;
    let (mut in_fraction, mut fraction_digits, mut any_digit) = (false, 0u32, false);
    let (mut ms, mut round_up) = (0u64, false);
    let (mut exponent, mut not_decimal) = (false, false);
    for &b in bytes {
        match b {
            b'0'..=b'9' => {
                let digit = u64::from(b - b'0');
                any_digit = true;
                if !in_fraction {
                    match seconds.checked_mul(10).and_then(|s| s.checked_add(digit)) {
                        Some(s) => seconds = s,
                        None => overflow = true,
                    }
                } else {
                    // The first three decimals are whole milliseconds; the fourth alone decides
                    // rounding, since digits after it can only move the remainder within
                    // [d/10, (d+1)/10).
                    fraction_digits += 1;
                    match fraction_digits {
                        1..=3 => ms = ms * 10 + digit,
                        4 => round_up = digit >= 5,
                        _ => {}
                    }
                }
            }
            b'.' if !in_fraction => in_fraction = true,
            b'e' | b'E' => exponent = true,
            _ => not_decimal = true,
        }
    }
    // The hint on exponent notation is for numbers written that way (`1e3`), not for any
    // text with an `e` in it (`ten`).
    if exponent {
        let number = text.parse::<f64>().is_ok();
        return Err(if number { SecondsError::Exponent } else { SecondsError::NotDecimal });
    }
    if not_decimal || !any_digit {
        return Err(SecondsError::NotDecimal);
    }
    if overflow || seconds > MAX_SECONDS {
        return Err(SecondsError::TooLarge);
    }
    for _ in fraction_digits.min(3)..3 {
        ms *= 10;
    }
    let total = seconds * 1000 + ms + u64::from(round_up);
    if total > MAX_SECONDS * 1000 {
        return Err(SecondsError::TooLarge);
    }
    Ok(total)
}

/// The spelling of nearly every field (`66`, `2951.0`, `0.25`, `.5`): digits, at most 12 of
/// them before an optional point (so the value is never too large), and digits after it.
/// `None` for anything else, which [`parse_seconds_ms`]'s full pass then judges; the tests
/// hold the two to one answer.
#[inline]
pub(crate) fn plain_seconds_ms(bytes: &[u8]) -> Option<u64> {
    if let Some(ms) = three_decimals_ms(bytes) {
        return Some(ms);
    }
    if let Some(ms) = short_seconds_ms(bytes) {
        return Some(ms);
    }
    let (seconds, whole) = leading_digits(bytes);
    // More than 12 digits may be too large: the full pass decides (the wrapped value is
    // thrown away).
    if whole > 12 {
        return None;
    }
    let ms = match bytes.get(whole..).unwrap_or_default() {
        [] if whole > 0 => 0,
        // Three decimals: how the canonical writer spells every time that is not whole.
        &[b'.', a, b, c] => three_decimals(a, b, c)?,
        [b'.', fraction @ ..] if whole + fraction.len() > 0 => any_decimals_ms(fraction)?,
        _ => return None,
    };
    Some(seconds * 1000 + ms)
}

/// `W.FFF`, 1 to 12 whole digits and exactly three decimals (how the canonical writer spells
/// every time that is not whole), as milliseconds without a loop per digit: the last eight
/// bytes (of fewer, the text with `0`s before it) are `WWWW.FFF`, read by [`point_word_ms`];
/// the whole digits before them, if any, by [`eight_digits`]. `None` for anything else.
#[inline]
fn three_decimals_ms(bytes: &[u8]) -> Option<u64> {
    let len = bytes.len();
    if !(5..=16).contains(&len) || bytes.get(len - 4) != Some(&b'.') {
        return None;
    }
    if len <= 8 {
        return point_word_ms(right_aligned(bytes));
    }
    let lead = eight_digits(right_aligned(bytes.get(..len - 8).unwrap_or_default()).to_le_bytes())?;
    // The last word holds the four whole digits below the lead's: 10,000 seconds a unit.
    Some(lead * 10_000_000 + point_word_ms(word_at(bytes, len - 8))?)
}

/// `W`, `W.F` or `W.FF` with 1 to 8 whole digits (ITP's whole seconds, Philly's `66.0`), as
/// milliseconds: the whole digits right-aligned in one word for [`eight_digits`], where
/// [`leading_digits`] took a loop turn per digit. `None` for anything else.
#[inline]
fn short_seconds_ms(bytes: &[u8]) -> Option<u64> {
    let digit = |b: &u8| Some(u64::from(b.wrapping_sub(b'0'))).filter(|&d| d <= 9);
    let (whole, ms) = match bytes {
        [.., b'.', a] => (bytes.len() - 2, digit(a)? * 100),
        [.., b'.', a, b] => (bytes.len() - 3, digit(a)? * 100 + digit(b)? * 10),
        _ => (bytes.len(), 0),
    };
    if !(1..=8).contains(&whole) {
        return None;
    }
    Some(eight_digits(right_aligned(bytes.get(..whole)?).to_le_bytes())? * 1000 + ms)
}

/// `WWWW.FFF` (eight bytes as a little-endian word, the point in the fifth) as milliseconds:
/// the point read as a `0` digit, and the digit pairs weighed as milliseconds rather than as
/// one eight-digit number (`WW` 100,000, `WW` 1,000, `0F` 100, `FF` 1), so no division
/// splits seconds from decimals. `None` if a byte other than the point is not a digit.
#[inline]
fn point_word_ms(word: u64) -> Option<u64> {
    const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);
    // The point's byte.
    const POINT: u64 = 0xFF << 32;
    let pairs = digit_pairs(((word & !POINT) | (ZEROS & POINT)).to_le_bytes())?;
    Some(weigh_pairs(pairs, [100_000, 1_000, 100]))
}

/// The eight bytes of `bytes` from `at` as one little-endian word (0 past its end).
#[inline]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes.get(at..at + 8).and_then(|w| w.try_into().ok()).unwrap_or_default())
}

/// `bytes` (1 to 8 of them) as the last bytes of a word whose first bytes are `0`s, the
/// word [`eight_digits`] reads as the number they spell; 0 (not digits) for other lengths.
/// Short texts are read as two overlapping halves, which put the same byte in the same place.
#[inline]
fn right_aligned(bytes: &[u8]) -> u64 {
    const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);
    let len = bytes.len();
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(bytes.get(at..at + 4).and_then(|w| w.try_into().ok()).unwrap_or_default()))
    };
    let byte = |at: usize| u64::from(bytes.get(at).copied().unwrap_or_default());
    let text = match len {
        8 => return word_at(bytes, 0),
        4..=7 => half(0) | half(len - 4) << (8 * (len - 4)),
        1..=3 => byte(0) | byte(len / 2) << (8 * (len / 2)) | byte(len - 1) << (8 * (len - 1)),
        _ => return 0,
    };
    text << (8 * (8 - len)) | ZEROS >> (8 * len)
}

/// The number the leading ASCII digits of `bytes` spell (wrapped past `u64`: the caller
/// refuses that many digits) and how many there are. Eight at a time first: times since the
/// epoch have ten digits.
#[inline]
fn leading_digits(bytes: &[u8]) -> (u64, usize) {
    let (mut n, mut count) = (0u64, 0);
    if let Some((&chunk, _)) = bytes.split_first_chunk::<8>()
        && let Some(eight) = eight_digits(chunk)
    {
        (n, count) = (eight, 8);
    }
    for &b in bytes.get(count..).unwrap_or_default() {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        n = n.wrapping_mul(10).wrapping_add(u64::from(digit));
        count += 1;
    }
    (n, count)
}

/// Three decimal digits as milliseconds, or `None` if one is not a digit.
#[inline]
fn three_decimals(a: u8, b: u8, c: u8) -> Option<u64> {
    let (a, b, c) = (a.wrapping_sub(b'0'), b.wrapping_sub(b'0'), c.wrapping_sub(b'0'));
    if a > 9 || b > 9 || c > 9 {
        return None;
    }
    Some(u64::from(a) * 100 + u64::from(b) * 10 + u64::from(c))
}

/// Decimals after the point as milliseconds: the first three are whole milliseconds and the
/// fourth alone decides rounding (half up). `None` if one is not a digit.
fn any_decimals_ms(fraction: &[u8]) -> Option<u64> {
    if !fraction.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digit = |i: usize| fraction.get(i).map_or(0, |&b| u64::from(b - b'0'));
    Some(digit(0) * 100 + digit(1) * 10 + digit(2) + u64::from(digit(3) >= 5))
}

/// Eight ASCII digits as their number, or `None` if a byte is not a digit: a word's worth at
/// once (the checks and the multiplications of simdjson's `parse_eight_digits_unrolled`).
#[inline]
fn eight_digits(chunk: [u8; 8]) -> Option<u64> {
    Some(weigh_pairs(digit_pairs(chunk)?, [1_000_000, 10_000, 100]))
}

/// Eight ASCII digits as four two-digit numbers, the first (most significant) in the word's
/// lowest byte and the others in bytes 2, 4 and 6; `None` if a byte is not a digit.
#[inline]
fn digit_pairs(chunk: [u8; 8]) -> Option<u64> {
    const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let v = u64::from_le_bytes(chunk);
    // Each byte is 0x30..=0x39: its high nibble is 3, and adding 6 leaves it 3 (no carry
    // reaches a byte above before a byte below has failed).
    let digits = (v & HIGH_NIBBLES) | ((v.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES) >> 4);
    if digits != 0x3333_3333_3333_3333 {
        return None;
    }
    // Bytes to digit values, then each byte plus ten times the byte before it.
    let v = v - 0x3030_3030_3030_3030;
    Some(v.wrapping_mul(10).wrapping_add(v >> 8))
}

/// The four pairs of [`digit_pairs`], `p0 p1 p2 p3`, as `p0 * w0 + p1 * w1 + p2 * w2 + p3`,
/// with two multiplications: each multiplies two pairs in 32-bit lanes and sums their weighed
/// values in the high lane. The sum must stay below 2^32 (the weights of eight digits or of
/// milliseconds do).
#[inline]
fn weigh_pairs(pairs: u64, [w0, w1, w2]: [u64; 3]) -> u64 {
    const LANES: u64 = 0x0000_00FF_0000_00FF;
    let low = (pairs & LANES).wrapping_mul(w2 + (w0 << 32));
    let high = ((pairs >> 16) & LANES).wrapping_mul(1 + (w1 << 32));
    low.wrapping_add(high) >> 32
}

/// Why a calendar date-time was refused; the text is phrased to follow "expected".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTimeError(pub &'static str);

/// Parses `YYYY-MM-DD HH:MM:SS` into milliseconds since 1970-01-01 00:00:00 of the same clock.
///
/// The clock is naive: no time zone and no daylight-saving adjustment. Philly writes US Pacific
/// local time; its DST fall-back hour (2017-11-05 01:00-01:59) occurs twice in reality and is
/// kept exactly as written, so jobs from the two hours interleave. Leap seconds (`:60`) and
/// years before 1970 (negative times) are refused.
pub fn parse_datetime_ms(text: &str) -> Result<u64, DateTimeError> {
    const SHAPE: &str = "a date-time written YYYY-MM-DD HH:MM:SS";
    let Ok(b) = <&[u8; 19]>::try_from(text.as_bytes()) else { return Err(DateTimeError(SHAPE)) };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return Err(DateTimeError(SHAPE));
    }
    // The digits eight at a time, with the separators read as zeros: `YYYY0MM0` and
    // `DD0HH0MM`, then `SS` (any byte not a digit is the one shape error).
    let mut digits = *b;
    for i in [4, 7, 10, 13, 16] {
        digits[i] = b'0';
    }
    let (Some(date), Some(clock), true) = (
        eight_digits([digits[0], digits[1], digits[2], digits[3], digits[4], digits[5], digits[6], digits[7]]),
        eight_digits([digits[8], digits[9], digits[10], digits[11], digits[12], digits[13], digits[14], digits[15]]),
        b[17].is_ascii_digit() && b[18].is_ascii_digit(),
    ) else {
        return Err(DateTimeError(SHAPE));
    };
    let (year, month, day) = (date / 10_000, date / 10 % 100, clock / 1_000_000);
    let (hour, minute) = (clock / 1000 % 100, clock % 100);
    let second = u64::from(b[17] - b'0') * 10 + u64::from(b[18] - b'0');
    civil_ms(year, month, day, (hour, minute, second))
}

/// Milliseconds since the epoch of a date and a time of day read from their digits, each
/// field checked against its range.
fn civil_ms(year: u64, month: u64, day: u64, clock: (u64, u64, u64)) -> Result<u64, DateTimeError> {
    let (hour, minute, second) = clock;
    if year < 1970 {
        return Err(DateTimeError("a date-time in 1970 or later (times before the epoch cannot be represented)"));
    }
    if !(1..=12).contains(&month) {
        return Err(DateTimeError("a date-time YYYY-MM-DD HH:MM:SS with a month 01-12"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(DateTimeError("a date-time YYYY-MM-DD HH:MM:SS with a day that exists in its month"));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(DateTimeError("a date-time YYYY-MM-DD HH:MM:SS with hour 00-23, minute and second 00-59"));
    }
    let days = days_from_civil(year, month, day);
    Ok(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}

/// Formats milliseconds since 1970-01-01 as `YYYY-MM-DD HH:MM:SS` (sub-second part dropped);
/// the inverse of [`parse_datetime_ms`] for whole seconds.
pub fn format_datetime_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rest = secs % 86_400;
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rest / 3600, rest / 60 % 60, rest % 60)
}

fn is_leap(year: u64) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date (Howard Hinnant's `days_from_civil`, restricted to
/// years >= 1970 so everything stays unsigned).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    // Years start in March, so the leap day is the last day of the year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    // 719_468 days from 0000-03-01 to 1970-01-01.
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`] (Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decimal_seconds_are_exact_milliseconds() {
        assert_eq!(parse_seconds_ms("66.0"), Ok(66_000));
        assert_eq!(parse_seconds_ms("1932025"), Ok(1_932_025_000));
        assert_eq!(parse_seconds_ms("0"), Ok(0));
        assert_eq!(parse_seconds_ms("0.001"), Ok(1));
        assert_eq!(parse_seconds_ms("12.5"), Ok(12_500));
        assert_eq!(parse_seconds_ms(".5"), Ok(500));
        assert_eq!(parse_seconds_ms("7."), Ok(7_000));
        assert_eq!(parse_seconds_ms("007.250"), Ok(7_250));
        // 0.1 has no exact binary float; integer parsing has no such problem.
        assert_eq!(parse_seconds_ms("0.1"), Ok(100));
        assert_eq!(parse_seconds_ms("254758.42"), Ok(254_758_420));
    }

    #[test]
    fn rounding_is_half_away_from_zero_at_the_millisecond() {
        assert_eq!(parse_seconds_ms("0.0015"), Ok(2));
        assert_eq!(parse_seconds_ms("0.0025"), Ok(3), "not banker's rounding");
        assert_eq!(parse_seconds_ms("0.0014999999"), Ok(1));
        assert_eq!(parse_seconds_ms("0.0005"), Ok(1));
        assert_eq!(parse_seconds_ms("0.0004"), Ok(0));
        assert_eq!(parse_seconds_ms("1.9995"), Ok(2_000), "carries into the seconds");
        assert_eq!(parse_seconds_ms("9.99999"), Ok(10_000));
    }

    #[test]
    fn malformed_seconds_are_refused_with_the_reason() {
        assert_eq!(parse_seconds_ms(""), Err(SecondsError::Empty));
        assert_eq!(parse_seconds_ms("-1"), Err(SecondsError::Negative));
        assert_eq!(parse_seconds_ms("-0.0"), Err(SecondsError::Negative));
        assert_eq!(parse_seconds_ms("1e3"), Err(SecondsError::Exponent));
        assert_eq!(parse_seconds_ms("1.5E2"), Err(SecondsError::Exponent));
        for bad in ["abc", ".", "+1", " 1", "1 ", "1.2.3", "0x10", "inf", "nan", "NaN", "1,5", "١"] {
            assert_eq!(parse_seconds_ms(bad), Err(SecondsError::NotDecimal), "{bad:?}");
        }
        assert!(SecondsError::Exponent.expected().contains("1e3"));
    }

    #[test]
    fn huge_values_are_refused_not_wrapped() {
        assert_eq!(parse_seconds_ms("1000000000000"), Ok(MAX_SECONDS * 1000));
        assert_eq!(parse_seconds_ms("1000000000000.0004"), Ok(MAX_SECONDS * 1000));
        assert_eq!(parse_seconds_ms("1000000000000.0005"), Err(SecondsError::TooLarge));
        assert_eq!(parse_seconds_ms("1000000000001"), Err(SecondsError::TooLarge));
        assert_eq!(parse_seconds_ms("99999999999999999999999999"), Err(SecondsError::TooLarge));
    }

    #[test]
    fn datetimes_match_known_unix_times() {
        // Reference values from Python's calendar.timegm.
        assert_eq!(parse_datetime_ms("1970-01-01 00:00:00"), Ok(0));
        assert_eq!(parse_datetime_ms("2017-09-04 10:30:41"), Ok(1_504_521_041_000));
        assert_eq!(parse_datetime_ms("2017-12-22 08:02:11"), Ok(1_513_929_731_000));
        assert_eq!(parse_datetime_ms("2000-02-29 23:59:59"), Ok(951_868_799_000));
        // The DST fall-back hour is naive: kept as written.
        assert_eq!(parse_datetime_ms("2017-11-05 01:30:00"), Ok(1_509_845_400_000));
    }

    #[test]
    fn impossible_datetimes_are_refused() {
        for bad in [
            "2017-02-29 00:00:00",
            "1900-02-29 00:00:00",
            "2017-13-01 00:00:00",
            "2017-00-01 00:00:00",
            "2017-04-31 00:00:00",
            "2017-01-01 24:00:00",
            "2017-01-01 23:60:00",
            "2016-12-31 23:59:60",
            "1969-12-31 23:59:59",
            "2017-01-01T00:00:00",
            "2017-1-01 00:00:00",
            "2017-01-01 00:00:00Z",
            "2017-01-01 00:00:0x",
            "",
            "2017-01-01 00:00:00.5",
        ] {
            assert!(parse_datetime_ms(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(parse_datetime_ms("2000-02-29 00:00:00").map(|ms| ms % 1000), Ok(0));
    }

    /// The two-pass parser this module had before its one-pass rewrite, kept as the reference
    /// the rewrite must agree with on every input.
    /// [`parse_datetime_ms`] as first written: each field's digits one by one.
    fn reference_datetime_ms(text: &str) -> Result<u64, DateTimeError> {
        const SHAPE: &str = "a date-time written YYYY-MM-DD HH:MM:SS";
        let b = text.as_bytes();
        if b.len() != 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
            return Err(DateTimeError(SHAPE));
        }
        let number = |range: std::ops::Range<usize>| -> Result<u64, DateTimeError> {
            b[range].iter().try_fold(0u64, |n, &c| {
                if c.is_ascii_digit() { Ok(n * 10 + u64::from(c - b'0')) } else { Err(DateTimeError(SHAPE)) }
            })
        };
        let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
        let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
        // The ranges are checked as the parser checks them: what this holds the parser to is
        // reading the digits.
        civil_ms(year, month, day, (hour, minute, second))
    }

    fn reference_seconds_ms(text: &str) -> Result<u64, SecondsError> {
        let bytes = text.as_bytes();
        if bytes.is_empty() {
            return Err(SecondsError::Empty);
        }
        if bytes[0] == b'-' {
            return Err(SecondsError::Negative);
        }
        if bytes.iter().any(|b| matches!(b, b'e' | b'E')) && text.parse::<f64>().is_ok() {
            return Err(SecondsError::Exponent);
        }
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty()) || !all_digits(whole) || !all_digits(fraction) {
            return Err(SecondsError::NotDecimal);
        }
        let mut seconds: u64 = 0;
        for b in whole.bytes() {
            seconds = seconds
                .checked_mul(10)
                .and_then(|s| s.checked_add(u64::from(b - b'0')))
                .ok_or(SecondsError::TooLarge)?;
        }
        if seconds > MAX_SECONDS {
            return Err(SecondsError::TooLarge);
        }
        let mut digits = fraction.bytes().map(|b| u64::from(b - b'0'));
        let mut ms = 0;
        for _ in 0..3 {
            ms = ms * 10 + digits.next().unwrap_or(0);
        }
        let round_up = digits.next().is_some_and(|d| d >= 5);
        let total = seconds * 1000 + ms + u64::from(round_up);
        if total > MAX_SECONDS * 1000 {
            return Err(SecondsError::TooLarge);
        }
        Ok(total)
    }

    #[test]
    fn one_pass_seconds_agree_with_the_reference_on_edge_cases() {
        for text in [
            "",
            "-",
            "-1",
            "-x",
            ".",
            "..",
            "1..",
            ".1.",
            "1.2.3",
            "e",
            "1e",
            "x1e3",
            "1.5E2",
            "-1e3",
            "0",
            "00",
            ".5",
            "7.",
            "0.0015",
            "0.00149",
            "1.9995",
            "9.99999",
            "1000000000000",
            "1000000000000.0005",
            "1000000000001",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999x",
            "99999999999999999999.x",
            "99999999999999999999e",
            "1 ",
            " 1",
            "+1",
            "١",
            "0x10",
            "1,5",
        ] {
            assert_eq!(parse_seconds_ms(text), reference_seconds_ms(text), "{text:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn one_pass_seconds_agree_with_the_reference(text in "[-+.eE0-9x ]{0,24}") {
            prop_assert_eq!(parse_seconds_ms(&text), reference_seconds_ms(&text), "{}", text);
        }

        #[test]
        fn one_pass_seconds_agree_on_numbers(whole in "[0-9]{0,22}", fraction in proptest::option::of("[0-9]{0,8}")) {
            let text = match fraction { Some(f) => format!("{whole}.{f}"), None => whole };
            prop_assert_eq!(parse_seconds_ms(&text), reference_seconds_ms(&text), "{}", text);
        }

        /// The canonical writer's spelling takes the word-at-a-time path, with the answer of
        /// the digit-by-digit reading; anything else near it is left to that reading.
        #[test]
        fn three_decimals_read_a_word_at_a_time(
            text in prop_oneof!["[0-9]{1,13}[.][0-9]{3}", "[0-9x.]{0,13}[.][0-9x.]{3}", "[0-9.]{4,17}"],
        ) {
            let expected = reference_seconds_ms(&text).ok().filter(|_| {
                let (whole, fraction) = text.split_once('.').unwrap_or((&text, "x"));
                (1..=12).contains(&whole.len()) && fraction.len() == 3
            });
            prop_assert_eq!(three_decimals_ms(text.as_bytes()), expected, "{}", text);
        }

        /// Short seconds (ITP's, Philly's) as the full pass reads them, or left to it.
        #[test]
        fn short_seconds_are_the_full_pass_s(text in "[0-9x.]{0,10}[.]?[0-9x.]{0,2}") {
            if let Some(ms) = short_seconds_ms(text.as_bytes()) {
                prop_assert_eq!(full_seconds_ms(&text), Ok(ms), "{}", text);
            }
            let plain = text.bytes().all(|b| b.is_ascii_digit());
            if plain && (1..=8).contains(&text.len()) {
                prop_assert!(short_seconds_ms(text.as_bytes()).is_some(), "{}", text);
            }
        }

        #[test]
        fn short_texts_right_align_as_digits(text in "[0-9]{1,8}") {
            let expected = format!("{text:0>8}");
            prop_assert_eq!(right_aligned(text.as_bytes()).to_le_bytes(), expected.as_bytes());
        }

        /// The fast path answers only what the full pass answers alike; the three-decimal
        /// spelling of the canonical writer most of all.
        #[test]
        fn the_fast_path_agrees_with_the_full_pass(
            text in prop_oneof![
                "[0-9]{0,15}[.][0-9x.]{3}",
                "[0-9]{0,15}[.]?[0-9]{0,5}",
                "[-+.eE0-9x ]{0,16}",
                "[0-9x.]{0,10}[.]?[0-9x.]{0,2}",
            ],
        ) {
            if let Some(ms) = plain_seconds_ms(text.as_bytes()) {
                prop_assert_eq!(full_seconds_ms(&text), Ok(ms), "{}", text);
            }
            prop_assert_eq!(parse_seconds_ms(&text), reference_seconds_ms(&text), "{}", text);
        }

        #[test]
        fn eight_digits_at_once_are_eight_one_by_one(
            chunk in proptest::array::uniform8(prop_oneof![6 => b'0'..=b'9', 1 => any::<u8>()]),
        ) {
            let expected = chunk.iter().try_fold(0u64, |n, &b| b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0')));
            prop_assert_eq!(eight_digits(chunk), expected, "{:?}", chunk);
        }

        #[test]
        fn datetimes_read_as_field_by_field(
            text in prop_oneof![
                "[12][0-9]{3}-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-6][0-9]:[0-6][0-9]",
                "[0-9 :x-]{19}",
                "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9/:]{2}",
            ],
        ) {
            prop_assert_eq!(parse_datetime_ms(&text), reference_datetime_ms(&text), "{}", text);
        }

        #[test]
        fn datetime_round_trips(secs in 0u64..253_402_300_799) {
            let text = format_datetime_ms(secs * 1000);
            prop_assert_eq!(parse_datetime_ms(&text), Ok(secs * 1000), "{}", text);
        }

        #[test]
        fn three_decimals_round_trip(ms in 0u64..=MAX_SECONDS * 1000) {
            let text = format!("{}.{:03}", ms / 1000, ms % 1000);
            prop_assert_eq!(parse_seconds_ms(&text), Ok(ms));
        }

        #[test]
        fn seconds_parser_never_panics(text in "\\PC{0,30}") {
            let _ = parse_seconds_ms(&text);
            let _ = parse_datetime_ms(&text);
        }
    }
}
