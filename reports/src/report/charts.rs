//! Drawing: a `Chart` (what to show, in data units) rendered by plotters to SVG text or PNG
//! bytes. Text is laid out with the embedded DejaVu Sans (registered once, see `font`), so a
//! chart is the same bytes on every machine.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

/// A linear f64 axis with ticks where asked (None: plotters' own round numbers).
struct Ticked {
    inner: RangedCoordf64,
    ticks: Option<Vec<f64>>,
}

impl Ticked {
    fn new(range: Range<f64>, ticks: Option<Vec<f64>>) -> Ticked {
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

const FONT: &str = "sans-serif";
const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);
const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);

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

#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    /// Lines on shared axes; `y_max` fixes the top of the y axis (1 for a CDF).
    Lines { x: XAxis, y_max: Option<f64>, series: Vec<Series> },
    /// Layers stacked bottom to top (each layer's y added to those below).
    Stacked { series: Vec<Series> },
    /// Bars top to bottom, with dependency arrows (from bar, to bar).
    Gantt { bars: Vec<Bar>, edges: Vec<(usize, usize)>, states: Vec<String> },
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
    /// Pixel size: Gantt charts grow with their rows.
    pub fn size(&self) -> (u32, u32) {
        match &self.plot {
            Plot::Gantt { bars, .. } => (900, (150 + 26 * bars.len() as u32).min(1400)),
            _ => (900, 460),
        }
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
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(&self.title, (FONT, pt(21.0)).into_font().color(&BLACK))
            .margin(px(14.0))
            .x_label_area_size(px(50.0))
            .y_label_area_size(px(if matches!(self.plot, Plot::Gantt { .. }) { 150.0 } else { 66.0 }));
        match &self.plot {
            Plot::Lines { x, y_max, series } => self.lines(builder, x, *y_max, series, scale),
            Plot::Stacked { series } => self.stacked(builder, series, scale),
            Plot::Gantt { bars, edges, states } => self.gantt(builder, bars, edges, states, scale),
        }
    }

    fn lines<DB: DrawingBackend>(
        &self,
        mut builder: ChartBuilder<'_, '_, DB>,
        x: &XAxis,
        y_max: Option<f64>,
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
        let transform = |v: f64| if log { v.max(1.0).log10() } else { (v - origin) / unit };
        let x_spec = Ticked::new(x_range.0..x_range.1, ticks);
        let mut chart = builder.build_cartesian_2d(x_spec, 0.0..top).map_err(|e| self.error(e))?;
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
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(|e| self.error(e))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + (18.0 * scale) as i32, y)], style));
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .position(if y_max.is_some() {
                    SeriesLabelPosition::LowerRight
                } else {
                    SeriesLabelPosition::UpperRight
                })
                .background_style(WHITE.mix(0.9))
                .border_style(AXIS.mix(0.5))
                .label_font((FONT, 13.0 * scale))
                .legend_area_size((26.0 * scale) as u32)
                .draw()
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    fn stacked<DB: DrawingBackend>(
        &self,
        mut builder: ChartBuilder<'_, '_, DB>,
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
        let top = nice_top(extent(lower.iter().copied()).1);
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
        for (i, (s, (lower, upper))) in series.iter().zip(&layers).enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mut outline: Vec<(f64, f64)> = xs.iter().zip(upper).map(|(x, y)| ((x - lo) / unit, *y)).collect();
            outline.extend(xs.iter().zip(lower).rev().map(|(x, y)| ((x - lo) / unit, *y)));
            let side = (6.0 * scale) as i32;
            chart
                .draw_series(std::iter::once(Polygon::new(outline, color.mix(0.85).filled())))
                .map_err(|e| self.error(e))?
                .label(&s.name)
                .legend(move |(x, y)| Rectangle::new([(x, y - side), (x + 2 * side, y + side)], color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(AXIS.mix(0.5))
            .label_font((FONT, 13.0 * scale))
            .legend_area_size((26.0 * scale) as u32)
            .draw()
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn gantt<DB: DrawingBackend>(
        &self,
        mut builder: ChartBuilder<'_, '_, DB>,
        bars: &[Bar],
        edges: &[(usize, usize)],
        states: &[String],
        scale: f64,
    ) -> Result<(), String> {
        let n = bars.len().max(1);
        let (lo, hi) = extent(bars.iter().filter_map(|b| b.span).flat_map(|(a, b)| [a, b]));
        let lo = lo.min(0.0);
        let (unit, _) = time_unit(hi - lo);
        // Room on the right for the legend (a DAG runs top left to bottom right).
        let hi = if hi > lo { hi + 0.18 * (hi - lo) } else { lo + unit };
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
            .draw_series(edges.iter().filter_map(|&(from, to)| {
                let (_, from_end) = bars.get(from)?.span?;
                let (to_start, _) = bars.get(to)?.span?;
                Some(PathElement::new(
                    vec![((from_end - lo) / unit, row_y(from)), ((to_start - lo) / unit, row_y(to))],
                    edge_style,
                ))
            }))
            .map_err(|e| self.error(e))?;
        for (k, state) in states.iter().enumerate() {
            let color = state_color(state);
            let side = (6.0 * scale) as i32;
            chart
                .draw_series(bars.iter().enumerate().filter(|(_, b)| b.state == k).filter_map(|(i, b)| {
                    let (start, end) = b.span?;
                    let y = row_y(i);
                    Some(Rectangle::new(
                        [((start - lo) / unit, y - 0.32), ((end - lo) / unit, y + 0.32)],
                        color.filled(),
                    ))
                }))
                .map_err(|e| self.error(e))?
                .label(state)
                .legend(move |(x, y)| Rectangle::new([(x, y - side), (x + 2 * side, y + side)], color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(AXIS.mix(0.5))
            .label_font((FONT, 13.0 * scale))
            .legend_area_size((26.0 * scale) as u32)
            .draw()
            .map_err(|e| self.error(e))?;
        Ok(())
    }
}

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

    #[test]
    fn stacked_and_gantt_draw() {
        let stacked = Chart {
            id: "s".into(),
            title: "share".into(),
            x_label: "t".into(),
            y_label: "GPUs".into(),
            plot: Plot::Stacked {
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
                edges: vec![(0, 1), (1, 2)],
                states: vec!["succeeded".into(), "pending".into()],
            },
        };
        let svg = gantt.svg().unwrap();
        assert!(svg.contains("train") && svg.contains("eval"), "{svg}");
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
