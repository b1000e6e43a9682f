//! Agents' bodies as JSON texts (registrations, heartbeats with exits, health events and
//! readings, and what agents are answered): their fields plain or hostile, value by value.

use super::job_text::{Gen, field, name_text, unknown_field};
use super::json::{HOSTILE_NUMBERS, object, quote};
use proptest::prelude::*;

/// Agents' bodies: their fields plain or hostile, value by value.
const HOSTILE: Gen = Gen { open: false, hostile: true };

fn u64_text() -> BoxedStrategy<String> {
    prop_oneof![
        12 => (0u64..8).prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => prop::sample::select(HOSTILE_NUMBERS).prop_map(str::to_string),
    ]
    .boxed()
}

pub fn uuid_text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (0u32..2, 0u32..3).prop_map(|(n, g)| quote(&format!("GPU-n{n}-{g}"))),
        1 => name_text(HOSTILE),
    ]
    .boxed()
}

fn gpu_text() -> BoxedStrategy<String> {
    (uuid_text(), u64_text(), u64_text(), u64_text(), u64_text(), unknown_field(HOSTILE, &["x", "uuid"]))
        .prop_map(|(uuid, index, used, util, temp, extra)| {
            let mut fields = vec![
                ("index".to_string(), index),
                ("uuid".to_string(), uuid),
                ("name".to_string(), quote("SIM")),
                ("memory_total_mib".to_string(), "81920".to_string()),
                ("memory_used_mib".to_string(), used),
                ("utilisation_pct".to_string(), util),
                ("temperature_c".to_string(), temp),
            ];
            fields.extend(extra);
            object(&fields)
        })
        .boxed()
}

fn exit_text() -> BoxedStrategy<String> {
    let code = prop_oneof![4 => Just("0".to_string()), 2 => any::<i32>().prop_map(|c| c.to_string()), 1 => u64_text()];
    let attempt = prop_oneof![4 => Just("1".to_string()), 1 => u64_text()];
    (u64_text(), attempt, code, unknown_field(HOSTILE, &["x", "name", "task"]))
        .prop_map(|(task, attempt, code, extra)| {
            let mut fields =
                vec![("task".to_string(), task), ("attempt".to_string(), attempt), ("code".to_string(), code)];
            fields.extend(extra);
            object(&fields)
        })
        .boxed()
}

fn health_text() -> BoxedStrategy<String> {
    let kind = prop_oneof![
        8 => prop::sample::select(&["xid", "ecc", "lost", "work_dir"][..]),
        1 => prop::sample::select(&["Xid", "other", ""][..]),
    ];
    (kind, uuid_text(), u64_text(), unknown_field(HOSTILE, &["x", "kind"]))
        .prop_map(|(kind, uuid, n, extra)| {
            let mut fields = vec![("kind".to_string(), quote(kind)), ("uuid".to_string(), uuid)];
            match kind {
                "xid" => fields.push(("code".to_string(), n)),
                "ecc" => fields.push(("count".to_string(), n)),
                "work_dir" => fields.push(("error".to_string(), quote("No space left on device"))),
                _ => {}
            }
            fields.extend(extra);
            object(&fields)
        })
        .boxed()
}

/// An agent's name: n0 or n1 mostly (two agents), any name sometimes.
pub fn agent_name_text() -> BoxedStrategy<String> {
    prop_oneof![6 => prop::sample::select(&["n0", "n1"][..]).prop_map(quote), 1 => name_text(HOSTILE)].boxed()
}

pub fn register_text(name: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let node = prop_oneof![Just("0".to_string()), Just("1".to_string()), u64_text()];
    (
        name,
        prop::collection::vec(gpu_text(), 0..4),
        field("node", node.boxed(), 0.2),
        field("fresh", prop::sample::select(&["true", "false", "1"][..]).prop_map(str::to_string).boxed(), 0.6),
        prop_oneof![4 => Just(quote("127.0.0.1")), 1 => name_text(HOSTILE)],
        unknown_field(HOSTILE, &["x", "name", "token"]),
    )
        .prop_map(|(name, gpus, node, fresh, addr, extra)| {
            let mut fields = vec![
                ("name".to_string(), name),
                ("addr".to_string(), addr),
                ("gpus".to_string(), format!("[{}]", gpus.join(","))),
            ];
            fields.extend([node, fresh, extra].into_iter().flatten());
            object(&fields)
        })
        .boxed()
}

/// A heartbeat; `generation` is the coordinator's where the caller knows it.
pub fn heartbeat_text(generation: Option<u64>, name: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let generation = match generation {
        Some(g) => prop_oneof![6 => Just(g.to_string()), 1 => u64_text()].boxed(),
        None => u64_text(),
    };
    (
        name,
        prop::collection::vec(exit_text(), 0..4),
        prop::collection::vec(health_text(), 0..3),
        field("gpus", prop::collection::vec(gpu_text(), 0..3).prop_map(|g| format!("[{}]", g.join(","))).boxed(), 0.3),
        generation,
        unknown_field(HOSTILE, &["x", "name", "exits"]),
    )
        .prop_map(|(name, exits, health, gpus, generation, extra)| {
            let mut fields = vec![
                ("name".to_string(), name),
                ("exits".to_string(), format!("[{}]", exits.join(","))),
                ("health".to_string(), format!("[{}]", health.join(","))),
                ("generation".to_string(), generation),
            ];
            fields.extend([gpus, extra].into_iter().flatten());
            object(&fields)
        })
        .boxed()
}

fn assignment_text() -> BoxedStrategy<String> {
    (
        u64_text(),
        u64_text(),
        name_text(HOSTILE),
        name_text(HOSTILE),
        prop::collection::vec(uuid_text(), 0..3),
        u64_text(),
    )
        .prop_map(|(task, attempt, job, task_name, gpus, rank)| {
            object(&[
                ("task".to_string(), task),
                ("attempt".to_string(), attempt),
                ("job".to_string(), job),
                ("task_name".to_string(), task_name),
                ("command".to_string(), quote("true")),
                ("gpus".to_string(), format!("[{}]", gpus.join(","))),
                ("rank".to_string(), rank),
                ("world_size".to_string(), "1".to_string()),
                ("master_addr".to_string(), quote("127.0.0.1")),
            ])
        })
        .boxed()
}

/// Any body an agent sends or is answered with.
pub fn agent_body_text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => register_text(agent_name_text()),
        3 => heartbeat_text(None, agent_name_text()),
        1 => exit_text(),
        1 => health_text(),
        1 => gpu_text(),
        2 => (prop::collection::vec(assignment_text(), 0..3), u64_text())
            .prop_map(|(a, g)| format!(r#"{{"generation":{g},"assignments":[{}]}}"#, a.join(","))),
        1 => (prop::collection::vec(assignment_text(), 0..3), u64_text()).prop_map(|(a, g)| {
            format!(r#"{{"assignments":[{}],"acked":[],"heartbeat_ms":{g},"generation":1}}"#, a.join(","))
        }),
    ]
    .boxed()
}
