//! The verdict at the top of a report: for each question a reader brings (mean and tail JCT,
//! waiting, utilisation, fairness, preemption cost), which policy wins on a trace, by how much
//! over the runner-up, and at what cost. Every word is computed from the runs: policies are
//! ranked by `compare::rank` (jobs finished first, then the metric) on their means over seeds,
//! and a caveat names a cost where the winner is clearly worse than another policy that
//! finished jobs (`WORSE_RATIO`, `MORE_PREEMPTIONS`).

use super::build::NO_JOB_FINISHED;
use super::input::Run;
use crate::compare::{self, Better, Standing};
use crate::tables::human;
use std::cmp::Ordering;

/// A caveat for a time or a fairness ratio: the winner's is at least this many times another's.
pub const WORSE_RATIO: f64 = 1.5;
/// A caveat for preemptions: at least twice another's, and at least this many more.
pub const MORE_PREEMPTIONS: f64 = 10.0;

/// One question: what it is called, and the summary keys that answer it, the first present in
/// every run used (waiting: `mean_wait_s`, else `mean_queue_s` in summaries without it).
struct Question {
    name: &'static str,
    keys: &'static [&'static str],
    better: Better,
}

const QUESTIONS: [Question; 6] = [
    Question { name: "Mean JCT", keys: &["mean_jct_s"], better: Better::Lower },
    Question { name: "Tail JCT (p99)", keys: &["p99_jct_s"], better: Better::Lower },
    Question { name: "Waiting", keys: &["mean_wait_s", "mean_queue_s"], better: Better::Lower },
    Question { name: "Utilisation", keys: &["utilisation"], better: Better::Higher },
    Question { name: "Fairness", keys: &["ftf_rho_mean"], better: Better::Lower },
    Question { name: "Preemption cost", keys: &["preemptions"], better: Better::Lower },
];

/// The words for a key in a sentence.
fn phrase(key: &str) -> &str {
    match key {
        "mean_jct_s" => "mean JCT",
        "p99_jct_s" => "p99 JCT",
        "mean_wait_s" => "mean wait (time not running, preemptions included)",
        "mean_queue_s" => "mean queueing delay",
        "utilisation" => "utilisation",
        "ftf_rho_mean" => "mean finish-time fairness rho",
        "preemptions" => "preemptions",
        "lost_gpu_hours" => "lost GPU-hours",
        other => other,
    }
}

/// A count with thousands separators (one decimal for a mean over seeds that is not whole).
pub fn count(v: f64) -> String {
    if v.fract() != 0.0 || v.abs() >= 1e15 {
        return format!("{v:.1}");
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

/// A value of `key` as a sentence shows it.
fn value(key: &str, v: f64) -> String {
    match key {
        "utilisation" => format!("{:.1} %", v * 100.0),
        "preemptions" => format!("{} preemption{}", count(v), if v == 1.0 { "" } else { "s" }),
        _ if key.ends_with("_s") => human(v),
        _ => format!("{v:.2}"),
    }
}

/// A difference of `key`'s values.
fn difference(key: &str, d: f64) -> String {
    match key {
        "utilisation" => format!("{:.1} percentage points", d * 100.0),
        "preemptions" => count(d),
        _ if key.ends_with("_s") => human(d),
        _ => format!("{d:.2}"),
    }
}

/// One policy on one trace: its runs (seeds).
struct Policy<'a> {
    spec: &'a str,
    runs: &'a [&'a Run],
}

impl Policy<'_> {
    fn mean(&self, key: &str) -> Option<f64> {
        let values: Option<Vec<f64>> = self.runs.iter().map(|r| r.metric(key)).collect();
        values.filter(|v| !v.is_empty()).map(|v| v.iter().sum::<f64>() / v.len() as f64)
    }

    fn finished(&self) -> Option<f64> {
        self.mean("jobs_finished")
    }

    /// Whether no job of any of its runs ever started.
    fn started_none(&self) -> bool {
        self.runs.iter().all(|r| !r.jobs.is_empty() && r.jobs.iter().all(|j| j.queue_s.is_none()))
    }

    fn standing(&self, key: &str) -> Option<Standing> {
        Some(Standing { finished: self.finished(), value: self.mean(key)? })
    }

    /// `key` and its value in words: `mean JCT 2.00 h`, `3 preemptions`.
    fn described(&self, key: &str) -> String {
        if key == "preemptions" { self.shows(key) } else { format!("{} {}", phrase(key), self.shows(key)) }
    }

    /// `key`'s value in words; "no job finished" for a metric over finished jobs where none did.
    fn shows(&self, key: &str) -> String {
        match self.mean(key) {
            _ if self.finished() == Some(0.0) && compare::OVER_FINISHED.contains(&key) => NO_JOB_FINISHED.into(),
            Some(v) => value(key, v),
            None => "-".into(),
        }
    }
}

/// The verdict on one trace's policies (each a spec and its runs, in run order): a line on
/// jobs finished, then one per question.
pub fn lines(policies: &[(&str, Vec<&Run>)]) -> Vec<String> {
    let policies: Vec<Policy<'_>> = policies.iter().map(|(spec, runs)| Policy { spec, runs }).collect();
    let mut out = vec![finished_line(&policies)];
    if policies.len() < 2 {
        return out;
    }
    for q in &QUESTIONS {
        out.push(question_line(q, &policies));
    }
    out
}

fn finished_line(policies: &[Policy<'_>]) -> String {
    let of = |p: &Policy<'_>| match (p.finished(), p.mean("jobs")) {
        (Some(f), Some(n)) => format!("{} of {}", count(f), count(n)),
        (Some(f), None) => count(f),
        _ => "an unknown number".into(),
    };
    if let [only] = policies {
        return format!("Only one policy ran ({}): nothing to rank. It finished {} jobs.", only.spec, of(only));
    }
    let all_same =
        policies.windows(2).all(|w| w[0].finished() == w[1].finished() && w[0].mean("jobs") == w[1].mean("jobs"));
    let seeds = policies.iter().any(|p| p.runs.len() > 1);
    let means = if seeds { " (means over seeds)" } else { "" };
    if all_same {
        return format!("Every policy finished {} jobs{means}.", of(&policies[0]));
    }
    let mut order: Vec<&Policy<'_>> = policies.iter().collect();
    // Most finished first (a stable sort: ties keep run order).
    order.sort_by(|a, b| b.finished().unwrap_or(-1.0).total_cmp(&a.finished().unwrap_or(-1.0)));
    let list: Vec<String> = order
        .iter()
        .map(|p| {
            let none = if p.started_none() { " (it started none)" } else { "" };
            format!("{} {}{none}", p.spec, of(p))
        })
        .collect();
    format!(
        "Jobs finished differ, and rank first on every question (a policy that finished fewer is never ranked \
         above one that finished more){means}: {}.",
        list.join(", ")
    )
}

fn question_line(q: &Question, policies: &[Policy<'_>]) -> String {
    let Some(key) = q.keys.iter().copied().find(|k| policies.iter().all(|p| p.mean(k).is_some())) else {
        return format!("{}: not in every run's summary.json; nothing to compare.", q.name);
    };
    let standings: Vec<Option<Standing>> = policies.iter().map(|p| p.standing(key)).collect();
    let winners = compare::best(q.better, &standings);
    let Some(&w) = winners.first() else {
        return format!("{}: no winner: no policy finished a job.", q.name);
    };
    let winner = &policies[w];
    let what = phrase(key);
    if winners.len() > 1 {
        let names: Vec<&str> = winners.iter().map(|&i| policies[i].spec).collect();
        return format!("{}: {} tie, {}.", q.name, names.join(" and "), winner.described(key));
    }
    // The runner-up: ranked above every other but the winner (the first in run order on ties).
    let mut runner: Option<usize> = None;
    for (i, s) in standings.iter().enumerate() {
        let Some(s) = s else { continue };
        if i == w {
            continue;
        }
        match runner {
            Some(r) if compare::rank(q.better, *s, standings[r].expect("ranked")) != Some(Ordering::Greater) => {}
            _ => runner = Some(i),
        }
    }
    let Some(r) = runner else {
        return format!("{}: only {} has {what}; nothing to compare.", q.name, winner.spec);
    };
    let runner = &policies[r];
    let (wv, rv) = (winner.mean(key).expect("ranked"), runner.mean(key).expect("ranked"));
    let (wf, rf) = (winner.finished(), runner.finished());
    let line = if wf != rf {
        format!(
            "{}: {} ({}), ranked above {} ({}) for finishing more jobs ({} against {}).",
            q.name,
            winner.spec,
            winner.described(key),
            runner.spec,
            runner.shows(key),
            count(wf.unwrap_or(0.0)),
            count(rf.unwrap_or(0.0))
        )
    } else {
        let direction = match (q.better, key == "preemptions") {
            (Better::Higher, _) => "higher",
            (_, true) => "fewer",
            _ => "lower",
        };
        let relative = if rv != 0.0 {
            format!("{:.1} % {direction} than", (wv - rv).abs() / rv.abs() * 100.0)
        } else {
            format!("{direction} than")
        };
        format!(
            "{}: {}, {}, {relative} {} ({}), by {}.",
            q.name,
            winner.spec,
            winner.described(key),
            runner.spec,
            runner.shows(key),
            difference(key, (wv - rv).abs())
        )
    };
    let mut line = line;
    if key == "preemptions"
        && let (Some(a), Some(b)) = (winner.mean("lost_gpu_hours"), runner.mean("lost_gpu_hours"))
    {
        line = format!("{} Lost GPU-hours: {} {a:.1}, {} {b:.1}.", line, winner.spec, runner.spec);
    }
    line + &caveats(key, w, policies)
}

/// " But ..." naming each cost at which policy `w` wins on `key`; empty when there is none.
fn caveats(key: &str, w: usize, policies: &[Policy<'_>]) -> String {
    let winner = &policies[w];
    let mut out = Vec::new();
    // Jobs it did not finish; where every policy finished as many, the first line says it once.
    let same_finished = policies.windows(2).all(|p| p[0].finished() == p[1].finished());
    if let (Some(f), Some(n)) = (winner.finished(), winner.mean("jobs"))
        && n > f
        && !same_finished
    {
        out.push(format!("{} of {} jobs did not finish", count(n - f), count(n)));
    }
    // The others that finished jobs: a run that finished none has no JCT to compare with.
    let others: Vec<&Policy<'_>> =
        policies.iter().enumerate().filter(|(i, p)| *i != w && p.finished() != Some(0.0)).map(|(_, p)| p).collect();
    // The other with the lowest value of `k`, and that value.
    let lowest = |k: &str| {
        others.iter().filter_map(|p| Some((p.spec, p.mean(k)?))).fold(None, |best: Option<(&str, f64)>, (s, v)| {
            match best {
                Some((_, b)) if b <= v => best,
                _ => Some((s, v)),
            }
        })
    };
    if key != "preemptions"
        && let (Some(mine), Some((spec, least))) = (winner.mean("preemptions"), lowest("preemptions"))
        && mine >= 2.0 * least
        && mine - least >= MORE_PREEMPTIONS
    {
        out.push(format!("{} ({spec}: {})", value("preemptions", mine), count(least)));
    }
    for k in ["p99_jct_s", "mean_jct_s", "ftf_rho_mean"] {
        if k == key || (k == "mean_jct_s" && key == "p99_jct_s") || winner.finished() == Some(0.0) {
            continue;
        }
        if let (Some(mine), Some((spec, least))) = (winner.mean(k), lowest(k))
            && least > 0.0
            && mine >= WORSE_RATIO * least
        {
            out.push(format!(
                "{} {:.1}x that of {spec} ({} against {})",
                phrase(k),
                mine / least,
                value(k, mine),
                value(k, least)
            ));
        }
    }
    if out.is_empty() { String::new() } else { format!(" But {}.", out.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::input::Job;

    /// A run of `spec` with these summary values; `started`: whether its jobs started.
    fn run(spec: &str, values: &[(&str, f64)], started: bool) -> Run {
        let summary = values.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
        let job = Job {
            queue: "-".into(),
            jct_s: None,
            queue_s: started.then_some(1.0),
            gpus: 1.0,
            run_s: None,
            interruptions: None,
        };
        Run {
            dir: spec.into(),
            trace: "t".into(),
            spec: spec.into(),
            seed: 0,
            summary,
            jobs: vec![job],
            timeseries: None,
            queue_timeseries: None,
            tasks: None,
        }
    }

    fn summary(
        finished: f64,
        jct: f64,
        p99: f64,
        queue: f64,
        util: f64,
        rho: f64,
        preemptions: f64,
    ) -> Vec<(&'static str, f64)> {
        vec![
            ("jobs", 100.0),
            ("jobs_finished", finished),
            ("mean_jct_s", jct),
            ("p99_jct_s", p99),
            ("mean_queue_s", queue),
            ("utilisation", util),
            ("ftf_rho_mean", rho),
            ("preemptions", preemptions),
            ("lost_gpu_hours", preemptions / 6447.2),
        ]
    }

    fn verdict(runs: &[Run]) -> Vec<String> {
        let policies: Vec<(&str, Vec<&Run>)> = runs.iter().map(|r| (r.spec.as_str(), vec![r])).collect();
        lines(&policies)
    }

    /// The case: a policy that starts nothing (every metric over finished jobs 0) never
    /// wins, and a winner that preempts far more than the others says so.
    #[test]
    fn the_run_that_starts_nothing_never_wins_and_costs_are_named() {
        let runs = [
            run("fifo", &summary(100.0, 7200.0, 36_000.0, 600.0, 0.60, 2.0, 0.0), true),
            run("tiresias", &summary(100.0, 5400.0, 72_000.0, 5.6, 0.62, 1.5, 80_590.0), true),
            run("nop", &summary(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), false),
        ];
        let but = " But 80,590 preemptions (fifo: 0); p99 JCT 2.0x that of fifo (20.00 h against 10.00 h).";
        assert_eq!(
            verdict(&runs),
            [
                "Jobs finished differ, and rank first on every question (a policy that finished fewer is never \
                 ranked above one that finished more): fifo 100 of 100, tiresias 100 of 100, nop 0 of 100 (it \
                 started none)."
                    .to_string(),
                format!("Mean JCT: tiresias, mean JCT 90.0 min, 25.0 % lower than fifo (2.00 h), by 30.0 min.{but}"),
                "Tail JCT (p99): fifo, p99 JCT 10.00 h, 50.0 % lower than tiresias (20.00 h), by 10.00 h.".to_string(),
                format!(
                    "Waiting: tiresias, mean queueing delay 5.6 s, 99.1 % lower than fifo (10.0 min), by 9.9 min.{but}"
                ),
                format!(
                    "Utilisation: tiresias, utilisation 62.0 %, 3.3 % higher than fifo (60.0 %), by 2.0 percentage \
                     points.{but}"
                ),
                format!(
                    "Fairness: tiresias, mean finish-time fairness rho 1.50, 25.0 % lower than fifo (2.00), by 0.50.{but}"
                ),
                "Preemption cost: fifo, 0 preemptions, 100.0 % fewer than tiresias (80,590 preemptions), by 80,590. \
                 Lost GPU-hours: fifo 0.0, tiresias 12.5."
                    .to_string(),
            ]
        );
    }

    #[test]
    fn finishing_more_jobs_wins_and_finishing_none_never_does() {
        let runs = [
            run("nop", &summary(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), false),
            run("slow", &summary(88.0, 9000.0, 36_000.0, 60.0, 0.5, 1.0, 0.0), true),
        ];
        let lines = verdict(&runs);
        assert_eq!(
            lines[1],
            "Mean JCT: slow (mean JCT 2.50 h), ranked above nop (no job finished) for finishing more jobs (88 \
             against 0). But 12 of 100 jobs did not finish."
        );
        let none = [runs[0].clone(), run("nop2", &summary(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), false)];
        let lines = verdict(&none);
        assert_eq!(lines[0], "Every policy finished 0 of 100 jobs.");
        assert_eq!(lines[1], "Mean JCT: no winner: no policy finished a job.");
        assert_eq!(lines[6], "Preemption cost: no winner: no policy finished a job.");
    }

    #[test]
    fn waiting_is_mean_wait_where_every_summary_has_it_and_ties_are_said() {
        let mut a = run("a", &summary(100.0, 100.0, 200.0, 10.0, 0.5, 1.0, 0.0), true);
        let mut b = run("b", &summary(100.0, 100.0, 200.0, 10.0, 0.5, 1.0, 0.0), true);
        a.summary.insert("mean_wait_s".into(), serde_json::json!(30.0));
        b.summary.insert("mean_wait_s".into(), serde_json::json!(40.0));
        let lines = verdict(&[a, b]);
        assert_eq!(
            lines[3],
            "Waiting: a, mean wait (time not running, preemptions included) 30.0 s, 25.0 % lower than b (40.0 s), \
             by 10.0 s."
        );
        assert_eq!(lines[1], "Mean JCT: a and b tie, mean JCT 100.0 s.");
    }

    #[test]
    fn a_lone_policy_gets_no_ranking() {
        let lines = verdict(&[run("fifo", &summary(60.0, 1.0, 1.0, 1.0, 0.5, 1.0, 0.0), true)]);
        assert_eq!(lines, ["Only one policy ran (fifo): nothing to rank. It finished 60 of 100 jobs."]);
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(80_590.0), "80,590");
        assert_eq!(count(3_172_668_001.0), "3,172,668,001");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(12.5), "12.5");
    }
}
