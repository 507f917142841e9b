//! The full encoder-decoder Transformer with its output projection.

use std::sync::Arc;

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::config::TransformerConfig;
use crate::decoder::{Decoder, DecoderOutput};
use crate::embedding::ScaledEmbedding;
use crate::encoder::Encoder;
use crate::framing::SpecialTokens;
use crate::init;
use crate::int8::{self, Int8Matrix};
use crate::mask;

/// The encoder's output for a batch of sources, with what decoding against it needs.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// `[batch, src_len, d_model]`.
    pub memory: Tensor<3>,
    /// `[batch, src_len]`, `true` at source padding.
    pub source_padding: Tensor<2, Bool>,
}

/// The encoder-decoder Transformer: `source tokens -> memory`, `(target prefix, memory) ->
/// next-token logits`.
#[derive(Module, Debug)]
pub struct Transformer {
    /// Source token embedding (also the target one when `share_embeddings`).
    pub source_embedding: ScaledEmbedding,
    /// Target token embedding; `None` when shared with the source.
    pub target_embedding: Option<ScaledEmbedding>,
    /// The encoder stack.
    pub encoder: Encoder,
    /// The decoder stack.
    pub decoder: Decoder,
    /// `d_model -> target_vocab` projection; `None` when tied to the target embedding.
    pub output_projection: Option<Linear>,
    /// `[target_vocab]` added to the tied projection's logits
    /// ([`TransformerConfig::output_bias`]: Marian's `final_logits_bias`); not trained.
    pub output_bias: Option<Param<Tensor<1>>>,
    /// Id of the padding token, used to build masks from token ids.
    pub pad_id: usize,
    /// The vocabulary's special tokens ([`TransformerConfig::special_tokens`]).
    #[module(skip)]
    pub special_tokens: SpecialTokens,
    /// The output projection (with its bias) in int8 ([`quantize_int8`](Self::quantize_int8));
    /// `None` runs it in floating point.
    #[module(skip)]
    pub output_int8: Option<Arc<Int8Matrix>>,
}

impl Transformer {
    /// Builds a freshly initialised model. Prefer [`TransformerConfig::init`], which validates
    /// the configuration first.
    pub(crate) fn new(config: &TransformerConfig, device: &Device) -> Self {
        let source_embedding = config
            .embedding_config(config.source_vocab_size)
            .init(device);
        let target_embedding = (!config.share_embeddings).then(|| {
            config
                .embedding_config(config.target_vocab_size)
                .init(device)
        });
        Self {
            source_embedding,
            target_embedding,
            encoder: config.encoder_config().init_encoder(device),
            decoder: config.decoder_config().init_decoder(device),
            output_projection: (!config.tie_output_projection)
                .then(|| init::linear(config.d_model, config.target_vocab_size, device)),
            output_bias: (config.tie_output_projection && config.output_bias()).then(|| {
                Param::from_tensor(Tensor::zeros([config.target_vocab_size], device))
                    .set_require_grad(false)
            }),
            pad_id: config.pad_id,
            special_tokens: config.special_tokens(),
            output_int8: None,
        }
    }

    /// The embedding the decoder reads (and the tied projection uses).
    pub fn target_embedding(&self) -> &ScaledEmbedding {
        self.target_embedding
            .as_ref()
            .unwrap_or(&self.source_embedding)
    }

    /// The number of target tokens the model scores (the outputs of its projection).
    pub fn target_vocab_size(&self) -> usize {
        match &self.output_projection {
            Some(projection) => projection.weight.dims()[1],
            None => self.target_embedding().embedding.weight.dims()[0],
        }
    }

    /// The longest source or target sequence the model can take.
    pub fn max_positions(&self) -> usize {
        self.encoder
            .positional
            .max_positions()
            .min(self.decoder.positional.max_positions())
    }

    /// Encodes `source` `[batch, src_len]` (padded with `pad_id`).
    pub fn encode(&self, source: Tensor<2, Int>) -> Encoded {
        let source_padding = mask::padding_mask(&source, self.pad_id);
        let memory = self.encoder.forward(
            self.source_embedding.forward(source),
            Some(mask::key_padding_mask(source_padding.clone())),
        );
        Encoded {
            memory,
            source_padding,
        }
    }

    /// Runs the decoder over `target_input` `[batch, tgt_len]` (BOS + prefix, padded) against
    /// `encoded`, returning hidden states and, if asked, the cross-attention weights.
    pub fn decode_hidden(
        &self,
        target_input: Tensor<2, Int>,
        encoded: &Encoded,
        return_weights: bool,
    ) -> DecoderOutput {
        let self_mask = mask::causal_padding_mask(self.target_padding(&target_input));
        self.decoder.forward(
            self.target_embedding().forward(target_input),
            encoded.memory.clone(),
            Some(self_mask),
            Some(mask::key_padding_mask(encoded.source_padding.clone())),
            return_weights,
        )
    }

    /// `[batch, tgt_len]`, `true` at the padding of decoder inputs (`BOS + y`, padded). A model
    /// whose decoder starts from its padding id (Marian's `decoder_start_token_id`) has that
    /// first position unmasked: it is the start, not padding.
    pub fn target_padding(&self, target_input: &Tensor<2, Int>) -> Tensor<2, Bool> {
        let padding = mask::padding_mask(target_input, self.pad_id);
        if self.special_tokens.bos as usize != self.pad_id {
            return padding;
        }
        let [batch, len] = padding.dims();
        let later = Tensor::<1, Int>::arange(0..len as i64, &padding.device())
            .greater_elem(0)
            .reshape([1, len])
            .expand([batch, len]);
        padding.bool_and(later)
    }

    /// Logits `[batch, tgt_len, target_vocab]` for every position of `target_input` given `encoded`.
    pub fn decode(&self, target_input: Tensor<2, Int>, encoded: &Encoded) -> Tensor<3> {
        self.project(self.decode_hidden(target_input, encoded, false).hidden)
    }

    /// The output projection: `[.., d_model] -> [.., target_vocab]` logits.
    pub fn project(&self, hidden: Tensor<3>) -> Tensor<3> {
        if let Some(matrix) = self.output_int8_on(&hidden.device()) {
            return int8::linear(hidden, matrix);
        }
        match &self.output_projection {
            Some(linear) => linear.forward(hidden),
            None => {
                let logits = self.target_embedding().project(hidden);
                match &self.output_bias {
                    Some(bias) => logits + bias.val().unsqueeze::<3>(),
                    None => logits,
                }
            }
        }
    }

    /// Gives every linear map an int8 form (the attention projections, the feed-forward maps
    /// and the output projection, tied or not): from then on the forward passes on a device
    /// where [`int8::runs_on`] multiply in integers, the inputs quantized per row as they
    /// arrive ([`crate::int8`]). The float weights stay: training, averaging and exports read
    /// them, and other devices run them.
    pub fn quantize_int8(&mut self) {
        for layer in &mut self.encoder.layers {
            layer.self_attention.quantize_int8();
            layer.feed_forward.quantize_int8();
        }
        for layer in &mut self.decoder.layers {
            layer.self_attention.quantize_int8();
            layer.cross_attention.quantize_int8();
            layer.feed_forward.quantize_int8();
        }
        self.output_int8 = Some(match &self.output_projection {
            Some(linear) => int8::quantize_linear(linear),
            None => {
                let bias = self
                    .output_bias
                    .as_ref()
                    .map(|bias| int8::host_values(bias.val()));
                int8::quantize_weight(
                    self.target_embedding().embedding.weight.val().transpose(),
                    bias.as_deref(),
                )
            }
        });
    }

    /// The bytes the int8 forms hold (0 before [`quantize_int8`](Self::quantize_int8)).
    pub fn int8_size_bytes(&self) -> usize {
        let attention =
            |a: &crate::MultiHeadAttention| a.int8.as_ref().map_or(0, |i| i.size_bytes());
        let feed_forward =
            |f: &crate::PositionWiseFeedForward| f.int8.as_ref().map_or(0, |i| i.size_bytes());
        let encoder: usize = self
            .encoder
            .layers
            .iter()
            .map(|l| attention(&l.self_attention) + feed_forward(&l.feed_forward))
            .sum();
        let decoder: usize = self
            .decoder
            .layers
            .iter()
            .map(|l| {
                attention(&l.self_attention)
                    + attention(&l.cross_attention)
                    + feed_forward(&l.feed_forward)
            })
            .sum();
        encoder + decoder + self.output_int8.as_ref().map_or(0, |m| m.size_bytes())
    }

    /// The output projection's int8 form, when there is one and it runs on `device`.
    pub(crate) fn output_int8_on(&self, device: &Device) -> Option<&Arc<Int8Matrix>> {
        self.output_int8.as_ref().filter(|_| int8::runs_on(device))
    }

    /// Teacher-forced forward pass: logits `[batch, tgt_len, target_vocab]` for `target_input`
    /// (`BOS + y`) given `source`; position `t` predicts token `t` of `y + EOS`.
    pub fn forward(&self, source: Tensor<2, Int>, target_input: Tensor<2, Int>) -> Tensor<3> {
        let encoded = self.encode(source);
        self.decode(target_input, &encoded)
    }
}
