//! schedlab with one more policy: every command of the `schedlab` binary (simulate, sweep,
//! regress, report, live serve, ...), and `--policy my-policy[...]` among the built-ins.

fn main() -> std::process::ExitCode {
    schedlab::cli::main_with(schedlab::Registry::builtin().with("my-policy", my_policy::build))
}
