//! `PolicySpec`: a policy's name and its parameters, parsed once from `name[key=value,...]`
//! and printed back canonically (keys sorted). The one parser of policy specs: `--policy`,
//! sweep files, regression specs and the registry all go through it.
//!
//! In serde formats a spec is its canonical string, `"sjf[duration=estimate]"`; it is also
//! read from a table, `{ name = "sjf", duration = "estimate", depth = 50 }`, whose values may
//! be strings, integers, floats or booleans (kept as their text; a float as the shortest text
//! that reads back as the same number). A policy cannot take a parameter called `name` in a
//! table.

#![deny(missing_docs)]

use crate::params::SpecError;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A parsed policy spec: which policy, with which parameters (their values still text: the
/// policy's constructor parses them, see `Params`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    name: String,
    params: BTreeMap<String, String>,
}

impl Default for PolicySpec {
    /// `fifo`, with its defaults.
    fn default() -> PolicySpec {
        PolicySpec { name: "fifo".to_string(), params: BTreeMap::new() }
    }
}

impl PolicySpec {
    /// The spec of policy `name` with no parameters. `name` must be a word a spec can hold:
    /// not empty, no spaces, none of `[ ] = ,`.
    pub fn new(name: &str) -> Result<PolicySpec, SpecError> {
        check_word("policy name", name, name)?;
        Ok(PolicySpec { name: name.to_string(), params: BTreeMap::new() })
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameters given, by key.
    pub fn params(&self) -> &BTreeMap<String, String> {
        &self.params
    }

    /// The value given for `key`, if any.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }

    /// Sets `key` to `value`, returning the value it replaces. The key follows the name's
    /// rules; the value may not contain `,` (it separates parameters: lists use `;`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<Option<String>, SpecError> {
        check_word("parameter", key, &self.to_string())?;
        check_value(key, value, &self.to_string())?;
        Ok(self.params.insert(key.to_string(), value.to_string()))
    }

    /// This spec with `key` set to `value` (see [`PolicySpec::set`]).
    pub fn with(mut self, key: &str, value: &str) -> Result<PolicySpec, SpecError> {
        self.set(key, value)?;
        Ok(self)
    }
}

/// A name or key: not empty, no whitespace, none of the characters the syntax uses.
fn check_word(what: &str, word: &str, spec: &str) -> Result<(), SpecError> {
    if word.is_empty() {
        return Err(SpecError(format!("policy spec `{spec}`: the {what} is empty")));
    }
    if let Some(c) = word.chars().find(|&c| c.is_whitespace() || "[]=,".contains(c)) {
        return Err(SpecError(format!("policy spec `{spec}`: the {what} `{word}` contains `{c}`")));
    }
    Ok(())
}

fn check_value(key: &str, value: &str, spec: &str) -> Result<(), SpecError> {
    if value.contains(',') {
        return Err(SpecError(format!(
            "policy spec `{spec}`: the value of `{key}`, `{value}`, contains `,`, which separates parameters \
             (a list is written `a;b;c`)"
        )));
    }
    if value.trim() != value {
        return Err(SpecError(format!("policy spec `{spec}`: the value of `{key}`, `{value}`, has spaces around it")));
    }
    Ok(())
}

impl FromStr for PolicySpec {
    type Err = SpecError;

    /// Parses `name` or `name[key=value,...]`; spaces around each part are dropped, a key
    /// given twice is an error.
    fn from_str(spec: &str) -> Result<PolicySpec, SpecError> {
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
        let name = name.trim();
        if rest.is_empty()
            && let Some(open) = name.find(['(', '{'])
        {
            // `sjf(duration=oracle)`: parameters in other brackets than the spec's.
            let inner = name[open + 1..].trim_end_matches([')', '}']);
            return Err(SpecError(format!(
                "policy spec `{spec}`: parameters go in square brackets: write `{}[{inner}]`",
                &name[..open]
            )));
        }
        check_word("policy name", name, spec)?;
        let mut parsed = PolicySpec { name: name.to_string(), params: BTreeMap::new() };
        for pair in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| SpecError(format!("policy spec `{spec}`: expected key=value, got `{pair}`")))?;
            let (key, value) = (key.trim(), value.trim());
            check_word("parameter", key, spec)?;
            check_value(key, value, spec)?;
            if parsed.params.insert(key.to_string(), value.to_string()).is_some() {
                return Err(SpecError(format!("policy spec `{spec}`: `{key}` given twice")));
            }
        }
        Ok(parsed)
    }
}

impl fmt::Display for PolicySpec {
    /// `name` alone, or `name[k1=v1,k2=v2]` with the keys sorted: one text per spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if self.params.is_empty() {
            return Ok(());
        }
        let pairs: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        write!(f, "[{}]", pairs.join(","))
    }
}

impl Serialize for PolicySpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PolicySpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PolicySpec, D::Error> {
        deserializer.deserialize_any(SpecVisitor)
    }
}

struct SpecVisitor;

impl<'de> Visitor<'de> for SpecVisitor {
    type Value = PolicySpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a policy spec: `name[key=value,...]`, or a table with `name` and the parameters")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<PolicySpec, E> {
        text.parse().map_err(|e: SpecError| E::custom(e))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<PolicySpec, M::Error> {
        let mut name: Option<String> = None;
        let mut params: Vec<(String, String)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let ParamText(value) = map.next_value()?;
            if key == "name" {
                if name.replace(value).is_some() {
                    return Err(de::Error::custom("policy table: `name` given twice"));
                }
            } else {
                params.push((key, value));
            }
        }
        let name = name.ok_or_else(|| de::Error::custom("policy table: no `name` (which policy?)"))?;
        let mut spec = PolicySpec::new(&name).map_err(de::Error::custom)?;
        for (key, value) in params {
            if spec.set(&key, &value).map_err(de::Error::custom)?.is_some() {
                return Err(de::Error::custom(format!("policy table `{name}`: `{key}` given twice")));
            }
        }
        Ok(spec)
    }
}

/// One value of a policy table as its text.
struct ParamText(String);

impl<'de> Deserialize<'de> for ParamText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ParamText, D::Error> {
        deserializer.deserialize_any(ParamTextVisitor)
    }
}

struct ParamTextVisitor;

impl Visitor<'_> for ParamTextVisitor {
    type Value = ParamText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, an integer, a float or a boolean")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ParamText, E> {
        Ok(ParamText(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ParamText, E> {
        Ok(ParamText(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ParamText, E> {
        Ok(ParamText(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ParamText, E> {
        Ok(ParamText(v.to_string()))
    }
    /// Rust prints the shortest decimal that parses back to the same `f64` (`0.1`, `2`), never
    /// in exponent form, so an integer-valued float reads as an integer parameter too.
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ParamText, E> {
        Ok(ParamText(v.to_string()))
    }
}
