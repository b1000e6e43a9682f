//! One damage to a text, and a text with its damages applied: what the fuzzing of the readers
//! (no_panics.rs, fuzz_importers.rs) does to real rows.

/// One damage: overwrite, delete or insert a byte, insert a token, or duplicate or drop a line.
#[derive(Debug, Clone)]
pub enum Damage {
    Set(usize, u8),
    Delete(usize),
    Insert(usize, u8),
    Token(usize, &'static str),
    DuplicateLine(usize),
    DropLine(usize),
}

/// `text` with each of `damages` applied in turn (positions taken modulo the length then).
pub fn damaged(text: &str, damages: &[Damage]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for d in damages {
        let len = bytes.len();
        match *d {
            Damage::Set(i, b) if len > 0 => bytes[i % len] = b,
            Damage::Delete(i) if len > 0 => {
                bytes.remove(i % len);
            }
            Damage::Insert(i, b) => bytes.insert(i % (len + 1), b),
            Damage::Token(i, t) => {
                let at = i % (len + 1);
                bytes.splice(at..at, t.bytes());
            }
            Damage::DuplicateLine(i) | Damage::DropLine(i) => {
                let mut lines: Vec<Vec<u8>> = bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                if !lines.is_empty() {
                    let at = i % lines.len();
                    if matches!(d, Damage::DuplicateLine(_)) {
                        let line = lines[at].clone();
                        lines.insert(at, line);
                    } else {
                        lines.remove(at);
                    }
                }
                bytes = lines.concat();
            }
            _ => {}
        }
    }
    bytes
}
