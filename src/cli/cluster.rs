//! `schedlab cluster import`: a cluster.csv from a real machine inventory.

use super::{CliResult, emit};
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Build a cluster from a real machine inventory: one pool per (GPU model, GPUs per
    /// machine), printed as cluster.csv (traces/FORMAT.md). Machines without GPUs or with more
    /// than 64 are counted on stderr, not simulated.
    Import {
        /// The inventory file: pai_machine_spec.csv, openb_node_list_gpu_node.csv (or
        /// _all_node.csv), node_info_df.csv or cluster_machine_list.
        path: PathBuf,
        /// pai, openb, spot or philly.
        #[arg(long)]
        format: String,
        /// Write cluster.csv here instead of standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
}

pub fn run(command: ClusterCommand) -> CliResult {
    match command {
        ClusterCommand::Import { path, format, out } => {
            let import = traces::load_inventory(&path, format.parse()?)?;
            let mut csv = Vec::new();
            traces::write_cluster_csv(&import.spec, &mut csv)?;
            // The report (summary, skipped machines, columns not modelled) goes to stderr, so
            // that standard output is the cluster.csv alone.
            eprint!("{}", import.report);
            match out {
                Some(out) => {
                    std::fs::write(&out, &csv).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
                    let r = &import.report;
                    emit(format_args!(
                        "wrote {} pools ({} nodes, {} GPUs) to {}\n",
                        r.pools,
                        r.nodes,
                        r.cluster_gpus,
                        out.display()
                    ))
                }
                None => emit(String::from_utf8_lossy(&csv)),
            }
        }
    }
}
