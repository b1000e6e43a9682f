//! A [`RunSpec`] written back as the command-line flags that read into it: for a replay
//! command (live.json) and for the round-trip tests that keep the flags and the serde form one.

use crate::RunSpec;
use clap::Args;
use serde_json::Value;

/// Fields of a RunSpec that are not run flags (`simulate` has them as its own).
const NOT_FLAGS: [&str; 2] = ["out", "decisions"];

/// The built-in workload's settings, which a run with a trace does not use (and `simulate`
/// refuses beside `--trace`).
const SYNTHETIC: [&str; 2] = ["jobs", "load"];

impl RunSpec {
    /// Every setting as `--flag value` words, defaults included (so a command built from them
    /// never depends on the defaults staying what they are); unset options and switches that
    /// are off are left out, as they can only be, and so are `--jobs` and `--load` with a
    /// trace, which replaces the built-in workload they shape.
    pub fn to_flags(&self) -> Vec<String> {
        let Ok(Value::Object(fields)) = serde_json::to_value(self) else {
            unreachable!("a RunSpec serializes as a map")
        };
        let unused = |key: &str| NOT_FLAGS.contains(&key) || (self.trace.is_some() && SYNTHETIC.contains(&key));
        let mut words = Vec::new();
        for (key, value) in fields.into_iter().filter(|(k, _)| !unused(k)) {
            let flag = format!("--{}", key.replace('_', "-"));
            match value {
                Value::Null | Value::Bool(false) => {}
                Value::Bool(true) => words.push(flag),
                Value::Object(per_queue) => {
                    for (queue, seconds) in per_queue {
                        words.extend([flag.clone(), format!("{queue}={}", scalar(&seconds))]);
                    }
                }
                other => words.extend([flag, scalar(&other)]),
            }
        }
        words
    }

    /// The words of the `schedlab simulate` command that runs this spec: its flags, then
    /// `--out` and `--decisions` when set (without the program's name).
    pub fn simulate_words(&self) -> Vec<String> {
        let mut words = vec!["simulate".to_string()];
        words.extend(self.to_flags());
        if let Some(out) = &self.out {
            words.extend(["--out".to_string(), out.display().to_string()]);
        }
        if self.decisions {
            words.push("--decisions".to_string());
        }
        words
    }
}

impl RunSpec {
    /// The fields (snake_case names, as the flags with `_`) whose values differ between this
    /// spec and `other`, in the order the flags are declared.
    pub fn differing_fields(&self, other: &RunSpec) -> Vec<String> {
        let (Ok(Value::Object(a)), Ok(Value::Object(b))) = (serde_json::to_value(self), serde_json::to_value(other))
        else {
            unreachable!("a RunSpec serializes as a map")
        };
        let declared: Vec<String> = RunSpec::augment_args(clap::Command::new("run"))
            .get_arguments()
            .map(|arg| arg.get_id().to_string())
            .chain(NOT_FLAGS.iter().map(|f| f.to_string()))
            .collect();
        declared.into_iter().filter(|key| a.get(key) != b.get(key)).collect()
    }
}

/// A number or string as a flag's value.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
