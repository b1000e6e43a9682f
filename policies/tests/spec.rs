//! `PolicySpec`: the one parser of `name[key=value,...]`, its canonical text, and its serde
//! forms (the canonical string, or a table of typed values).

use policies::PolicySpec;
use serde::{Deserialize, Serialize};

fn spec(text: &str) -> PolicySpec {
    text.parse().unwrap_or_else(|e| panic!("`{text}` parses: {e}"))
}

fn error(text: &str) -> String {
    match text.parse::<PolicySpec>() {
        Ok(s) => panic!("`{text}` should not parse, got `{s}`"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn canonical_text_sorts_keys_and_drops_spaces() {
    assert_eq!(spec("sjf[placement=spread,duration=estimate]").to_string(), "sjf[duration=estimate,placement=spread]");
    assert_eq!(
        spec(" sjf [ placement = spread , duration=estimate ] ").to_string(),
        "sjf[duration=estimate,placement=spread]"
    );
    assert_eq!(spec("fifo").to_string(), "fifo");
    assert_eq!(spec("fifo[]").to_string(), "fifo");
    assert_eq!(spec("tiresias[thresholds=3600;36000]").to_string(), "tiresias[thresholds=3600;36000]");
}

#[test]
fn text_round_trips() {
    for text in ["fifo", "sjf[duration=estimate,placement=spread]", "easy-backfill[depth=5]", "my-policy[x=]"] {
        let parsed = spec(text);
        assert_eq!(parsed.to_string(), text);
        assert_eq!(spec(&parsed.to_string()), parsed);
    }
}

#[test]
fn parts_are_read_back() {
    let s = spec("sjf[duration=estimate,placement=spread]");
    assert_eq!(s.name(), "sjf");
    assert_eq!(s.param("duration"), Some("estimate"));
    assert_eq!(s.param("depth"), None);
    assert_eq!(s.params().keys().collect::<Vec<_>>(), ["duration", "placement"]);
    let built =
        PolicySpec::new("sjf").and_then(|s| s.with("placement", "spread")).and_then(|s| s.with("duration", "estimate"));
    assert_eq!(built, Ok(s));
}

#[test]
fn default_is_fifo() {
    assert_eq!(PolicySpec::default(), spec("fifo"));
}

#[test]
fn malformed_specs_are_errors_that_say_what_was_expected() {
    assert!(error("sjf[duration]").contains("expected key=value, got `duration`"), "{}", error("sjf[duration]"));
    assert!(error("sjf[a=1,a=2]").contains("`a` given twice"), "{}", error("sjf[a=1,a=2]"));
    assert!(error("sjf[duration=oracle").contains("ending in `]`"), "{}", error("sjf[duration=oracle"));
    assert!(error("[a=1]").contains("the policy name is empty"), "{}", error("[a=1]"));
    assert!(error("my policy").contains("the policy name `my policy` contains ` `"), "{}", error("my policy"));
    assert!(error("sjf[=1]").contains("the parameter is empty"), "{}", error("sjf[=1]"));
}

#[test]
fn set_refuses_what_the_text_could_not_hold() {
    let mut s = spec("tiresias");
    let e = s.set("thresholds", "1,2").unwrap_err().to_string();
    assert!(e.contains("contains `,`") && e.contains("a;b;c"), "{e}");
    assert!(s.set("bad key", "1").is_err());
    assert_eq!(s.set("thresholds", "1;2"), Ok(None));
    assert_eq!(s.set("thresholds", "3;4"), Ok(Some("1;2".to_string())));
    assert_eq!(s.to_string(), "tiresias[thresholds=3;4]");
}

#[test]
fn json_is_the_canonical_string() {
    let s = spec("sjf[placement=spread,duration=estimate]");
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#""sjf[duration=estimate,placement=spread]""#);
    assert_eq!(serde_json::from_str::<PolicySpec>(&json).unwrap(), s);
}

#[test]
fn json_tables_of_typed_values_are_read_as_text() {
    let table = r#"{"name": "easy-backfill", "depth": 50, "duration": "estimate", "avoid_failed_h": 0.1}"#;
    let s: PolicySpec = serde_json::from_str(table).unwrap();
    assert_eq!(s.to_string(), "easy-backfill[avoid_failed_h=0.1,depth=50,duration=estimate]");
    let s: PolicySpec = serde_json::from_str(r#"{"skip": true, "name": "fifo", "avoid_failed_h": 2.0}"#).unwrap();
    assert_eq!(s.to_string(), "fifo[avoid_failed_h=2,skip=true]");
    let s: PolicySpec = serde_json::from_str(r#"{"name": "x", "n": -3, "f": 1e-7}"#).unwrap();
    assert_eq!(s.to_string(), "x[f=0.0000001,n=-3]");
    // The float's text reads back as the same number.
    assert_eq!(s.param("f").unwrap().parse::<f64>().unwrap(), 1e-7);
}

#[test]
fn json_table_errors_name_the_problem() {
    let e = serde_json::from_str::<PolicySpec>(r#"{"depth": 50}"#).unwrap_err().to_string();
    assert!(e.contains("no `name`"), "{e}");
    let e = serde_json::from_str::<PolicySpec>(r#"{"name": "sjf", "duration": ["a"]}"#).unwrap_err().to_string();
    assert!(e.contains("a string, an integer, a float or a boolean"), "{e}");
    let e = serde_json::from_str::<PolicySpec>(r#"{"name": "sjf", "a": 1, "a": 2}"#).unwrap_err().to_string();
    assert!(e.contains("`a` given twice"), "{e}");
    let e = serde_json::from_str::<PolicySpec>(r#"{"name": "tiresias", "thresholds": "1,2"}"#).unwrap_err().to_string();
    assert!(e.contains("contains `,`"), "{e}");
    let e = serde_json::from_str::<PolicySpec>(r#""sjf[duration""#).unwrap_err().to_string();
    assert!(e.contains("ending in `]`"), "{e}");
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct RunFile {
    policy: PolicySpec,
}

#[test]
fn toml_round_trips_through_the_string() {
    let run = RunFile { policy: spec("sjf[placement=spread,duration=estimate]") };
    let text = toml::to_string(&run).unwrap();
    assert_eq!(text, "policy = \"sjf[duration=estimate,placement=spread]\"\n");
    assert_eq!(toml::from_str::<RunFile>(&text).unwrap(), run);
}

#[test]
fn toml_tables_are_read() {
    let inline: RunFile = toml::from_str("policy = { name = \"sjf\", duration = \"estimate\" }").unwrap();
    assert_eq!(inline.policy, spec("sjf[duration=estimate]"));
    let table: RunFile = toml::from_str("[policy]\nname = \"fifo\"\nskip = true\navoid_failed_h = 1.5\n").unwrap();
    assert_eq!(table.policy.to_string(), "fifo[avoid_failed_h=1.5,skip=true]");
    let e = toml::from_str::<RunFile>("policy = { duration = \"estimate\" }").unwrap_err().to_string();
    assert!(e.contains("no `name`"), "{e}");
}
