//! The CSV plumbing every reader shares: header to column indexes, one reused record buffer
//! (no allocation per row), the line number of each row, and field accessors that turn a bad
//! value into a [`TraceError`] naming file, line and column. Readers only say what they expect.
//!
//! Text without quotes is split by [`QuoteFree`] (most traces: several times faster); from the
//! first record with a quote on, the csv reader takes over.

use crate::error::{Sink, TraceError};
use crate::quote_free::{Fields, QuoteFree, Step};
use crate::timeparse::{SecondsError, parse_seconds_ms, plain_seconds_ms};
use csv::ByteRecord;
use std::io::{Chain, Cursor, Read};

/// One column a reader knows: its header name and whether every file must have it.
pub(crate) struct Column {
    pub name: &'static str,
    pub required: bool,
}

/// What to do with header columns a reader does not know.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// Our own formats: a typo must not silently drop data.
    Refuse,
    /// Foreign traces: take what we need, leave the rest.
    Ignore,
}

/// A CSV file being read row by row.
pub(crate) struct Rows<R: Read> {
    input: Input<R>,
    file: String,
    /// Shared with the readers [`Rows::resume`] makes on the same file.
    header: std::sync::Arc<[String]>,
    header_line: u64,
    /// Set after an IO error or at the end: the csv reader may repeat an IO error forever.
    done: bool,
    /// The column names come from the format, not from a header line in the file.
    headerless: bool,
}

/// Where records come from: the fast reader until a quote, then the csv reader.
enum Input<R: Read> {
    QuoteFree(QuoteFree<R>),
    Csv(Box<Quoted<R>>),
    /// Only while the one hands over to the other.
    Switching,
}

/// The csv reader, on the rest of the input from the first record with a quote.
struct Quoted<R: Read> {
    reader: csv::Reader<LineTracker<Chain<Cursor<Vec<u8>>, R>>>,
    /// The offset in the source of the rest this reader reads, and of its record's first byte.
    base: u64,
    record_start: u64,
    record: ByteRecord,
    /// The record's fields unquoted, laid out as the fast reader lays out a record (each
    /// ended by a `,`, and the start of each, see [`Fields`]): rows read fields one way,
    /// whichever reader read them, rather than asking which on every field.
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

/// What the next record of [`Input`] was.
enum Next {
    Record(u64),
    End,
    Error(TraceError),
}

impl<R: Read> Input<R> {
    fn new(source: R) -> Input<R> {
        Input::QuoteFree(QuoteFree::new(source))
    }

    /// The csv reader from the start of `source`, for tests that compare the two readers.
    #[cfg(test)]
    fn csv_only(source: R) -> Input<R> {
        Input::Csv(Box::new(Quoted::new(Cursor::new(Vec::new()).chain(source), 1, 0)))
    }

    /// Inlined into [`Rows::next_row`], its one caller per row.
    #[inline(always)]
    fn next(&mut self, file: &str) -> Next {
        if let Input::QuoteFree(fast) = self {
            match fast.next_record() {
                Step::Record(line) => return Next::Record(line),
                Step::End => return Next::End,
                Step::Error(e) => return Next::Error(TraceError::io(file, e.to_string())),
                Step::Quote(line) => {
                    if let Input::QuoteFree(fast) = std::mem::replace(self, Input::Switching) {
                        let base = fast.rest_start();
                        *self = Input::Csv(Box::new(Quoted::new(fast.into_rest(), line, base)));
                    }
                }
            }
        }
        match self {
            Input::Csv(quoted) => quoted.next(file),
            Input::QuoteFree(_) | Input::Switching => Next::End,
        }
    }

    /// The offset in the source of the current record's first byte.
    #[inline(always)]
    fn record_offset(&self) -> u64 {
        match self {
            Input::QuoteFree(fast) => fast.record_start(),
            Input::Csv(quoted) => quoted.base + quoted.record_start,
            Input::Switching => 0,
        }
    }

    /// Inlined into [`Rows::next_row`], as [`Input::next`].
    #[inline(always)]
    fn fields(&self) -> Fields<'_> {
        match self {
            Input::QuoteFree(fast) => fast.fields(),
            Input::Csv(quoted) => quoted.fields(),
            Input::Switching => Fields::default(),
        }
    }
}

impl<R: Read> Quoted<R> {
    /// The csv reader on `rest`, whose first byte is on line `line` and at offset `base` of
    /// the source.
    fn new(rest: Chain<Cursor<Vec<u8>>, R>, line: u64, base: u64) -> Quoted<R> {
        let reader = csv::ReaderBuilder::new()
            .has_headers(false)
            // Row lengths are checked here, so the error can name the line and both counts.
            .flexible(true)
            .from_reader(LineTracker::new(rest, line));
        Quoted { reader, base, record_start: 0, record: ByteRecord::new(), bytes: Vec::new(), starts: Vec::new() }
    }

    /// The current record's fields.
    fn fields(&self) -> Fields<'_> {
        Fields::new(&self.bytes, std::str::from_utf8(&self.bytes).ok(), &self.starts)
    }

    /// Lays the record just read out in `bytes` and `starts`.
    fn lay_out(&mut self) {
        self.bytes.clear();
        self.starts.clear();
        self.starts.push(0);
        for field in &self.record {
            self.bytes.extend_from_slice(field);
            self.bytes.push(b',');
            self.starts.push(self.bytes.len());
        }
    }

    fn next(&mut self, file: &str) -> Next {
        match self.reader.read_byte_record(&mut self.record) {
            Ok(true) => {
                self.lay_out();
                let byte = self.record.position().map_or(0, |p| p.byte());
                let (line, start) = self.reader.get_mut().line_at(byte);
                self.record_start = start;
                Next::Record(line)
            }
            Ok(false) => Next::End,
            Err(e) => Next::Error(csv_error(file, &e)),
        }
    }
}

impl<R: Read> Rows<R> {
    /// Starts reading `source` (shown as `file` in errors) and reads its header line.
    pub(crate) fn open(source: R, file: &str) -> Result<Rows<R>, TraceError> {
        Rows::open_from(Input::new(source), file)
    }

    fn open_from(input: Input<R>, file: &str) -> Result<Rows<R>, TraceError> {
        let mut rows =
            Rows { input, file: file.to_owned(), header: [].into(), header_line: 1, done: false, headerless: false };
        let line = match rows.input.next(file) {
            Next::Record(line) => line,
            Next::End => return Err(TraceError::file(file, "the file is empty; expected a header line")),
            Next::Error(e) => return Err(e),
        };
        rows.header_line = line;
        let mut header = Vec::new();
        let fields = rows.input.fields();
        for (index, raw) in (0..fields.len()).map(|i| fields.get(i).unwrap_or_default()).enumerate() {
            // A UTF-8 byte-order mark (spreadsheet exports) is not part of the first name.
            let raw = if index == 0 { raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw) } else { raw };
            match std::str::from_utf8(raw) {
                Ok(name) => header.push(name.to_owned()),
                Err(_) => {
                    return Err(TraceError::row(file, line, format!("header column {} is not UTF-8 text", index + 1)));
                }
            }
        }
        rows.header = header.into();
        Ok(rows)
    }

    /// Reads on in a file [`Rows::open`] read before, from a record's first byte: `source`
    /// starts there, on line `line`, and `header` is the file's ([`Rows::shared_header`]).
    /// Reads `chunk` bytes at a time.
    pub(crate) fn resume(source: R, file: &str, header: std::sync::Arc<[String]>, line: u64, chunk: usize) -> Rows<R> {
        Rows {
            input: Input::QuoteFree(QuoteFree::starting_at(source, line, chunk)),
            file: file.to_owned(),
            header,
            header_line: 1,
            done: false,
            headerless: false,
        }
    }

    /// The header, shared, for [`Rows::resume`].
    pub(crate) fn shared_header(&self) -> std::sync::Arc<[String]> {
        self.header.clone()
    }

    /// Starts reading a file that has no header line (Alibaba's 2017 tables): `names` are its
    /// columns, in order, for error messages; the first line of the file is the first row.
    pub(crate) fn open_headerless(source: R, file: &str, names: &[&str]) -> Rows<R> {
        Rows {
            input: Input::new(source),
            file: file.to_owned(),
            header: names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>().into(),
            header_line: 0,
            done: false,
            headerless: true,
        }
    }

    /// [`Rows::open`] then [`Rows::columns`], the start of every reader: the rows and the
    /// index of each known column, or `None` with the error reported to `sink`.
    pub(crate) fn open_checked(
        source: R,
        file: &str,
        known: &[Column],
        unknown: Unknown,
        sink: &mut Sink,
    ) -> Option<(Rows<R>, Vec<Option<usize>>)> {
        sink.ok(Rows::open(source, file).and_then(|rows| {
            let columns = rows.columns(known, unknown)?;
            Ok((rows, columns))
        }))
    }

    /// The header's column names, as read.
    pub(crate) fn header(&self) -> &[String] {
        &self.header
    }

    pub(crate) fn file(&self) -> &str {
        &self.file
    }

    /// Finds each known column in the header (any order). Missing required columns, repeated
    /// names and (with [`Unknown::Refuse`]) unknown names are errors naming the header line.
    pub(crate) fn columns(&self, known: &[Column], unknown: Unknown) -> Result<Vec<Option<usize>>, TraceError> {
        let expected = known.iter().map(|c| c.name).collect::<Vec<_>>().join(",");
        for (index, name) in self.header.iter().enumerate() {
            if self.header[..index].contains(name) {
                return Err(self.header_error(format!("column `{name}` appears twice in the header")));
            }
            if unknown == Unknown::Refuse && !known.iter().any(|c| c.name == name) {
                return Err(self.header_error(format!(
                    "unknown column `{name}` in the header; known columns are {expected} \
                     (names are case-sensitive)"
                )));
            }
        }
        let mut found = Vec::with_capacity(known.len());
        for column in known {
            let index = self.header.iter().position(|h| h == column.name);
            if index.is_none() && column.required {
                return Err(self.header_error(format!(
                    "the header has no column `{}`; expected a header line with the columns {expected}",
                    column.name
                )));
            }
            found.push(index);
        }
        Ok(found)
    }

    pub(crate) fn header_error(&self, message: String) -> TraceError {
        TraceError::row(&self.file, self.header_line, message)
    }

    /// The next data row, or `None` at the end. Blank lines are skipped (the csv reader does
    /// that), so a trailing empty line is fine. A row whose field count differs from the
    /// header's is an error; reading goes on after it, but not after an IO error.
    pub(crate) fn next_row(&mut self) -> Option<Result<Row<'_>, TraceError>> {
        if self.done {
            return None;
        }
        let line = match self.input.next(&self.file) {
            Next::Record(line) => line,
            Next::End => {
                self.done = true;
                return None;
            }
            Next::Error(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let fields = self.input.fields();
        if fields.len() != self.header.len() {
            let what = if self.headerless { "(the format's columns)" } else { "as in the header" };
            // Only a quoted field holds a line break: here most likely a `"` never closed,
            // which swallowed the rest of the row (and the rows after it) into one field.
            let runs_on = (0..fields.len()).any(|i| fields.get(i).is_some_and(|f| f.contains(&b'\n')));
            let cause = if runs_on {
                "a quoted field runs on past its line (a `\"` opens it and no `\"` on the line closes it); "
            } else {
                ""
            };
            return Some(Err(TraceError::row(
                &self.file,
                line,
                format!("{cause}expected {} fields {what}, got {}", self.header.len(), fields.len()),
            )));
        }
        let offset = self.input.record_offset();
        Some(Ok(Row { line, offset, fields, file: &self.file, header: &self.header }))
    }

    /// Turns every remaining data row into a `T` with `parse`, in file order. A bad row (its
    /// error from [`Rows::next_row`] or from `parse`) is reported to `sink` and skipped;
    /// `None` once `sink` is full, without reading further.
    pub(crate) fn parse_all<T>(
        &mut self,
        sink: &mut Sink,
        mut parse: impl FnMut(&Row<'_>) -> Result<T, TraceError>,
    ) -> Option<Vec<T>> {
        let mut parsed = Vec::new();
        while let Some(row) = self.next_row() {
            match row.and_then(|row| parse(&row)) {
                Ok(value) => parsed.push(value),
                Err(e) => {
                    sink.push(e);
                    if sink.is_full() {
                        return None;
                    }
                }
            }
        }
        Some(parsed)
    }
}

/// Counts lines for the csv reader, whose own line numbers are wrong after CRLF line ends and
/// blank lines (it reports the line where it started looking, before the skipped line ends).
/// Keeps the bytes between the last record start and what the csv reader has read ahead
/// (about its 8 KiB buffer), and counts line breaks once, as records are reached.
pub(crate) struct LineTracker<R> {
    inner: R,
    /// The line of the first byte read.
    first_line: u64,
    /// Bytes from absolute offset `window_start` on.
    window: Vec<u8>,
    window_start: u64,
    /// Line breaks are counted up to this absolute offset.
    counted_to: u64,
    count: BreakCount,
}

/// Line breaks seen so far. A line break is `\n`, `\r\n` or a lone `\r` (all three end a
/// CSV record).
#[derive(Default)]
struct BreakCount {
    breaks: u64,
    /// The last byte seen was `\r`: a following `\n` is the same line break.
    after_cr: bool,
}

impl BreakCount {
    fn add(&mut self, b: u8) {
        match b {
            b'\r' => {
                self.breaks += 1;
                self.after_cr = true;
            }
            b'\n' => {
                self.breaks += u64::from(!self.after_cr);
                self.after_cr = false;
            }
            _ => self.after_cr = false,
        }
    }

    /// [`BreakCount::add`] for each byte of `bytes`. Runs once per record over its bytes: a
    /// counting pass the compiler vectorises, and the byte-by-byte walk only where a `\r`
    /// makes a CRLF possible.
    fn add_all(&mut self, bytes: &[u8]) {
        let Some(&first) = bytes.first() else { return };
        if bytes.contains(&b'\r') {
            bytes.iter().for_each(|&b| self.add(b));
            return;
        }
        // Only `\n`s: each is a break, but one right after a `\r` of the last call.
        let lf = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        self.breaks += lf - u64::from(self.after_cr && first == b'\n');
        self.after_cr = false;
    }
}

impl<R> LineTracker<R> {
    fn new(inner: R, first_line: u64) -> LineTracker<R> {
        LineTracker {
            inner,
            first_line,
            window: Vec::new(),
            window_start: 0,
            counted_to: 0,
            count: BreakCount::default(),
        }
    }

    /// The line of the first byte at or after `byte` that is not a line-end byte: the csv
    /// reader's record position may point at the `\n` of a CRLF or at skipped blank lines.
    /// Also gives that byte's offset.
    fn line_at(&mut self, byte: u64) -> (u64, u64) {
        let from = usize::try_from(byte.max(self.counted_to).saturating_sub(self.window_start)).unwrap_or(usize::MAX);
        let mut at = from.min(self.window.len());
        // Count what lies between the last counted point and the record's first byte.
        let counted = usize::try_from(self.counted_to - self.window_start).unwrap_or(usize::MAX).min(at);
        self.count.add_all(&self.window[counted..at]);
        while let Some(&b) = self.window.get(at).filter(|&&b| b == b'\r' || b == b'\n') {
            self.count.add(b);
            at += 1;
        }
        self.counted_to = self.window_start + at as u64;
        let start = self.counted_to;
        // Forget what is counted once it is a good share of the window: no per-record memmove.
        if at > 64 * 1024 && at > self.window.len() / 2 {
            self.window.drain(..at);
            self.window_start += at as u64;
        }
        (self.count.breaks + self.first_line, start)
    }
}

impl<R: Read> Read for LineTracker<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.window.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

fn csv_error(file: &str, error: &csv::Error) -> TraceError {
    match error.position() {
        Some(p) => TraceError::row(file, p.line(), error.to_string()),
        None => TraceError::io(file, error.to_string()),
    }
}

/// What a field helper of [`Row`] returns: its error boxed, so that the `Ok` path moves a few
/// bytes rather than a 104-byte [`TraceError`] (every field of every row is read through one).
/// `?` turns it into a `TraceError` where a reader's own functions return one.
pub(crate) type FieldResult<T> = Result<T, Box<TraceError>>;

/// One data row; fields are borrowed from the reader's reused buffer.
pub(crate) struct Row<'a> {
    pub line: u64,
    /// The offset in the file of the row's first byte.
    pub offset: u64,
    fields: Fields<'a>,
    file: &'a str,
    header: &'a [String],
}

impl<'a> Row<'a> {
    pub(crate) fn file(&self) -> &'a str {
        self.file
    }

    fn name(&self, column: usize) -> &'a str {
        self.header.get(column).map_or("?", String::as_str)
    }

    /// A field error at this row, in column `column`.
    pub(crate) fn error(&self, column: usize, expected: impl Into<String>, found: &str) -> TraceError {
        TraceError::field(self.file, self.line, self.name(column), expected, found)
    }

    /// The same, boxed for a [`FieldResult`].
    #[cold]
    pub(crate) fn field_error(&self, column: usize, expected: impl Into<String>, found: &str) -> Box<TraceError> {
        Box::new(self.error(column, expected, found))
    }

    /// The field as text (all our formats are UTF-8). Inlined: every field of every row
    /// comes through here, and a call cost more than the look-up.
    #[inline(always)]
    pub(crate) fn text(&self, column: usize) -> FieldResult<&'a str> {
        match self.fields.text(column) {
            Some(text) => Ok(text),
            None => self.checked_text(column),
        }
    }

    /// The field as text, checked alone (a record with a bad byte, or one the csv reader read).
    #[inline(never)]
    fn checked_text(&self, column: usize) -> FieldResult<&'a str> {
        let raw = self.fields.get(column).unwrap_or_default();
        std::str::from_utf8(raw).map_err(|_| self.field_error(column, "UTF-8 text", &String::from_utf8_lossy(raw)))
    }

    /// Whether the field in `column` is empty: what most optional fields of a wide file are,
    /// told without building their text (the text of an empty field is `""`).
    #[inline(always)]
    pub(crate) fn is_empty(&self, column: usize) -> bool {
        self.fields.is_empty(column)
    }

    /// `column` unless it is absent or its field is empty: the optional fields worth reading.
    #[inline(always)]
    pub(crate) fn filled(&self, column: Option<usize>) -> Option<usize> {
        match column {
            Some(c) if !self.is_empty(c) => Some(c),
            _ => None,
        }
    }

    /// The field as text; an absent column reads as an empty field.
    #[inline(always)]
    pub(crate) fn opt_text(&self, column: Option<usize>) -> FieldResult<&'a str> {
        match self.filled(column) {
            Some(c) => self.text(c),
            None => Ok(""),
        }
    }

    /// A required non-empty name (job id, queue, ...).
    #[inline]
    pub(crate) fn name_field(&self, column: usize, what: &str) -> FieldResult<&'a str> {
        let text = self.text(column)?;
        if text.is_empty() {
            return Err(self.field_error(column, format!("{what} (the field must not be empty)"), text));
        }
        Ok(text)
    }

    /// The field's bytes (empty for an absent column, as its text is), for numbers: a number
    /// is ASCII, so the fast paths below read it without the field's text (no UTF-8 boundary
    /// checks), and leave anything else to a slow path through [`Row::text`], which refuses
    /// text that is not UTF-8 before anything else, as it did when every field was read as text.
    #[inline(always)]
    pub(crate) fn bytes(&self, column: usize) -> &'a [u8] {
        self.fields.get(column).unwrap_or_default()
    }

    // The seconds helpers below are inlined, their errors built out of line: a wide file
    // reads several times a row, most of them empty or in the common spelling, where a call
    // and a `Result` returned through memory cost more than the parse.

    /// Decimal seconds as milliseconds, see [`parse_seconds_ms`].
    #[inline(always)]
    pub(crate) fn seconds_ms(&self, column: usize) -> FieldResult<u64> {
        match plain_seconds_ms(self.bytes(column)) {
            Some(ms) => Ok(ms),
            None => self.any_seconds_ms(column),
        }
    }

    /// [`Row::seconds_ms`] of a field not in the plain spelling.
    #[inline(never)]
    fn any_seconds_ms(&self, column: usize) -> FieldResult<u64> {
        let text = self.text(column)?;
        parse_seconds_ms(text).map_err(|e| self.seconds_error(column, e, text))
    }

    /// Decimal seconds that must be at least 1 ms after rounding: durations, repair times.
    #[inline(always)]
    pub(crate) fn positive_seconds_ms(&self, column: usize) -> FieldResult<u64> {
        match plain_seconds_ms(self.bytes(column)) {
            Some(ms) if ms > 0 => Ok(ms),
            _ => self.any_positive_seconds_ms(column),
        }
    }

    /// [`Row::positive_seconds_ms`] of a field not in the plain spelling, or zero.
    #[inline(never)]
    fn any_positive_seconds_ms(&self, column: usize) -> FieldResult<u64> {
        let text = self.text(column)?;
        match parse_seconds_ms(text) {
            Ok(ms) if ms > 0 => Ok(ms),
            result => Err(self.positive_error(column, result.err(), text)),
        }
    }

    /// Why `text` in `column` is not a positive number of seconds: `error`, or `None` when it
    /// is zero after rounding.
    #[cold]
    #[inline(never)]
    fn positive_error(&self, column: usize, error: Option<SecondsError>, text: &str) -> Box<TraceError> {
        let expected = match error {
            None => "a positive number of seconds (at least 0.001 after rounding to the millisecond)",
            Some(SecondsError::NotDecimal | SecondsError::Negative) => {
                "a positive number of seconds (decimal digits, like 66 or 0.25)"
            }
            Some(e) => e.expected(),
        };
        self.field_error(column, expected, text)
    }

    /// A field error for seconds that did not parse.
    #[cold]
    #[inline(never)]
    fn seconds_error(&self, column: usize, error: SecondsError, text: &str) -> Box<TraceError> {
        self.field_error(column, error.expected(), text)
    }

    /// Optional positive seconds: an empty field or an absent column is `None`.
    #[inline(always)]
    pub(crate) fn opt_positive_seconds_ms(&self, column: Option<usize>) -> FieldResult<Option<u64>> {
        match self.filled(column) {
            Some(c) => self.positive_seconds_ms(c).map(Some),
            None => Ok(None),
        }
    }

    /// Optional non-negative seconds (zero allowed): an empty field or an absent column is
    /// `None`.
    #[inline(always)]
    pub(crate) fn opt_seconds_ms(&self, column: Option<usize>) -> FieldResult<Option<u64>> {
        match self.filled(column) {
            Some(c) => self.seconds_ms(c).map(Some),
            None => Ok(None),
        }
    }

    /// A whole number of GPUs, 1 to u32::MAX.
    #[inline]
    pub(crate) fn gpus(&self, column: usize) -> FieldResult<u32> {
        match parse_u32(self.bytes(column)) {
            Some(n) if n >= 1 => Ok(n),
            _ => Err(self.gpus_error(column)),
        }
    }

    #[cold]
    #[inline(never)]
    fn gpus_error(&self, column: usize) -> Box<TraceError> {
        match self.text(column) {
            Ok(text) => self.field_error(column, format!("a whole number of GPUs from 1 to {}", u32::MAX), text),
            Err(not_text) => not_text,
        }
    }

    /// A whole number in `0..limit`, for indexes (nodes, GPU slots).
    pub(crate) fn index(&self, column: usize, what: &str) -> FieldResult<u32> {
        let text = self.text(column)?;
        parse_u32(text).ok_or_else(|| self.field_error(column, format!("{what} (a whole number, 0 or more)"), text))
    }
}

/// Plain decimal digits (text, or a field's bytes) into a `u32`: no sign, no spaces, no
/// decimal point. Inlined for one digit (most GPU counts); longer text goes to
/// [`parse_u32_digits`].
#[inline]
pub(crate) fn parse_u32(digits: impl AsRef<[u8]>) -> Option<u32> {
    let digits = digits.as_ref();
    if let &[digit @ b'0'..=b'9'] = digits {
        return Some(u32::from(digit - b'0'));
    }
    parse_u32_digits(digits)
}

/// [`parse_u32`] of any bytes.
#[inline(never)]
fn parse_u32_digits(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u32, |n, &b| n.checked_mul(10)?.checked_add(u32::from(b - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: &[Column] = &[Column { name: "a", required: true }, Column { name: "b", required: false }];

    #[test]
    fn lines_count_from_the_header_and_skip_blank_lines() {
        let mut rows = Rows::open("a,b\n1,2\n\n3,4\n".as_bytes(), "t.csv").unwrap();
        let mut lines = Vec::new();
        while let Some(row) = rows.next_row() {
            lines.push(row.unwrap().line);
        }
        assert_eq!(lines, [2, 4]);
    }

    fn lines_of(input: &[u8]) -> Vec<u64> {
        let mut rows = Rows::open(input, "t.csv").unwrap();
        let mut lines = vec![rows.header_line];
        while let Some(row) = rows.next_row() {
            lines.push(row.unwrap().line);
        }
        lines
    }

    #[test]
    fn lines_are_right_with_any_line_ends() {
        assert_eq!(lines_of(b"a,b\r\n1,2\r\n\r\n3,4\r\n"), [1, 2, 4]);
        assert_eq!(lines_of(b"\n\na,b\n1,2\n"), [3, 4]);
        assert_eq!(lines_of(b"a,b\r1,2\r\r3,4\r"), [1, 2, 4]);
        assert_eq!(lines_of(b"a,b\n\"x\ny\",2\n3,4"), [1, 2, 4]);
        assert_eq!(lines_of(b"a,b\n\"x\n\ny\",2\n\n\n3,4\n\n"), [1, 2, 7]);
    }

    #[test]
    fn lines_are_right_past_the_read_ahead_buffer() {
        let mut text = String::from("a,b\n");
        for i in 0..30_000 {
            text.push_str(if i % 7 == 0 { "1,2\r\n\r\n" } else { "1,2\n" });
        }
        let lines = lines_of(text.as_bytes());
        let mut expected = vec![1];
        let mut line = 2;
        for i in 0..30_000 {
            expected.push(line);
            line += if i % 7 == 0 { 2 } else { 1 };
        }
        assert_eq!(lines, expected);
    }

    #[test]
    fn header_problems_are_named() {
        let rows = Rows::open("a,c\n".as_bytes(), "t.csv").unwrap();
        let e = rows.columns(COLUMNS, Unknown::Refuse).unwrap_err().to_string();
        assert!(e.starts_with("t.csv:1: unknown column `c`"), "{e}");
        assert!(rows.columns(COLUMNS, Unknown::Ignore).is_ok());
        let rows = Rows::open("b\n".as_bytes(), "t.csv").unwrap();
        let e = rows.columns(COLUMNS, Unknown::Refuse).unwrap_err().to_string();
        assert!(e.contains("no column `a`"), "{e}");
        let rows = Rows::open("a,a\n".as_bytes(), "t.csv").unwrap();
        let e = rows.columns(COLUMNS, Unknown::Refuse).unwrap_err().to_string();
        assert!(e.contains("`a` appears twice"), "{e}");
        let rows = Rows::open("\u{feff}a\n".as_bytes(), "t.csv").unwrap();
        assert_eq!(rows.columns(COLUMNS, Unknown::Refuse).unwrap(), [Some(0), None]);
        let e = Rows::open("".as_bytes(), "t.csv").err().unwrap().to_string();
        assert_eq!(e, "t.csv: the file is empty; expected a header line");
    }

    #[test]
    fn a_quote_never_closed_is_named() {
        let mut rows = Rows::open(&b"a,b\n\"1,2\n3,4\n"[..], "t.csv").unwrap();
        let e = rows.next_row().unwrap().err().unwrap().to_string();
        assert_eq!(
            e,
            "t.csv:2: a quoted field runs on past its line (a `\"` opens it and no `\"` on the line closes it); \
             expected 2 fields as in the header, got 1"
        );
    }

    #[test]
    fn short_rows_and_bad_bytes_are_errors_with_their_line() {
        let mut rows = Rows::open(&b"a,b\n1\n\xff,2\n"[..], "t.csv").unwrap();
        let e = rows.next_row().unwrap().err().unwrap().to_string();
        assert_eq!(e, "t.csv:2: expected 2 fields as in the header, got 1");
        let row = rows.next_row().unwrap().unwrap();
        let e = row.text(0).unwrap_err().to_string();
        assert!(e.starts_with("t.csv:3: field `a`: expected UTF-8 text"), "{e}");
        assert!(rows.next_row().is_none());
    }

    #[test]
    fn headerless_files_count_rows_from_line_one() {
        let mut rows = Rows::open_headerless("1,2\n\n3\n".as_bytes(), "t.csv", &["a", "b"]);
        assert_eq!(rows.next_row().unwrap().unwrap().line, 1);
        let e = rows.next_row().unwrap().err().unwrap().to_string();
        assert_eq!(e, "t.csv:3: expected 2 fields (the format's columns), got 1");
        assert!(rows.next_row().is_none());
        let mut rows = Rows::open_headerless("x,2\n".as_bytes(), "t.csv", &["a", "b"]);
        let row = rows.next_row().unwrap().unwrap();
        assert_eq!(
            row.seconds_ms(0).unwrap_err().to_string().split(':').take(3).collect::<Vec<_>>(),
            ["t.csv", "1", " field `a`"]
        );
    }

    proptest::proptest! {
        #[test]
        fn counting_a_run_of_bytes_is_counting_each(text in "[a\r\n]{0,40}", cuts in proptest::collection::vec(0usize..40, 0..4)) {
            let bytes = text.as_bytes();
            let mut one = BreakCount::default();
            bytes.iter().for_each(|&b| one.add(b));
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut runs = BreakCount::default();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                runs.add_all(&bytes[from..cut]);
                from = cut;
            }
            proptest::prop_assert_eq!((one.breaks, one.after_cr), (runs.breaks, runs.after_cr));
        }
    }

    /// Hands out `data` a few bytes per read (sizes cycling through `sizes`), then fails with
    /// `error` if there is one: chunk edges fall everywhere, CRLFs included.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        sizes: Vec<usize>,
        reads: usize,
        error: Option<std::io::Error>,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.at == self.data.len() {
                return self.error.take().map_or(Ok(0), Err);
            }
            let size = self.sizes.get(self.reads % self.sizes.len().max(1)).copied().unwrap_or(7).max(1);
            self.reads += 1;
            let n = size.min(buf.len()).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn trickle(data: &[u8], sizes: &[usize], fail: bool) -> Trickle {
        let error = fail.then(|| std::io::Error::other("disk on fire"));
        Trickle { data: data.to_vec(), at: 0, sizes: sizes.to_vec(), reads: 0, error }
    }

    /// Everything a reader sees of a file: the header (or the error opening it), then each row
    /// as its line and each field's text (or error), or the row's error.
    fn everything<R: Read>(input: Input<R>) -> Vec<String> {
        let mut rows = match Rows::open_from(input, "t.csv") {
            Ok(rows) => rows,
            Err(e) => return vec![e.to_string()],
        };
        let mut seen = vec![format!("header {} {:?}", rows.header_line, rows.header)];
        while let Some(row) = rows.next_row() {
            seen.push(match row {
                Ok(row) => {
                    let fields: Vec<String> = (0..row.fields.len())
                        .map(|i| row.text(i).map_or_else(|e| e.to_string(), |t| format!("{t:?}")))
                        .collect();
                    format!("{}: {}", row.line, fields.join(" | "))
                }
                Err(e) => e.to_string(),
            });
        }
        seen
    }

    fn both_readers_agree(
        data: &[u8],
        sizes: &[usize],
        fail: bool,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let fast = everything(Input::new(trickle(data, sizes, fail)));
        let csv = everything(Input::csv_only(trickle(data, &[8192], fail)));
        proptest::prop_assert_eq!(fast, csv, "{:?}", String::from_utf8_lossy(data));
        Ok(())
    }

    #[test]
    fn the_fast_reader_reads_as_the_csv_reader_does() {
        for text in [
            &b""[..],
            b"\n\r\n",
            b"a,b",
            b"a,b\n1,2",
            // The last record without a line end, after a read (proptest found these).
            b"aa\raa\ra",
            b"a\raaaaaaaaaa\r\xff",
            b"a,b\r\n1,2\r\n\r\n3\n4,5,6\r7,8\n",
            b"\xef\xbb\xbfa,b\n,\n",
            b"a,b\n\xff,\xc3\xa9\n\xc3,\xa9\n",
            b"a,b\n1,2\n\"x\ny\",2\n3,4\n",
            b"a,\"b\"\n1,2\n",
            b"\"a\",b\n1,2\n",
        ] {
            for sizes in [&[1][..], &[2, 3], &[64 * 1024]] {
                both_readers_agree(text, sizes, false).unwrap();
                both_readers_agree(text, sizes, true).unwrap();
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn the_fast_reader_agrees_on_any_quote_free_text(
            data in proptest::collection::vec(proptest::sample::select(b"a1 -,,\r\n\n\xc3\xa9\xff".to_vec()), 0..120),
            sizes in proptest::collection::vec(1usize..9, 1..4),
            fail in proptest::bool::ANY,
        ) {
            both_readers_agree(&data, &sizes, fail)?;
        }

        #[test]
        fn the_fast_reader_hands_quotes_to_the_csv_reader(
            data in proptest::collection::vec(proptest::sample::select(b"a1,,\"\r\n\n\xff".to_vec()), 0..120),
            sizes in proptest::collection::vec(1usize..9, 1..4),
        ) {
            both_readers_agree(&data, &sizes, false)?;
        }
    }

    #[test]
    fn long_records_cross_many_reads() {
        let mut text = String::from("a,b\n");
        for i in 0..5_000 {
            text.push_str(&format!("{},{}\r\n", "x".repeat(i % 300), i));
        }
        text.push_str(&format!("\"q\",{}\n", "y".repeat(100_000)));
        text.push_str("1,2\n");
        both_readers_agree(text.as_bytes(), &[65_536, 1, 4_000], false).unwrap();
    }

    #[test]
    fn u32_parsing_is_strict() {
        assert_eq!(parse_u32("0"), Some(0));
        assert_eq!(parse_u32("4294967295"), Some(u32::MAX));
        for bad in ["", "4294967296", "-1", "+1", "1.0", " 1", "x"] {
            assert_eq!(parse_u32(bad), None, "{bad:?}");
        }
    }

    /// The number helpers as they were when every field was read as text first: the answer
    /// (or error) the byte fast paths must give.
    fn text_first(row: &Row<'_>, column: usize) -> [Result<u64, String>; 3] {
        let seconds = row
            .text(column)
            .and_then(|text| parse_seconds_ms(text).map_err(|e| row.field_error(column, e.expected(), text)));
        let positive = row.text(column).and_then(|text| match parse_seconds_ms(text) {
            Ok(ms) if ms > 0 => Ok(ms),
            result => Err(row.positive_error(column, result.err(), text)),
        });
        let gpus = row.text(column).and_then(|text| match parse_u32(text) {
            Some(n) if n >= 1 => Ok(u64::from(n)),
            _ => Err(row.field_error(column, format!("a whole number of GPUs from 1 to {}", u32::MAX), text)),
        });
        [seconds, positive, gpus].map(|r| r.map_err(|e| e.to_string()))
    }

    fn bytes_first(row: &Row<'_>, column: usize) -> [Result<u64, String>; 3] {
        [row.seconds_ms(column), row.positive_seconds_ms(column), row.gpus(column).map(u64::from)]
            .map(|r| r.map_err(|e| e.to_string()))
    }

    proptest::proptest! {
        /// Numbers read from a field's bytes answer as they did read from its text: the same
        /// value, the same error, and a field that is not UTF-8 refused as that first, with
        /// either reader, in a record that is UTF-8 or not.
        #[test]
        fn numbers_read_as_bytes_answer_as_text(
            field in proptest::collection::vec(proptest::sample::select(b"0123456789..-e x\xff\xc3\xa9".to_vec()), 0..14),
            other in proptest::sample::select(vec![&b"1"[..], b"\xff", b"\"q\""]),
        ) {
            let mut data = b"a,b\n".to_vec();
            data.extend_from_slice(&field);
            data.push(b',');
            data.extend_from_slice(other);
            data.push(b'\n');
            let mut rows = Rows::open(data.as_slice(), "t.csv").unwrap();
            if let Some(Ok(row)) = rows.next_row() {
                proptest::prop_assert_eq!(bytes_first(&row, 0), text_first(&row, 0), "{:?}", String::from_utf8_lossy(&data));
            }
        }
    }
}
