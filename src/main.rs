//! `schedlab`: the command line. Parses arguments, reads and writes files, measures wall time;
//! everything it simulates goes through the `sim` core, which does none of that.

fn main() -> std::process::ExitCode {
    schedlab::cli::main()
}
