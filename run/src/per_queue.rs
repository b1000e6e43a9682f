//! Per-queue durations: `--queue-checkpoint-s QUEUE=SECONDS` (repeatable) on the command
//! line, a table `{ QUEUE = SECONDS, ... }` in TOML and JSON.

use crate::Seconds;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// One `QUEUE=SECONDS` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSeconds {
    /// The queue's name, as jobs name it.
    pub queue: String,
    /// Its value.
    pub seconds: Seconds,
}

impl FromStr for QueueSeconds {
    type Err = String;
    fn from_str(text: &str) -> Result<QueueSeconds, String> {
        let (queue, secs) = text.split_once('=').ok_or_else(|| format!("`{text}`: expected QUEUE=SECONDS"))?;
        if queue.trim().is_empty() {
            return Err(format!("`{text}`: expected QUEUE=SECONDS, with a queue name before `=`"));
        }
        Ok(QueueSeconds { queue: queue.trim().to_string(), seconds: secs.parse()? })
    }
}

impl fmt::Display for QueueSeconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.queue, self.seconds)
    }
}

/// The pairs as a map, refusing a queue given twice (one value would be lost).
pub fn to_map(flag: &str, pairs: &[QueueSeconds]) -> Result<BTreeMap<String, Seconds>, String> {
    let mut map = BTreeMap::new();
    for pair in pairs {
        if map.insert(pair.queue.clone(), pair.seconds).is_some() {
            return Err(format!("{flag}: queue `{}` given twice", pair.queue));
        }
    }
    Ok(map)
}

/// serde for `Vec<QueueSeconds>` as a `{ QUEUE = SECONDS }` table.
pub fn serialize<S: Serializer>(pairs: &[QueueSeconds], s: S) -> Result<S::Ok, S::Error> {
    let map: BTreeMap<&str, Seconds> = pairs.iter().map(|p| (p.queue.as_str(), p.seconds)).collect();
    map.serialize(s)
}

/// serde for `Vec<QueueSeconds>` from a `{ QUEUE = SECONDS }` table.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<QueueSeconds>, D::Error> {
    let map = BTreeMap::<String, Seconds>::deserialize(d)?;
    if map.keys().any(|q| q.trim().is_empty()) {
        return Err(D::Error::custom("a queue name is empty"));
    }
    Ok(map.into_iter().map(|(queue, seconds)| QueueSeconds { queue, seconds }).collect())
}
