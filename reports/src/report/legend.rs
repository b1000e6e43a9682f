//! A chart's legend, drawn in a strip of its own right of the plot area, so that it never
//! covers a curve, a layer or a bar (inside the plot area, a corner free of data for one chart
//! is full of it for the next).

use plotters::coord::Shift;
use plotters::prelude::*;

/// How an entry shows its series: a line (lines), or a block (layers, Gantt states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swatch {
    Line,
    Block,
}

/// The entries of a legend, top to bottom.
pub struct Legend {
    pub entries: Vec<(String, RGBColor)>,
    pub swatch: Swatch,
}

/// The widest a legend strip gets, in SVG pixels; longer names are cut with `…`.
const MAX_WIDTH: f64 = 260.0;
/// Width of an average character of the 13 px label font, in SVG pixels (DejaVu Sans).
const CHAR_WIDTH: f64 = 7.4;
/// Left padding, swatch and gap before the text.
const LEAD: f64 = 40.0;

impl Legend {
    /// The strip's width in pixels at `scale` (0 for no entries).
    pub fn width(&self, scale: f64) -> u32 {
        let longest = self.entries.iter().map(|(name, _)| name.chars().count()).max();
        let Some(longest) = longest else { return 0 };
        ((LEAD + 12.0 + CHAR_WIDTH * longest as f64).min(MAX_WIDTH) * scale).round() as u32
    }

    /// Draws the entries into `area` (the strip), from `top` pixels down.
    pub fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        top: i32,
        scale: f64,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let px = |v: f64| (v * scale).round() as i32;
        let fits = ((MAX_WIDTH - LEAD - 12.0) / CHAR_WIDTH) as usize;
        for (i, (name, color)) in self.entries.iter().enumerate() {
            let y = top + px(22.0 * i as f64);
            let (x0, x1, mid) = (px(10.0), px(30.0), y + px(8.0));
            match self.swatch {
                Swatch::Line => {
                    area.draw(&Rectangle::new([(x0, mid - px(1.5)), (x1, mid + px(1.5))], color.filled()))?
                }
                Swatch::Block => {
                    area.draw(&Rectangle::new([(x0, mid - px(6.0)), (x1, mid + px(6.0))], color.filled()))?
                }
            }
            let text = cut(name, fits);
            area.draw(&Text::new(text, (px(LEAD), y), (super::charts::FONT, 13.0 * scale).into_font()))?;
        }
        Ok(())
    }
}

/// `name` cut to `chars` characters, the last one `…` when cut.
fn cut(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        return name.to_string();
    }
    let mut kept: String = name.chars().take(chars.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_and_the_strip_bounded() {
        assert_eq!(cut("fifo", 10), "fifo");
        assert_eq!(cut("fifo[skip=false]", 6), "fifo[…");
        let legend = Legend { entries: vec![("x".repeat(100), RGBColor(0, 0, 0))], swatch: Swatch::Line };
        assert_eq!(legend.width(1.0), MAX_WIDTH as u32);
        assert_eq!(Legend { entries: Vec::new(), swatch: Swatch::Line }.width(2.0), 0);
    }
}
