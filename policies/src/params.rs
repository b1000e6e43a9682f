//! Policy specs: `name[key=value,...]`, parsed strictly. An unknown key or a bad value is an
//! error that lists what is valid; nothing is ignored.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// One parameter a policy accepts, for `schedlab policies` and for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    pub key: &'static str,
    pub values: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// A parsed spec: the policy name and its parameters, to be consumed key by key.
#[derive(Debug)]
pub struct Params {
    pub policy: String,
    values: BTreeMap<String, String>,
    accepted: &'static [ParamInfo],
}

/// Splits `name[key=value,...]` into the name and its raw key/value pairs.
pub fn split_spec(spec: &str) -> Result<(String, BTreeMap<String, String>), SpecError> {
    let spec = spec.trim();
    let (name, rest) = match spec.find('[') {
        Some(open) => {
            let inner = spec[open + 1..].strip_suffix(']').ok_or_else(|| {
                SpecError(format!("policy spec `{spec}`: expected `name[key=value,...]` ending in `]`"))
            })?;
            (&spec[..open], inner)
        }
        None => (spec, ""),
    };
    let mut values = BTreeMap::new();
    for pair in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| SpecError(format!("policy spec `{spec}`: expected key=value, got `{pair}`")))?;
        let (key, value) = (key.trim().to_string(), value.trim().to_string());
        if values.insert(key.clone(), value).is_some() {
            return Err(SpecError(format!("policy spec `{spec}`: `{key}` given twice")));
        }
    }
    Ok((name.trim().to_string(), values))
}

impl Params {
    pub fn new(
        policy: &str,
        values: BTreeMap<String, String>,
        accepted: &'static [ParamInfo],
    ) -> Result<Params, SpecError> {
        if let Some(unknown) = values.keys().find(|k| !accepted.iter().any(|p| p.key == *k)) {
            let valid: Vec<String> = accepted.iter().map(|p| format!("{}={}", p.key, p.values)).collect();
            let valid = if valid.is_empty() { "none".to_string() } else { valid.join(", ") };
            return Err(SpecError(format!(
                "policy `{policy}` has no parameter `{unknown}`; valid parameters: {valid}"
            )));
        }
        Ok(Params { policy: policy.to_string(), values, accepted })
    }

    /// The value of `key` parsed, or its documented default.
    pub fn get<T: std::str::FromStr>(&self, key: &str) -> Result<T, SpecError>
    where
        T::Err: fmt::Display,
    {
        let info = self
            .accepted
            .iter()
            .find(|p| p.key == key)
            .unwrap_or_else(|| panic!("policy `{}` reads undeclared parameter `{key}`", self.policy));
        let raw = self.values.get(key).map_or(info.default, String::as_str);
        raw.parse::<T>()
            .map_err(|e| SpecError(format!("policy `{}`: `{key}={raw}`: {e} (valid: {})", self.policy, info.values)))
    }
}

/// A duration source as a parameter value (`oracle|estimate`).
#[derive(Debug, Clone, Copy)]
pub struct Source(pub sim::DurationSource);

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Source, String> {
        match s {
            "oracle" => Ok(Source(sim::DurationSource::Oracle)),
            "estimate" => Ok(Source(sim::DurationSource::Estimate)),
            _ => Err("expected oracle|estimate".to_string()),
        }
    }
}

pub const PLACEMENT: ParamInfo = ParamInfo {
    key: "placement",
    values: "pack|spread|fastest|local",
    default: "pack",
    help: "which GPUs a gang gets: pack = fewest nodes, fullest first; spread = emptiest node; fastest = the \
           pool where the task runs fastest (its own speeds, else the pool's) that fits, packed; local = nodes \
           holding the task's dataset first",
};

pub const AVOID_FAILED: ParamInfo = ParamInfo {
    key: "avoid_failed_h",
    values: "hours >= 0",
    default: "0",
    help: "prefer nodes with no failure seen in this many hours (0: off); used anyway if nothing else fits",
};

pub const DURATION: ParamInfo = ParamInfo {
    key: "duration",
    values: "oracle|estimate",
    default: "oracle",
    help: "durations the policy may use: the true one (an upper bound) or the trace's estimate",
};

/// A list as one parameter value, `a;b;c` (`;`, because `,` separates parameters): e.g.
/// `tiresias[thresholds=3600;36000]`. Empty items are an error; the policy checks the rest
/// (order, range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

impl<T: std::str::FromStr> std::str::FromStr for List<T>
where
    T::Err: fmt::Display,
{
    type Err = String;
    fn from_str(s: &str) -> Result<List<T>, String> {
        s.split(';')
            .map(|item| {
                let item = item.trim();
                if item.is_empty() {
                    return Err("empty item in a `;`-separated list".to_string());
                }
                item.parse::<T>().map_err(|e| format!("`{item}`: {e}"))
            })
            .collect::<Result<Vec<T>, String>>()
            .map(List)
    }
}
