//! `schedlab report`: one self-contained HTML file (inline SVG charts, inline CSS, no network
//! reference) from a run folder or a sweep folder, and the same charts as SVG or PNG files.
//!
//! - `input`: reading the folders (errors name file, line and field);
//! - `stats`: CDFs and Student-t confidence intervals;
//! - `build`: which charts and tables a report holds, and the notes for what it leaves out;
//! - `verdict`: the report's opening lines, which policy wins what, by how much, at what cost;
//! - `charts`: drawing a chart with plotters (embedded font, byte-identical output);
//! - `html`: the page;
//! - `scaling`: the docs' scaling curves (time and memory against jobs and GPUs), log-log.

pub mod build;
pub mod charts;
mod font;
pub mod html;
pub mod input;
mod interruptions;
mod legend;
pub mod scaling;
pub mod stats;
pub mod verdict;

pub use build::{Report, build};
pub use input::load;

/// A report ready to write: its contents, each chart's SVG (in page order) and the page.
pub struct Rendered {
    pub report: Report,
    pub svgs: Vec<String>,
    pub html: String,
}

/// Builds and draws the report of `input`.
pub fn render(input: &input::Input) -> Result<Rendered, String> {
    let report = build(input);
    let svgs = report.charts().map(charts::Chart::svg).collect::<Result<Vec<_>, _>>()?;
    let html = html::render(&report, &svgs);
    Ok(Rendered { report, svgs, html })
}

impl Rendered {
    /// Writes each chart as `<id>.svg` into `dir` (created if needed); returns the paths.
    pub fn write_svgs(&self, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
        let charts: Vec<&charts::Chart> = self.report.charts().collect();
        write_each(
            dir,
            charts.iter().zip(&self.svgs).map(|(c, s)| (format!("{}.svg", c.id), Ok(s.clone().into_bytes()))),
        )
    }

    /// Writes each chart as `<id>.png` (twice the SVG's pixel size) into `dir`; returns the paths.
    pub fn write_pngs(&self, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
        write_each(dir, self.report.charts().map(|c| (format!("{}.png", c.id), c.png())))
    }
}

fn write_each(
    dir: &std::path::Path,
    files: impl Iterator<Item = (String, Result<Vec<u8>, String>)>,
) -> Result<Vec<std::path::PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes?).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
