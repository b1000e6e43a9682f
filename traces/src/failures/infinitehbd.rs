//! Importer for StepFun's InfiniteHBD fault trace (`fault_trace.json`, SIGCOMM 2025): one JSON
//! array of `{node_id, event_time, event_type, fault_type: {Level, Class, Desc}}` objects,
//! `event_time` in days from the trace origin, `event_type` `fault_start` or `fault_end`.
//!
//! - **Pairing.** A `fault_end` closes the oldest open `fault_start` of the same node and the
//!   same fault type (Level, Class and Desc), in file order (FIFO). A node can have faults of
//!   different types open at once. A `fault_end` with nothing open to close is an error; a
//!   `fault_start` never closed is a fault without a repair (none in the released file).
//! - **Time.** Days become milliseconds exactly: the JSON number's text is read as a decimal
//!   (no `f64` on the way), multiplied by 86,400,000 and rounded half away from zero at the
//!   millisecond, like every other trace time. With the file's 4 decimals (units of 8.64 s)
//!   no rounding ever happens. The span runs from the origin (day 0; the first event is at day
//!   3.8955, the README's "relative to the first event" notwithstanding) to the last event.
//! - **Population.** 400 servers were sampled; the 231 with a fault appear (numbered 0.. in
//!   order of first appearance), the rest never do. The population is a parameter (default
//!   400). GPUs per node are not given; 8 is assumed. Faults are node-level: a fault makes the
//!   server unavailable, whatever its class.
//! - **Classes** are `Level/Class`, e.g. `Hardware Failure/GPU`. Faults whose Class is in
//!   [`InfiniteHbdOptions::exclude_classes`] are dropped after pairing. By default that is the
//!   operational events — `Stress Test Failure` (97), `Test` (2), `Change` (4): a server fails
//!   a stress test or is taken offline for a change while out of production, so replaying them
//!   would kill jobs that were never exposed; 481 of the 584 faults remain, on 203 nodes.
//!   Pass an empty list to keep everything.
//! - Other keys in the objects are ignored (a foreign format); missing or mistyped keys are
//!   errors naming the line of the value (or of the object).

use super::trace::{FailureTrace, Fault};
use crate::error::TraceError;
use crate::timeparse::MAX_SECONDS;
use serde_json::value::RawValue;
use sim::{SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Servers in the released sample.
pub const INFINITEHBD_NODES: u32 = 400;
/// GPUs per server, assumed (the trace does not say).
pub const INFINITEHBD_GPUS_PER_NODE: u32 = 8;
/// The Classes of operational events, dropped by default.
pub const OPERATIONAL_CLASSES: [&str; 3] = ["Stress Test Failure", "Test", "Change"];

const MS_PER_DAY: u128 = 86_400_000;

/// How to read the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfiniteHbdOptions {
    /// Servers in the population, those that never fault included (400).
    pub nodes: u32,
    /// Classes (the `Class` of `fault_type`, exactly) whose faults are left out.
    pub exclude_classes: Vec<String>,
}

impl Default for InfiniteHbdOptions {
    fn default() -> InfiniteHbdOptions {
        InfiniteHbdOptions {
            nodes: INFINITEHBD_NODES,
            exclude_classes: OPERATIONAL_CLASSES.iter().map(|c| (*c).to_owned()).collect(),
        }
    }
}

impl InfiniteHbdOptions {
    /// Every fault, operational ones included.
    pub fn keep_all() -> InfiniteHbdOptions {
        InfiniteHbdOptions { exclude_classes: Vec::new(), ..InfiniteHbdOptions::default() }
    }
}

/// Reads `fault_trace.json` at `path`.
pub fn load_infinitehbd(path: &Path, options: &InfiniteHbdOptions) -> Result<FailureTrace, TraceError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_infinitehbd(file, &name, options)
}

/// Reads an InfiniteHBD fault trace from `source`; `file` names it in errors.
pub fn read_infinitehbd<R: Read>(
    mut source: R,
    file: &str,
    options: &InfiniteHbdOptions,
) -> Result<FailureTrace, TraceError> {
    let mut bytes = Vec::new();
    source.read_to_end(&mut bytes).map_err(|e| TraceError::io(file, e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count() as u64;
        TraceError::row(file, line, "the file is not UTF-8 text")
    })?;
    let items: Vec<&RawValue> =
        serde_json::from_str(&text).map_err(|e| json_error(file, 0, "expected a JSON array of fault events", &e))?;
    let lines = LineIndex::new(&text);
    let mut reader = Reader::default();
    for item in items {
        reader.add(&lines, item, file)?;
    }
    reader.finish(file, options)
}

/// 1-based line numbers of byte offsets in the text, for values borrowed from it.
struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of each line start.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> LineIndex<'a> {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { text, starts }
    }

    /// The line where `part` (a slice of the text) begins.
    fn line_of(&self, part: &str) -> u64 {
        let offset = (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        self.starts.partition_point(|&s| s <= offset) as u64
    }
}

/// A serde_json error as a [`TraceError`] at its line (relative lines are shifted by `base`).
fn json_error(file: &str, base: u64, what: &str, e: &serde_json::Error) -> TraceError {
    let message = e.to_string();
    // serde_json appends " at line L column C"; the line goes in front instead.
    let message = message.split(" at line ").next().unwrap_or(&message).to_owned();
    if e.line() == 0 {
        return TraceError::file(file, format!("{what}: {message}"));
    }
    TraceError::row(file, base + e.line() as u64 - u64::from(base > 0), format!("{what}: {message}"))
}

/// A fault that has started and not yet ended.
struct Open {
    start_ms: u64,
    line: u64,
}

#[derive(Default)]
struct Reader {
    /// Node ids in order of first appearance.
    nodes: BTreeMap<String, u32>,
    names: Vec<String>,
    /// Open faults per (node, Level, Class, Desc), oldest first.
    open: BTreeMap<(u32, String, String, String), VecDeque<Open>>,
    faults: Vec<Fault>,
    last_ms: u64,
    events: usize,
}

impl Reader {
    fn add(&mut self, lines: &LineIndex<'_>, item: &RawValue, file: &str) -> Result<(), TraceError> {
        let line = lines.line_of(item.get());
        let object: BTreeMap<String, &RawValue> =
            serde_json::from_str(item.get()).map_err(|e| json_error(file, line, "expected an event object", &e))?;
        let field = |key: &str| {
            object.get(key).copied().ok_or_else(|| {
                TraceError::row(
                    file,
                    line,
                    format!("the event has no `{key}`; expected node_id, event_time, event_type and fault_type"),
                )
            })
        };
        let string = |raw: &RawValue, key: &str, what: &str| -> Result<String, TraceError> {
            match serde_json::from_str::<String>(raw.get()) {
                Ok(s) if !s.is_empty() => Ok(s),
                _ => Err(TraceError::field(file, lines.line_of(raw.get()), key, what, raw.get())),
            }
        };
        let node_id = string(field("node_id")?, "node_id", "a non-empty JSON string (the server's id)")?;
        let time_raw = field("event_time")?;
        let time_ms = parse_days_ms(time_raw.get()).map_err(|expected| {
            TraceError::field(file, lines.line_of(time_raw.get()), "event_time", expected, time_raw.get())
        })?;
        let kind_raw = field("event_type")?;
        let kind = string(kind_raw, "event_type", "\"fault_start\" or \"fault_end\"")?;
        let type_raw = field("fault_type")?;
        let fault_type: BTreeMap<String, &RawValue> = serde_json::from_str(type_raw.get()).map_err(|_| {
            TraceError::field(
                file,
                lines.line_of(type_raw.get()),
                "fault_type",
                "an object {Level, Class, Desc}",
                type_raw.get(),
            )
        })?;
        let part = |key: &str| -> Result<String, TraceError> {
            match fault_type.get(key) {
                Some(raw) => string(raw, &format!("fault_type.{key}"), "a non-empty JSON string"),
                None if key == "Desc" => Ok(String::new()),
                None => Err(TraceError::row(
                    file,
                    line,
                    format!("`fault_type` has no `{key}`; expected Level, Class and Desc"),
                )),
            }
        };
        let (level, class, desc) = (part("Level")?, part("Class")?, part("Desc")?);

        let next = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let node = *self.nodes.entry(node_id.clone()).or_insert(next);
        if node == next {
            self.names.push(node_id);
        }
        self.events += 1;
        self.last_ms = self.last_ms.max(time_ms);
        let key = (node, level, class, desc);
        match kind.as_str() {
            "fault_start" => self.open.entry(key).or_default().push_back(Open { start_ms: time_ms, line }),
            "fault_end" => {
                let Some(open) = self.open.get_mut(&key).and_then(VecDeque::pop_front) else {
                    return Err(TraceError::row(
                        file,
                        line,
                        "a fault_end with no open fault_start of the same node_id and fault_type before it",
                    ));
                };
                if time_ms < open.start_ms {
                    return Err(TraceError::field(
                        file,
                        lines.line_of(time_raw.get()),
                        "event_time",
                        format!("a time at or after its fault_start (line {})", open.line),
                        time_raw.get(),
                    ));
                }
                let (node, level, class, _) = key;
                self.faults.push(Fault {
                    node,
                    gpu: None,
                    start: SimTime(open.start_ms),
                    repair: Some(SimDuration(time_ms - open.start_ms)),
                    class: format!("{level}/{class}"),
                });
            }
            _ => {
                return Err(TraceError::field(
                    file,
                    lines.line_of(kind_raw.get()),
                    "event_type",
                    "\"fault_start\" or \"fault_end\"",
                    kind_raw.get(),
                ));
            }
        }
        Ok(())
    }

    fn finish(mut self, file: &str, options: &InfiniteHbdOptions) -> Result<FailureTrace, TraceError> {
        if self.events == 0 {
            return Err(TraceError::file(file, "no fault events: the array is empty"));
        }
        // Faults still open at the end: not repaired within the trace.
        for ((node, level, class, _), opens) in std::mem::take(&mut self.open) {
            for open in opens {
                self.faults.push(Fault {
                    node,
                    gpu: None,
                    start: SimTime(open.start_ms),
                    repair: None,
                    class: format!("{level}/{class}"),
                });
            }
        }
        if self.names.len() > options.nodes as usize {
            return Err(TraceError::file(
                file,
                format!("{} servers appear, more than the population of {} given", self.names.len(), options.nodes),
            ));
        }
        let mut records: BTreeMap<String, u64> = BTreeMap::new();
        for f in &self.faults {
            *records.entry(f.class.clone()).or_insert(0) += 1;
        }
        let excluded = |class: &str| {
            let short = class.split_once('/').map_or(class, |(_, c)| c);
            options.exclude_classes.iter().any(|c| c == short)
        };
        self.faults.retain(|f| !excluded(&f.class));
        if self.last_ms == 0 {
            return Err(TraceError::file(file, "every event is at day 0: the trace spans no time"));
        }
        let span = (SimTime(0), SimTime(self.last_ms));
        let trace = FailureTrace::new(file, options.nodes, Some(INFINITEHBD_GPUS_PER_NODE), span, self.faults)?;
        Ok(trace.with_node_names(self.names).with_records(records))
    }
}

/// A JSON number of days (its text) as milliseconds, exactly: decimal arithmetic on the digits,
/// rounded half away from zero at the millisecond. Negative values, more than 30 significant
/// digits and values past `MAX_SECONDS` are refused (the error is what was expected).
pub(crate) fn parse_days_ms(text: &str) -> Result<u64, &'static str> {
    const EXPECTED: &str = "a non-negative JSON number of days";
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits_only(whole) || (mantissa.contains('.') && !digits_only(fraction)) {
        return Err(if text.starts_with('-') { "a non-negative number of days" } else { EXPECTED });
    }
    let mut exp10: i64 = -(fraction.len() as i64);
    if let Some(e) = exponent {
        let (negative, digits) = match e.as_bytes().first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        if !digits_only(digits) {
            return Err(EXPECTED);
        }
        // Saturate: an exponent this large is out of range either way.
        let value: i64 = digits.parse().unwrap_or(i64::MAX / 2).min(1_000_000);
        exp10 += if negative { -value } else { value };
    }
    // Significant digits: no leading zeros; trailing zeros move into the exponent.
    let all = format!("{whole}{fraction}");
    let trimmed = all.trim_start_matches('0');
    let significant = trimmed.trim_end_matches('0');
    exp10 += (trimmed.len() - significant.len()) as i64;
    if significant.is_empty() {
        return Ok(0);
    }
    if significant.len() > 30 {
        return Err("a number of days with at most 30 significant digits");
    }
    let n: u128 = significant.parse().map_err(|_| EXPECTED)?;
    let product = n * MS_PER_DAY; // < 10^30 x 10^8: fits u128
    let too_large = "at most 11574074 days (10^12 seconds)";
    let max_ms = u128::from(MAX_SECONDS) * 1000;
    let ms = if exp10 >= 0 {
        let scale = u32::try_from(exp10).ok().and_then(|e| 10u128.checked_pow(e)).ok_or(too_large)?;
        product.checked_mul(scale).ok_or(too_large)?
    } else if exp10 < -38 {
        0 // below half a millisecond: product < 10^38 < 10^|exp| / 2
    } else {
        let divisor = 10u128.pow((-exp10) as u32);
        let (quotient, remainder) = (product / divisor, product % divisor);
        quotient + u128::from(remainder * 2 >= divisor)
    };
    if ms > max_ms {
        return Err(too_large);
    }
    Ok(ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(node: &str, day: &str, kind: &str, class: &str) -> String {
        format!(
            "  {{\"node_id\": \"{node}\", \"event_time\": {day}, \"event_type\": \"{kind}\",\n   \
             \"fault_type\": {{\"Level\": \"Hardware Failure\", \"Class\": \"{class}\", \"Desc\": \"d\"}}}}"
        )
    }

    fn json(events: &[String]) -> String {
        format!("[\n{}\n]\n", events.join(",\n"))
    }

    fn read(text: &str, options: &InfiniteHbdOptions) -> Result<FailureTrace, TraceError> {
        read_infinitehbd(text.as_bytes(), "fault_trace.json", options)
    }

    #[test]
    fn days_are_exact_milliseconds() {
        assert_eq!(parse_days_ms("3.8955"), Ok(336_571_200));
        assert_eq!(parse_days_ms("348.9798"), Ok(30_151_854_720));
        assert_eq!(parse_days_ms("0"), Ok(0));
        assert_eq!(parse_days_ms("1"), Ok(86_400_000));
        assert_eq!(parse_days_ms("1e1"), Ok(864_000_000));
        assert_eq!(parse_days_ms("2.5E-1"), Ok(21_600_000));
        // 1 ms is 1.1574074...e-8 days: half a millisecond rounds up, a hair less does not.
        assert_eq!(parse_days_ms("0.000000005787037037037037"), Ok(0));
        assert_eq!(parse_days_ms("0.00000000578703703703703704"), Ok(1));
        assert_eq!(parse_days_ms("0.0000000000000000000000000000000000000000001"), Ok(0));
        assert_eq!(parse_days_ms("1.000000000000000000000000000000000000000000"), Ok(86_400_000));
        assert!(parse_days_ms("-1").unwrap_err().contains("non-negative"));
        assert!(parse_days_ms("1e40").unwrap_err().contains("at most"));
        assert!(parse_days_ms("1e999999999999999999999").is_err());
        for bad in ["", ".5", "5.", "1e", "1e+", "x", "0x10", "\"1\"", "true", "null"] {
            assert!(parse_days_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn starts_and_ends_pair_by_node_and_type_first_in_first_out() {
        let text = json(&[
            event("a", "1", "fault_start", "GPU"),
            event("a", "1.5", "fault_start", "GPU"),
            event("a", "2", "fault_start", "NIC"),
            event("b", "2.5", "fault_start", "GPU"),
            event("a", "3", "fault_end", "GPU"),
            event("a", "4", "fault_end", "NIC"),
            event("a", "5", "fault_end", "GPU"),
            event("c", "10", "fault_start", "Change"),
            event("c", "10.5", "fault_end", "Change"),
        ]);
        let t = read(&text, &InfiniteHbdOptions::keep_all()).unwrap();
        let day = 86_400_000;
        let got: Vec<(u32, u64, Option<u64>, &str)> = t
            .faults()
            .iter()
            .map(|f| (f.node, f.start.as_ms(), f.repair.map(|r| r.as_ms()), f.class.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (0, day, Some(2 * day), "Hardware Failure/GPU"),
                (0, 3 * day / 2, Some(7 * day / 2), "Hardware Failure/GPU"),
                (0, 2 * day, Some(2 * day), "Hardware Failure/NIC"),
                (1, 5 * day / 2, None, "Hardware Failure/GPU"),
                (2, 10 * day, Some(day / 2), "Hardware Failure/Change"),
            ]
        );
        assert_eq!((t.population(), t.gpus_per_node(), t.span()), (400, Some(8), (SimTime(0), SimTime(21 * day / 2))));
        assert_eq!(t.node_name(1), Some("b"));
        assert_eq!(t.node_name(3), None);
        // By default the operational Change is dropped, but still counted as a record.
        let t = read(&text, &InfiniteHbdOptions::default()).unwrap();
        assert_eq!(t.faults().len(), 4);
        assert_eq!(t.records()["Hardware Failure/Change"], 1);
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let e = |events: &[String]| read(&json(events), &InfiniteHbdOptions::default()).unwrap_err().to_string();
        let ok = event("a", "1", "fault_start", "GPU");
        assert_eq!(
            e(&[ok.clone(), event("a", "-2", "fault_start", "GPU")]),
            "fault_trace.json:4: field `event_time`: expected a non-negative number of days, got \"-2\""
        );
        assert_eq!(
            e(&[ok.clone(), event("a", "2", "fault_begin", "GPU")]),
            "fault_trace.json:4: field `event_type`: expected \"fault_start\" or \"fault_end\", got \"\\\"fault_begin\\\"\""
        );
        assert_eq!(
            e(&[ok.clone(), event("a", "2", "fault_end", "NIC")]),
            "fault_trace.json:4: a fault_end with no open fault_start of the same node_id and fault_type before it"
        );
        assert!(e(&[ok.clone(), event("a", "0.5", "fault_end", "GPU")]).starts_with(
            "fault_trace.json:4: field `event_time`: expected a time at or after its fault_start (line 2)"
        ));
        assert!(
            e(&[ok.clone(), "{\"node_id\": \"a\"}".into()])
                .starts_with("fault_trace.json:4: the event has no `event_time`")
        );
        assert!(e(&[ok.clone(), "5".into()]).starts_with("fault_trace.json:4: expected an event object"));
        assert!(e(&[event("", "1", "fault_start", "GPU")]).contains("field `node_id`"));
        let e = read("[\n{\"a\": 1},\n", &InfiniteHbdOptions::default()).unwrap_err().to_string();
        assert!(e.starts_with("fault_trace.json:3: expected a JSON array of fault events: EOF"), "{e}");
        let e = read("{}", &InfiniteHbdOptions::default()).unwrap_err().to_string();
        assert!(e.starts_with("fault_trace.json:1: expected a JSON array"), "{e}");
        assert_eq!(
            read("[]", &InfiniteHbdOptions::default()).unwrap_err().to_string(),
            "fault_trace.json: no fault events: the array is empty"
        );
        let small = InfiniteHbdOptions { nodes: 1, ..InfiniteHbdOptions::default() };
        let e = read(&json(&[ok.clone(), event("b", "1", "fault_start", "GPU")]), &small).unwrap_err().to_string();
        assert!(e.contains("2 servers appear, more than the population of 1"), "{e}");
        let e = read_infinitehbd(&b"[\"\xff\"]"[..], "f.json", &small).unwrap_err().to_string();
        assert_eq!(e, "f.json:1: the file is not UTF-8 text");
    }
}
