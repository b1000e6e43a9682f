//! The bytes of the per-record CSV files, written without an allocation per field: each row is
//! formatted into one reused buffer that goes out in large chunks. The output is byte for byte
//! what the `csv` crate's writer wrote from `format!`ed fields before it: a field is quoted
//! (its quotes doubled) only when it holds `,` `"` `\r` or `\n`, rows end in `\n`, integers are
//! in decimal, times are seconds with 3 decimals, and each fixed-point decimal is the one
//! `format!("{:.N}", x)` writes of the same `f64` (see [`Row::fixed`]).

use sim::SimTime;
use std::io::{self, Write};

/// Rows are gathered up to this many bytes, then written out at once.
const CHUNK: usize = 1 << 16;

/// One table being written: rows formatted into a buffer that is handed to `out` in chunks of
/// about [`CHUNK`] bytes (so `out` needs no buffer of its own).
pub(crate) struct CsvOut<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> CsvOut<W> {
    /// A table with its header row (names that need no quotes).
    pub(crate) fn new(out: W, header: &[&str]) -> CsvOut<W> {
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        buf.extend_from_slice(header.join(",").as_bytes());
        buf.push(b'\n');
        CsvOut { out, buf }
    }

    /// The buffer rows are formatted into (see [`Row`]); call [`CsvOut::done`] after each
    /// row or group of rows.
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Writes the rows gathered so far once they fill a chunk.
    pub(crate) fn done(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes what is left and flushes `out`.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
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

/// Appends `v` in decimal, its digits written in place: the buffer grows by a fixed 20 bytes
/// (a store of known length, no call), the digits go over them, and it is cut to the digits.
/// (Digits formatted in a block on the stack and then copied stall the copy's loads on the
/// digits' small stores: most of the row's time, measured.)
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    // Most counts (tasks, GPUs, preemptions, failures, retries) are one digit: one push.
    if v < 10 {
        buf.push(b'0' + v as u8);
        return;
    }
    let digits = v.checked_ilog10().unwrap_or(0) as usize + 1;
    let start = buf.len();
    buf.extend_from_slice(&[0; 20]);
    let out = &mut buf[start..start + digits];
    let mut at = digits;
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        out[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        out[..2].copy_from_slice(&PAIRS[v as usize * 2..v as usize * 2 + 2]);
    } else {
        out[0] = b'0' + v as u8;
    }
    buf.truncate(start + digits);
}

/// Appends `v` in decimal with exactly `width` digits (leading zeros; `v < 10^width`).
fn push_padded(buf: &mut Vec<u8>, mut v: u64, width: usize) {
    let start = buf.len();
    buf.resize(start + width, b'0');
    for at in (start..start + width).rev() {
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Appends `v` in decimal.
fn push_u128(buf: &mut Vec<u8>, v: u128) {
    match u64::try_from(v) {
        Ok(v) => push_u64(buf, v),
        Err(_) => write!(buf, "{v}").expect("writing to memory cannot fail"),
    }
}

/// A text field escaped once, comma included, for a value every row of a table repeats (the
/// policy of each decision): [`Row::text`] would scan it, and quote it again, on every row (a
/// policy's name holds commas, so it is always quoted).
pub(crate) struct Escaped(Vec<u8>);

impl Escaped {
    pub(crate) fn new(text: &str) -> Escaped {
        let mut bytes = Vec::new();
        Row(&mut bytes).text(text);
        Escaped(bytes)
    }
}

/// One row being formatted: each call appends a field and its comma; [`Row::end`] ends it.
pub(crate) struct Row<'a>(pub(crate) &'a mut Vec<u8>);

impl Row<'_> {
    /// A text field, quoted when the `csv` crate would quote it.
    pub(crate) fn text(&mut self, s: &str) {
        let start = self.0.len();
        self.0.extend_from_slice(s.as_bytes());
        self.quote_from(start);
        self.0.push(b',');
    }

    /// A text field escaped beforehand: the same bytes as [`Row::text`] of its text.
    pub(crate) fn escaped(&mut self, field: &Escaped) {
        self.0.extend_from_slice(&field.0);
    }

    /// Ends a text field written straight into the buffer from `start` (quoting it if needed).
    pub(crate) fn end_text(&mut self, start: usize) {
        self.quote_from(start);
        self.0.push(b',');
    }

    /// Quotes the bytes from `start` on, in place, if they hold a delimiter, quote or line end.
    fn quote_from(&mut self, start: usize) {
        let field = &self.0[start..];
        if !field.iter().any(|&b| matches!(b, b',' | b'"' | b'\r' | b'\n')) {
            return;
        }
        let quotes = field.iter().filter(|&&b| b == b'"').count();
        let old_end = self.0.len();
        self.0.resize(old_end + quotes + 2, 0);
        // Move the field right, back to front, doubling each quote; then the opening quote.
        let mut to = self.0.len() - 1;
        self.0[to] = b'"';
        for from in (start..old_end).rev() {
            let b = self.0[from];
            to -= 1;
            self.0[to] = b;
            if b == b'"' {
                to -= 1;
                self.0[to] = b'"';
            }
        }
        debug_assert_eq!(to, start + 1);
        self.0[start] = b'"';
    }

    /// The buffer, to write a field's text straight into (then [`Row::end_text`]).
    pub(crate) fn raw(&mut self) -> &mut Vec<u8> {
        self.0
    }

    pub(crate) fn int(&mut self, v: impl Into<u64>) {
        push_u64(self.0, v.into());
        self.0.push(b',');
    }

    pub(crate) fn opt_int(&mut self, v: Option<impl Into<u64>>) {
        match v {
            Some(v) => self.int(v),
            None => self.empty(),
        }
    }

    pub(crate) fn empty(&mut self) {
        self.0.push(b',');
    }

    /// Milliseconds as seconds with 3 decimals: `12.345`.
    pub(crate) fn secs(&mut self, ms: u64) {
        push_u64(self.0, ms / 1000);
        let r = (ms % 1000) as usize;
        let (hundreds, rest) = (r / 100, r % 100 * 2);
        self.0.extend_from_slice(&[b'.', b'0' + hundreds as u8, PAIRS[rest], PAIRS[rest + 1], b',']);
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
    /// too large for the check) the `f64` is formatted by `std`, into the buffer, as before.
    pub(crate) fn fixed(&mut self, num: u128, den: u128, digits: u32, value: impl FnOnce() -> f64) {
        debug_assert!(den > 0);
        if let (Ok(n), Ok(d)) = (u64::try_from(num), u64::try_from(den)) {
            // The usual case, in 64 bits: the check halved, `(q + 1) den < |2r - den| 2^49`
            // (no overflow: both sides are below 2^128), and passing it means q < 2^49.
            let (q, r) = (n / d, n % d);
            let distance = (2 * u128::from(r)).abs_diff(u128::from(d));
            if (u128::from(q) + 1) * u128::from(d) < distance << 49 {
                let units = q + u64::from(2 * u128::from(r) > u128::from(d));
                let scale = 10u64.pow(digits);
                push_u64(self.0, units / scale);
                self.0.push(b'.');
                push_padded(self.0, units % scale, digits as usize);
                self.0.push(b',');
                return;
            }
        } else {
            let (q, r) = (num / den, num % den);
            let distance = (2 * r).abs_diff(den);
            let error = (q + 1).checked_mul(den);
            let margin = distance.checked_mul(1 << 49);
            if let (Some(error), Some(margin)) = (error, margin)
                && error < margin
            {
                let units = if 2 * r > den { q + 1 } else { q };
                let scale = 10u128.pow(digits);
                push_u128(self.0, units / scale);
                self.0.push(b'.');
                push_padded(self.0, (units % scale) as u64, digits as usize);
                self.0.push(b',');
                return;
            }
        }
        write!(self.0, "{:.*}", digits as usize, value()).expect("writing to memory cannot fail");
        self.0.push(b',');
    }

    /// Ends the row: its last comma becomes the line's end.
    pub(crate) fn end(self) {
        let last = self.0.last_mut().expect("a row has fields");
        debug_assert_eq!(*last, b',');
        *last = b'\n';
    }
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

    fn ours(fields: &[&str]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut row = Row(&mut buf);
        for f in fields {
            row.text(f);
        }
        row.end();
        buf
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
            let mut buf = Vec::new();
            let mut row = Row(&mut buf);
            row.escaped(&field);
            row.text("x");
            row.escaped(&field);
            row.end();
            assert_eq!(buf, csv_crate(&[text, "x", text]), "{text:?}");
        }
    }

    fn fixed(num: u128, den: u128, digits: u32, value: f64) -> String {
        let mut buf = Vec::new();
        Row(&mut buf).fixed(num, den, digits, || value);
        buf.pop();
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
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn integers_as_to_string_writes_them(v in prop_oneof![0u64..1_000, any::<u64>()], ms in any::<u64>()) {
            let mut buf = b"x".to_vec();
            push_u64(&mut buf, v);
            prop_assert_eq!(buf[1..].to_vec(), v.to_string().into_bytes());
            let mut buf = Vec::new();
            Row(&mut buf).secs(ms);
            prop_assert_eq!(buf, format!("{}.{:03},", ms / 1000, ms % 1000).into_bytes());
        }

        #[test]
        fn padded_as_format_writes_it(width in 1usize..=12, v in any::<u64>()) {
            let v = v % 10u64.pow(width as u32);
            let mut buf = b"x".to_vec();
            push_padded(&mut buf, v, width);
            prop_assert_eq!(buf[1..].to_vec(), format!("{v:0width$}").into_bytes());
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
