//! Renders benchmark results as a dependency-free SVG line plot, so `benchmarks/results/` can hold figures
//! that GitHub shows inside a README.

/// One line of a plot. Points are joined in the order given, so a caller plotting against time keeps its order.
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

const CANVAS_WIDTH_PX: f64 = 800.0;
const CANVAS_HEIGHT_PX: f64 = 500.0;
const FONT_SIZE_PX: f64 = 12.0;
const TITLE_FONT_SIZE_PX: f64 = 16.0;
/// Layout has no font metrics, so text width is estimated per character. This over-estimates the mean advance
/// of a 12 px sans-serif glyph: too wide costs a little whitespace, too narrow makes labels overlap.
const CHAR_WIDTH_PX: f64 = 7.0;
const TITLE_CHAR_WIDTH_PX: f64 = 9.5;
/// Gap between the frame and the tick labels, and between neighbouring tick labels.
const LABEL_GAP_PX: f64 = 8.0;
const TICK_MARK_LENGTH_PX: f64 = 4.0;
const LEGEND_ROW_HEIGHT_PX: f64 = 20.0;
const LEGEND_PADDING_PX: f64 = 8.0;
const LEGEND_SWATCH_WIDTH_PX: f64 = 28.0;
/// Longer legend labels are cut with an ellipsis so the plot area keeps at least about half the canvas width.
const LEGEND_LABEL_CHARS_MAX: usize = 32;
const MARKER_RADIUS_PX: f64 = 3.5;
const MARKER_SPACING_MIN_PX: f64 = 10.0;

/// Data never touches the frame: each axis extends this fraction of its span (in log space for log axes).
const PADDING_FRACTION: f64 = 0.05;
const LINEAR_TICK_COUNT_MIN: usize = 5;
const LINEAR_TICK_COUNT_MAX: usize = 8;
/// Over wider log ranges, ticks at 2 and 5 times each power of ten would crowd the axis.
const LOG_DECADES_WITH_MULTIPLES_MAX: f64 = 3.0;
/// Beyond this, unlabelled grid lines at 2..9 times each power of ten would be too dense to read.
const LOG_DECADES_WITH_MINOR_GRID_MAX: f64 = 6.0;
/// Over more decades than this, only every second (third, …) power of ten is a tick.
const LOG_POWER_OF_TEN_TICKS_MAX: f64 = 8.0;
/// Data-valued ticks suit a handful of worker counts or sizes; past this they crowd like any other ticks.
const POWER_OF_TWO_TICKS_MAX: usize = 16;

/// The Okabe–Ito palette, which stays distinguishable under the common colour-vision deficiencies. Its yellow is
/// left out: on a white background it is too faint for a 2 px line.
const PALETTE: [&str; 7] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"];
/// Series beyond the palette reuse its colours, told apart by dashes: one pattern per round through the palette.
const DASH_PATTERNS: [&str; 4] = ["", "8 4", "2 3", "10 3 2 3"];
/// Marker shapes cycle on a different period from the colours, so shape tells lines apart in greyscale too.
const MARKERS: [Marker; 5] =
    [Marker::Circle, Marker::Square, Marker::TriangleUp, Marker::Diamond, Marker::TriangleDown];

#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
}

struct SeriesStyle {
    color: &'static str,
    dash_pattern: &'static str,
    marker: Option<Marker>,
}

/// Markers on a dense series would merge into a thick smear, so past a point per `MARKER_SPACING_MIN_PX` of plot
/// width the series is a bare line, in the legend too.
fn series_style(index: usize, point_count: usize, plot_width_px: f64) -> SeriesStyle {
    let draws_markers = point_count as f64 * MARKER_SPACING_MIN_PX <= plot_width_px;
    SeriesStyle {
        color: PALETTE[index % PALETTE.len()],
        dash_pattern: DASH_PATTERNS[(index / PALETTE.len()) % DASH_PATTERNS.len()],
        marker: draws_markers.then_some(MARKERS[index % MARKERS.len()]),
    }
}

/// Renders the plot as a standalone SVG document.
pub fn render_svg(plot: &LinePlot) -> String {
    let drawable_series: Vec<Vec<(f64, f64)>> = plot
        .series
        .iter()
        .map(|series| {
            let drawable = |&&(x, y): &&(f64, f64)| is_drawable(x, plot.x_scale) && is_drawable(y, plot.y_scale);
            series.points.iter().filter(drawable).copied().collect()
        })
        .collect();
    let x_values: Vec<f64> = drawable_series.iter().flatten().map(|&(x, _)| x).collect();
    let y_values: Vec<f64> = drawable_series.iter().flatten().map(|&(_, y)| y).collect();
    let x_axis = Axis::fit(&x_values, plot.x_scale);
    let y_axis = Axis::fit(&y_values, plot.y_scale);
    let legend_labels: Vec<String> = plot
        .series
        .iter()
        .zip(&drawable_series)
        .map(|(series, drawable)| {
            const NO_DATA: &str = " (no data)";
            if drawable.is_empty() {
                let label = truncate_chars(&series.label, LEGEND_LABEL_CHARS_MAX - NO_DATA.len());
                format!("{label}{NO_DATA}")
            } else {
                truncate_chars(&series.label, LEGEND_LABEL_CHARS_MAX)
            }
        })
        .collect();
    let frame = Frame::layout(plot, &y_axis, &legend_labels);

    // Text inherits its font and colour from the root; shapes all set their own fill.
    let mut svg = format!(
        concat!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}""#,
            r##" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{font_size}" fill="#222">"##,
        ),
        width = CANVAS_WIDTH_PX,
        height = CANVAS_HEIGHT_PX,
        font_size = FONT_SIZE_PX,
    );
    svg.push('\n');
    svg.push_str(&format!("<title>{}</title>\n", escape_xml(&plot.title)));
    // Transparent SVGs show black text on GitHub's dark theme, so the canvas is painted white.
    svg.push_str(r#"<rect width="100%" height="100%" fill="white"/>"#);
    svg.push('\n');
    write_title_and_axis_labels(&mut svg, plot, &frame);
    write_grid_and_ticks(&mut svg, &frame, &x_axis, &y_axis);
    let styles: Vec<SeriesStyle> = drawable_series
        .iter()
        .enumerate()
        .map(|(index, points)| series_style(index, points.len(), frame.width_px()))
        .collect();
    for (points, style) in drawable_series.iter().zip(&styles) {
        write_series(&mut svg, &frame, &x_axis, &y_axis, points, style);
    }
    if x_values.is_empty() {
        svg.push_str(&format!(
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="14" fill="#888">no data</text>"##,
            (frame.left_px + frame.right_px) / 2.0,
            (frame.top_px + frame.bottom_px) / 2.0,
        ));
        svg.push('\n');
    }
    write_legend(&mut svg, &frame, &legend_labels, &styles);
    svg.push_str("</svg>");
    svg
}

/// A point is drawn only where its axis can place it: log axes have no place for zero or negative values.
fn is_drawable(value: f64, scale: Scale) -> bool {
    value.is_finite() && (scale == Scale::Linear || value > 0.0)
}

/// The pixel rectangle of the plot area, and where the legend goes to its right.
struct Frame {
    left_px: f64,
    right_px: f64,
    top_px: f64,
    bottom_px: f64,
    legend_width_px: f64,
}

impl Frame {
    /// The margins leave room for the widest y tick label and the legend, so neither is clipped and the legend,
    /// being outside the plot area, never covers a line.
    fn layout(plot: &LinePlot, y_axis: &Axis, legend_labels: &[String]) -> Frame {
        let y_tick_label_chars = y_axis.ticks.iter().map(|&tick| format_tick(tick).len()).max().unwrap_or(1);
        let y_label_width_px = if plot.y_label.is_empty() { 8.0 } else { 28.0 };
        let left_px = y_label_width_px + y_tick_label_chars as f64 * CHAR_WIDTH_PX + LABEL_GAP_PX + TICK_MARK_LENGTH_PX;
        let legend_text_chars = legend_labels.iter().map(|label| label.chars().count()).max();
        let legend_width_px = match legend_text_chars {
            Some(chars) => {
                2.0 * LEGEND_PADDING_PX + LEGEND_SWATCH_WIDTH_PX + LABEL_GAP_PX + chars as f64 * CHAR_WIDTH_PX
            }
            None => 0.0,
        };
        let right_margin_px = if legend_labels.is_empty() { 30.0 } else { legend_width_px + 28.0 };
        Frame {
            left_px,
            right_px: CANVAS_WIDTH_PX - right_margin_px,
            top_px: if plot.title.is_empty() { 20.0 } else { 44.0 },
            bottom_px: CANVAS_HEIGHT_PX - if plot.x_label.is_empty() { 36.0 } else { 56.0 },
            legend_width_px,
        }
    }

    fn width_px(&self) -> f64 {
        self.right_px - self.left_px
    }

    fn height_px(&self) -> f64 {
        self.bottom_px - self.top_px
    }

    fn x_px(&self, fraction: f64) -> f64 {
        self.left_px + fraction * self.width_px()
    }

    /// SVG's y grows downwards, so a larger value sits at a smaller pixel y.
    fn y_px(&self, fraction: f64) -> f64 {
        self.bottom_px - fraction * self.height_px()
    }
}

/// The value range one axis shows, and where its grid lines go.
struct Axis {
    scale: Scale,
    low: f64,
    high: f64,
    ticks: Vec<f64>,
    /// Unlabelled, lighter grid lines between the ticks of a log axis.
    minor_ticks: Vec<f64>,
}

impl Axis {
    fn fit(values: &[f64], scale: Scale) -> Axis {
        let (low, high) = padded_range(values, scale);
        let (ticks, minor_ticks) = match scale {
            Scale::Linear => (linear_ticks(low, high), Vec::new()),
            Scale::Log => match power_of_two_ticks(values) {
                Some(ticks) => (ticks, Vec::new()),
                None => {
                    let ticks = log_ticks(low, high);
                    let minor_ticks = log_minor_ticks(low, high).into_iter().filter(|tick| !ticks.contains(tick));
                    let minor_ticks = minor_ticks.collect();
                    (ticks, minor_ticks)
                }
            },
        };
        Axis { scale, low, high, ticks, minor_ticks }
    }

    /// Where `value` lies between the axis ends: 0 at `low`, 1 at `high`.
    fn fraction(&self, value: f64) -> f64 {
        let (low, high, value) = match self.scale {
            Scale::Linear => (self.low, self.high, value),
            Scale::Log => (self.low.log10(), self.high.log10(), value.log10()),
        };
        let fraction = (value - low) / (high - low);
        // Only a span that overflows f64 gets here; the centre keeps the document valid.
        if fraction.is_finite() {
            fraction
        } else {
            0.5
        }
    }
}

/// The data range widened by `PADDING_FRACTION` on each side; a single value gets a range around it.
fn padded_range(values: &[f64], scale: Scale) -> (f64, f64) {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        return match scale {
            Scale::Linear => (0.0, 1.0),
            Scale::Log => (1.0, 10.0),
        };
    }
    let pad = |low: f64, high: f64, pad_if_single: f64| {
        let span = high - low;
        if !span.is_finite() {
            (low, high)
        } else if span > 0.0 {
            (low - span * PADDING_FRACTION, high + span * PADDING_FRACTION)
        } else {
            (low - pad_if_single, high + pad_if_single)
        }
    };
    match scale {
        Scale::Linear => pad(min, max, if max == 0.0 { 1.0 } else { max.abs() * 0.1 }),
        Scale::Log => {
            // A factor of two either side of a single value: enough to show ticks around it.
            let (low_exponent, high_exponent) = pad(min.log10(), max.log10(), 2f64.log10());
            (10f64.powf(low_exponent), 10f64.powf(high_exponent))
        }
    }
}

/// Ticks at the multiples of 1, 2 or 5 × 10^k inside `[low, high]`: the step giving 5 to 8 ticks, or else the count
/// nearest that, and on a tie the larger step, whose labels crowd less.
fn linear_ticks(low: f64, high: f64) -> Vec<f64> {
    let span = high - low;
    if !(span.is_finite() && span > 0.0) {
        return vec![low];
    }
    let exponent_guess = (span / LINEAR_TICK_COUNT_MIN as f64).log10().floor() as i32;
    let mut best: Option<(usize, Vec<f64>)> = None;
    for exponent in exponent_guess - 1..=exponent_guess + 1 {
        for mantissa in [1, 2, 5] {
            let ticks = multiples_in_range(low, high, mantissa, exponent);
            let distance = if ticks.len() < LINEAR_TICK_COUNT_MIN {
                LINEAR_TICK_COUNT_MIN - ticks.len()
            } else {
                ticks.len().saturating_sub(LINEAR_TICK_COUNT_MAX)
            };
            // Steps grow through the loop, so `<=` lets the larger step win a tie.
            if best.as_ref().is_none_or(|(best_distance, _)| distance <= *best_distance) {
                best = Some((distance, ticks));
            }
        }
    }
    match best {
        Some((_, ticks)) if !ticks.is_empty() => ticks,
        _ => vec![low, high],
    }
}

/// The multiples of `mantissa × 10^exponent` inside `[low, high]`, each computed from integers so that labels
/// come out as `0.3`, not `0.30000000000000004`.
fn multiples_in_range(low: f64, high: f64, mantissa: i64, exponent: i32) -> Vec<f64> {
    let step = decimal(mantissa, exponent);
    // The tolerance keeps a range end that is itself a multiple, such as the 1 of 0–1.
    let first = (low / step - 1e-9).ceil();
    let last = (high / step + 1e-9).floor();
    // Past 2^53 the multiples are not distinct floats; past a few hundred they are not ticks anyway.
    if !(first.abs() < 1e15 && last.abs() < 1e15 && last - first < 1000.0) {
        return Vec::new();
    }
    (first as i64..=last as i64).map(|multiple| decimal(multiple * mantissa, exponent)).collect()
}

/// `digits × 10^exponent` rounded once, as the decimal literal would be.
fn decimal(digits: i64, exponent: i32) -> f64 {
    if exponent >= 0 {
        digits as f64 * 10f64.powi(exponent)
    } else {
        digits as f64 / 10f64.powi(-exponent)
    }
}

/// Ticks at powers of ten, adding 2 and 5 times each under `LOG_DECADES_WITH_MULTIPLES_MAX` decades. A range too
/// narrow for three such ticks gets every integer multiple, and failing that linear ticks.
fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    if !(low > 0.0 && high > low && high.is_finite()) {
        return vec![low];
    }
    let decades = high.log10() - low.log10();
    let ticks = if decades < LOG_DECADES_WITH_MULTIPLES_MAX {
        decade_multiples(low, high, &[1, 2, 5])
    } else {
        let decade_stride = (decades / LOG_POWER_OF_TEN_TICKS_MAX).ceil().max(1.0) as i32;
        let powers = decade_multiples(low, high, &[1]);
        powers.into_iter().filter(|power| (power.log10().round() as i32).rem_euclid(decade_stride) == 0).collect()
    };
    if ticks.len() >= 3 {
        return ticks;
    }
    let ticks = decade_multiples(low, high, &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    if ticks.len() >= 2 {
        return ticks;
    }
    linear_ticks(low, high)
}

fn log_minor_ticks(low: f64, high: f64) -> Vec<f64> {
    let decades = high.log10() - low.log10();
    if decades.is_nan() || decades > LOG_DECADES_WITH_MINOR_GRID_MAX {
        return Vec::new();
    }
    decade_multiples(low, high, &[2, 3, 4, 5, 6, 7, 8, 9])
}

/// `mantissa × 10^k` for each mantissa and every k that puts the value inside `[low, high]`, in ascending order.
fn decade_multiples(low: f64, high: f64, mantissas: &[i64]) -> Vec<f64> {
    let low_exponent = low.log10().floor() as i32;
    let high_exponent = high.log10().ceil() as i32;
    let mut ticks = Vec::new();
    for exponent in low_exponent..=high_exponent {
        for &mantissa in mantissas {
            let tick = decimal(mantissa, exponent);
            if tick >= low * (1.0 - 1e-9) && tick <= high * (1.0 + 1e-9) {
                ticks.push(tick);
            }
        }
    }
    ticks
}

/// Worker counts and sizes are usually powers of two; ticking at exactly those values reads better than
/// powers of ten on a log axis.
fn power_of_two_ticks(values: &[f64]) -> Option<Vec<f64>> {
    let mut distinct = values.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let is_power_of_two = |value: f64| {
        let exponent = value.log2().round();
        value > 0.0 && exponent.abs() < 1000.0 && 2f64.powi(exponent as i32) == value
    };
    let fits = (2..=POWER_OF_TWO_TICKS_MAX).contains(&distinct.len()) && distinct.iter().all(|&v| is_power_of_two(v));
    fits.then_some(distinct)
}

/// A tick label with as few decimals as represent the tick exactly, so `0.30000000000000004` prints as `0.3`;
/// very large or small magnitudes use exponent notation with at most 3 significant digits.
fn format_tick(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    if !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs();
    if !(1e-4..1e6).contains(&magnitude) {
        let text = format!("{value:.2e}");
        return match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim_fraction_zeros(mantissa)),
            None => text,
        };
    }
    let is_exact = |decimals: i32| {
        let scaled = value * 10f64.powi(decimals);
        // Allows for the rounding error of a computed tick, which grows with its magnitude.
        (scaled - scaled.round()).abs() <= 1e-6f64.max(scaled.abs() * 1e-12)
    };
    let three_significant_decimals = (2 - magnitude.log10().floor() as i32).max(0);
    let decimals = (0..=6).find(|&decimals| is_exact(decimals)).unwrap_or(three_significant_decimals);
    let text = trim_fraction_zeros(&format!("{value:.*}", decimals as usize)).to_string();
    if text == "-0" {
        "0".to_string()
    } else {
        text
    }
}

fn trim_fraction_zeros(number: &str) -> &str {
    if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    }
}

fn escape_xml(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            // XML 1.0 cannot carry control characters, even escaped.
            character if character.is_control() => escaped.push(' '),
            character => escaped.push(character),
        }
    }
    escaped
}

fn truncate_chars(text: &str, chars_max: usize) -> String {
    if text.chars().count() <= chars_max {
        text.to_string()
    } else {
        let mut truncated: String = text.chars().take(chars_max.saturating_sub(1)).collect();
        truncated.push('…');
        truncated
    }
}

fn write_title_and_axis_labels(svg: &mut String, plot: &LinePlot, frame: &Frame) {
    let center_x_px = (frame.left_px + frame.right_px) / 2.0;
    if !plot.title.is_empty() {
        let title = truncate_chars(&plot.title, (CANVAS_WIDTH_PX / TITLE_CHAR_WIDTH_PX) as usize);
        svg.push_str(&format!(
            r#"<text x="{:.1}" y="28" text-anchor="middle" font-size="{}" font-weight="bold">{}</text>"#,
            CANVAS_WIDTH_PX / 2.0,
            TITLE_FONT_SIZE_PX,
            escape_xml(&title),
        ));
        svg.push('\n');
    }
    if !plot.x_label.is_empty() {
        let x_label = truncate_chars(&plot.x_label, (frame.width_px() / CHAR_WIDTH_PX) as usize);
        svg.push_str(&format!(
            r##"<text x="{center_x_px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            frame.bottom_px + 42.0,
            escape_xml(&x_label),
        ));
        svg.push('\n');
    }
    if !plot.y_label.is_empty() {
        let y_label = truncate_chars(&plot.y_label, (frame.height_px() / CHAR_WIDTH_PX) as usize);
        let center_y_px = (frame.top_px + frame.bottom_px) / 2.0;
        svg.push_str(&format!(
            r##"<text transform="translate(20 {center_y_px:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
            escape_xml(&y_label),
        ));
        svg.push('\n');
    }
}

/// Every `stride`-th tick is labelled, the smallest stride that keeps neighbouring labels apart; grid lines stay
/// at every tick.
fn label_stride(fractions: &[f64], axis_length_px: f64, label_extent_px: f64) -> usize {
    let gap_min_px =
        fractions.windows(2).map(|pair| (pair[1] - pair[0]).abs() * axis_length_px).fold(f64::INFINITY, f64::min);
    if !gap_min_px.is_finite() || gap_min_px <= 0.0 {
        return 1;
    }
    ((label_extent_px + LABEL_GAP_PX) / gap_min_px).ceil().clamp(1.0, fractions.len().max(1) as f64) as usize
}

fn write_grid_and_ticks(svg: &mut String, frame: &Frame, x_axis: &Axis, y_axis: &Axis) {
    svg.push_str(r##"<g stroke="#eeeeee" stroke-width="1">"##);
    svg.push('\n');
    for &tick in &x_axis.minor_ticks {
        let x_px = frame.x_px(x_axis.fraction(tick));
        svg.push_str(&format!(
            "<line x1=\"{x_px:.1}\" y1=\"{:.1}\" x2=\"{x_px:.1}\" y2=\"{:.1}\"/>\n",
            frame.top_px, frame.bottom_px
        ));
    }
    for &tick in &y_axis.minor_ticks {
        let y_px = frame.y_px(y_axis.fraction(tick));
        svg.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{y_px:.1}\" x2=\"{:.1}\" y2=\"{y_px:.1}\"/>\n",
            frame.left_px, frame.right_px
        ));
    }
    svg.push_str("</g>\n");

    let x_fractions: Vec<f64> = x_axis.ticks.iter().map(|&tick| x_axis.fraction(tick)).collect();
    let y_fractions: Vec<f64> = y_axis.ticks.iter().map(|&tick| y_axis.fraction(tick)).collect();
    let x_labels: Vec<String> = x_axis.ticks.iter().map(|&tick| format_tick(tick)).collect();
    let x_label_width_px = x_labels.iter().map(|label| label.len()).max().unwrap_or(0) as f64 * CHAR_WIDTH_PX;
    let x_stride = label_stride(&x_fractions, frame.width_px(), x_label_width_px);
    let y_stride = label_stride(&y_fractions, frame.height_px(), FONT_SIZE_PX);

    svg.push_str(r##"<g stroke="#cccccc" stroke-width="1">"##);
    svg.push('\n');
    for &fraction in &x_fractions {
        let x_px = frame.x_px(fraction);
        svg.push_str(&format!(
            "<line x1=\"{x_px:.1}\" y1=\"{:.1}\" x2=\"{x_px:.1}\" y2=\"{:.1}\"/>\n",
            frame.top_px,
            frame.bottom_px + TICK_MARK_LENGTH_PX
        ));
    }
    for &fraction in &y_fractions {
        let y_px = frame.y_px(fraction);
        svg.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{y_px:.1}\" x2=\"{:.1}\" y2=\"{y_px:.1}\"/>\n",
            frame.left_px - TICK_MARK_LENGTH_PX,
            frame.right_px
        ));
    }
    svg.push_str("</g>\n");
    svg.push_str(&format!(
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444" stroke-width="1"/>"##,
        frame.left_px,
        frame.top_px,
        frame.width_px(),
        frame.height_px(),
    ));
    svg.push('\n');

    for (index, (&fraction, label)) in x_fractions.iter().zip(&x_labels).enumerate() {
        if index % x_stride == 0 {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                frame.x_px(fraction),
                frame.bottom_px + TICK_MARK_LENGTH_PX + 14.0,
                escape_xml(label),
            ));
        }
    }
    for (index, (&fraction, &tick)) in y_fractions.iter().zip(&y_axis.ticks).enumerate() {
        if index % y_stride == 0 {
            // A third of the font size below the line centres digits on it without relying on
            // `dominant-baseline`, which some renderers ignore.
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
                frame.left_px - TICK_MARK_LENGTH_PX - 4.0,
                frame.y_px(fraction) + FONT_SIZE_PX / 3.0,
                escape_xml(&format_tick(tick)),
            ));
        }
    }
}

fn write_series(
    svg: &mut String,
    frame: &Frame,
    x_axis: &Axis,
    y_axis: &Axis,
    points: &[(f64, f64)],
    style: &SeriesStyle,
) {
    if points.is_empty() {
        return;
    }
    let pixels: Vec<(f64, f64)> =
        points.iter().map(|&(x, y)| (frame.x_px(x_axis.fraction(x)), frame.y_px(y_axis.fraction(y)))).collect();
    let coordinates: Vec<String> = pixels.iter().map(|(x_px, y_px)| format!("{x_px:.1},{y_px:.1}")).collect();
    svg.push_str(&format!(
        r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-linejoin="round"{}/>"#,
        coordinates.join(" "),
        style.color,
        dash_attribute(style.dash_pattern),
    ));
    svg.push('\n');
    if let Some(marker) = style.marker {
        for &(x_px, y_px) in &pixels {
            svg.push_str(&marker_svg(marker, x_px, y_px, style.color));
            svg.push('\n');
        }
    }
}

fn dash_attribute(dash_pattern: &str) -> String {
    if dash_pattern.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash_pattern}""#)
    }
}

fn marker_svg(marker: Marker, x_px: f64, y_px: f64, color: &str) -> String {
    let radius = MARKER_RADIUS_PX;
    let polygon = |corners: &[(f64, f64)]| {
        let corners: Vec<String> =
            corners.iter().map(|(dx, dy)| format!("{:.1},{:.1}", x_px + dx * radius, y_px + dy * radius)).collect();
        format!(r#"<path d="M{}Z" fill="{color}"/>"#, corners.join(" L"))
    };
    match marker {
        Marker::Circle => format!(r#"<circle cx="{x_px:.1}" cy="{y_px:.1}" r="{radius}" fill="{color}"/>"#),
        Marker::Square => polygon(&[(-0.9, -0.9), (0.9, -0.9), (0.9, 0.9), (-0.9, 0.9)]),
        Marker::TriangleUp => polygon(&[(0.0, -1.3), (1.2, 0.8), (-1.2, 0.8)]),
        Marker::Diamond => polygon(&[(0.0, -1.3), (1.3, 0.0), (0.0, 1.3), (-1.3, 0.0)]),
        Marker::TriangleDown => polygon(&[(0.0, 1.3), (1.2, -0.8), (-1.2, -0.8)]),
    }
}

/// The legend sits right of the plot area so it never hides data. Rows that do not fit the plot's height are
/// summarised in a last "+N more" row.
fn write_legend(svg: &mut String, frame: &Frame, legend_labels: &[String], styles: &[SeriesStyle]) {
    if legend_labels.is_empty() {
        return;
    }
    let rows_max = (((frame.height_px() - 2.0 * LEGEND_PADDING_PX) / LEGEND_ROW_HEIGHT_PX) as usize).max(1);
    let (shown_count, hidden_count) = if legend_labels.len() > rows_max {
        (rows_max - 1, legend_labels.len() - (rows_max - 1))
    } else {
        (legend_labels.len(), 0)
    };
    let row_count = shown_count + usize::from(hidden_count > 0);
    let left_px = frame.right_px + 16.0;
    svg.push_str(&format!(
        r##"<rect x="{left_px:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="white" stroke="#cccccc"/>"##,
        frame.top_px,
        frame.legend_width_px,
        row_count as f64 * LEGEND_ROW_HEIGHT_PX + 2.0 * LEGEND_PADDING_PX - 4.0,
    ));
    svg.push('\n');
    let row_center_px = |row: usize| frame.top_px + LEGEND_PADDING_PX - 2.0 + (row as f64 + 0.5) * LEGEND_ROW_HEIGHT_PX;
    let text_x_px = left_px + LEGEND_PADDING_PX + LEGEND_SWATCH_WIDTH_PX + LABEL_GAP_PX;
    for (index, (label, style)) in legend_labels.iter().zip(styles).take(shown_count).enumerate() {
        let center_px = row_center_px(index);
        let swatch_left_px = left_px + LEGEND_PADDING_PX;
        svg.push_str(&format!(
            r#"<line x1="{swatch_left_px:.1}" y1="{center_px:.1}" x2="{swatch_right_px:.1}" y2="{center_px:.1}""#,
            swatch_right_px = swatch_left_px + LEGEND_SWATCH_WIDTH_PX,
        ));
        svg.push_str(&format!(r#" stroke="{}" stroke-width="2"{}/>"#, style.color, dash_attribute(style.dash_pattern)));
        svg.push('\n');
        if let Some(marker) = style.marker {
            let swatch_center_px = swatch_left_px + LEGEND_SWATCH_WIDTH_PX / 2.0;
            svg.push_str(&marker_svg(marker, swatch_center_px, center_px, style.color));
            svg.push('\n');
        }
        svg.push_str(&format!(
            r#"<text x="{text_x_px:.1}" y="{:.1}">{}</text>"#,
            center_px + FONT_SIZE_PX / 3.0,
            escape_xml(label),
        ));
        svg.push('\n');
    }
    if hidden_count > 0 {
        svg.push_str(&format!(
            r##"<text x="{text_x_px:.1}" y="{:.1}" fill="#666">+{hidden_count} more</text>"##,
            row_center_px(shown_count) + FONT_SIZE_PX / 3.0,
        ));
        svg.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot(x_scale: Scale, y_scale: Scale, series: Vec<Series>) -> LinePlot {
        LinePlot {
            title: "Time per batch".to_string(),
            x_label: "workers".to_string(),
            y_label: "time per batch (ms)".to_string(),
            x_scale,
            y_scale,
            series,
        }
    }

    fn series(label: &str, points: &[(f64, f64)]) -> Series {
        Series { label: label.to_string(), points: points.to_vec() }
    }

    fn check_ticks(ticks: Vec<f64>, expected: &[f64]) {
        let close = ticks.len() == expected.len()
            && ticks.iter().zip(expected).all(|(tick, want)| (tick - want).abs() <= 1e-12 * want.abs().max(1.0));
        assert!(close, "ticks {ticks:?}, expected {expected:?}");
    }

    fn check_format(value: f64, expected: &str) {
        assert_eq!(format_tick(value), expected, "label of {value:e}");
    }

    fn polyline_point_counts(svg: &str) -> Vec<usize> {
        svg.split("<polyline points=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap_or("").split_whitespace().count())
            .collect()
    }

    #[test]
    fn document_is_one_svg_element() {
        let svg = render_svg(&plot(Scale::Linear, Scale::Linear, vec![series("a", &[(0.0, 1.0), (1.0, 2.0)])]));
        assert!(svg.starts_with("<svg"), "starts with {:?}", &svg[..20]);
        assert!(svg.ends_with("</svg>"), "ends with {:?}", &svg[svg.len() - 20..]);
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(svg.contains(r#"font-family="sans-serif""#));
    }

    #[test]
    fn one_polyline_per_series_with_points() {
        let svg = render_svg(&plot(
            Scale::Log,
            Scale::Log,
            vec![
                series("a", &[(2.0, 1.0), (4.0, 2.0), (8.0, 3.0)]),
                series("empty", &[]),
                series("b", &[(2.0, 0.1), (4.0, 0.2)]),
            ],
        ));
        assert_eq!(polyline_point_counts(&svg), vec![3, 2]);
        assert!(svg.contains("empty (no data)"), "the empty series is listed as having no data");
    }

    #[test]
    fn labels_are_escaped() {
        let mut escaped = plot(Scale::Linear, Scale::Linear, vec![series(r#"a<b & "c">"#, &[(0.0, 1.0)])]);
        escaped.title = "x < y".to_string();
        let svg = render_svg(&escaped);
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot;&gt;"), "legend label not escaped in {svg}");
        assert!(svg.contains("x &lt; y"));
        assert!(!svg.contains("a<b") && !svg.contains("x < y"));
    }

    #[test]
    fn log_axes_skip_values_they_cannot_place() {
        let points = [(0.0, 1.0), (1.0, -1.0), (2.0, 10.0), (f64::NAN, 5.0), (4.0, f64::INFINITY), (8.0, 100.0)];
        let svg = render_svg(&plot(Scale::Log, Scale::Log, vec![series("a", &points)]));
        assert_eq!(polyline_point_counts(&svg), vec![2]);
        let svg = render_svg(&plot(Scale::Linear, Scale::Log, vec![series("a", &points)]));
        assert_eq!(polyline_point_counts(&svg), vec![3], "x = 0 is drawable on a linear x axis");
    }

    #[test]
    fn plots_without_data_say_so() {
        for empty in [vec![], vec![series("a", &[])], vec![series("a", &[(-1.0, f64::NAN)])]] {
            let svg = render_svg(&plot(Scale::Log, Scale::Log, empty));
            assert!(svg.contains(">no data</text>") && svg.ends_with("</svg>"), "no note in {svg}");
            assert!(!svg.contains("NaN"), "non-finite coordinate in {svg}");
        }
    }

    #[test]
    fn extreme_values_render() {
        let points = [(0.0, f64::MAX), (1.0, -f64::MAX), (2.0, f64::MIN_POSITIVE)];
        for scale in [Scale::Linear, Scale::Log] {
            let svg = render_svg(&plot(scale, scale, vec![series("a", &points), series("b", &[(1.0, 1.0)])]));
            assert!(svg.ends_with("</svg>") && !svg.contains("NaN"), "bad document for {scale:?}: {svg}");
        }
    }

    #[test]
    fn linear_ticks_are_nice() {
        check_ticks(linear_ticks(0.0, 1.0), &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        check_ticks(linear_ticks(0.0, 37.0), &[0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0]);
        check_ticks(linear_ticks(3.0, 1050.0), &[200.0, 400.0, 600.0, 800.0, 1000.0]);
        check_ticks(linear_ticks(-3.0, 63.0), &[0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        check_ticks(linear_ticks(0.65, 8.35), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        check_ticks(linear_ticks(5.0, 5.0), &[5.0]);
    }

    #[test]
    fn log_ticks_are_powers_of_ten_and_multiples_over_narrow_ranges() {
        check_ticks(log_ticks(0.05, 120.0), &[0.1, 1.0, 10.0, 100.0]);
        check_ticks(log_ticks(1.0, 50.0), &[1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        check_ticks(log_ticks(0.03, 0.6), &[0.05, 0.1, 0.2, 0.5]);
        check_ticks(log_ticks(3.0, 7.0), &[3.0, 4.0, 5.0, 6.0, 7.0]);
        check_ticks(log_ticks(1e-3, 1e13), &[1e-2, 1.0, 1e2, 1e4, 1e6, 1e8, 1e10, 1e12]);
    }

    #[test]
    fn power_of_two_data_are_their_own_ticks() {
        let workers = [32.0, 2.0, 4.0, 8.0, 16.0, 4.0];
        assert_eq!(power_of_two_ticks(&workers), Some(vec![2.0, 4.0, 8.0, 16.0, 32.0]));
        assert_eq!(power_of_two_ticks(&[2.0, 3.0, 4.0]), None);
        assert_eq!(power_of_two_ticks(&[4.0]), None);
        check_ticks(Axis::fit(&workers, Scale::Log).ticks, &[2.0, 4.0, 8.0, 16.0, 32.0]);
        check_ticks(Axis::fit(&workers, Scale::Linear).ticks, &[5.0, 10.0, 15.0, 20.0, 25.0, 30.0]);
    }

    #[test]
    fn tick_labels_are_compact() {
        check_format(0.1 + 0.2, "0.3");
        check_format(0.0, "0");
        check_format(-0.5, "-0.5");
        check_format(0.05, "0.05");
        check_format(1024.0, "1024");
        check_format(0.125, "0.125");
        check_format(2.5e7, "2.5e7");
        check_format(1e-5, "1e-5");
        check_format(1.0 / 3.0, "0.333");
    }

    #[test]
    fn larger_values_are_drawn_higher_and_further_right() {
        let frame = Frame { left_px: 60.0, right_px: 600.0, top_px: 40.0, bottom_px: 440.0, legend_width_px: 0.0 };
        for scale in [Scale::Linear, Scale::Log] {
            let axis = Axis::fit(&[0.05, 3.0, 100.0], scale);
            let values = [0.05, 0.5, 1.0, 7.0, 100.0];
            for pair in values.windows(2) {
                let (smaller, larger) = (axis.fraction(pair[0]), axis.fraction(pair[1]));
                assert!(frame.y_px(larger) < frame.y_px(smaller), "{scale:?}: y {} not above {}", pair[1], pair[0]);
                assert!(frame.x_px(larger) > frame.x_px(smaller), "{scale:?}: x {} not right of {}", pair[1], pair[0]);
            }
            let inside = |value: f64| (0.0..=1.0).contains(&axis.fraction(value));
            assert!(inside(0.05) && inside(100.0), "{scale:?}: data outside the frame");
        }
    }
}
