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
    /// Unconsumed input from `at` on (the current record is `at - record_len..at`).
    buf: Vec<u8>,
    at: usize,
    eof: bool,
    /// The line of the byte at `at`.
    line: u64,
    /// The byte before `at` was a `\r` (a `\n` at `at` ends the same line).
    after_cr: bool,
    /// The current record: its length and the end of each field, from the record's start.
    record_len: usize,
    ends: Vec<usize>,
}

/// One record's fields, borrowed from the reader.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    bytes: &'a [u8],
    /// The record as text, when it is valid UTF-8.
    text: Option<&'a str>,
    ends: &'a [usize],
}

impl<'a> Fields<'a> {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).and_then(|p| self.ends.get(p)).map_or(0, |&e| e + 1);
        Some(start..end)
    }

    pub(crate) fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.bytes.get(self.range(i)?)
    }

    /// Field `i` as text, when the record is valid UTF-8 (else see [`Fields::get`]).
    #[inline]
    pub(crate) fn text(&self, i: usize) -> Option<&'a str> {
        self.text?.get(self.range(i)?)
    }
}

impl<R: Read> QuoteFree<R> {
    pub(crate) fn new(source: R) -> QuoteFree<R> {
        QuoteFree {
            source,
            buf: Vec::new(),
            at: 0,
            eof: false,
            line: 1,
            after_cr: false,
            record_len: 0,
            ends: Vec::new(),
        }
    }

    /// Moves to the next record.
    pub(crate) fn next_record(&mut self) -> Step {
        if let Err(step) = self.skip_line_ends() {
            return step;
        }
        self.ends.clear();
        let start_line = self.line;
        // From the record's start, which a refill moves to the front of the buffer.
        let mut offset = 0;
        loop {
            let unread = self.buf.get(self.at + offset..).unwrap_or_default();
            let mut stop = None;
            for (i, &b) in unread.iter().enumerate() {
                // Most bytes are ordinary: one table look-up passes them.
                if !SPECIAL[usize::from(b)] {
                    continue;
                }
                match b {
                    b',' => self.ends.push(offset + i),
                    _ => {
                        stop = Some((b, offset + i));
                        break;
                    }
                }
            }
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
    pub(crate) fn fields(&self) -> Fields<'_> {
        let start = self.at.saturating_sub(self.record_len);
        let bytes = self.buf.get(start..self.at).unwrap_or_default();
        Fields { bytes, text: std::str::from_utf8(bytes).ok(), ends: &self.ends }
    }

    /// After [`Step::Quote`]: the input from that record on (what is buffered, then the rest
    /// of the source).
    pub(crate) fn into_rest(self) -> std::io::Chain<std::io::Cursor<Vec<u8>>, R> {
        let mut buf = self.buf;
        buf.drain(..self.at.min(buf.len()));
        std::io::Cursor::new(buf).chain(self.source)
    }

    /// Skips line ends (and so blank lines), counting lines; `Err` at the end of the input.
    fn skip_line_ends(&mut self) -> Result<(), Step> {
        loop {
            while let Some(&b) = self.buf.get(self.at) {
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
        self.ends.push(end - self.at);
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
        self.buf.drain(..self.at);
        self.at = 0;
        let len = self.buf.len();
        self.buf.resize(len + CHUNK, 0);
        let read = self.source.read(&mut self.buf[len..]);
        self.buf.truncate(len + *read.as_ref().unwrap_or(&0));
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
