//! # rosetta-tutorial
//!
//! The demonstrations of the tutorials our design follows (`shared/seeds/`), reproduced on
//! Rosetta's own modules, as library functions that return their numbers, so that the examples
//! (`crates/tutorial/examples/`) only print and plot them and the tests
//! (`tests/tutorial_examples.rs`) check the very same numbers. The plotting stack and the
//! bundled font live here, so that a program that needs only the model gets none of them.
//!
//! One concept per file: attention weights, the `sqrt(d_k)` scaling, multi-head attention,
//! positional encoding, the feed-forward network, the shapes through the model, the masks.
//! [`plot`] writes the PNG figures (and the attention heatmaps of `rosetta attention`).

pub mod attention_weights;
pub mod feed_forward;
pub mod masks;
pub mod multi_head;
pub mod plot;
pub mod positional;
pub mod scaling;
pub mod shapes;

use std::path::PathBuf;

use burn::tensor::Tensor;

/// Where the examples write their figures unless given a directory as first argument.
pub const DEFAULT_OUTPUT_DIR: &str = "target/rosetta-examples";

/// The output directory of an example: `arg` if given, else [`DEFAULT_OUTPUT_DIR`]; created
/// (with its parents) if missing.
pub fn output_dir(arg: Option<String>) -> std::io::Result<PathBuf> {
    let dir = PathBuf::from(arg.unwrap_or_else(|| DEFAULT_OUTPUT_DIR.to_string()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A float tensor's values, row-major.
pub(crate) fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap_or_default()
}

/// Cuts row-major `values` into rows of `width`.
pub(crate) fn rows(values: &[f32], width: usize) -> Vec<Vec<f32>> {
    values.chunks(width.max(1)).map(<[f32]>::to_vec).collect()
}

/// Formats a shape as the tutorials print it: `(2, 4, 512)`.
pub fn format_shape(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", dims.join(", "))
}
