//! `schedlab policies`: every policy, its parameters, their values and defaults.

use super::CliResult;

pub fn run() -> CliResult {
    for info in policies::POLICIES {
        println!("{}  {}", info.name, info.summary);
        for p in info.params {
            println!("    {}={}  (default {})  {}", p.key, p.values, p.default, p.help);
        }
    }
    println!("\nSpecs look like name[key=value,...], e.g. --policy 'sjf[duration=estimate,placement=spread]'.");
    Ok(())
}
