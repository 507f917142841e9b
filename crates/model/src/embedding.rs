//! Token embeddings scaled by `sqrt(d_model)` (or not, as some imported models have them),
//! usable as the output projection when tied.

use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::Embedding;
use burn::tensor::{Device, Int, Tensor};

/// How an embedding table starts.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum EmbeddingInit {
    /// `N(0, d_model^-1/2)`, rows of norm about 1 once scaled by `sqrt(d_model)`: fairseq's
    /// scheme, and the default.
    Normal,
    /// Xavier (Glorot) uniform over the `[vocab, d_model]` table, bound
    /// `sqrt(6 / (vocab + d_model))`: what PyTorch's Transformer tutorial gives every matrix.
    XavierUniform,
}

/// A token embedding whose output is multiplied by `sqrt(d_model)`, as in the paper, so that
/// it is on the scale of the positional encoding added next.
#[derive(Module, Debug)]
pub struct ScaledEmbedding {
    /// The `[vocab, d_model]` lookup table.
    pub embedding: Embedding,
    /// `sqrt(d_model)`, or 1 for an unscaled table ([`ScaledEmbeddingConfig::scaled`]).
    pub scale: f64,
}

/// The settings of a [`ScaledEmbedding`].
#[derive(Config, Debug)]
pub struct ScaledEmbeddingConfig {
    /// Rows of the table: the vocabulary size.
    pub vocab_size: usize,
    /// Columns of the table: the model width.
    pub d_model: usize,
    /// How the table starts.
    #[config(default = "EmbeddingInit::Normal")]
    pub scheme: EmbeddingInit,
    /// Whether lookups are multiplied by `sqrt(d_model)` (the paper's; Marian's
    /// `scale_embedding`).
    #[config(default = true)]
    pub scaled: bool,
}

impl ScaledEmbeddingConfig {
    /// Builds the embedding, its table drawn as [`scheme`](Self::scheme) says.
    pub fn init(&self, device: &Device) -> ScaledEmbedding {
        let (vocab, d_model) = (self.vocab_size, self.d_model);
        let shape = [vocab, d_model];
        let weight = match self.scheme {
            EmbeddingInit::Normal => Initializer::Normal {
                mean: 0.0,
                std: (d_model as f64).powf(-0.5),
            }
            .init(shape, device),
            EmbeddingInit::XavierUniform => Initializer::XavierUniform { gain: 1.0 }.init_with(
                shape,
                Some(d_model),
                Some(vocab),
                device,
            ),
        };
        ScaledEmbedding {
            embedding: Embedding { weight },
            scale: if self.scaled {
                (d_model as f64).sqrt()
            } else {
                1.0
            },
        }
    }
}

impl ScaledEmbedding {
    /// A `vocab x d_model` table initialised as `init` says (short for
    /// [`ScaledEmbeddingConfig::init`]).
    pub fn new(vocab: usize, d_model: usize, init: EmbeddingInit, device: &Device) -> Self {
        ScaledEmbeddingConfig::new(vocab, d_model)
            .with_scheme(init)
            .init(device)
    }

    /// `[batch, len]` token ids to `[batch, len, d_model]` scaled vectors.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let rows = self.embedding.forward(tokens);
        if self.scale == 1.0 {
            rows
        } else {
            rows.mul_scalar(self.scale)
        }
    }

    /// Uses the table as a tied output projection: `[.., d_model] -> [.., vocab]` logits
    /// `h · E^T` (unscaled, no bias).
    pub fn project(&self, hidden: Tensor<3>) -> Tensor<3> {
        burn::tensor::module::linear(hidden, self.embedding.weight.val().transpose(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    #[test]
    fn scales_by_sqrt_d_model() {
        let device = Device::flex();
        device.seed(9);
        let emb = ScaledEmbedding::new(10, 16, EmbeddingInit::Normal, &device);
        let tokens = Tensor::<2, Int>::from_data(TensorData::from([[3, 4]]), &device);
        let raw = emb.embedding.forward(tokens.clone());
        let scaled = emb.forward(tokens);
        raw.mul_scalar(4.0)
            .into_data()
            .assert_eq(&scaled.into_data(), true);
    }

    #[test]
    fn tied_projection_is_a_dot_product_with_each_row() {
        let device = Device::flex();
        device.seed(2);
        let emb = ScaledEmbedding::new(5, 4, EmbeddingInit::Normal, &device);
        let table = emb.embedding.weight.val();
        let h = table.clone().slice([2..3, 0..4]).unsqueeze::<3>();
        let logits = emb.project(h).into_data().try_to_vec::<f32>().expect("f32");
        let rows = table.into_data().try_to_vec::<f32>().expect("f32");
        for v in 0..5 {
            let dot: f32 = (0..4).map(|d| rows[2 * 4 + d] * rows[v * 4 + d]).sum();
            assert!((logits[v] - dot).abs() < 1e-6);
        }
    }

    /// The two schemes' spread: standard deviation `d^-1/2` for Normal; for Xavier, values
    /// inside `±sqrt(6 / (vocab + d))` with standard deviation `bound / sqrt(3)`.
    #[test]
    fn initial_tables_have_the_scheme_s_spread() {
        let device = Device::flex();
        device.seed(4);
        let (vocab, d) = (600, 64);
        let values = |init| {
            let emb = ScaledEmbedding::new(vocab, d, init, &device);
            emb.embedding
                .weight
                .val()
                .into_data()
                .try_to_vec::<f32>()
                .expect("f32")
        };
        let std = |v: &[f32]| {
            (v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
        };
        let normal = values(EmbeddingInit::Normal);
        assert!((std(&normal) - 0.125).abs() < 0.003, "{}", std(&normal));
        let xavier = values(EmbeddingInit::XavierUniform);
        let bound = (6.0 / (vocab + d) as f64).sqrt();
        assert!(
            xavier
                .iter()
                .all(|x| f64::from(x.abs()) <= bound * crate::init::F32_BOUND_SLACK)
        );
        let expected = bound / 3f64.sqrt();
        assert!(
            (std(&xavier) - expected).abs() < 0.02 * expected,
            "{}",
            std(&xavier)
        );
    }
}
