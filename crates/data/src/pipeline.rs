//! The data pipeline end to end: read the splits, train (or reload) the tokenizer(s), encode
//! with the on-disk cache, and report what was kept and dropped.

use std::fmt;
use std::path::Path;

use crate::cache::{self, CachedSplit};
use crate::config::DataConfig;
use crate::corpus::{CorpusFiles, read_corpus};
use crate::error::DataError;
use crate::store::{EncodedCorpus, LengthFilter};
use crate::tokenizer::{SubwordTokenizer, TokenizerSettings};

/// File name of a joint tokenizer in a run directory.
pub const JOINT_TOKENIZER: &str = "tokenizer.json";
/// File name of the source tokenizer when vocabularies are separate.
pub const SOURCE_TOKENIZER: &str = "tokenizer.source.json";
/// File name of the target tokenizer when vocabularies are separate.
pub const TARGET_TOKENIZER: &str = "tokenizer.target.json";
/// File name of the settings the tokenizer(s) of a run directory were trained with, so that a
/// later run into the same directory does not reuse them under other settings.
pub const TOKENIZER_SETTINGS: &str = "tokenizer.settings.json";

/// The tokenizer(s) of a run.
#[derive(Debug, Clone)]
pub struct Tokenizers {
    /// Tokenizes source sentences.
    pub source: SubwordTokenizer,
    /// Tokenizes target sentences (the same as `source` when joint).
    pub target: SubwordTokenizer,
    /// Whether one vocabulary serves both sides.
    pub joint: bool,
}

impl Tokenizers {
    /// Loads the tokenizer(s) saved in `dir`, if any: `Ok(None)` when there are none.
    pub fn load(dir: &Path) -> Result<Option<Self>, DataError> {
        let joint = dir.join(JOINT_TOKENIZER);
        if joint.is_file() {
            let tokenizer = SubwordTokenizer::load(&joint)?;
            return Ok(Some(Self {
                source: tokenizer.clone(),
                target: tokenizer,
                joint: true,
            }));
        }
        let (source, target) = (dir.join(SOURCE_TOKENIZER), dir.join(TARGET_TOKENIZER));
        if source.is_file() && target.is_file() {
            return Ok(Some(Self {
                source: SubwordTokenizer::load(&source)?,
                target: SubwordTokenizer::load(&target)?,
                joint: false,
            }));
        }
        Ok(None)
    }

    /// The tokenizer(s) from their JSON texts: one joint tokenizer (`target` is `None`), or a
    /// source and a target tokenizer. Needs no file system (the browser build loads them so).
    pub fn from_json(source: &str, target: Option<&str>) -> Result<Self, DataError> {
        match target {
            None => {
                let tokenizer = SubwordTokenizer::from_json(source, JOINT_TOKENIZER)?;
                Ok(Self {
                    source: tokenizer.clone(),
                    target: tokenizer,
                    joint: true,
                })
            }
            Some(target) => Ok(Self {
                source: SubwordTokenizer::from_json(source, SOURCE_TOKENIZER)?,
                target: SubwordTokenizer::from_json(target, TARGET_TOKENIZER)?,
                joint: false,
            }),
        }
    }

    /// Saves the tokenizer(s) into `dir` under the standard names.
    pub fn save(&self, dir: &Path) -> Result<(), DataError> {
        if self.joint {
            self.source.save(&dir.join(JOINT_TOKENIZER))
        } else {
            self.source.save(&dir.join(SOURCE_TOKENIZER))?;
            self.target.save(&dir.join(TARGET_TOKENIZER))
        }
    }

    /// A fingerprint of the tokenizer(s), to refuse resuming or translating with others.
    pub fn fingerprint(&self) -> Result<String, DataError> {
        Ok(format!(
            "{}:{}",
            self.source.fingerprint()?,
            self.target.fingerprint()?
        ))
    }
}

/// One prepared split, with the counts of its preparation.
#[derive(Debug, Clone)]
pub struct PreparedSplit {
    /// The split's name (`train`, `valid`, `test`).
    pub name: &'static str,
    /// Encoded pairs and their statistics.
    pub data: CachedSplit,
    /// Whether the encoded pairs came from the cache.
    pub from_cache: bool,
}

impl fmt::Display for PreparedSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.data.read;
        let l = &self.data.filter;
        write!(
            f,
            "{:<5} {} pairs read, {} kept; dropped: {} empty, {} too long, {} bad length ratio{}",
            self.name,
            r.read,
            l.kept,
            r.empty,
            l.too_long,
            l.bad_ratio,
            if self.from_cache {
                " (encoded corpus from cache)"
            } else {
                ""
            }
        )
    }
}

/// Everything the training loop needs from the data side.
#[derive(Debug, Clone)]
pub struct PreparedData {
    /// The tokenizer(s).
    pub tokenizers: Tokenizers,
    /// Whether the tokenizer(s) were trained now (rather than reloaded).
    pub trained_tokenizers: bool,
    /// Training split.
    pub train: PreparedSplit,
    /// Validation split.
    pub valid: PreparedSplit,
    /// Test split, if configured.
    pub test: Option<PreparedSplit>,
}

impl PreparedData {
    /// Training pairs.
    pub fn train(&self) -> &EncodedCorpus {
        &self.train.data.corpus
    }

    /// Validation pairs.
    pub fn valid(&self) -> &EncodedCorpus {
        &self.valid.data.corpus
    }
}

impl fmt::Display for PreparedData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tokenizers;
        if t.joint {
            writeln!(f, "tokenizer: joint, {} subwords", t.source.vocab_size())?;
        } else {
            writeln!(
                f,
                "tokenizers: source {} subwords, target {} subwords",
                t.source.vocab_size(),
                t.target.vocab_size()
            )?;
        }
        writeln!(f, "{}", self.train)?;
        write!(f, "{}", self.valid)?;
        if let Some(test) = &self.test {
            write!(f, "\n{test}")?;
        }
        Ok(())
    }
}

/// Prepares the data of a run in `run_dir`: tokenizer(s) already saved there are reused (a
/// resumed run keeps its vocabulary); otherwise they are trained on the training split and
/// saved. Relative corpus paths are resolved against `base_dir`.
pub fn prepare(
    config: &DataConfig,
    base_dir: &Path,
    run_dir: &Path,
) -> Result<PreparedData, DataError> {
    let train_files = config.train.resolved(base_dir);
    let valid_files = config.valid.resolved(base_dir);
    let test_files = config.test.as_ref().map(|t| t.resolved(base_dir));
    let cache_dir = match &config.cache_dir {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => base_dir.join(dir),
        None => run_dir.join("cache"),
    };

    let settings_path = run_dir.join(TOKENIZER_SETTINGS);
    let (tokenizers, trained_tokenizers) = match Tokenizers::load(run_dir)? {
        Some(tokenizers) => {
            check_tokenizer_settings(run_dir, &settings_path, &config.tokenizer)?;
            (tokenizers, false)
        }
        None => {
            let corpus = read_corpus(&train_files)?;
            let settings = &config.tokenizer;
            let tokenizers = if settings.joint {
                let texts = corpus.source.iter().chain(corpus.target.iter());
                let tokenizer = SubwordTokenizer::train(settings, texts)?;
                Tokenizers {
                    source: tokenizer.clone(),
                    target: tokenizer,
                    joint: true,
                }
            } else {
                Tokenizers {
                    source: SubwordTokenizer::train(settings, corpus.source.iter())?,
                    target: SubwordTokenizer::train(settings, corpus.target.iter())?,
                    joint: false,
                }
            };
            tokenizers.save(run_dir)?;
            let json =
                serde_json::to_string_pretty(settings).map_err(|e| DataError::Tokenizer {
                    context: format!("writing {}", settings_path.display()),
                    reason: e.to_string(),
                })?;
            crate::atomic::write(&settings_path, json.as_bytes())?;
            (tokenizers, true)
        }
    };

    let split = |name: &'static str, files: &CorpusFiles| {
        prepare_split(name, files, &tokenizers, &config.filter, &cache_dir)
    };
    let train = split("train", &train_files)?;
    let filtered = &train.data.filter;
    if filtered.kept == 0 && filtered.offered > 0 {
        let files: Vec<String> = train_files
            .paths()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        return Err(DataError::EmptyTrainingSplit {
            files: files.join(" + "),
            offered: filtered.offered,
            too_long: filtered.too_long,
            bad_ratio: filtered.bad_ratio,
        });
    }
    Ok(PreparedData {
        train,
        valid: split("valid", &valid_files)?,
        test: test_files.as_ref().map(|t| split("test", t)).transpose()?,
        tokenizers,
        trained_tokenizers,
    })
}

/// Refuses tokenizer(s) saved in `run_dir` whose recorded settings differ from `asked`. Files
/// from before the settings were recorded (no settings file) are reused as they are.
fn check_tokenizer_settings(
    run_dir: &Path,
    settings_path: &Path,
    asked: &TokenizerSettings,
) -> Result<(), DataError> {
    let Ok(text) = std::fs::read_to_string(settings_path) else {
        return Ok(());
    };
    let saved: TokenizerSettings =
        serde_json::from_str(&text).map_err(|e| DataError::Tokenizer {
            context: format!("reading {}", settings_path.display()),
            reason: e.to_string(),
        })?;
    if &saved == asked {
        return Ok(());
    }
    let file = if run_dir.join(JOINT_TOKENIZER).is_file() {
        JOINT_TOKENIZER
    } else {
        SOURCE_TOKENIZER
    };
    Err(DataError::StaleTokenizer {
        path: run_dir.join(file),
        saved: format!("{saved:?}"),
        asked: format!("{asked:?}"),
        settings_file: TOKENIZER_SETTINGS,
    })
}

/// Encodes one split, from the cache when a valid entry exists; a corrupt entry is replaced.
pub fn prepare_split(
    name: &'static str,
    files: &CorpusFiles,
    tokenizers: &Tokenizers,
    filter: &LengthFilter,
    cache_dir: &Path,
) -> Result<PreparedSplit, DataError> {
    let key = cache::cache_key(files, &tokenizers.source, &tokenizers.target, filter)?;
    let path = cache::cache_path(cache_dir, &key);
    match cache::load(&path, &key) {
        Ok(Some(data)) => {
            return Ok(PreparedSplit {
                name,
                data,
                from_cache: true,
            });
        }
        Ok(None) => {}
        // A corrupt cache entry is never trusted: it is rebuilt below and overwritten.
        Err(DataError::CorruptCache { .. }) => {}
        Err(e) => return Err(e),
    }
    let corpus = read_corpus(files)?;
    let (encoded, filter_stats) =
        EncodedCorpus::encode(&corpus, &tokenizers.source, &tokenizers.target, filter)?;
    let data = CachedSplit {
        corpus: encoded,
        read: corpus.stats,
        filter: filter_stats,
    };
    cache::store(&path, &key, &data)?;
    Ok(PreparedSplit {
        name,
        data,
        from_cache: false,
    })
}
