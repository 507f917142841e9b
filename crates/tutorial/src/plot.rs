//! PNG plots for the demonstrations (feature `plots`): line charts and a heatmap, drawn with
//! `plotters` into an RGB buffer and encoded with `png`, so that no system library or system
//! font is needed. Text uses DejaVu Sans, bundled in `assets/` (licence beside it).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// The bundled font, DejaVu Sans (Bitstream Vera licence, see `assets/DejaVuSans-LICENSE.txt`).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Why a plot could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The bundled font could not be parsed (a corrupt build).
    #[error("the bundled font could not be loaded")]
    Font,
    /// Drawing into the pixel buffer failed.
    #[error("drawing {path} failed: {reason}")]
    Draw {
        /// The PNG being drawn.
        path: PathBuf,
        /// What plotters reported.
        reason: String,
    },
    /// The data cannot be plotted (no points, a non-finite value, an empty grid).
    #[error("cannot plot {path}: {reason}")]
    Data {
        /// The PNG being drawn.
        path: PathBuf,
        /// What is wrong with the data.
        reason: String,
    },
    /// Creating or writing the file failed.
    #[error("writing {path} failed: {source}")]
    Io {
        /// The PNG being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// PNG encoding failed.
    #[error("encoding {path} as PNG failed: {reason}")]
    Encode {
        /// The PNG being written.
        path: PathBuf,
        /// What the encoder reported.
        reason: String,
    },
}

/// One named curve of a line chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// `(x, y)` points, in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// One chart (panel) of a figure.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Title above the chart.
    pub title: String,
    /// Label of the horizontal axis.
    pub x_label: String,
    /// Label of the vertical axis.
    pub y_label: String,
    /// Logarithmic horizontal axis (e.g. `d_k` from 8 to 512).
    pub log_x: bool,
    /// The curves.
    pub series: Vec<Series>,
}

/// Registers the bundled font under the family name `sans-serif`, once per process.
fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(PlotError::Font) }
}

/// Writes `panels` side by side into one PNG of `width x height` pixels at `path`.
pub fn line_chart_png(
    path: &Path,
    panels: &[Panel],
    (width, height): (u32, u32),
) -> Result<(), PlotError> {
    if panels.is_empty() {
        return Err(data_error(path, "no panel"));
    }
    for panel in panels {
        let mut points = panel.series.iter().flat_map(|s| &s.points).peekable();
        if points.peek().is_none() {
            return Err(data_error(
                path,
                format!("panel `{}` has no point", panel.title),
            ));
        }
        if let Some((x, y)) = points.find(|(x, y)| !x.is_finite() || !y.is_finite()) {
            return Err(data_error(path, format!("non-finite point ({x}, {y})")));
        }
        if panel.log_x
            && panel
                .series
                .iter()
                .flat_map(|s| &s.points)
                .any(|(x, _)| *x <= 0.0)
        {
            return Err(data_error(path, "a logarithmic axis needs x > 0"));
        }
    }
    ensure_font()?;
    let draw = |path: &Path, root: DrawingArea<BitMapBackend, Shift>| -> Result<(), PlotError> {
        root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
        let areas = root.split_evenly((1, panels.len()));
        for (panel, area) in panels.iter().zip(areas) {
            draw_panel(&area, panel).map_err(|e| draw_error(path, e))?;
        }
        root.present().map_err(|e| draw_error(path, e))
    };
    render(path, (width, height), draw)
}

/// Writes a heatmap of `values` (row-major `rows x cols`, one row per line of the image from
/// top to bottom) into a PNG at `path`, with a blue-white-red scale over the values' range.
pub fn heatmap_png(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    values: &[f32],
    (rows, cols): (usize, usize),
) -> Result<(), PlotError> {
    if rows == 0 || cols == 0 || values.len() != rows * cols {
        return Err(data_error(
            path,
            format!("{} values for a {rows} x {cols} grid", values.len()),
        ));
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(data_error(path, "non-finite value"));
    }
    ensure_font()?;
    let low = values.iter().copied().fold(f32::INFINITY, f32::min) as f64;
    let high = values.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let (width, height) = (900u32, 700u32);
    render(path, (width, height), |path, root| {
        let result: Result<(), Box<dyn std::error::Error>> = (|| {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 22))
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(55)
                .build_cartesian_2d(0..cols, 0..rows)?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .label_style(("sans-serif", 14))
                .draw()?;
            chart.draw_series((0..rows).flat_map(|r| {
                (0..cols).map(move |c| {
                    let v = values[r * cols + c] as f64;
                    // Row r (position r) at y = r..r+1: position 0 at the bottom.
                    Rectangle::new([(c, r), (c + 1, r + 1)], color(v, low, high).filled())
                })
            }))?;
            root.present()?;
            Ok(())
        })();
        result.map_err(|e| draw_error(path, e))
    })
}

/// Writes an attention map into a PNG at `path`: `weights` row-major `rows x cols`, one row
/// per output token (labelled `row_labels`, top to bottom) and one column per source token
/// (labelled `col_labels`, left to right), white (0) to dark blue (the largest weight).
pub fn attention_png(
    path: &Path,
    title: &str,
    weights: &[f32],
    row_labels: &[String],
    col_labels: &[String],
) -> Result<(), PlotError> {
    let (rows, cols) = (row_labels.len(), col_labels.len());
    if rows == 0 || cols == 0 || weights.len() != rows * cols {
        return Err(data_error(
            path,
            format!(
                "{} weights for {rows} output x {cols} source tokens",
                weights.len()
            ),
        ));
    }
    if weights.iter().any(|v| !v.is_finite()) {
        return Err(data_error(path, "non-finite weight"));
    }
    ensure_font()?;
    let high = weights
        .iter()
        .copied()
        .fold(0.0f32, f32::max)
        .max(f32::MIN_POSITIVE) as f64;
    let (cell_w, cell_h) = (64u32, 30u32);
    let width = (cols as u32 * cell_w + 220).max(480);
    let height = (rows as u32 * cell_h + 170).max(300);
    let label = |labels: &[String], v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    render(path, (width, height), |path, root| {
        let result: Result<(), Box<dyn std::error::Error>> = (|| {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 20))
                .margin(16)
                .x_label_area_size(50)
                .y_label_area_size(120)
                .build_cartesian_2d((0..cols).into_segmented(), (0..rows).into_segmented())?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(cols)
                .y_labels(rows)
                .x_label_formatter(&|x| label(col_labels, x))
                // Row 0 (the first output token) at the top.
                .y_label_formatter(&|y| match y {
                    SegmentValue::CenterOf(i) if *i < rows => row_labels[rows - 1 - i].clone(),
                    _ => String::new(),
                })
                .label_style(("sans-serif", 13))
                .x_desc("source")
                .y_desc("output")
                .draw()?;
            chart.draw_series((0..rows).flat_map(|r| {
                (0..cols).map(move |c| {
                    let t = (weights[r * cols + c] as f64 / high).clamp(0.0, 1.0);
                    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
                    let colour = RGBColor(mix(255.0, 8.0), mix(255.0, 48.0), mix(255.0, 107.0));
                    let y = rows - 1 - r;
                    Rectangle::new(
                        [
                            (SegmentValue::Exact(c), SegmentValue::Exact(y)),
                            (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1)),
                        ],
                        colour.filled(),
                    )
                })
            }))?;
            root.present()?;
            Ok(())
        })();
        result.map_err(|e| draw_error(path, e))
    })
}

/// Blue (low) through white (middle) to red (high).
fn color(v: f64, low: f64, high: f64) -> RGBColor {
    let t = if high > low {
        (v - low) / (high - low)
    } else {
        0.5
    };
    let mix = |a: f64, b: f64, t: f64| (a + (b - a) * t).round().clamp(0.0, 255.0) as u8;
    if t < 0.5 {
        let t = t * 2.0;
        RGBColor(
            mix(33.0, 255.0, t),
            mix(102.0, 255.0, t),
            mix(172.0, 255.0, t),
        )
    } else {
        let t = (t - 0.5) * 2.0;
        RGBColor(
            mix(255.0, 178.0, t),
            mix(255.0, 24.0, t),
            mix(255.0, 43.0, t),
        )
    }
}

/// Colours of the successive series.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
];

/// Draws one panel into `area`.
fn draw_panel(area: &DrawingArea<BitMapBackend, Shift>, panel: &Panel) -> Result<(), String> {
    let points = || panel.series.iter().flat_map(|s| s.points.iter());
    let (x_min, x_max) = bounds(points().map(|p| p.0));
    let (y_min, y_max) = bounds(points().map(|p| p.1));
    let y_pad = (y_max - y_min).max(f64::EPSILON) * 0.05;
    let y_range = y_min - y_pad..y_max + y_pad;
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    if panel.log_x {
        let mut chart = builder
            .build_cartesian_2d((x_min..x_max).log_scale(), y_range)
            .map_err(text)?;
        chart
            .configure_mesh()
            .x_labels(8)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .x_desc(panel.x_label.as_str())
            .y_desc(panel.y_label.as_str())
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(text)?;
        draw_series(&mut chart, panel)?;
    } else {
        let mut chart = builder
            .build_cartesian_2d(x_min..x_max, y_range)
            .map_err(text)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_label.as_str())
            .y_desc(panel.y_label.as_str())
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(text)?;
        draw_series(&mut chart, panel)?;
    }
    Ok(())
}

/// Draws the curves of `panel` and their legend on `chart`, whatever its x coordinate.
fn draw_series<'a, X>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, RangedCoordf64>>,
    panel: &Panel,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
{
    for (i, series) in panel.series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(
                series.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(text)?
            .label(series.label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::MiddleRight)
        .draw()
        .map_err(text)?;
    Ok(())
}

/// Any error as text (plotters' errors borrow the backend, so they cannot leave it).
fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// The smallest and largest value, widened when they coincide.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if high > low {
        (low, high)
    } else {
        (low - 0.5, high + 0.5)
    }
}

/// Draws with `draw` into an RGB buffer of `width x height` and writes it to `path` as PNG.
fn render(
    path: &Path,
    (width, height): (u32, u32),
    draw: impl FnOnce(&Path, DrawingArea<BitMapBackend, Shift>) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        draw(path, root)?;
    }
    let io = |source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::create(path).map_err(io)?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let encode = |e: png::EncodingError| PlotError::Encode {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut writer = encoder.write_header().map_err(encode)?;
    writer.write_image_data(&pixels).map_err(encode)?;
    writer.finish().map_err(encode)
}

fn draw_error(path: &Path, error: impl std::fmt::Display) -> PlotError {
    PlotError::Draw {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

fn data_error(path: &Path, reason: impl Into<String>) -> PlotError {
    PlotError::Data {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}
