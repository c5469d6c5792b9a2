//! Trend charts as inline SVG, drawn on the server: a bar per day with its date and count in a
//! tooltip, and a small sparkline per signature. No script.

use super::html::{day, esc};
use ntdbg_store::DAY;
use std::fmt::Write as _;

/// A bar chart of `counts`, one bar per day from `first_day` on.
pub fn bars(first_day: i64, counts: &[u64], width: u32, height: u32) -> String {
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let n = counts.len().max(1) as f64;
    let (left, bottom, top) = (34.0, 18.0, 6.0);
    let plot_w = f64::from(width) - left - 4.0;
    let plot_h = f64::from(height) - bottom - top;
    let step = plot_w / n;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"chart\" role=\"img\" aria-label=\"crashes per day\" viewBox=\"0 0 {width} {height}\" width=\"100%\" height=\"{height}\">"
    );
    let _ = write!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>",
        left - 6.0,
        top + 9.0,
        left - 6.0,
        top + plot_h
    );
    for (i, &c) in counts.iter().enumerate() {
        let h = plot_h * c as f64 / max as f64;
        let x = left + step * i as f64;
        let date = day(first_day + i as i64 * DAY);
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#2f55d4\"><title>{}: {c}</title></rect>",
            x + step * 0.12,
            top + plot_h - h,
            (step * 0.76).max(1.0),
            h.max(if c > 0 { 1.0 } else { 0.0 }),
            esc(&date)
        );
    }
    let label_every = (counts.len() / 7).max(1);
    for i in (0..counts.len()).step_by(label_every) {
        let date = day(first_day + i as i64 * DAY);
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\">{}</text>",
            left + step * i as f64,
            height - 4,
            esc(date.get(5..).unwrap_or(&date))
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A sparkline of `counts` (one point per day).
pub fn sparkline(counts: &[u64]) -> String {
    let (width, height) = (120.0, 24.0);
    let max = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = width / (counts.len().max(2) - 1) as f64;
    let points: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            format!(
                "{:.1},{:.1}",
                step * i as f64,
                height - 2.0 - (height - 4.0) * c as f64 / max
            )
        })
        .collect();
    format!(
        "<svg class=\"spark\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" aria-hidden=\"true\"><polyline fill=\"none\" stroke=\"#2f55d4\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        points.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_a_day_and_a_line() {
        let svg = bars(0, &[1, 0, 3], 300, 100);
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains("<title>1970-01-03: 3</title>"));
        assert!(sparkline(&[0, 2, 1]).contains("points=\"0.0,22.0 60.0,2.0 120.0,12.0\""));
        assert!(sparkline(&[]).contains("points=\"\""));
    }
}
