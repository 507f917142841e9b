//! Rosetta's inference: load a trained checkpoint and translate with it.
//!
//! Everything a program needs to use a translator that `rosetta train` wrote, and nothing of
//! training (no optimizer, its state or autodiff: Burn is compiled without them for this crate,
//! and no progress bars or signal handling): the checkpoint format ([`checkpoint`]: writing,
//! verified loading, discovery of the best or newest checkpoint of a run; training adds its own
//! state through [`CheckpointWriter`]), model bundles ([`bundle`]: a model loadable from bytes
//! alone, for the browser), [`Translator`] (tokenize, search greedily or with a beam,
//! detokenize, n-best lists, cross-attention maps), the options of a translation job
//! ([`TranslateOptions`], checked before any work) and checkpoint averaging ([`average`]).
//! `rosetta translate`, `rosetta eval --checkpoint`, `rosetta serve` and the browser build use
//! this crate alone, and so can any program that embeds a translator. Exports to other
//! toolkits are `rosetta-convert`'s.
//!
//! ```
//! use rosetta_data::{SubwordTokenizer, TokenizerSettings, Tokenizers};
//! use rosetta_infer::{TranslateOptions, Translator};
//! use rosetta_model::TransformerConfig;
//! use rosetta_model::burn::tensor::Device;
//!
//! // A translator from a model and its tokenizer (`Translator::load("runs/quickstart")` reads
//! // both from a run directory); here an untrained model, so the output is noise.
//! let settings = TokenizerSettings { vocab_size: 280, min_frequency: 1, ..TokenizerSettings::default() };
//! let tokenizer = SubwordTokenizer::train(&settings, ["four hundred", "quatre cents"].iter())?;
//! let config = TransformerConfig::new(tokenizer.vocab_size(), tokenizer.vocab_size())
//!     .with_d_model(16)
//!     .with_n_heads(2)
//!     .with_d_ff(32)
//!     .with_n_encoder_layers(1)
//!     .with_n_decoder_layers(1)
//!     .with_max_positions(24);
//! let device = Device::flex();
//! let tokenizers = Tokenizers { source: tokenizer.clone(), target: tokenizer, joint: true };
//! let translator = Translator::new(config.init(&device)?, tokenizers, config, &device);
//! let options = TranslateOptions { beam: 2, max_len_a: 0.0, max_len_b: 4, ..TranslateOptions::default() };
//! let translations = translator.translate_lines(&["four hundred".into(), String::new()], &options)?;
//! assert_eq!(translations.len(), 2);
//! assert!(translations[0].target_tokens.len() <= 4);
//! assert_eq!(translations[1].text, "", "an empty line gives an empty translation");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod alignment;
pub mod average;
pub mod bundle;
pub mod checkpoint;
pub mod error;
pub mod options;
pub mod translator;

/// The model crate this one builds on (its `burn` re-export included), for callers that need
/// model types without naming another dependency.
pub use rosetta_model;

pub use average::{average, last_checkpoints};
pub use bundle::{BundleConfig, Precision};
pub use checkpoint::{CheckpointState, CheckpointWriter};
pub use error::{CheckpointFault, EnsembleMismatch, InferError};
pub use options::TranslateOptions;
pub use rosetta_data::LanguagePair;
pub use rosetta_model::search::{BeamStop, LengthNorm};
pub use translator::{
    AttentionMap, RecordedLanguages, Translation, Translator, find_checkpoint, find_tokenizers,
    recorded_languages,
};
