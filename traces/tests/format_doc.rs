//! FORMAT.md is a promise to users: its examples must load, and its example error messages
//! must be what schedlab actually prints.

use traces::{Format, parse_cluster_shorthand, read_cluster_csv, read_events_csv, read_workload};

fn format_md() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).expect("FORMAT.md")
}

/// The bodies of the fenced blocks tagged with `tag` (`""`: untagged).
fn blocks(text: &str, tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(t)) => current = Some((t.to_owned(), String::new())),
            (Some(_), Some("")) => {
                if let Some((t, body)) = current.take()
                    && t == tag
                {
                    found.push(body);
                }
            }
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    found
}

#[test]
fn every_csv_example_loads() {
    let doc = format_md();
    let examples = blocks(&doc, "csv");
    assert!(examples.len() >= 4, "found {} csv examples", examples.len());
    for example in examples {
        let first_column = example.split([',', '\n']).next().unwrap_or_default();
        let loaded = match first_column {
            "job_id" => read_workload(example.as_bytes(), "example", Format::Canonical).map(|_| ()),
            "pool" => read_cluster_csv(example.as_bytes(), "example").map(|_| ()),
            "queue" => traces::read_queues_csv(example.as_bytes(), "example").map(|_| ()),
            "dataset" => traces::read_datasets_csv(example.as_bytes(), "example").map(|_| ()),
            "time_s" => {
                // Node indexes in the example refer to the example cluster (8 + 32 nodes).
                let cluster = parse_cluster_shorthand("8x8:A100,32x8:V100").unwrap();
                read_events_csv(example.as_bytes(), "example", Some(&cluster)).map(|_| ())
            }
            other => panic!("unclassified example starting with `{other}`"),
        };
        if let Err(e) = loaded {
            panic!("FORMAT.md example fails: {e}\n{example}");
        }
    }
}

#[test]
fn the_shorthand_table_holds() {
    let pools =
        |s: &str| -> Vec<String> { parse_cluster_shorthand(s).unwrap().pools.into_iter().map(|p| p.name).collect() };
    assert_eq!(pools("40x8:V100"), ["V100"]);
    assert_eq!(pools("8x8:A100,32x8:V100"), ["A100", "V100"]);
    assert_eq!(pools("16x8"), ["GPU"]);
    assert_eq!(pools("2x8:V100,4x4:V100"), ["V100", "V100-2"]);
}

#[test]
fn the_error_examples_are_real() {
    let doc = format_md();
    let shown = blocks(&doc, "").pop().expect("the error example block");
    let shown: Vec<&str> = shown.lines().collect();

    let mut philly = String::from("timestamp,duration,num_gpus,gpu_time,cluster\n");
    for _ in 2..17 {
        philly.push_str("2017-10-09 07:01:55,66.0,1,66.0,11cb48\n");
    }
    philly.push_str("2017-10-09 07:01:55,abc,1,66.0,11cb48\n");
    let e = read_workload(philly.as_bytes(), "philly.csv", Format::Philly).unwrap_err();
    assert_eq!(e.to_string(), shown[0]);

    let jobs = "job_id,submit_s,duration_s,gpus\ntrain,0,1,1\ntrain,5,1,1\n";
    let e = read_workload(jobs.as_bytes(), "jobs.csv", Format::Canonical).unwrap_err();
    assert_eq!(e.to_string(), shown[1]);

    let jobs = "job_id,submit_s,duration_s,gpus,estimate_sec\na,0,1,1,5\n";
    let e = read_workload(jobs.as_bytes(), "jobs.csv", Format::Canonical).unwrap_err();
    assert_eq!(e.to_string(), shown[2]);

    let jobs = "job_id,task_id,submit_s,duration_s,gpus,depends_on\npipe,prep,0,1,1,\npipe,train,0,1,1,pre\n";
    let e = read_workload(jobs.as_bytes(), "jobs.csv", Format::Canonical).unwrap_err();
    assert_eq!(e.to_string(), shown[3]);

    let jobs = "job_id,task_id,submit_s,duration_s,gpus,depends_on\n\
                pipe,prep,0,1,1,\npipe,train,0,1,1,prep;eval\npipe,eval,0,1,1,train\n";
    let e = read_workload(jobs.as_bytes(), "jobs.csv", Format::Canonical).unwrap_err();
    assert_eq!(e.to_string(), shown[4]);
}
