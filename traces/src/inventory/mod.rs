//! Clusters from real machine inventories: a public trace's list of machines (Alibaba PAI 2020,
//! Alibaba openb 2023, Alibaba spot-GPU 2026, Microsoft Philly) becomes a [`ClusterSpec`] of
//! pools of identical nodes, one pool per (GPU model, GPUs per machine).
//!
//! Pools come in a stable order, by model (byte order) then GPUs per node, and are named
//! `MODEL-GPUS` (`V100M16-8`): the GPU count is all digits after the last `-`, so two shapes
//! never share a name. Racks are not in any inventory, so each pool is one rack.
//!
//! Nothing is dropped silently. Machines without GPUs (schedlab schedules GPUs only) and
//! machines with more than [`MAX_GPUS_PER_NODE`] GPUs (a schedlab node holds at most that
//! many) are counted in the [`ImportReport`], which also names the CPU and memory columns that
//! the cluster model does not have.

mod hostlist;
mod openb;
mod pai;
mod philly;
mod slurm;
mod slurm_assoc;
mod slurm_partitions;
mod slurm_qos;
mod slurm_sched;
mod spot;

pub use hostlist::expand_hostlist;
pub use openb::read_openb_nodes;
pub use pai::read_pai_machines;
pub use philly::read_philly_machines;
pub use slurm::{
    SlurmFiles, SlurmPaths, load_slurm_cluster, load_slurm_import, read_slurm_cluster, read_slurm_import,
    read_slurm_nodes,
};
pub use slurm_assoc::{AssocShares, read_sacctmgr_assoc};
pub use slurm_qos::{QosLimits, read_sacctmgr_qos};
pub use spot::read_spot_nodes;

use crate::cluster_spec::MAX_CLUSTER_GPUS;
use crate::error::TraceError;
use crate::rows::{Row, parse_u32};
use sim::cluster::{MAX_GPUS_PER_NODE, MAX_POOLS};
use sim::{Cluster, ClusterSpec, PoolSpec};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

/// Which machine inventory a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InventoryFormat {
    /// Alibaba PAI 2020 `pai_machine_spec.csv` (no header line:
    /// `machine,gpu_type,cap_cpu,cap_mem,cap_gpu`).
    Pai,
    /// Alibaba openb 2023 `openb_node_list_gpu_node.csv` or `openb_node_list_all_node.csv`
    /// (`sn,cpu_milli,memory_mib,gpu,model`).
    Openb,
    /// Alibaba spot-GPU 2026 `node_info_df.csv` (`gpu_model,gpu_capacity_num,cpu_num,node_name`).
    Spot,
    /// Microsoft Philly `cluster_machine_list` (`machineId, number of GPUs, single GPU mem`).
    Philly,
    /// Slurm's `scontrol show nodes --oneliner` (one `NodeName=... Gres=gpu:TYPE:N ...
    /// Partitions=...` line per node, partition lines may follow) or a slurm.conf;
    /// partitions become queues.
    Slurm,
}

impl InventoryFormat {
    pub const ALL: [InventoryFormat; 5] = [
        InventoryFormat::Pai,
        InventoryFormat::Openb,
        InventoryFormat::Spot,
        InventoryFormat::Philly,
        InventoryFormat::Slurm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InventoryFormat::Pai => "pai",
            InventoryFormat::Openb => "openb",
            InventoryFormat::Spot => "spot",
            InventoryFormat::Philly => "philly",
            InventoryFormat::Slurm => "slurm",
        }
    }

    /// The file name the public release gives this inventory.
    pub fn usual_file(self) -> &'static str {
        match self {
            InventoryFormat::Pai => "pai_machine_spec.csv",
            InventoryFormat::Openb => "openb_node_list_gpu_node.csv",
            InventoryFormat::Spot => "node_info_df.csv",
            InventoryFormat::Philly => "cluster_machine_list",
            InventoryFormat::Slurm => "nodes.txt",
        }
    }
}

impl fmt::Display for InventoryFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for InventoryFormat {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<InventoryFormat, TraceError> {
        InventoryFormat::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            TraceError::value(
                "inventory format",
                format!("unknown format `{s}`; valid formats: pai, openb, spot, philly, slurm"),
            )
        })
    }
}

/// An imported cluster: the spec to simulate and what the import did to get there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterImport {
    /// Pools by model, then GPUs per node; accepted by `sim::Cluster::new`.
    pub spec: ClusterSpec,
    pub report: ImportReport,
    /// Queues the inventory defines (Slurm partitions, with the pools of their nodes); empty
    /// for inventories without any.
    pub queues: Vec<sim::QueueSpec>,
    /// The nodes' names by node id (pools in order, each pool's nodes in file order), for
    /// inventories whose other files name nodes (Slurm: sacct's `NodeList`); empty otherwise.
    pub node_names: Vec<String>,
    /// The spec of the policy that schedules as the inventory's scheduler is configured to
    /// (Slurm: `slurm[...]`, see `slurm_sched`); `None` for inventories that say nothing of it.
    pub policy: Option<String>,
}

/// Machines of one GPU model in an inventory (all of them, skipped ones included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCount {
    pub model: String,
    pub machines: u64,
    pub gpus: u64,
}

/// Machines left out of the cluster, and the GPUs they carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Skipped {
    pub machines: u64,
    pub gpus: u64,
}

/// What an import read and what it left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The inventory file as named in errors.
    pub file: String,
    pub format: InventoryFormat,
    /// Every machine in the inventory.
    pub machines: u64,
    /// Every GPU in the inventory, skipped machines' included.
    pub gpus: u64,
    /// Machines with GPUs by model, in model order; machines without GPUs are not here.
    pub models: Vec<ModelCount>,
    /// Machines with no GPU (CPU-only): schedlab schedules GPUs only.
    pub no_gpu: Skipped,
    /// Machines with more than [`MAX_GPUS_PER_NODE`] GPUs: beyond schedlab's node model.
    pub too_many_gpus: Skipped,
    /// Pools, nodes and GPUs of the cluster built.
    pub pools: usize,
    pub nodes: u64,
    pub cluster_gpus: u64,
    /// One line on the inventory columns the cluster does not model (CPU, memory).
    pub not_modelled: String,
    /// Further lines on what the import approximated (Slurm partitions over part of a pool).
    pub notes: Vec<String>,
}

impl ImportReport {
    /// The machines of `model` (machines with GPUs only).
    pub fn model(&self, model: &str) -> Option<&ModelCount> {
        self.models.iter().find(|m| m.model == model)
    }

    /// Every skipped machine, of both kinds.
    pub fn skipped(&self) -> Skipped {
        Skipped {
            machines: self.no_gpu.machines + self.too_many_gpus.machines,
            gpus: self.no_gpu.gpus + self.too_many_gpus.gpus,
        }
    }

    /// One line per kind of skipped machine that occurs, for stderr.
    pub fn skip_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        if self.no_gpu.machines > 0 {
            let n = self.no_gpu.machines;
            lines.push(format!("skipped {n} CPU-only machine{} (schedlab schedules GPUs)", plural(n)));
        }
        if self.too_many_gpus.machines > 0 {
            let Skipped { machines: n, gpus } = self.too_many_gpus;
            lines.push(format!(
                "skipped {n} machine{} with more than {MAX_GPUS_PER_NODE} GPUs ({gpus} GPUs; a schedlab node has at \
                 most {MAX_GPUS_PER_NODE})",
                plural(n)
            ));
        }
        lines
    }
}

/// The summary, the skip lines and the line on what is not modelled, one per line.
impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({}): {} machines, {} GPUs -> {} pools, {} nodes, {} GPUs",
            self.file, self.format, self.machines, self.gpus, self.pools, self.nodes, self.cluster_gpus
        )?;
        for line in self.skip_lines() {
            writeln!(f, "{line}")?;
        }
        writeln!(f, "{}", self.not_modelled)?;
        for note in &self.notes {
            writeln!(f, "{note}")?;
        }
        Ok(())
    }
}

/// Reads an inventory of `format` from any reader; `file` names it in errors.
pub fn read_inventory<R: Read>(source: R, file: &str, format: InventoryFormat) -> Result<ClusterImport, TraceError> {
    match format {
        InventoryFormat::Pai => read_pai_machines(source, file),
        InventoryFormat::Openb => read_openb_nodes(source, file),
        InventoryFormat::Spot => read_spot_nodes(source, file),
        InventoryFormat::Philly => read_philly_machines(source, file),
        InventoryFormat::Slurm => read_slurm_nodes(source, file),
    }
}

/// [`read_inventory`] on the file at `path`.
pub fn load_inventory(path: &Path, format: InventoryFormat) -> Result<ClusterImport, TraceError> {
    let name = path.display().to_string();
    if path.is_dir() {
        return Err(TraceError::file(
            &name,
            format!(
                "is a directory; give the {format} inventory file itself, such as {}",
                path.join(format.usual_file()).display()
            ),
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_inventory(std::io::BufReader::new(file), &name, format)
}

/// True for a GPU model usable as a schedlab GPU type: letters, digits, `-`, `_`, `.`.
fn is_model_name(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

const MODEL_SHAPE: &str = "letters, digits, `-`, `_` or `.`";

/// One machine as an importer found it, with the columns its fields came from.
struct Machine<'a> {
    name: &'a str,
    name_col: usize,
    gpus: u32,
    model: &'a str,
    model_col: usize,
}

/// The machines read so far, counted by shape; machine names are checked to be unique.
struct Tally {
    format: InventoryFormat,
    /// Machine name -> line of its row.
    names: HashMap<String, u64>,
    /// (model, GPUs per machine) -> machines, for machines with GPUs.
    shapes: BTreeMap<(String, u32), u64>,
    machines: u64,
    gpus: u64,
    no_gpu: Skipped,
}

impl Tally {
    fn new(format: InventoryFormat) -> Tally {
        Tally {
            format,
            names: HashMap::new(),
            shapes: BTreeMap::new(),
            machines: 0,
            gpus: 0,
            no_gpu: Skipped::default(),
        }
    }

    /// Counts `machine` from `row`, or says what is wrong with it (and counts nothing).
    /// `no_gpu_model` is how the inventory writes the model of a machine without GPUs.
    fn add(&mut self, row: &Row<'_>, machine: Machine<'_>, no_gpu_model: &str) -> Result<(), TraceError> {
        self.add_at(row.line, machine, no_gpu_model, |column, expected, found| row.error(column, expected, found))
    }

    /// [`Tally::add`] for readers without CSV rows: `error` makes a field error at `line`.
    fn add_at(
        &mut self,
        line: u64,
        machine: Machine<'_>,
        no_gpu_model: &str,
        error: impl Fn(usize, String, &str) -> TraceError,
    ) -> Result<(), TraceError> {
        let Machine { name, name_col, gpus, model, model_col } = machine;
        if name.is_empty() {
            return Err(error(name_col, "a machine name (the field must not be empty)".to_owned(), name));
        }
        if let Some(first) = self.names.get(name) {
            return Err(error(name_col, format!("a machine name not used before (line {first} has it)"), name));
        }
        if gpus > 0 && (model == no_gpu_model || !is_model_name(model)) {
            let marker = if no_gpu_model.is_empty() {
                "empty is for machines without GPUs".to_owned()
            } else {
                format!("`{no_gpu_model}` is for machines without GPUs")
            };
            return Err(error(
                model_col,
                format!("a GPU model ({MODEL_SHAPE}) for a machine with {gpus} GPUs; {marker}"),
                model,
            ));
        }
        self.names.insert(name.to_owned(), line);
        self.machines += 1;
        self.gpus += u64::from(gpus);
        if gpus == 0 {
            self.no_gpu.machines += 1;
        } else {
            *self.shapes.entry((model.to_owned(), gpus)).or_default() += 1;
        }
        Ok(())
    }

    /// The cluster of every machine with 1..=64 GPUs, and the report.
    fn finish(self, file: &str, not_modelled: String) -> Result<ClusterImport, TraceError> {
        let mut models: Vec<ModelCount> = Vec::new();
        let mut too_many_gpus = Skipped::default();
        let mut pools = Vec::new();
        let (mut nodes, mut cluster_gpus) = (0u64, 0u64);
        for ((model, gpus_per_node), &count) in &self.shapes {
            let gpus = count * u64::from(*gpus_per_node);
            match models.last_mut() {
                Some(last) if last.model == *model => {
                    last.machines += count;
                    last.gpus += gpus;
                }
                _ => models.push(ModelCount { model: model.clone(), machines: count, gpus }),
            }
            if *gpus_per_node > MAX_GPUS_PER_NODE {
                too_many_gpus.machines += count;
                too_many_gpus.gpus += gpus;
                continue;
            }
            nodes += count;
            cluster_gpus += gpus;
            if cluster_gpus > MAX_CLUSTER_GPUS {
                return Err(TraceError::file(
                    file,
                    format!("the machines add up to more than {MAX_CLUSTER_GPUS} GPUs; schedlab supports at most that"),
                ));
            }
            pools.push(PoolSpec {
                name: format!("{model}-{gpus_per_node}"),
                gpu_type: model.clone(),
                // At most MAX_CLUSTER_GPUS nodes, checked above.
                nodes: u32::try_from(count).unwrap_or(u32::MAX),
                gpus_per_node: *gpus_per_node,
                nodes_per_rack: 0,
                speed_milli: 1000,
            });
        }
        let skipped_all = || {
            let n = self.machines;
            format!(
                "no machine can be simulated: all {n} machines were skipped ({} without GPUs, {} with more than \
                 {MAX_GPUS_PER_NODE} GPUs)",
                self.no_gpu.machines, too_many_gpus.machines
            )
        };
        if self.machines == 0 {
            return Err(TraceError::file(file, "no machines: the inventory has no rows"));
        }
        if pools.is_empty() {
            return Err(TraceError::file(file, skipped_all()));
        }
        if pools.len() > MAX_POOLS {
            return Err(TraceError::file(
                file,
                format!(
                    "{} distinct (GPU model, GPUs per machine) shapes; a schedlab cluster has at most {MAX_POOLS} pools",
                    pools.len()
                ),
            ));
        }
        let spec = ClusterSpec { pools };
        Cluster::new(&spec).map_err(|e| TraceError::file(file, e.0))?;
        let report = ImportReport {
            file: file.to_owned(),
            format: self.format,
            machines: self.machines,
            gpus: self.gpus,
            models,
            no_gpu: self.no_gpu,
            too_many_gpus,
            pools: spec.pools.len(),
            nodes,
            cluster_gpus,
            not_modelled,
            notes: Vec::new(),
        };
        Ok(ClusterImport { spec, report, queues: Vec::new(), node_names: Vec::new(), policy: None })
    }
}

/// The line saying which of the inventory's columns the cluster leaves out.
fn not_modelled_line(columns: &[&str]) -> String {
    if columns.is_empty() {
        return "not modelled: nothing; the inventory has no CPU or memory columns".to_owned();
    }
    let names: Vec<String> = columns.iter().map(|c| format!("`{c}`")).collect();
    format!(
        "not modelled: {} (schedlab's cluster has GPUs only; CPU and memory do not limit placement)",
        names.join(", ")
    )
}

/// A whole number of GPUs, 0 or more.
fn gpu_count(row: &Row<'_>, column: usize, text: &str) -> Result<u32, TraceError> {
    parse_u32(text).ok_or_else(|| row.error(column, "a whole number of GPUs, 0 or more", text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_print() {
        for f in InventoryFormat::ALL {
            assert_eq!(f.name().parse::<InventoryFormat>(), Ok(f));
        }
        let e = "csv".parse::<InventoryFormat>().unwrap_err().to_string();
        assert_eq!(e, "inventory format: unknown format `csv`; valid formats: pai, openb, spot, philly, slurm");
    }

    #[test]
    fn pools_are_ordered_and_named_by_shape() {
        let text = "sn,gpu,model\na,8,V100\nb,2,T4\nc,8,V100\nd,4,V100\ne,0,\nf,128,H\n";
        let import = read_openb_nodes(text.as_bytes(), "nodes.csv").unwrap();
        let pools: Vec<(&str, &str, u32, u32)> = import
            .spec
            .pools
            .iter()
            .map(|p| (p.name.as_str(), p.gpu_type.as_str(), p.nodes, p.gpus_per_node))
            .collect();
        assert_eq!(pools, [("T4-2", "T4", 1, 2), ("V100-4", "V100", 1, 4), ("V100-8", "V100", 2, 8)]);
        let r = &import.report;
        assert_eq!((r.machines, r.gpus, r.nodes, r.cluster_gpus), (6, 150, 4, 22));
        assert_eq!(r.no_gpu, Skipped { machines: 1, gpus: 0 });
        assert_eq!(r.too_many_gpus, Skipped { machines: 1, gpus: 128 });
        assert_eq!(r.model("V100"), Some(&ModelCount { model: "V100".into(), machines: 3, gpus: 20 }));
        assert_eq!(r.model("H").map(|m| m.gpus), Some(128));
        assert_eq!(
            r.skip_lines(),
            [
                "skipped 1 CPU-only machine (schedlab schedules GPUs)",
                "skipped 1 machine with more than 64 GPUs (128 GPUs; a schedlab node has at most 64)"
            ]
        );
        assert_eq!(r.not_modelled, "not modelled: nothing; the inventory has no CPU or memory columns");
        let shown = r.to_string();
        assert!(shown.starts_with("nodes.csv (openb): 6 machines, 150 GPUs -> 3 pools, 4 nodes, 22 GPUs\n"), "{shown}");
        assert_eq!(shown.lines().count(), 4);
    }

    #[test]
    fn nothing_to_simulate_is_an_error() {
        let e = |t: &str| read_openb_nodes(t.as_bytes(), "n.csv").unwrap_err().to_string();
        assert_eq!(e("sn,gpu,model\n"), "n.csv: no machines: the inventory has no rows");
        assert_eq!(
            e("sn,gpu,model\na,0,\nb,65,X\n"),
            "n.csv: no machine can be simulated: all 2 machines were skipped (1 without GPUs, 1 with more than 64 GPUs)"
        );
        let mut many = String::from("sn,gpu,model\n");
        for i in 0..65 {
            many.push_str(&format!("m{i},1,M{i}\n"));
        }
        assert!(e(&many).contains("65 distinct (GPU model, GPUs per machine) shapes"), "{}", e(&many));
        let huge = "sn,gpu,model\n".to_owned() + &(0..15_626).map(|i| format!("m{i},64,X\n")).collect::<String>();
        assert!(e(&huge).contains("more than 1000000 GPUs"), "{}", e(&huge));
    }

    #[test]
    fn machine_rows_are_checked() {
        let e = |t: &str| read_openb_nodes(format!("sn,gpu,model\n{t}").as_bytes(), "n.csv").unwrap_err().to_string();
        assert_eq!(
            e("a,8,V100\na,8,V100\n"),
            "n.csv:3: field `sn`: expected a machine name not used before (line 2 has it), got \"a\""
        );
        assert_eq!(
            e(",8,V100\n"),
            "n.csv:2: field `sn`: expected a machine name (the field must not be empty), got \"\""
        );
        assert_eq!(e("a,x,V100\n"), "n.csv:2: field `gpu`: expected a whole number of GPUs, 0 or more, got \"x\"");
        assert_eq!(
            e("a,2,\n"),
            "n.csv:2: field `model`: expected a GPU model (letters, digits, `-`, `_` or `.`) for a machine with 2 \
             GPUs; empty is for machines without GPUs, got \"\""
        );
        assert!(e("a,2,V 100\n").starts_with("n.csv:2: field `model`: expected a GPU model"));
    }
}
