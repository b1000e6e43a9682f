//! The run flags' whole numbers, read with what was expected in the user's terms (clap's own
//! parsers say "invalid digit found in string" or "0 is not in 1..18446744073709551615").

/// `text` as a whole number in `min..=max`, or what was expected.
fn whole<T: TryFrom<u64>>(text: &str, min: u64, max: u64, expected: &str) -> Result<T, String> {
    let value = text.trim().parse::<u64>().ok().filter(|v| (min..=max).contains(v));
    value.and_then(|v| T::try_from(v).ok()).ok_or_else(|| format!("expected {expected}"))
}

/// `--jobs`.
pub(crate) fn jobs(text: &str) -> Result<usize, String> {
    whole(text, 0, u64::MAX, "a whole number, such as 300")
}

/// `--seed`.
pub(crate) fn seed(text: &str) -> Result<u64, String> {
    whole(text, 0, u64::MAX, "a whole number, such as 0 or 42")
}

/// `--missed-beats`, `--max-retries`, `--spare-nodes`: counts that fit a u32.
pub(crate) fn count(text: &str) -> Result<u32, String> {
    whole(text, 0, u64::from(u32::MAX), "a whole number, such as 3")
}

/// `--single-node-up-to`, `--whole-nodes`.
pub(crate) fn gpus(text: &str) -> Result<u32, String> {
    whole(text, 1, u64::from(u32::MAX), "a whole number of GPUs, at least 1, such as 8")
}

/// `--retire-after`.
pub(crate) fn failures(text: &str) -> Result<u32, String> {
    whole(text, 1, u64::from(u32::MAX), "a whole number of failures, at least 1")
}

/// `--series-bucket-s`.
pub(crate) fn bucket_s(text: &str) -> Result<u64, String> {
    whole(text, 1, u64::MAX, "a whole number of seconds, at least 1")
}

/// `--horizon-days`.
pub(crate) fn horizon_days(text: &str) -> Result<u64, String> {
    let expected = format!("a whole number of days from 1 to {}", crate::MAX_HORIZON_DAYS);
    whole(text, 1, crate::MAX_HORIZON_DAYS, &expected)
}

/// `--load`: a finite number above 0.
pub(crate) fn load(text: &str) -> Result<f64, String> {
    let value = text.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
    value.ok_or_else(|| "expected a number above 0, such as 0.9 (arriving GPU-time over capacity)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_within_their_ranges() {
        assert_eq!(jobs("300"), Ok(300));
        assert_eq!(jobs("ten"), Err("expected a whole number, such as 300".into()));
        assert_eq!(bucket_s("0"), Err("expected a whole number of seconds, at least 1".into()));
        assert_eq!(count("4294967296"), Err("expected a whole number, such as 3".into()));
        assert_eq!(horizon_days("100001"), Err("expected a whole number of days from 1 to 100000".into()));
        assert_eq!(load("0.5"), Ok(0.5));
        assert!(load("-1").is_err() && load("nan").is_err());
    }
}
