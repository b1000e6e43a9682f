//! Byte-level damage to valid bodies: bytes set, deleted, inserted and duplicated, tokens
//! parsers get wrong, arrays nested past serde_json's recursion limit.

use super::harness::all_classes;
use super::json::{Body, nested};
use proptest::prelude::*;

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
pub enum Damage {
    Set(usize, u8),
    Delete(usize, usize),
    Insert(usize, &'static str),
    Byte(usize, u8),
    Duplicate(usize, usize),
    Nest(usize),
}

pub fn damage() -> impl Strategy<Value = Damage> {
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
pub fn damages() -> impl Strategy<Value = Vec<Damage>> {
    prop_oneof![1 => Just(0usize), 4 => 1usize..3, 1 => 3usize..7].prop_flat_map(|n| prop::collection::vec(damage(), n))
}

/// `base` with `damages` done to it in turn.
pub fn damaged(base: &[u8], damages: &[Damage]) -> Vec<u8> {
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

/// A corpus body of `seeds` (3 times in 5) or one of `text`, damaged.
pub fn damaged_body(seeds: Vec<Vec<u8>>, text: BoxedStrategy<String>) -> impl Strategy<Value = Body> {
    let base = prop_oneof![
        3 => prop::sample::select(seeds).prop_map(Body),
        2 => text.prop_map(|t| Body(t.into_bytes())),
    ];
    (base, damages()).prop_map(|(b, ds)| Body(damaged(&b.0, &ds)))
}
