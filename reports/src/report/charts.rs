//! Drawing: a `Chart` (what to show, in data units) rendered by plotters to SVG text or PNG
//! bytes. Text is laid out with the embedded DejaVu Sans (registered once, see `font`), so a
//! chart is the same bytes on every machine.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

use super::legend::{Legend, Swatch};

/// A linear f64 axis with ticks where asked (None: plotters' own round numbers).
pub(super) struct Ticked {
    inner: RangedCoordf64,
    ticks: Option<Vec<f64>>,
}

impl Ticked {
    pub(super) fn new(range: Range<f64>, ticks: Option<Vec<f64>>) -> Ticked {
        Ticked { inner: range.into(), ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.ticks {
            // Given ticks are the bold grid; no light lines between them.
            Some(_) if hint.weight().allow_light_points() => Vec::new(),
            Some(ticks) => ticks.clone(),
            None => self.inner.key_points(hint),
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// Colours for series, in order (Tableau 10: distinct in print and for most colour-blind readers).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

pub(super) const FONT: &str = "sans-serif";
pub(super) const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);
pub(super) const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// The x axis of a chart.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Durations in seconds on a log scale, ticks at 1 s, 10 s, 1 min, ... (values below 1 s
    /// are drawn at 1 s).
    LogDuration,
    /// Time in seconds from an origin the caller chose, shown from 0 in `min`, `h` or `d` as
    /// suits the span.
    Time,
}

/// One named line, or one layer of a stack, in data units (x in seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One bar of a Gantt chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    /// (start, end) in seconds; None for a task that never ran.
    pub span: Option<(f64, f64)>,
    /// Index into `Gantt::states`.
    pub state: usize,
}

/// A dependency line of a Gantt chart: from bar `from`, at `leaves_s` (the point the
/// downstream waited for, in the bars' seconds), to the start of bar `to`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub leaves_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    /// Lines on shared axes; `y_max` fixes the top of the y axis (1 for a CDF); `counts`: the
    /// y values are counts, ticked at whole numbers only.
    Lines { x: XAxis, y_max: Option<f64>, counts: bool, series: Vec<Series> },
    /// Layers stacked bottom to top (each layer's y added to those below); `y_max` fixes the
    /// top of the y axis (100 for shares in %) unless the stack goes past it.
    Stacked { y_max: Option<f64>, series: Vec<Series> },
    /// Bars top to bottom, with dependency lines.
    Gantt { bars: Vec<Bar>, edges: Vec<Edge>, states: Vec<String> },
}

/// A chart: its id (unique in a report, used for file names and the render check), title,
/// axis labels with units, and the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub plot: Plot,
}

impl Chart {
    /// Pixel size: Gantt charts grow with their rows; stacked charts (one per policy) are small
    /// multiples, two to a row on the page.
    pub fn size(&self) -> (u32, u32) {
        match &self.plot {
            Plot::Gantt { bars, .. } => (900, (150 + 26 * bars.len() as u32).min(1400)),
            Plot::Stacked { .. } => (640, 400),
            _ => (900, 460),
        }
    }

    /// Whether the page shows it as one of small multiples (half the width).
    pub fn small(&self) -> bool {
        matches!(self.plot, Plot::Stacked { .. })
    }

    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        super::font::register();
        let mut text = String::new();
        {
            let root = SVGBackend::with_string(&mut text, self.size()).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| self.error(e))?;
        }
        Ok(text)
    }

    /// The chart as a PNG image (RGB, 8 bits), at twice the SVG's size for print.
    pub fn png(&self) -> Result<Vec<u8>, String> {
        super::font::register();
        let (w, h) = self.size();
        let (w, h) = (w * 2, h * 2);
        let mut pixels = vec![0u8; w as usize * h as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
            // The SVG's layout at twice the size: fonts, margins and lines scale with it.
            self.draw_scaled(&root, 2.0)?;
            root.present().map_err(|e| self.error(e))?;
        }
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, w, h);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().map_err(|e| format!("chart {}: PNG: {e}", self.id))?;
            writer.write_image_data(&pixels).map_err(|e| format!("chart {}: PNG: {e}", self.id))?;
        }
        Ok(out)
    }

    fn error(&self, e: impl std::fmt::Display) -> String {
        format!("chart {}: drawing failed: {e}", self.id)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        self.draw_scaled(root, 1.0)
    }

    fn draw_scaled<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, scale: f64) -> Result<(), String> {
        let px = |v: f64| (v * scale).round() as u32;
        let pt = |v: f64| v * scale;
        root.fill(&WHITE).map_err(|e| self.error(e))?;
        let body = root
            .margin(px(10.0), 0, 0, 0)
            .titled(&self.title, (FONT, pt(21.0)).into_font().color(&BLACK))
            .map_err(|e| self.error(e))?;
        // The legend gets a strip of its own right of the plot, never on the data.
        let legend = self.legend();
        let (width, _) = body.dim_in_pixel();
        let (plot, strip) = body.split_horizontally(width.saturating_sub(legend.width(scale)));
        legend.draw(&strip, px(14.0) as i32, scale).map_err(|e| self.error(e))?;
        let mut builder = ChartBuilder::on(&plot);
        builder
            .margin(px(14.0))
            .x_label_area_size(px(50.0))
            .y_label_area_size(px(if matches!(self.plot, Plot::Gantt { .. }) { 150.0 } else { 66.0 }));
        match &self.plot {
            Plot::Lines { x, y_max, counts, series } => self.lines(builder, x, *y_max, *counts, series, scale),
            Plot::Stacked { y_max, series } => self.stacked(builder, *y_max, series, scale),
            Plot::Gantt { bars, edges, states } => self.gantt(builder, bars, edges, states, scale),
        }
    }

    fn lines<DB: DrawingBackend>(
        &self,
        mut builder: ChartBuilder<'_, '_, DB>,
        x: &XAxis,
        y_max: Option<f64>,
        counts: bool,
        series: &[Series],
        scale: f64,
    ) -> Result<(), String> {
        let log = matches!(x, XAxis::LogDuration);
        let (x_range, ticks, unit, origin) = match x {
            XAxis::LogDuration => {
                let (lo, hi) = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.0.max(1.0))));
                let (lo, hi) = (lo.log10().floor(), hi.log10().max(lo.log10() + 1.0));
                let within = |set: &[(f64, &str)]| -> Vec<f64> {
                    set.iter().map(|(s, _)| s.log10()).filter(|t| *t >= lo && *t <= hi).collect()
                };
                // Decades, or (on a narrow range) 1-2-5 steps in each unit.
                let coarse = within(&DURATION_TICKS);
                let ticks = if coarse.len() >= 4 { coarse } else { within(&FINE_DURATION_TICKS) };
                ((lo, hi), Some(ticks), 1.0, 0.0)
            }
            XAxis::Time => {
                let (lo, hi) = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
                let lo = lo.min(0.0);
                let unit = time_unit(hi - lo).0;
                // Time from 0 (the caller's origin), or from the earliest point if that is before.
                ((0.0, if hi > lo { (hi - lo) / unit } else { 1.0 }), None, unit, lo)
            }
        };
        // A fixed top (1 for a CDF, 100 %) grows if the data goes past it: never drawn off the chart.
        let data_top = extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.1))).1;
        let top = match y_max {
            Some(max) if data_top <= max => max,
            _ => nice_top(data_top),
        };
        // Counts: whole-number ticks (never 0.2 failures), the top rounded up to a tick.
        let (top, y_ticks) = if counts { whole_ticks(top) } else { (top, None) };
        let transform = |v: f64| if log { v.max(1.0).log10() } else { (v - origin) / unit };
        let x_spec = Ticked::new(x_range.0..x_range.1, ticks);
        let y_spec = Ticked::new(0.0..top, y_ticks);
        let mut chart = builder.build_cartesian_2d(x_spec, y_spec).map_err(|e| self.error(e))?;
        let format_x = |v: &f64| if log { duration_label(10f64.powf(*v)) } else { axis_number(*v) };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&format_x)
            .y_label_formatter(&|v| axis_number(*v))
            .label_style((FONT, 13.0 * scale))
            .axis_desc_style((FONT, 14.0 * scale))
            .axis_style(AXIS)
            .bold_line_style(GRID)
            .light_line_style(WHITE);
        if !log {
            mesh.x_labels(10);
        }
        mesh.y_labels(8).draw().map_err(|e| self.error(e))?;
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let style = color.stroke_width((2.0 * scale).round() as u32);
            let points = s.points.iter().map(|&(x, y)| (transform(x), y));
            chart.draw_series(LineSeries::new(points, style)).map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    fn stacked<DB: DrawingBackend>(
        &self,
        mut builder: ChartBuilder<'_, '_, DB>,
        y_max: Option<f64>,
        series: &[Series],
        scale: f64,
    ) -> Result<(), String> {
        // Every layer shares the x values of the first; cumulative sums bottom to top.
        let xs: Vec<f64> = series.first().map(|s| s.points.iter().map(|p| p.0).collect()).unwrap_or_default();
        let mut lower = vec![0.0; xs.len()];
        let mut layers = Vec::with_capacity(series.len());
        for s in series {
            let upper: Vec<f64> = lower.iter().zip(&s.points).map(|(l, p)| l + p.1).collect();
            layers.push((lower.clone(), upper.clone()));
            lower = upper;
        }
        let (lo, hi) = extent(xs.iter().copied());
        let lo = lo.min(0.0);
        let (unit, _) = time_unit(hi - lo);
        let hi = if hi > lo { hi } else { lo + unit };
        let data_top = extent(lower.iter().copied()).1;
        let top = match y_max {
            // A share's axis ends at 100 %, but never cuts the stack off.
            Some(max) if data_top <= max + 1e-6 => max,
            _ => nice_top(data_top),
        };
        let mut chart = builder.build_cartesian_2d(0.0..(hi - lo) / unit, 0.0..top).map_err(|e| self.error(e))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| axis_number(*v))
            .y_label_formatter(&|v| axis_number(*v))
            .label_style((FONT, 13.0 * scale))
            .axis_desc_style((FONT, 14.0 * scale))
            .axis_style(AXIS)
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .x_labels(10)
            .y_labels(8)
            .draw()
            .map_err(|e| self.error(e))?;
        for (i, (lower, upper)) in layers.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mut outline: Vec<(f64, f64)> = xs.iter().zip(upper).map(|(x, y)| ((x - lo) / unit, *y)).collect();
            outline.extend(xs.iter().zip(lower).rev().map(|(x, y)| ((x - lo) / unit, *y)));
            chart
                .draw_series(std::iter::once(Polygon::new(outline, color.mix(0.85).filled())))
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    fn gantt<DB: DrawingBackend>(
        &self,
        mut builder: ChartBuilder<'_, '_, DB>,
        bars: &[Bar],
        edges: &[Edge],
        states: &[String],
        scale: f64,
    ) -> Result<(), String> {
        let n = bars.len().max(1);
        let (lo, hi) = extent(bars.iter().filter_map(|b| b.span).flat_map(|(a, b)| [a, b]));
        let lo = lo.min(0.0);
        let (unit, _) = time_unit(hi - lo);
        let hi = if hi > lo { hi } else { lo + unit };
        // Row i (top to bottom) is centred at y = n - i - 0.5.
        let row_y = |i: usize| (n - i) as f64 - 0.5;
        let ticks: Vec<f64> = (0..bars.len()).map(row_y).collect();
        let labels: Vec<(f64, String)> = bars.iter().enumerate().map(|(i, b)| (row_y(i), b.label.clone())).collect();
        let label_of =
            |v: &f64| labels.iter().find(|(y, _)| (y - v).abs() < 1e-6).map(|(_, l)| l.clone()).unwrap_or_default();
        let mut chart = builder
            .build_cartesian_2d(0.0..(hi - lo) / unit, Ticked::new(0.0..n as f64, Some(ticks)))
            .map_err(|e| self.error(e))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| axis_number(*v))
            .y_label_formatter(&label_of)
            .label_style((FONT, 13.0 * scale))
            .axis_desc_style((FONT, 14.0 * scale))
            .axis_style(AXIS)
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .x_labels(10)
            .draw()
            .map_err(|e| self.error(e))?;
        let edge_style = AXIS.mix(0.8).stroke_width(scale.round() as u32);
        chart
            .draw_series(edges.iter().filter_map(|e| {
                let (to_start, _) = bars.get(e.to)?.span?;
                Some(PathElement::new(
                    vec![((e.leaves_s - lo) / unit, row_y(e.from)), ((to_start - lo) / unit, row_y(e.to))],
                    edge_style,
                ))
            }))
            .map_err(|e| self.error(e))?;
        // A task of a minute on a chart of a day would be invisible: every bar gets a few pixels.
        let plot_px = f64::from(chart.plotting_area().dim_in_pixel().0.max(1));
        let min_width = MIN_BAR_PX * scale * (hi - lo) / unit / plot_px;
        let right = (hi - lo) / unit;
        for (k, state) in states.iter().enumerate() {
            let color = state_color(state);
            chart
                .draw_series(bars.iter().enumerate().filter(|(_, b)| b.state == k).filter_map(|(i, b)| {
                    let (start, end) = b.span?;
                    let y = row_y(i);
                    let (x0, x1) = ((start - lo) / unit, (end - lo) / unit);
                    let x1 = x1.max(x0 + min_width);
                    // Widened past the axis' end, it would be cut: widen it leftwards instead.
                    let (x0, x1) = if x1 > right { (right - (x1 - x0), right) } else { (x0, x1) };
                    Some(Rectangle::new([(x0, y - 0.32), (x1, y + 0.32)], color.filled()))
                }))
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }
}

impl Chart {
    /// The legend: the series of a chart of several lines, a stack's layers, a Gantt chart's
    /// states.
    fn legend(&self) -> Legend {
        let named = |series: &[Series]| {
            series.iter().enumerate().map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()])).collect()
        };
        match &self.plot {
            Plot::Lines { series, .. } if series.len() > 1 => Legend { entries: named(series), swatch: Swatch::Line },
            Plot::Lines { .. } => Legend { entries: Vec::new(), swatch: Swatch::Line },
            Plot::Stacked { series, .. } => Legend { entries: named(series), swatch: Swatch::Block },
            Plot::Gantt { states, .. } => {
                Legend { entries: states.iter().map(|s| (s.clone(), state_color(s))).collect(), swatch: Swatch::Block }
            }
        }
    }
}

/// The narrowest a Gantt bar is drawn, in SVG pixels.
const MIN_BAR_PX: f64 = 4.0;

/// The colour of a task state in a Gantt chart.
fn state_color(state: &str) -> RGBColor {
    match state {
        "succeeded" => PALETTE[0],
        "failed" => PALETTE[2],
        "running" => PALETTE[4],
        "skipped" | "unschedulable" => PALETTE[9],
        _ => PALETTE[1],
    }
}

/// Log-axis ticks: seconds and their labels.
const DURATION_TICKS: [(f64, &str); 9] = [
    (1.0, "1 s"),
    (10.0, "10 s"),
    (60.0, "1 min"),
    (600.0, "10 min"),
    (3600.0, "1 h"),
    (36_000.0, "10 h"),
    (86_400.0, "1 d"),
    (864_000.0, "10 d"),
    (8_640_000.0, "100 d"),
];

/// Ticks for narrow log ranges.
const FINE_DURATION_TICKS: [(f64, &str); 22] = [
    (1.0, "1 s"),
    (2.0, "2 s"),
    (5.0, "5 s"),
    (10.0, "10 s"),
    (20.0, "20 s"),
    (60.0, "1 min"),
    (120.0, "2 min"),
    (300.0, "5 min"),
    (600.0, "10 min"),
    (1200.0, "20 min"),
    (3600.0, "1 h"),
    (7200.0, "2 h"),
    (18_000.0, "5 h"),
    (36_000.0, "10 h"),
    (86_400.0, "1 d"),
    (172_800.0, "2 d"),
    (432_000.0, "5 d"),
    (864_000.0, "10 d"),
    (1_728_000.0, "20 d"),
    (4_320_000.0, "50 d"),
    (8_640_000.0, "100 d"),
    (17_280_000.0, "200 d"),
];

fn duration_label(seconds: f64) -> String {
    FINE_DURATION_TICKS
        .iter()
        .find(|(s, _)| (s / seconds - 1.0).abs() < 1e-6)
        .map_or_else(|| axis_number(seconds), |(_, l)| l.to_string())
}

/// (seconds per unit, unit name) for a span of simulated time.
pub fn time_unit(span_s: f64) -> (f64, &'static str) {
    if span_s > 3.0 * 86_400.0 {
        (86_400.0, "d")
    } else if span_s > 3.0 * 3600.0 {
        (3600.0, "h")
    } else {
        (60.0, "min")
    }
}

/// (min, max) of the values; (0, 1) for none.
fn extent(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .fold(None, |acc: Option<(f64, f64)>, v| Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v)))))
        .unwrap_or((0.0, 1.0))
}

/// A round top for a y axis at or above `max` (1, 2, 2.5 or 5 times a power of ten).
fn nice_top(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|top| *top >= max * 1.0001)
        .unwrap_or(10.0 * magnitude)
}

/// Whole-number ticks from 0 for a count axis reaching `top`: steps of 1, 2 or 5 times a power
/// of ten, at most 8 of them; the axis top rounded up to the last tick.
fn whole_ticks(top: f64) -> (f64, Option<Vec<f64>>) {
    let top = top.ceil().max(1.0);
    let step = (0..)
        .flat_map(|p| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(p)))
        .find(|step| (top / step).ceil() <= 8.0)
        .unwrap_or(top);
    let top = (top / step).ceil() * step;
    let ticks = (0..=(top / step) as u32).map(|i| f64::from(i) * step).collect();
    (top, Some(ticks))
}

/// Tick labels: no trailing zeros, thousands as `k`.
fn axis_number(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        return format!("{}k", trim(format!("{:.1}", v / 1000.0)));
    }
    let decimals = if v == 0.0 || v.abs() >= 100.0 {
        0
    } else if v.abs() >= 1.0 {
        1
    } else {
        3
    };
    trim(format!("{v:.decimals$}"))
}

fn trim(text: String) -> String {
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Chart {
        Chart {
            id: "t".into(),
            title: "JCT".into(),
            x_label: "JCT".into(),
            y_label: "fraction".into(),
            plot: Plot::Lines {
                x: XAxis::LogDuration,
                y_max: Some(1.0),
                counts: false,
                series: vec![
                    Series { name: "fifo".into(), points: vec![(5.0, 0.2), (3600.0, 0.7), (90_000.0, 1.0)] },
                    Series { name: "sjf".into(), points: vec![(2.0, 0.5), (50_000.0, 1.0)] },
                ],
            },
        }
    }

    #[test]
    fn svg_has_title_legend_and_is_deterministic() {
        let chart = lines();
        let svg = chart.svg().unwrap();
        assert!(svg.starts_with("<svg"));
        for text in ["JCT", "fraction", "fifo", "sjf", "1 h", "1 d"] {
            assert!(svg.contains(&format!(">\n{text}\n<")) || svg.contains(text), "{text} missing");
        }
        assert_eq!(svg, chart.svg().unwrap());
    }

    #[test]
    fn png_is_a_png_and_deterministic() {
        let chart = lines();
        let png = chart.png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(png, chart.png().unwrap());
    }

    /// Shares of the cluster stop at 100 %: the axis never runs on to 120 %.
    #[test]
    fn a_share_axis_ends_at_100() {
        let share = |y_max| Chart {
            id: "s".into(),
            title: "share".into(),
            x_label: "t".into(),
            y_label: "%".into(),
            plot: Plot::Stacked {
                y_max,
                series: vec![
                    Series { name: "a".into(), points: vec![(0.0, 60.0), (3600.0, 50.0)] },
                    Series { name: "b".into(), points: vec![(0.0, 40.0), (3600.0, 50.0)] },
                ],
            },
        };
        let capped = share(Some(100.0)).svg().unwrap();
        assert!(capped.contains(">\n100\n<") && !capped.contains(">\n120\n<"), "{capped}");
        assert!(share(None).svg().unwrap().contains(">\n120\n<"), "uncapped, a full cluster tops out past 100");
    }

    #[test]
    fn stacked_and_gantt_draw() {
        let stacked = Chart {
            id: "s".into(),
            title: "share".into(),
            x_label: "t".into(),
            y_label: "GPUs".into(),
            plot: Plot::Stacked {
                y_max: None,
                series: vec![
                    Series { name: "a".into(), points: vec![(0.0, 1.0), (3600.0, 2.0)] },
                    Series { name: "b".into(), points: vec![(0.0, 3.0), (3600.0, 1.0)] },
                ],
            },
        };
        assert!(stacked.svg().unwrap().contains("<polygon"));
        let gantt = Chart {
            id: "g".into(),
            title: "dag".into(),
            x_label: "t".into(),
            y_label: "task".into(),
            plot: Plot::Gantt {
                bars: vec![
                    Bar { label: "prep".into(), span: Some((0.0, 10.0)), state: 0 },
                    Bar { label: "train".into(), span: Some((10.0, 100.0)), state: 0 },
                    Bar { label: "eval".into(), span: None, state: 1 },
                ],
                edges: vec![Edge { from: 0, to: 1, leaves_s: 10.0 }, Edge { from: 1, to: 2, leaves_s: 100.0 }],
                states: vec!["succeeded".into(), "pending".into()],
            },
        };
        let svg = gantt.svg().unwrap();
        assert!(svg.contains("train") && svg.contains("eval"), "{svg}");
    }

    /// The `x` and text of every `<text>` element of an SVG.
    fn texts(svg: &str) -> Vec<(f64, String)> {
        svg.split("<text ")
            .skip(1)
            .map(|t| {
                let x = t.split("x=\"").nth(1).and_then(|r| r.split('"').next()).and_then(|v| v.parse().ok());
                let body = t.split_once('>').map_or("", |(_, r)| r.split("</text>").next().unwrap_or(""));
                (x.unwrap_or(f64::NAN), body.trim().to_string())
            })
            .collect()
    }

    /// The x of every point of every `<polyline>` and `<polygon>` (the data) of an SVG.
    fn data_xs(svg: &str) -> Vec<f64> {
        svg.split("<poly")
            .skip(1)
            .filter_map(|t| t.split("points=\"").nth(1)?.split('"').next())
            .flat_map(|points| points.split_whitespace().filter_map(|p| p.split(',').next()?.parse().ok()))
            .collect()
    }

    fn six_cdfs() -> Chart {
        let series = (0..6)
            .map(|i| Series {
                name: format!("policy-{i}[placement=pack]"),
                points: vec![(1.0 + i as f64, 0.0), (3600.0, 0.5), (86_400.0 * (1.0 + i as f64), 1.0)],
            })
            .collect();
        Chart { plot: Plot::Lines { x: XAxis::LogDuration, y_max: Some(1.0), counts: false, series }, ..lines() }
    }

    /// A legend never covers data: every entry lies right of every point of every series.
    #[test]
    fn legends_sit_beside_the_data_not_on_it() {
        let stacked = Chart {
            id: "s".into(),
            title: "share".into(),
            x_label: "t".into(),
            y_label: "GPUs".into(),
            plot: Plot::Stacked {
                y_max: None,
                series: vec![
                    Series { name: "research".into(), points: vec![(0.0, 1.0), (3600.0, 2.0), (7200.0, 8.0)] },
                    Series { name: "production".into(), points: vec![(0.0, 3.0), (3600.0, 1.0), (7200.0, 8.0)] },
                ],
            },
        };
        for chart in [six_cdfs(), stacked] {
            let svg = chart.svg().unwrap();
            let names: Vec<String> = match &chart.plot {
                Plot::Lines { series, .. } | Plot::Stacked { series, .. } => {
                    series.iter().map(|s| s.name.clone()).collect()
                }
                Plot::Gantt { .. } => unreachable!(),
            };
            let legend: Vec<f64> = texts(&svg).into_iter().filter(|(_, t)| names.contains(t)).map(|(x, _)| x).collect();
            assert_eq!(legend.len(), names.len(), "{}: a legend entry per series", chart.id);
            let data_right = data_xs(&svg).into_iter().fold(f64::NEG_INFINITY, f64::max);
            let legend_left = legend.into_iter().fold(f64::INFINITY, f64::min);
            assert!(legend_left > data_right, "{}: legend at x {legend_left}, data up to x {data_right}", chart.id);
        }
    }

    /// A count axis (failures per bucket) is ticked at whole numbers: 0 and 1, not 0.2 ... 1.2.
    #[test]
    fn counts_get_whole_number_ticks() {
        let failures = |counts| Chart {
            plot: Plot::Lines {
                x: XAxis::Time,
                y_max: None,
                counts,
                series: vec![Series {
                    name: "failures".into(),
                    points: vec![(0.0, 0.0), (600.0, 1.0), (1200.0, 0.0), (1800.0, 1.0)],
                }],
            },
            ..lines()
        };
        let labels = |chart: Chart| texts(&chart.svg().unwrap()).into_iter().map(|(_, t)| t).collect::<Vec<_>>();
        assert!(labels(failures(false)).contains(&"0.2".to_string()), "the control: fractions without counts");
        let counted = labels(failures(true));
        assert!(counted.contains(&"1".to_string()), "{counted:?}");
        assert!(!counted.iter().any(|t| t.starts_with("0.") || t.starts_with("1.")), "{counted:?}");
        assert_eq!(whole_ticks(1.2), (2.0, Some(vec![0.0, 1.0, 2.0])));
        assert_eq!(whole_ticks(37.0), (40.0, Some(vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0])));
    }

    /// A task of a minute on a day-long Gantt chart is still a visible bar.
    #[test]
    fn short_tasks_stay_visible() {
        let gantt = Chart {
            id: "g".into(),
            title: "dag".into(),
            x_label: "t".into(),
            y_label: "task".into(),
            plot: Plot::Gantt {
                bars: vec![
                    Bar { label: "train".into(), span: Some((0.0, 86_400.0)), state: 0 },
                    Bar { label: "eval".into(), span: Some((86_400.0, 86_460.0)), state: 0 },
                ],
                edges: vec![Edge { from: 0, to: 1, leaves_s: 86_400.0 }],
                states: vec!["succeeded".into()],
            },
        };
        let svg = gantt.svg().unwrap();
        let widths: Vec<f64> = svg
            .split("<rect ")
            .skip(1)
            .filter_map(|r| r.split("width=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert!(widths.len() >= 3, "background, two bars, a legend swatch: {widths:?}");
        assert!(widths.iter().all(|w| *w >= MIN_BAR_PX), "{widths:?}");
    }

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_top(0.73), 0.8);
        assert_eq!(nice_top(100.0), 120.0);
        assert_eq!(axis_number(12_500.0), "12.5k");
        assert_eq!(axis_number(0.25), "0.25");
        assert_eq!(axis_number(2.0), "2");
    }
}
