//! # rosetta-data
//!
//! The data side of Rosetta: a parallel corpus read and validated ([`corpus`]), a subword
//! tokenizer trained with the `tokenizers` crate ([`tokenizer`]), sentences encoded into a
//! compact store with length filtering ([`store`]) and cached on disk ([`cache`]), batches
//! planned per epoch as a pure function of `(seed, epoch)` ([`plan`](mod@plan)) and turned into padded
//! tensors and masks on any device ([`batcher`]); [`pipeline`] runs it all from a
//! [`DataConfig`].
//!
//! ```
//! use rosetta_data::{SubwordTokenizer, TokenizerSettings, TranslationBatcher, PairTokens};
//! use rosetta_model::burn::tensor::Device;
//!
//! let settings = TokenizerSettings {
//!     vocab_size: 280,
//!     min_frequency: 1,
//!     ..TokenizerSettings::default()
//! };
//! let texts = ["one hundred twelve", "cent douze", "forty-two", "quarante-deux"];
//! let tokenizer = SubwordTokenizer::train(&settings, texts.iter())?;
//! let source = tokenizer.encode("forty-two")?;
//! assert_eq!(tokenizer.decode(&source)?, "forty-two");
//! // A batch: sources framed with </s>, decoder inputs with <s>, padded to the longest.
//! let pair = PairTokens { source, target: tokenizer.encode("quarante-deux")? };
//! let batch = TranslationBatcher::default().batch_of(&[pair], &Device::flex());
//! assert_eq!(batch.source.dims()[0], 1);
//! # Ok::<(), rosetta_data::DataError>(())
//! ```

mod atomic;
pub mod batcher;
pub mod bpe_dropout;
pub mod byte_level;
pub mod cache;
pub mod config;
pub mod corpus;
pub mod direction;
pub mod error;
pub mod marian;
pub mod mix;
pub mod pipeline;
pub mod plan;
pub mod progress;
/// The random generator of data order (shared with the model crate, which owns it).
pub use rosetta_model::rng;
pub mod store;
pub mod stored;
pub mod tokenizer;
mod trained;

pub use batcher::{PairTokens, TranslationBatch, TranslationBatcher};
pub use config::{DataConfig, TrainingCorpora, WeightedCorpus};
pub use corpus::{CorpusFiles, PairReader, ParallelCorpus, ReadStats, read_corpus};
pub use direction::{Direction, DirectionSplits, LanguageCode, LanguagePair};
pub use error::DataError;
pub use marian::{MARIAN_FILES, MarianSide, MarianVocabulary};
pub use mix::CorpusMix;
pub use pipeline::{PreparedData, PreparedSplit, Tokenizers, prepare, prepare_with};
pub use plan::{BatchSize, Bucketing, EpochPlan, plan, plan_epoch};
pub use progress::{Progress, Silent};
pub use store::{EncodedCorpus, FilterStats, LengthFilter, PairSource, TokenStore};
pub use stored::StoredCorpus;
pub use tokenizer::{
    SPECIAL_TOKEN_IDS, SPECIAL_TOKEN_NAMES, SubwordModel, SubwordTokenizer, TokenizerSettings,
};
