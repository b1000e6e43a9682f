//! Writing the decision log's reasons by hand. A preemptive policy at a million jobs writes
//! millions of them, each hashed into the run's digest, and `format!` (with its float and
//! u128 formatting) was a tenth of such a policy's instructions. These write exactly what
//! `format!` would (`{}` of an integer, `{:.3}` of a whole number of milliseconds in seconds).

/// Appends `milli / 1000` with three decimals: `{:.3}` of `milli` thousandths.
pub(crate) fn push_thousandths(text: &mut String, milli: u128) {
    let (whole, frac) = match u64::try_from(milli) {
        Ok(m) => (u128::from(m / 1000), (m % 1000) as u16), // u64 division: no u128 call
        Err(_) => (milli / 1000, (milli % 1000) as u16),
    };
    push_decimal(text, whole);
    text.push('.');
    // 1000 + frac is four digits, the last three frac's with its leading zeros.
    text.push_str(&itoa::Buffer::new().format(1000 + frac)[1..]);
}

/// Appends `n` in decimal (itoa: the digits two at a time, no char-by-char pushes).
pub(crate) fn push_decimal(text: &mut String, n: u128) {
    let mut digits = itoa::Buffer::new();
    match u64::try_from(n) {
        Ok(n) => text.push_str(digits.format(n)), // u64 digits: no u128 division
        Err(_) => text.push_str(digits.format(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_format_writes() {
        let samples = [0u64, 1, 9, 10, 999, 1000, 1001, 12_345, 99_999_999, u64::MAX / 3, u64::MAX];
        for &n in &samples {
            let mut text = String::new();
            push_decimal(&mut text, u128::from(n));
            assert_eq!(text, format!("{n}"));
            let mut text = String::new();
            push_thousandths(&mut text, u128::from(n));
            assert_eq!(text, format!("{}.{:03}", n / 1000, n % 1000));
            if n < 1 << 50 {
                // Well below 2^53 ms (2^50 ms is 35,000 years), the seconds as f64 print the
                // same with {:.3}: what the policies printed before.
                assert_eq!(text, format!("{:.3}", sim::SimDuration(n).as_secs_f64()));
            }
        }
        let mut text = String::new();
        push_decimal(&mut text, u128::MAX);
        assert_eq!(text, u128::MAX.to_string());
    }
}
