//! A log-log chart of cost against size: one line (with a dot per measured point) per policy,
//! decades ticked on both axes, and a dashed line of slope 1 through the first series' last
//! point (its largest run, the one least blurred by timer resolution and start-up), so a
//! reader sees at a glance whether a curve grows slower than linearly (cost per job falling),
//! alike (flat) or faster. Drawn as `report`'s charts are: the embedded font,
//! the same palette, the legend in a strip of its own.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::charts::{AXIS, FONT, GRID, PALETTE, Series, Ticked};
use crate::report::legend::{Legend, Swatch};

/// The slope-1 guide's colour and legend name.
const GUIDE: RGBColor = RGBColor(0x99, 0x99, 0x99);
pub const GUIDE_NAME: &str = "linear (slope 1)";

#[derive(Debug, Clone, PartialEq)]
pub struct LogLog {
    /// The file stem: `<id>.svg`.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Points in data units (both positive), in order of x.
    pub series: Vec<Series>,
}

impl LogLog {
    const SIZE: (u32, u32) = (760, 440);

    /// The chart as an SVG document (the same bytes on every machine).
    pub fn svg(&self) -> Result<String, String> {
        crate::report::font::register();
        let mut text = String::new();
        {
            let root = SVGBackend::with_string(&mut text, Self::SIZE).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| self.error(e))?;
        }
        Ok(text)
    }

    fn error(&self, e: impl std::fmt::Display) -> String {
        format!("chart {}: drawing failed: {e}", self.id)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(|e| self.error(e))?;
        let body = root.margin(10, 0, 0, 0).titled(&self.title, (FONT, 19.0).into_font()).map_err(|e| self.error(e))?;
        let mut entries: Vec<(String, RGBColor)> =
            self.series.iter().enumerate().map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()])).collect();
        entries.push((GUIDE_NAME.to_string(), GUIDE));
        let legend = Legend { entries, swatch: Swatch::Line };
        let (width, _) = body.dim_in_pixel();
        let (plot, strip) = body.split_horizontally(width.saturating_sub(legend.width(1.0)));
        legend.draw(&strip, 14, 1.0).map_err(|e| self.error(e))?;

        let logs = |pick: fn(&(f64, f64)) -> f64| {
            self.series.iter().flat_map(move |s| s.points.iter().map(pick)).filter(|v| *v > 0.0).map(f64::log10)
        };
        let (x_lo, x_hi) = decades(logs(|p| p.0));
        let (y_lo, y_hi) = decades(logs(|p| p.1));
        let mut chart = ChartBuilder::on(&plot)
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(66)
            .build_cartesian_2d(
                Ticked::new(x_lo..x_hi, Some(ticks(x_lo, x_hi))),
                Ticked::new(y_lo..y_hi, Some(ticks(y_lo, y_hi))),
            )
            .map_err(|e| self.error(e))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| label(*v))
            .y_label_formatter(&|v| label(*v))
            .label_style((FONT, 13.0))
            .axis_desc_style((FONT, 14.0))
            .axis_style(AXIS)
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| self.error(e))?;
        if let Some(guide) = self.guide(x_lo, y_lo) {
            chart.draw_series(DashedLineSeries::new(guide, 6, 4, GUIDE.stroke_width(1))).map_err(|e| self.error(e))?;
        }
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let points: Vec<(f64, f64)> =
                s.points.iter().filter(|p| p.0 > 0.0 && p.1 > 0.0).map(|p| (p.0.log10(), p.1.log10())).collect();
            chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2))).map_err(|e| self.error(e))?;
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    /// The slope-1 line (in log10 units) through the first series' last point, back to the
    /// left edge, or to the bottom where it leaves the chart there.
    fn guide(&self, x_lo: f64, y_lo: f64) -> Option<[(f64, f64); 2]> {
        let &(x, y) = self.series.first()?.points.last()?;
        if x <= 0.0 || y <= 0.0 {
            return None;
        }
        let (x1, y1) = (x.log10(), y.log10());
        let x0 = x_lo.max(x1 - (y1 - y_lo));
        (x0 < x1).then_some([(x0, y1 - (x1 - x0)), (x1, y1)])
    }
}

/// The whole decades around some log10 values: (floor of the least, ceiling of the greatest),
/// one decade at least; (0, 1) for none.
fn decades(logs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = logs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let (lo, hi) = (lo.floor(), hi.ceil());
    (lo, hi.max(lo + 1.0))
}

/// Ticks (log10 units) at each decade from `lo` to `hi`; on a span of under three decades at
/// 2 and 5 times each too, so a short axis is not left with two labels.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let steps: &[f64] = if hi - lo < 3.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut ticks = Vec::new();
    let mut decade = lo;
    while decade <= hi {
        ticks.extend(steps.iter().map(|m| decade + m.log10()).filter(|t| *t <= hi + 1e-9));
        decade += 1.0;
    }
    ticks
}

/// The label of a tick at log10 value `v`: 0.01, 1, 500, 2000, 10k, 1M.
fn label(v: f64) -> String {
    // Five significant digits: 10^4 computed as 9999.999... is 10000.
    let value: f64 = format!("{:.4e}", 10f64.powf(v)).parse().unwrap_or(f64::NAN);
    let (scaled, suffix) = match value {
        v if v >= 1e9 => (v / 1e9, "G"),
        v if v >= 1e6 => (v / 1e6, "M"),
        v if v >= 1e4 => (v / 1e3, "k"),
        v => (v, ""),
    };
    let text = format!("{scaled:.3}");
    format!("{}{suffix}", text.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> LogLog {
        LogLog {
            id: "t".into(),
            title: "Wall time against jobs".into(),
            x_label: "jobs".into(),
            y_label: "seconds".into(),
            series,
        }
    }

    fn series(name: &str, points: &[(f64, f64)]) -> Series {
        Series { name: name.into(), points: points.to_vec() }
    }

    /// The points of each `<polyline>` of an SVG, in pixels.
    fn polylines(svg: &str) -> Vec<Vec<(f64, f64)>> {
        svg.split("<polyline")
            .skip(1)
            .filter_map(|t| t.split("points=\"").nth(1)?.split('"').next())
            .map(|points| {
                points
                    .split_whitespace()
                    .filter_map(|p| {
                        let (x, y) = p.split_once(',')?;
                        Some((x.parse().ok()?, y.parse().ok()?))
                    })
                    .collect()
            })
            .collect()
    }

    /// A line per policy, both axes logarithmic: points a decade apart in x and in y are drawn
    /// equally far apart, ticks are decades, and each policy and the guide are in the legend.
    #[test]
    fn one_line_per_policy_on_log_axes() {
        let linear = [(1e4, 0.01), (1e5, 0.1), (1e6, 1.0), (1e7, 10.0)];
        let flatter = [(1e4, 0.02), (1e5, 0.05), (1e6, 0.2), (1e7, 0.9)];
        let svg = chart(vec![series("fifo", &linear), series("tiresias", &flatter)]).svg().unwrap();
        let lines = polylines(&svg);
        // The dashed guide is drawn as separate segments (polylines of two points) first.
        let data: Vec<&Vec<(f64, f64)>> = lines.iter().filter(|l| l.len() == 4).collect();
        assert_eq!(data.len(), 2, "one four-point line per policy: {lines:?}");
        let steps: Vec<(f64, f64)> = data[0].windows(2).map(|w| (w[1].0 - w[0].0, w[1].1 - w[0].1)).collect();
        for step in &steps {
            assert!((step.0 - steps[0].0).abs() <= 1.0 && (step.1 - steps[0].1).abs() <= 1.0, "{steps:?}");
        }
        assert!(steps[0].0 > 50.0 && steps[0].1 < -30.0, "rightwards and upwards: {steps:?}");
        for text in ["10k", "100k", "1M", "10M", "0.01", "0.1", ">\n1\n<", "fifo", "tiresias", GUIDE_NAME] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert_eq!(svg, chart(vec![series("fifo", &linear), series("tiresias", &flatter)]).svg().unwrap());
    }

    /// The guide ends at the first series' last point and has slope 1, cut where it leaves
    /// the chart.
    #[test]
    fn the_guide_has_slope_one_and_stays_inside() {
        let flat = chart(vec![series("fifo", &[(1e4, 10.0), (1e7, 900.0)]), series("b", &[(1e8, 1e4)])]);
        let (x_lo, y_lo) = (4.0, 1.0);
        let [start, end] = flat.guide(x_lo, y_lo).unwrap();
        assert_eq!(end, (7.0, 900f64.log10()));
        assert!((start.0 - (7.0 - (900f64.log10() - 1.0))).abs() < 1e-9 && (start.1 - 1.0).abs() < 1e-9, "{start:?}");
        let steep = chart(vec![series("fifo", &[(1e4, 100.0), (1e5, 1e6)])]);
        assert_eq!(steep.guide(x_lo, y_lo), Some([(4.0, 5.0), (5.0, 6.0)]), "to the left edge");
        assert_eq!(chart(Vec::new()).guide(x_lo, y_lo), None);
    }

    #[test]
    fn decades_ticks_and_labels() {
        assert_eq!(decades([4.0, 6.9].into_iter()), (4.0, 7.0));
        assert_eq!(decades([2.3].into_iter()), (2.0, 3.0));
        assert_eq!(decades(std::iter::empty()), (0.0, 1.0));
        assert_eq!(ticks(4.0, 8.0), vec![4.0, 5.0, 6.0, 7.0, 8.0]);
        let short: Vec<String> = ticks(1.0, 3.0).into_iter().map(label).collect();
        assert_eq!(short, ["10", "20", "50", "100", "200", "500", "1000"]);
        assert_eq!(label(-2.0), "0.01");
        assert_eq!(label(4.0), "10k");
        assert_eq!(label(8.0), "100M");
        assert_eq!(label(9.0), "1G");
    }
}
