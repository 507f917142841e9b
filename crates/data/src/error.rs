//! Errors of the data crate. Each names the file (and line) or setting at fault.

use std::path::PathBuf;

/// Everything that can go wrong while reading, tokenizing, caching or batching a corpus.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not valid UTF-8.
    #[error("{path}:{line}: invalid UTF-8")]
    InvalidUtf8 {
        /// The file at fault.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// The two sides of a parallel corpus have different numbers of lines.
    #[error(
        "misaligned parallel corpus: {source_path} has {source_lines} lines but {target_path} has {target_lines}"
    )]
    Misaligned {
        /// The source-side file.
        source_path: PathBuf,
        /// Its line count.
        source_lines: usize,
        /// The target-side file.
        target_path: PathBuf,
        /// Its line count.
        target_lines: usize,
    },
    /// A line of a tab-separated pair file has no tab.
    #[error("{path}:{line}: expected `source<TAB>target`, found no tab")]
    MissingTab {
        /// The file at fault.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// The tokenizer library failed, or a tokenizer file is unusable.
    #[error("tokenizer {context}: {reason}")]
    Tokenizer {
        /// What was being done (and on which file).
        context: String,
        /// What the tokenizer library reported.
        reason: String,
    },
    /// A setting is out of range.
    #[error("invalid data setting `{key}`: {reason}")]
    InvalidSetting {
        /// The setting at fault, dotted as in the run configuration (`data.tokenizer.dropout`).
        key: &'static str,
        /// Why it is refused.
        reason: String,
    },
    /// The tokenizer(s) saved in a run directory were trained with other settings than the
    /// configuration asks for.
    #[error(
        "{path} was trained with tokenizer settings {saved}, but `data.tokenizer` now asks for {asked}; remove the tokenizer file(s) and {settings_file} to train a new vocabulary, or choose another output directory"
    )]
    StaleTokenizer {
        /// The tokenizer file found.
        path: PathBuf,
        /// The settings recorded beside it.
        saved: String,
        /// The settings the configuration asks for.
        asked: String,
        /// The settings file's name.
        settings_file: &'static str,
    },
    /// A run directory holds a tokenizer that neither this run trained nor the configuration
    /// names (`data.tokenizer.from`): it is not used silently.
    #[error(
        "{path} is in the run directory, but no {settings_file} says where it came from; remove it to train a new vocabulary, or name the tokenizer to use with `data.tokenizer.from`"
    )]
    UnexplainedTokenizer {
        /// The tokenizer file found.
        path: PathBuf,
        /// The settings file's name.
        settings_file: &'static str,
    },
    /// Length filtering left no training pair.
    #[error(
        "the length filter dropped every pair of the training split {files} ({offered} offered: {too_long} too long for `data.filter` max_source_tokens/max_target_tokens, {bad_ratio} over max_length_ratio); loosen `data.filter`"
    )]
    EmptyTrainingSplit {
        /// The training corpus file(s).
        files: String,
        /// Pairs offered to the filter.
        offered: usize,
        /// Pairs dropped for length.
        too_long: usize,
        /// Pairs dropped for their length ratio.
        bad_ratio: usize,
    },
    /// A cached encoded corpus is unreadable (it is then rebuilt, never trusted).
    #[error("encoded-corpus cache {path} is corrupt: {reason}")]
    CorruptCache {
        /// The cache file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A thread of data preparation stopped without finishing its work (it panicked).
    #[error("{what}")]
    Worker {
        /// What was being done.
        what: String,
    },
    /// A pair index past the end of an encoded corpus.
    #[error("pair {index} requested from a corpus of {len} pairs")]
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The number of pairs.
        len: usize,
    },
}

impl From<rosetta_files::TextError> for DataError {
    fn from(error: rosetta_files::TextError) -> Self {
        match error {
            rosetta_files::TextError::Io { path, source } => DataError::Io { path, source },
            rosetta_files::TextError::InvalidUtf8 { path, line } => {
                DataError::InvalidUtf8 { path, line }
            }
        }
    }
}

impl DataError {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> DataError {
        let path = path.into();
        move |source| DataError::Io { path, source }
    }
}
