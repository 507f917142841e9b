//! Hugging Face MarianMT (the OPUS-MT models): the configuration ([`config`]), the generation
//! settings ([`generation`]), where the state dict keeps each parameter ([`weights`]), the import
//! of a `save_pretrained` directory ([`import`]) and the export back ([`export`]). The tokenizer
//! (SentencePiece and Marian's vocabulary) is `rosetta-data`'s `MarianVocabulary`.

pub mod config;
pub mod export;
pub mod generation;
pub mod import;
pub mod weights;

pub use config::{MarianConfig, SUPPORTED_MODEL_TYPES};
pub use export::{HfExport, write_hf};
pub use generation::GenerationDefaults;
pub use import::{ImportOptions, ImportReport, import_marian};
