//! The bytes of the per-record CSV files, written without an allocation per field: each row is
//! formatted into one reused buffer that goes out in large chunks. The output is byte for byte
//! what the `csv` crate's writer wrote from `format!`ed fields before it: a field is quoted
//! (its quotes doubled) only when it holds `,` `"` `\r` or `\n`, rows end in `\n`, integers are
//! in decimal, times are seconds with 3 decimals, and each fixed-point decimal is the one
//! `format!("{:.N}", x)` writes of the same `f64` (see [`Row::fixed`]).
//!
//! A row is written through a cursor into room the buffer already has ([`Rows`]): each field
//! makes sure of its room with one comparison and then stores its bytes at known places,
//! instead of a `Vec` growing (its length loaded, checked and stored) byte by byte.

use sim::SimTime;
use std::io::{self, Write};

/// Rows are gathered up to this many bytes, then written out at once.
const CHUNK: usize = 1 << 16;

/// Room added at a time when a row needs more: enough for most rows whole.
const GROW: usize = 1 << 10;

/// The most bytes a `u64` takes in decimal.
const U64_DIGITS: usize = 20;

/// Rows being formatted: `bytes[..len]` are whole rows, and the rest is room for the next.
/// The room holds earlier rows' bytes; a row writes each byte before it reads it.
pub(crate) struct Rows {
    bytes: Vec<u8>,
    len: usize,
}

impl Rows {
    fn new() -> Rows {
        Rows { bytes: vec![0; CHUNK + GROW], len: 0 }
    }

    /// A new row at the end of the rows: its bytes count once [`Row::end`] ends it.
    pub(crate) fn row(&mut self) -> Row<'_> {
        Row { at: self.len, rows: self }
    }

    fn whole(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// One table being written: rows formatted into a buffer that is handed to `out` in chunks of
/// about [`CHUNK`] bytes (so `out` needs no buffer of its own).
pub(crate) struct CsvOut<W: Write> {
    out: W,
    rows: Rows,
}

impl<W: Write> CsvOut<W> {
    /// A table with its header row (names that need no quotes).
    pub(crate) fn new(out: W, header: &[&str]) -> CsvOut<W> {
        let mut rows = Rows::new();
        let mut row = rows.row();
        for name in header {
            row.put(name.as_bytes());
            row.comma();
        }
        row.end();
        CsvOut { out, rows }
    }

    /// The rows to format into (see [`Row`]); call [`CsvOut::done`] after each row or group
    /// of rows.
    pub(crate) fn rows(&mut self) -> &mut Rows {
        &mut self.rows
    }

    /// Writes the rows gathered so far once they fill a chunk.
    pub(crate) fn done(&mut self) -> io::Result<()> {
        if self.rows.len >= CHUNK {
            self.out.write_all(self.rows.whole())?;
            self.rows.len = 0;
        }
        Ok(())
    }

    /// Writes what is left and flushes `out`.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.out.write_all(self.rows.whole())?;
        self.rows.len = 0;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Two decimal digits of each number below 100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes `v` in decimal at `out[at..]` (which has room for [`U64_DIGITS`]) and returns where
/// its digits end. The digits go in place, two at a time from the last: formatting them in a
/// block on the stack and copying it stalls the copy's loads on the digits' small stores, and
/// all eight digits of a block at once in the lanes of one word (three dependent
/// multiplications) was slower than the few pairs of most fields (measured).
#[inline(always)]
fn put_u64(out: &mut [u8], at: usize, mut v: u64) -> usize {
    // Most counts (tasks, GPUs, preemptions, failures, retries) are one digit: one store.
    if v < 10 {
        out[at] = b'0' + v as u8;
        return at + 1;
    }
    let end = at + v.ilog10() as usize + 1;
    let mut last = end;
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        last -= 2;
        out[last..last + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        out[at..at + 2].copy_from_slice(&PAIRS[v as usize * 2..v as usize * 2 + 2]);
    } else {
        out[at] = b'0' + v as u8;
    }
    end
}

/// Writes `v` in decimal with exactly `width` digits (leading zeros; `v < 10^width`) at
/// `out[at..at + width]`; returns `at + width`.
#[inline]
fn put_padded(out: &mut [u8], at: usize, mut v: u64, width: usize) -> usize {
    let end = at + width;
    let mut last = end;
    while last >= at + 2 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        last -= 2;
        out[last..last + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if last > at {
        out[at] = b'0' + v as u8;
    }
    end
}

/// Whether `field` holds a byte that makes the `csv` crate quote it: `,` `"` `\r` or `\n`.
/// Eight bytes at a time: a byte of `x ^ every(b)` is zero where `x` holds `b`, and
/// `has_zero` is exact in saying whether a word has a zero byte (its false marks lie only above
/// a true one).
fn needs_quotes(field: &[u8]) -> bool {
    const fn every(b: u8) -> u64 {
        u64::from_ne_bytes([b; 8])
    }
    let has_zero = |x: u64| x.wrapping_sub(every(1)) & !x & every(0x80) != 0;
    let special = |x: u64| {
        has_zero(x ^ every(b',')) as u8
            | has_zero(x ^ every(b'"')) as u8
            | has_zero(x ^ every(b'\r')) as u8
            | has_zero(x ^ every(b'\n')) as u8
            != 0
    };
    let mut words = field.chunks_exact(8);
    if words.by_ref().any(|w| special(u64::from_ne_bytes(w.try_into().expect("eight bytes")))) {
        return true;
    }
    words.remainder().iter().any(|&b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
}

/// A text field escaped once, comma included, for a value every row of a table repeats (the
/// policy of each decision): [`Row::text`] would scan it, and quote it again, on every row (a
/// policy's name holds commas, so it is always quoted).
pub(crate) struct Escaped(Vec<u8>);

impl Escaped {
    pub(crate) fn new(text: &str) -> Escaped {
        let mut rows = Rows { bytes: Vec::new(), len: 0 };
        let mut row = rows.row();
        row.text(text);
        let end = row.at;
        Escaped(rows.bytes[..end].to_vec())
    }
}

/// One row being formatted: each call appends a field and its comma; [`Row::end`] ends it. A
/// row dropped without its end is not part of the rows.
pub(crate) struct Row<'a> {
    rows: &'a mut Rows,
    /// Where the next byte goes in `rows.bytes`.
    at: usize,
}

impl Row<'_> {
    /// Makes sure `n` bytes of room follow the row's bytes.
    #[inline]
    fn room(&mut self, n: usize) {
        if self.rows.bytes.len() - self.at < n {
            self.grow(n);
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        self.rows.bytes.resize(self.at + n + GROW, 0);
    }

    /// Appends bytes as they are (no comma, no quotes): a part of a text field written in
    /// parts (see [`Row::mark`]).
    #[inline]
    pub(crate) fn put(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        self.rows.bytes[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    #[inline]
    fn comma(&mut self) {
        self.room(1);
        self.rows.bytes[self.at] = b',';
        self.at += 1;
    }

    /// A text field, quoted when the `csv` crate would quote it.
    pub(crate) fn text(&mut self, s: &str) {
        let start = self.mark();
        self.put(s.as_bytes());
        self.end_text(start);
    }

    /// A text field known to need no quotes (a fixed word of the format, such as a state).
    pub(crate) fn word(&mut self, word: &'static str) {
        debug_assert!(!needs_quotes(word.as_bytes()), "{word:?} needs quotes");
        self.put(word.as_bytes());
        self.comma();
    }

    /// A text field escaped beforehand: the same bytes as [`Row::text`] of its text.
    pub(crate) fn escaped(&mut self, field: &Escaped) {
        self.put(&field.0);
    }

    /// Where the row's next field starts: for a text field written in parts ([`Row::put`])
    /// and ended with [`Row::end_text`].
    pub(crate) fn mark(&self) -> usize {
        self.at
    }

    /// Ends a text field written in parts from `start` (quoting it if needed).
    pub(crate) fn end_text(&mut self, start: usize) {
        if needs_quotes(&self.rows.bytes[start..self.at]) {
            self.quote_from(start);
        }
        self.comma();
    }

    /// Quotes the bytes from `start` on, in place, doubling each quote.
    fn quote_from(&mut self, start: usize) {
        let quotes = self.rows.bytes[start..self.at].iter().filter(|&&b| b == b'"').count();
        let old_end = self.at;
        self.room(quotes + 2);
        self.at += quotes + 2;
        let bytes = &mut self.rows.bytes;
        // Move the field right, back to front, doubling each quote; then the opening quote.
        let mut to = self.at - 1;
        bytes[to] = b'"';
        for from in (start..old_end).rev() {
            let b = bytes[from];
            to -= 1;
            bytes[to] = b;
            if b == b'"' {
                to -= 1;
                bytes[to] = b'"';
            }
        }
        debug_assert_eq!(to, start + 1);
        bytes[start] = b'"';
    }

    pub(crate) fn int(&mut self, v: impl Into<u64>) {
        self.room(U64_DIGITS + 1);
        let at = put_u64(&mut self.rows.bytes, self.at, v.into());
        self.rows.bytes[at] = b',';
        self.at = at + 1;
    }

    pub(crate) fn opt_int(&mut self, v: Option<impl Into<u64>>) {
        match v {
            Some(v) => self.int(v),
            None => self.empty(),
        }
    }

    /// Integers separated by `separator`, as one field (that needs no quotes).
    pub(crate) fn ints(&mut self, values: impl Iterator<Item = u64>, separator: u8) {
        for (i, v) in values.enumerate() {
            self.room(U64_DIGITS + 1);
            if i > 0 {
                self.rows.bytes[self.at] = separator;
                self.at += 1;
            }
            self.at = put_u64(&mut self.rows.bytes, self.at, v);
        }
        self.comma();
    }

    pub(crate) fn empty(&mut self) {
        self.comma();
    }

    /// Milliseconds as seconds with 3 decimals: `12.345`.
    pub(crate) fn secs(&mut self, ms: u64) {
        self.room(U64_DIGITS + 5);
        let at = put_u64(&mut self.rows.bytes, self.at, ms / 1000);
        let r = (ms % 1000) as usize;
        let (hundreds, rest) = (r / 100, r % 100 * 2);
        self.rows.bytes[at..at + 5].copy_from_slice(&[b'.', b'0' + hundreds as u8, PAIRS[rest], PAIRS[rest + 1], b',']);
        self.at = at + 5;
    }

    pub(crate) fn opt_secs(&mut self, t: Option<SimTime>) {
        match t {
            Some(t) => self.secs(t.as_ms()),
            None => self.empty(),
        }
    }

    /// `to - from` in seconds (as [`Row::secs`]); empty without `to`.
    pub(crate) fn span(&mut self, from: SimTime, to: Option<SimTime>) {
        match to {
            Some(to) => self.secs(to.since(from).as_ms()),
            None => self.empty(),
        }
    }

    /// `units / 10^digits` with its `digits` decimals and a comma (`digits` at most 19).
    /// Inlined, so that `digits` is a constant and the divisions multiplications.
    #[inline(always)]
    fn decimal(&mut self, units: u64, digits: u32) {
        let scale = 10u64.pow(digits);
        self.room(2 * U64_DIGITS + 2);
        let at = put_u64(&mut self.rows.bytes, self.at, units / scale);
        self.rows.bytes[at] = b'.';
        let at = put_padded(&mut self.rows.bytes, at + 1, units % scale, digits as usize);
        self.rows.bytes[at] = b',';
        self.at = at + 1;
    }

    /// The `f64` `value()` with `digits` decimals, byte for byte as `format!("{:.digits$}")`
    /// writes it, where `value()` is `num / den / 10^digits` computed in floating point with a
    /// relative error below 2^-50 (a few roundings: each conversion and division adds at most
    /// 2^-53). `den` must not be 0.
    ///
    /// `format!` rounds the exact binary value of the `f64` to `digits` decimals. The rational
    /// `num / den` (the value in units of the last decimal) is `q + r / den`; the only rounding
    /// boundary within half a unit of it is `q + 1/2`, at distance `|2r - den| / 2den`. The `f64`
    /// lies within `(q + 1) 2^-50` units of the rational, so when that is less than the
    /// distance, both round to the same integer: `q`, or `q + 1` above the boundary, written
    /// with integer arithmetic. Otherwise (an exact tie, a value too close to one, or numbers
    /// too large for the check) the `f64` is formatted by `std`, as before.
    #[inline(always)]
    pub(crate) fn fixed(&mut self, num: u128, den: u128, digits: u32, value: impl FnOnce() -> f64) {
        debug_assert!(den > 0);
        let text = match rounded_units(num, den) {
            Some(units) => match u64::try_from(units) {
                Ok(units) => return self.decimal(units, digits),
                Err(_) => {
                    let scale = 10u128.pow(digits);
                    format!("{}.{:0width$}", units / scale, units % scale, width = digits as usize)
                }
            },
            None => format!("{:.*}", digits as usize, value()),
        };
        self.put(text.as_bytes());
        self.comma();
    }

    /// Ends the row: its last comma becomes the line's end, and the row counts.
    pub(crate) fn end(self) {
        debug_assert_eq!(self.rows.bytes[self.at - 1], b',', "a row has fields");
        self.rows.bytes[self.at - 1] = b'\n';
        self.rows.len = self.at;
    }
}

/// The integer nearest `num / den`, where the `f64` of it provably rounds to the same (see
/// [`Row::fixed`]); `None` where that is not shown (at or near a tie, or too large to check).
fn rounded_units(num: u128, den: u128) -> Option<u128> {
    if let (Ok(n), Ok(d)) = (u64::try_from(num), u64::try_from(den)) {
        // The usual case, in 64 bits: the check halved, `(q + 1) den < |2r - den| 2^49`
        // (no overflow: both sides are below 2^128), and passing it means q < 2^49.
        let (q, r) = (u128::from(n / d), u128::from(n % d));
        let d = u128::from(d);
        let distance = (2 * r).abs_diff(d);
        return ((q + 1) * d < distance << 49).then_some(q + u128::from(2 * r > d));
    }
    let (q, r) = (num / den, num % den);
    let distance = (2 * r).abs_diff(den);
    let error = (q + 1).checked_mul(den)?;
    let margin = distance.checked_mul(1 << 49)?;
    (error < margin).then_some(if 2 * r > den { q + 1 } else { q })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the `csv` crate writes for one row of these text fields.
    fn csv_crate(fields: &[&str]) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(fields).unwrap();
        w.into_inner().unwrap()
    }

    /// The bytes `write` formats into a row after `before` (so that a field is checked away
    /// from the buffer's start), up to its cursor: the row is not ended.
    fn formatted(before: &[u8], write: impl FnOnce(&mut Row)) -> Vec<u8> {
        let mut rows = Rows { bytes: Vec::new(), len: 0 };
        let mut row = rows.row();
        row.put(before);
        write(&mut row);
        let end = row.at;
        rows.bytes[before.len()..end].to_vec()
    }

    fn ours(fields: &[&str]) -> Vec<u8> {
        let mut rows = Rows { bytes: Vec::new(), len: 0 };
        let mut row = rows.row();
        for f in fields {
            row.text(f);
        }
        row.end();
        rows.whole().to_vec()
    }

    #[test]
    fn text_is_quoted_as_the_csv_crate_quotes_it() {
        for fields in [
            &["a", "b"][..],
            &["", "x"],
            &["a,b", "c"],
            &["say \"hi\"", "\"", "\"\""],
            &["line\nbreak", "cr\rhere", "both\r\n"],
            &["ünïcödé, too", "#hash", " spaced "],
        ] {
            assert_eq!(ours(fields), csv_crate(fields), "{fields:?}");
        }
    }

    /// A field escaped once is written as the `csv` crate writes the text, row after row.
    #[test]
    fn an_escaped_field_is_the_text_as_the_csv_crate_quotes_it() {
        for text in ["fifo", "fifo[skip=false,placement=pack]", "say \"hi\", then", "", "line\nbreak"] {
            let field = Escaped::new(text);
            let mut rows = Rows::new();
            let mut row = rows.row();
            row.escaped(&field);
            row.text("x");
            row.escaped(&field);
            row.end();
            assert_eq!(rows.whole(), csv_crate(&[text, "x", text]), "{text:?}");
        }
    }

    /// Every number of digits, at its edges.
    #[test]
    fn integers_at_each_power_of_ten_as_to_string_writes_them() {
        for power in 0..=19 {
            let p = 10u64.pow(power);
            for v in [p - 1, p, p + 1, p.saturating_mul(10) - 1, u64::MAX] {
                assert_eq!(formatted(b"x", |row| row.int(v)), format!("{v},").into_bytes(), "{v}");
                assert_eq!(formatted(b"x", |row| row.secs(v)), format!("{}.{:03},", v / 1000, v % 1000).into_bytes());
            }
        }
    }

    /// A row longer than the room the rows start with grows it, keeping what came before;
    /// a row dropped without its end is not written, and the next row starts where it did.
    #[test]
    fn rows_grow_as_needed_and_count_only_ended_rows() {
        let long = "x\"".repeat(3 * GROW);
        let mut rows = Rows::new();
        let mut row = rows.row();
        row.int(7u64);
        row.end();
        rows.row().text("dropped"); // never ended
        while rows.len < CHUNK {
            let mut row = rows.row();
            row.text("filler");
            row.end();
        }
        let mut row = rows.row();
        row.text(&long);
        row.secs(1_234);
        row.end();
        let whole = rows.whole();
        let fillers = (whole.len() - 2 - csv_crate(&[&long, "1.234"]).len()) / "filler\n".len();
        let mut expected = b"7\n".to_vec();
        expected.extend("filler\n".repeat(fillers).bytes());
        expected.extend(csv_crate(&[&long, "1.234"]));
        assert_eq!(whole, expected);
    }

    fn fixed(num: u128, den: u128, digits: u32, value: f64) -> String {
        let mut buf = formatted(b"", |row| row.fixed(num, den, digits, || value));
        assert_eq!(buf.pop(), Some(b','));
        String::from_utf8(buf).unwrap()
    }

    /// GPU-hours: `mgpu_ms as f64 / 3.6e9` with 6 decimals, i.e. `mgpu_ms / 3600` units.
    fn hours_both(mgpu_ms: u64) -> (String, String) {
        let value = mgpu_ms as f64 / 3_600_000_000.0;
        (fixed(u128::from(mgpu_ms), 3600, 6, value), format!("{value:.6}"))
    }

    #[test]
    fn fixed_point_matches_format_at_ties_and_edges() {
        for mgpu_ms in [0, 1, 1799, 1800, 1801, 3599, 3600, 5400, 1_800_000_000, (1 << 53) + 1800, u64::MAX] {
            let (a, b) = hours_both(mgpu_ms);
            assert_eq!(a, b, "{mgpu_ms}");
        }
        // Seconds of a mean: 3 decimals of ms / 1000 / n, with its two roundings.
        for (ms, n) in [(1u64, 2u32), (1, 3), (5, 2), (2_500, 2), (1_000_000_007, 7), (u64::MAX, 3)] {
            let value = ms as f64 / 1000.0 / f64::from(n);
            assert_eq!(fixed(u128::from(ms), u128::from(n), 3, value), format!("{value:.3}"), "{ms} {n}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(20_000) })]

        #[test]
        fn integers_as_to_string_writes_them(v in prop_oneof![0u64..1_000, any::<u64>()], ms in any::<u64>()) {
            prop_assert_eq!(formatted(b"x", |row| row.int(v)), format!("{v},").into_bytes());
            prop_assert_eq!(formatted(b"x", |row| row.secs(ms)), format!("{}.{:03},", ms / 1000, ms % 1000).into_bytes());
        }

        /// The word-at-a-time check finds each special byte wherever it is, and only them.
        #[test]
        fn quotes_are_needed_exactly_where_a_special_byte_is(
            field in proptest::collection::vec(prop_oneof![any::<u8>(), Just(b','), Just(b'"'), Just(b'\r'), Just(b'\n')], 0..40)
        ) {
            let naive = field.iter().any(|&b| matches!(b, b',' | b'"' | b'\r' | b'\n'));
            prop_assert_eq!(needs_quotes(&field), naive);
        }

        #[test]
        fn integer_lists_as_format_writes_them(values in proptest::collection::vec(any::<u64>(), 0..6)) {
            let spaced = values.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            prop_assert_eq!(formatted(b"x", |row| row.ints(values.iter().copied(), b' ')), format!("{spaced},").into_bytes());
        }

        #[test]
        fn padded_as_format_writes_it(width in 1usize..=12, v in any::<u64>()) {
            let v = v % 10u64.pow(width as u32);
            let mut out = [b'x'; 14];
            prop_assert_eq!(put_padded(&mut out, 1, v, width), 1 + width);
            prop_assert_eq!(out[1..1 + width].to_vec(), format!("{v:0width$}").into_bytes());
            prop_assert_eq!((out[0], out[1 + width]), (b'x', b'x'));
        }

        #[test]
        fn gpu_hours_as_format_writes_them(mgpu_ms in prop_oneof![0u64..10_000_000, any::<u64>(), (0u64..1 << 40).prop_map(|k| k * 3600 + 1800)]) {
            let (a, b) = hours_both(mgpu_ms);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn ratios_as_format_writes_them(num in 0u64..1 << 50, den in 1u128..1 << 70) {
            // ETTR: productive / (span x mgpus), 6 decimals.
            let value = num as f64 / den as f64;
            prop_assert_eq!(fixed(u128::from(num) * 1_000_000, den, 6, value), format!("{value:.6}"));
        }

        #[test]
        fn small_ratios_as_format_writes_them(num in 0u64..100_000, den in 1u64..100_000) {
            let value = num as f64 / den as f64;
            prop_assert_eq!(fixed(u128::from(num) * 1_000_000, u128::from(den), 6, value), format!("{value:.6}"));
            let mean = num as f64 / 1000.0 / den as f64;
            prop_assert_eq!(fixed(u128::from(num), u128::from(den), 3, mean), format!("{mean:.3}"));
        }
    }
}
