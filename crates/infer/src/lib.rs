//! Rosetta's inference: load a trained checkpoint and translate with it.
//!
//! Everything a program needs to use a translator that `rosetta train` wrote, and nothing of
//! training (no optimizer loop, progress bars or signal handling): the checkpoint format
//! ([`checkpoint`]: verified loading, discovery of the best or newest checkpoint of a run),
//! [`Translator`] (tokenize, search greedily or with a beam, detokenize, n-best lists,
//! cross-attention maps), the options of a translation job ([`TranslateOptions`], checked before
//! any work) and checkpoint averaging ([`average`]). `rosetta translate`, `rosetta eval
//! --checkpoint`, and `rosetta serve` use this crate alone, and so can any program that embeds a translator.
//!
//! ```no_run
//! use rosetta_infer::{TranslateOptions, Translator};
//! use rosetta_model::parse_device;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let device = parse_device("flex")?;
//!     let translator = Translator::load("runs/quickstart".as_ref(), &device)?;
//!     let options = TranslateOptions { beam: 5, ..TranslateOptions::default() };
//!     let translation = translator.translate_sentence("four hundred twelve", &options)?;
//!     println!("{}", translation.text);
//!     Ok(())
//! }
//! ```

pub mod average;
pub mod bundle;
pub mod checkpoint;
pub mod ctranslate2;
pub mod error;
pub mod export;
pub mod options;
pub mod translator;

/// The model crate this one builds on (its `burn` re-export included), for callers that need
/// model types without naming another dependency.
pub use rosetta_model;

pub use average::{average, last_checkpoints};
pub use bundle::{BundleConfig, Precision};
pub use checkpoint::TrainingState;
pub use error::{CheckpointFault, EnsembleMismatch, InferError};
pub use options::TranslateOptions;
pub use rosetta_model::search::{BeamStop, LengthNorm};
pub use translator::{AttentionMap, Translation, Translator, find_checkpoint, find_tokenizers};
