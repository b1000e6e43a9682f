//! The sweep table's column types, from the writer's own header (`reports::sweep`) and the
//! types of `reports::Summary`'s fields, so that a field added to the summary is typed in
//! Python without a second list to keep.

use reports::sweep::{RUN_COLUMNS, sweep_columns};
use serde_json::Value;

/// sweep.csv's columns in order, each with its type as Python's schemas spell it: `int`,
/// `float`, `str` or `bool`. The run's own columns are `run` and `seed` (whole numbers) and
/// `trace` and `spec` (text); the summary's are typed as `Summary` serializes: whole numbers,
/// fractions, text, and `float` for an optional field (null in the default summary: every
/// optional field of the summary is a number, of seconds, a share or a count, and a float
/// column holds its empty cells as null).
pub fn sweep_schema() -> Result<Vec<(String, &'static str)>, String> {
    let summary =
        serde_json::to_value(reports::Summary::default()).map_err(|e| format!("the summary's fields: {e}"))?;
    sweep_columns()
        .into_iter()
        .map(|column| {
            let kind = match column.as_str() {
                "run" | "seed" => "int",
                other if RUN_COLUMNS.contains(&other) => "str",
                other => match summary.get(other) {
                    Some(Value::Number(n)) if n.is_u64() || n.is_i64() => "int",
                    Some(Value::Number(_) | Value::Null) => "float",
                    Some(Value::String(_)) => "str",
                    Some(Value::Bool(_)) => "bool",
                    _ => return Err(format!("sweep.csv's column `{other}` has no type: it is not a summary field")),
                },
            };
            Ok((column, kind))
        })
        .collect()
}
