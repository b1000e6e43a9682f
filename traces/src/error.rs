//! Errors for everything that reads trace input. Each error says where (file, 1-based line as
//! an editor shows it, column name) and what was expected versus what was found, because the
//! person reading it has to fix a file they may not have written.

use std::fmt;

/// The most errors `validate` collects before it stops reading: enough to see a pattern,
/// few enough to read.
pub const MAX_ERRORS: usize = 20;

/// Longest excerpt of a bad value quoted back in a message; binary garbage stays readable.
const MAX_FOUND_CHARS: usize = 60;

/// Why some trace input was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceError {
    /// One field of one row holds a bad value.
    Field {
        file: String,
        /// 1-based line where the row starts; the header is line 1.
        line: u64,
        /// The column name as the header spells it.
        field: String,
        /// What a valid value looks like, phrased to follow "expected".
        expected: String,
        /// The value as found (cut to a readable length).
        found: String,
    },
    /// A row as a whole is wrong: wrong number of fields, or it contradicts another row.
    Row { file: String, line: u64, message: String },
    /// The file as a whole is wrong: empty, missing or unknown header columns, no jobs.
    File { file: String, message: String },
    /// The file could not be read at all.
    Io { file: String, message: String },
    /// A value handed over by the caller rather than read from a file: cluster shorthand,
    /// format name, generator settings, a workload to write.
    Value { what: String, message: String },
}

impl TraceError {
    /// Builds a [`TraceError::Field`], cutting `found` to a readable excerpt.
    pub fn field(file: &str, line: u64, field: &str, expected: impl Into<String>, found: &str) -> TraceError {
        TraceError::Field {
            file: file.to_owned(),
            line,
            field: field.to_owned(),
            expected: expected.into(),
            found: excerpt(found),
        }
    }

    pub fn row(file: &str, line: u64, message: impl Into<String>) -> TraceError {
        TraceError::Row { file: file.to_owned(), line, message: message.into() }
    }

    pub fn file(file: &str, message: impl Into<String>) -> TraceError {
        TraceError::File { file: file.to_owned(), message: message.into() }
    }

    pub fn io(file: &str, message: impl Into<String>) -> TraceError {
        TraceError::Io { file: file.to_owned(), message: message.into() }
    }

    pub fn value(what: impl Into<String>, message: impl Into<String>) -> TraceError {
        TraceError::Value { what: what.into(), message: message.into() }
    }

    /// The file the error is about, if it is about a file.
    pub fn file_name(&self) -> Option<&str> {
        match self {
            TraceError::Field { file, .. }
            | TraceError::Row { file, .. }
            | TraceError::File { file, .. }
            | TraceError::Io { file, .. } => Some(file),
            TraceError::Value { .. } => None,
        }
    }

    /// The 1-based line the error is about, if it is about one row.
    pub fn line(&self) -> Option<u64> {
        match self {
            TraceError::Field { line, .. } | TraceError::Row { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// At most `MAX_FOUND_CHARS` characters of `s`, marked when cut.
fn excerpt(s: &str) -> String {
    match s.char_indices().nth(MAX_FOUND_CHARS) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

/// A field helper's boxed error (`rows::FieldResult`), back as the error itself.
impl From<Box<TraceError>> for TraceError {
    fn from(e: Box<TraceError>) -> TraceError {
        *e
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // `{:?}` quotes the value and escapes control characters, so an empty field shows
            // as "" and a stray tab as "\t" rather than as nothing.
            TraceError::Field { file, line, field, expected, found } => {
                write!(f, "{file}:{line}: field `{field}`: expected {expected}, got {found:?}")
            }
            TraceError::Row { file, line, message } => write!(f, "{file}:{line}: {message}"),
            TraceError::File { file, message } => write!(f, "{file}: {message}"),
            TraceError::Io { file, message } => write!(f, "{file}: cannot read: {message}"),
            TraceError::Value { what, message } => write!(f, "{what}: {message}"),
        }
    }
}

impl std::error::Error for TraceError {}

/// Where readers put the errors they find. `load` stops at the first; `validate` keeps going
/// (skipping bad rows) up to a limit, so both share one reading path and cannot disagree.
#[derive(Debug)]
pub(crate) struct Sink {
    errors: Vec<TraceError>,
    limit: usize,
}

impl Sink {
    pub(crate) fn new(limit: usize) -> Sink {
        Sink { errors: Vec::new(), limit: limit.max(1) }
    }

    pub(crate) fn push(&mut self, error: TraceError) {
        if self.errors.len() < self.limit {
            self.errors.push(error);
        }
    }

    /// True once no more errors are wanted: readers stop reading then.
    pub(crate) fn is_full(&self) -> bool {
        self.errors.len() >= self.limit
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub(crate) fn into_errors(self) -> Vec<TraceError> {
        self.errors
    }

    /// The first error, if any: what `load`-style callers return.
    pub(crate) fn into_first(self) -> Option<TraceError> {
        self.errors.into_iter().next()
    }

    /// The value of `result`, or `None` with its error reported here.
    pub(crate) fn ok<T, E: Into<TraceError>>(&mut self, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(error.into());
                None
            }
        }
    }
}

/// Runs a sink-reporting reader `read` for a `load`-style caller: its value if it reported no
/// error, else the first error (`file` names the input if it gave up without saying why).
pub(crate) fn first_error<T>(file: &str, read: impl FnOnce(&mut Sink) -> Option<T>) -> Result<T, TraceError> {
    let mut sink = Sink::new(1);
    match read(&mut sink) {
        Some(value) if sink.is_empty() => Ok(value),
        _ => Err(sink.into_first().unwrap_or_else(|| TraceError::file(file, "unreadable"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_error_reads_like_an_editor_location() {
        let e = TraceError::field("philly.csv", 17, "duration", "a non-negative number of seconds", "abc");
        assert_eq!(
            e.to_string(),
            "philly.csv:17: field `duration`: expected a non-negative number of seconds, got \"abc\""
        );
        assert_eq!(e.line(), Some(17));
        assert_eq!(e.file_name(), Some("philly.csv"));
    }

    #[test]
    fn long_and_control_values_are_cut_and_escaped() {
        let long = "x".repeat(500);
        let e = TraceError::field("a.csv", 2, "gpus", "a number", &long);
        let text = e.to_string();
        assert!(text.len() < 200, "{text}");
        assert!(text.contains('…'));
        let e = TraceError::field("a.csv", 2, "gpus", "a number", "1\t2");
        assert!(e.to_string().ends_with(r#"got "1\t2""#), "{e}");
    }

    #[test]
    fn sink_keeps_at_most_its_limit() {
        let mut sink = Sink::new(2);
        for line in 0..5 {
            sink.push(TraceError::row("f", line, "bad"));
        }
        assert!(sink.is_full());
        let errors = sink.into_errors();
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[1].line(), Some(1));
    }
}
