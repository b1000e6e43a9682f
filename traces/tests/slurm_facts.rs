//! The `sacct` and `slurm` importers on what a real Slurm 22.05 wrote (traces/tests/data/slurm/,
//! made by scripts/slurm-dump.sh; see its README). Every expected count was read off the dump
//! by hand (awk over the `|`-separated rows), not from the importer.

use std::path::{Path, PathBuf};
use traces::{Format, InventoryFormat, load, load_inventory, parse_datetime_ms, read_sacct};

fn data(run: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slurm").join(run).join(file)
}

fn import(run: &str) -> traces::SacctImport {
    let path = data(run, "sacct.txt");
    let text = std::fs::read(&path).expect("the committed dump");
    read_sacct(text.as_slice(), &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn builtin_dump_jobs_steps_and_states() {
    let import = import("builtin");
    let r = &import.report;
    // 611 data rows: 319 job rows (318 job ids: job 64 twice, NODE_FAIL then COMPLETED) and
    // 292 steps (.batch; no srun steps, no .extern without PrologFlags=contain).
    assert_eq!((r.rows, r.steps, r.jobs), (611, 292, 318));
    assert_eq!(import.workload.len(), 318);
    // Two arrays: 41_0..41_9 and 123_1..123_7.
    assert_eq!(r.array_tasks, 17);
    assert_eq!(r.het_jobs, 0, "Slurm refuses het jobs under sched/builtin");
    assert_eq!(r.earlier_attempts.iter().collect::<Vec<_>>(), [(&"NODE_FAIL".to_owned(), &1)]);
    // 27 `CANCELLED by 0`, every one without an allocation: 15 `--begin` jobs cancelled
    // before they were eligible, 12 `cancel-running` jobs still waiting in the FIFO queue.
    assert_eq!((r.cancelled_before_start, r.cancelled_running), (27, 0));
    let failed: Vec<(&str, u64)> = r.failed.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    assert_eq!(failed, [("FAILED", 12), ("TIMEOUT", 1)]);
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(r.owner_fields, ["Account", "QOS", "User"]);
    // Every job was submitted by root under account root and QOS normal (the script's).
    let root = sim::Owner { account: "root".into(), user: "root".into(), qos: "normal".into() };
    assert!(import.workload.jobs().iter().all(|j| j.owner.as_deref() == Some(&root)));
}

#[test]
fn builtin_dump_job_details() {
    let import = import("builtin");
    let job = |name: &str| import.workload.jobs().iter().find(|j| j.name == name).unwrap_or_else(|| panic!("{name}"));
    let at = |t: &str| parse_datetime_ms(&t.replacen('T', " ", 1)).unwrap();
    // Job 64: NODE_FAIL on n2 (submitted and eligible 20:22:19), requeued, eligible again at
    // 20:25:11, ran 20:25:12-20:25:21 on n1. Replayed from its first eligibility (the node
    // failure is replayed, not the requeue's hold), with the last attempt's work.
    let requeued = job("64");
    assert_eq!(requeued.submit.0, at("2026-12-01T20:22:19"));
    let task = &requeued.tasks[0];
    assert_eq!((task.work.0, task.exit_code), (9_000, 0));
    assert_eq!(task.options().window.not_before, None);
    // The timeout job: `-t 1` (the estimate), killed by Slurm's periodic time-limit check 62 s
    // after its start (20:23:58-20:25:00), exits non-zero.
    let timeout = &job("102").tasks[0];
    assert_eq!((timeout.work.0, timeout.estimate.get().map(|e| e.0), timeout.exit_code), (62_000, Some(60_000), 1));
    // A 16-GPU job over 2 nodes is one gang, not single-node, with 8 GPUs on each node as Slurm
    // gave them (job 7: 12 over 2 nodes, 6 each).
    let gang = &job("2").tasks[0];
    assert_eq!((gang.gpus, gang.single_node, gang.fixed_gpus_per_node()), (16, false, Some(8)));
    assert_eq!(job("7").tasks[0].fixed_gpus_per_node(), Some(6));
    assert_eq!(job("1").tasks[0].fixed_gpus_per_node(), Some(1));
    assert_eq!(job("2").queue.as_deref(), Some("main"));
}

#[test]
fn backfill_dump_has_the_het_job_as_one_job() {
    let import = import("backfill");
    let het = import.workload.jobs().iter().find(|j| j.name == "82").expect("het job 82");
    let shape: Vec<(&str, u32)> = het.tasks.iter().map(|t| (t.name.as_str(), t.gpus)).collect();
    assert_eq!(shape, [("0", 2), ("1", 4)]);
    assert_eq!(import.report.het_jobs, 1);
}

#[test]
fn load_gives_the_notes_for_stderr() {
    let trace = load(&data("builtin", "sacct.txt"), Format::Sacct(Default::default())).unwrap();
    assert_eq!(trace.notes[0], "folded 292 step rows (batch, extern, srun steps) into their jobs");
    assert!(trace.notes.contains(&"27 jobs cancelled before starting: kept, cancelled at the End time".to_owned()));
}

#[test]
fn scontrol_nodes_become_pools_and_partitions_queues() {
    let import = load_inventory(&data("builtin", "nodes.txt"), InventoryFormat::Slurm).unwrap();
    let pools: Vec<(&str, &str, u32, u32)> =
        import.spec.pools.iter().map(|p| (p.name.as_str(), p.gpu_type.as_str(), p.nodes, p.gpus_per_node)).collect();
    assert_eq!(pools, [("a100-8", "a100", 2, 8), ("v100-8", "v100", 2, 8)]);
    let queues: Vec<(&str, Vec<String>)> = import.queues.iter().map(|q| (q.name.as_str(), q.pools.clone())).collect();
    assert_eq!(queues, [("debug", vec!["v100-8".to_owned()]), ("main", vec![])]);
    assert_eq!((import.report.machines, import.report.cluster_gpus), (4, 32));
}

/// A queue as (name, pools, max_gpus, max_running_jobs).
type QueueCaps<'a> = (&'a str, Vec<String>, Option<u32>, Option<u32>);

fn queue_caps(import: &traces::ClusterImport) -> Vec<QueueCaps<'_>> {
    import.queues.iter().map(|q| (q.name.as_str(), q.pools.clone(), q.max_gpus, q.max_running_jobs)).collect()
}

#[test]
fn slurm_conf_gives_the_cluster_scontrol_gives() {
    // builtin/slurm.conf: NodeName=n1..n4 one per line, `PartitionName=main Nodes=n[1-4]
    // Default=YES`, `PartitionName=debug Nodes=n[3-4]`.
    let conf = load_inventory(&data("builtin", "slurm.conf"), InventoryFormat::Slurm).unwrap();
    let nodes = load_inventory(&data("builtin", "nodes.txt"), InventoryFormat::Slurm).unwrap();
    assert_eq!(conf.spec, nodes.spec);
    assert_eq!(conf.node_names, ["n1", "n2", "n3", "n4"]);
    assert_eq!(conf.node_names, nodes.node_names);
    // The default partition first (scontrol's node lines do not say which is the default).
    let v100 = vec!["v100-8".to_owned()];
    assert_eq!(queue_caps(&conf), [("main", vec![], None, None), ("debug", v100.clone(), None, None)]);
    assert_eq!(queue_caps(&nodes), [("debug", v100, None, None), ("main", vec![], None, None)]);
}

#[test]
fn the_partition_qos_caps_its_queue() {
    // config/: Slurm started by `SLURM_DUMP_JOBS=0 scripts/slurm-dump.sh`, with partition
    // debug's QOS debug8 (GrpTRES=gres/gpu=8, GrpJobs=4); qos.txt has `normal` (no limits) too.
    let qos_text = std::fs::read_to_string(data("config", "qos.txt")).unwrap();
    let qos = traces::inventory::read_sacctmgr_qos(&qos_text, "qos.txt").unwrap();
    let names: Vec<(&str, Option<u32>, Option<u32>)> =
        qos.iter().map(|q| (q.name.as_str(), q.max_gpus, q.max_running_jobs)).collect();
    assert_eq!(names, [("normal", None, None), ("debug8", Some(8), Some(4))]);
    let expected = [("main", vec![], None, None), ("debug", vec!["v100-8".to_owned()], Some(8), Some(4))];
    let conf =
        traces::inventory::load_slurm_cluster(&data("config", "slurm.conf"), &data("config", "qos.txt")).unwrap();
    assert_eq!(queue_caps(&conf), expected);
    // scontrol's nodes then partitions, in one file, say the same.
    let both = [data("config", "nodes.txt"), data("config", "partitions.txt")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .concat();
    let scontrol = traces::inventory::read_slurm_cluster(both.as_bytes(), "cluster.txt", Some(&qos)).unwrap();
    assert_eq!(queue_caps(&scontrol), expected);
    assert!(
        scontrol.report.notes.contains(&"partition debug takes QOS debug8's limits: 8 GPUs, 4 running jobs".to_owned())
    );
}

/// The `slurm` policy spec of a fair-share dump, from its slurm.conf with `scontrol show
/// config`, the associations and the QOS list.
fn fairshare_import(run: &str) -> traces::ClusterImport {
    let (config, assoc, qos) = (data(run, "config.txt"), data(run, "assoc.txt"), data(run, "qos.txt"));
    let paths = traces::inventory::SlurmPaths { qos: Some(&qos), config: Some(&config), assoc: Some(&assoc) };
    traces::inventory::load_slurm_import(&data(run, "slurm.conf"), paths).unwrap_or_else(|e| panic!("{e}"))
}

/// Written out by hand from fairshare-tree/'s files:
/// - slurm.conf: `PriorityType=priority/multifactor`; `PriorityWeightAge=10000`,
///   `...Fairshare=100000`, `...JobSize=10000`, `...Partition=20000` (`...QOS=0`, the default);
///   `PriorityDecayHalfLife=0:10:00` (600 s), `PriorityCalcPeriod=1` (minutes: 60 s),
///   `PriorityMaxAge=0:20:00` (1200 s); no PriorityFlags (Fair Tree, the default);
///   `SchedulerType=sched/backfill` and no SchedulerParameters (defaults); every node `CPUs=16`;
///   partitions `main` (`PriorityJobFactor=1`) and `urgent` (`4`), both
///   `TRESBillingWeights=GRES/gpu=1.0` (billing=gpu);
/// - config.txt says the same (`PriorityCalcPeriod = 00:01:00`, `SchedulerParameters = (null)`,
///   `PriorityFlags = ` empty) and `BOOT_TIME = 2026-12-05T06:49:10`: 1796453350 (`date -u -d
///   2026-12-05T06:49:10 +%s`);
/// - assoc.txt: accounts alpha 50, beta 30, gamma 20; users al 1, ann 3 (alpha), ben 1, bo 1
///   (beta), gil 1, guy 2 (gamma); root's own user association root.root 1 (the account root
///   is skipped);
/// - qos.txt: `normal` with Priority 0 only, so no qos_priorities.
const FAIRSHARE_TREE_SPEC: &str = "slurm[billing=gpu,calc_period=60,decay_half_life=600,max_age=1200,node_cpus=16,\
     partition_factors=main:1/urgent:4,priority=multifactor,shares=alpha:50/alpha.al:1/alpha.ann:3/beta:30/\
     beta.ben:1/beta.bo:1/gamma:20/gamma.gil:1/gamma.guy:2/root.root:1,started_s=1796453350,weight_age=10000,\
     weight_fairshare=100000,weight_jobsize=10000,weight_partition=20000]";

#[test]
fn fairshare_tree_dump_gives_its_slurm_policy_spec() {
    let import = fairshare_import("fairshare-tree");
    assert_eq!(import.policy.as_deref(), Some(FAIRSHARE_TREE_SPEC));
    // slurm.conf and config.txt agree: no note says one was taken over the other.
    let notes = &import.report.notes;
    assert!(!notes.iter().any(|n| n.contains("what slurmctld ran with")), "{notes:?}");
    assert!(notes.iter().any(|n| n.ends_with("assoc.txt has no ParentName column: every account is taken to be root's child (sacctmgr show assoc format=...,ParentName shows the tree)")), "{notes:?}");
    // Neither partition sets PriorityTier: Slurm's 1 for both queues.
    let tiers: Vec<(&str, i32)> = import.queues.iter().map(|q| (q.name.as_str(), q.priority)).collect();
    assert_eq!(tiers, [("main", 1), ("urgent", 1)]);
    // scontrol's nodes and partitions (CPUTot=16, PriorityJobFactor, TRESBillingWeights) give
    // the same spec as slurm.conf.
    let listing = [data("fairshare-tree", "nodes.txt"), data("fairshare-tree", "partitions.txt")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .concat();
    let config = std::fs::read_to_string(data("fairshare-tree", "config.txt")).unwrap();
    let assoc = std::fs::read_to_string(data("fairshare-tree", "assoc.txt")).unwrap();
    let assoc = traces::inventory::read_sacctmgr_assoc(&assoc, "assoc.txt").unwrap();
    let qos = std::fs::read_to_string(data("fairshare-tree", "qos.txt")).unwrap();
    let qos = traces::inventory::read_sacctmgr_qos(&qos, "qos.txt").unwrap();
    let files =
        traces::inventory::SlurmFiles { qos: Some(&qos), config: Some((&config, "config.txt")), assoc: Some(&assoc) };
    let scontrol = traces::inventory::read_slurm_import(listing.as_bytes(), "cluster.txt", files).unwrap();
    assert_eq!(scontrol.policy.as_deref(), Some(FAIRSHARE_TREE_SPEC));
}

#[test]
fn fairshare_classic_dump_gives_its_slurm_policy_spec() {
    // As fairshare-tree/, but `SchedulerParameters=bf_interval=10,bf_max_job_test=50`,
    // `PriorityFlags=NO_FAIR_TREE` (in both slurm.conf and config.txt), and BOOT_TIME
    // 2026-12-05T06:49:29 (1796453369).
    let import = fairshare_import("fairshare-classic");
    assert_eq!(
        import.policy.as_deref(),
        Some(
            "slurm[bf_interval=10,bf_max_job_test=50,billing=gpu,calc_period=60,decay_half_life=600,\
             fair_tree=false,max_age=1200,node_cpus=16,partition_factors=main:1/urgent:4,priority=multifactor,\
             shares=alpha:50/alpha.al:1/alpha.ann:3/beta:30/beta.ben:1/beta.bo:1/gamma:20/gamma.gil:1/\
             gamma.guy:2/root.root:1,started_s=1796453369,weight_age=10000,weight_fairshare=100000,\
             weight_jobsize=10000,weight_partition=20000]"
        )
    );
    assert!(!import.report.notes.iter().any(|n| n.contains("what slurmctld ran with")), "{:?}", import.report.notes);
}

#[test]
fn older_dumps_give_their_slurm_policy_spec() {
    // backfill/: sched/backfill, priority/basic, no SchedulerParameters: Slurm's defaults but
    // for the nodes' CPUs=16 (8 GPUs each), so node_cpus=16. builtin/: sched/builtin.
    // builtin-fast/: also SchedulerParameters=batch_sched_delay=0.
    let spec = |run: &str| load_inventory(&data(run, "slurm.conf"), InventoryFormat::Slurm).unwrap().policy;
    assert_eq!(spec("backfill").as_deref(), Some("slurm[node_cpus=16]"));
    assert_eq!(spec("builtin").as_deref(), Some("slurm[node_cpus=16,sched=builtin]"));
    assert_eq!(spec("builtin-fast").as_deref(), Some("slurm[batch_sched_delay=0,node_cpus=16,sched=builtin]"));
    // scontrol's node list says the same of the nodes (CPUTot=16).
    let nodes = load_inventory(&data("backfill", "nodes.txt"), InventoryFormat::Slurm).unwrap();
    assert_eq!(nodes.policy.as_deref(), Some("slurm[node_cpus=16]"));
}
