//! Grouped bar charts for sweeps whose points are categories rather than numbers (encodings,
//! transports): one panel per measure, side by side, each a bar per series within each group.

use plotters::prelude::*;
use plotters::style::text_anchor;

use crate::plot::{draw_legend, drawn_or_said, format_tick, PALETTE, SIZE_PX};

/// One measure over the sweep's categories: `values[series][group]`, `None` where a run gave
/// no figure (drawn as a gap, never as zero).
pub struct BarPanel {
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// Share of a group's width left empty, half on each side, so neighbouring groups stay apart.
const GROUP_GAP: f64 = 0.25;

pub fn render_bars_svg(title: &str, panels: &[BarPanel]) -> String {
    drawn_or_said(title, |svg| draw(title, panels, svg))
}

fn draw(title: &str, panels: &[BarPanel], svg: &mut String) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| error.to_string();
    let root = SVGBackend::with_string(svg, SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(|error| failed(&error))?;
    let root = root.titled(title, ("sans-serif", 16)).map_err(|error| failed(&error))?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (panel, area) in panels.iter().zip(&areas) {
        draw_panel(panel, area)?;
    }
    root.present().map_err(|error| failed(&error))
}

fn draw_panel(panel: &BarPanel, area: &DrawingArea<SVGBackend, plotters::coord::Shift>) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| error.to_string();
    let groups = panel.groups.len().max(1) as f64;
    let highest = panel.series.iter().flat_map(|(_, values)| values.iter().flatten()).copied().fold(0.0, f64::max);
    let y_high = if highest > 0.0 { highest * 1.25 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 14))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..groups, 0.0..y_high)
        .map_err(|error| failed(&error))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(panel.y_label.as_str())
        .y_label_formatter(&|value| format_tick(*value))
        .light_line_style(RGBColor(0xEE, 0xEE, 0xEE))
        .draw()
        .map_err(|error| failed(&error))?;
    let bar_width = (1.0 - GROUP_GAP) / panel.series.len().max(1) as f64;
    for (index, (label, values)) in panel.series.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        let bars = values.iter().enumerate().filter_map(|(group, value)| {
            let left = group as f64 + GROUP_GAP / 2.0 + index as f64 * bar_width;
            value
                .filter(|value| value.is_finite())
                .map(|value| Rectangle::new([(left, 0.0), (left + bar_width, value)], color.filled()))
        });
        chart
            .draw_series(bars)
            .map_err(|error| failed(&error))?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    // The x axis is numeric underneath, so the groups are named by hand under their centres.
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(text_anchor::Pos::new(text_anchor::HPos::Center, text_anchor::VPos::Top));
    for (group, name) in panel.groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(group as f64 + 0.5, 0.0));
        area.draw_text(name, &style, (x - area.get_base_pixel().0, y - area.get_base_pixel().1 + 6))
            .map_err(|error| failed(&error))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(series: Vec<(&str, Vec<Option<f64>>)>) -> BarPanel {
        BarPanel {
            title: "batch processing p50".into(),
            y_label: "ms".into(),
            groups: vec!["cumulative".into(), "counter".into(), "rate".into()],
            series: series.into_iter().map(|(label, values)| (label.to_string(), values)).collect(),
        }
    }

    #[test]
    fn every_present_value_is_a_bar_in_its_series_colour_and_every_group_is_named() {
        let svg = render_bars_svg(
            "encodings",
            &[panel(vec![
                ("JSON", vec![Some(27.8), Some(18.2), Some(23.4)]),
                ("Avro", vec![Some(21.7), None, Some(16.9)]),
            ])],
        );
        assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        let filled = |color: &str| svg.lines().filter(|line| line.starts_with("<rect") && line.contains(color)).count();
        // Bars plus the legend's swatch; the missing Avro value draws nothing, not a zero bar.
        assert_eq!(filled("#0072B2"), 4, "{svg}");
        assert_eq!(filled("#D55E00"), 3, "{svg}");
        for text in ["encodings", "batch processing p50", "cumulative", "counter", "rate", "JSON", "Avro"] {
            assert!(svg.contains(text), "`{text}` is drawn");
        }
    }

    #[test]
    fn panels_sit_side_by_side_and_an_empty_panel_still_draws() {
        let svg = render_bars_svg(
            "transports",
            &[
                panel(vec![("JSON", vec![Some(1.0), Some(2.0), Some(3.0)])]),
                panel(vec![("JSON", vec![None, None, None])]),
            ],
        );
        assert!(!svg.contains("cannot draw"), "{svg}");
        assert_eq!(svg.matches("batch processing p50").count(), 2, "{svg}");
    }
}
