//! `schedlab report`: one self-contained HTML report of a run folder or a sweep folder, and
//! optionally each chart as an SVG or PNG file.

use super::{CliResult, emit};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReportArgs {
    /// A run folder (`schedlab simulate --out`) or a sweep folder (`schedlab sweep --out`).
    dir: PathBuf,
    /// The HTML file to write (default: DIR/report.html). Everything is inline: it opens
    /// anywhere, with no network.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write each chart as a PNG (twice the on-page size) into this folder.
    #[arg(long, value_name = "DIR")]
    png: Option<PathBuf>,
    /// Also write each chart as an SVG into this folder.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> CliResult {
    let input = reports::report::load(&args.dir)?;
    let rendered = reports::report::render(&input)?;
    let output = args.output.unwrap_or_else(|| args.dir.join("report.html"));
    std::fs::write(&output, &rendered.html).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    let charts = rendered.svgs.len();
    emit(format_args!("wrote {} ({charts} chart{})\n", output.display(), if charts == 1 { "" } else { "s" }))?;
    if let Some(dir) = &args.svg {
        let written = rendered.write_svgs(dir)?;
        emit(format_args!("wrote {} SVG file(s) into {}\n", written.len(), dir.display()))?;
    }
    if let Some(dir) = &args.png {
        let written = rendered.write_pngs(dir)?;
        emit(format_args!("wrote {} PNG file(s) into {}\n", written.len(), dir.display()))?;
    }
    Ok(())
}
