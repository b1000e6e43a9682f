//! Slurm's nodes and partitions, from either of the two places a site has them:
//!
//! - `scontrol show nodes --oneliner`: one line per node of `Key=Value` pairs separated by
//!   spaces (a value such as `OS=Linux 6.1 #1 SMP` goes on until the next `Key=`); lines of
//!   `scontrol show partitions --oneliner` may follow in the same file (`cat nodes.txt
//!   partitions.txt`), for the partitions' QOS;
//! - a **slurm.conf**: its `NodeName=` lines (a host list such as `n[1-4,7]` names several
//!   nodes; `NodeName=DEFAULT` gives the `Gres` of the lines after it that give none) and
//!   `PartitionName=` lines (`Nodes=`, a host list or `ALL`; `QOS=`; `Default=YES`). Comment
//!   lines (`#` first) and every other setting are skipped; keys are matched in any case, as
//!   Slurm does. A trailing `# comment` on a node line is not stripped (scontrol's values
//!   contain `#`), so keep comments on lines of their own.
//!
//! Of a node, `NodeName` and `Gres` are read (`gpu:TYPE:N`, `gpu:N`, `(null)`; a socket
//! suffix such as `(S:0-1)` is dropped), and scontrol's `Partitions`. A node without a GPU type
//! is of type `GPU`, as in the `--cluster` shorthand; a node with GPUs of two types cannot be
//! one schedlab node and is an error naming the line. Partitions become queues
//! ([`super::slurm_partitions`]); `PartitionName=DEFAULT` gives the partition lines after it the
//! settings they do not give, as in Slurm.
//!
//! The scheduling settings become the spec of the `slurm` policy ([`ClusterImport::policy`],
//! [`super::slurm_sched`]): slurm.conf's other lines (`SchedulerType=`, `Priority*=`, ...; a
//! `# comment` after them is dropped), the partitions' `PriorityJobFactor` and
//! `TRESBillingWeights`, the nodes' `CPUs` (`CPUTot` in scontrol), and from the other files of
//! [`SlurmFiles`]: `scontrol show config` output, the QOS list and the associations.

use super::slurm_assoc::{AssocShares, read_sacctmgr_assoc};
use super::slurm_partitions::{Partition, SlurmNode, apply_qos, from_node_lines, partition, partition_queues};
use super::slurm_sched::{NodeCpus, PartitionSched, SchedInput, Setting, policy_spec, read_scontrol_config};
use super::{
    ClusterImport, InventoryFormat, Machine, QosLimits, Tally, expand_hostlist, not_modelled_line, read_sacctmgr_qos,
};
use crate::error::{TraceError, first_error};
use std::io::Read;
use std::path::Path;

/// The fields a node line is checked for, as error column indexes.
const FIELDS: [&str; 3] = ["NodeName", "Gres", "Partitions"];
const NAME: usize = 0;
const GRES: usize = 1;

/// The `Key=Value` pairs of one line, in order.
fn pairs(line: &str) -> Vec<(&str, String)> {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    for token in line.split_whitespace() {
        match (token.split_once('='), pairs.last_mut()) {
            (Some((key, value)), _)
                if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                pairs.push((key, value.to_owned()));
            }
            (_, Some((_, value))) => {
                value.push(' ');
                value.push_str(token);
            }
            (_, None) => pairs.push(("", token.to_owned())),
        }
    }
    pairs
}

/// `Gres` as (GPU type, GPUs): `None` type for GPUs of no type; `Err` with what was expected.
fn gres_gpus(gres: &str) -> Result<(Option<&str>, u32), &'static str> {
    const SHAPE: &str = "GPUs written gpu:TYPE:COUNT or gpu:COUNT (one GPU type per node), or (null)";
    let mut found: Option<(Option<&str>, u32)> = None;
    for item in gres.split(',').filter(|i| !i.is_empty() && *i != "(null)") {
        let item = item.split_once('(').map_or(item, |(head, _)| head);
        let mut parts = item.split(':');
        if parts.next() != Some("gpu") {
            continue;
        }
        let rest: Vec<&str> = parts.collect();
        let (kind, count) = match rest[..] {
            [count] => (None, count),
            [kind, count] => (Some(kind), count),
            _ => return Err(SHAPE),
        };
        let count: u32 = count.parse().map_err(|_| SHAPE)?;
        match found {
            Some((k, n)) if k == kind => found = Some((k, n + count)),
            Some(_) => return Err(SHAPE),
            None => found = Some((kind, count)),
        }
    }
    Ok(found.unwrap_or((None, 0)))
}

/// The files a Slurm import may read beside the node list or slurm.conf.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlurmFiles<'a> {
    /// The QOS list (`sacctmgr show qos --parsable2`, [`read_sacctmgr_qos`]): each partition
    /// QOS's limits become its queue's caps; the QOS priorities go into the policy spec.
    pub qos: Option<&'a [QosLimits]>,
    /// `scontrol show config` output and its file name, for the policy spec (its values are
    /// taken over slurm.conf's; `BOOT_TIME` is only here).
    pub config: Option<(&'a str, &'a str)>,
    /// The associations' shares ([`read_sacctmgr_assoc`]), for the policy spec.
    pub assoc: Option<&'a AssocShares>,
}

/// Reads `scontrol show nodes --oneliner` output or a slurm.conf (see the module's doc);
/// `file` names it in errors.
pub fn read_slurm_nodes<R: Read>(source: R, file: &str) -> Result<ClusterImport, TraceError> {
    read_slurm_import(source, file, SlurmFiles::default())
}

/// [`read_slurm_nodes`], with each partition's QOS limits (`sacctmgr show qos --parsable2`,
/// [`super::read_sacctmgr_qos`]) as its queue's caps.
pub fn read_slurm_cluster<R: Read>(
    source: R,
    file: &str,
    qos: Option<&[QosLimits]>,
) -> Result<ClusterImport, TraceError> {
    read_slurm_import(source, file, SlurmFiles { qos, ..SlurmFiles::default() })
}

/// [`read_slurm_nodes`] with the other files a Slurm import may read ([`SlurmFiles`]).
pub fn read_slurm_import<R: Read>(
    mut source: R,
    file: &str,
    files: SlurmFiles<'_>,
) -> Result<ClusterImport, TraceError> {
    let mut text = String::new();
    source.read_to_string(&mut text).map_err(|e| TraceError::io(file, e.to_string()))?;
    let mut config = match files.config {
        Some((text, name)) => read_scontrol_config(text, name)?,
        None => Vec::new(),
    };
    first_error(file, |sink| {
        let mut read = Lines {
            tally: Tally::new(InventoryFormat::Slurm),
            nodes: Vec::new(),
            partitions: Vec::new(),
            default_gres: None,
            default_cpus: None,
            partition_defaults: Vec::new(),
            settings: Vec::new(),
        };
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if let Err(e) = read.line(index as u64 + 1, line, file) {
                sink.push(e);
                if sink.is_full() {
                    return None;
                }
            }
        }
        if !sink.is_empty() {
            return None;
        }
        if read.nodes.is_empty() {
            sink.push(TraceError::file(
                file,
                "no NodeName= lines: expected `scontrol show nodes --oneliner` output or a slurm.conf",
            ));
            return None;
        }
        let not_modelled = not_modelled_line(&["CPUTot", "RealMemory", "State"]);
        let mut import = sink.ok(read.tally.finish(file, not_modelled))?;
        let partition_lines = !read.partitions.is_empty();
        let partitions = if partition_lines { read.partitions } else { from_node_lines(&read.nodes) };
        sink.ok(partition_queues(&mut import, &read.nodes, &partitions, file))?;
        if let Some(qos) = files.qos {
            apply_qos(&mut import, &partitions, qos);
        }
        import.node_names = names_by_id(&import.spec, &read.nodes);
        let mut settings = read.settings;
        settings.append(&mut config);
        let sched: Vec<PartitionSched<'_>> = partitions
            .iter()
            .map(|p| PartitionSched {
                name: &p.name,
                job_factor: p.job_factor,
                billing: p.billing.as_deref(),
                has_gpus: import.queues.iter().any(|q| q.name == p.name),
            })
            .collect();
        let nodes: Vec<NodeCpus<'_>> = read
            .nodes
            .iter()
            .filter(|n| n.pool.is_some())
            .map(|n| NodeCpus { name: &n.name, gpus: n.gpus, cpus: n.cpus })
            .collect();
        let input = SchedInput {
            settings: &settings,
            partitions: &sched,
            partition_lines,
            nodes: &nodes,
            qos: files.qos,
            shares: files.assoc.map(|a| a.shares.as_slice()),
            config: files.config.map(|(_, name)| name),
        };
        let (policy, notes) = sink.ok(policy_spec(&input))?;
        if let Some(assoc) = files.assoc {
            import.report.notes.extend(assoc.notes.iter().cloned());
        }
        import.report.notes.extend(notes);
        import.policy = Some(policy);
        Some(import)
    })
}

/// [`read_slurm_cluster`] on files: the node list or slurm.conf at `path`, with the partition
/// QOS limits of `sacctmgr show qos --parsable2` output at `qos`.
pub fn load_slurm_cluster(path: &Path, qos: &Path) -> Result<ClusterImport, TraceError> {
    load_slurm_import(path, SlurmPaths { qos: Some(qos), ..SlurmPaths::default() })
}

/// The files of [`SlurmFiles`], by path.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlurmPaths<'a> {
    /// `sacctmgr show qos --parsable2` output.
    pub qos: Option<&'a Path>,
    /// `scontrol show config` output.
    pub config: Option<&'a Path>,
    /// `sacctmgr show assoc --parsable2` output.
    pub assoc: Option<&'a Path>,
}

/// [`read_slurm_import`] on files: the node list or slurm.conf at `path`, and the others at
/// `paths`.
pub fn load_slurm_import(path: &Path, paths: SlurmPaths<'_>) -> Result<ClusterImport, TraceError> {
    let name = path.display().to_string();
    if path.is_dir() {
        let usual = path.join(InventoryFormat::Slurm.usual_file());
        let why = format!("is a directory; give the slurm inventory file itself, such as {}", usual.display());
        return Err(TraceError::file(&name, why));
    }
    let read = |path: &Path| -> Result<(String, String), TraceError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
        Ok((text, name))
    };
    let qos = paths.qos.map(read).transpose()?;
    let limits = qos.as_ref().map(|(text, name)| read_sacctmgr_qos(text, name)).transpose()?;
    let assoc = paths.assoc.map(read).transpose()?;
    let shares = assoc.as_ref().map(|(text, name)| read_sacctmgr_assoc(text, name)).transpose()?;
    let config = paths.config.map(read).transpose()?;
    let files = SlurmFiles {
        qos: limits.as_deref(),
        config: config.as_ref().map(|(text, name)| (text.as_str(), name.as_str())),
        assoc: shares.as_ref(),
    };
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_slurm_import(std::io::BufReader::new(file), &name, files)
}

/// What the lines read so far hold.
struct Lines {
    tally: Tally,
    nodes: Vec<SlurmNode>,
    partitions: Vec<Partition>,
    /// `NodeName=DEFAULT`'s `Gres`, for the slurm.conf node lines after it that give none.
    default_gres: Option<String>,
    /// `NodeName=DEFAULT`'s `CPUs`, likewise.
    default_cpus: Option<String>,
    /// The `PartitionName=DEFAULT` lines' settings, for the partition lines after them.
    partition_defaults: Vec<(String, String)>,
    /// slurm.conf's other settings, in file order.
    settings: Vec<Setting>,
}

impl Lines {
    /// One non-blank, non-comment line: a node or partition, or another slurm.conf setting.
    fn line(&mut self, line_no: u64, line: &str, file: &str) -> Result<(), TraceError> {
        let fields = pairs(line);
        let get = |key: &str| fields.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.trim());
        let error = |column: usize, expected: String, found: &str| {
            TraceError::field(file, line_no, FIELDS[column], expected, found)
        };
        let Some((first, value)) = fields.first() else { return Ok(()) };
        if first.eq_ignore_ascii_case("PartitionName") {
            if value.trim().eq_ignore_ascii_case("DEFAULT") {
                for (key, value) in &fields[1..] {
                    self.partition_defaults.retain(|(k, _)| !k.eq_ignore_ascii_case(key));
                    self.partition_defaults.push(((*key).to_owned(), value.trim().to_owned()));
                }
            } else {
                let defaults = &self.partition_defaults;
                let get = |key: &str| {
                    get(key)
                        .or_else(|| defaults.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str()))
                };
                self.partitions.push(partition(line_no, value.trim(), get, file)?);
            }
            return Ok(());
        }
        if first.is_empty() {
            if let Some((word, include)) = line.trim().split_once(char::is_whitespace)
                && word.eq_ignore_ascii_case("Include")
            {
                self.setting(line_no, "Include", include, file);
                return Ok(());
            }
            return Err(error(NAME, LINE_SHAPE.to_owned(), line));
        }
        if !first.eq_ignore_ascii_case("NodeName") {
            // Another slurm.conf setting (ClusterName=, SchedulerType=, ...), without its comment.
            let text = line.split_once('#').map_or(line, |(head, _)| head);
            for (key, value) in pairs(text) {
                self.setting(line_no, key, &value, file);
            }
            return Ok(());
        }
        let gres = get("Gres").map(str::to_owned);
        let cpus = get("CPUs").or_else(|| get("CPUTot")).map(str::to_owned);
        if value.trim().eq_ignore_ascii_case("DEFAULT") {
            self.default_gres = gres;
            self.default_cpus = cpus;
            return Ok(());
        }
        let cpus = match cpus.or_else(|| self.default_cpus.clone()) {
            Some(text) => Some(
                text.parse::<u32>()
                    .map_err(|_| TraceError::field(file, line_no, "CPUs", "a whole number of CPUs", &text))?,
            ),
            None => None,
        };
        let gres = gres.or_else(|| self.default_gres.clone()).unwrap_or_else(|| "(null)".to_owned());
        let (kind, gpus) = gres_gpus(&gres).map_err(|expected| error(GRES, expected.to_owned(), &gres))?;
        let names = expand_hostlist(value.trim())
            .map_err(|why| error(NAME, format!("a node name or host list such as n[1-4,7] ({why})"), value))?;
        let model = if gpus == 0 { "" } else { kind.unwrap_or("GPU") };
        let partitions: Vec<String> =
            get("Partitions").unwrap_or("").split(',').filter(|p| !p.is_empty()).map(str::to_owned).collect();
        for name in names {
            let machine = Machine { name: &name, name_col: NAME, gpus, model, model_col: GRES };
            self.tally.add_at(line_no, machine, "", error)?;
            let pool = (gpus > 0).then(|| format!("{model}-{gpus}"));
            self.nodes.push(SlurmNode { name, pool, partitions: partitions.clone(), gpus, cpus });
        }
        Ok(())
    }

    fn setting(&mut self, line: u64, key: &str, value: &str, file: &str) {
        self.settings.push(Setting {
            key: key.to_owned(),
            value: value.trim().to_owned(),
            file: file.to_owned(),
            line,
        });
    }
}

const LINE_SHAPE: &str =
    "a `Key=Value` line: NodeName=... or PartitionName=... (scontrol show nodes/partitions --oneliner, or slurm.conf)";

/// The node names in node id order: pool by pool as the cluster orders them, each pool's
/// nodes in file order (how `sim::Cluster` numbers them).
fn names_by_id(spec: &sim::ClusterSpec, nodes: &[SlurmNode]) -> Vec<String> {
    spec.pools
        .iter()
        .flat_map(|p| nodes.iter().filter(move |n| n.pool.as_deref() == Some(p.name.as_str())).map(|n| n.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_with_spaces_stay_whole() {
        let p = pairs("NodeName=n1 OS=Linux 6.1 #1 SMP  Gres=gpu:a100:8 Reason=maint [root@2026]");
        let keys: Vec<&str> = p.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["NodeName", "OS", "Gres", "Reason"]);
        assert_eq!(p[1].1, "Linux 6.1 #1 SMP");
    }

    #[test]
    fn gres_forms() {
        assert_eq!(gres_gpus("gpu:a100:8"), Ok((Some("a100"), 8)));
        assert_eq!(gres_gpus("gpu:4(S:0-1)"), Ok((None, 4)));
        assert_eq!(gres_gpus("(null)"), Ok((None, 0)));
        assert_eq!(gres_gpus("nic:2,gpu:v100:2,gpu:v100:2"), Ok((Some("v100"), 4)));
        assert!(gres_gpus("gpu:a100:4,gpu:v100:4").is_err());
        assert!(gres_gpus("gpu:a100:x").is_err());
    }

    #[test]
    fn nodes_become_pools_and_partitions_queues() {
        let text = "NodeName=a Gres=gpu:a100:8 Partitions=main\nNodeName=b Gres=gpu:a100:8 Partitions=main,big\n\
                    NodeName=c Gres=gpu:4 Partitions=main\nNodeName=d Gres=(null) Partitions=cpu\n";
        let import = read_slurm_nodes(text.as_bytes(), "nodes.txt").unwrap();
        let pools: Vec<(&str, u32)> = import.spec.pools.iter().map(|p| (p.name.as_str(), p.nodes)).collect();
        assert_eq!(pools, [("GPU-4", 1), ("a100-8", 2)]);
        assert_eq!(import.node_names, ["c", "a", "b"]);
        let queues: Vec<(&str, Vec<String>)> =
            import.queues.iter().map(|q| (q.name.as_str(), q.pools.clone())).collect();
        assert_eq!(queues, [("big", vec!["a100-8".to_owned()]), ("main", vec![])]);
        assert_eq!(import.report.no_gpu.machines, 1);
        assert_eq!(
            import.report.notes[..2],
            [
                "partition big has 1 of the 2 nodes of pool a100-8: its queue may use the whole pool",
                "partition cpu has no GPU nodes: no queue"
            ]
        );
        let e = read_slurm_nodes("NodeName=a Gres=gpu:a100:4,gpu:v100:4\n".as_bytes(), "n.txt").unwrap_err();
        assert!(e.to_string().starts_with("n.txt:1: field `Gres`: expected GPUs written"), "{e}");
        let e = read_slurm_nodes("PartitionName=x\n".as_bytes(), "n.txt").unwrap_err();
        assert_eq!(
            e.to_string(),
            "n.txt: no NodeName= lines: expected `scontrol show nodes --oneliner` output or a slurm.conf"
        );
        let e = read_slurm_nodes("JobID|Start\n".as_bytes(), "n.txt").unwrap_err();
        assert!(e.to_string().starts_with("n.txt:1: field `NodeName`: expected a `Key=Value` line"), "{e}");
    }

    #[test]
    fn slurm_conf_node_ranges_defaults_and_partitions() {
        let conf = "# a comment\nClusterName=c\nnodename=DEFAULT Gres=gpu:a100:8 CPUs=64\n\
                    NodeName=n[1-4,7] State=UNKNOWN\nNodeName=v[01-02] Gres=gpu:v100:4\nNodeName=login\tGres=(null)\n\
                    PartitionName=DEFAULT MaxTime=60\nPartitionName=small Nodes=v[01-02]\n\
                    PartitionName=all Nodes=ALL Default=YES QOS=cap\nPartitionName=part Nodes=n[1-2]\n";
        let import = read_slurm_nodes(conf.as_bytes(), "slurm.conf").unwrap();
        let pools: Vec<(&str, u32)> = import.spec.pools.iter().map(|p| (p.name.as_str(), p.nodes)).collect();
        assert_eq!(pools, [("a100-8", 5), ("v100-4", 2)]);
        assert_eq!(import.node_names, ["n1", "n2", "n3", "n4", "n7", "v01", "v02"]);
        assert_eq!(import.report.no_gpu.machines, 1);
        // The default partition first, then by name; `all` spans every pool (no list).
        let queues: Vec<(&str, Vec<String>)> =
            import.queues.iter().map(|q| (q.name.as_str(), q.pools.clone())).collect();
        assert_eq!(
            queues,
            [("all", vec![]), ("part", vec!["a100-8".to_owned()]), ("small", vec!["v100-4".to_owned()])]
        );
        let e = |t: &str| read_slurm_nodes(t.as_bytes(), "slurm.conf").unwrap_err().to_string();
        assert_eq!(
            e("NodeName=n1 Gres=gpu:2\nPartitionName=p Nodes=n[1-2]\n"),
            "slurm.conf:2: field `Nodes`: expected nodes of the file's NodeName lines, got \"n2\""
        );
        assert!(
            e("NodeName=n[1-x] Gres=gpu:2\n")
                .starts_with("slurm.conf:1: field `NodeName`: expected a node name or host list")
        );
        assert!(e("NodeName=n[1-2] Gres=gpu:2\nNodeName=n2 Gres=gpu:2\n").contains("line 1 has it"));
    }

    #[test]
    fn a_partition_qos_caps_its_queue() {
        let conf = "NodeName=n[1-4] Gres=gpu:8\nPartitionName=main Nodes=ALL Default=YES\n\
                    PartitionName=debug Nodes=n[3-4] QOS=debug8\nPartitionName=gone Nodes=n1 QOS=missing\n";
        let qos = [
            QosLimits { max_gpus: Some(8), max_running_jobs: Some(4), ..QosLimits::new("debug8") },
            QosLimits { max_gpus: Some(16), ..QosLimits::new("big") },
        ];
        let import = read_slurm_cluster(conf.as_bytes(), "slurm.conf", Some(&qos)).unwrap();
        let caps: Vec<(&str, Option<u32>, Option<u32>)> =
            import.queues.iter().map(|q| (q.name.as_str(), q.max_gpus, q.max_running_jobs)).collect();
        assert_eq!(caps, [("main", None, None), ("debug", Some(8), Some(4)), ("gone", None, None)]);
        let notes = &import.report.notes;
        let first = notes.iter().position(|n| n.starts_with("partition debug takes")).unwrap();
        let qos_notes: Vec<&str> = notes[first..first + 3].iter().map(String::as_str).collect();
        assert_eq!(
            qos_notes,
            [
                "partition debug takes QOS debug8's limits: 8 GPUs, 4 running jobs",
                "partition gone names QOS missing, which the QOS list does not have: no cap",
                "QOS big limits the jobs that ask for it, across partitions: only the `slurm` policy's spec \
                 (--policy-out) carries that; queues are partitions",
            ]
        );
        let nodes_only = read_slurm_cluster("NodeName=n1 Gres=gpu:8 Partitions=p\n".as_bytes(), "n.txt", Some(&qos));
        assert!(nodes_only.unwrap().report.notes.iter().any(|n| n.starts_with("no PartitionName lines")));
    }

    #[test]
    fn slurm_conf_scheduling_lines_become_the_policy_spec() {
        let conf = "# scheduling\nSchedulerType=sched/builtin  # the FIFO one\n\
                    SchedulerParameters=batch_sched_delay=0,bf_continue\nPriorityType=priority/multifactor\n\
                    PriorityWeightPartition=100\ninclude\t/etc/slurm/more.conf\n\
                    NodeName=DEFAULT Gres=gpu:a100:8 CPUs=32\nNodeName=n[1-2]\nNodeName=n3 Gres=gpu:4\n\
                    NodeName=login Gres=(null) CPUs=4\n\
                    PartitionName=DEFAULT PriorityJobFactor=2 TRESBillingWeights=GRES/gpu=1.0\n\
                    PartitionName=main Nodes=ALL Default=YES\nPartitionName=high Nodes=n3 PriorityTier=5 \
                    PriorityJobFactor=10\n";
        let import = read_slurm_nodes(conf.as_bytes(), "slurm.conf").unwrap();
        assert_eq!(
            import.policy.as_deref(),
            Some(
                "slurm[batch_sched_delay=0,billing=gpu,node_cpus=32,partition_factors=high:10/main:2,\
                 priority=multifactor,sched=builtin,weight_partition=100]"
            )
        );
        // PriorityTier is the queue's priority (Slurm's default 1); the DEFAULT line's settings
        // hold for the partitions after it.
        let tiers: Vec<(&str, i32)> = import.queues.iter().map(|q| (q.name.as_str(), q.priority)).collect();
        assert_eq!(tiers, [("main", 1), ("high", 5)]);
        let notes = &import.report.notes;
        for note in [
            "SchedulerParameters bf_continue: not modelled",
            "slurm.conf:6: Include /etc/slurm/more.conf is not read: its settings are not in the spec",
            "slurmctld's start (BOOT_TIME) is in `scontrol show config` output only (--config): started_s stays \
             first (the first submission)",
        ] {
            assert!(notes.contains(&note.to_owned()), "{note} in {notes:?}");
        }
        // scontrol show config's values are taken over slurm.conf's, and it has BOOT_TIME.
        let config = "Configuration data as of 2026-12-05T07:15:47\nBOOT_TIME               = 2026-12-05T06:49:10\n\
                      SchedulerType           = sched/backfill\nPriorityWeightPartition = 100\n";
        let files = SlurmFiles { config: Some((config, "config.txt")), ..SlurmFiles::default() };
        let import = read_slurm_import(conf.as_bytes(), "slurm.conf", files).unwrap();
        let policy = import.policy.unwrap();
        assert!(policy.ends_with(",priority=multifactor,started_s=1796453350,weight_partition=100]"), "{policy}");
        assert!(import.report.notes.contains(
            &"sched: config.txt:3 gives backfill, slurm.conf:2 gives builtin; config.txt's is taken (what slurmctld \
              ran with)"
                .to_owned()
        ));
        let e = |t: &str| read_slurm_nodes(t.as_bytes(), "slurm.conf").unwrap_err().to_string();
        assert_eq!(
            e("NodeName=n1 Gres=gpu:8 CPUs=many\n"),
            "slurm.conf:1: field `CPUs`: expected a whole number of CPUs, got \"many\""
        );
        assert_eq!(
            e("NodeName=n1 Gres=gpu:8\nPartitionName=p Nodes=n1 PriorityTier=top\n"),
            "slurm.conf:2: field `PriorityTier`: expected a whole number from 0 to 65535, got \"top\""
        );
        assert!(e("NodeName=n1 Gres=gpu:8\nPriorityMaxAge=old\n").starts_with("slurm.conf:2: field `PriorityMaxAge`"));
        let e =
            read_slurm_import(conf.as_bytes(), "slurm.conf", SlurmFiles { config: Some(("", "config.txt")), ..files });
        assert_eq!(
            e.unwrap_err().to_string(),
            "config.txt: no `Key = Value` lines: expected the output of `scontrol show config`"
        );
    }
}
