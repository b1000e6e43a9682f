//! A policy's parameters, read strictly. An unknown key or a bad value is an error that lists
//! what is valid; nothing is ignored: a key the policy's constructor did not read is an error
//! too (`Registry::build` checks it after construction).
//!
//! The spec text itself, `name[key=value,...]`, is parsed by [`crate::PolicySpec`].

#![deny(missing_docs)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A policy spec or parameter the user got wrong, in words that say what was expected.
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
    /// The key, as written in `name[key=value]`.
    pub key: &'static str,
    /// The values it takes, in words (`true|false`, `hours >= 0`).
    pub values: &'static str,
    /// The value used when the spec does not give one; it must parse.
    pub default: &'static str,
    /// What it changes, in one sentence.
    pub help: &'static str,
}

/// The parameters given to one policy, handed to its constructor to be read key by key.
///
/// A policy that declares its parameters (`PolicyInfo::new`, every built-in) gets unknown
/// keys refused before it is constructed, and [`Params::get`] falls back to the declared
/// default. A policy registered without a list (`Registry::with`) gets every key; it reads
/// them with [`Params::get_or`] (or [`Params::get`] for a required one). Either way every key
/// read is recorded, and `Registry::build` refuses a spec with a key the constructor did not
/// read.
#[derive(Debug)]
pub struct Params {
    /// The policy's name, for error messages.
    pub policy: String,
    values: BTreeMap<String, String>,
    /// The declared parameters; `None`: undeclared, any key may be read.
    declared: Option<&'static [ParamInfo]>,
    /// Every key the constructor asked for, given or not.
    read: RefCell<BTreeSet<String>>,
}

impl Params {
    /// The `values` given to `policy`, checked against its `declared` parameters if it has a
    /// list (an unknown key is an error naming the valid ones).
    pub(crate) fn new(
        policy: &str,
        values: BTreeMap<String, String>,
        declared: Option<&'static [ParamInfo]>,
    ) -> Result<Params, SpecError> {
        if let Some(accepted) = declared
            && let Some(unknown) = values.keys().find(|k| !accepted.iter().any(|p| p.key == *k))
        {
            let valid: Vec<String> = accepted.iter().map(|p| format!("{}={}", p.key, p.values)).collect();
            let valid = if valid.is_empty() { "none".to_string() } else { valid.join(", ") };
            return Err(SpecError(format!(
                "policy `{policy}` has no parameter `{unknown}`; valid parameters: {valid}"
            )));
        }
        Ok(Params { policy: policy.to_string(), values, declared, read: RefCell::default() })
    }

    /// The value of `key` parsed, or its declared default. For a policy without a declared
    /// list, a key not given is an error (the parameter is required).
    ///
    /// # Panics
    /// When the policy declared its parameters and `key` is not among them: the catalogue
    /// `schedlab policies` prints would be wrong, a programming error.
    pub fn get<T: std::str::FromStr>(&self, key: &str) -> Result<T, SpecError>
    where
        T::Err: fmt::Display,
    {
        match self.declared_info(key) {
            Some(info) => self.get_info(info),
            None => match self.given(key) {
                Some(raw) => self.parse(key, raw, None),
                None => Err(SpecError(format!("policy `{}` needs a value for `{key}`: `{key}=...`", self.policy))),
            },
        }
    }

    /// The value of `info.key` parsed, or `info.default`: how the kit reads the parameters
    /// every policy may share ([`PLACEMENT`], [`AVOID_FAILED`], [`DURATION`]), whether or not
    /// the policy declared them.
    ///
    /// # Panics
    /// As [`Params::get`], for a key outside a declared list.
    pub fn get_info<T: std::str::FromStr>(&self, info: &ParamInfo) -> Result<T, SpecError>
    where
        T::Err: fmt::Display,
    {
        let info = self.declared_info(info.key).unwrap_or(info);
        self.parse(info.key, self.given(info.key).unwrap_or(info.default), Some(info))
    }

    /// The value of `key` parsed, or `default` when the spec does not give it: how a policy
    /// registered without a parameter list reads an optional parameter.
    ///
    /// # Panics
    /// As [`Params::get`], for a key outside a declared list.
    pub fn get_or<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, SpecError>
    where
        T::Err: fmt::Display,
    {
        let info = self.declared_info(key);
        self.given(key).map_or(Ok(default), |raw| self.parse(key, raw, info))
    }

    /// Keys given in the spec that the constructor never asked for, in key order.
    pub(crate) fn unread(&self) -> Vec<&str> {
        let read = self.read.borrow();
        self.values.keys().filter(|k| !read.contains(*k)).map(String::as_str).collect()
    }

    /// Every key the constructor asked for, in key order.
    pub(crate) fn read_keys(&self) -> Vec<String> {
        self.read.borrow().iter().cloned().collect()
    }

    /// Records `key` as read and returns its declared info (`None` without a declared list).
    fn declared_info(&self, key: &str) -> Option<&'static ParamInfo> {
        self.read.borrow_mut().insert(key.to_string());
        let declared = self.declared?;
        let info = declared.iter().find(|p| p.key == key);
        Some(info.unwrap_or_else(|| panic!("policy `{}` reads undeclared parameter `{key}`", self.policy)))
    }

    fn given(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    fn parse<T: std::str::FromStr>(&self, key: &str, raw: &str, info: Option<&ParamInfo>) -> Result<T, SpecError>
    where
        T::Err: fmt::Display,
    {
        // A number or a switch says what it takes in the parameter's words (`true|false`), not
        // in Rust's ("provided string was not `true` or `false`", "invalid digit found in
        // string"); the kit's own types already explain themselves.
        let primitive = matches!(std::any::type_name::<T>(), "bool" | "u32" | "u64" | "usize" | "i32" | "i64" | "f64");
        raw.parse::<T>().map_err(|e| match info {
            Some(info) if primitive => {
                SpecError(format!("policy `{}`: `{key}={raw}`: expected {}", self.policy, info.values))
            }
            _ => {
                let valid = info.map_or(String::new(), |info| format!(" (valid: {})", info.values));
                SpecError(format!("policy `{}`: `{key}={raw}`: {e}{valid}", self.policy))
            }
        })
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

/// `placement`: which GPUs a gang gets (read with [`crate::Placer::from_params`]).
pub const PLACEMENT: ParamInfo = ParamInfo {
    key: "placement",
    values: "pack|spread|fastest|local",
    default: "pack",
    help: "which GPUs a gang gets: pack = fewest nodes, fullest first; spread = emptiest node; fastest = the \
           pool where the task runs fastest (its own speeds, else the pool's) that fits, packed; local = nodes \
           holding the task's dataset first",
};

/// `avoid_failed_h`: steer clear of recently failed nodes (read with
/// [`crate::Placer::from_params`]).
pub const AVOID_FAILED: ParamInfo = ParamInfo {
    key: "avoid_failed_h",
    values: "hours >= 0",
    default: "0",
    help: "prefer nodes with no failure seen in this many hours (0: off); used anyway if nothing else fits",
};

/// `duration`: which durations the policy may use, read as a [`Source`].
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
