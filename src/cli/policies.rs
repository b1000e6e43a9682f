//! `schedlab policies`: every policy, its parameters, their values and defaults.

use super::{CliResult, emit};
use std::fmt::Write;

pub fn run() -> CliResult {
    let mut text = String::new();
    for info in super::registry().policies() {
        writeln!(text, "{}  {}", info.name, info.summary)?;
        for p in info.params {
            writeln!(text, "    {}={}  (default {})  {}", p.key, p.values, p.default, p.help)?;
        }
    }
    text.push_str("\nSpecs look like name[key=value,...], e.g. --policy 'sjf[duration=estimate,placement=spread]'.\n");
    emit(text)
}
