//! A set of names seen so far with a number for each (the line of a job id's first row, the
//! index of a job), for readers that refuse a repeated name. Rows are borrowed from a reused
//! buffer, so a `BTreeMap<String, _>` would allocate a key per row and compare strings on every
//! level of the tree; here names are copied into one growing text arena and found by a 64-bit
//! hash, so a lookup is one hash and, on a hit, one comparison.
//!
//! Nothing iterates this map, so its order cannot leak into a result: the determinism rule
//! (ordered collections) is about iteration, and lookups give the same answer in any order.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// `prefix` then `n` in decimal (`philly-42`, `synth-7`), built in place: `format!` costs more
/// than the rest of a job, and a name this short is kept inline (no allocation).
pub(crate) fn numbered(prefix: &'static str, n: u64) -> sim::Name {
    use compact_str::ToCompactString;
    let mut name = sim::Name::const_new(prefix);
    name.push_str(&n.to_compact_string());
    name
}

/// Names and their values; see the module comment. Each distinct name also has an id (0, 1,
/// ... in insertion order) for readers that intern repeated names, such as queues.
pub(crate) struct NameIndex {
    /// Name hash -> id of the first name inserted with that hash.
    slots: HashMap<u64, usize, BuildHasherDefault<KeyIsHash>>,
    /// By id: the name's end in `arena` (it starts where the previous one ends) and its value.
    entries: Vec<(usize, u64)>,
    arena: String,
    /// Ids of names whose hash another name already took (a 64-bit collision: in practice
    /// never, but a file could be crafted to cause one, and the answer must still be right).
    collided: BTreeMap<String, usize>,
    hash: fn(&str) -> u64,
}

impl Default for NameIndex {
    fn default() -> NameIndex {
        NameIndex::with_hash(hash_name)
    }
}

impl NameIndex {
    pub(crate) fn new() -> NameIndex {
        NameIndex::default()
    }

    fn with_hash(hash: fn(&str) -> u64) -> NameIndex {
        NameIndex {
            slots: HashMap::default(),
            entries: Vec::new(),
            arena: String::new(),
            collided: BTreeMap::new(),
            hash,
        }
    }

    /// The value stored for `name`, if it was inserted.
    pub(crate) fn get(&self, name: &str) -> Option<u64> {
        self.find((self.hash)(name), name).map(|id| self.entries[id].1)
    }

    /// Stores `value` for `name`, replacing any value it had.
    pub(crate) fn insert(&mut self, name: &str, value: u64) {
        let id = self.intern(name);
        self.entries[id].1 = value;
    }

    /// The id of `name`, added (with value 0) if it is new.
    pub(crate) fn intern(&mut self, name: &str) -> usize {
        let hash = (self.hash)(name);
        if let Some(id) = self.find(hash, name) {
            return id;
        }
        let id = self.entries.len();
        self.arena.push_str(name);
        self.entries.push((self.arena.len(), 0));
        match self.slots.entry(hash) {
            Entry::Occupied(_) => {
                self.collided.insert(name.to_owned(), id);
            }
            Entry::Vacant(slot) => {
                slot.insert(id);
            }
        }
        id
    }

    /// The name with id `id` (empty for an id never given out).
    pub(crate) fn name(&self, id: usize) -> &str {
        let start = id.checked_sub(1).and_then(|previous| self.entries.get(previous)).map_or(0, |e| e.0);
        let end = self.entries.get(id).map_or(start, |e| e.0);
        self.arena.get(start..end).unwrap_or_default()
    }

    fn find(&self, hash: u64, name: &str) -> Option<usize> {
        match self.slots.get(&hash) {
            Some(&id) if self.name(id) == name => Some(id),
            Some(_) => self.collided.get(name).copied(),
            None => None,
        }
    }
}

/// Eight bytes at a time (job ids are often 36-character UUIDs), rotate-xor-multiply as in
/// FxHash with the length mixed in, then murmur3's 64-bit finalizer so that every bit of the
/// result depends on every byte (the map uses both the low and the high bits). Fixed, not
/// seeded: the same on every run, which only matters for speed, never for an answer.
fn hash_name(name: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let bytes = name.as_bytes();
    let mix = |h: u64, word: [u8; 8]| (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h = mix(h, word.try_into().unwrap_or_default());
    }
    if !words.remainder().is_empty() {
        let mut last = [0u8; 8];
        last[..words.remainder().len()].copy_from_slice(words.remainder());
        h = mix(h, last);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The map's hasher: its keys are already hashes.
#[derive(Default)]
struct KeyIsHash(u64);

impl Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the keys are u64); fold anything else in all the same.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names_read_as_format_gives_them() {
        for n in [0, 7, 10, 82_249, 999_999, 123_456_789, u64::MAX] {
            assert_eq!(numbered("philly-", n), format!("philly-{n}"));
            assert_eq!(numbered("synth-", n), format!("synth-{n}"));
        }
    }

    #[test]
    fn names_keep_their_values() {
        let mut index = NameIndex::new();
        assert_eq!(index.get("a"), None);
        index.insert("a", 2);
        index.insert("", 3);
        index.insert("job-17", 4);
        assert_eq!(
            (index.get("a"), index.get(""), index.get("job-17"), index.get("job-1")),
            (Some(2), Some(3), Some(4), None)
        );
        index.insert("a", 9);
        assert_eq!(index.get("a"), Some(9));
        assert_eq!((index.intern("job-17"), index.intern("b"), index.intern("b")), (2, 3, 3));
        let names: Vec<&str> = (0..5).map(|id| index.name(id)).collect();
        assert_eq!(names, ["a", "", "job-17", "b", ""]);
    }

    #[test]
    fn colliding_hashes_still_tell_names_apart() {
        // Every name hashes alike: the first takes the slot, the others go to the fallback.
        let mut index = NameIndex::with_hash(|_| 7);
        for (i, name) in ["x", "y", "zz", ""].iter().enumerate() {
            assert_eq!(index.get(name), None, "{name}");
            index.insert(name, i as u64);
        }
        for (i, name) in ["x", "y", "zz", ""].iter().enumerate() {
            assert_eq!(index.get(name), Some(i as u64), "{name}");
        }
        assert_eq!(index.get("w"), None);
        index.insert("y", 10);
        assert_eq!(index.get("y"), Some(10));
        assert_eq!((index.intern("zz"), index.intern("new")), (2, 4));
        assert_eq!((index.name(2), index.name(4)), ("zz", "new"));
    }

    #[test]
    fn many_names_are_all_found() {
        let mut index = NameIndex::new();
        for i in 0..20_000u64 {
            index.insert(&format!("j{i}"), i);
        }
        assert!((0..20_000u64).all(|i| index.get(&format!("j{i}")) == Some(i)));
        assert_eq!(index.get("j20000"), None);
    }
}
