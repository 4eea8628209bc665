//! Renders benchmark results as SVG line plots with `plotters` (its SVG backend only: five
//! small crates, a few seconds of build), so `benchmarks/results/` holds figures that GitHub
//! shows inside a README.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// One line of a plot. Points are joined in the order given, so a caller plotting against
/// time keeps its order.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scale {
    Linear,
    Log,
}

pub struct LinePlot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub series: Vec<Series>,
}

/// A vertical dashed line across the plot at `x`, named in the legend: an event on the time
/// axis (a failure, its detection) that the series are read against.
pub struct Marker {
    pub label: String,
    pub x: f64,
}

pub(crate) const SIZE_PX: (u32, u32) = (800, 500);
/// The Okabe–Ito palette, which stays distinguishable under the common colour-vision
/// deficiencies; its yellow is left out, too faint on white for a 2 px line.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
];
/// Data never touches the frame: each axis extends this share of its span (in log space on
/// a log axis).
const PADDING_FRACTION: f64 = 0.05;

pub fn render_svg(plot: &LinePlot) -> String {
    render_svg_with_markers(plot, &[])
}

/// `plot` with `markers` drawn over it; the x axis reaches far enough to show every marker.
pub fn render_svg_with_markers(plot: &LinePlot, markers: &[Marker]) -> String {
    drawn_or_said(&plot.title, |svg| draw(plot, markers, svg))
}

/// The SVG `draw` writes, or a valid document saying why it could not: drawing into a String
/// cannot fail for I/O, only in plotters' own layout.
pub(crate) fn drawn_or_said(title: &str, draw: impl FnOnce(&mut String) -> Result<(), String>) -> String {
    let mut svg = String::new();
    if let Err(error) = draw(&mut svg) {
        svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\"><text x=\"20\" y=\"40\">{}</text></svg>",
            SIZE_PX.0,
            SIZE_PX.1,
            escape_xml(&format!("{title}: cannot draw the plot: {error}"))
        );
    }
    svg
}

fn draw(plot: &LinePlot, markers: &[Marker], svg: &mut String) -> Result<(), String> {
    let drawable: Vec<Vec<(f64, f64)>> = plot
        .series
        .iter()
        .map(|series| {
            series
                .points
                .iter()
                .copied()
                .filter(|(x, y)| is_drawable(*x, plot.x_scale) && is_drawable(*y, plot.y_scale))
                .collect()
        })
        .collect();
    let markers: Vec<&Marker> = markers.iter().filter(|marker| is_drawable(marker.x, plot.x_scale)).collect();
    let mut xs: Vec<f64> = drawable.iter().flatten().map(|(x, _)| *x).collect();
    let ys: Vec<f64> = drawable.iter().flatten().map(|(_, y)| *y).collect();
    let root = SVGBackend::with_string(svg, SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(|error| error.to_string())?;
    if xs.is_empty() {
        let style = ("sans-serif", 16).into_font().color(&BLACK);
        root.draw_text(&format!("{}: no data to plot", plot.title), &style, (20, 40))
            .map_err(|error| error.to_string())?;
        return root.present().map_err(|error| error.to_string());
    }
    xs.extend(markers.iter().map(|marker| marker.x));
    let (x_low, x_high) = padded_range(&xs, plot.x_scale);
    let (y_low, y_high) = padded_range(&ys, plot.y_scale);
    let legend = emptiest_corner(
        &drawable,
        Span { low: x_low, high: x_high, scale: plot.x_scale },
        Span { low: y_low, high: y_high, scale: plot.y_scale },
    );
    let layers = Layers { drawable: &drawable, markers: &markers, y_span: (y_low, y_high), legend };
    match (plot.x_scale, plot.y_scale) {
        (Scale::Linear, Scale::Linear) => draw_chart(&root, plot, &layers, x_low..x_high, y_low..y_high),
        (Scale::Linear, Scale::Log) => draw_chart(&root, plot, &layers, x_low..x_high, (y_low..y_high).log_scale()),
        (Scale::Log, Scale::Linear) => draw_chart(&root, plot, &layers, (x_low..x_high).log_scale(), y_low..y_high),
        (Scale::Log, Scale::Log) => {
            draw_chart(&root, plot, &layers, (x_low..x_high).log_scale(), (y_low..y_high).log_scale())
        }
    }?;
    root.present().map_err(|error| error.to_string())
}

/// What goes inside the axes: each series' drawable points, and the markers spanning the
/// y range from its low end to its high end.
struct Layers<'a> {
    drawable: &'a [Vec<(f64, f64)>],
    markers: &'a [&'a Marker],
    y_span: (f64, f64),
    legend: SeriesLabelPosition,
}

/// One axis' drawn range and scale.
#[derive(Clone, Copy)]
struct Span {
    low: f64,
    high: f64,
    scale: Scale,
}

impl Span {
    /// Where `value` falls along the axis, 0 at its low end and 1 at its high end.
    fn share(self, value: f64) -> f64 {
        let at = |value: f64| if self.scale == Scale::Log { value.log10() } else { value };
        (at(value) - at(self.low)) / (at(self.high) - at(self.low))
    }
}

/// The corner for the legend that covers the fewest data points (the upper right on a tie),
/// so the legend hides no line's end where it can be avoided.
fn emptiest_corner(drawable: &[Vec<(f64, f64)>], x: Span, y: Span) -> SeriesLabelPosition {
    // The share of each axis a legend of a few series takes, measured on the 800×500 plot.
    const LEGEND_WIDTH: f64 = 0.4;
    const LEGEND_HEIGHT: f64 = 0.35;
    let corners = [
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let covered = |right: bool, upper: bool| {
        drawable
            .iter()
            .flatten()
            .filter(|(px, py)| {
                let (across, up) = (x.share(*px), y.share(*py));
                let in_x = if right { across >= 1.0 - LEGEND_WIDTH } else { across <= LEGEND_WIDTH };
                let in_y = if upper { up >= 1.0 - LEGEND_HEIGHT } else { up <= LEGEND_HEIGHT };
                in_x && in_y
            })
            .count()
    };
    corners
        .into_iter()
        .min_by_key(|(_, right, upper)| covered(*right, *upper))
        .map_or(SeriesLabelPosition::UpperRight, |(corner, _, _)| corner)
}

fn draw_chart<X, Y>(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    plot: &LinePlot,
    layers: &Layers,
    x_range: X,
    y_range: Y,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let failed = |error: &dyn std::fmt::Display| error.to_string();
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 16))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range)
        .map_err(|error| failed(&error))?;
    chart
        .configure_mesh()
        .x_desc(plot.x_label.as_str())
        .y_desc(plot.y_label.as_str())
        .x_label_formatter(&|value| format_tick(*value))
        .y_label_formatter(&|value| format_tick(*value))
        .light_line_style(RGBColor(0xEE, 0xEE, 0xEE))
        .draw()
        .map_err(|error| failed(&error))?;
    for (index, (series, points)) in plot.series.iter().zip(layers.drawable).enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(|error| failed(&error))?
            .label(series.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
        // Markers tell the lines apart where colours do not (series past the palette, greyscale).
        chart
            .draw_series(points.iter().map(|point| Circle::new(*point, 3, color.filled())))
            .map_err(|error| failed(&error))?;
    }
    // Markers take the colours after the series', so a marker never shares a series' colour
    // while the palette lasts.
    for (index, marker) in layers.markers.iter().enumerate() {
        let color = PALETTE[(plot.series.len() + index) % PALETTE.len()];
        let (y_low, y_high) = layers.y_span;
        chart
            .draw_series(DashedLineSeries::new([(marker.x, y_low), (marker.x, y_high)], 6, 4, color.stroke_width(2)))
            .map_err(|error| failed(&error))?
            .label(marker.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
    }
    draw_legend(&mut chart, layers.legend.clone())
}

/// The series' labels in a framed box over a faded background, so lines under it still show.
pub(crate) fn draw_legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|error| error.to_string())
}

fn is_drawable(value: f64, scale: Scale) -> bool {
    value.is_finite() && (scale == Scale::Linear || value > 0.0)
}

/// The data's range plus padding; a single value gets a span of its own so it is not drawn
/// on the frame.
fn padded_range(values: &[f64], scale: Scale) -> (f64, f64) {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match scale {
        Scale::Linear => {
            let span = if high > low { high - low } else { low.abs().max(1.0) };
            (low - span * PADDING_FRACTION, high + span * PADDING_FRACTION)
        }
        Scale::Log => {
            let (low, high) = (low.log10(), high.log10());
            let span = if high > low { high - low } else { 1.0 };
            (10f64.powf(low - span * PADDING_FRACTION), 10f64.powf(high + span * PADDING_FRACTION))
        }
    }
}

/// `0.043`, `1.4`, `16`, `2.5k`, `3M`: short tick labels.
pub(crate) fn format_tick(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = match magnitude {
        m if m >= 1e6 => (value / 1e6, "M"),
        m if m >= 1e4 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    let text = match scaled.abs() {
        0.0 => "0".to_string(),
        m if m >= 100.0 => format!("{scaled:.0}"),
        m if m >= 1.0 => format!("{scaled:.1}"),
        _ => format!("{scaled:.3}"),
    };
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
    format!("{text}{suffix}")
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot(series: Vec<Series>, scale: Scale) -> LinePlot {
        LinePlot {
            title: "time per batch".into(),
            x_label: "workers".into(),
            y_label: "ms".into(),
            x_scale: scale,
            y_scale: scale,
            series,
        }
    }

    fn series(label: &str, points: &[(f64, f64)]) -> Series {
        Series { label: label.into(), points: points.to_vec() }
    }

    #[test]
    fn the_legend_goes_to_the_corner_with_the_fewest_points_and_upper_right_on_a_tie() {
        let linear = |low, high| Span { low, high, scale: Scale::Linear };
        let rising = vec![vec![(0.0, 0.0), (5.0, 5.0), (10.0, 10.0)]];
        assert!(matches!(
            emptiest_corner(&rising, linear(0.0, 10.0), linear(0.0, 10.0)),
            SeriesLabelPosition::UpperLeft
        ));
        let falling = vec![vec![(0.0, 10.0), (10.0, 0.0)]];
        assert!(matches!(
            emptiest_corner(&falling, linear(0.0, 10.0), linear(0.0, 10.0)),
            SeriesLabelPosition::UpperRight
        ));
        let log = Span { low: 1.0, high: 1000.0, scale: Scale::Log };
        // On a log axis from 1 to 1 000, 30 is halfway up and 300 in the upper third.
        let middle = vec![vec![(1.0, 30.0), (1000.0, 30.0)]];
        assert!(matches!(emptiest_corner(&middle, log, log), SeriesLabelPosition::UpperRight));
        let high = vec![vec![(1.0, 300.0), (1000.0, 300.0)]];
        assert!(matches!(emptiest_corner(&high, log, log), SeriesLabelPosition::LowerRight));
    }

    #[test]
    fn a_plot_is_one_svg_document_with_a_line_per_series_and_a_legend() {
        let svg = render_svg(&plot(
            vec![
                series("bsp", &[(2.0, 0.2), (4.0, 0.3), (16.0, 1.4)]),
                series("group 100", &[(2.0, 0.02), (16.0, 0.04)]),
            ],
            Scale::Log,
        ));
        assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        for color in ["#0072B2", "#D55E00"] {
            let lines = svg.lines().filter(|line| line.starts_with("<polyline") && line.contains(color)).count();
            assert_eq!(lines, 2, "a line and its legend swatch in {color}: {svg}");
        }
        for text in ["time per batch", "workers", "bsp", "group 100"] {
            assert!(svg.contains(text), "`{text}` is drawn");
        }
    }

    #[test]
    fn log_axes_leave_out_values_they_cannot_place() {
        let svg = render_svg(&plot(vec![series("s", &[(0.0, 1.0), (1.0, -2.0), (2.0, 3.0), (4.0, 5.0)])], Scale::Log));
        assert_eq!(svg.matches("<circle").count(), 2, "only the two positive points: {svg}");
    }

    #[test]
    fn markers_are_named_in_the_legend_and_widen_the_x_axis_to_show_themselves() {
        let marked = render_svg_with_markers(
            &plot(vec![series("latency", &[(0.0, 1.0), (1.0, 2.0)])], Scale::Linear),
            &[Marker { label: "kill".into(), x: 5.0 }],
        );
        assert!(marked.contains("kill"), "{marked}");
        // The marker takes the palette's second colour, after the one series.
        assert!(marked.contains("#D55E00"), "{marked}");
        assert!(marked.contains("\n5\n</text>"), "a tick at 5 shows the axis reaches the marker: {marked}");
    }

    #[test]
    fn a_plot_without_data_says_so_and_labels_are_escaped() {
        let svg = render_svg(&LinePlot { title: "a < b & c".into(), ..plot(vec![series("s", &[])], Scale::Linear) });
        assert!(svg.contains("no data to plot"), "{svg}");
        assert!(svg.contains("a &lt; b &amp; c") && !svg.contains("a < b"), "{svg}");
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(format_tick(0.043), "0.043");
        assert_eq!(format_tick(1.40), "1.4");
        assert_eq!(format_tick(16.0), "16");
        assert_eq!(format_tick(2_500_000.0), "2.5M");
        assert_eq!(format_tick(25_000.0), "25k");
        assert_eq!(format_tick(0.0), "0");
    }
}
