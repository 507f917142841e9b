//! Errors of loading a checkpoint and translating: each names the file, checkpoint or option at
//! fault.

use std::path::PathBuf;

use rosetta_model::burn::store::RecordError;

/// Everything that can stop loading a translator or translating with it.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A checkpoint is missing, corrupt, or does not belong with the files beside it.
    #[error("checkpoint {path}: {fault}")]
    Checkpoint {
        /// The checkpoint directory or file.
        path: PathBuf,
        /// Why it is refused.
        fault: CheckpointFault,
    },
    /// A tokenizer could not be loaded or failed to encode or decode.
    #[error(transparent)]
    Data(#[from] rosetta_data::DataError),
    /// The model could not be built, or a search setting is invalid.
    #[error(transparent)]
    Model(#[from] rosetta_model::ModelError),
    /// A translation option has an impossible value.
    #[error("option --{option}: {reason}")]
    InvalidOption {
        /// The option, as `rosetta translate` spells it (`beam`, `nbest`, `max-len-a`, ...).
        option: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// A model bundle's file is malformed, damaged, or does not belong with the others.
    #[error("model bundle {file}: {reason}")]
    Bundle {
        /// The file at fault (its name alone when loaded from bytes).
        file: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// A request the model cannot answer (an attention map of an empty sentence, a layer or
    /// head that does not exist).
    #[error("{0}")]
    Request(String),
}

/// Why a checkpoint is refused, by kind: a caller can tell a path that holds no checkpoint
/// (look elsewhere), a damaged one (take another), one from another build or run (retrain or
/// re-export) and a failed read or write (disk, permissions) apart.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointFault {
    /// The directory holds no `state.json`.
    #[error("not a checkpoint (no state.json)")]
    NotACheckpoint,
    /// A run directory with no step checkpoint (yet).
    #[error("no checkpoint to resume from")]
    NoCheckpoint,
    /// An average of no checkpoint was asked for.
    #[error("no checkpoint to average")]
    NothingToAverage,
    /// A run directory with fewer step checkpoints than asked for.
    #[error("has {found} step checkpoints, {asked} asked for")]
    TooFewCheckpoints {
        /// The step checkpoints there are.
        found: usize,
        /// The number asked for.
        asked: usize,
    },
    /// A file that the checkpoint's state lists is absent.
    #[error("missing")]
    MissingFile,
    /// A file's SHA-256 differs from the one recorded for it.
    #[error("corrupt or truncated (its SHA-256 does not match {recorded_in}); refusing to load it")]
    Corrupt {
        /// Where the expected hash is recorded (`state.json`, or `state.sha256` for the state).
        recorded_in: &'static str,
    },
    /// `state.json` does not parse.
    #[error("unreadable state: {0}")]
    UnreadableState(serde_json::Error),
    /// The state could not be encoded for writing.
    #[error("cannot write the state: {0}")]
    StateWrite(serde_json::Error),
    /// Written in a layout this build does not read.
    #[error("layout version {found} (this build reads {supported})")]
    Layout {
        /// The checkpoint's layout version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// `state.json` lists no model file.
    #[error("state.json lists no model file")]
    NoModelFile,
    /// Burn could not write or read one of the checkpoint's records.
    #[error("cannot {action}: {error}")]
    Record {
        /// What was being done (`write the model`, `load the weights`, ...).
        action: &'static str,
        /// Burn's error.
        error: RecordError,
    },
    /// No tokenizer in the checkpoint's directory or its run directory.
    #[error(
        "no tokenizer.json (or tokenizer.source.json + tokenizer.target.json) in it or its run directory"
    )]
    NoTokenizer,
    /// The tokenizer(s) found beside it are not the ones it was trained with.
    #[error("the tokenizer(s) found beside it are not the ones it was trained with")]
    ForeignTokenizer,
    /// A checkpoint of another run (model or tokenizer) among those averaged.
    #[error(
        "has another model configuration or tokenizer than {}; only checkpoints of one run can be averaged",
        first.display()
    )]
    OtherRun {
        /// The first checkpoint of the average.
        first: PathBuf,
    },
    /// Weights that cannot be read as 32-bit floats, which averaging needs.
    #[error("cannot read its weights as f32 to average them: {0}")]
    WeightsNotF32(String),
    /// A model that cannot join an ensemble: the ensemble's first model translates with other
    /// tokenizers, languages or target vocabulary.
    #[error("cannot join the ensemble: {0}")]
    EnsembleMismatch(EnsembleMismatch),
}

/// What keeps a model out of an ensemble, against the ensemble's first model.
#[derive(Debug, thiserror::Error)]
pub enum EnsembleMismatch {
    /// Trained with other tokenizer(s).
    #[error("it was trained with other tokenizer(s) than the first checkpoint")]
    Tokenizers,
    /// Trained for another language on one side.
    #[error("its {side} language is {theirs}, the first checkpoint's {ours}")]
    Language {
        /// `source` or `target`.
        side: &'static str,
        /// The joining model's language.
        theirs: String,
        /// The first model's.
        ours: String,
    },
    /// Trained for other directions (a multilingual model's, or one bilingual and one not).
    #[error("its directions are {theirs}, the first checkpoint's {ours}")]
    Directions {
        /// The joining model's directions.
        theirs: String,
        /// The first model's.
        ours: String,
    },
    /// Another target vocabulary size.
    #[error("its target vocabulary has {theirs} tokens, the first checkpoint's {ours}")]
    Vocabulary {
        /// The joining model's.
        theirs: usize,
        /// The first model's.
        ours: usize,
    },
}

impl InferError {
    /// A checkpoint at `path` refused for `fault`.
    pub fn checkpoint(path: impl Into<PathBuf>, fault: CheckpointFault) -> InferError {
        InferError::Checkpoint {
            path: path.into(),
            fault,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> InferError {
        let path = path.into();
        move |source| InferError::Io { path, source }
    }
}
