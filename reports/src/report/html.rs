//! The page: one HTML file with everything inline (SVG charts, CSS, a few lines of script that
//! check the charts rendered) and no reference to anything outside it. A Content-Security-Policy
//! forbids the browser any fetch, so a stray external reference would fail loudly in a test.

use super::build::{Cell, Item, Report, Table};
use std::fmt::Write as _;

const CSS: &str = r#"
:root { --ink: #1d2329; --muted: #5b6570; --rule: #d9dee3; --accent: #4e79a7; --band: #f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif; }
header { padding: 28px 40px 16px; border-bottom: 1px solid var(--rule); background: var(--band); }
h1 { margin: 0 0 4px; font-size: 24px; font-weight: 600; }
.subtitle { margin: 0; color: var(--muted); }
nav { margin-top: 10px; font-size: 14px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 16px; }
main { max-width: 1000px; margin: 0 auto; padding: 8px 40px 40px; }
section { margin-top: 28px; }
h2 { font-size: 19px; font-weight: 600; border-bottom: 2px solid var(--accent); padding-bottom: 4px; }
.intro { color: var(--muted); margin-top: 0; }
figure.chart { margin: 20px 0 28px; }
figure.chart svg { display: block; max-width: 100%; height: auto; border: 1px solid var(--rule); border-radius: 4px; }
figure.chart svg text { font-family: "DejaVu Sans", Verdana, Arial, sans-serif; }
.multiples { display: grid; grid-template-columns: 1fr 1fr; gap: 0 20px; }
.multiples figure.chart { margin: 12px 0 16px; }
figcaption { color: var(--muted); font-size: 13.5px; margin-top: 6px; }
.note { background: #fff8e6; border-left: 4px solid #edc948; padding: 8px 12px; font-size: 14px; }
.table-wrap { overflow-x: auto; margin: 14px 0 24px; }
table { border-collapse: collapse; font-size: 13.5px; width: 100%; }
caption { text-align: left; font-weight: 600; padding-bottom: 6px; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--rule); text-align: left; white-space: nowrap; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.best { font-weight: 700; }
h3 { font-size: 16px; font-weight: 600; margin: 16px 0 6px; }
ul.verdict { margin: 0 0 12px; padding-left: 20px; }
ul.verdict li { margin: 3px 0; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
.more-toggle + label { font-size: 13.5px; color: var(--muted); margin-left: 4px; }
.more-toggle:not(:checked) + label + .table-wrap .more { display: none; }
.foot { color: var(--muted); font-size: 13px; margin-top: 6px; white-space: normal; }
footer { color: var(--muted); font-size: 13px; border-top: 1px solid var(--rule); padding: 16px 40px; }
@media print { header { background: none; } figure.chart { break-inside: avoid; } }
"#;

/// The render check: each chart named in `expected` must be in the page as an <svg> with a
/// non-zero size and text in it; the result goes into #render-check's attributes, where a
/// headless browser's DOM dump (or a reader's inspector) finds it.
const CHECK: &str = r#"
(function () {
  var marker = document.getElementById("render-check");
  var rendered = [], missing = [];
  expected.forEach(function (id) {
    var svg = document.querySelector('figure.chart[data-chart="' + id + '"] > svg');
    var box = svg ? svg.getBoundingClientRect() : null;
    if (box && box.width > 0 && box.height > 0 && svg.querySelectorAll("text").length > 0) {
      rendered.push(id);
    } else {
      missing.push(id);
    }
  });
  marker.setAttribute("data-expected", String(expected.length));
  marker.setAttribute("data-rendered", rendered.join(" "));
  marker.setAttribute("data-missing", missing.join(" "));
  marker.setAttribute("data-status", missing.length === 0 ? "ok" : "missing");
  marker.setAttribute("data-height", String(document.documentElement.scrollHeight));
})();
"#;

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document as an inline element: no XML namespace URL (HTML puts <svg> in the SVG
/// namespace by itself), and an accessible name.
fn inline_svg(svg: &str, title: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    svg.replacen("<svg ", &format!("<svg role=\"img\" aria-label=\"{}\" ", escape(title)), 1)
}

/// The page. `svgs` holds each chart's SVG, in `report.charts()` order.
pub fn render(report: &Report, svgs: &[String]) -> String {
    let mut out = String::with_capacity(svgs.iter().map(String::len).sum::<usize>() + 64 * 1024);
    let version = env!("CARGO_PKG_VERSION");
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; \
         script-src 'unsafe-inline'\">\n<meta name=\"generator\" content=\"schedlab {version}\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{}</h1>\n<p class=\"subtitle\">{}</p>\n<nav>",
        escape(&report.title),
        escape(&report.title),
        escape(&report.subtitle)
    );
    for s in &report.sections {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", escape(&s.id), escape(&s.title));
    }
    out.push_str("</nav>\n</header>\n<main>\n");
    let mut svg = svgs.iter();
    let mut expected = Vec::new();
    for s in &report.sections {
        let _ = writeln!(out, "<section id=\"{}\">\n<h2>{}</h2>", escape(&s.id), escape(&s.title));
        if !s.intro.is_empty() {
            let _ = writeln!(out, "<p class=\"intro\">{}</p>", escape(&s.intro));
        }
        if s.items.is_empty() {
            out.push_str("<p class=\"note\">Nothing to show here for these runs.</p>\n");
        }
        // Consecutive small charts (one per policy) share rows, two to a row.
        let mut in_multiples = false;
        for item in &s.items {
            let small = matches!(item, Item::Chart(c, _) if c.small());
            if small != in_multiples {
                out.push_str(if small { "<div class=\"multiples\">\n" } else { "</div>\n" });
                in_multiples = small;
            }
            match item {
                Item::Chart(chart, caption) => {
                    let text = svg.next().map(String::as_str).unwrap_or("");
                    expected.push(chart.id.clone());
                    let _ = writeln!(
                        out,
                        "<figure class=\"chart\" id=\"chart-{id}\" data-chart=\"{id}\">\n{}\n<figcaption>{}</figcaption>\n</figure>",
                        inline_svg(text, &chart.title),
                        escape(caption),
                        id = escape(&chart.id),
                    );
                }
                Item::Table(table) => table_html(&mut out, table),
                Item::Note(note) => {
                    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
                }
                Item::Verdict(heading, lines) => {
                    let _ = writeln!(out, "<h3>{}</h3>\n<ul class=\"verdict\">", escape(heading));
                    for line in lines {
                        let _ = writeln!(out, "<li>{}</li>", escape(line));
                    }
                    out.push_str("</ul>\n");
                }
            }
        }
        if in_multiples {
            out.push_str("</div>\n");
        }
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "</main>\n<footer>Written by schedlab {version}. This file is self-contained: charts are inline SVG, \
         and it loads nothing from anywhere.</footer>\n<div id=\"render-check\" hidden></div>\n<script>\nvar expected = [{}];{CHECK}</script>\n</body>\n</html>\n",
        expected.iter().map(|id| format!("\"{}\"", escape(id))).collect::<Vec<_>>().join(", ")
    );
    out
}

fn cell_html(out: &mut String, cell: &Cell, more: bool) {
    let mut classes = Vec::new();
    if cell.numeric {
        classes.push("num");
    }
    if cell.best {
        classes.push("best");
    }
    if more {
        classes.push("more");
    }
    out.push_str("<td");
    if !classes.is_empty() {
        let _ = write!(out, " class=\"{}\"", classes.join(" "));
    }
    if let Some(key) = &cell.key {
        let _ = write!(out, " data-key=\"{}\"", escape(key));
    }
    if let Some(value) = &cell.value {
        let _ = write!(out, " data-value=\"{v}\" title=\"{v}\"", v = escape(value));
    }
    if let Some(half_width) = &cell.half_width {
        let _ = write!(out, " data-half-width=\"{}\"", escape(half_width));
    }
    let _ = write!(out, ">{}</td>", escape(&cell.text));
}

fn table_html(out: &mut String, table: &Table) {
    if !table.more.is_empty() {
        // A checkbox and CSS alone (the page runs no script for it): unticked, the `more`
        // columns are hidden.
        let _ = writeln!(
            out,
            "<input type=\"checkbox\" class=\"more-toggle\" id=\"more-{id}\"><label for=\"more-{id}\">Show all \
             columns ({} more)</label>",
            table.more.len(),
            id = escape(&table.id)
        );
    }
    let _ = write!(
        out,
        "<div class=\"table-wrap\">\n<table id=\"table-{}\">\n<caption>{}</caption>\n<thead><tr>",
        escape(&table.id),
        escape(&table.caption)
    );
    // A column of numbers has its heading right-aligned over them.
    let numeric = |c: usize| table.rows.first().and_then(|r| r.get(c)).is_some_and(|cell| cell.numeric);
    let more = |c: usize| table.more.contains(&c);
    for (c, h) in table.header.iter().enumerate() {
        let classes: Vec<&str> =
            [(numeric(c), "num"), (more(c), "more")].iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        let class = if classes.is_empty() { String::new() } else { format!(" class=\"{}\"", classes.join(" ")) };
        let _ = write!(out, "<th{class}>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            cell_html(out, cell, more(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    if !table.foot.is_empty() {
        let _ = writeln!(out, "<p class=\"foot\">{}</p>", escape(&table.foot));
    }
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
    }

    #[test]
    fn inline_svg_drops_the_namespace_url() {
        let svg = "<svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" xmlns=\"http://www.w3.org/2000/svg\">\n</svg>";
        let inline = inline_svg(svg, "A <chart>");
        assert!(!inline.contains("http"), "{inline}");
        assert!(inline.starts_with("<svg role=\"img\" aria-label=\"A &lt;chart&gt;\" width="), "{inline}");
    }
}
