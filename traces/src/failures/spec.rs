//! [`FailureSpec`]: the `simulate --failures SPEC` string, and [`FailureFormat`], the failure
//! trace formats `trace fit-failures --format` reads.
//!
//! ```text
//! weibull:node_mtbf_h=H[,shape=K][,gpu_mtbf_h=H2][,gpu_shape=K2][,repair_median_h=M][,repair_sigma=S]
//! infinitehbd:PATH[,scale=X][,nodes=N][,ops=drop|keep][,past_end=repeat|stop]
//! titan:PATH[,scale=X][,past_end=repeat|stop]
//! alibaba2017:PATH[,scale=X][,repair_h=R][,past_end=repeat|stop]
//! events:PATH
//! ```
//!
//! - `weibull`: a [`FailureModel`], drawn as the run goes: failures for as long as it lasts. `node_mtbf_h` and `gpu_mtbf_h` are the **mean up time**
//!   (mean time to failure, counted from the last repair) of a node and of one GPU, in hours;
//!   at least one is needed, a missing one means that part never fails. The Weibull scale is
//!   derived: `mtbf / Γ(1 + 1/shape)`. `shape` (default 1: exponential, memoryless) applies to
//!   nodes and to GPUs unless `gpu_shape` is given. Repairs are lognormal with
//!   `repair_median_h` (default 24 h) and `repair_sigma` (default 1.5, so the mean repair is
//!   about 74 h); defaults near InfiniteHBD's organic faults, see traces/FORMAT.md. Mean time
//!   between failure *starts* is `mtbf + mean repair`.
//! - `infinitehbd`, `titan`, `alibaba2017`: a real failure trace replayed by
//!   [`super::map_onto`] with time scale `scale` (default 1; 0.5 = history twice as fast).
//!   `nodes` is InfiniteHBD's population (default 400); `ops=drop` (default) leaves out the
//!   operational classes (stress tests, tests, changes), `ops=keep` replays them too.
//!   `repair_h` is Alibaba's assumed repair time in trace hours (default 1). `past_end`: what
//!   happens once a run outlasts the (scaled) history: `repeat` (default) replays it again,
//!   each later cycle of drawn nodes shifted by its own seeded offset; `stop` replays it once,
//!   and the run has no failures after it (summary.json's `failures_span_s` says how far they went).
//! - `events`: a canonical `events.csv`, used as is (its times are simulated times; the
//!   window and the seed do not apply). Node indexes and GPU slots are checked against the
//!   cluster.
//!
//! PATH runs to the first comma: a path with a comma in it cannot be given here.

use super::infinitehbd::{InfiniteHbdOptions, load_infinitehbd};
use super::map::{MappedFeed, PastEnd};
use super::model::{FailureModel, LogNormal, Weibull};
use super::trace::FailureTrace;
use super::{alibaba2017, titan};
use crate::error::TraceError;
use crate::events::read_events_csv;
use sim::{Cluster, ClusterEvent, ClusterSpec, HardwareFeed, PoolSpec, SimDuration, SimTime};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Default Weibull shape of `weibull:` specs: 1, the exponential.
pub const DEFAULT_SHAPE: f64 = 1.0;
/// Default median repair of `weibull:` specs, hours.
pub const DEFAULT_REPAIR_MEDIAN_H: f64 = 24.0;
/// Default lognormal sigma of repairs in `weibull:` specs.
pub const DEFAULT_REPAIR_SIGMA: f64 = 1.9;
/// Default repair time assumed for Alibaba 2017 errors, hours.
pub const DEFAULT_ALIBABA_REPAIR_H: f64 = 1.0;

/// The failure trace formats schedlab reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureFormat {
    /// StepFun InfiniteHBD `fault_trace.json`.
    InfiniteHbd,
    /// OLCF Titan `gc_full.csv`.
    Titan,
    /// Alibaba cluster-trace-v2017 `server_event.csv`.
    Alibaba2017,
}

impl FailureFormat {
    pub const ALL: [FailureFormat; 3] = [FailureFormat::InfiniteHbd, FailureFormat::Titan, FailureFormat::Alibaba2017];

    pub fn name(self) -> &'static str {
        match self {
            FailureFormat::InfiniteHbd => "infinitehbd",
            FailureFormat::Titan => "titan",
            FailureFormat::Alibaba2017 => "alibaba2017",
        }
    }
}

impl fmt::Display for FailureFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FailureFormat {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<FailureFormat, TraceError> {
        FailureFormat::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            TraceError::value(
                "failure trace format",
                format!("unknown format `{s}`; valid formats: infinitehbd, titan, alibaba2017"),
            )
        })
    }
}

/// Reads the failure trace at `path` in `format` with that format's defaults.
pub fn load(path: &Path, format: FailureFormat) -> Result<FailureTrace, TraceError> {
    match format {
        FailureFormat::InfiniteHbd => load_infinitehbd(path, &InfiniteHbdOptions::default()),
        FailureFormat::Titan => titan::load_titan(path),
        FailureFormat::Alibaba2017 => {
            alibaba2017::load_alibaba2017(path, hours_ms(DEFAULT_ALIBABA_REPAIR_H).unwrap_or(SimDuration(3_600_000)))
        }
    }
}

/// Where a run's failures come from: a model, a real trace, or an events file.
#[derive(Debug, Clone, PartialEq)]
pub enum FailureSpec {
    Model(FailureModel),
    InfiniteHbd { path: PathBuf, scale: f64, options: InfiniteHbdOptions, past_end: PastEnd },
    Titan { path: PathBuf, scale: f64, past_end: PastEnd },
    Alibaba2017 { path: PathBuf, scale: f64, repair: SimDuration, past_end: PastEnd },
    Events { path: PathBuf },
}

const KINDS: &str = "weibull, infinitehbd, titan, alibaba2017, events";

/// A [`FailureSpec`] resolved for one run: fixed events, or a feed pulled as the run goes.
#[derive(Debug)]
pub enum Failures {
    /// An events file, used as is.
    Events(Vec<ClusterEvent>),
    /// A model or a replayed history, from the run's start for as long as it lasts.
    Feed(Box<dyn HardwareFeed>),
}

impl FailureSpec {
    /// What this spec gives for `cluster` from `start` (the first submission) under `seed`
    /// (see the module documentation). No run length is needed: models and histories are
    /// pulled as the run goes.
    pub fn resolve(&self, cluster: &Cluster, start: SimTime, seed: u64) -> Result<Failures, TraceError> {
        match self {
            FailureSpec::Model(model) => Ok(Failures::Feed(Box::new(model.feed(cluster, start, seed)?))),
            FailureSpec::InfiniteHbd { scale, past_end, .. }
            | FailureSpec::Titan { scale, past_end, .. }
            | FailureSpec::Alibaba2017 { scale, past_end, .. } => {
                let trace = self.trace().unwrap_or_else(|| Err(TraceError::value("failure spec", "not a trace")))?;
                let feed = MappedFeed::new(&trace, cluster, start, seed, *scale, *past_end)?;
                Ok(Failures::Feed(Box::new(feed)))
            }
            FailureSpec::Events { path } => {
                let name = path.display().to_string();
                let file = File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
                read_events_csv(std::io::BufReader::new(file), &name, Some(&spec_of(cluster))).map(Failures::Events)
            }
        }
    }

    /// The failure trace a trace spec names, read; `None` for models and events files.
    pub fn trace(&self) -> Option<Result<FailureTrace, TraceError>> {
        match self {
            FailureSpec::InfiniteHbd { path, options, .. } => Some(load_infinitehbd(path, options)),
            FailureSpec::Titan { path, .. } => Some(titan::load_titan(path)),
            FailureSpec::Alibaba2017 { path, repair, .. } => Some(alibaba2017::load_alibaba2017(path, *repair)),
            FailureSpec::Model(_) | FailureSpec::Events { .. } => None,
        }
    }
}

/// A cluster spec with `cluster`'s node layout, for checking events.csv against it.
fn spec_of(cluster: &Cluster) -> ClusterSpec {
    ClusterSpec {
        pools: cluster
            .pools()
            .iter()
            .map(|p| PoolSpec {
                name: p.name.clone(),
                gpu_type: p.gpu_type.clone(),
                nodes: p.node_count,
                gpus_per_node: p.gpus_per_node,
                nodes_per_rack: 0,
                speed_milli: p.speed_milli,
            })
            .collect(),
    }
}

/// Hours to whole milliseconds (rounded once), at least 1 ms; `None` unless positive.
fn hours_ms(hours: f64) -> Option<SimDuration> {
    let ms = hours * super::MS_PER_HOUR;
    (ms.is_finite() && ms > 0.0 && ms <= crate::timeparse::MAX_SECONDS as f64 * 1000.0)
        .then(|| SimDuration(super::round_ms(ms).max(1)))
}

/// `key=value` settings after the kind (and path), each key at most once, from a known list.
struct Settings<'a> {
    spec: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Settings<'a> {
    fn parse(spec: &'a str, text: &'a str, valid: &[&str]) -> Result<Settings<'a>, TraceError> {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for part in text.split(',').filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(error(spec, format!("`{part}` is not key=value; valid keys: {}", valid.join(", "))));
            };
            if !valid.contains(&key) {
                return Err(error(spec, format!("unknown key `{key}`; valid keys: {}", valid.join(", "))));
            }
            if pairs.iter().any(|p| p.0 == key) {
                return Err(error(spec, format!("`{key}` is given twice")));
            }
            pairs.push((key, value));
        }
        Ok(Settings { spec, pairs })
    }

    fn text(&self, key: &str) -> Option<&'a str> {
        self.pairs.iter().find(|p| p.0 == key).map(|p| p.1)
    }

    /// A positive finite number, or `default` when the key is absent.
    fn positive(&self, key: &str, default: Option<f64>) -> Result<Option<f64>, TraceError> {
        self.number(key, default, |x| x > 0.0, "a positive number")
    }

    fn number(
        &self,
        key: &str,
        default: Option<f64>,
        ok: impl Fn(f64) -> bool,
        expected: &str,
    ) -> Result<Option<f64>, TraceError> {
        let Some(text) = self.text(key) else { return Ok(default) };
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() && ok(x) => Ok(Some(x)),
            _ => Err(error(self.spec, format!("`{key}` must be {expected}, got `{text}`"))),
        }
    }
}

fn error(spec: &str, message: impl Into<String>) -> TraceError {
    TraceError::value(format!("failure spec `{spec}`"), message)
}

impl FromStr for FailureSpec {
    type Err = TraceError;

    fn from_str(spec: &str) -> Result<FailureSpec, TraceError> {
        let Some((kind, rest)) = spec.split_once(':') else {
            return Err(error(spec, format!("expected KIND:..., where KIND is one of {KINDS}")));
        };
        // The path runs to the first comma; the rest are settings.
        let path_and_settings = || {
            let (path, settings) = rest.split_once(',').unwrap_or((rest, ""));
            if path.is_empty() {
                return Err(error(spec, format!("`{kind}` needs a file path: {kind}:PATH[,key=value...]")));
            }
            Ok((PathBuf::from(path), settings))
        };
        let scale = |s: &Settings<'_>| s.positive("scale", Some(1.0)).map(|x| x.unwrap_or(1.0));
        let past_end = |s: &Settings<'_>| match s.text("past_end") {
            None | Some("repeat") => Ok(PastEnd::Repeat),
            Some("stop") => Ok(PastEnd::Stop),
            Some(other) => Err(error(spec, format!("`past_end` must be repeat or stop, got `{other}`"))),
        };
        match kind {
            "weibull" => parse_weibull(spec, rest),
            "infinitehbd" => {
                let (path, settings) = path_and_settings()?;
                let s = Settings::parse(spec, settings, &["scale", "nodes", "ops", "past_end"])?;
                let mut options = InfiniteHbdOptions::default();
                if let Some(nodes) = s.text("nodes") {
                    options.nodes = crate::rows::parse_u32(nodes).filter(|&n| n > 0).ok_or_else(|| {
                        error(spec, format!("`nodes` must be a whole number, at least 1, got `{nodes}`"))
                    })?;
                }
                match s.text("ops") {
                    None | Some("drop") => {}
                    Some("keep") => options.exclude_classes.clear(),
                    Some(other) => return Err(error(spec, format!("`ops` must be drop or keep, got `{other}`"))),
                }
                Ok(FailureSpec::InfiniteHbd { path, scale: scale(&s)?, options, past_end: past_end(&s)? })
            }
            "titan" => {
                let (path, settings) = path_and_settings()?;
                let s = Settings::parse(spec, settings, &["scale", "past_end"])?;
                Ok(FailureSpec::Titan { path, scale: scale(&s)?, past_end: past_end(&s)? })
            }
            "alibaba2017" => {
                let (path, settings) = path_and_settings()?;
                let s = Settings::parse(spec, settings, &["scale", "repair_h", "past_end"])?;
                let hours = s.positive("repair_h", Some(DEFAULT_ALIBABA_REPAIR_H))?.unwrap_or(DEFAULT_ALIBABA_REPAIR_H);
                let repair = hours_ms(hours).ok_or_else(|| error(spec, "`repair_h` is out of range"))?;
                Ok(FailureSpec::Alibaba2017 { path, scale: scale(&s)?, repair, past_end: past_end(&s)? })
            }
            "events" => {
                if rest.is_empty() {
                    return Err(error(spec, "`events` needs a file path: events:PATH"));
                }
                Ok(FailureSpec::Events { path: PathBuf::from(rest) })
            }
            other => Err(error(spec, format!("unknown kind `{other}`; valid kinds: {KINDS}"))),
        }
    }
}

fn parse_weibull(spec: &str, rest: &str) -> Result<FailureSpec, TraceError> {
    let valid = ["node_mtbf_h", "shape", "gpu_mtbf_h", "gpu_shape", "repair_median_h", "repair_sigma"];
    let s = Settings::parse(spec, rest, &valid)?;
    let node_mtbf = s.positive("node_mtbf_h", None)?;
    let gpu_mtbf = s.positive("gpu_mtbf_h", None)?;
    if node_mtbf.is_none() && gpu_mtbf.is_none() {
        return Err(error(
            spec,
            "give node_mtbf_h or gpu_mtbf_h (or both): mean hours a node or a GPU runs between failures",
        ));
    }
    let shape = s.positive("shape", Some(DEFAULT_SHAPE))?.unwrap_or(DEFAULT_SHAPE);
    let gpu_shape = s.positive("gpu_shape", Some(shape))?.unwrap_or(shape);
    for (key, k) in [("shape", shape), ("gpu_shape", gpu_shape)] {
        if !(0.05..=50.0).contains(&k) {
            return Err(error(spec, format!("`{key}` must be 0.05..=50, got {k}")));
        }
    }
    let median = s.positive("repair_median_h", Some(DEFAULT_REPAIR_MEDIAN_H))?.unwrap_or(DEFAULT_REPAIR_MEDIAN_H);
    let sigma = s
        .number("repair_sigma", Some(DEFAULT_REPAIR_SIGMA), |x| (0.0..=10.0).contains(&x), "a number 0..=10")?
        .unwrap_or(DEFAULT_REPAIR_SIGMA);
    Ok(FailureSpec::Model(FailureModel {
        node: node_mtbf.map(|h| Weibull::with_mean(h, shape)),
        gpu: gpu_mtbf.map(|h| Weibull::with_mean(h, gpu_shape)),
        repair: LogNormal { median_h: median, sigma },
    }))
}

impl fmt::Display for FailureSpec {
    /// The spec as the command line spells it (numbers as Rust prints them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scale = |f: &mut fmt::Formatter<'_>, s: f64| if s == 1.0 { Ok(()) } else { write!(f, ",scale={s}") };
        let stop = |f: &mut fmt::Formatter<'_>, p: PastEnd| {
            if p == PastEnd::Stop { write!(f, ",past_end=stop") } else { Ok(()) }
        };
        match self {
            FailureSpec::Model(m) => {
                let mut parts = Vec::new();
                if let Some(node) = m.node {
                    parts.push(format!("node_mtbf_h={},shape={}", node.mean_h(), node.shape));
                }
                if let Some(gpu) = m.gpu {
                    parts.push(format!("gpu_mtbf_h={},gpu_shape={}", gpu.mean_h(), gpu.shape));
                }
                parts.push(format!("repair_median_h={},repair_sigma={}", m.repair.median_h, m.repair.sigma));
                write!(f, "weibull:{}", parts.join(","))
            }
            FailureSpec::InfiniteHbd { path, scale: s, options, past_end: p } => {
                write!(f, "infinitehbd:{}", path.display())?;
                scale(f, *s)?;
                write!(f, ",nodes={}", options.nodes)?;
                if options.exclude_classes.is_empty() {
                    write!(f, ",ops=keep")?;
                }
                stop(f, *p)
            }
            FailureSpec::Titan { path, scale: s, past_end: p } => {
                write!(f, "titan:{}", path.display())?;
                scale(f, *s)?;
                stop(f, *p)
            }
            FailureSpec::Alibaba2017 { path, scale: s, repair, past_end: p } => {
                write!(f, "alibaba2017:{}", path.display())?;
                scale(f, *s)?;
                write!(f, ",repair_h={}", repair.as_ms() as f64 / super::MS_PER_HOUR)?;
                stop(f, *p)
            }
            FailureSpec::Events { path } => write!(f, "events:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FailureSpec, String> {
        text.parse::<FailureSpec>().map_err(|e| e.to_string())
    }

    #[test]
    fn weibull_specs_derive_the_scale_from_the_mean() {
        let FailureSpec::Model(m) =
            parse("weibull:node_mtbf_h=1000,shape=2,repair_median_h=3,repair_sigma=0.5").unwrap()
        else {
            panic!()
        };
        let node = m.node.unwrap();
        assert!((node.mean_h() - 1000.0).abs() < 1e-9);
        assert!((node.scale_h - 1000.0 / (std::f64::consts::PI.sqrt() / 2.0)).abs() < 1e-9);
        assert_eq!(m.gpu, None);
        assert_eq!(m.repair, LogNormal { median_h: 3.0, sigma: 0.5 });
        let FailureSpec::Model(m) = parse("weibull:gpu_mtbf_h=50000").unwrap() else { panic!() };
        assert_eq!((m.node, m.gpu.unwrap().shape), (None, DEFAULT_SHAPE));
        assert_eq!(m.repair, LogNormal { median_h: DEFAULT_REPAIR_MEDIAN_H, sigma: DEFAULT_REPAIR_SIGMA });
        let FailureSpec::Model(m) = parse("weibull:node_mtbf_h=10,shape=0.7,gpu_mtbf_h=20").unwrap() else { panic!() };
        assert_eq!(m.gpu.unwrap().shape, 0.7);
        // Display spells a spec that parses back to the same model.
        let spec = parse("weibull:node_mtbf_h=10,shape=0.7,gpu_mtbf_h=20,gpu_shape=1.5").unwrap();
        let FailureSpec::Model(again) = parse(&spec.to_string()).unwrap() else { panic!() };
        let FailureSpec::Model(m) = spec else { panic!() };
        assert!((again.node.unwrap().scale_h / m.node.unwrap().scale_h - 1.0).abs() < 1e-12);
        assert_eq!(again.gpu.unwrap().shape, 1.5);
    }

    #[test]
    fn trace_specs_take_a_path_and_settings() {
        assert_eq!(
            parse("titan:/data/gc_full.csv,scale=0.5").unwrap(),
            FailureSpec::Titan { path: "/data/gc_full.csv".into(), scale: 0.5, past_end: PastEnd::Repeat }
        );
        let FailureSpec::InfiniteHbd { path, scale, options, .. } =
            parse("infinitehbd:f.json,nodes=500,ops=keep").unwrap()
        else {
            panic!()
        };
        assert_eq!((path, scale, options.nodes, options.exclude_classes.len()), ("f.json".into(), 1.0, 500, 0));
        let FailureSpec::InfiniteHbd { options, .. } = parse("infinitehbd:f.json").unwrap() else { panic!() };
        assert_eq!(options, InfiniteHbdOptions::default());
        let stop = parse("titan:g.csv,past_end=stop").unwrap();
        assert_eq!(stop, FailureSpec::Titan { path: "g.csv".into(), scale: 1.0, past_end: PastEnd::Stop });
        assert_eq!(parse(&stop.to_string()).unwrap(), stop);
        assert!(parse("titan:g.csv,past_end=loop").unwrap_err().contains("repeat or stop"));
        assert_eq!(
            parse("alibaba2017:s.csv,repair_h=0.5").unwrap(),
            FailureSpec::Alibaba2017 {
                path: "s.csv".into(),
                scale: 1.0,
                repair: SimDuration(1_800_000),
                past_end: PastEnd::Repeat
            }
        );
        assert_eq!(parse("events:C:\\x,y.csv").unwrap(), FailureSpec::Events { path: "C:\\x,y.csv".into() });
        for text in
            ["titan:x.csv,scale=2", "alibaba2017:s.csv,scale=3,repair_h=2", "infinitehbd:f.json,nodes=400,ops=keep"]
        {
            assert_eq!(parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn mistakes_list_what_is_valid() {
        let e = parse("gamma:x").unwrap_err();
        assert_eq!(
            e,
            "failure spec `gamma:x`: unknown kind `gamma`; valid kinds: weibull, infinitehbd, titan, alibaba2017, events"
        );
        let e = parse("titan:x.csv,scael=2").unwrap_err();
        assert_eq!(e, "failure spec `titan:x.csv,scael=2`: unknown key `scael`; valid keys: scale, past_end");
        assert!(
            parse("weibull:node_mtbf_h=10,mtbf=3").unwrap_err().contains("valid keys: node_mtbf_h, shape, gpu_mtbf_h")
        );
        assert!(parse("weibull:shape=2").unwrap_err().contains("give node_mtbf_h or gpu_mtbf_h"));
        assert!(parse("weibull:node_mtbf_h=-1").unwrap_err().contains("`node_mtbf_h` must be a positive number"));
        assert!(parse("weibull:node_mtbf_h=inf").unwrap_err().contains("positive number"));
        assert!(parse("weibull:node_mtbf_h=1,shape=0.001").unwrap_err().contains("0.05..=50"));
        assert!(parse("weibull:node_mtbf_h=1,node_mtbf_h=2").unwrap_err().contains("given twice"));
        assert!(parse("titan:").unwrap_err().contains("needs a file path"));
        assert!(parse("titan:x,scale=0").unwrap_err().contains("`scale` must be a positive number"));
        assert!(parse("infinitehbd:x,ops=maybe").unwrap_err().contains("drop or keep"));
        assert!(parse("infinitehbd:x,nodes=0").unwrap_err().contains("at least 1"));
        assert!(parse("weibull").unwrap_err().contains("KIND:"));
        assert!(parse("titan:x,scale").unwrap_err().contains("not key=value"));
    }

    #[test]
    fn models_resolve_and_missing_files_say_so() {
        let cluster = Cluster::new(&crate::parse_cluster_shorthand("10x8").unwrap()).unwrap();
        let spec = parse("weibull:node_mtbf_h=100").unwrap();
        let first = |spec: &FailureSpec| match spec.resolve(&cluster, SimTime(5), 1).unwrap() {
            Failures::Feed(mut feed) => (0..50).map(|_| feed.pop().unwrap()).collect::<Vec<_>>(),
            Failures::Events(_) => panic!("a model is a feed"),
        };
        let events = first(&spec);
        assert!(events.windows(2).all(|w| w[0].time() <= w[1].time()) && events[0].time() > SimTime(5));
        assert_eq!(events, first(&spec));
        let e = parse("titan:/nonexistent/gc_full.csv").unwrap().resolve(&cluster, SimTime(0), 1).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/gc_full.csv: cannot read"), "{e}");
        let e = parse("events:/nonexistent/events.csv").unwrap().resolve(&cluster, SimTime(0), 1).unwrap_err();
        assert!(matches!(e, TraceError::Io { .. }), "{e}");
        assert_eq!("titan".parse::<FailureFormat>(), Ok(FailureFormat::Titan));
        assert!("json".parse::<FailureFormat>().unwrap_err().to_string().contains("infinitehbd, titan, alibaba2017"));
    }
}
