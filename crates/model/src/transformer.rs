//! The full encoder-decoder Transformer with its output projection.

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::config::TransformerConfig;
use crate::decoder::{Decoder, DecoderOutput};
use crate::embedding::ScaledEmbedding;
use crate::encoder::Encoder;
use crate::framing::SpecialTokens;
use crate::init;
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

    /// Teacher-forced forward pass: logits `[batch, tgt_len, target_vocab]` for `target_input`
    /// (`BOS + y`) given `source`; position `t` predicts token `t` of `y + EOS`.
    pub fn forward(&self, source: Tensor<2, Int>, target_input: Tensor<2, Int>) -> Tensor<3> {
        let encoded = self.encode(source);
        self.decode(target_input, &encoded)
    }
}
