//! The measured points (scripts/scaling.sh writes them): one row per run of
//! `axis,policy,jobs,gpus,seconds,peak_mib,commit`. Charts are drawn on log scales, so every
//! number must be positive; a bad row is an error naming the file, its line and the field.

use std::path::Path;

use crate::report::input::read_csv;

/// Which quantity a row's run varied (the other held fixed, or grown with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Jobs,
    Gpus,
}

/// One measured run.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub axis: Axis,
    pub policy: String,
    pub jobs: u64,
    pub gpus: u64,
    pub seconds: f64,
    pub peak_mib: f64,
    pub commit: String,
}

impl Point {
    /// The value the row's axis varied.
    pub fn x(&self) -> u64 {
        match self.axis {
            Axis::Jobs => self.jobs,
            Axis::Gpus => self.gpus,
        }
    }
}

const COLUMNS: [&str; 7] = ["axis", "policy", "jobs", "gpus", "seconds", "peak_mib", "commit"];

/// Reads the table at `path`. Refuses a row with a bad field, and a second row for the same
/// axis, policy and size (a chart would draw a zigzag through both).
pub fn read(path: &Path) -> Result<Vec<Point>, String> {
    let mut points: Vec<Point> = Vec::new();
    read_csv(path, &COLUMNS, |f| {
        let axis = match f.text(0)?.trim() {
            "jobs" => Axis::Jobs,
            "gpus" => Axis::Gpus,
            other => return Err(f.error(0, "`jobs` or `gpus`", &format!("`{other}`"))),
        };
        let policy = f.text(1)?.trim().to_string();
        if policy.is_empty() {
            return Err(f.error(1, "a policy spec", "nothing"));
        }
        let positive = |i: usize| match f.number(i)? {
            n if n > 0.0 => Ok(n),
            n => Err(f.error(i, "a number above 0 (the axes are logarithmic)", &format!("`{n}`"))),
        };
        let whole = |i: usize| match f.whole(i)? {
            0 => Err(f.error(i, "a whole number above 0", "`0`")),
            n => Ok(n),
        };
        let point = Point {
            axis,
            policy,
            jobs: whole(2)?,
            gpus: whole(3)?,
            seconds: positive(4)?,
            peak_mib: positive(5)?,
            commit: f.text(6)?.trim().to_string(),
        };
        if points.iter().any(|p| p.axis == point.axis && p.policy == point.policy && p.x() == point.x()) {
            let what = format!("{} again (axis {:?}, size {})", point.policy, point.axis, point.x());
            return Err(f.error(1, "one row per axis, policy and size", &what));
        }
        points.push(point);
        Ok(())
    })?;
    if points.is_empty() {
        return Err(format!("{}: no rows", path.display()));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "axis,policy,jobs,gpus,seconds,peak_mib,commit\n";

    fn read_text(name: &str, body: &str) -> Result<Vec<Point>, String> {
        let dir = std::env::temp_dir().join(format!("schedlab-scaling-table-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scaling.csv");
        std::fs::write(&path, format!("{HEADER}{body}")).unwrap();
        let read = read(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        read
    }

    #[test]
    fn reads_rows_with_quoted_specs() {
        let points = read_text(
            "ok",
            "jobs,fifo,10000,96,0.01,9.6,abc\ngpus,\"tiresias[mode=gittins]\",1000000,1000,2.1,62.4,abc\n",
        )
        .unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!((points[0].axis, points[0].x(), points[0].peak_mib), (Axis::Jobs, 10_000, 9.6));
        assert_eq!((points[1].policy.as_str(), points[1].x()), ("tiresias[mode=gittins]", 1000));
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let cases = [
            ("axis", "jobs,fifo,10000,96,0.01,9.6,abc\nnodes,fifo,10000,96,0.01,9.6,abc\n", ":3: field `axis`"),
            ("zero", "jobs,fifo,10000,96,0,9.6,abc\n", ":2: field `seconds`: expected a number above 0"),
            ("text", "jobs,fifo,10000,96,0.01,lots,abc\n", ":2: field `peak_mib`: expected a number"),
            ("jobs", "jobs,fifo,1e4,96,0.01,9.6,abc\n", ":2: field `jobs`: expected a whole number"),
            ("gpus", "gpus,fifo,10000,0,0.01,9.6,abc\n", ":2: field `gpus`: expected a whole number above 0"),
            ("policy", "jobs,,10000,96,0.01,9.6,abc\n", ":2: field `policy`"),
            ("twice", "jobs,fifo,10000,96,0.01,9.6,abc\njobs,fifo,10000,96,0.02,9.6,abc\n", ":3: field `policy`"),
            ("ragged", "jobs,fifo,10000\n", ":2:"),
        ];
        for (name, body, expected) in cases {
            let error = read_text(name, body).unwrap_err();
            assert!(error.contains("scaling.csv") && error.contains(expected), "{name}: {error}");
        }
    }

    #[test]
    fn an_empty_table_is_an_error() {
        assert!(read_text("empty", "").unwrap_err().ends_with("no rows"));
    }
}
