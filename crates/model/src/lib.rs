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

pub mod activation;
pub mod attention;
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
pub mod import;
pub mod incremental;
mod init;
pub mod mask;
pub mod multi_head;
mod parallel;
pub mod params;
pub mod positional;
mod residual;
pub mod rng;
mod row_math;
pub mod search;
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
pub use multi_head::{
    FusedSelfProjection, MultiHeadAttention, MultiHeadAttentionConfig, MultiHeadOutput,
};
pub use positional::{
    PositionLayout, SinusoidalPositionalEncoding, SinusoidalPositionalEncodingConfig,
};
pub use search::{
    BeamStop, Hypothesis, LengthNorm, SearchConfig, SearchSetting, beam_search,
    beam_search_ensemble, greedy, greedy_ensemble, score_sequences,
};
pub use stack::{LayerConfig, StackConfig};
pub use transformer::{Encoded, Transformer};

/// Burn, re-exported so that downstream crates use exactly the version this model was built with.
pub use burn;
