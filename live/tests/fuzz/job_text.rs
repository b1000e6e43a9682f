//! Job bodies (`POST /v1/jobs`) as JSON texts, built field by field: plain ones the API
//! should take, and hostile ones (names, odd numbers, windows and deadlines, dependencies of
//! every kind, unknown fields) it should refuse with a reason.

use super::harness::all_classes;
use super::json::{Body, HOSTILE_NAMES, HOSTILE_NUMBERS, RAW_STRINGS, nested, object, quote};
use proptest::prelude::*;

/// How a body is generated: `hostile` (any value of every field: most such bodies are
/// refused), or plain (values the API should take: most such bodies run); `open`, with the
/// fields of the open replay defects of fuzz_findings.rs (checkpoint intervals, restart
/// overheads).
#[derive(Debug, Clone, Copy)]
pub struct Gen {
    pub open: bool,
    pub hostile: bool,
}

impl Gen {
    /// Plain bodies 3 times in 4.
    fn any(open: bool) -> impl Strategy<Value = Gen> {
        prop::bool::weighted(0.25).prop_map(move |hostile| Gen { open, hostile })
    }

    /// `plain` values, or with `hostile` ones among them.
    fn pick(self, plain: BoxedStrategy<String>, hostile: BoxedStrategy<String>) -> BoxedStrategy<String> {
        if self.hostile { prop_oneof![3 => plain, 2 => hostile].boxed() } else { plain }
    }
}

/// A name's JSON text: a plain name; when hostile, also long, empty, with paths, control
/// characters, any Unicode, or no string at all.
pub fn name_text(g: Gen) -> BoxedStrategy<String> {
    let plain = "[a-z][a-z0-9._-]{0,7}".prop_map(|s| quote(&s)).boxed();
    let hostile = prop_oneof![
        4 => prop::sample::select(HOSTILE_NAMES).prop_map(quote),
        1 => Just(quote(&"x".repeat(128))),
        1 => Just(quote(&"y".repeat(129))),
        2 => any::<String>().prop_map(|s| quote(&s)),
        2 => prop::sample::select(RAW_STRINGS).prop_map(str::to_string),
        1 => prop::sample::select(&["1", "null", "[]", "{}", "true"][..]).prop_map(str::to_string),
    ];
    g.pick(plain, hostile.boxed())
}

/// Seconds as JSON: whole and fractional ones; when hostile, every odd number too.
fn seconds_text(g: Gen) -> BoxedStrategy<String> {
    let plain = prop_oneof![
        3 => (1u64..120).prop_map(|n| n.to_string()),
        2 => (1u64..120_000).prop_map(|ms| format!("{}.{:03}", ms / 1000, ms % 1000)),
    ];
    let hostile = prop_oneof![
        4 => prop::sample::select(HOSTILE_NUMBERS).prop_map(str::to_string),
        1 => prop::sample::select(&["\"10\"", "null", "[]", "true"][..]).prop_map(str::to_string),
    ];
    g.pick(plain.boxed(), hostile.boxed())
}

/// What follows a `depends_on` item's task name: every kind the API takes (points early in
/// the upstream's work mostly); when hostile, kinds it must refuse too.
fn dep_kind(g: Gen) -> BoxedStrategy<String> {
    let plain = prop::sample::select(&["", "", ":success", ":any", ":failure"][..]).prop_map(str::to_string);
    let data = prop_oneof![
        3 => (1u64..5_000).prop_map(|ms| format!(":data={}.{:03}", ms / 1000, ms % 1000)),
        1 => seconds_text(g).prop_map(|s| format!(":data={}", s.trim_matches('"'))),
    ];
    let checkpoint = (1u32..5).prop_map(|n| format!(":checkpoint={n}"));
    let kinds = prop_oneof![6 => plain, 4 => data, 2 => checkpoint].boxed();
    let bad = prop::sample::select(
        &[
            ":",
            "::",
            ":data",
            ":data=",
            ":data=-1",
            ":data=abc",
            ":checkpoint=",
            ":checkpoint=-1",
            ":checkpoint=99999999999",
            ":checkpoint=1.5",
            ":Success",
            ": any",
            ":any ",
            ":data=30:any",
            ":data=1e400",
            ":data=0",
            ":checkpoint=0",
            ":checkpoint=4294967296",
        ][..],
    )
    .prop_map(str::to_string);
    g.pick(kinds, bad.boxed())
}

/// Task `i`'s `depends_on` array: items on earlier tasks; when hostile, also on itself and
/// later ones (cycles), on tasks that are not there, other names, no array, or a long one.
fn depends_on_text(i: usize, g: Gen) -> BoxedStrategy<String> {
    let upstream = if g.hostile { (0usize..6).boxed() } else { (0..i.max(1)).boxed() };
    let item = prop_oneof![10 => (upstream, dep_kind(g)).prop_map(|(t, kind)| quote(&format!("t{t}{kind}"))), 1 => name_text(g)];
    let array = prop::collection::vec(item, 0..4).prop_map(|items| format!("[{}]", items.join(",")));
    let hostile = prop_oneof![
        1 => prop::sample::select(&["\"t0\"", "null", "{}", "[[\"t0\"]]"][..]).prop_map(str::to_string),
        1 => (1usize..400).prop_map(|n| format!("[{}]", vec![quote("t0:any"); n].join(","))),
    ];
    if i == 0 && !g.hostile {
        return Just("[]".to_string()).boxed();
    }
    g.pick(array.boxed(), hostile.boxed())
}

fn int_text(g: Gen, plain: std::ops::Range<u32>, odd: &'static [&'static str]) -> BoxedStrategy<String> {
    g.pick(plain.prop_map(|n| n.to_string()).boxed(), prop::sample::select(odd).prop_map(str::to_string).boxed())
}

fn one_of(g: Gen, plain: &'static [&'static str], hostile: &'static [&'static str]) -> BoxedStrategy<String> {
    let plain = prop::sample::select(plain).prop_map(str::to_string).boxed();
    g.pick(plain, prop_oneof![prop::sample::select(hostile).prop_map(str::to_string), name_text(g)].boxed())
}

/// An optional field: absent mostly.
pub fn field(key: &'static str, value: BoxedStrategy<String>, weight: f64) -> BoxedStrategy<Option<(String, String)>> {
    if weight <= 0.0 {
        return Just(None).boxed();
    }
    prop::option::weighted(weight, value.prop_map(move |v| (key.to_string(), v))).boxed()
}

/// When hostile, now and then a field the API does not have (or has already: a duplicate),
/// holding what breaks a parse of the whole body as a `serde_json::Value`.
pub fn unknown_field(g: Gen, keys: &'static [&'static str]) -> BoxedStrategy<Option<(String, String)>> {
    if !g.hostile {
        return Just(None).boxed();
    }
    let value = prop_oneof![
        Just("1e400".to_string()),
        Just(r#""\ud800""#.to_string()),
        Just(nested(200)),
        Just("-0".to_string()),
        Just("null".to_string()),
        Just(r#"{"name":"other"}"#.to_string()),
    ];
    prop::option::weighted(0.08, (prop::sample::select(keys), value).prop_map(|(k, v)| (k.to_string(), v))).boxed()
}

/// Task `i`'s JSON text.
fn task_text(i: usize, g: Gen) -> BoxedStrategy<String> {
    (task_basics(i, g), task_options(g))
        .prop_map(|(mut fields, options)| {
            fields.extend(options);
            object(&fields)
        })
        .boxed()
}

/// Task `i`'s name, command, and the fields most tasks have: GPUs, an estimate, dependencies,
/// a start window.
fn task_basics(i: usize, g: Gen) -> BoxedStrategy<Vec<(String, String)>> {
    let name = if g.hostile {
        prop_oneof![6 => Just(quote(&format!("t{i}"))), 1 => Just(quote("t0")), 2 => name_text(g)].boxed()
    } else {
        Just(quote(&format!("t{i}"))).boxed()
    };
    let command = g.pick(
        prop::sample::select(&["\"true\"", "\"true\"", "\"exit 3\""][..]).prop_map(str::to_string).boxed(),
        prop_oneof![
            prop::sample::select(&["\"\"", "\"   \"", "\"echo $SCHEDLAB_TOKEN\"", "null"][..]).prop_map(str::to_string),
            (1usize..20_000).prop_map(|n| quote(&"x".repeat(n))),
        ]
        .boxed(),
    );
    (
        name,
        command,
        field("gpus", int_text(g, 1..4, &["0", "4096", "4097", "4294967296", "-1", "1.5", "null", "\"2\""]), 0.5),
        field("estimate_s", seconds_text(g), 0.6),
        field("depends_on", depends_on_text(i, g), 0.5),
        field("not_before_s", seconds_text(g), 0.1),
        field("not_after_s", seconds_text(g), 0.1),
    )
        .prop_map(|(name, command, a, b, c, d, e)| {
            let mut fields = vec![("name".to_string(), name), ("command".to_string(), command)];
            fields.extend([a, b, c, d, e].into_iter().flatten());
            fields
        })
        .boxed()
}

/// The fields few tasks have: checkpoints and restart overheads (`open` only), shares, nodes,
/// datasets, GPU types and speeds, and unknown ones.
fn task_options(g: Gen) -> BoxedStrategy<Vec<(String, String)>> {
    let (checkpoint_s, restart_overhead_s) = if g.open { (0.15, 0.05) } else { (0.0, 0.0) };
    (
        field("checkpoint_s", seconds_text(g), checkpoint_s),
        field("restart_overhead_s", seconds_text(g), restart_overhead_s),
        field("gpu_milli", int_text(g, 1..1000, &["0", "1000", "65535", "65536", "-5", "500.5"]), 0.1),
        field("gpus_per_node", int_text(g, 1..3, &["0", "3", "4294967295", "-1"]), 0.05),
        field("dataset", one_of(g, &["\"imagenet\""], &["\"c4\""]), 0.08),
        field("gpu_type", one_of(g, &["\"A100\"", "\"V100\""], &["\"H100\""]), 0.08),
        field("speeds", speeds_text(g), 0.05),
        field("single_node", one_of(g, &["true", "false"], &["1", "null"]), 0.05),
        unknown_field(g, &["gpu_mili", "extra", "__proto__", "name", "command"]),
    )
        .prop_map(|(f, g, h, i, j, k, l, m, n)| [f, g, h, i, j, k, l, m, n].into_iter().flatten().collect())
        .boxed()
}

/// A task's `speeds` by GPU type.
fn speeds_text(g: Gen) -> BoxedStrategy<String> {
    one_of(
        g,
        &["\"A100=2;V100=1\"", "\"V100=0.001\"", "\"A100=1.5\""],
        &[
            "\"A100=fast\"",
            "\"A100=2;A100=3\"",
            "\"\"",
            "\"=\"",
            "\";;\"",
            "\"A100=1e400\"",
            "\"A100=-1\"",
            "\"A100=0\"",
        ],
    )
}

/// A job's JSON text: its name `j{index}` (when hostile, another case's name now and then:
/// 409), 1 to 4 tasks (when hostile, none, or no array).
fn job_text(index: usize, g: Gen) -> BoxedStrategy<String> {
    let tasks = (1usize..5)
        .prop_flat_map(move |n| (0..n).map(|i| task_text(i, g)).collect::<Vec<_>>())
        .prop_map(|tasks| format!("[{}]", tasks.join(",")))
        .boxed();
    let tasks = g.pick(tasks, prop::sample::select(&["[]", "null", "{}"][..]).prop_map(str::to_string).boxed());
    let name = g.pick(Just(quote(&format!("j{index}"))).boxed(), prop_oneof![Just(quote("j0")), name_text(g)].boxed());
    (
        name,
        tasks,
        field("queue", one_of(g, &["\"team\"", "\"other\""], &["\"nope\""]), 0.15),
        field("priority", int_text(g, 0..6, &["2147483648", "-2147483648", "-1", "1.5", "1e400", "null"]), 0.2),
        field("deadline_s", seconds_text(g), 0.08),
        unknown_field(g, &["tasks", "priorty", "x", "name"]),
    )
        .prop_map(|(name, tasks, a, b, c, d)| {
            let mut fields = vec![("name".to_string(), name), ("tasks".to_string(), tasks)];
            fields.extend([a, b, c, d].into_iter().flatten());
            object(&fields)
        })
        .boxed()
}

/// Job `index`'s JSON text, plain or hostile.
pub fn any_job_text(index: usize) -> BoxedStrategy<String> {
    Gen::any(all_classes()).prop_flat_map(move |g| job_text(index, g)).boxed()
}

/// One to three jobs' bodies, plain or hostile.
pub fn job_bodies() -> impl Strategy<Value = Vec<Body>> {
    (1usize..4)
        .prop_flat_map(move |n| (0..n).map(|i| any_job_text(i).prop_map(|t| Body(t.into_bytes()))).collect::<Vec<_>>())
}
