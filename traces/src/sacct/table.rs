//! `--parsable2` text (sacct, sacctmgr) as rows: a `|`-separated header of field names, then
//! one row per line, no quoting (Slurm writes none), and the field parsers the importers need,
//! each error naming file, line and field.

use crate::error::TraceError;
use crate::inventory::expand_hostlist;
use crate::timeparse::parse_datetime_ms;

/// The sacct table: the header's names and the data lines, each with its 1-based line number.
pub(crate) struct Table<'a> {
    pub header: Vec<&'a str>,
    pub rows: Vec<(u64, Vec<&'a str>)>,
}

impl<'a> Table<'a> {
    /// Splits `text`; a row with a different field count than the header is an error.
    /// Blank lines are skipped.
    pub fn split(text: &'a str, file: &str) -> Result<Table<'a>, Vec<TraceError>> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l.trim_end_matches('\r')));
        let header: Vec<&str> = match lines.next() {
            Some((_, line))
                if !line.contains('|') && (line.contains(',') || line.split_whitespace().nth(1).is_some()) =>
            {
                let split = if line.contains(',') { "`,`-separated" } else { "padded with spaces" };
                return Err(vec![TraceError::row(
                    file,
                    1,
                    format!(
                        "the header is not `|`-separated ({split}): schedlab reads the output of sacct \
                         --parsable2 (sacctmgr --parsable2), which splits fields with `|`"
                    ),
                )]);
            }
            Some((_, line)) if !line.trim().is_empty() => line.split('|').collect(),
            _ => return Err(vec![TraceError::file(file, "the file is empty; expected sacct's header line")]),
        };
        let mut rows = Vec::new();
        let mut errors = Vec::new();
        for (line, text) in lines.filter(|(_, l)| !l.is_empty()) {
            let fields: Vec<&str> = text.split('|').collect();
            if fields.len() == header.len() {
                rows.push((line, fields));
            } else {
                errors.push(TraceError::row(
                    file,
                    line,
                    format!(
                        "expected {} `|`-separated fields as in the header, got {} (was it written with \
                         --parsable2?)",
                        header.len(),
                        fields.len()
                    ),
                ));
            }
        }
        if errors.is_empty() { Ok(Table { header, rows }) } else { Err(errors) }
    }

    /// The index of each name in the header; a missing required one is an error, which says
    /// that `command` (such as `sacct --format`) must include it.
    pub fn columns(&self, file: &str, names: &[(&str, bool)], command: &str) -> Result<Vec<Option<usize>>, TraceError> {
        names
            .iter()
            .map(|&(name, required)| {
                let index = self.header.iter().position(|h| *h == name);
                if index.is_none() && required {
                    let needed: Vec<&str> = names.iter().filter(|n| n.1).map(|n| n.0).collect();
                    return Err(TraceError::row(
                        file,
                        1,
                        format!(
                            "the header has no field `{name}`; {command} must include {} (see traces/FORMAT.md)",
                            needed.join(",")
                        ),
                    ));
                }
                Ok(index)
            })
            .collect()
    }
}

/// One data row, for field errors.
pub(crate) struct Row<'t, 'a> {
    pub file: &'t str,
    pub line: u64,
    pub header: &'t [&'a str],
    pub fields: &'t [&'a str],
}

impl<'a> Row<'_, 'a> {
    pub fn get(&self, column: Option<usize>) -> &'a str {
        column.and_then(|c| self.fields.get(c).copied()).unwrap_or("")
    }

    pub fn error(&self, column: Option<usize>, expected: impl Into<String>) -> TraceError {
        let name = column.and_then(|c| self.header.get(c).copied()).unwrap_or("?");
        TraceError::field(self.file, self.line, name, expected, self.get(column))
    }

    /// A timestamp, or `None` for `Unknown` / `None` / empty (not started, not ended).
    pub fn time(&self, column: Option<usize>) -> Result<Option<u64>, TraceError> {
        let text = self.get(column);
        if matches!(text, "" | "Unknown" | "None") {
            return Ok(None);
        }
        parse_sacct_time(text).map(Some).map_err(|_| {
            self.error(column, "a time written YYYY-MM-DDTHH:MM:SS (SLURM_TIME_FORMAT=standard), Unknown or None")
        })
    }

    /// A duration as Slurm writes it (`[D-]HH:MM:SS`, `MM:SS`), or `None` for `UNLIMITED`,
    /// `Partition_Limit` and empty.
    pub fn duration(&self, column: Option<usize>) -> Result<Option<u64>, TraceError> {
        let text = self.get(column);
        if matches!(text, "" | "UNLIMITED" | "Partition_Limit" | "INVALID") {
            return Ok(None);
        }
        parse_slurm_duration_ms(text)
            .map(Some)
            .ok_or_else(|| self.error(column, "a duration written [D-]HH:MM:SS, MM:SS, UNLIMITED or Partition_Limit"))
    }

    /// A host list (`NodeList`: `n[1-4,7]`) expanded; empty for empty and `None assigned`.
    pub fn hosts(&self, column: Option<usize>) -> Result<Vec<String>, TraceError> {
        let text = self.get(column);
        if matches!(text, "" | "None assigned") {
            return Ok(Vec::new());
        }
        expand_hostlist(text).map_err(|why| self.error(column, format!("a Slurm host list such as n[1-4,7] ({why})")))
    }

    /// A whole number (Priority, NNodes); empty is `None`.
    pub fn number(&self, column: Option<usize>) -> Result<Option<u64>, TraceError> {
        let text = self.get(column);
        if text.is_empty() {
            return Ok(None);
        }
        text.parse::<u64>().map(Some).map_err(|_| self.error(column, "a whole number"))
    }
}

/// `YYYY-MM-DDTHH:MM:SS` (sacct's standard format) as naive milliseconds.
pub(super) fn parse_sacct_time(text: &str) -> Result<u64, ()> {
    if text.len() != 19 || text.as_bytes()[10] != b'T' {
        return Err(());
    }
    let spaced = format!("{} {}", &text[..10], &text[11..]);
    parse_datetime_ms(&spaced).map_err(|_| ())
}

/// `[D-]HH:MM:SS`, `HH:MM:SS`, `MM:SS` (and `MM:SS.mmm`, which sacct writes for short
/// elapsed times) as milliseconds.
pub(super) fn parse_slurm_duration_ms(text: &str) -> Option<u64> {
    let (days, clock) = match text.split_once('-') {
        Some((d, rest)) => (whole(d)?, rest),
        None => (0, text),
    };
    let (clock, millis) = match clock.split_once('.') {
        Some((c, frac)) if frac.len() == 3 => (c, whole(frac)?),
        Some(_) => return None,
        None => (clock, 0),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let (h, m, s) = match parts[..] {
        [h, m, s] => (whole(h)?, whole(m)?, whole(s)?),
        [m, s] => (0, whole(m)?, whole(s)?),
        _ => return None,
    };
    if m > 59 || s > 59 || (days > 0 && h > 23) {
        return None;
    }
    Some((((days * 24 + h) * 60 + m) * 60 + s) * 1000 + millis)
}

fn whole(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The count of `key` in a TRES list such as `billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,node=1`.
pub(crate) fn tres_count(tres: &str, key: &str) -> Option<u64> {
    tres.split(',').find_map(|item| item.split_once('=').filter(|(k, _)| *k == key).and_then(|(_, v)| whole(v)))
}

/// The GPU type named in a TRES list (`gres/gpu:a100=2`), when exactly one is.
pub(super) fn tres_gpu_type(tres: &str) -> Option<&str> {
    let mut types = tres.split(',').filter_map(|item| item.split_once('=')?.0.strip_prefix("gres/gpu:"));
    let first = types.next()?;
    types.next().is_none().then_some(first)
}

/// The GPUs of a TRES list: its `gres/gpu=N` where it has one (`billing=2,gres/gpu:a100=2,gres/gpu=2`:
/// 2), else the sum of its typed counts (`gres/gpu:a100=2,gres/gpu:v100=1`: 3), which is all a
/// site whose `AccountingStorageTRES` lists only typed GPUs writes; 0 for none. A `gres/gpu=`
/// that is not a count is none, as is a typed list with one entry that is not.
pub(super) fn tres_gpus(tres: &str) -> u64 {
    if let Some(gpus) = tres_count(tres, "gres/gpu") {
        return gpus;
    }
    let mut sum = 0u64;
    for (key, value) in tres.split(',').filter_map(|item| item.split_once('=')) {
        if key == "gres/gpu" {
            return 0;
        }
        if key.starts_with("gres/gpu:") {
            let Some(gpus) = whole(value) else { return 0 };
            sum += gpus;
        }
    }
    sum
}

/// The distinct GPU types a TRES list names (`gres/gpu:TYPE=N`), in the order first named.
pub(super) fn tres_gpu_types(tres: &str) -> Vec<&str> {
    let mut types: Vec<&str> = Vec::new();
    for ty in tres.split(',').filter_map(|item| item.split_once('=')?.0.strip_prefix("gres/gpu:")) {
        if !types.contains(&ty) {
            types.push(ty);
        }
    }
    types
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_slurm_form() {
        assert_eq!(parse_slurm_duration_ms("00:05:00"), Some(300_000));
        assert_eq!(parse_slurm_duration_ms("1-02:03:04"), Some(((26 * 60 + 3) * 60 + 4) * 1000));
        assert_eq!(parse_slurm_duration_ms("05:07"), Some(307_000));
        assert_eq!(parse_slurm_duration_ms("00:00:01.250"), Some(1250));
        for bad in ["", "5", "1:2:3:4", "00:61:00", "a-00:00:00", "00:00:0x", "1-25:00:00", "00:00:01.5"] {
            assert_eq!(parse_slurm_duration_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn times_are_sacct_standard_format() {
        assert_eq!(parse_sacct_time("1970-01-02T00:00:01"), Ok(86_401_000));
        assert!(parse_sacct_time("1970-01-02 00:00:01").is_err());
        assert!(parse_sacct_time("2026-02-30T00:00:00").is_err());
    }

    #[test]
    fn tres_counts_and_types() {
        let tres = "billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,node=1";
        assert_eq!(tres_count(tres, "gres/gpu"), Some(2));
        assert_eq!(tres_count(tres, "node"), Some(1));
        assert_eq!(tres_count("cpu=1", "gres/gpu"), None);
        assert_eq!(tres_gpu_type(tres), Some("a100"));
        assert_eq!(tres_gpu_type("gres/gpu=2"), None);
        assert_eq!(tres_gpu_type("gres/gpu:a100=1,gres/gpu:v100=1"), None);
    }

    #[test]
    fn gpus_are_the_untyped_count_else_the_sum_of_the_typed() {
        // Both forms: the untyped count, whatever the typed ones say.
        assert_eq!(tres_gpus("billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,node=1"), 2);
        assert_eq!(tres_gpus("gres/gpu:a100=8,gres/gpu:v100=8,gres/gpu=16"), 16);
        assert_eq!(tres_gpus("gres/gpu=3,gres/gpu:a100=1"), 3);
        // Typed only (AccountingStorageTRES=gres/gpu:a100,...): the typed counts summed.
        assert_eq!(tres_gpus("billing=4,cpu=4,gres/gpu:a100=2,node=1"), 2);
        assert_eq!(tres_gpus("gres/gpu:a100=1,gres/gpu:v100=3"), 4);
        // None, or not a count: no GPUs (the row is skipped and named).
        assert_eq!(tres_gpus("cpu=1,node=1"), 0);
        assert_eq!(tres_gpus(""), 0);
        assert_eq!(tres_gpus("gres/gpu=-2,gres/gpu:a100=2"), 0);
        assert_eq!(tres_gpus("gres/gpu:a100=2,gres/gpu:v100=x"), 0);
        assert_eq!(tres_gpus("gres/gpumem=40G,cpu=1"), 0);
        assert_eq!(tres_gpu_types("gres/gpu:a100=1,gres/gpu=2,gres/gpu:v100=1,gres/gpu:a100=1"), ["a100", "v100"]);
        assert!(tres_gpu_types("gres/gpu=2").is_empty());
    }
}
