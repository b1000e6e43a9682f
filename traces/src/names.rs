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
    let mut name = sim::Name::const_new(prefix);
    name.push_str(itoa::Buffer::new().format(n));
    name
}

/// A name's hash in a [`NameIndex`] (from [`NameIndex::hash`]).
#[derive(Clone, Copy)]
pub(crate) struct Hashed(u64);

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
    /// The ids of short names interned lately, by [`packed`] name: a direct-mapped cache
    /// (each name has one slot, which a later name may take over) in front of the hash, for
    /// readers that intern a few short names once per row (Philly's virtual clusters). Empty
    /// until [`NameIndex::intern`] first finds a short name; a slot holds (packed name, id + 1),
    /// 0 when empty.
    recent: Vec<(u64, usize)>,
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
            recent: Vec::new(),
        }
    }

    /// The value stored for `name`, if it was inserted.
    pub(crate) fn get(&self, name: &str) -> Option<u64> {
        self.get_hashed(self.hash(name), name)
    }

    /// `name`'s hash, for [`NameIndex::get_hashed`] and [`NameIndex::insert_new`]: a reader
    /// that looks a name up and then inserts it hashes it once.
    pub(crate) fn hash(&self, name: &str) -> Hashed {
        Hashed((self.hash)(name))
    }

    /// [`NameIndex::get`] with the hash of `name` from [`NameIndex::hash`].
    pub(crate) fn get_hashed(&self, hash: Hashed, name: &str) -> Option<u64> {
        self.find(hash.0, name).map(|id| self.entries[id].1)
    }

    /// Stores `value` for `name`, which [`NameIndex::get_hashed`] just did not find (with the
    /// same `hash`).
    pub(crate) fn insert_new(&mut self, hash: Hashed, name: &str, value: u64) {
        let (Ok(id) | Err(id)) = self.find_or_add(hash.0, name);
        self.entries[id].1 = value;
    }

    /// Stores `value` for `name` if it is new (`None`); else leaves it and gives the value it
    /// has. One hash and one probe of the map, where a look-up then an insertion took two.
    pub(crate) fn insert_if_new(&mut self, name: &str, value: u64) -> Option<u64> {
        match self.find_or_add((self.hash)(name), name) {
            Ok(id) => Some(self.entries[id].1),
            Err(id) => {
                self.entries[id].1 = value;
                None
            }
        }
    }

    /// Stores `value` for `name`, replacing any value it had.
    pub(crate) fn insert(&mut self, name: &str, value: u64) {
        let id = self.intern(name);
        self.entries[id].1 = value;
    }

    /// The id of `name`, added (with value 0) if it is new.
    pub(crate) fn intern(&mut self, name: &str) -> usize {
        const SLOTS: usize = 256;
        let Some(packed) = packed(name) else { return self.intern_hashed(name) };
        let slot = (packed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize;
        if let Some(&(known, id_plus_one)) = self.recent.get(slot)
            && known == packed
            && id_plus_one != 0
        {
            return id_plus_one - 1;
        }
        let id = self.intern_hashed(name);
        if self.recent.is_empty() {
            self.recent.resize(SLOTS, (0, 0));
        }
        if let Some(cached) = self.recent.get_mut(slot) {
            *cached = (packed, id + 1);
        }
        id
    }

    /// [`NameIndex::intern`] through the hash map.
    fn intern_hashed(&mut self, name: &str) -> usize {
        let (Ok(id) | Err(id)) = self.find_or_add((self.hash)(name), name);
        id
    }

    /// The id of `name` (`hash` its hash): `Ok` if it was here, else `Err` with the id it is
    /// added under (with value 0). One probe of the map finds it or the slot for it.
    fn find_or_add(&mut self, hash: u64, name: &str) -> Result<usize, usize> {
        let id = self.entries.len();
        match self.slots.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(id);
            }
            Entry::Occupied(slot) => {
                let taken = *slot.get();
                if same_text(self.name(taken), name) {
                    return Ok(taken);
                }
                if let Some(&known) = self.collided.get(name) {
                    return Ok(known);
                }
                self.collided.insert(name.to_owned(), id);
            }
        }
        self.arena.push_str(name);
        self.entries.push((self.arena.len(), 0));
        Err(id)
    }

    /// The name with id `id` (empty for an id never given out).
    pub(crate) fn name(&self, id: usize) -> &str {
        let start = id.checked_sub(1).and_then(|previous| self.entries.get(previous)).map_or(0, |e| e.0);
        let end = self.entries.get(id).map_or(start, |e| e.0);
        self.arena.get(start..end).unwrap_or_default()
    }

    fn find(&self, hash: u64, name: &str) -> Option<usize> {
        match self.slots.get(&hash) {
            Some(&id) if same_text(self.name(id), name) => Some(id),
            Some(_) => self.collided.get(name).copied(),
            None => None,
        }
    }
}

/// A name of at most 7 bytes as one word, exactly: its bytes from the lowest, its length in
/// the highest byte (so that two names have the same word only if they are the same name).
/// `None` for longer names.
fn packed(name: &str) -> Option<u64> {
    let bytes = name.as_bytes();
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(bytes.get(at..at + 4).and_then(|w| w.try_into().ok()).unwrap_or_default()))
    };
    let byte = |at: usize| u64::from(bytes.get(at).copied().unwrap_or_default());
    // Overlapping reads put the same byte in the same place, so or-ing them is exact.
    let word = match bytes.len() {
        0 => 0,
        len @ 1..=3 => byte(0) | byte(len / 2) << (8 * (len / 2)) | byte(len - 1) << (8 * (len - 1)),
        len @ 4..=7 => half(0) | half(len - 4) << (8 * (len - 4)),
        _ => return None,
    };
    Some(word | (bytes.len() as u64) << 56)
}

/// `a == b`, for the short names of traces (queues, job ids) without a call to `memcmp`,
/// which costs more than the comparison: up to 16 bytes as two overlapping words.
#[inline]
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes.get(at..at + 8).and_then(|w| w.try_into().ok()).unwrap_or_default())
    };
    let half = |bytes: &[u8], at: usize| {
        u32::from_le_bytes(bytes.get(at..at + 4).and_then(|w| w.try_into().ok()).unwrap_or_default())
    };
    match a.len() {
        len @ 8..=16 => word(a, 0) == word(b, 0) && word(a, len - 8) == word(b, len - 8),
        len @ 4..=7 => half(a, 0) == half(b, 0) && half(a, len - 4) == half(b, len - 4),
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
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
    let tail = words.remainder();
    if !tail.is_empty() {
        // The tail's bytes as one word without copying them one by one: its last 8 bytes
        // (overlapping the words before) when the name has 8, else two overlapping 4-byte or
        // three single-byte reads. The length, mixed in first, keeps names apart.
        let word = match (bytes.len(), tail.len()) {
            (len, _) if len >= 8 => bytes[len - 8..].try_into().unwrap_or_default(),
            (_, n) if n >= 4 => {
                let low: [u8; 4] = tail[..4].try_into().unwrap_or_default();
                let high: [u8; 4] = tail[n - 4..].try_into().unwrap_or_default();
                (u64::from(u32::from_le_bytes(low)) | u64::from(u32::from_le_bytes(high)) << 32).to_le_bytes()
            }
            (_, n) => (u64::from(tail[0]) | u64::from(tail[n / 2]) << 8 | u64::from(tail[n - 1]) << 16).to_le_bytes(),
        };
        h = mix(h, word);
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
    fn short_names_pack_exactly() {
        let names =
            ["", "a", "b", "ab", "ba", "abc", "acb", "abcd", "abdc", "6214e9", "6214e8", "abcdefg", "\0", "\0\0"];
        for a in names {
            let word = packed(a).unwrap();
            assert_eq!(word >> 56, a.len() as u64);
            let bytes: Vec<u8> = word.to_le_bytes()[..a.len()].to_vec();
            assert_eq!(bytes, a.as_bytes());
            for b in names {
                assert_eq!(packed(b) == Some(word), a == b, "{a:?} {b:?}");
            }
        }
        assert_eq!(packed("abcdefgh"), None);
    }

    #[test]
    fn interning_many_short_names_gives_each_one_id() {
        // More short names than cache slots (and some long ones), interned over and over in
        // changing orders: each keeps the id it got first, in order of first appearance.
        let mut index = NameIndex::new();
        let names: Vec<String> =
            (0..700).map(|i| if i % 10 == 0 { format!("long-name-{i}") } else { format!("v{i}") }).collect();
        let mut ids = vec![usize::MAX; names.len()];
        for (k, i) in (0..names.len()).map(|k| (k, k * 37 % names.len())) {
            ids[i] = index.intern(&names[i]);
            assert_eq!(ids[i], k);
        }
        for step in [1, 3, 11, 37] {
            for i in (0..names.len()).map(|k| k * step % names.len()) {
                assert_eq!(index.intern(&names[i]), ids[i], "{}", names[i]);
                assert_eq!(index.name(ids[i]), names[i]);
            }
        }
    }

    #[test]
    fn same_text_is_equality() {
        let names = ["", "a", "b", "ab", "abc", "abd", "abcd", "abce", "6214e9", "6214e8", "philly-1", "philly-2"];
        let long = ["philly-123456789", "philly-123456780", "0123456789abcdefg", "0123456789abcdefh"];
        for a in names.iter().chain(&long) {
            for b in names.iter().chain(&long) {
                assert_eq!(same_text(a, b), a == b, "{a:?} {b:?}");
            }
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
    fn insert_if_new_is_a_look_up_then_an_insertion() {
        // Against get-then-insert, with a real hash and with every name colliding: the value
        // first stored is kept, and a repeat gets it back.
        for hash in [hash_name as fn(&str) -> u64, |_| 7] {
            let (mut index, mut reference) = (NameIndex::with_hash(hash), NameIndex::with_hash(hash));
            let names = ["x", "y", "x", "", "zz", "", "a-36-character-uuid-like-job-name-00", "y", "zz"];
            for (line, name) in names.iter().enumerate() {
                let expected = reference.get(name);
                if expected.is_none() {
                    reference.insert(name, line as u64);
                }
                assert_eq!(index.insert_if_new(name, line as u64), expected, "{name:?}");
            }
            for name in names.iter().chain(&["w", "xx"]) {
                assert_eq!(index.get(name), reference.get(name), "{name:?}");
                assert_eq!(index.intern(name), reference.intern(name), "{name:?}");
            }
        }
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
