//! Tutorial demonstration: the sinusoidal positional encoding as a matrix (positions x
//! dimensions), its first values at a few positions, and a heatmap of the whole table.

use burn::tensor::Device;

use rosetta_model::positional::SinusoidalPositionalEncoding;

use crate::values;

/// The encoding table of the demonstration and a few of its rows.
#[derive(Debug, Clone)]
pub struct PositionalDemo {
    /// `[positions, d_model]`.
    pub shape: [usize; 2],
    /// `(position, its first dimensions)` for each position shown.
    pub shown: Vec<(usize, Vec<f32>)>,
}

/// The table of [`SinusoidalPositionalEncoding`] for `positions x d_model`, with the first
/// `dims` values of each position in `shown` (positions beyond the table are skipped).
pub fn positional_demo(
    positions: usize,
    d_model: usize,
    shown: &[usize],
    dims: usize,
) -> PositionalDemo {
    let encoding = SinusoidalPositionalEncoding::new(positions, d_model, &Device::flex());
    let shape = encoding.table.dims();
    let table = values(encoding.table);
    let dims = dims.min(d_model);
    PositionalDemo {
        shape,
        shown: shown
            .iter()
            .filter(|&&p| p < positions)
            .map(|&p| (p, table[p * d_model..p * d_model + dims].to_vec()))
            .collect(),
    }
}

/// Writes a heatmap of the encoding table (`positions` rows, `d_model` columns) at `path`.
pub fn write_heatmap(
    positions: usize,
    d_model: usize,
    path: &std::path::Path,
) -> Result<(), crate::plot::PlotError> {
    let encoding = SinusoidalPositionalEncoding::new(positions, d_model, &Device::flex());
    crate::plot::heatmap_png(
        path,
        &format!("Sinusoidal positional encoding, {positions} positions x {d_model} dimensions"),
        ("dimension", "position"),
        &values(encoding.table),
        (positions, d_model),
    )
}
