//! # rosetta-model
//!
//! The Transformer encoder-decoder of *Attention Is All You Need*, written module by module on
//! Burn: scaled dot-product attention, multi-head attention, sinusoidal positional encoding,
//! position-wise feed-forward, encoder and decoder layers (post-norm as in the paper, or
//! pre-norm), the stacks, and the full model with its output projection.
//!
//! Every module is backend-agnostic: the same code runs on whichever [`Device`](burn::tensor::Device)
//! the caller builds it on (`flex`, `ndarray`, `wgpu`, `cuda`, ...).
//!
//! Mask convention: every boolean mask in this crate is `true` where attention is **blocked**
//! (a padding key, or a future position), matching Burn's `mask_fill`.
//!
//! ```
//! use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
//! use rosetta_model::{SearchConfig, SpecialTokens, TransformerConfig, greedy};
//!
//! let device = Device::flex();
//! device.seed(1);
//! let config = TransformerConfig::new(20, 20)
//!     .with_d_model(16)
//!     .with_n_heads(2)
//!     .with_d_ff(32)
//!     .with_n_encoder_layers(1)
//!     .with_n_decoder_layers(1)
//!     .with_max_positions(16);
//! let model = config.init(&device)?;
//! // Two sources in Rosetta's ids (0 pads, 3 ends a sentence), padded to one length.
//! let ids = vec![5i64, 6, 7, 3, 8, 3, 0, 0];
//! let source = Tensor::<2, Int>::from_data(TensorData::new(ids, [2, 4]), &device);
//! let search = SearchConfig::new(SpecialTokens::ROSETTA)
//!     .with_max_len_a(0.0)
//!     .with_max_len_b(5);
//! let hypotheses = greedy(&model, source, &search)?;
//! assert_eq!(hypotheses.len(), 2);
//! assert!(hypotheses.iter().all(|h| h.tokens.len() <= 5 && h.log_prob <= 0.0));
//! # Ok::<(), rosetta_model::ModelError>(())
//! ```

pub mod activation;
pub mod attention;
// The self-attention cache copied on two threads (one `set_len` after every value is written).
#[cfg(not(target_arch = "wasm32"))]
#[allow(unsafe_code)]
mod cache_copy;
pub mod config;
pub mod decoder;
pub mod device;
pub mod dropout;
pub mod embedding;
pub mod encoder;
pub mod error;
pub mod export;
pub mod feed_forward;
pub mod framing;
mod helper_thread;
pub mod import;
// `gemm` called on flex's buffers (raw pointers); every block states why it is sound.
#[cfg(not(target_arch = "wasm32"))]
#[allow(unsafe_code)]
mod in_place_linear;
pub mod incremental;
mod init;
pub mod int8;
pub mod mask;
pub mod multi_head;
mod parallel;
pub mod params;
pub mod positional;
mod residual;
pub mod rng;
mod row_math;
// A few rows times a weight in AVX2 on raw pointers; every block states why it is sound.
#[cfg(not(target_arch = "wasm32"))]
#[allow(unsafe_code)]
mod row_product;
pub mod search;
mod split_product;
mod stack;
pub mod transformer;

pub use activation::Activation;
pub use attention::{AttentionOutput, ScaledDotProductAttention};
pub use config::{NormPosition, TransformerConfig};
pub use decoder::{Decoder, DecoderLayer, DecoderOutput};
pub use device::{DeviceError, compiled_backends, parse_device};
pub use embedding::{EmbeddingInit, ScaledEmbedding, ScaledEmbeddingConfig};
pub use encoder::{Encoder, EncoderLayer};
pub use error::ModelError;
pub use export::torch_state_dict;
pub use feed_forward::{PositionWiseFeedForward, PositionWiseFeedForwardConfig};
pub use framing::SpecialTokens;
pub use import::{TorchImport, TorchNames};
pub use incremental::{DecoderState, LayerCache};
pub use int8::Quantization;
pub use multi_head::{
    FusedSelfProjection, MultiHeadAttention, MultiHeadAttentionConfig, MultiHeadOutput,
};
pub use positional::{
    PositionLayout, SinusoidalPositionalEncoding, SinusoidalPositionalEncodingConfig,
};
pub use row_math::{CrossEntropyRow, cross_entropy_row};
pub use search::{
    BeamStop, Hypothesis, LengthNorm, SearchConfig, SearchSetting, beam_search,
    beam_search_ensemble, greedy, greedy_ensemble, score_sequences,
};
pub use stack::{LayerConfig, StackConfig};
pub use transformer::{Encoded, Transformer};

/// Burn, re-exported so that downstream crates use exactly the version this model was built with.
pub use burn;
