//! `schedlab cluster import`: a cluster.csv from a real machine inventory; `schedlab cluster
//! queues`: a queues.csv from published virtual-cluster sizes.

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
        /// _all_node.csv), node_info_df.csv, cluster_machine_list, or for slurm `scontrol show
        /// nodes --oneliner` output (partitions' lines may follow) or a slurm.conf.
        path: PathBuf,
        /// pai, openb, spot, philly or slurm.
        #[arg(long)]
        format: String,
        /// Write cluster.csv here instead of standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// slurm: write the partitions as queues.csv here.
        #[arg(long)]
        queues_out: Option<PathBuf>,
        /// slurm: `sacctmgr show qos --parsable2` output; a partition's QOS GrpTRES gres/gpu
        /// and GrpJobs become its queue's max_gpus and max_running_jobs; the QOS priorities
        /// and the limits each QOS puts on the jobs that name it go into the policy spec.
        #[arg(long)]
        qos: Option<PathBuf>,
        /// slurm: `scontrol show config` output, for the policy spec: its settings are taken
        /// over slurm.conf's, and its BOOT_TIME gives started_s.
        #[arg(long)]
        config: Option<PathBuf>,
        /// slurm: `sacctmgr show assoc --parsable2` output: the accounts' and users' shares,
        /// for the policy spec.
        #[arg(long)]
        assoc: Option<PathBuf>,
        /// slurm: write the spec of the `slurm` policy that schedules as this cluster's
        /// slurmctld is configured to (one line; it is also printed on stderr as `policy: ...`).
        #[arg(long)]
        policy_out: Option<PathBuf>,
    },
    /// Build queues with quotas from virtual-cluster sizes, printed as queues.csv
    /// (traces/FORMAT.md): Philly's philly_vc.csv (node quota per VC) or Helios's
    /// *_cluster_gpu_number.csv (GPUs per VC per day).
    Queues {
        /// philly_vc.csv, or Venus_/Earth_cluster_gpu_number.csv.
        path: PathBuf,
        /// philly-vc or helios.
        #[arg(long)]
        format: String,
        /// philly-vc: GPUs per node of a VC's node quota (the Helios simulation took 8).
        #[arg(long, default_value_t = 8)]
        gpus_per_node: u32,
        /// helios: the day whose sizes to take, as in the file's `date` column (default: the last).
        #[arg(long)]
        date: Option<String>,
        /// Let every queue borrow idle GPUs past its quota (reclaimed by preemption).
        #[arg(long)]
        borrow: bool,
        /// A trace whose jobs will run in these queues: each queue its jobs name that the file
        /// gives no quota is added uncapped (and said so on stderr), so every job has a queue.
        /// (Also spelled --jobs.)
        #[arg(long, alias = "jobs", value_name = "PATH")]
        trace: Option<PathBuf>,
        /// Format of --trace, as simulate's --format (canonical, itp, philly, openb, sacct).
        /// (Also spelled --jobs-format.)
        #[arg(long, alias = "jobs-format", default_value = "canonical")]
        trace_format: String,
        /// Write queues.csv here instead of standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
}

pub fn run(command: ClusterCommand) -> CliResult {
    match command {
        ClusterCommand::Queues { path, format, gpus_per_node, date, borrow, trace, trace_format, out } => {
            let name = path.display().to_string();
            let file = std::fs::File::open(&path).map_err(|e| format!("cannot read {name}: {e}"))?;
            let reader = std::io::BufReader::new(file);
            let (mut queues, mut notes) = match format.as_str() {
                "philly-vc" => (traces::read_philly_vc_csv(reader, &name, gpus_per_node, borrow)?, Vec::new()),
                "helios" => traces::read_helios_vc_csv(reader, &name, date.as_deref(), borrow)?,
                other => return Err(format!("unknown queue format `{other}`; valid: philly-vc, helios").into()),
            };
            if let Some(jobs) = trace {
                let trace = super::read_trace(&jobs, &trace_format)?;
                let named: std::collections::BTreeSet<&str> =
                    trace.workload.jobs().iter().filter_map(|j| j.queue.as_deref()).collect();
                for name in named {
                    if !queues.iter().any(|q| q.name == name) {
                        notes.push(format!(
                            "queue `{name}` has jobs but no quota in {}: added uncapped",
                            path.display()
                        ));
                        queues.push(sim::QueueSpec { borrow, ..sim::QueueSpec::new(name) });
                    }
                }
            }
            for note in notes {
                eprintln!("{note}");
            }
            let mut csv = Vec::new();
            traces::write_queues_csv(&queues, &mut csv)?;
            let gpus: u64 = queues.iter().filter_map(|q| q.max_gpus).map(u64::from).sum();
            match out {
                Some(out) => {
                    std::fs::write(&out, &csv).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
                    emit(format_args!("wrote {} queues ({gpus} GPUs of quota) to {}\n", queues.len(), out.display()))
                }
                None => emit(String::from_utf8_lossy(&csv)),
            }
        }
        ClusterCommand::Import { path, format, out, queues_out, qos, config, assoc, policy_out } => {
            let format: traces::InventoryFormat = format.parse()?;
            let import = if format == traces::InventoryFormat::Slurm {
                let paths = traces::inventory::SlurmPaths {
                    qos: qos.as_deref(),
                    config: config.as_deref(),
                    assoc: assoc.as_deref(),
                };
                traces::inventory::load_slurm_import(&path, paths)?
            } else {
                let slurm_only = [
                    ("--qos", qos.is_some()),
                    ("--config", config.is_some()),
                    ("--assoc", assoc.is_some()),
                    ("--policy-out", policy_out.is_some()),
                ];
                if let Some((flag, _)) = slurm_only.into_iter().find(|(_, given)| *given) {
                    return Err(format!("{flag} is for --format slurm (Slurm's files), not {format}").into());
                }
                traces::load_inventory(&path, format)?
            };
            if let Some(queues_out) = queues_out {
                let mut csv = Vec::new();
                traces::write_queues_csv(&import.queues, &mut csv)?;
                std::fs::write(&queues_out, &csv).map_err(|e| format!("cannot write {}: {e}", queues_out.display()))?;
                eprintln!("wrote {} queues to {}", import.queues.len(), queues_out.display());
            }
            let mut csv = Vec::new();
            traces::write_cluster_csv(&import.spec, &mut csv)?;
            // The report (summary, skipped machines, columns not modelled) goes to stderr, so
            // that standard output is the cluster.csv alone.
            eprint!("{}", import.report);
            if let Some(policy) = &import.policy {
                eprintln!("policy: {policy}");
                if let Some(policy_out) = policy_out {
                    std::fs::write(&policy_out, format!("{policy}\n"))
                        .map_err(|e| format!("cannot write {}: {e}", policy_out.display()))?;
                    eprintln!("wrote the policy spec to {}", policy_out.display());
                }
            }
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
