//! # rosetta-convert
//!
//! Rosetta models to and from other toolkits' formats. Today: Hugging Face MarianMT directories
//! (the OPUS-MT models), imported into a Rosetta run directory that translates, serves and
//! fine-tunes like any run, and exported back ([`marian`]); [`export_hf`] writes one whole or not
//! at all.
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

pub mod error;
pub mod marian;

use std::path::{Path, PathBuf};

use rosetta_infer::Translator;

pub use error::ConvertError;

/// Writes `translator`'s model as a MarianMT directory into the new directory `dir`, whole or
/// not at all (see [`marian::export`]). Returns the files written and the notes on what of its
/// decoding `transformers` can only approximate.
pub fn export_hf(
    translator: &Translator,
    dir: &Path,
) -> Result<(Vec<PathBuf>, Vec<String>), ConvertError> {
    if !translator.ensemble.is_empty() {
        return Err(ConvertError::Output {
            path: dir.to_path_buf(),
            reason: "an ensemble is several models and exports as one only once averaged (rosetta average)".into(),
        });
    }
    let staged = claim(dir)?;
    let export = marian::write_hf(translator, staged.path())?;
    let dir = staged.commit().map_err(ConvertError::io(dir))?;
    let files = export
        .files
        .iter()
        .map(|file| dir.join(file.file_name().unwrap_or_default()))
        .collect();
    Ok((files, export.notes))
}

/// Claims the new output directory `dir` (absent or empty) for a write whole or not at all.
pub(crate) fn claim(dir: &Path) -> Result<rosetta_files::StagedDir, ConvertError> {
    rosetta_files::StagedDir::claim(dir).map_err(|e| ConvertError::Output {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })
}
