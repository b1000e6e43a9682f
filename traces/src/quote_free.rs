//! The fast reader behind [`crate::rows::Rows`]: CSV text without a quote character is split
//! here, in one pass over the bytes, instead of by the csv reader. Without quotes, CSV is
//! only records ended by `\n`, `\r\n` or `\r` (blank lines skipped) and fields ended by `,`,
//! so the split is the csv reader's exactly; line numbers are counted in the same pass, and a
//! record that is valid UTF-8 as a whole is checked once rather than field by field.
//!
//! At the first record with a `"` the reader stops and hands the rest of the input (from
//! that record's first byte, with its line number) back to the csv reader, which knows
//! quoting: the two never disagree on a file, because each reads only what it reads alike.

use std::io::Read;

/// Bytes read from the source at a time.
const CHUNK: usize = 64 * 1024;

/// The bytes that end a field or a record, or hand over to the csv reader.
const SPECIAL: [bool; 256] = {
    let mut special = [false; 256];
    special[b',' as usize] = true;
    special[b'\r' as usize] = true;
    special[b'\n' as usize] = true;
    special[b'"' as usize] = true;
    special
};

/// Scans `unread` (which starts `offset` bytes into the current record) for the end of the
/// record, pushing the start of each next field on the way (after a `,` at `offset + i`): the
/// line end or quote found, with its offset in the record, or `None` if `unread` holds neither.
///
/// Eight bytes at a time: every special byte is below `-` (0x2D), so one subtraction flags
/// each byte of a word that may be one (the flags can also fall on a `-` right after a flagged
/// byte, through the borrow: each flagged byte is looked at, so a false one costs a look), and
/// the ordinary bytes between (most of them) cost nothing each. The tail of `unread` shorter
/// than a word goes byte by byte.
///
/// Not inlined: inlined into [`QuoteFree::next_record`], with all it keeps live, its loops
/// spilled and reloaded registers.
#[inline(never)]
fn scan(unread: &[u8], offset: usize, starts: &mut Vec<usize>) -> Option<(u8, usize)> {
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    const BELOW: u64 = u64::from_le_bytes([b'-'; 8]);
    const COMMAS: u64 = u64::from_le_bytes([b','; 8]);
    const LOW7: u64 = u64::from_le_bytes([0x7F; 8]);
    let mut words = unread.chunks_exact(8);
    let mut at = offset;
    for word in &mut words {
        let v = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let mut flags = v.wrapping_sub(BELOW) & !v & HIGH;
        if flags == 0 {
            at += 8;
            continue;
        }
        // The commas exactly (a byte of `v ^ COMMAS` is zero: adding 0x7F to its low seven
        // bits sets no high bit, and it has none): when they are all the flags, each is a
        // field's end, without looking at its byte.
        let x = v ^ COMMAS;
        let mut commas = !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7);
        if flags & !commas == 0 {
            let after = at + 1;
            while commas != 0 {
                starts.push(after + (commas.trailing_zeros() / 8) as usize);
                commas &= commas - 1;
            }
            at += 8;
            continue;
        }
        while flags != 0 {
            let i = (flags.trailing_zeros() / 8) as usize;
            flags &= flags - 1;
            match word.get(i).copied().unwrap_or_default() {
                b',' => starts.push(at + i + 1),
                b @ (b'\r' | b'\n' | b'"') => return Some((b, at + i)),
                _ => {}
            }
        }
        at += 8;
    }
    for (i, &b) in words.remainder().iter().enumerate() {
        // Most bytes are ordinary: one table look-up passes them.
        if !SPECIAL[usize::from(b)] {
            continue;
        }
        match b {
            b',' => starts.push(at + i + 1),
            _ => return Some((b, at + i)),
        }
    }
    None
}

/// What [`QuoteFree::next_record`] found.
pub(crate) enum Step {
    /// A record starting on this line; its fields are [`QuoteFree::fields`].
    Record(u64),
    /// The next record (on this line) has a quote: read the rest with the csv reader, from
    /// [`QuoteFree::into_rest`].
    Quote(u64),
    End,
    /// The source failed; what was read before is lost as the csv reader would lose it (a
    /// record not yet ended).
    Error(std::io::Error),
}

pub(crate) struct QuoteFree<R> {
    source: R,
    /// Unconsumed input from `at` to `filled` (the current record is `at - record_len..at`).
    /// Bytes past `filled` are room for the next read, zeroed once when the buffer grew rather
    /// than on every read.
    buf: Buffer,
    filled: usize,
    at: usize,
    eof: bool,
    /// The line of the byte at `at`.
    line: u64,
    /// The byte before `at` was a `\r` (a `\n` at `at` ends the same line).
    after_cr: bool,
    /// The current record: its length and its fields' [`Fields`] starts, from its start.
    record_len: usize,
    starts: Vec<usize>,
    /// Bytes of the source before `buf[0]` (dropped by refills), for a record's offset.
    consumed: u64,
    /// Bytes read from the source at a time.
    chunk: usize,
}

/// The read buffer: text when all of it is UTF-8 (checked once a read, so that a record is
/// not checked alone; a buffer that is not, as one that ends inside a character, has each
/// record checked alone), else bytes.
enum Buffer {
    Text(String),
    Bytes(Vec<u8>),
}

impl Buffer {
    fn bytes(&self) -> &[u8] {
        match self {
            Buffer::Text(text) => text.as_bytes(),
            Buffer::Bytes(bytes) => bytes,
        }
    }

    fn into_bytes(self) -> Vec<u8> {
        match self {
            Buffer::Text(text) => text.into_bytes(),
            Buffer::Bytes(bytes) => bytes,
        }
    }
}

/// One record's fields, borrowed from the reader (either reader: the csv reader's records are
/// laid out alike).
#[derive(Clone, Copy, Default)]
pub(crate) struct Fields<'a> {
    bytes: &'a [u8],
    /// The record as text, when it is valid UTF-8.
    text: Option<&'a str>,
    /// Where each field starts, then where a field after the last would (one past the
    /// record's end): field `i` is `starts[i]..starts[i + 1] - 1` (each but the last is ended
    /// by a `,`), read without a case for the first field.
    starts: &'a [usize],
}

impl<'a> Fields<'a> {
    /// The fields of `bytes` (see [`Fields::starts`]); `text` is `bytes` when they are UTF-8.
    pub(crate) fn new(bytes: &'a [u8], text: Option<&'a str>, starts: &'a [usize]) -> Fields<'a> {
        Fields { bytes, text, starts }
    }

    pub(crate) fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    #[inline(always)]
    fn range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        // Two plain look-ups: through `Option` combinators this was a call per field, and as
        // one look-up of `i..i + 2` matched as a pair, 7 M instructions more a 100k-job file.
        let next = *self.starts.get(i + 1)?;
        Some(*self.starts.get(i)?..next - 1)
    }

    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.bytes.get(self.range(i)?)
    }

    /// Whether field `i` is there and empty.
    #[inline(always)]
    pub(crate) fn is_empty(&self, i: usize) -> bool {
        match self.range(i) {
            Some(range) => range.is_empty(),
            None => false,
        }
    }

    /// Field `i` as text, when the record is valid UTF-8 (else see [`Fields::get`]).
    #[inline(always)]
    pub(crate) fn text(&self, i: usize) -> Option<&'a str> {
        let range = self.range(i)?;
        // Most fields of a wide file are empty: text whatever the record's bytes.
        if range.is_empty() {
            return Some("");
        }
        // Split off rather than `get(range)`: the same two boundary checks, inlined, where
        // `get` stayed a call per field.
        let (before_end, _) = self.text?.split_at_checked(range.end)?;
        Some(before_end.split_at_checked(range.start)?.1)
    }
}

impl<R: Read> QuoteFree<R> {
    pub(crate) fn new(source: R) -> QuoteFree<R> {
        QuoteFree::starting_at(source, 1, CHUNK)
    }

    /// A reader of `source`, whose first byte is on line `line`, reading `chunk` bytes at a
    /// time (a small chunk for a reader that reads a few rows after a seek).
    pub(crate) fn starting_at(source: R, line: u64, chunk: usize) -> QuoteFree<R> {
        QuoteFree {
            source,
            buf: Buffer::Bytes(Vec::new()),
            filled: 0,
            at: 0,
            eof: false,
            line,
            after_cr: false,
            record_len: 0,
            starts: Vec::new(),
            consumed: 0,
            chunk: chunk.max(1),
        }
    }

    /// The offset in the source of the current record's first byte (after [`Step::Record`]).
    pub(crate) fn record_start(&self) -> u64 {
        self.consumed + self.at.saturating_sub(self.record_len) as u64
    }

    /// The offset in the source of what [`QuoteFree::into_rest`] gives (after [`Step::Quote`]).
    pub(crate) fn rest_start(&self) -> u64 {
        self.consumed + self.at as u64
    }

    /// Moves to the next record.
    pub(crate) fn next_record(&mut self) -> Step {
        if let Err(step) = self.skip_line_ends() {
            return step;
        }
        self.starts.clear();
        self.starts.push(0);
        let start_line = self.line;
        // From the record's start, which a refill moves to the front of the buffer.
        let mut offset = 0;
        loop {
            let unread = self.buf.bytes().get(self.at + offset..self.filled).unwrap_or_default();
            let stop = scan(unread, offset, &mut self.starts);
            match stop {
                Some((b'"', _)) => return Step::Quote(start_line),
                Some((_, end)) => return self.found(self.at + end),
                None => offset += unread.len(),
            }
            // The record runs on past what is read: read more.
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return self.found(self.at + offset),
                Err(e) => return Step::Error(e),
            }
        }
    }

    /// The current record's fields. The record is checked as UTF-8 here, once, so that each
    /// field need not be (a field of a valid record is valid: fields end at `,`); a record with
    /// a bad byte has its fields checked one by one when read, so the error names the field.
    #[inline(always)]
    pub(crate) fn fields(&self) -> Fields<'_> {
        let start = self.at.saturating_sub(self.record_len);
        let bytes = self.buf.bytes().get(start..self.at).unwrap_or_default();
        let text = match &self.buf {
            // Text as a whole: the record is text exactly when it starts and ends on a
            // character's boundary (it starts after a line end, so it ends on one unless a
            // character runs on past it: then its bytes alone are not UTF-8 either).
            Buffer::Text(text) => text.get(start..self.at),
            Buffer::Bytes(_) => std::str::from_utf8(bytes).ok(),
        };
        Fields { bytes, text, starts: &self.starts }
    }

    /// After [`Step::Quote`]: the input from that record on (what is buffered, then the rest
    /// of the source).
    pub(crate) fn into_rest(self) -> std::io::Chain<std::io::Cursor<Vec<u8>>, R> {
        let mut buf = self.buf.into_bytes();
        buf.truncate(self.filled);
        buf.drain(..self.at.min(buf.len()));
        std::io::Cursor::new(buf).chain(self.source)
    }

    /// Skips line ends (and so blank lines), counting lines; `Err` at the end of the input.
    fn skip_line_ends(&mut self) -> Result<(), Step> {
        loop {
            while let Some(&b) = self.buf.bytes().get(self.at).filter(|_| self.at < self.filled) {
                match b {
                    b'\r' => {
                        self.line += 1;
                        self.after_cr = true;
                    }
                    b'\n' => {
                        self.line += u64::from(!self.after_cr);
                        self.after_cr = false;
                    }
                    _ => {
                        self.after_cr = false;
                        return Ok(());
                    }
                }
                self.at += 1;
            }
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return Err(Step::End),
                Err(e) => return Err(Step::Error(e)),
            }
        }
    }

    /// The record from `at` ends at `end` (a line end or the end of the input).
    fn found(&mut self, end: usize) -> Step {
        self.starts.push(end - self.at + 1);
        self.record_len = end - self.at;
        let line = self.line;
        self.at = end;
        Step::Record(line)
    }

    /// Reads more input after what is unconsumed (dropping what is consumed); `false` at the
    /// end of the source.
    fn refill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let mut buf = std::mem::replace(&mut self.buf, Buffer::Bytes(Vec::new())).into_bytes();
        self.consumed += self.at as u64;
        buf.copy_within(self.at..self.filled, 0);
        self.filled -= self.at;
        self.at = 0;
        let len = self.filled;
        let chunk = self.chunk;
        if buf.len() < len + chunk {
            buf.resize(len + chunk, 0);
        }
        let read = self.source.read(&mut buf[len..len + chunk]);
        self.filled = len + (*read.as_ref().unwrap_or(&0)).min(chunk);
        // One check of the whole buffer, rather than one per record.
        self.buf = match String::from_utf8(buf) {
            Ok(text) => Buffer::Text(text),
            Err(e) => Buffer::Bytes(e.into_bytes()),
        };
        match read {
            Ok(0) => {
                self.eof = true;
                Ok(false)
            }
            Ok(_) => Ok(true),
            Err(e) => Err(e),
        }
    }
}
