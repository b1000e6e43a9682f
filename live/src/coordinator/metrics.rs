//! `GET /metrics`: the live session's golden signals in Prometheus' text format (version
//! 0.0.4), for a scraper with the API token (`authorization: {credentials_file: STATE/token}`
//! in Prometheus' scrape config). Built from what `GET /v1/jobs`, `/v1/cluster` and
//! `/v1/decisions` show, so the two never disagree.

use super::Coordinator;
use serde_json::Value;
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

impl Coordinator {
    /// `GET /metrics`: jobs, nodes and GPUs by state, each GPU's utilisation, temperature
    /// and memory as its agent last reported them, decisions by kind, the completion time of
    /// the jobs that succeeded, and the coordinator's own work.
    pub(crate) fn metrics_text(&self) -> String {
        let mut e = Exposition::default();
        // Counted as they change (crate::tally): a scrape costs the running tasks, not the history.
        let jobs =
            self.driver.job_counts().into_iter().map(|(s, n)| (vec![("state", s.as_str().to_string())], n as f64));
        e.family("schedlab_jobs", "gauge", "Submitted jobs by state.", jobs);
        let cluster = self.cluster_json();
        let nodes = cluster["nodes"].as_array().cloned().unwrap_or_default();
        let text = |v: &Value| v.as_str().map(String::from);
        e.counts(
            "schedlab_nodes",
            "Nodes by state.",
            "state",
            &["alive", "dead", "no agent"],
            nodes.iter().filter_map(|n| text(&n["state"])),
        );
        let gpus: Vec<(String, &Value)> = nodes
            .iter()
            .flat_map(|n| n["gpus"].as_array().into_iter().flatten().map(move |g| (n["node"].to_string(), g)))
            .collect();
        e.counts(
            "schedlab_gpus",
            "GPUs by state (out: failed, until returned).",
            "state",
            &["free", "busy", "out"],
            gpus.iter().filter_map(|(_, g)| text(&g["state"])),
        );
        let reported = |field: &str, scale: f64| {
            gpus.iter()
                .filter_map(|(node, g)| {
                    let labels =
                        vec![("node", node.clone()), ("slot", g["slot"].to_string()), ("uuid", text(&g["uuid"])?)];
                    Some((labels, g[field].as_f64()? * scale))
                })
                .collect::<Vec<_>>()
        };
        e.family(
            "schedlab_gpu_utilisation_ratio",
            "gauge",
            "GPU utilisation as its agent last reported it (NVML).",
            reported("utilisation_pct", 0.01),
        );
        e.family(
            "schedlab_gpu_temperature_celsius",
            "gauge",
            "GPU temperature as its agent last reported it.",
            reported("temperature_c", 1.0),
        );
        e.family(
            "schedlab_gpu_memory_used_bytes",
            "gauge",
            "GPU memory in use as its agent last reported it.",
            reported("memory_used_mib", 1_048_576.0),
        );
        let tally = self.driver.tally();
        e.family(
            "schedlab_decisions_total",
            "counter",
            "The Controller's decisions by kind.",
            tally.decisions().iter().map(|(k, &n)| (vec![("kind", k.to_string())], n as f64)),
        );
        let (jct_sum, jct_count) = tally.completions();
        let summary = "Completion time (end - submission) of the jobs that succeeded.";
        e.summary("schedlab_job_completion_seconds", summary, jct_sum, jct_count);
        e.family(
            "schedlab_journal_batches",
            "gauge",
            "Batches in the journal (what a restart applies again).",
            [(vec![], self.driver.batches_applied() as f64)],
        );
        e.family(
            "schedlab_batch_apply_seconds_total",
            "counter",
            "Time this process spent applying batches (the policy's decisions included).",
            [(vec![], self.apply_time.as_secs_f64())],
        );
        e.family(
            "schedlab_session_seconds",
            "gauge",
            "The session's clock: time the coordinator has run, over its restarts.",
            [(vec![], self.driver.now().as_ms() as f64 / 1000.0)],
        );
        if let Ok(v) = self.forecast_json() {
            forecast_families(&mut e, &v);
        }
        e.into_text()
    }
}

/// With the Slurm executor: the forecast (a simulation, run by each scrape: its cost is the
/// partition's jobs') and, in shadow mode, Slurm against the policy.
fn forecast_families(e: &mut Exposition, v: &Value) {
    let f = &v["forecast"];
    let now = f["now_unix"].as_u64().unwrap_or(0);
    let jobs = f["jobs"].as_array().cloned().unwrap_or_default();
    let waits: Vec<f64> =
        jobs.iter().filter_map(|j| j["start_unix"].as_u64()).map(|s| s.saturating_sub(now) as f64).collect();
    e.family(
        "schedlab_forecast_pending_jobs",
        "gauge",
        "Pending jobs of the Slurm partition.",
        [(vec![], jobs.len() as f64)],
    );
    e.family(
        "schedlab_forecast_start_seconds_max",
        "gauge",
        "The latest forecast start of a pending job under the policy, seconds from now.",
        [(vec![], waits.iter().copied().fold(0.0, f64::max))],
    );
    let c = &v["comparison"];
    if c.is_object() {
        let by = |k: &str| {
            [("slurm", format!("slurm_{k}")), ("policy", format!("policy_{k}"))]
                .map(|(who, key)| (vec![("scheduler", who.to_string())], c[key.as_str()].as_f64().unwrap_or(0.0)))
        };
        e.family(
            "schedlab_shadow_mean_wait_seconds",
            "gauge",
            "Mean wait of the jobs since the shadow started: Slurm's, and the policy's in simulation.",
            by("mean_wait_s"),
        );
        e.family(
            "schedlab_shadow_gpu_hours",
            "gauge",
            "GPU-hours run since the shadow started, by now.",
            by("gpu_hours"),
        );
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
