//! Draws the scaling charts of docs/scaling.md from the table scripts/scaling.sh measures:
//!
//!     cargo run -p schedlab-reports --example scaling_charts -- docs/scaling/scaling.csv docs/img/scaling
//!
//! (scripts/scaling.sh --charts runs it.) An example, not a `schedlab` subcommand: the charts
//! are the project's documentation, not a report of a user's runs.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [csv, dir] = args.as_slice() else {
        eprintln!("usage: scaling_charts SCALING.CSV OUT_DIR");
        return ExitCode::from(2);
    };
    match reports::report::scaling::write_svgs(csv.as_ref(), dir.as_ref()) {
        Ok(written) => {
            for path in written {
                println!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("scaling_charts: {e}");
            ExitCode::FAILURE
        }
    }
}
