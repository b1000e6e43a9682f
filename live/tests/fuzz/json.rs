//! JSON texts: every value is generated as the text that goes on the wire, so that numbers
//! serde_json would never write (`1e400`, `-0`) and strings it would never accept (`"\ud800"`)
//! reach the parser.

/// Bytes sent as a body, shown as text (escaped where they are not printable ASCII).
#[derive(Clone)]
pub struct Body(pub Vec<u8>);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

pub fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

pub fn object(fields: &[(String, String)]) -> String {
    let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{v}", quote(k))).collect();
    format!("{{{}}}", inner.join(","))
}

/// `depth` arrays in arrays: past serde_json's recursion limit at 128.
pub fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

pub const HOSTILE_NUMBERS: &[&str] = &[
    "1e400",
    "-1e400",
    "-0",
    "-0.0",
    "0",
    "0.0",
    "1e-9",
    "0.0004",
    "0.0005",
    "0.001",
    "-1",
    "1e15",
    "1e12",
    "999999999999",
    "1000000000000",
    "1000000000000.001",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "1.7976931348623157e308",
    "4.9e-324",
    "9007199254740993",
    "1E3",
    "2.5e1",
    "0.1e1",
    "123456789012345678901234567890",
    "3600000",
    "86400",
    "2147483648",
    "-2147483649",
];

pub const HOSTILE_NAMES: &[&str] = &[
    "",
    ".",
    "..",
    "a/b",
    "../x",
    "/etc",
    "a b",
    "a\nb",
    "a\rb",
    "a\u{0}b",
    "\u{1b}[2J",
    "é",
    "名前",
    "-",
    "_",
    ".hidden",
    "a:b",
    "a=b",
    "a\\b",
    "%2e%2e",
    "\u{202e}gpj.exe",
    "~",
    "1",
];

/// Strings as raw JSON that serde_json refuses or reads oddly.
pub const RAW_STRINGS: &[&str] =
    &[r#""\ud800""#, r#""\udfff\ud800""#, r#""\u0000""#, r#""a\/b""#, r#""\uD83D\uDE00""#, "\"\\\"\""];
