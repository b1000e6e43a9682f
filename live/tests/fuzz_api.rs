//! Property-based fuzzing of the live API (issue 32): what a user or an agent sends, as bytes.
//!
//! - **Job bodies** (`POST /v1/jobs`): random jobs built field by field (hostile names, odd JSON
//!   numbers such as `1e400`, `-0` and `1e-9`, windows and deadlines up to 10^12 s and past,
//!   dependencies of every kind, missing, cyclic and malformed, queues, datasets, GPU types,
//!   shares, speeds, unknown fields) and byte-level damage to valid bodies (the committed corpus
//!   among them) go through what the coordinator does with one: `serde_json` into
//!   [`JobRequest`], the driver's and the admission checks, then [`Driver::apply`] with random
//!   exits, beats, cancels and hardware trouble after it. No panic anywhere; a refusal is a
//!   400 or 409 with a reason; an accepted session exports as a trace whose replay in the
//!   simulator makes the live decisions, and its journal rebuilds it.
//! - **Agent bodies**: register and heartbeat requests (exits with any task and attempt
//!   numbers, health events, readings) and what agents are answered, parsed from random and
//!   damaged bytes: no panic, and what parses writes back to itself.
//! - **The coordinator over HTTP**: one started in-process per case, then random requests with
//!   the user token, two agents' tokens and forged ones (every endpoint, damaged bodies, odd
//!   paths and queries): it answers every request with a status below 500; an agent's token
//!   never acts for another agent; `GET /v1/cluster` still answers at the end; the state
//!   directory opens again and its journal replays to a session whose trace replays.
//! - **The corpus** (`tests/fuzz_corpus/`, the issue's reproducers among them) through the same
//!   checks, every run.
//!
//! Deterministic under `PROPTEST_RNG_SEED` (CI sets it; without it a seed is drawn and
//! printed). `SCHEDLAB_FUZZ_CASES=N` runs N cases of each body campaign (N/32 HTTP sessions)
//! for a long campaign (scripts/fuzz.sh); each campaign prints a line `fuzz NAME: ...` with its
//! inputs, time and failures. `SCHEDLAB_FUZZ_ALL=1` also runs what fuzz_findings.rs shows to
//! be open defects (checkpoint intervals, restart overheads, speeds, datasets placed on nodes,
//! start windows that close); without it, they are left out of the sessions once the job was
//! parsed and checked whole, so that the short run and long campaigns find new ones.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use schedlab_live::driver::{Batch, Driver, DriverConfig, Input};
use schedlab_live::wire::{
    Assignment, AssignmentsReply, ExitReport, GpuInfo, GpuProcess, HealthEvent, HeartbeatReply, HeartbeatRequest,
    JobRequest, RegisterReply, RegisterRequest,
};
use sim::{DecisionRecord, SimDuration, SimTime, TaskStatus};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------------------------------
// Campaigns

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// This run's seed: CI's `PROPTEST_RNG_SEED`, else one drawn from the clock (printed with
/// every campaign's line, so that a failure can be run again).
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        env_u64("PROPTEST_RNG_SEED").unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (nanos.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
        })
    })
}

/// Whether the sessions include what fuzz_findings.rs shows to be open defects.
fn all_classes() -> bool {
    std::env::var("SCHEDLAB_FUZZ_ALL").is_ok_and(|v| v == "1")
}

/// A campaign's cases: `short` (the run every `cargo test` makes), or SCHEDLAB_FUZZ_CASES
/// divided by the cost of one case (`per`).
fn cases(short: u32, per: u32) -> u32 {
    env_u64("SCHEDLAB_FUZZ_CASES").map_or(short, |n| (n / u64::from(per)).clamp(1, u64::from(u32::MAX)) as u32)
}

thread_local! {
    /// What the campaign running on this thread saw, by outcome (`parse error`, `refused 400`,
    /// `accepted`, `HTTP 201`...): printed with its line.
    static SEEN: std::cell::RefCell<std::collections::BTreeMap<String, u64>> = Default::default();
}

thread_local! {
    /// Whether this thread runs a campaign: its panics are caught and reported with the
    /// smallest input, not printed as they happen (shrinking makes hundreds).
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Panics on a thread running a campaign print nothing; others print as before.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                print(info);
            }
        }));
    });
}

fn seen(what: impl Into<String>) {
    SEEN.with(|s| *s.borrow_mut().entry(what.into()).or_default() += 1);
}

/// Runs `test` on `cases` inputs of `strategy` (a failure shrunk to its smallest input), and
/// prints what it tried: `fuzz NAME: N inputs in S s (seed X): F failures`.
fn campaign<S>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed()),
        max_shrink_iters: 4096,
        ..Config::default()
    };
    quiet_panics();
    let tried = AtomicU64::new(0);
    SEEN.with(|s| s.borrow_mut().clear());
    let start = Instant::now();
    QUIET.with(|q| q.set(true));
    let result = TestRunner::new(config).run(&strategy, |value| {
        tried.fetch_add(1, Ordering::Relaxed);
        test(value)
    });
    QUIET.with(|q| q.set(false));
    let failures = u32::from(result.is_err());
    let outcomes = SEEN.with(|s| s.borrow().iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "));
    eprintln!(
        "fuzz {name}: {} inputs in {:.2} s (seed {}, {cases} cases): {failures} failures [{outcomes}]",
        tried.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
        seed()
    );
    if let Err(e) = result {
        panic!("fuzz {name} (PROPTEST_RNG_SEED={}): {e}", seed());
    }
}

/// Bytes sent as a body, shown as text (escaped where they are not printable ASCII).
#[derive(Clone)]
struct Body(Vec<u8>);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// A small seeded generator for the inputs that follow the bodies (splitmix64).
struct Mix(u64);

impl Mix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

// ------------------------------------------------------------------------------------------
// JSON texts: every value is generated as the text that goes on the wire, so that numbers
// serde_json would never write (`1e400`, `-0`) and strings it would never accept (`"\ud800"`)
// reach the parser.

fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

fn object(fields: &[(String, String)]) -> String {
    let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{v}", quote(k))).collect();
    format!("{{{}}}", inner.join(","))
}

/// `depth` arrays in arrays: past serde_json's recursion limit at 128.
fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

const HOSTILE_NUMBERS: &[&str] = &[
    "1e400",
    "-1e400",
    "-0",
    "-0.0",
    "0",
    "0.0",
    "1e-9",
    "0.0004",
    "0.0005",
    "0.001",
    "-1",
    "1e15",
    "1e12",
    "999999999999",
    "1000000000000",
    "1000000000000.001",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "1.7976931348623157e308",
    "4.9e-324",
    "9007199254740993",
    "1E3",
    "2.5e1",
    "0.1e1",
    "123456789012345678901234567890",
    "3600000",
    "86400",
    "2147483648",
    "-2147483649",
];

const HOSTILE_NAMES: &[&str] = &[
    "",
    ".",
    "..",
    "a/b",
    "../x",
    "/etc",
    "a b",
    "a\nb",
    "a\rb",
    "a\u{0}b",
    "\u{1b}[2J",
    "é",
    "名前",
    "-",
    "_",
    ".hidden",
    "a:b",
    "a=b",
    "a\\b",
    "%2e%2e",
    "\u{202e}gpj.exe",
    "~",
    "1",
];

/// Strings as raw JSON that serde_json refuses or reads oddly.
const RAW_STRINGS: &[&str] =
    &[r#""\ud800""#, r#""\udfff\ud800""#, r#""\u0000""#, r#""a\/b""#, r#""\uD83D\uDE00""#, "\"\\\"\""];

/// How a body is generated: `hostile` (any value of every field: most such bodies are
/// refused), or plain (values the API should take: most such bodies run); `open`, with the
/// fields of the open replay defects of fuzz_findings.rs (checkpoint intervals, restart
/// overheads).
#[derive(Debug, Clone, Copy)]
struct Gen {
    open: bool,
    hostile: bool,
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
fn name_text(g: Gen) -> BoxedStrategy<String> {
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
fn field(key: &'static str, value: BoxedStrategy<String>, weight: f64) -> BoxedStrategy<Option<(String, String)>> {
    if weight <= 0.0 {
        return Just(None).boxed();
    }
    prop::option::weighted(weight, value.prop_map(move |v| (key.to_string(), v))).boxed()
}

/// When hostile, now and then a field the API does not have (or has already: a duplicate),
/// holding what breaks a parse of the whole body as a `serde_json::Value`.
fn unknown_field(g: Gen, keys: &'static [&'static str]) -> BoxedStrategy<Option<(String, String)>> {
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
    let basics = (
        name,
        command,
        field("gpus", int_text(g, 1..4, &["0", "4096", "4097", "4294967296", "-1", "1.5", "null", "\"2\""]), 0.5),
        field("estimate_s", seconds_text(g), 0.6),
        field("depends_on", depends_on_text(i, g), 0.5),
        field("not_before_s", seconds_text(g), 0.1),
        field("not_after_s", seconds_text(g), 0.1),
    );
    let (checkpoint_s, restart_overhead_s) = if g.open { (0.15, 0.05) } else { (0.0, 0.0) };
    let options = (
        field("checkpoint_s", seconds_text(g), checkpoint_s),
        field("restart_overhead_s", seconds_text(g), restart_overhead_s),
        field("gpu_milli", int_text(g, 1..1000, &["0", "1000", "65535", "65536", "-5", "500.5"]), 0.1),
        field("gpus_per_node", int_text(g, 1..3, &["0", "3", "4294967295", "-1"]), 0.05),
        field("dataset", one_of(g, &["\"imagenet\""], &["\"c4\""]), 0.08),
        field("gpu_type", one_of(g, &["\"A100\"", "\"V100\""], &["\"H100\""]), 0.08),
        field(
            "speeds",
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
            ),
            0.05,
        ),
        field("single_node", one_of(g, &["true", "false"], &["1", "null"]), 0.05),
        unknown_field(g, &["gpu_mili", "extra", "__proto__", "name", "command"]),
    );
    (basics, options)
        .prop_map(|((name, command, a, b, c, d, e), (f, g, h, i, j, k, l, m, n))| {
            let mut fields = vec![("name".to_string(), name), ("command".to_string(), command)];
            fields.extend([a, b, c, d, e, f, g, h, i, j, k, l, m, n].into_iter().flatten());
            object(&fields)
        })
        .boxed()
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

/// Agents' bodies: their fields plain or hostile, value by value.
const HOSTILE: Gen = Gen { open: false, hostile: true };

/// Job `index`'s JSON text, plain or hostile.
fn any_job_text(index: usize) -> BoxedStrategy<String> {
    Gen::any(all_classes()).prop_flat_map(move |g| job_text(index, g)).boxed()
}

// ------------------------------------------------------------------------------------------
// Byte-level damage

/// What damage inserts: JSON's structural bytes, numbers and strings that parsers get wrong,
/// fields of the issue's reproducers.
const TOKENS: &[&str] = &[
    "1e400",
    "-0",
    r#""\ud800""#,
    "null",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "\"",
    "\\",
    "0",
    "9",
    "e",
    "-",
    ".",
    "true",
    " ",
    "\u{0}",
    "\u{feff}",
    "\"x\":1,",
    r#""depends_on":["t0:data=30"],"#,
    r#""depends_on":["t0:checkpoint=1"],"#,
    r#""not_after_s":1000000000000,"#,
    r#""not_before_s":1e12,"#,
    r#""estimate_s":0.0004,"#,
    r#""gpus":0,"#,
    r#""name":"n1","#,
];

/// The tokens, those of the open defects of fuzz_findings.rs only with SCHEDLAB_FUZZ_ALL.
fn tokens() -> Vec<&'static str> {
    TOKENS.iter().copied().filter(|t| all_classes() || !t.contains("restart")).collect()
}

#[derive(Debug, Clone)]
enum Damage {
    Set(usize, u8),
    Delete(usize, usize),
    Insert(usize, &'static str),
    Byte(usize, u8),
    Duplicate(usize, usize),
    Nest(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    let byte = prop_oneof![prop::sample::select(b"{}[],:\"\\0123456789.-eE +tfn".to_vec()), any::<u8>()];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Damage::Set(i, b)),
        (any::<usize>(), 1usize..8).prop_map(|(i, n)| Damage::Delete(i, n)),
        (any::<usize>(), prop::sample::select(tokens())).prop_map(|(i, t)| Damage::Insert(i, t)),
        (any::<usize>(), byte).prop_map(|(i, b)| Damage::Byte(i, b)),
        (any::<usize>(), 1usize..24).prop_map(|(i, n)| Damage::Duplicate(i, n)),
        any::<usize>().prop_map(Damage::Nest),
    ]
}

/// None now and then (the body as it is), one or two mostly, up to six.
fn damages() -> impl Strategy<Value = Vec<Damage>> {
    prop_oneof![1 => Just(0usize), 4 => 1usize..3, 1 => 3usize..7].prop_flat_map(|n| prop::collection::vec(damage(), n))
}

fn damaged(base: &[u8], damages: &[Damage]) -> Vec<u8> {
    let mut bytes = base.to_vec();
    for d in damages {
        let len = bytes.len();
        match *d {
            Damage::Set(i, b) if len > 0 => bytes[i % len] = b,
            Damage::Delete(i, n) if len > 0 => {
                let at = i % len;
                bytes.drain(at..(at + n).min(len));
            }
            Damage::Insert(i, token) => {
                let at = i % (len + 1);
                bytes.splice(at..at, token.bytes());
            }
            Damage::Byte(i, b) => bytes.insert(i % (len + 1), b),
            Damage::Duplicate(i, n) if len > 0 => {
                let at = i % len;
                let span = bytes[at..(at + n).min(len)].to_vec();
                bytes.splice(at..at, span);
            }
            Damage::Nest(i) => {
                let at = i % (len + 1);
                bytes.splice(at..at, format!("\"deep\":{},", nested(200)).into_bytes());
            }
            _ => {}
        }
    }
    bytes
}

// ------------------------------------------------------------------------------------------
// The corpus

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus")
}

/// The corpus files whose names start with `prefix` (`job-`, `register-`, `heartbeat-`), by
/// name: (name, bytes).
fn corpus(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir())
        .expect("tests/fuzz_corpus")
        .map(|e| e.expect("a corpus entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).expect("a corpus file")))
        .collect();
    files.sort();
    files
}

/// Job bodies to damage: the corpus's (those with checkpoints or restart overheads only with
/// SCHEDLAB_FUZZ_ALL).
fn job_seeds() -> Vec<Vec<u8>> {
    let all = all_classes();
    corpus("job-")
        .into_iter()
        .map(|(_, bytes)| bytes)
        .filter(|b| all || !["checkpoint_s", "restart_overhead"].iter().any(|f| String::from_utf8_lossy(b).contains(f)))
        .collect()
}

// ------------------------------------------------------------------------------------------
// (a) Job bodies through the driver

type Line = (u64, &'static str, u32, Option<u32>, Vec<u32>);

fn line(d: &DecisionRecord) -> Line {
    (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
}

const POLICIES: &[&str] = &[
    "fifo",
    "priority",
    "sjf[duration=estimate]",
    "easy-backfill[duration=estimate]",
    "fair-share",
    "tiresias",
    "fifo[placement=local]",
];

const QUEUES: &str = "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\n\
                      team,,2,,0,1,false\n\
                      other,,,,0,1,false\n";

/// The session's settings, chosen by `choice`: the policy, queues or none, datasets or none,
/// an hour or 2 s of assumed work (checkpoint intervals with SCHEDLAB_FUZZ_ALL).
fn driver_config(choice: u64) -> DriverConfig {
    let mut mix = Mix(choice);
    let mut config = DriverConfig {
        seed: choice % 7,
        heartbeat_ms: 1000,
        ..DriverConfig::new("2x2:A100,2x2:V100", mix.pick(POLICIES))
    };
    if mix.chance(50) {
        config.queues = QUEUES.into();
    }
    if mix.chance(50) {
        config.datasets = "dataset,nodes,transfer_s\nimagenet,1,5\n".into();
    }
    if mix.chance(30) {
        config.default_work_ms = 2000;
    }
    if all_classes() && mix.chance(20) {
        config.restart_overhead_ms = 200;
    }
    if all_classes() && mix.chance(30) {
        config.checkpoint_ms = 1500;
    }
    config
}

/// What the coordinator checks before it journals a submission (`Coordinator::submit`): the
/// driver's checks, a queue only where queues exist, a job that fits the cluster.
fn admit(d: &Driver, job: &JobRequest) -> Result<(), schedlab_live::wire::Refusal> {
    use schedlab_live::coordinator::admission::{check_queue, never_fits};
    d.check_submission(job)?;
    check_queue(job, !d.config().queues.trim().is_empty())?;
    let spec = job.to_spec(SimTime::ZERO, SimDuration(1))?;
    match never_fits(d.cluster(), &spec) {
        Some(reason) => Err(schedlab_live::wire::Refusal::bad(format!("job `{}`: {reason}", job.name))),
        None => Ok(()),
    }
}

/// The job without what the open defects of fuzz_findings.rs need (without
/// SCHEDLAB_FUZZ_ALL): no checkpoint intervals, no restart overheads, no speeds, no datasets
/// where the cluster places them (`datasets`). None
/// when nothing was left out. What is left out is parsed and checked all the same (the
/// refusals of the whole job come first).
fn without_open_defects(job: &JobRequest, datasets: bool) -> Option<JobRequest> {
    let mut job = job.clone();
    let mut changed = false;
    for t in &mut job.tasks {
        changed |= t.checkpoint_s.take().is_some();
        changed |= t.restart_overhead_s.take().is_some();
        changed |= t.speeds.take().is_some();
        if datasets {
            changed |= t.dataset.take().is_some();
        }
    }
    changed.then_some(job)
}

/// A session of the driver fed `bodies`, each followed by random inputs drawn from `follow`.
struct Session {
    d: Driver,
    journal: Vec<Batch>,
    now: u64,
    mix: Mix,
    /// Nodes that do not beat (declared dead 3 s after their last beat).
    silent: Vec<bool>,
    submitted: u32,
}

impl Session {
    fn new(config: DriverConfig, follow: u64) -> Session {
        let d = Driver::new(config).expect("the fuzz configurations are valid");
        let start = d.start_batch();
        let nodes = d.cluster().nodes().len();
        let mut s =
            Session { d, journal: Vec::new(), now: 0, mix: Mix(follow), silent: vec![false; nodes], submitted: 0 };
        s.apply(start);
        s
    }

    fn apply(&mut self, batch: Batch) {
        let ticks = self.d.apply(batch.clone()).expect("batches in time order");
        self.now = batch.time_ms;
        self.journal.extend(ticks.into_iter().chain([batch]));
    }

    /// The time of the next batch: mostly a second or less later, sometimes minutes (nodes
    /// silent that long are declared dead), now and then days (past windows and deadlines).
    fn next_time(&mut self) -> u64 {
        let gap = match self.mix.below(100) {
            0 => 3_600_000 + self.mix.below(30 * 86_400_000),
            1..=5 => 5_000 + self.mix.below(60_000),
            _ => 1 + self.mix.below(1_500),
        };
        self.now + gap
    }

    /// One body as the API takes it: refused with a reason, or journaled and applied.
    fn submit(&mut self, body: &[u8]) -> Result<(), TestCaseError> {
        let job = match serde_json::from_slice::<JobRequest>(body) {
            Ok(job) => job,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                seen("parse error");
                return Ok(());
            }
        };
        if let Err(r) = admit(&self.d, &job) {
            seen(format!("refused {}", r.status));
            prop_assert!(matches!(r.status, 400 | 409), "refused with {}: {}", r.status, r.reason);
            prop_assert!(!r.reason.trim().is_empty(), "refused without a reason");
            return Ok(());
        }
        let datasets = !self.d.config().datasets.trim().is_empty();
        let job = match (all_classes(), without_open_defects(&job, datasets)) {
            (false, Some(plain)) => {
                // Left out as the open defects are; what remains must be accepted as well.
                if admit(&self.d, &plain).is_err() {
                    return Ok(());
                }
                plain
            }
            _ => job,
        };
        let time_ms = self.next_time();
        self.apply(Batch { time_ms, inputs: vec![Input::submit(job)] });
        self.submitted += 1;
        seen("accepted");
        Ok(())
    }

    /// One batch of what agents and users report: beats (from nodes not silent), exits of
    /// running attempts with any exit code, GPU failures and repairs, agent restarts,
    /// cancels, and now and then an input for no task or node there is.
    fn follow(&mut self) {
        let nodes = self.silent.len() as u32;
        let mut inputs = Vec::new();
        if self.mix.chance(4) {
            let n = self.mix.below(u64::from(nodes)) as usize;
            self.silent[n] = !self.silent[n];
        }
        for node in 0..nodes {
            if !self.silent[node as usize] && self.mix.chance(90) {
                inputs.push(Input::Beat { node });
            }
        }
        let running: Vec<_> = self.d.running_tasks().collect();
        for task in running {
            let state = self.d.controller().task(task);
            if state.stalled_since.is_some() || !self.mix.chance(30) {
                continue;
            }
            debug_assert_eq!(state.status, TaskStatus::Running);
            let code = if self.mix.chance(80) {
                0
            } else {
                self.mix.pick(&[1, 3, 137, 255, 256, -1, i32::MIN, i32::MAX, 127])
            };
            inputs.push(Input::Exit { task: task.0, attempt: state.attempt, code });
        }
        // GPU failures and repairs, agent restarts: on nodes and slots there are, mostly.
        let slot = |mix: &mut Mix| mix.pick(&[0, 1, 1, 0, 7, u32::MAX]);
        let node = |mix: &mut Mix| if mix.chance(95) { mix.below(u64::from(nodes)) as u32 } else { 99 };
        if self.mix.chance(3) {
            let (node, slot) = (node(&mut self.mix), slot(&mut self.mix));
            inputs.push(Input::GpuFail { node, slot, what: "xid 79".into() });
        }
        if self.mix.chance(4) {
            let (node, slot) = (node(&mut self.mix), slot(&mut self.mix));
            inputs.push(Input::GpuRepair { node, slot });
        }
        if self.mix.chance(2) {
            inputs.push(Input::NodeRestarted { node: node(&mut self.mix) });
        }
        if self.mix.chance(4) {
            let job =
                if self.mix.chance(90) { self.mix.below(u64::from(self.submitted.max(1))) as u32 } else { u32::MAX };
            inputs.push(Input::Cancel { job });
        }
        if self.mix.chance(2) {
            inputs.push(Input::Exit { task: u32::MAX, attempt: 1, code: 0 });
        }
        if inputs.is_empty() {
            inputs.push(Input::Tick);
        }
        let time_ms = self.next_time();
        self.apply(Batch { time_ms, inputs });
    }

    /// The session exports, replays to the same decisions, and its journal rebuilds it.
    fn check(&self) -> Result<(), TestCaseError> {
        let d = &self.d;
        let trace = d.trace();
        prop_assert!(trace.is_ok(), "the session does not export: {}", trace.err().unwrap_or_default());
        let replay = d.replay_in_simulator(&policies::Registry::builtin());
        let replay = match replay {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("the session's trace does not replay: {e}"))),
        };
        let live: Vec<Line> = d.decisions().iter().map(line).collect();
        let sim: Vec<Line> = replay.decisions.iter().map(line).filter(|l| l.0 <= d.now().as_ms()).collect();
        if live != sim {
            let at = live.iter().zip(&sim).position(|(a, b)| a != b).unwrap_or(live.len().min(sim.len()));
            let around = |v: &[Line]| v[at.saturating_sub(2)..(at + 3).min(v.len())].to_vec();
            return Err(TestCaseError::fail(format!(
                "the replay differs at decision {at} (live {}, replay {}): live {:?}, replay {:?}",
                live.len(),
                sim.len(),
                around(&live),
                around(&sim)
            )));
        }
        let rebuilt = Driver::replay(d.config().clone(), self.journal.clone());
        let rebuilt = rebuilt.map_err(|e| TestCaseError::fail(format!("the journal does not replay: {e}")))?;
        prop_assert_eq!(rebuilt.controller().digest_hex(), d.controller().digest_hex(), "the journal rebuilds it");
        Ok(())
    }
}

/// `bodies` through a session of settings `config_choice`, each followed by 0 to 5 batches of
/// random inputs, then 10 more; then the session's checks.
fn check_bodies(config_choice: u64, follow: u64, bodies: &[Body]) -> Result<(), TestCaseError> {
    let mut s = Session::new(driver_config(config_choice), follow);
    for body in bodies {
        s.submit(&body.0)?;
        for _ in 0..s.mix.below(6) {
            s.follow();
        }
    }
    for _ in 0..10 {
        s.follow();
    }
    s.check()
}

fn job_bodies() -> impl Strategy<Value = Vec<Body>> {
    (1usize..4)
        .prop_flat_map(move |n| (0..n).map(|i| any_job_text(i).prop_map(|t| Body(t.into_bytes()))).collect::<Vec<_>>())
}

#[test]
fn random_job_bodies_are_refused_with_a_reason_or_run_and_replay() {
    let strategy = (any::<u64>(), any::<u64>(), job_bodies());
    campaign("job_bodies", cases(512, 1), strategy, |(config, follow, bodies)| check_bodies(config, follow, &bodies));
}

#[test]
fn damaged_job_bodies_are_refused_with_a_reason_or_run_and_replay() {
    let seeds = job_seeds();
    assert!(!seeds.is_empty(), "the corpus has job bodies");
    let base = prop_oneof![
        3 => prop::sample::select(seeds).prop_map(Body),
        2 => any_job_text(0).prop_map(|t| Body(t.into_bytes())),
    ];
    let body = (base, damages()).prop_map(|(b, ds)| Body(damaged(&b.0, &ds)));
    let strategy = (any::<u64>(), any::<u64>(), prop::collection::vec(body, 1..3));
    campaign("damaged_job_bodies", cases(512, 1), strategy, |(config, follow, bodies)| {
        check_bodies(config, follow, &bodies)
    });
}

// ------------------------------------------------------------------------------------------
// (b) Agent bodies

/// Parsed as a `T`: if it parses, what it writes parses back to the same value.
fn round_trip<T>(bytes: &[u8]) -> Result<(), TestCaseError>
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
{
    match serde_json::from_slice::<T>(bytes) {
        Err(e) => prop_assert!(!e.to_string().is_empty()),
        Ok(value) => {
            let text = serde_json::to_string(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let again: T = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
            prop_assert_eq!(again, value);
        }
    }
    Ok(())
}

/// Every body an agent sends or is answered with.
fn parse_as_every_agent_type(bytes: &[u8]) -> Result<(), TestCaseError> {
    round_trip::<RegisterRequest>(bytes)?;
    round_trip::<HeartbeatRequest>(bytes)?;
    round_trip::<ExitReport>(bytes)?;
    round_trip::<HealthEvent>(bytes)?;
    round_trip::<GpuInfo>(bytes)?;
    round_trip::<GpuProcess>(bytes)?;
    round_trip::<RegisterReply>(bytes)?;
    round_trip::<HeartbeatReply>(bytes)?;
    round_trip::<AssignmentsReply>(bytes)?;
    round_trip::<Assignment>(bytes)?;
    round_trip::<Vec<ExitReport>>(bytes)
}

fn u64_text() -> BoxedStrategy<String> {
    prop_oneof![
        12 => (0u64..8).prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => prop::sample::select(HOSTILE_NUMBERS).prop_map(str::to_string),
    ]
    .boxed()
}

fn uuid_text() -> BoxedStrategy<String> {
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
fn agent_name_text() -> BoxedStrategy<String> {
    prop_oneof![6 => prop::sample::select(&["n0", "n1"][..]).prop_map(quote), 1 => name_text(HOSTILE)].boxed()
}

fn register_text(name: BoxedStrategy<String>) -> BoxedStrategy<String> {
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
fn heartbeat_text(generation: Option<u64>, name: BoxedStrategy<String>) -> BoxedStrategy<String> {
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

fn agent_body_text() -> BoxedStrategy<String> {
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

#[test]
fn random_agent_bodies_parse_or_are_refused_and_write_back_to_themselves() {
    let body = agent_body_text().prop_map(|t| Body(t.into_bytes()));
    campaign("agent_bodies", cases(512, 1), body, |body| parse_as_every_agent_type(&body.0));
}

#[test]
fn damaged_agent_bodies_parse_or_are_refused_and_write_back_to_themselves() {
    let mut seeds: Vec<Vec<u8>> = corpus("register-").into_iter().chain(corpus("heartbeat-")).map(|(_, b)| b).collect();
    seeds.extend(corpus("reply-").into_iter().map(|(_, b)| b));
    assert!(!seeds.is_empty(), "the corpus has agent bodies");
    let base = prop_oneof![
        3 => prop::sample::select(seeds).prop_map(Body),
        2 => agent_body_text().prop_map(|t| Body(t.into_bytes())),
    ];
    let body = (base, damages()).prop_map(|(b, ds)| Body(damaged(&b.0, &ds)));
    campaign("damaged_agent_bodies", cases(512, 1), body, |body| parse_as_every_agent_type(&body.0));
}

// ------------------------------------------------------------------------------------------
// (c) The coordinator over HTTP

/// A coordinator serving in-process on loopback, on a state directory of its own.
struct Served {
    dir: PathBuf,
    addr: String,
    user: String,
    /// n0's and n1's tokens.
    agents: [String; 2],
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

fn serve_options(dir: &Path) -> schedlab_live::coordinator::ServeOptions {
    use schedlab_live::coordinator::settings::Given;
    schedlab_live::coordinator::ServeOptions {
        state_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        settings: Given::all(&DriverConfig {
            heartbeat_ms: 1000,
            queues: QUEUES.into(),
            ..DriverConfig::new("2x2:SIM", "fifo")
        }),
        journal_every: Duration::from_secs(3600),
        quiet: true,
        app_xids: None,
        tls: None,
        http: schedlab_live::net::http::Limits::default(),
        registry: policies::Registry::builtin(),
    }
}

impl Served {
    fn start(case: u64) -> Served {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("schedlab-fuzz-api-{}-{n}-{case:x}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let options = serve_options(&dir);
        let theirs = stop.clone();
        let thread = std::thread::spawn(move || schedlab_live::coordinator::serve(options, theirs));
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = loop {
            if let Ok(text) = std::fs::read_to_string(dir.join("addr"))
                && text.ends_with('\n')
            {
                break text.trim().to_string();
            }
            assert!(!thread.is_finished(), "the coordinator did not start: {:?}", thread.join());
            assert!(Instant::now() < deadline, "the coordinator did not start in 30 s");
            std::thread::sleep(Duration::from_millis(5));
        };
        let user = schedlab_live::coordinator::store::load_or_create_token(&dir).unwrap();
        let agents = ["n0", "n1"].map(|a| schedlab_live::net::auth::agent_token(&dir, a).unwrap());
        Served { dir, addr, user, agents, stop, thread: Some(thread) }
    }

    /// One request on a connection of its own: the status, and the body.
    fn call(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let mut stream = TcpStream::connect(&self.addr).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: fuzz\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body)).map_err(|e| format!("write: {e}"))?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(|e| format!("read: {e}"))?;
        let text = String::from_utf8_lossy(&answer);
        let status = text
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no status line in {:?}", text.chars().take(200).collect::<String>()))?;
        let body = answer.windows(4).position(|w| w == b"\r\n\r\n").map_or(Vec::new(), |at| answer[at + 4..].to_vec());
        Ok((status, body))
    }

    fn alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops it (as SIGTERM would): how `run` ended.
    fn stop(&mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err("the coordinator's thread panicked".into()),
            None => Ok(()),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Who sends a request.
#[derive(Debug, Clone, Copy)]
enum Who {
    User,
    /// Agent n0 or n1.
    Agent(usize),
    /// A token no one was given, an agent's with another name, or none.
    Forged(u8),
}

#[derive(Debug, Clone)]
enum Request {
    Submit(Body),
    Get(&'static str),
    Job(String),
    Cancel(String),
    ReturnGpu(String),
    Register(Who, Body),
    Heartbeat(Who, Body),
    Assignments(Who, String, String),
    Raw(Who, String, String, Body),
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        6 => (0usize..2).prop_map(Who::Agent),
        1 => Just(Who::User),
        1 => (0u8..3).prop_map(Who::Forged),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let job_body = prop_oneof![
        4 => (0usize..12).prop_flat_map(any_job_text).prop_map(|t| Body(t.into_bytes())),
        2 => (prop::sample::select(job_seeds()), prop::collection::vec(damage(), 0..4))
            .prop_map(|(b, ds)| Body(damaged(&b, &ds))),
    ];
    let key = prop_oneof![
        (0u32..12).prop_map(|n| n.to_string()),
        (0u32..12).prop_map(|n| format!("j{n}")),
        prop::sample::select(&["..", "%2e%2e", "j0%00", "18446744073709551616", "", "-1"][..]).prop_map(str::to_string),
    ];
    prop_oneof![
        6 => job_body.prop_map(Request::Submit),
        2 => prop::sample::select(&["/v1/jobs", "/v1/cluster", "/v1/decisions", "/metrics", "/v1/jobs?after=3", "/v1/jobs?after=18446744073709551616"][..])
            .prop_map(Request::Get),
        1 => key.clone().prop_map(Request::Job),
        2 => key.prop_map(Request::Cancel),
        1 => uuid_text().prop_map(|u| Request::ReturnGpu(u.trim_matches('"').to_string())),
        2 => who().prop_flat_map(|w| (Just(w), agent_body(register_text(own_name(w)))))
            .prop_map(|(w, b)| Request::Register(w, b)),
        8 => who().prop_flat_map(|w| (Just(w), agent_body(heartbeat_text(Some(1), own_name(w)))))
            .prop_map(|(w, b)| Request::Heartbeat(w, b)),
        3 => (who(), prop::sample::select(&["n0", "n1", "n2", "..", ""][..]), prop::sample::select(&["1", "0", "2", "18446744073709551616", "x", ""][..]))
            .prop_map(|(w, n, g)| Request::Assignments(w, n.to_string(), g.to_string())),
        1 => (who(), prop::sample::select(&["GET", "POST", "PUT", "DELETE", "get"][..]), prop::sample::select(&[
                "/", "/v1", "/v1/jobs/", "//v1/jobs", "/v1/jobs/0/cancel/x", "/v1/agents/n0/assignments/x",
                "/v1/agents/register?x=1", "/v1/%76%31/jobs", "/v1/jobs/../cluster", "*", "/v1/jobs#x",
            ][..]), prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(w, m, p, b)| Request::Raw(w, m.to_string(), p.to_string(), Body(b))),
    ]
}

/// The name an agent's body gives: its own mostly, when an agent's token sends it.
fn own_name(who: Who) -> BoxedStrategy<String> {
    match who {
        Who::Agent(a) => prop_oneof![4 => Just(quote(["n0", "n1"][a])), 1 => agent_name_text()].boxed(),
        _ => agent_name_text(),
    }
}

/// An agent's body as generated, or a corpus one damaged.
fn agent_body(text: BoxedStrategy<String>) -> BoxedStrategy<Body> {
    prop_oneof![
        4 => text.prop_map(|t| Body(t.into_bytes())),
        1 => (text_seed_bodies(), prop::collection::vec(damage(), 1..4)).prop_map(|(b, ds)| Body(damaged(&b, &ds))),
    ]
    .boxed()
}

/// The agent bodies of the corpus (registrations and heartbeats).
fn text_seed_bodies() -> BoxedStrategy<Vec<u8>> {
    let seeds: Vec<Vec<u8>> = corpus("register-").into_iter().chain(corpus("heartbeat-")).map(|(_, b)| b).collect();
    prop::sample::select(seeds).boxed()
}

/// The name a body claims, as the typed parse the handler uses reads it.
fn claimed_name(body: &[u8], heartbeat: bool) -> Option<String> {
    if heartbeat {
        serde_json::from_slice::<HeartbeatRequest>(body).ok().map(|h| h.name)
    } else {
        serde_json::from_slice::<RegisterRequest>(body).ok().map(|r| r.name)
    }
}

impl Served {
    fn token(&self, who: Who) -> Option<String> {
        match who {
            Who::User => Some(self.user.clone()),
            Who::Agent(a) => Some(self.agents[a].clone()),
            Who::Forged(0) => Some(format!("agent.n0.{}", "0".repeat(64))),
            Who::Forged(1) => Some(self.agents[0].replacen("agent.n0.", "agent.n1.", 1)),
            Who::Forged(_) => None,
        }
    }

    /// Sends `request`; checks its answer: a status below 500, and never a 2xx for an agent's
    /// token acting as another agent, a user's token acting as an agent or an agent's as a
    /// user, or a token no one was given.
    fn send(&self, request: &Request) -> Result<(), TestCaseError> {
        let who_user = Who::User;
        let (who, method, path, body, claimed): (Who, &str, String, &[u8], Option<String>) = match request {
            Request::Submit(b) => (who_user, "POST", "/v1/jobs".into(), &b.0, None),
            Request::Get(p) => (who_user, "GET", (*p).into(), b"", None),
            Request::Job(k) => (who_user, "GET", format!("/v1/jobs/{k}"), b"", None),
            Request::Cancel(k) => (who_user, "POST", format!("/v1/jobs/{k}/cancel"), b"", None),
            Request::ReturnGpu(u) => (who_user, "POST", format!("/v1/gpus/{}/return", url_segment(u)), b"", None),
            Request::Register(w, b) => (*w, "POST", "/v1/agents/register".into(), &b.0, claimed_name(&b.0, false)),
            Request::Heartbeat(w, b) => (*w, "POST", "/v1/agents/heartbeat".into(), &b.0, claimed_name(&b.0, true)),
            Request::Assignments(w, n, g) => {
                (*w, "GET", format!("/v1/agents/{n}/assignments?generation={g}"), b"", Some(n.clone()))
            }
            Request::Raw(w, m, p, b) => (*w, m.as_str(), p.clone(), &b.0, None),
        };
        let (status, answer) = self
            .call(method, &path, self.token(who).as_deref(), body)
            .map_err(|e| TestCaseError::fail(format!("{method} {path}: no answer: {e}")))?;
        let shown = String::from_utf8_lossy(&answer).chars().take(300).collect::<String>();
        seen(format!("HTTP {status}"));
        prop_assert!(status < 500, "{method} {path}: {status} {shown}");
        let ok = (200..300).contains(&status);
        let agent_route = path.starts_with("/v1/agents/");
        match who {
            Who::Agent(a) if agent_route => {
                if let Some(claimed) = &claimed {
                    let mine = ["n0", "n1"][a];
                    prop_assert!(
                        !ok || claimed == mine,
                        "{method} {path}: agent {mine}'s token acted for `{claimed}` ({status} {shown})"
                    );
                }
            }
            Who::Agent(_) => prop_assert!(!ok, "{method} {path}: an agent's token acted as a user ({status})"),
            Who::User if agent_route => {
                prop_assert!(!ok, "{method} {path}: the user token acted as an agent ({status})")
            }
            Who::User => {}
            Who::Forged(_) => prop_assert!(!ok, "{method} {path}: a forged token was taken ({status})"),
        }
        if !ok && status != 404 && status != 405 && !answer.is_empty() && method != "HEAD" {
            // A refusal says why (the 401s of the front have no body).
            prop_assert!(status == 401 || !shown.trim().is_empty(), "{method} {path}: {status} without a reason");
        }
        Ok(())
    }
}

fn url_segment(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }
        })
        .collect()
}

/// n0 and n1 register (two GPUs each); `requests` follow; then the checks of a session.
fn check_http_session(case: u64, requests: &[Request]) -> Result<(), TestCaseError> {
    let mut served = Served::start(case);
    for (a, name) in ["n0", "n1"].into_iter().enumerate() {
        let gpus: Vec<String> = (0..2)
            .map(|g| {
                format!(
                    r#"{{"index":{g},"uuid":"GPU-{name}-{g}","name":"SIM","memory_total_mib":81920,"memory_used_mib":0,"utilisation_pct":0,"temperature_c":30}}"#
                )
            })
            .collect();
        let body = format!(r#"{{"name":"{name}","addr":"127.0.0.1","gpus":[{}],"fresh":true}}"#, gpus.join(","));
        let (status, answer) =
            served.call("POST", "/v1/agents/register", Some(&served.agents[a]), body.as_bytes()).unwrap();
        prop_assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    }
    for request in requests {
        served.send(request)?;
        prop_assert!(served.alive(), "the coordinator stopped after {:?}", request);
    }
    let (status, _) = served
        .call("GET", "/v1/cluster", Some(&served.user.clone()), b"")
        .map_err(|e| TestCaseError::fail(format!("GET /v1/cluster after the session: {e}")))?;
    prop_assert_eq!(status, 200, "GET /v1/cluster after the session");
    let stopped = served.stop();
    prop_assert!(stopped.is_ok(), "the coordinator ended with {:?}", stopped);
    // The state directory opens again: its journal replays, exports and replays in the
    // simulator to the same decisions.
    let reopened = schedlab_live::coordinator::Coordinator::open(serve_options(&served.dir));
    let c = reopened.map_err(|e| TestCaseError::fail(format!("the state directory does not open again: {e}")))?;
    let d = c.driver();
    let trace = d.trace();
    prop_assert!(trace.is_ok(), "the journal does not export: {}", trace.err().unwrap_or_default());
    let replay = d
        .replay_in_simulator(&policies::Registry::builtin())
        .map_err(|e| TestCaseError::fail(format!("the journal's trace does not replay: {e}")))?;
    let live: Vec<Line> = d.decisions().iter().map(line).collect();
    let sim: Vec<Line> = replay.decisions.iter().map(line).filter(|l| l.0 <= d.now().as_ms()).collect();
    prop_assert_eq!(live, sim, "the journal's replay in the simulator");
    Ok(())
}

#[test]
fn random_request_sequences_never_stop_the_coordinator_nor_let_an_agent_act_for_another() {
    let strategy = (any::<u64>(), prop::collection::vec(request(), 10..40));
    campaign("http_sequences", cases(12, 32), strategy, |(case, requests)| check_http_session(case, &requests));
}

// ------------------------------------------------------------------------------------------
// (d) The corpus, every run

#[test]
fn the_committed_corpus_goes_through_the_same_checks() {
    let jobs = corpus("job-");
    let agents: Vec<(String, Vec<u8>)> = ["register-", "heartbeat-", "reply-"].into_iter().flat_map(corpus).collect();
    assert!(
        jobs.len() >= 8 && agents.len() >= 4,
        "the corpus: {} job bodies, {} agent bodies",
        jobs.len(),
        agents.len()
    );
    let mut failures = Vec::new();
    for (name, bytes) in &jobs {
        // Each with a few follow-up streams, under a few settings.
        for choice in 0..4u64 {
            let follow = name.bytes().fold(choice, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            if let Err(e) = check_bodies(choice, follow, &[Body(bytes.clone())]) {
                failures.push(format!("{name} (settings {choice}): {e}"));
                break;
            }
        }
    }
    for (name, bytes) in &agents {
        if let Err(e) = parse_as_every_agent_type(bytes) {
            failures.push(format!("{name}: {e}"));
        }
    }
    // The agent bodies through a coordinator, each sent with n0's token.
    let heartbeats: Vec<Request> = agents
        .iter()
        .filter(|(name, _)| !name.starts_with("reply-"))
        .map(|(name, bytes)| {
            let body = Body(bytes.clone());
            if name.starts_with("register-") {
                Request::Register(Who::Agent(0), body)
            } else {
                Request::Heartbeat(Who::Agent(0), body)
            }
        })
        .chain(job_seeds().into_iter().map(|bytes| Request::Submit(Body(bytes))))
        .collect();
    if let Err(e) = check_http_session(0, &heartbeats) {
        failures.push(format!("through the coordinator: {e}"));
    }
    assert!(failures.is_empty(), "{} corpus failures:\n{}", failures.len(), failures.join("\n"));
}
