//! Sinusoidal positional encoding, the closed form of the paper:
//! `PE(pos, 2i) = sin(pos / 10000^(2i/d))`, `PE(pos, 2i+1) = cos(pos / 10000^(2i/d))`, or the
//! same values in Marian's layout ([`PositionLayout::Halves`]): the sines in the first half of
//! the dimensions, the cosines in the second, `PE(pos, i) = sin(..)`, `PE(pos, d/2 + i) = cos(..)`.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};

/// Base of the geometric progression of wavelengths.
const TIMESCALE: f64 = 10_000.0;

/// Where the sines and cosines of each frequency sit among the `d_model` dimensions.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum PositionLayout {
    /// Sine and cosine of frequency `i` side by side, at `2i` and `2i + 1`: the paper's,
    /// `tensor2tensor`'s and the seed tutorials'.
    Interleaved,
    /// Sines in dimensions `0..d/2`, cosines in `d/2..d`: Marian's and Hugging Face's MarianMT
    /// (`MarianSinusoidalPositionalEmbedding`), fairseq's.
    Halves,
}

/// Adds the sinusoidal encoding of each position to a sequence of embeddings.
///
/// The table is computed once (in `f64`, rounded to `f32`) and kept as a constant buffer: it is
/// not a parameter, is not trained and is not saved.
#[derive(Module, Debug)]
pub struct SinusoidalPositionalEncoding {
    /// `[max_positions, d_model]`.
    pub table: Tensor<2>,
}

/// The settings of a [`SinusoidalPositionalEncoding`].
#[derive(Config, Debug)]
pub struct SinusoidalPositionalEncodingConfig {
    /// Positions `0..max_positions` are covered.
    pub max_positions: usize,
    /// Width of the encodings; must be even.
    pub d_model: usize,
    /// Where the sines and cosines sit.
    #[config(default = "PositionLayout::Interleaved")]
    pub layout: PositionLayout,
}

impl SinusoidalPositionalEncodingConfig {
    /// Precomputes the table.
    pub fn init(&self, device: &Device) -> SinusoidalPositionalEncoding {
        let (max_positions, d_model) = (self.max_positions, self.d_model);
        let values = table_in(max_positions, d_model, self.layout);
        SinusoidalPositionalEncoding {
            table: Tensor::from_data(TensorData::new(values, [max_positions, d_model]), device),
        }
    }
}

impl SinusoidalPositionalEncoding {
    /// Precomputes the table for positions `0..max_positions`; `d_model` must be even (short
    /// for [`SinusoidalPositionalEncodingConfig::init`]).
    pub fn new(max_positions: usize, d_model: usize, device: &Device) -> Self {
        SinusoidalPositionalEncodingConfig::new(max_positions, d_model).init(device)
    }

    /// The number of positions the table covers.
    pub fn max_positions(&self) -> usize {
        self.table.dims()[0]
    }

    /// Adds the encodings of positions `start..start + len` to `x` `[batch, len, d_model]`.
    ///
    /// # Panics
    /// If `start + len` exceeds [`max_positions`](Self::max_positions); callers that take
    /// user input (translation) cut or refuse longer inputs before they get here.
    pub fn forward(&self, x: Tensor<3>, start: usize) -> Tensor<3> {
        let [_, len, d_model] = x.dims();
        let max = self.max_positions();
        assert!(
            start + len <= max,
            "sequence of {} positions exceeds the {max} the positional encoding covers",
            start + len
        );
        let rows = self.table.clone().slice([start..start + len, 0..d_model]);
        x + rows.unsqueeze::<3>()
    }
}

/// The closed form, row-major `[max_positions, d_model]`.
pub fn table(max_positions: usize, d_model: usize) -> Vec<f32> {
    table_in(max_positions, d_model, PositionLayout::Interleaved)
}

/// The encodings of positions `0..max_positions`, row-major `[max_positions, d_model]`, in
/// `layout`: every angle computed in `f64` and each sine or cosine rounded once to `f32`.
pub fn table_in(max_positions: usize, d_model: usize, layout: PositionLayout) -> Vec<f32> {
    let half = d_model / 2;
    let mut values = Vec::with_capacity(max_positions * d_model);
    for pos in 0..max_positions {
        for dim in 0..d_model {
            // The frequency's index and whether this dimension holds its sine.
            let (frequency, sine) = match layout {
                PositionLayout::Interleaved => (dim / 2, dim % 2 == 0),
                PositionLayout::Halves if dim < half => (dim, true),
                PositionLayout::Halves => (dim - half, false),
            };
            let angle = pos as f64 / TIMESCALE.powf(2.0 * frequency as f64 / d_model as f64);
            values.push(if sine { angle.sin() } else { angle.cos() } as f32);
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_equals_the_closed_form() {
        let device = Device::flex();
        let pe = SinusoidalPositionalEncoding::new(50, 16, &device);
        let values = pe.table.into_data().try_to_vec::<f32>().expect("f32");
        for (pos, dim) in [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
            (7, 4),
            (7, 5),
            (49, 14),
            (49, 15),
        ] {
            let i = (dim / 2) as f64;
            let angle = pos as f64 / 10_000f64.powf(2.0 * i / 16.0);
            let expected = if dim % 2 == 0 {
                angle.sin()
            } else {
                angle.cos()
            };
            let got = values[pos * 16 + dim] as f64;
            assert!(
                (got - expected).abs() < 1e-7,
                "pos {pos} dim {dim}: {got} vs {expected}"
            );
        }
        // Position 0 is [0, 1, 0, 1, ...].
        assert!(values[..16].chunks(2).all(|p| p == [0.0, 1.0]));
    }

    /// Marian's layout holds the interleaved table's columns, permuted: frequency `i`'s sine at
    /// `i` and its cosine at `d/2 + i` (the formula of Hugging Face's
    /// `MarianSinusoidalPositionalEmbedding`).
    #[test]
    fn halves_are_the_interleaved_columns_permuted() {
        let (positions, d) = (30, 12);
        let interleaved = table(positions, d);
        let halves = table_in(positions, d, PositionLayout::Halves);
        for pos in 0..positions {
            for i in 0..d / 2 {
                assert_eq!(halves[pos * d + i], interleaved[pos * d + 2 * i]);
                assert_eq!(
                    halves[pos * d + d / 2 + i],
                    interleaved[pos * d + 2 * i + 1]
                );
                let angle = pos as f64 / 10_000f64.powf(2.0 * i as f64 / d as f64);
                assert!((f64::from(halves[pos * d + i]) - angle.sin()).abs() < 1e-7);
            }
        }
        assert_eq!(
            &halves[..d],
            &[0.0; 6].into_iter().chain([1.0; 6]).collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn forward_adds_the_rows_from_start() {
        let device = Device::flex();
        let pe = SinusoidalPositionalEncoding::new(10, 4, &device);
        let x = Tensor::<3>::zeros([2, 3, 4], &device);
        let out = pe
            .forward(x, 2)
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        let expected = table(10, 4);
        assert_eq!(&out[..12], &expected[8..20]);
        assert_eq!(&out[12..], &expected[8..20]);
    }

    #[test]
    #[should_panic(expected = "exceeds the 10 the positional encoding covers")]
    fn too_long_is_refused() {
        let device = Device::flex();
        let pe = SinusoidalPositionalEncoding::new(10, 4, &device);
        pe.forward(Tensor::<3>::zeros([1, 11, 4], &device), 0);
    }
}
