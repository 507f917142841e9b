//! Token embeddings scaled by `sqrt(d_model)`, usable as the output projection when tied.

use burn::module::{Initializer, Module};
use burn::nn::Embedding;
use burn::tensor::{Device, Int, Tensor};

/// A token embedding whose output is multiplied by `sqrt(d_model)`, as in the paper, so that
/// it is on the scale of the positional encoding added next.
#[derive(Module, Debug)]
pub struct ScaledEmbedding {
    /// The `[vocab, d_model]` lookup table.
    pub embedding: Embedding,
    /// `sqrt(d_model)`.
    pub scale: f64,
}

impl ScaledEmbedding {
    /// A `vocab x d_model` table drawn from `N(0, d_model^-1/2)`.
    pub fn new(vocab: usize, d_model: usize, device: &Device) -> Self {
        let std = (d_model as f64).powf(-0.5);
        Self {
            embedding: Embedding {
                weight: Initializer::Normal { mean: 0.0, std }.init([vocab, d_model], device),
            },
            scale: (d_model as f64).sqrt(),
        }
    }

    /// `[batch, len]` token ids to `[batch, len, d_model]` scaled vectors.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        self.embedding.forward(tokens).mul_scalar(self.scale)
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
        let emb = ScaledEmbedding::new(10, 16, &device);
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
        let emb = ScaledEmbedding::new(5, 4, &device);
        let table = emb.embedding.weight.val();
        let h = table.clone().slice([2..3, 0..4]).unsqueeze::<3>();
        let logits = emb.project(h).into_data().try_to_vec::<f32>().expect("f32");
        let rows = table.into_data().try_to_vec::<f32>().expect("f32");
        for v in 0..5 {
            let dot: f32 = (0..4).map(|d| rows[2 * 4 + d] * rows[v * 4 + d]).sum();
            assert!((logits[v] - dot).abs() < 1e-6);
        }
    }
}
