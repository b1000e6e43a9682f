//! The machine-inventory importers against the facts published in each inventory's SOURCE.md
//! (machines, GPUs, machines per model and size), plus the promises every import keeps: the
//! cluster builds with `sim::Cluster::new`, and its GPUs are the inventory's GPUs minus the
//! skipped machines' GPUs, so nothing is lost silently. And no input panics a reader.

use proptest::prelude::*;
use sim::Cluster;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;
use traces::inventory::{read_openb_nodes, read_pai_machines, read_philly_machines, read_spot_nodes};
use traces::{ClusterImport, InventoryFormat, load_inventory, read_cluster_csv, write_cluster_csv};

/// `../shared/traces` next to the workspace root, or `None` (with a note) without data.
fn shared_traces() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: ../shared/traces not found; inventory facts not checked");
        None
    }
}

/// Imports `relative` and checks what holds for every import.
fn import(relative: &str, format: InventoryFormat) -> Option<ClusterImport> {
    let path = shared_traces()?.join(relative);
    let started = Instant::now();
    let import = load_inventory(&path, format).unwrap_or_else(|e| panic!("{relative}: {e}"));
    eprintln!("{relative}: imported in {:?}\n{}", started.elapsed(), import.report);
    let r = &import.report;
    let cluster = Cluster::new(&import.spec).expect("the imported cluster builds");
    assert_eq!(u64::from(cluster.gpu_count()), r.gpus - r.skipped().gpus, "GPUs kept = inventory - skipped");
    assert_eq!(u64::from(cluster.gpu_count()), r.cluster_gpus);
    assert_eq!(cluster.nodes().len() as u64, r.machines - r.skipped().machines);
    assert_eq!(cluster.nodes().len() as u64, r.nodes);
    assert_eq!(r.pools, import.spec.pools.len());
    assert_eq!(r.models.iter().map(|m| m.gpus).sum::<u64>(), r.gpus, "models hold every GPU");
    // Pools in model order, then GPUs per node, named MODEL-GPUS.
    let keys: Vec<(&str, u32)> = import.spec.pools.iter().map(|p| (p.gpu_type.as_str(), p.gpus_per_node)).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    for p in &import.spec.pools {
        assert_eq!(p.name, format!("{}-{}", p.gpu_type, p.gpus_per_node));
    }
    // What is printed as cluster.csv reads back as the same cluster.
    let mut csv = Vec::new();
    write_cluster_csv(&import.spec, &mut csv).unwrap();
    assert_eq!(read_cluster_csv(csv.as_slice(), "cluster.csv").unwrap(), import.spec);
    Some(import)
}

/// Machines per model, as SOURCE.md lists them.
fn per_model(import: &ClusterImport) -> BTreeMap<&str, u64> {
    import.report.models.iter().map(|m| (m.model.as_str(), m.machines)).collect()
}

/// (model, GPUs per node) -> nodes, of the cluster built.
fn shapes(import: &ClusterImport) -> BTreeMap<(&str, u32), u32> {
    import.spec.pools.iter().map(|p| ((p.gpu_type.as_str(), p.gpus_per_node), p.nodes)).collect()
}

#[test]
fn pai_matches_source_md() {
    let Some(import) = import("alibaba-pai-v2020-machines/pai_machine_spec.csv", InventoryFormat::Pai) else {
        return;
    };
    let r = &import.report;
    // machines 1,897, GPUs 6,742; P100 798 x 2, T4 497 x 2, MISC 280 x 8, V100M32 135 x 8, V100 104 x 8, CPU 83 x 0.
    assert_eq!((r.machines, r.gpus), (1_897, 6_742));
    assert_eq!(
        shapes(&import),
        BTreeMap::from([
            (("MISC", 8), 280),
            (("P100", 2), 798),
            (("T4", 2), 497),
            (("V100", 8), 104),
            (("V100M32", 8), 135)
        ])
    );
    assert_eq!((r.no_gpu.machines, r.too_many_gpus.machines), (83, 0));
    assert_eq!(r.cluster_gpus, 6_742);
    assert!(r.not_modelled.contains("`cap_cpu`, `cap_mem`"), "{}", r.not_modelled);
}

#[test]
fn openb_matches_source_md() {
    let published = BTreeMap::from([
        ("G2", 549),
        ("T4", 404),
        ("P100", 134),
        ("V100M16", 55),
        ("G3", 39),
        ("V100M32", 30),
        ("A10", 2),
    ]);
    // GPUs per GPU node: 8 x 617, 2 x 518, 4 x 54, 1 x 24.
    let per_size = BTreeMap::from([(1, 24), (2, 518), (4, 54), (8, 617)]);
    for (file, machines, cpu_only) in
        [("openb_node_list_gpu_node.csv", 1_213, 0), ("openb_node_list_all_node.csv", 1_523, 310)]
    {
        let Some(import) = import(&format!("alibaba-gpu-v2023-openb/{file}"), InventoryFormat::Openb) else {
            return;
        };
        let r = &import.report;
        assert_eq!((r.machines, r.gpus, r.cluster_gpus), (machines, 6_212, 6_212), "{file}");
        assert_eq!((r.no_gpu.machines, r.too_many_gpus.machines), (cpu_only, 0), "{file}");
        assert_eq!(per_model(&import), published, "{file}");
        let mut sizes = BTreeMap::new();
        for p in &import.spec.pools {
            *sizes.entry(p.gpus_per_node).or_insert(0) += p.nodes;
        }
        assert_eq!(sizes, per_size, "{file}");
        assert_eq!(import.spec.pools.len(), 12);
        if cpu_only > 0 {
            assert_eq!(r.skip_lines(), ["skipped 310 CPU-only machines (schedlab schedules GPUs)"]);
        }
        assert!(r.not_modelled.contains("`cpu_milli`, `memory_mib`"), "{}", r.not_modelled);
    }
}

#[test]
fn spot_matches_source_md() {
    let Some(import) = import("alibaba-spot-gpu-v2026-nodes/node_info_df.csv", InventoryFormat::Spot) else {
        return;
    };
    let r = &import.report;
    // nodes 4,278, GPUs 10,412; A10 2,494 x 1, A100-SXM4-80GB 432 x 8, H800 219 x 8, GPU-series-2 122 x 8,
    // A800-SXM4-80GB 22 x 8, GPU-series-1 989 (902 x 1, 77 x 8, 10 x 4).
    assert_eq!((r.machines, r.gpus, r.cluster_gpus), (4_278, 10_412, 10_412));
    assert_eq!(r.skipped().machines, 0);
    assert_eq!(
        shapes(&import),
        BTreeMap::from([
            (("A10", 1), 2_494),
            (("A100-SXM4-80GB", 8), 432),
            (("A800-SXM4-80GB", 8), 22),
            (("GPU-series-1", 1), 902),
            (("GPU-series-1", 4), 10),
            (("GPU-series-1", 8), 77),
            (("GPU-series-2", 8), 122),
            (("H800", 8), 219),
        ])
    );
    assert_eq!(per_model(&import)["GPU-series-1"], 989);
    assert!(r.not_modelled.contains("`cpu_num`"), "{}", r.not_modelled);
}

#[test]
fn philly_matches_source_md() {
    let Some(import) = import("philly-pollux/cluster_machine_list", InventoryFormat::Philly) else {
        return;
    };
    let r = &import.report;
    // 552 servers: 321 x 2 GPUs (12 GB), 231 x 8 GPUs (24 GB) = 2,490 GPUs.
    assert_eq!((r.machines, r.gpus, r.cluster_gpus), (552, 2_490, 2_490));
    assert_eq!(r.skipped().machines, 0);
    assert_eq!(shapes(&import), BTreeMap::from([(("12GB", 2), 321), (("24GB", 8), 231)]));
    let names: Vec<&str> = import.spec.pools.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["12GB-2", "24GB-8"]);
}

#[test]
fn oversized_and_cpu_only_machines_are_counted_not_dropped() {
    let text = "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\nBIG,128,192,1\nBIG,128,192,2\n,0,64,3\n";
    let import = read_spot_nodes(text.as_bytes(), "node_info_df.csv").unwrap();
    let r = &import.report;
    assert_eq!((r.machines, r.gpus, r.cluster_gpus), (4, 257, 1));
    assert_eq!((r.too_many_gpus.machines, r.too_many_gpus.gpus, r.no_gpu.machines), (2, 256, 1));
    assert_eq!(u64::from(Cluster::new(&import.spec).unwrap().gpu_count()), r.gpus - r.skipped().gpus);
    assert_eq!(
        r.skip_lines(),
        [
            "skipped 1 CPU-only machine (schedlab schedules GPUs)",
            "skipped 2 machines with more than 64 GPUs (256 GPUs; a schedlab node has at most 64)",
        ]
    );
}

#[test]
fn directories_and_missing_files_are_errors() {
    let e = load_inventory(std::path::Path::new("/nonexistent/schedlab/x.csv"), InventoryFormat::Pai).unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/schedlab/x.csv: cannot read:"), "{e}");
    let dir = env!("CARGO_MANIFEST_DIR");
    let e = load_inventory(std::path::Path::new(dir), InventoryFormat::Philly).unwrap_err().to_string();
    assert!(e.contains("is a directory; give the philly inventory file itself, such as"), "{e}");
    assert!(e.ends_with("cluster_machine_list"), "{e}");
}

/// An error's line, if any, must be a line of the input (or the one after a final line end).
fn check(result: Result<ClusterImport, traces::TraceError>, input: &[u8]) -> Result<(), TestCaseError> {
    match result {
        Ok(import) => {
            let cluster = Cluster::new(&import.spec);
            prop_assert!(cluster.is_ok());
            let r = &import.report;
            prop_assert_eq!(r.cluster_gpus, r.gpus - r.skipped().gpus);
        }
        Err(e) => {
            let lines = input.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64 + 1;
            if let Some(line) = e.line() {
                prop_assert!(line >= 1 && line <= lines, "line {} of {}: {}", line, lines, e);
            }
            prop_assert!(!e.to_string().is_empty());
        }
    }
    Ok(())
}

fn read_all(input: &[u8]) -> Result<(), TestCaseError> {
    check(read_pai_machines(input, "pai_machine_spec.csv"), input)?;
    check(read_openb_nodes(input, "openb_node_list_all_node.csv"), input)?;
    check(read_spot_nodes(input, "node_info_df.csv"), input)?;
    check(read_philly_machines(input, "cluster_machine_list"), input)
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(96) })]

    #[test]
    fn arbitrary_bytes_never_panic_the_inventory_readers(input in prop::collection::vec(any::<u8>(), 0..600)) {
        read_all(&input)?;
    }

    #[test]
    fn csv_like_rows_after_a_real_header_never_panic(
        header in prop::sample::select(vec![
            "",
            "sn,cpu_milli,memory_mib,gpu,model\n",
            "gpu_model,gpu_capacity_num,cpu_num,node_name\n",
            "machineId, number of GPUs, single GPU mem\n",
        ]),
        body in "[0-9a-zA-Z,. \n\r_-]{0,400}",
    ) {
        read_all(format!("{header}{body}").as_bytes())?;
    }
}
