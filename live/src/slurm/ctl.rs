//! The executor's hands on Slurm: the commands it reads with (`squeue --json`, `sinfo --json`,
//! `scontrol show config`) and acts with (`scontrol update`, `release`, `hold`,
//! `requeuehold`). A trait, so that the executor's logic is tested against a Slurm in memory
//! (`tests`) and run against the real one (`Commands`). Every argument that reaches a command
//! line is a number or a name checked as plain ([`super::report::plain`]); commands run
//! without a shell.

use super::report::{SlurmJob, SlurmNode};
use std::collections::BTreeMap;
use std::process::Command;

pub trait Slurm {
    /// Every job of `partition` slurmctld still knows (pending, running, ended within MinJobAge).
    fn jobs(&mut self, partition: &str) -> Result<Vec<SlurmJob>, String>;
    fn nodes(&mut self) -> Result<Vec<SlurmNode>, String>;
    /// `scontrol show config` as key -> value.
    fn config(&mut self) -> Result<BTreeMap<String, String>, String>;
    /// Pins the held job to exactly `nodes`, then releases it.
    fn pin_and_release(&mut self, job: u64, nodes: &[String]) -> Result<(), String>;
    /// Holds a pending job (an operator's hold).
    fn hold(&mut self, job: u64) -> Result<(), String>;
    /// Requeues a running or ended job, held.
    fn requeue_held(&mut self, job: u64) -> Result<(), String>;
}

/// The real Slurm, through its client commands on PATH (SLURM_CONF as the environment says).
#[derive(Debug, Default)]
pub struct Commands;

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let shown = || format!("{program} {}", args.join(" "));
    let out = Command::new(program).args(args).output().map_err(|e| format!("{}: {e}", shown()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{}: {} {}", shown(), out.status, err.trim()));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{}: output is not UTF-8", shown()))
}

impl Slurm for Commands {
    fn jobs(&mut self, partition: &str) -> Result<Vec<SlurmJob>, String> {
        super::report::plain("partition", partition)?;
        let json = run("squeue", &["--json", "--all", "--states=all", "--partition", partition])?;
        super::report::jobs(&json)
    }

    fn nodes(&mut self) -> Result<Vec<SlurmNode>, String> {
        super::report::nodes(&run("sinfo", &["--json"])?)
    }

    fn config(&mut self) -> Result<BTreeMap<String, String>, String> {
        Ok(parse_config(&run("scontrol", &["show", "config"])?))
    }

    fn pin_and_release(&mut self, job: u64, nodes: &[String]) -> Result<(), String> {
        for n in nodes {
            super::report::plain("node", n)?;
        }
        let id = format!("JobId={job}");
        let list = format!("ReqNodeList={}", nodes.join(","));
        let count = format!("NumNodes={}", nodes.len());
        // StartTime: a requeued job's begin time is 20 minutes ahead (Slurm's credential
        // lifetime); schedlab's start is now.
        run("scontrol", &["update", &id, &list, &count, "ExcNodeList=", "StartTime=now"])?;
        run("scontrol", &["release", &job.to_string()]).map(drop)
    }

    fn hold(&mut self, job: u64) -> Result<(), String> {
        run("scontrol", &["hold", &job.to_string()]).map(drop)
    }

    fn requeue_held(&mut self, job: u64) -> Result<(), String> {
        run("scontrol", &["requeuehold", &job.to_string()]).map(drop)
    }
}

/// `Key = Value` lines of `scontrol show config` (the header and blank lines skipped).
pub fn parse_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once(" = "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// What slurm.conf must say for schedlab to be the only one that starts the partition's jobs
/// (docs/slurm-executor.md): each line names a setting that is not so, and why it matters.
pub fn config_problems(config: &BTreeMap<String, String>) -> Vec<String> {
    let mut problems = Vec::new();
    let get = |k: &str| config.get(k).map(String::as_str).unwrap_or("");
    if !get("JobSubmitPlugins").split(',').any(|p| p.trim() == "lua" || p.trim() == "job_submit/lua") {
        problems.push(format!(
            "JobSubmitPlugins is `{}`: it must include lua, with live/slurm/job_submit.lua, so that every job of the partition enters held",
            get("JobSubmitPlugins")
        ));
    }
    let preempt = get("PreemptType");
    if !preempt.is_empty() && preempt != "preempt/none" {
        problems.push(format!(
            "PreemptType is `{preempt}`: it must be preempt/none, or Slurm preempts the partition's jobs itself"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lines_are_read_and_checked() {
        let text = "Configuration data as of 2026-12-05T10:00:00\nJobSubmitPlugins        = lua\nPreemptType             = preempt/partition_prio\n\nSlurmctld(primary) at x is UP\n";
        let config = parse_config(text);
        assert_eq!(config["PreemptType"], "preempt/partition_prio");
        let problems = config_problems(&config);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("PreemptType is `preempt/partition_prio`"));
        let mut fixed = config.clone();
        fixed.insert("PreemptType".into(), "preempt/none".into());
        assert!(config_problems(&fixed).is_empty());
        fixed.insert("JobSubmitPlugins".into(), "(null)".into());
        assert!(config_problems(&fixed)[0].starts_with("JobSubmitPlugins"));
    }
}
