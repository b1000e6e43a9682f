//! The one font every chart is laid out (and, in PNGs, drawn) with: DejaVu Sans, embedded in
//! the binary (licence: assets/fonts/DejaVuSans-LICENSE.txt), so text measures the same on
//! every machine and no system font library is needed.

use plotters::style::FontStyle;
use std::sync::Once;

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Registers the font under plotters' `sans-serif` family (every style falls back to it). Idempotent.
pub fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, DEJAVU_SANS).is_err() {
            panic!("the embedded DejaVu Sans is not a valid font: the build is broken");
        }
    });
}
