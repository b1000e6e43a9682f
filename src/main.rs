//! `schedlab`: the command line. Parses arguments, reads and writes files, measures wall time;
//! everything it simulates goes through the `sim` core, which does none of that.

mod builtin;
mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(2)
        }
    }
}
