//! The session as a trace `schedlab simulate` replays: the canonical trace directory the
//! journal writes, and `live.json` beside it (the settings and the replay command).

use crate::driver::Driver;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Writes `driver`'s session as a canonical trace directory at `dir` (replaced whole), with
/// `live.json` beside it: the settings `schedlab simulate` needs to replay it, and the replay
/// command itself (writing into `DIR-replay`, `replay_out`).
pub fn write_journal(driver: &Driver, dir: &Path) -> Result<(), String> {
    match journal_snapshot(driver, dir)? {
        Some(snapshot) => snapshot.write(),
        None => Ok(()), // the format needs at least one job
    }
}

/// What [`write_journal`] writes, taken from the driver (None before the first job): taken on
/// the coordinator's thread, written on another.
pub struct JournalSnapshot {
    trace: traces::Trace,
    settings: Value,
    dir: PathBuf,
}

pub fn journal_snapshot(driver: &Driver, dir: &Path) -> Result<Option<JournalSnapshot>, String> {
    let trace = driver.trace()?;
    if trace.workload.is_empty() {
        return Ok(None);
    }
    Ok(Some(JournalSnapshot { trace, settings: replay_settings(driver, dir)?, dir: dir.to_path_buf() }))
}

impl JournalSnapshot {
    /// Writes it beside its directory, then puts it in the directory's place.
    pub fn write(&self) -> Result<(), String> {
        let tmp = self.dir.with_extension("tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        traces::write_trace_dir(&self.trace, &tmp).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("live.json"), format!("{:#}\n", self.settings)).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::rename(&tmp, &self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))
    }
}

/// `live.json`: the session as the RunSpec that replays it (`run`: the session's own RunSpec,
/// [`LiveConfig::replay_spec`](crate::config::LiveConfig::replay_spec), on the trace at `dir`,
/// every setting given even where it equals the default, so the replay never depends on
/// defaults staying what they are), and the command line of that RunSpec (`replay`, writing
/// into `replay_out`). Paths are absolute (the command works from any directory) and
/// shell-quoted.
fn replay_settings(driver: &Driver, dir: &Path) -> Result<Value, String> {
    let trace = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let trace = PathBuf::from(trace.to_string_lossy().trim_end_matches('/'));
    let out = PathBuf::from(format!("{}-replay", trace.display()));
    let spec =
        run::RunSpec { trace: Some(trace), out: Some(out.clone()), decisions: true, ..driver.config().replay_spec() };
    let words: Vec<String> = spec.simulate_words().iter().map(|w| shell_quote(w)).collect();
    Ok(json!({
        "run": spec,
        "replay": format!("schedlab {}", words.join(" ")),
        "replay_out": out,
    }))
}

/// `text` as one shell word: as is when it is plainly safe, else single-quoted.
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_flags_are_exact_seconds_and_single_shell_words() {
        let cases = [(0, "0"), (200, "0.2"), (1050, "1.05"), (1234, "1.234"), (10_000, "10")];
        for (ms, text) in cases {
            assert_eq!(traces::format_thousandths(ms), text);
            assert_eq!(traces::parse_seconds_ms(text).ok(), Some(ms), "{text} must parse back to {ms} ms");
        }
        assert_eq!(shell_quote("fifo"), "fifo");
        assert_eq!(shell_quote("srtf[duration=estimate]"), "'srtf[duration=estimate]'");
        assert_eq!(shell_quote("/tmp/a b/it's"), "'/tmp/a b/it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
