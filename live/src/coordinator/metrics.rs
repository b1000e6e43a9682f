//! `GET /metrics`: the live session's golden signals in Prometheus' text format (version
//! 0.0.4), for a scraper with the API token (`authorization: {credentials_file: STATE/token}`
//! in Prometheus' scrape config). Built from what `GET /v1/jobs`, `/v1/cluster` and
//! `/v1/decisions` show, so the two never disagree.

use std::collections::BTreeMap;
use std::fmt::Write;

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A text-format document, one metric family after another.
#[derive(Default)]
pub struct Exposition {
    text: String,
}

/// A label value as the text format quotes it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Exposition {
    /// A family: its help, its type (`gauge`, `counter`) and its samples, each its labels and
    /// value (families with no sample still say they exist).
    pub fn family<'a>(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Vec<(&'a str, String)>, f64)>,
    ) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let labels = if labels.is_empty() { String::new() } else { format!("{{{}}}", labels.join(",")) };
            let _ = writeln!(self.text, "{name}{labels} {value}");
        }
    }

    /// One family of a label with a count per value (`state` -> how many), every value of
    /// `all` given, those with none as 0, so that a series never vanishes when it empties.
    pub fn counts(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        all: &[&str],
        seen: impl IntoIterator<Item = String>,
    ) {
        let mut counts: BTreeMap<String, u64> = all.iter().map(|v| (v.to_string(), 0)).collect();
        for value in seen {
            *counts.entry(value).or_default() += 1;
        }
        self.family(name, "gauge", help, counts.into_iter().map(|(v, n)| (vec![(label, v)], n as f64)));
    }

    /// A summary without quantiles: the sum and count of what it observed.
    pub fn summary(&mut self, name: &str, help: &str, sum: f64, count: u64) {
        let _ =
            writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} summary\n{name}_sum {sum}\n{name}_count {count}");
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_written_in_the_text_format_with_labels_escaped_and_empty_states_kept() {
        let mut e = Exposition::default();
        e.counts("x_jobs", "Jobs by state.", "state", &["running", "waiting"], ["running".to_string()]);
        e.family("x_temp", "gauge", "Temperature.", [(vec![("uuid", "a\"b\\c".to_string())], 61.5)]);
        e.family("x_total", "counter", "No labels.", [(vec![], 3.0)]);
        e.summary("x_seconds", "Times.", 2.5, 2);
        assert_eq!(
            e.into_text(),
            "# HELP x_jobs Jobs by state.\n# TYPE x_jobs gauge\nx_jobs{state=\"running\"} 1\nx_jobs{state=\"waiting\"} 0\n\
             # HELP x_temp Temperature.\n# TYPE x_temp gauge\nx_temp{uuid=\"a\\\"b\\\\c\"} 61.5\n\
             # HELP x_total No labels.\n# TYPE x_total counter\nx_total 3\n\
             # HELP x_seconds Times.\n# TYPE x_seconds summary\nx_seconds_sum 2.5\nx_seconds_count 2\n"
        );
    }
}
