//! # rosetta-convert
//!
//! Rosetta models to and from other toolkits' formats: Hugging Face MarianMT directories (the
//! OPUS-MT models), imported into a Rosetta run directory that translates, serves and fine-tunes
//! like any run, and exported back ([`marian`]); and [`export`], which writes a model whole or
//! not at all as safetensors under PyTorch's names, a CTranslate2 model directory
//! ([`ctranslate2`]), a browser bundle or a MarianMT directory. Inference (`rosetta-infer`) and
//! the browser build compile none of it.
//!
//! ```no_run
//! use rosetta_convert::marian::{ImportOptions, import_marian};
//!
//! let report = import_marian(
//!     "opus-mt-en-de".as_ref(),
//!     "runs/opus-mt-en-de".as_ref(),
//!     &ImportOptions::default(),
//! )?;
//! println!("{} parameters, decoding with beam {}", report.parameters, report.decoding.beam);
//! # Ok::<(), rosetta_convert::ConvertError>(())
//! ```

pub mod ctranslate2;
pub mod error;
pub mod export;
pub mod marian;

use std::path::Path;

pub use error::ConvertError;
pub use export::{ExportFormat, Exported, export};

/// Claims the new output directory `dir` (absent or empty) for a write whole or not at all.
pub(crate) fn claim(dir: &Path) -> Result<rosetta_files::StagedDir, ConvertError> {
    rosetta_files::StagedDir::claim(dir).map_err(|e| ConvertError::Output {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })
}
