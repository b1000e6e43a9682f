//! `--app-xids`: the XIDs that are the application's fault, not the GPU's (the GPU stays in
//! service). Kept by the state directory, as its settings are.

use super::store::Store;
use std::path::Path;

/// The XIDs NVIDIA's Kubernetes device plugin treats as the application's fault, not the
/// GPU's (13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing,
/// 45 preemptive cleanup, 68 video processor exception): the default of `--app-xids`.
pub const DEFAULT_APP_XIDS: [u64; 5] = [13, 31, 43, 45, 68];

/// Parses `--app-xids`: comma-separated XID numbers, or `none`. Sorted and without repeats,
/// so that the same set written in another order is the same setting.
pub fn parse_app_xids(text: &str) -> Result<Vec<u64>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut xids = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let xid = item.parse::<u64>().map_err(|_| {
            let what = if item.is_empty() { "an empty item".to_string() } else { format!("`{item}`") };
            format!(
                "--app-xids {text}: {what} is not an XID number (give numbers separated by commas, e.g. 13,31, or none)"
            )
        })?;
        xids.push(xid);
    }
    xids.sort_unstable();
    xids.dedup();
    Ok(xids)
}

/// `13,31` or `none`: the list as `--app-xids` takes it.
pub fn app_xids_text(xids: &[u64]) -> String {
    if xids.is_empty() {
        return "none".to_string();
    }
    xids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// The list a state directory runs with: the stored one (`given`, if any, must be the same),
/// or for a new directory (or one made before the setting existed) `given` or the default,
/// stored. The list never reaches the journal (an application XID journals nothing), so a
/// replay does not depend on it.
pub(super) fn resolve(store: &Store, dir: &Path, given: Option<Vec<u64>>) -> Result<Vec<u64>, String> {
    match (store.app_xids()?, given) {
        (Some(stored), Some(given)) if stored != given => Err(format!(
            "{} was created with --app-xids {}; start it with the same list (or without --app-xids), or use a new --state",
            dir.display(),
            app_xids_text(&stored)
        )),
        (Some(stored), _) => Ok(stored),
        (None, given) => {
            let xids = given.unwrap_or_else(|| DEFAULT_APP_XIDS.to_vec());
            store.set_app_xids(&xids)?;
            Ok(xids)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_xids_parse_as_a_set_and_bad_items_are_named() {
        assert_eq!(parse_app_xids("13,31,43,45,68").unwrap(), DEFAULT_APP_XIDS);
        assert_eq!(parse_app_xids(" 31, 13 ,13").unwrap(), vec![13, 31]);
        assert_eq!(parse_app_xids("none").unwrap(), Vec::<u64>::new());
        let e = parse_app_xids("13,x").unwrap_err();
        assert!(e.starts_with("--app-xids 13,x: `x` is not an XID number"), "{e}");
        let e = parse_app_xids("13,,31").unwrap_err();
        assert!(e.contains("an empty item"), "{e}");
        assert!(parse_app_xids("").unwrap_err().contains("an empty item"));
        assert!(parse_app_xids("-1").unwrap_err().contains("`-1`"));
        assert!(parse_app_xids("13;31").unwrap_err().contains("`13;31`"));
    }
}
