//! Checkpoints: the weights and what they need to translate, written atomically and verified
//! before loading.
//!
//! A checkpoint is a directory `checkpoints/step-NNNNNNNN/` holding `model.bpk` (Burn's
//! burnpack format), in runs with `training.ema_decay` `ema.bpk` (the moving average of the
//! weights, which translation uses), `state.json` and `state.sha256` (the SHA-256 of
//! `state.json` itself). `state.json` holds a [`CheckpointState`] (layout version, step, model
//! configuration, tokenizer settings and fingerprint, decoding defaults, languages, and a
//! SHA-256 of each file); a training run adds its own fields and files to the same directory
//! (the optimizer state, the position in the data: `rosetta_train::checkpoint`) through a
//! [`CheckpointWriter`]. A checkpoint is written under a temporary name and renamed into place,
//! so a crash never leaves a half-written checkpoint under a real name; one whose files do not
//! match their recorded hashes is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rosetta_data::{LanguagePair, TokenizerSettings};
use rosetta_files::StagedDir;
use rosetta_model::Transformer;
use rosetta_model::TransformerConfig;
use rosetta_model::burn::module::Module;
use rosetta_model::burn::store::RecordError;
use rosetta_model::burn::tensor::Device;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{CheckpointFault, InferError};
use crate::options::TranslateOptions;

/// Version of the checkpoint layout.
pub const FORMAT: u32 = 1;
const MODEL_FILE: &str = "model.bpk";
/// The exponential moving average of the weights, in runs with `training.ema_decay`.
const EMA_FILE: &str = "ema.bpk";
const STATE_FILE: &str = "state.json";
/// The SHA-256 of `state.json`'s bytes, so that a damaged state is refused like a damaged model.
const STATE_CHECKSUM_FILE: &str = "state.sha256";

/// What every checkpoint records: enough, with its model file, to translate. Training
/// checkpoints record more beside it, in the same `state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Layout version ([`FORMAT`]).
    pub format: u32,
    /// Optimizer steps the weights have taken (0 for an imported model).
    pub step: u64,
    /// The model's configuration.
    pub model: TransformerConfig,
    /// The tokenizer settings the vocabulary was trained with.
    pub tokenizer: TokenizerSettings,
    /// Fingerprint of the tokenizer(s).
    pub tokenizer_fingerprint: String,
    /// SHA-256 of each file of the checkpoint.
    pub files: BTreeMap<String, String>,
    /// How the model decodes when the user does not say (an imported model's
    /// `generation_config.json`); `None`: [`TranslateOptions::default`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<TranslateOptions>,
    /// The source language's code, where known (`rosetta import-hf --source-lang`, or the
    /// training corpus's file extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_lang: Option<String>,
    /// The target language's code, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_lang: Option<String>,
    /// The directions of a multilingual model, each source starting with its target
    /// language's tag (`>>de<<`); empty for a bilingual model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<LanguagePair>,
}

/// A state written as a checkpoint's `state.json`: a [`CheckpointState`], alone or inside a
/// larger record (a training run's), whose file hashes the [`CheckpointWriter`] fills in.
pub trait StateRecord: Serialize {
    /// The checkpoint's part of the record.
    fn checkpoint_mut(&mut self) -> &mut CheckpointState;
}

impl StateRecord for CheckpointState {
    fn checkpoint_mut(&mut self) -> &mut CheckpointState {
        self
    }
}

/// The SHA-256 of `bytes`, hex-encoded.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The SHA-256 of the file at `path`, hex-encoded.
pub fn sha256_file(path: &Path) -> Result<String, InferError> {
    let bytes = std::fs::read(path).map_err(InferError::io(path))?;
    Ok(sha256_hex(&bytes))
}

fn record_error(path: &Path, action: &'static str) -> impl FnOnce(RecordError) -> InferError {
    let path = path.to_path_buf();
    move |error| InferError::checkpoint(path, CheckpointFault::Record { action, error })
}

/// The directory of all step checkpoints of a run.
pub fn checkpoints_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("checkpoints")
}

/// A checkpoint being written: its files go to a staging directory beside `dir`, each hashed as
/// it is written; [`CheckpointWriter::commit`] writes the state and moves the whole into place.
/// Dropped without committing, it leaves nothing behind.
pub struct CheckpointWriter {
    dir: PathBuf,
    staged: StagedDir,
    files: BTreeMap<String, String>,
}

impl CheckpointWriter {
    /// Starts a checkpoint that will be the directory `dir`.
    pub fn create(dir: &Path) -> Result<Self, InferError> {
        let staged = StagedDir::new(dir).map_err(InferError::io(dir))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            staged,
            files: BTreeMap::new(),
        })
    }

    /// Writes the model's weights.
    pub fn model(&mut self, model: &Transformer) -> Result<(), InferError> {
        self.record(MODEL_FILE, "write the model", |path| {
            model.clone().save_file(path)
        })
    }

    /// Writes the moving average of the weights (runs with `training.ema_decay`).
    pub fn ema(&mut self, ema: &Transformer) -> Result<(), InferError> {
        self.record(EMA_FILE, "write the weights' average", |path| {
            ema.clone().save_file(path)
        })
    }

    /// Writes the file `name` with `write` (given its path in the staging directory) and records
    /// its hash; `action` says what it is for the error (`write the optimizer state`).
    pub fn record(
        &mut self,
        name: &str,
        action: &'static str,
        write: impl FnOnce(&Path) -> Result<(), RecordError>,
    ) -> Result<(), InferError> {
        let path = self.staged.path().join(name);
        write(&path).map_err(record_error(&path, action))?;
        sync_file(&path)?;
        self.files.insert(name.to_string(), sha256_file(&path)?);
        Ok(())
    }

    /// Writes `state` (with the hashes of the files written) and its checksum, and moves the
    /// checkpoint into place, in place of an older one of the same name, never leaving neither.
    pub fn commit<S: StateRecord>(self, mut state: S) -> Result<(), InferError> {
        let tmp = self.staged.path().to_path_buf();
        let checkpoint = state.checkpoint_mut();
        checkpoint.format = FORMAT;
        checkpoint.files = self.files;
        let state_path = tmp.join(STATE_FILE);
        let json = serde_json::to_string_pretty(&state)
            .map_err(|e| InferError::checkpoint(&state_path, CheckpointFault::StateWrite(e)))?;
        std::fs::write(&state_path, json).map_err(InferError::io(&state_path))?;
        sync_file(&state_path)?;
        let checksum_path = tmp.join(STATE_CHECKSUM_FILE);
        let checksum = sha256_file(&state_path)?;
        std::fs::write(&checksum_path, format!("{checksum}\n"))
            .map_err(InferError::io(&checksum_path))?;
        sync_file(&checksum_path)?;
        self.staged
            .commit_replacing()
            .map_err(InferError::io(&self.dir))?;
        Ok(())
    }
}

/// Writes a model-only checkpoint (weights, optionally their moving average, and the state) as
/// directory `dir`, atomically: what averaging and imports write.
pub fn save(
    dir: &Path,
    model: &Transformer,
    ema: Option<&Transformer>,
    state: &CheckpointState,
) -> Result<(), InferError> {
    let mut writer = CheckpointWriter::create(dir)?;
    writer.model(model)?;
    if let Some(ema) = ema {
        writer.ema(ema)?;
    }
    writer.commit(state.clone())
}

/// Flushes a written file to the disk.
fn sync_file(path: &Path) -> Result<(), InferError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(InferError::io(path))
}

/// Reads and verifies the state of the checkpoint in `dir` (files present, hashes matching).
pub fn read_state(dir: &Path) -> Result<CheckpointState, InferError> {
    read_record(dir)
}

/// Reads and verifies the checkpoint in `dir` as [`read_state`] does, and returns its
/// `state.json` read as `T`: a record that holds a [`CheckpointState`] and more (a training
/// run's). A state that is not a `T` is [`CheckpointFault::UnreadableState`].
pub fn read_record<T: DeserializeOwned>(dir: &Path) -> Result<T, InferError> {
    let state_path = dir.join(STATE_FILE);
    if !state_path.is_file() {
        return Err(InferError::checkpoint(dir, CheckpointFault::NotACheckpoint));
    }
    let checksum_path = dir.join(STATE_CHECKSUM_FILE);
    // Checkpoints written before 2026-12-01 have no checksum of their state.
    if let Ok(expected) = std::fs::read_to_string(&checksum_path)
        && sha256_file(&state_path)? != expected.trim()
    {
        return Err(InferError::checkpoint(
            &state_path,
            CheckpointFault::Corrupt {
                recorded_in: STATE_CHECKSUM_FILE,
            },
        ));
    }
    let text = std::fs::read_to_string(&state_path).map_err(InferError::io(&state_path))?;
    let unreadable = |e| InferError::checkpoint(&state_path, CheckpointFault::UnreadableState(e));
    let state: CheckpointState = serde_json::from_str(&text).map_err(unreadable)?;
    if state.format != FORMAT {
        return Err(InferError::checkpoint(
            dir,
            CheckpointFault::Layout {
                found: state.format,
                supported: FORMAT,
            },
        ));
    }
    if !state.files.contains_key(MODEL_FILE) {
        return Err(InferError::checkpoint(dir, CheckpointFault::NoModelFile));
    }
    for (name, expected) in &state.files {
        let path = dir.join(name);
        if !path.is_file() {
            return Err(InferError::checkpoint(&path, CheckpointFault::MissingFile));
        }
        if &sha256_file(&path)? != expected {
            return Err(InferError::checkpoint(
                &path,
                CheckpointFault::Corrupt {
                    recorded_in: STATE_FILE,
                },
            ));
        }
    }
    serde_json::from_str(&text).map_err(unreadable)
}

/// Loads a verified checkpoint's moving average of the weights onto `device`, if it has one
/// (runs with `training.ema_decay`).
pub fn load_ema(
    dir: &Path,
    state: &CheckpointState,
    device: &Device,
) -> Result<Option<Transformer>, InferError> {
    if !state.files.contains_key(EMA_FILE) {
        return Ok(None);
    }
    let path = dir.join(EMA_FILE);
    let model = state
        .model
        .init(device)?
        .try_load_file(&path)
        .map_err(record_error(&path, "load the weights' average"))?;
    Ok(Some(model))
}

/// The model a checkpoint translates with: its moving average of the weights when the run kept
/// one, else its weights.
pub fn load_translation_model(
    dir: &Path,
    state: &CheckpointState,
    device: &Device,
) -> Result<Transformer, InferError> {
    match load_ema(dir, state, device)? {
        Some(ema) => Ok(ema),
        None => load_model(dir, state, device),
    }
}

/// The weights a checkpoint translates with (its moving average when the run kept one, else its
/// weights) in a model built from `config`, which must be the checkpoint's architecture (its
/// dropout rates may differ: a fine-tuning run sets its own).
pub fn load_translation_weights(
    dir: &Path,
    state: &CheckpointState,
    config: &TransformerConfig,
    device: &Device,
) -> Result<Transformer, InferError> {
    let file = if state.files.contains_key(EMA_FILE) {
        EMA_FILE
    } else {
        MODEL_FILE
    };
    let path = dir.join(file);
    config
        .init(device)?
        .try_load_file(&path)
        .map_err(record_error(&path, "load the weights"))
}

/// Loads a verified checkpoint's model (the trained weights, not their average) onto `device`.
pub fn load_model(
    dir: &Path,
    state: &CheckpointState,
    device: &Device,
) -> Result<Transformer, InferError> {
    let path = dir.join(MODEL_FILE);
    state
        .model
        .init(device)?
        .try_load_file(&path)
        .map_err(record_error(&path, "load the model"))
}

/// The step checkpoints of a run, oldest first.
pub fn list(run_dir: &Path) -> Result<Vec<(u64, PathBuf)>, InferError> {
    let dir = checkpoints_dir(run_dir);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(InferError::io(&dir))? {
        let entry = entry.map_err(InferError::io(&dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(step) = name
            .strip_prefix("step-")
            .and_then(|s| s.parse::<u64>().ok())
        {
            found.push((step, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// The directory name of the checkpoint at `step`.
pub fn step_dir(run_dir: &Path, step: u64) -> PathBuf {
    checkpoints_dir(run_dir).join(format!("step-{step:08}"))
}

/// Finds the checkpoint to resume from: `path` itself if it is a checkpoint directory, else
/// the newest step checkpoint of the run directory `path`.
pub fn resolve(path: &Path) -> Result<PathBuf, InferError> {
    if path.join(STATE_FILE).is_file() {
        return Ok(path.to_path_buf());
    }
    list(path)?
        .pop()
        .map(|(_, dir)| dir)
        .ok_or_else(|| InferError::checkpoint(path, CheckpointFault::NoCheckpoint))
}
