//! Slurm's node list: `scontrol show nodes --oneliner`, one line per node of `Key=Value`
//! pairs separated by spaces (a value such as `OS=Linux 6.1 #1 SMP` goes on until the next
//! `Key=`). The fields read are `NodeName`, `Gres` (`gpu:TYPE:N`, `gpu:N`, `(null)`; a
//! socket suffix such as `(S:0-1)` is dropped) and `Partitions`. A node without a GPU type is
//! of type `GPU`, as in the `--cluster` shorthand; a node with GPUs of two types cannot be one
//! schedlab node and is an error naming the line.
//!
//! Each partition becomes a queue whose pools are those of its nodes (no pool list when it
//! spans every pool). A pool is a set of identical nodes, so a partition holding only some of a
//! pool's nodes is widened to the whole pool, and a note says so.

use super::{ClusterImport, InventoryFormat, Machine, Tally, not_modelled_line};
use crate::error::{TraceError, first_error};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

/// The fields a node line is checked for, as error column indexes.
const FIELDS: [&str; 3] = ["NodeName", "Gres", "Partitions"];
const NAME: usize = 0;
const GRES: usize = 1;

/// The `Key=Value` pairs of one node line, in order.
fn pairs(line: &str) -> Vec<(&str, String)> {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    for token in line.split(' ').filter(|t| !t.is_empty()) {
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

/// Reads `scontrol show nodes --oneliner` output; `file` names it in errors.
pub fn read_slurm_nodes<R: Read>(mut source: R, file: &str) -> Result<ClusterImport, TraceError> {
    let mut text = String::new();
    source.read_to_string(&mut text).map_err(|e| TraceError::io(file, e.to_string()))?;
    first_error(file, |sink| {
        let mut tally = Tally::new(InventoryFormat::Slurm);
        // Node -> (pool name, partitions), for the queues.
        let mut nodes: Vec<(String, Option<String>, Vec<String>)> = Vec::new();
        for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let line_no = index as u64 + 1;
            let fields = pairs(line);
            let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
            let error = |column: usize, expected: String, found: &str| {
                TraceError::field(file, line_no, FIELDS[column], expected, found)
            };
            let Some(name) = get("NodeName") else {
                sink.push(error(NAME, "a line of `scontrol show nodes --oneliner` (NodeName=...)".into(), line));
                continue;
            };
            let gres = get("Gres").unwrap_or("(null)");
            let (kind, gpus) = match gres_gpus(gres) {
                Ok(found) => found,
                Err(expected) => {
                    sink.push(error(GRES, expected.to_owned(), gres));
                    continue;
                }
            };
            let model = if gpus == 0 { "" } else { kind.unwrap_or("GPU") };
            let machine = Machine { name, name_col: NAME, gpus, model, model_col: GRES };
            if let Err(e) = tally.add_at(line_no, machine, "", error) {
                sink.push(e);
                continue;
            }
            let partitions = get("Partitions").unwrap_or("").split(',').filter(|p| !p.is_empty()).map(str::to_owned);
            let pool = (gpus > 0).then(|| format!("{model}-{gpus}"));
            nodes.push((name.to_owned(), pool, partitions.collect()));
        }
        if !sink.is_empty() {
            return None;
        }
        let not_modelled = not_modelled_line(&["CPUTot", "RealMemory", "State"]);
        let mut import = sink.ok(tally.finish(file, not_modelled))?;
        partition_queues(&mut import, &nodes);
        import.node_names = names_by_id(&import.spec, &nodes);
        Some(import)
    })
}

/// The node names in node id order: pool by pool as the cluster orders them, each pool's
/// nodes in file order (how `sim::Cluster` numbers them).
fn names_by_id(spec: &sim::ClusterSpec, nodes: &[(String, Option<String>, Vec<String>)]) -> Vec<String> {
    spec.pools
        .iter()
        .flat_map(|p| nodes.iter().filter(move |n| n.1.as_deref() == Some(p.name.as_str())).map(|n| n.0.clone()))
        .collect()
}

/// Each partition as a queue over the pools of its nodes, with a note where a partition holds
/// part of a pool.
fn partition_queues(import: &mut ClusterImport, nodes: &[(String, Option<String>, Vec<String>)]) {
    let mut members: BTreeMap<&str, BTreeMap<&str, u32>> = BTreeMap::new();
    for (_, pool, partitions) in nodes {
        for partition in partitions {
            let pools = members.entry(partition).or_default();
            if let Some(pool) = pool {
                *pools.entry(pool).or_default() += 1;
            }
        }
    }
    let all: BTreeSet<&str> = import.spec.pools.iter().map(|p| p.name.as_str()).collect();
    for (partition, pools) in members {
        if pools.is_empty() {
            import.report.notes.push(format!("partition {partition} has no GPU nodes: no queue"));
            continue;
        }
        let mut queue = sim::QueueSpec::new(partition);
        for (&pool, &count) in &pools {
            let size = import.spec.pools.iter().find(|p| p.name == pool).map_or(0, |p| p.nodes);
            if count < size {
                import.report.notes.push(format!(
                    "partition {partition} has {count} of the {size} nodes of pool {pool}: its queue may use the whole pool"
                ));
            }
        }
        if pools.keys().copied().collect::<BTreeSet<&str>>() != all {
            queue.pools = pools.keys().map(|p| (*p).to_owned()).collect();
        }
        import.queues.push(queue);
    }
    import
        .report
        .notes
        .push("node states (DRAIN, DOWN) are not carried: every node is up; partitions became queues".to_owned());
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
        assert!(e.to_string().starts_with("n.txt:1: field `NodeName`"), "{e}");
    }
}
