//! Cluster descriptions from the two places users write them: the command-line shorthand
//! (`8x8:A100,32x8:V100`) and a trace directory's `cluster.csv`. Both end in a
//! [`ClusterSpec`] that `sim::Cluster::new` accepts, checked here first so that the error can
//! point at the part or line the user wrote.

use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Rows, Unknown, parse_u32};
use sim::cluster::MAX_GPUS_PER_NODE;
use sim::{Cluster, ClusterSpec, PoolSpec};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

/// The GPU type (and pool name) of a shorthand part that names none, e.g. `16x8`.
pub const DEFAULT_GPU_TYPE: &str = "GPU";

/// The most GPUs a cluster may have in total. The simulator keeps per-GPU state in vectors,
/// so a typo like `4000000x8` must be an error, not an attempt to allocate it.
pub const MAX_CLUSTER_GPUS: u64 = 1_000_000;

const SHAPE: &str = "NODESxGPUS[:TYPE[@SPEED]] parts separated by commas, such as 40x8:V100 or 8x8:A100@2.5,32x8:V100";

/// Parses the shorthand `NODESxGPUS[:TYPE][,...]`: `40x8:V100` is 40 nodes of 8 V100 GPUs.
///
/// Pools are named after their type; a type used again gets `-2`, `-3`, ... (`V100`,
/// `V100-2`). A part without a type gets [`DEFAULT_GPU_TYPE`]. Spaces around parts are
/// ignored; `x` may be `X`. Each pool is one rack (racks need `cluster.csv`).
pub fn parse_cluster_shorthand(text: &str) -> Result<ClusterSpec, TraceError> {
    let what = format!("cluster `{text}`");
    let fail = |message: String| TraceError::value(what.clone(), message);
    if text.trim().is_empty() {
        return Err(fail(format!("empty; expected {SHAPE}")));
    }
    let mut parsed = Vec::new();
    for (index, part) in text.split(',').enumerate() {
        let part = part.trim();
        let number = index + 1;
        let (shape, gpu_type) = match part.split_once(':') {
            Some((shape, ty)) => (shape, ty.trim()),
            None => (part, DEFAULT_GPU_TYPE),
        };
        // `TYPE@SPEED`: the type's speed relative to the reference type (default 1).
        let (gpu_type, speed_milli) = match gpu_type.split_once('@') {
            Some((ty, speed)) => match parse_speed_milli(speed.trim()) {
                Some(milli) => (ty.trim(), milli),
                None => {
                    return Err(fail(format!(
                        "part {number} `{part}`: expected a speed above 0 with at most three decimals, such as 2.5 \
                         or 1.125 (A100@2.5: 2.5 times the reference type), got `{}`",
                        speed.trim()
                    )));
                }
            },
            None => (gpu_type, 1000),
        };
        let Some((nodes, gpus)) = shape.split_once(['x', 'X']) else {
            return Err(fail(format!("part {number} `{part}`: expected {SHAPE}")));
        };
        let (Some(nodes), Some(gpus)) = (parse_u32(nodes.trim()), parse_u32(gpus.trim())) else {
            return Err(fail(format!(
                "part {number} `{part}`: node and GPU counts must be whole numbers; expected {SHAPE}"
            )));
        };
        if gpu_type.is_empty() || !gpu_type.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
            return Err(fail(format!(
                "part {number} `{part}`: the GPU type must be letters, digits, `-`, `_` or `.`, such as V100"
            )));
        }
        if nodes == 0 {
            return Err(fail(format!("part {number} `{part}`: a pool needs at least 1 node")));
        }
        if gpus == 0 || gpus > MAX_GPUS_PER_NODE {
            return Err(fail(format!("part {number} `{part}`: GPUs per node must be 1..={MAX_GPUS_PER_NODE}")));
        }
        parsed.push((nodes, gpus, gpu_type, speed_milli));
    }
    let types: Vec<&str> = parsed.iter().map(|p| p.2).collect();
    let mut pools: Vec<PoolSpec> = Vec::with_capacity(parsed.len());
    for &(nodes, gpus_per_node, gpu_type, speed_milli) in &parsed {
        let name = pool_name(gpu_type, &pools, &types);
        pools.push(PoolSpec {
            name,
            gpu_type: gpu_type.to_owned(),
            nodes,
            gpus_per_node,
            nodes_per_rack: 0,
            speed_milli,
        });
    }
    let spec = ClusterSpec { pools };
    check_spec(&spec).map_err(fail)?;
    Ok(spec)
}

/// `gpu_type` itself if free, else `gpu_type-k` for the smallest free `k >= 2`; a name that
/// another part uses as its type is never taken, so `V100,V100-2,V100` stays unambiguous.
fn pool_name(gpu_type: &str, taken: &[PoolSpec], types: &[&str]) -> String {
    let free = |name: &str| !taken.iter().any(|p| p.name == name);
    if free(gpu_type) {
        return gpu_type.to_owned();
    }
    (2..)
        .map(|k| format!("{gpu_type}-{k}"))
        .find(|name| free(name) && !types.contains(&name.as_str()))
        .unwrap_or_default()
}

/// Limits `sim::Cluster::new` does not check, then `Cluster::new` itself.
fn check_spec(spec: &ClusterSpec) -> Result<(), String> {
    let total: u64 = spec.pools.iter().map(|p| u64::from(p.nodes) * u64::from(p.gpus_per_node)).sum();
    if total > MAX_CLUSTER_GPUS {
        return Err(format!("{total} GPUs in total; at most {MAX_CLUSTER_GPUS} are supported"));
    }
    Cluster::new(spec).map(|_| ()).map_err(|e| e.0)
}

const KNOWN: &[Column] = &[
    Column { name: "pool", required: true },
    Column { name: "gpu_type", required: true },
    Column { name: "nodes", required: true },
    Column { name: "gpus_per_node", required: true },
    Column { name: "nodes_per_rack", required: false },
    Column { name: "speed", required: false },
];

/// Reads `cluster.csv` (`pool,gpu_type,nodes,gpus_per_node[,nodes_per_rack]`); pools keep
/// file order, which fixes node and GPU ids.
pub fn read_cluster_csv<R: Read>(source: R, file: &str) -> Result<ClusterSpec, TraceError> {
    first_error(file, |sink| read_cluster_into(source, file, sink))
}

/// Reads a `cluster.csv` file from disk.
pub fn load_cluster_file(path: &Path) -> Result<ClusterSpec, TraceError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_cluster_csv(std::io::BufReader::new(file), &name)
}

/// Writes `spec` as `cluster.csv` (all five columns, pools in order); refuses a spec that
/// `sim::Cluster::new` would refuse, so what is written always reads back identically.
pub fn write_cluster_csv<W: Write>(spec: &ClusterSpec, out: W) -> Result<(), TraceError> {
    check_spec(spec).map_err(|m| TraceError::value("cluster to write as cluster.csv", m))?;
    let io_error = |e: csv::Error| TraceError::io("cluster.csv output", e.to_string());
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(KNOWN.iter().map(|c| c.name)).map_err(io_error)?;
    for p in &spec.pools {
        let numbers = [p.nodes, p.gpus_per_node, p.nodes_per_rack].map(|n| n.to_string());
        let speed = format!("{}.{:03}", p.speed_milli / 1000, p.speed_milli % 1000);
        writer
            .write_record([p.name.as_str(), p.gpu_type.as_str(), &numbers[0], &numbers[1], &numbers[2], &speed])
            .map_err(io_error)?;
    }
    writer.flush().map_err(|e| TraceError::io("cluster.csv output", e.to_string()))
}

pub(crate) fn read_cluster_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<ClusterSpec> {
    let (mut rows, cols) = Rows::open_checked(source, file, KNOWN, Unknown::Refuse, sink)?;
    let (pool_col, type_col, nodes_col, gpus_col, rack_col) = (cols[0]?, cols[1]?, cols[2]?, cols[3]?, cols[4]);
    let speed_col = cols[5];
    let mut pools = Vec::new();
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let mut total_gpus = 0u64;
    // Not `Rows::parse_all`: reading also stops at the first row past `MAX_CLUSTER_GPUS`.
    while let Some(row) = rows.next_row() {
        let parsed = row.and_then(|row| {
            let name = row.name_field(pool_col, "a pool name")?;
            if let Some(first) = lines.get(name) {
                return Err(row.error(pool_col, format!("a pool name not used before (line {first} has it)"), name));
            }
            let gpu_type = row.name_field(type_col, "a GPU type such as V100")?;
            let nodes = row.gpus(nodes_col).map_err(|_| {
                row.error(nodes_col, "a whole number of nodes, at least 1", row.text(nodes_col).unwrap_or_default())
            })?;
            let gpus_text = row.text(gpus_col)?;
            let gpus_per_node = match parse_u32(gpus_text) {
                Some(n) if (1..=MAX_GPUS_PER_NODE).contains(&n) => n,
                _ => {
                    return Err(row.error(
                        gpus_col,
                        format!("a whole number of GPUs per node, 1..={MAX_GPUS_PER_NODE}"),
                        gpus_text,
                    ));
                }
            };
            let rack_text = row.opt_text(rack_col)?;
            let nodes_per_rack = match rack_text {
                "" => 0,
                text => parse_u32(text).ok_or_else(|| {
                    row.error(rack_col.unwrap_or(0), "a whole number of nodes per rack (0 or empty: one rack)", text)
                })?,
            };
            total_gpus += u64::from(nodes) * u64::from(gpus_per_node);
            if total_gpus > MAX_CLUSTER_GPUS {
                return Err(TraceError::row(
                    row.file(),
                    row.line,
                    format!("the cluster exceeds {MAX_CLUSTER_GPUS} GPUs in total here"),
                ));
            }
            lines.insert(name.to_owned(), row.line);
            let speed_text = row.opt_text(speed_col)?;
            let speed_milli = match speed_text {
                "" => 1000,
                text => match parse_speed_milli(text) {
                    Some(milli) => milli,
                    None => {
                        return Err(row.error(
                            speed_col.unwrap_or(0),
                            "a speed relative to the reference GPU type, > 0 with up to 3 decimals (empty: 1)",
                            text,
                        ));
                    }
                },
            };
            Ok(PoolSpec {
                name: name.to_owned(),
                gpu_type: gpu_type.to_owned(),
                nodes,
                gpus_per_node,
                nodes_per_rack,
                speed_milli,
            })
        });
        match parsed {
            Ok(pool) => pools.push(pool),
            Err(e) => {
                sink.push(e);
                if sink.is_full() || total_gpus > MAX_CLUSTER_GPUS {
                    return None;
                }
            }
        }
    }
    if pools.is_empty() {
        if sink.is_empty() {
            sink.push(TraceError::file(rows.file(), "no pools: the file has a header but no rows"));
        }
        return None;
    }
    let spec = ClusterSpec { pools };
    sink.ok(check_spec(&spec).map(|()| spec).map_err(|message| TraceError::file(rows.file(), message)))
}

/// A speed relative to the reference GPU type (`2.5`), in thousandths, exactly as the decimal
/// says (the seconds parser reads "2.5" as 2500); `None` unless above 0, within u32 and exact
/// in thousandths (`1.2345` is refused rather than rounded).
pub(crate) fn parse_speed_milli(text: &str) -> Option<u32> {
    if text.split_once('.').is_some_and(|(_, decimals)| decimals.trim_end_matches('0').len() > 3) {
        return None;
    }
    let milli = crate::timeparse::parse_seconds_ms(text).ok()?;
    u32::try_from(milli).ok().filter(|&m| m > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pools(text: &str) -> Vec<(String, String, u32, u32)> {
        parse_cluster_shorthand(text)
            .unwrap()
            .pools
            .into_iter()
            .map(|p| (p.name, p.gpu_type, p.nodes, p.gpus_per_node))
            .collect()
    }

    fn p(name: &str, ty: &str, nodes: u32, gpus: u32) -> (String, String, u32, u32) {
        (name.into(), ty.into(), nodes, gpus)
    }

    #[test]
    fn speeds_finer_than_thousandths_are_refused_not_rounded() {
        assert_eq!(parse_speed_milli("1.125"), Some(1125));
        assert_eq!(parse_speed_milli("1.2500"), Some(1250));
        assert_eq!(parse_speed_milli("1.2345"), None);
        let e = parse_cluster_shorthand("1x1:A100@1.2345").unwrap_err().to_string();
        assert!(e.contains("expected a speed above 0 with at most three decimals"), "{e}");
    }

    #[test]
    fn shorthand_builds_named_pools() {
        assert_eq!(pools("40x8:V100"), [p("V100", "V100", 40, 8)]);
        assert_eq!(pools("8x8:A100, 32X8:V100"), [p("A100", "A100", 8, 8), p("V100", "V100", 32, 8)]);
        assert_eq!(pools("16x8"), [p("GPU", "GPU", 16, 8)]);
        assert_eq!(
            pools("2x8:V100,4x4:V100,1x2:V100"),
            [p("V100", "V100", 2, 8), p("V100-2", "V100", 4, 4), p("V100-3", "V100", 1, 2)]
        );
        // A type spelled like a generated name keeps its own name.
        assert_eq!(
            pools("1x8:V100,1x8:V100,1x8:V100-2"),
            [p("V100", "V100", 1, 8), p("V100-3", "V100", 1, 8), p("V100-2", "V100-2", 1, 8)]
        );
    }

    #[test]
    fn bad_shorthand_says_what_and_where() {
        let e = |t: &str| parse_cluster_shorthand(t).unwrap_err().to_string();
        assert_eq!(e("8x8:A100,,"), format!("cluster `8x8:A100,,`: part 2 ``: expected {SHAPE}"));
        assert!(e("8*8").contains("part 1 `8*8`: expected"), "{}", e("8*8"));
        assert!(e("ax8").contains("whole numbers"));
        assert!(e("-1x8").contains("whole numbers"));
        assert!(e("0x8").contains("at least 1 node"));
        assert!(e("1x0").contains("GPUs per node must be 1..=64"));
        assert!(e("1x65").contains("GPUs per node must be 1..=64"));
        assert!(e("1x8:").contains("GPU type must be"));
        assert!(e("1x8:V 100").contains("GPU type must be"));
        assert!(e("").contains("empty"));
        assert!(e("200000x8").contains("at most 1000000"));
    }

    #[test]
    fn cluster_csv_reads_pools_in_order() {
        let text = "pool,gpu_type,nodes,gpus_per_node,nodes_per_rack\nfast,A100,8,8,4\nslow,V100,32,8,\n";
        let spec = read_cluster_csv(text.as_bytes(), "cluster.csv").unwrap();
        assert_eq!(spec.pools.len(), 2);
        assert_eq!(spec.pools[0].nodes_per_rack, 4);
        assert_eq!(spec.pools[1].nodes_per_rack, 0);
        assert_eq!(Cluster::new(&spec).unwrap().gpu_count(), 320);
        let spec = read_cluster_csv("gpus_per_node,nodes,gpu_type,pool\n2,3,K80,old\n".as_bytes(), "c.csv").unwrap();
        assert_eq!(spec.pools[0].name, "old");
    }

    #[test]
    fn cluster_csv_round_trips() {
        let mut spec = parse_cluster_shorthand("8x8:A100,32x8:V100,2x2:V100").unwrap();
        spec.pools[1].nodes_per_rack = 4;
        spec.pools[2].name = "old, \"slow\" ones".into();
        let mut out = Vec::new();
        write_cluster_csv(&spec, &mut out).unwrap();
        assert_eq!(read_cluster_csv(out.as_slice(), "c.csv").unwrap(), spec);
        spec.pools[0].gpus_per_node = 0;
        assert!(write_cluster_csv(&spec, Vec::new()).is_err());
    }

    #[test]
    fn cluster_csv_errors_point_at_the_row() {
        let e = |t: &str| read_cluster_csv(t.as_bytes(), "cluster.csv").unwrap_err().to_string();
        let head = "pool,gpu_type,nodes,gpus_per_node\n";
        assert_eq!(
            e(&format!("{head}a,V100,2,8\na,V100,2,8\n")),
            "cluster.csv:3: field `pool`: expected a pool name not used before (line 2 has it), got \"a\""
        );
        assert_eq!(
            e(&format!("{head}a,V100,2,128\n")),
            "cluster.csv:2: field `gpus_per_node`: expected a whole number of GPUs per node, 1..=64, got \"128\""
        );
        assert!(e(&format!("{head}a,V100,0,8\n")).starts_with("cluster.csv:2: field `nodes`"));
        assert!(e(&format!("{head}a,,1,8\n")).starts_with("cluster.csv:2: field `gpu_type`"));
        assert_eq!(e(head), "cluster.csv: no pools: the file has a header but no rows");
        assert!(e("pool,gpu_type,nodes\n").contains("no column `gpus_per_node`"));
        assert!(e(&format!("{head}a,V100,100000,64\n")).starts_with("cluster.csv:2: the cluster exceeds"));
    }
}
