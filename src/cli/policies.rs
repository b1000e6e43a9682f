//! `schedlab policies`: every policy, its parameters, their values and defaults. A parameter
//! that several policies take alike (placement, avoid_failed_h) is described once, after the
//! policies, and named on each policy that takes it.

use super::{CliResult, emit};
use policies::ParamInfo;
use std::fmt::Write;

pub fn run() -> CliResult {
    let infos: Vec<_> = super::registry().policies().collect();
    let same =
        |a: &ParamInfo, b: &ParamInfo| (a.key, a.values, a.default, a.help) == (b.key, b.values, b.default, b.help);
    let all: Vec<&ParamInfo> = infos.iter().flat_map(|info| info.params).collect();
    let shared = |p: &ParamInfo| all.iter().filter(|q| same(p, q)).count() > 1;
    let mut common: Vec<&ParamInfo> = Vec::new();
    let mut text = String::new();
    for info in &infos {
        writeln!(text, "{}  {}", info.name, info.summary)?;
        let (alike, own): (Vec<&ParamInfo>, Vec<&ParamInfo>) = info.params.iter().partition(|p| shared(p));
        for p in own {
            writeln!(text, "    {}", describe(p))?;
        }
        if !alike.is_empty() {
            let keys: Vec<&str> = alike.iter().map(|p| p.key).collect();
            writeln!(text, "    also {} (below)", keys.join(", "))?;
        }
        for p in alike {
            if !common.iter().any(|q| same(p, q)) {
                common.push(p);
            }
        }
    }
    if !common.is_empty() {
        text.push_str("\nParameters several policies take, alike:\n");
        for p in common {
            writeln!(text, "    {}", describe(p))?;
        }
    }
    text.push_str("\nSpecs look like name[key=value,...], e.g. --policy 'sjf[duration=estimate,placement=spread]'.\n");
    emit(text)
}

fn describe(p: &ParamInfo) -> String {
    format!("{}={}  (default {})  {}", p.key, p.values, p.default, p.help)
}
