//! The data pipeline end to end: read the splits, train (or reload) the tokenizer(s), encode
//! with the on-disk cache, and report what was kept and dropped. Corpora are streamed in
//! chunks, so preparation's memory does not grow with the corpus.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crate::bpe_dropout::BpeDropout;
use crate::cache;
use crate::config::{DataConfig, MAX_WEIGHT};
use crate::corpus::{CorpusFiles, PairReader, ParallelCorpus, ReadStats};
use crate::direction::{self, Direction, DirectionSplits, LanguagePair};
use crate::error::DataError;
use crate::marian::{MarianSide, MarianVocabulary};
use crate::mix::CorpusMix;
use crate::progress::{Progress, Silent};
use crate::rng::SplitMix64;
use crate::store::{EncodedCorpus, FilterStats, LengthFilter, Verdict};
use crate::stored::{StoredCorpus, StoredCorpusWriter};
use crate::tokenizer::{SubwordModel, SubwordTokenizer, TokenizerSettings};
use rosetta_sentencepiece::Side as MarianSideOf;
use std::sync::Arc;

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
    /// Loads the tokenizer(s) saved in `dir`, if any: `Ok(None)` when there are none. An
    /// imported MarianMT model's tokenizer ([`MarianVocabulary`]) is found by its
    /// `source.spm` and `vocab.json`.
    pub fn load(dir: &Path) -> Result<Option<Self>, DataError> {
        if MarianVocabulary::is_in(dir) {
            return Ok(Some(Self::marian(MarianVocabulary::load(dir)?)));
        }
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

    /// The tokenizer(s) a user brings (`data.tokenizer.from`): a `tokenizer.json` file, or a
    /// directory that [`load`](Self::load) finds tokenizers in (a run directory, an imported
    /// MarianMT model's).
    pub fn brought(path: &Path) -> Result<Self, DataError> {
        let refuse = |reason: String| DataError::InvalidSetting {
            key: "data.tokenizer.from",
            reason,
        };
        if path.is_file() {
            let tokenizer = SubwordTokenizer::load(path)?;
            return Ok(Self {
                source: tokenizer.clone(),
                target: tokenizer,
                joint: true,
            });
        }
        if !path.is_dir() {
            return Err(refuse(format!("{} does not exist", path.display())));
        }
        Self::load(path)?.ok_or_else(|| {
            refuse(format!(
                "{} holds no tokenizer ({JOINT_TOKENIZER}, {SOURCE_TOKENIZER} and {TARGET_TOKENIZER}, or a MarianTokenizer's source.spm and vocab.json)",
                path.display()
            ))
        })
    }

    /// The two sides of an imported MarianMT tokenizer; joint unless it has separate
    /// vocabularies.
    pub fn marian(vocabulary: MarianVocabulary) -> Self {
        let joint = !vocabulary.tokenizer().separate_vocabs();
        let vocabulary = Arc::new(vocabulary);
        let side = |side| {
            SubwordTokenizer::marian(MarianSide {
                vocabulary: Arc::clone(&vocabulary),
                side,
            })
        };
        Self {
            source: side(MarianSideOf::Source),
            target: side(MarianSideOf::Target),
            joint,
        }
    }

    /// The MarianTokenizer files behind these tokenizers, if they are an imported model's.
    pub fn marian_vocabulary(&self) -> Option<&MarianVocabulary> {
        self.source.as_marian().map(|side| side.vocabulary.as_ref())
    }

    /// The names of the files [`save`](Self::save) writes.
    pub fn file_names(&self) -> Vec<&'static str> {
        match self.marian_vocabulary() {
            Some(vocabulary) => vocabulary.files().iter().map(|(name, _)| *name).collect(),
            None if self.joint => vec![JOINT_TOKENIZER],
            None => vec![SOURCE_TOKENIZER, TARGET_TOKENIZER],
        }
    }

    /// Saves the tokenizer(s) into `dir` under the standard names.
    pub fn save(&self, dir: &Path) -> Result<(), DataError> {
        if let Some(vocabulary) = self.marian_vocabulary() {
            return vocabulary.save(dir);
        }
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

/// One prepared split (or one of several training corpora), encoded on disk.
#[derive(Debug)]
pub struct PreparedSplit {
    /// The split's name (`train`, `train 2`, `valid`, `test`).
    pub name: String,
    /// The encoded pairs, with the counts of reading and filtering in their manifest.
    pub corpus: StoredCorpus,
    /// Whether the encoded pairs came from the cache.
    pub from_cache: bool,
}

impl PreparedSplit {
    /// What reading the files found.
    pub fn read(&self) -> ReadStats {
        self.corpus.manifest().read
    }

    /// What length filtering dropped.
    pub fn filter(&self) -> FilterStats {
        self.corpus.manifest().filter
    }
}

impl fmt::Display for PreparedSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, l) = (self.read(), self.filter());
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
#[derive(Debug)]
pub struct PreparedData {
    /// The tokenizer(s).
    pub tokenizers: Tokenizers,
    /// Whether the tokenizer(s) were trained now (rather than reloaded).
    pub trained_tokenizers: bool,
    /// The training corpora (on disk), one [`PreparedSplit`] each, mixed by weight.
    pub train: CorpusMix,
    /// How each training corpus was prepared (names and counts).
    pub train_splits: Vec<PreparedSplit>,
    /// Validation split, one per direction.
    pub valid: Vec<PreparedSplit>,
    /// Validation pairs in memory, every direction's one after another.
    pub valid_pairs: EncodedCorpus,
    /// Which of `valid_pairs` each direction's are (`en-de`; `None` for a bilingual run).
    pub valid_ranges: Vec<(Option<String>, Range<usize>)>,
    /// Test split, if configured.
    pub test: Option<PreparedSplit>,
    /// The directions of a multilingual run, in configuration order; empty for a bilingual
    /// run.
    pub directions: Vec<LanguagePair>,
}

impl PreparedData {
    /// Training pairs (all corpora).
    pub fn train(&self) -> &CorpusMix {
        &self.train
    }

    /// Validation pairs.
    pub fn valid(&self) -> &EncodedCorpus {
        &self.valid_pairs
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
        let weights: Vec<f64> = self.train.corpora().map(|(_, w)| w).collect();
        for (split, weight) in self.train_splits.iter().zip(&weights) {
            write!(f, "{split}")?;
            if weights.len() > 1 {
                write!(f, ", weight {weight}")?;
            }
            writeln!(f)?;
        }
        for (i, valid) in self.valid.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{valid}")?;
        }
        if let Some(test) = &self.test {
            write!(f, "\n{test}")?;
        }
        Ok(())
    }
}

/// Pairs encoded per chunk: the memory of preparation is a few chunks, whatever the corpus.
pub const CHUNK_PAIRS: usize = 16_384;

/// Prepares the data of a run in `run_dir` (see [`prepare_with`]), reporting no progress.
pub fn prepare(
    config: &DataConfig,
    base_dir: &Path,
    run_dir: &Path,
) -> Result<PreparedData, DataError> {
    prepare_with(config, base_dir, run_dir, &Silent)
}

/// Prepares the data of a run in `run_dir`: tokenizer(s) already saved there are reused (a
/// resumed run keeps its vocabulary); otherwise they are trained on the training corpora (or
/// a sample of them, `tokenizer.sample`) and saved. Every corpus is then encoded into the
/// cache, or found there. Relative corpus paths are resolved against `base_dir`.
///
/// Corpora are streamed: read, tokenized and written in chunks of [`CHUNK_PAIRS`] pairs,
/// never held whole in memory.
pub fn prepare_with(
    config: &DataConfig,
    base_dir: &Path,
    run_dir: &Path,
    progress: &dyn Progress,
) -> Result<PreparedData, DataError> {
    // Settings refused now, before any tokenizer is trained or corpus encoded.
    let splits = config.splits(base_dir)?;
    let test_files = config.test.as_ref().map(|t| t.resolved(base_dir));
    let cache_dir = cache_dir(config, base_dir, run_dir);
    check_dropout(&config.tokenizer)?;
    let tags = target_tags(&splits);

    let settings_path = run_dir.join(TOKENIZER_SETTINGS);
    let (tokenizers, trained_tokenizers) = match Tokenizers::load(run_dir)? {
        Some(tokenizers) => {
            check_tokenizer_settings(run_dir, &settings_path, &config.tokenizer)?;
            (tokenizers, false)
        }
        None => {
            let tokenizers = match &config.tokenizer.from {
                Some(from) => Tokenizers::brought(&base_dir.join(from))?,
                None => {
                    let files: Vec<CorpusFiles> = splits
                        .iter()
                        .flat_map(|s| s.train.iter().map(|(f, _)| f.clone()))
                        .collect();
                    train_tokenizers(&config.tokenizer, &files, &tags, progress)?
                }
            };
            // A brought tokenizer without the run's tags is refused before it is saved.
            tag_ids(&splits, &tokenizers)?;
            tokenizers.save(run_dir)?;
            let json = serde_json::to_string_pretty(&config.tokenizer).map_err(|e| {
                DataError::Tokenizer {
                    context: format!("writing {}", settings_path.display()),
                    reason: e.to_string(),
                }
            })?;
            crate::atomic::write(&settings_path, json.as_bytes())?;
            (tokenizers, true)
        }
    };
    let tag_ids = tag_ids(&splits, &tokenizers).map_err(|e| match (trained_tokenizers, e) {
        (false, DataError::InvalidSetting { key, reason }) => DataError::InvalidSetting {
            key,
            reason: format!(
                "{reason} (the tokenizer saved in {} was trained for other directions: a run keeps its tokenizer, so new target languages need a new run directory)",
                run_dir.display()
            ),
        },
        (_, e) => e,
    })?;

    if config.tokenizer.dropout != 0.0 {
        // A tokenizer reused from the run directory, checked now rather than at the first epoch.
        BpeDropout::new(&tokenizers.source, config.tokenizer.dropout)?;
        BpeDropout::new(&tokenizers.target, config.tokenizer.dropout)?;
    }
    let split = |name: String, files: &CorpusFiles, tag: Option<u32>| {
        prepare_split(
            name,
            files,
            tag,
            &tokenizers,
            &config.filter,
            &cache_dir,
            progress,
        )
    };
    let several = splits.iter().map(|s| s.train.len()).sum::<usize>() > 1;
    let mut train_splits = Vec::new();
    let mut weights = Vec::new();
    let mut pairs_by_direction = Vec::with_capacity(splits.len());
    for (direction, tag) in splits.iter().zip(&tag_ids) {
        let mut pairs = 0;
        let first = train_splits.len();
        for (i, (files, weight)) in direction.train.iter().enumerate() {
            let name = match (direction.label(), several) {
                (Some(label), _) if direction.train.len() > 1 => {
                    format!("train {label} {}", i + 1)
                }
                (Some(label), _) => format!("train {label}"),
                (None, true) => format!("train {}", i + 1),
                (None, false) => "train".to_string(),
            };
            let prepared = split(name, files, *tag)?;
            pairs += prepared.corpus.len();
            weights.push(*weight);
            train_splits.push(prepared);
        }
        check_kept(direction, &train_splits[first..])?;
        pairs_by_direction.push(pairs);
    }
    // Temperature sampling scales each direction's corpus weights (see
    // `direction::temperature_multipliers`).
    if let Some(temperature) = config.temperature {
        let multipliers = direction::temperature_multipliers(&pairs_by_direction, temperature);
        let mut corpus = 0;
        for (direction, multiplier) in splits.iter().zip(multipliers) {
            if !(multiplier.is_finite() && multiplier > 0.0) {
                return Err(DataError::InvalidSetting {
                    key: "data.temperature",
                    reason: format!(
                        "{temperature} gives {} no share of an epoch; raise the temperature",
                        direction.label().unwrap_or_default()
                    ),
                });
            }
            for weight in &mut weights[corpus..corpus + direction.train.len()] {
                *weight *= multiplier;
                if *weight > MAX_WEIGHT {
                    return Err(DataError::InvalidSetting {
                        key: "data.temperature",
                        reason: format!(
                            "{temperature} would offer each pair of {} {multiplier:.1} times per epoch (weights included, at most {MAX_WEIGHT}); lower the temperature or give that direction more pairs",
                            direction.label().unwrap_or_default()
                        ),
                    });
                }
            }
            corpus += direction.train.len();
        }
    }
    let mut mixed = Vec::with_capacity(train_splits.len());
    for (prepared, weight) in train_splits.iter().zip(&weights) {
        // The mix reads the same files through its own handles.
        mixed.push((prepared.corpus.try_clone()?, *weight));
    }
    let mut valid = Vec::with_capacity(splits.len());
    let mut valid_pairs = EncodedCorpus::default();
    let mut valid_ranges = Vec::with_capacity(splits.len());
    for (direction, tag) in splits.iter().zip(&tag_ids) {
        let name = match direction.label() {
            Some(label) => format!("valid {label}"),
            None => "valid".into(),
        };
        let prepared = split(name, &direction.valid, *tag)?;
        // A direction without validation pairs would count as loss 0 in the directions' mean.
        if let Some(label) = direction.label()
            && prepared.corpus.is_empty()
        {
            return Err(DataError::InvalidSetting {
                key: "data.directions.valid",
                reason: format!(
                    "{label}: the validation split ({}) kept no pair after filtering; each direction needs validation pairs",
                    file_names(&direction.valid)
                ),
            });
        }
        let start = valid_pairs.len();
        valid_pairs.extend(&prepared.corpus.load()?);
        valid_ranges.push((direction.label(), start..valid_pairs.len()));
        valid.push(prepared);
    }
    Ok(PreparedData {
        train: CorpusMix::new(mixed)?,
        train_splits,
        valid,
        valid_pairs,
        valid_ranges,
        test: test_files
            .as_ref()
            .map(|t| split("test".into(), t, None))
            .transpose()?,
        directions: splits
            .iter()
            .filter_map(|s| s.direction.as_ref().map(Direction::pair))
            .collect(),
        tokenizers,
        trained_tokenizers,
    })
}

/// The files of a split, for messages: `a.en + a.de`.
fn file_names(files: &CorpusFiles) -> String {
    files
        .paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The target-language tags of the run's directions, each once, in the order of first use;
/// none for a bilingual run.
fn target_tags(splits: &[DirectionSplits]) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for direction in splits.iter().filter_map(|s| s.direction.as_ref()) {
        let tag = direction.target_lang.tag();
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

/// The id of each direction's tag in the source tokenizer (`None` for a bilingual run),
/// refused with the direction's key when the tokenizer lacks it or holds it as text.
fn tag_ids(
    splits: &[DirectionSplits],
    tokenizers: &Tokenizers,
) -> Result<Vec<Option<u32>>, DataError> {
    splits
        .iter()
        .map(|split| {
            split
                .direction
                .as_ref()
                .map(|d| {
                    tokenizers
                        .source
                        .language_tag(d.target_lang.as_str())
                        .map_err(|e| DataError::InvalidSetting {
                            key: "data.directions.target_lang",
                            reason: format!("{}: {e}", d.name()),
                        })
                })
                .transpose()
        })
        .collect()
}

/// Refuses a direction (or a bilingual run) whose training corpora kept no pair; a
/// multilingual run's direction also when its corpora hold none.
fn check_kept(direction: &DirectionSplits, splits: &[PreparedSplit]) -> Result<(), DataError> {
    let offered: usize = splits.iter().map(|s| s.filter().offered).sum();
    let kept: usize = splits.iter().map(|s| s.filter().kept).sum();
    if kept > 0 || (offered == 0 && direction.direction.is_none()) {
        return Ok(());
    }
    if offered == 0 {
        let files: Vec<String> = direction.train.iter().map(|(f, _)| file_names(f)).collect();
        return Err(DataError::InvalidSetting {
            key: "data.directions.train",
            reason: format!(
                "{}: the training corpora ({}) hold no pair; each direction needs training pairs",
                direction.label().unwrap_or_default(),
                files.join(", ")
            ),
        });
    }
    let files: Vec<String> = direction
        .train
        .iter()
        .flat_map(|(f, _)| {
            f.paths()
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    Err(DataError::EmptyTrainingSplit {
        files: files.join(" + "),
        offered,
        too_long: splits.iter().map(|s| s.filter().too_long).sum(),
        bad_ratio: splits.iter().map(|s| s.filter().bad_ratio).sum(),
    })
}

/// Refuses a BPE-dropout probability out of range, or with a Unigram tokenizer.
fn check_dropout(settings: &TokenizerSettings) -> Result<(), DataError> {
    let p = settings.dropout;
    if !(0.0..1.0).contains(&p) {
        return Err(DataError::InvalidSetting {
            key: "data.tokenizer.dropout",
            reason: format!("must be at least 0 and below 1, got {p}"),
        });
    }
    if p > 0.0 && settings.model != SubwordModel::Bpe {
        return Err(DataError::InvalidSetting {
            key: "data.tokenizer.dropout",
            reason:
                "BPE-dropout needs `model = \"bpe\"`: a Unigram tokenizer has no merges to drop"
                    .into(),
        });
    }
    Ok(())
}

/// Where the encoded-corpus cache of a run lives.
fn cache_dir(config: &DataConfig, base_dir: &Path, run_dir: &Path) -> PathBuf {
    match &config.cache_dir {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => base_dir.join(dir),
        None => run_dir.join("cache"),
    }
}

/// Trains the tokenizer(s) on the training corpora, streamed (or on a sample of their pairs).
fn train_tokenizers(
    settings: &TokenizerSettings,
    corpora: &[CorpusFiles],
    tags: &[String],
    progress: &dyn Progress,
) -> Result<Tokenizers, DataError> {
    // A sample is held in memory (`sample` pairs); without one, the corpora are streamed.
    let sample = match settings.sample {
        Some(0) => {
            return Err(DataError::InvalidSetting {
                key: "data.tokenizer.sample",
                reason: "must be at least 1 pair".into(),
            });
        }
        Some(n) => Some(sample_pairs(corpora, n, progress)?),
        None => None,
    };
    // The tags start sources: the source (or joint) tokenizer holds them.
    let train = |side: Side, stage: &str| {
        let tags = match side {
            Side::Both | Side::Source => tags,
            Side::Target => &[],
        };
        train_side(
            settings,
            corpora,
            sample.as_deref(),
            side,
            tags,
            stage,
            progress,
        )
    };
    Ok(if settings.joint {
        let tokenizer = train(Side::Both, "training the tokenizer")?;
        Tokenizers {
            source: tokenizer.clone(),
            target: tokenizer,
            joint: true,
        }
    } else {
        Tokenizers {
            source: train(Side::Source, "training the source tokenizer")?,
            target: train(Side::Target, "training the target tokenizer")?,
            joint: false,
        }
    })
}

/// Trains one tokenizer on `side` of the sampled pairs, or of the corpora streamed.
fn train_side(
    settings: &TokenizerSettings,
    corpora: &[CorpusFiles],
    sample: Option<&[(String, String)]>,
    side: Side,
    tags: &[String],
    stage: &str,
    progress: &dyn Progress,
) -> Result<SubwordTokenizer, DataError> {
    match sample {
        Some(pairs) => {
            let texts = pairs.iter().flat_map(move |(s, t)| match side {
                Side::Both => vec![s.as_str(), t.as_str()],
                Side::Source => vec![s.as_str()],
                Side::Target => vec![t.as_str()],
            });
            SubwordTokenizer::train_with_tags(settings, texts, tags)
        }
        None => {
            let failure = Mutex::new(None);
            let texts = TextStream::new(corpora, side, &failure, progress, stage);
            let trained = SubwordTokenizer::train_with_tags(settings, texts, tags);
            progress.end();
            // A reading error ends the stream early: it, not the half-trained tokenizer, is
            // the result.
            if let Some(error) = failure.into_inner().ok().flatten() {
                return Err(error);
            }
            trained
        }
    }
}

/// Which sentences of a pair a tokenizer is trained on.
#[derive(Debug, Clone, Copy)]
enum Side {
    Both,
    Source,
    Target,
}

/// The sentences of the training corpora one after another, read as they are consumed; the
/// first reading error stops the stream and is kept in `failure`.
struct TextStream<'a> {
    corpora: std::slice::Iter<'a, CorpusFiles>,
    reader: Option<PairReader>,
    side: Side,
    pending: Option<String>,
    failure: &'a Mutex<Option<DataError>>,
    progress: &'a dyn Progress,
    consumed_before: u64,
    pairs: u64,
}

impl<'a> TextStream<'a> {
    fn new(
        corpora: &'a [CorpusFiles],
        side: Side,
        failure: &'a Mutex<Option<DataError>>,
        progress: &'a dyn Progress,
        stage: &str,
    ) -> Self {
        progress.begin(stage, corpora.iter().map(PairReader::total_bytes).sum());
        Self {
            corpora: corpora.iter(),
            reader: None,
            side,
            pending: None,
            failure,
            progress,
            consumed_before: 0,
            pairs: 0,
        }
    }

    fn fail(&mut self, error: DataError) -> Option<String> {
        if let Ok(mut slot) = self.failure.lock() {
            slot.get_or_insert(error);
        }
        self.corpora = [].iter();
        self.reader = None;
        None
    }
}

impl Iterator for TextStream<'_> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if let Some(text) = self.pending.take() {
            return Some(text);
        }
        loop {
            let reader = match &mut self.reader {
                Some(reader) => reader,
                None => {
                    let files = self.corpora.next()?;
                    match PairReader::open(files) {
                        Ok(reader) => self.reader.insert(reader),
                        Err(e) => return self.fail(e),
                    }
                }
            };
            let (mut source, mut target) = (String::new(), String::new());
            match reader.next_pair(&mut source, &mut target) {
                Ok(true) => {
                    self.pairs += 1;
                    if self.pairs.is_multiple_of(8192) {
                        let consumed = reader.consumed().load(Ordering::Relaxed);
                        self.progress
                            .update(self.consumed_before + consumed, self.pairs);
                    }
                    return Some(match self.side {
                        Side::Both => {
                            self.pending = Some(target);
                            source
                        }
                        Side::Source => source,
                        Side::Target => target,
                    });
                }
                Ok(false) => {
                    self.consumed_before += reader.consumed().load(Ordering::Relaxed);
                    self.reader = None;
                    self.progress.update(self.consumed_before, self.pairs);
                }
                Err(e) => return self.fail(e),
            }
        }
    }
}

/// A uniform sample of `n` pairs of the training corpora (reservoir sampling with a fixed
/// seed: the same corpora give the same sample), in corpus order.
fn sample_pairs(
    corpora: &[CorpusFiles],
    n: usize,
    progress: &dyn Progress,
) -> Result<Vec<(String, String)>, DataError> {
    progress.begin(
        "sampling pairs for the tokenizer",
        corpora.iter().map(PairReader::total_bytes).sum(),
    );
    let mut rng = SplitMix64::new(0x5A3D_1E0F_7A11_0C4B);
    let mut reservoir: Vec<(u64, String, String)> = Vec::with_capacity(n.min(1 << 20));
    let mut seen = 0u64;
    let mut consumed_before = 0;
    for files in corpora {
        let mut reader = PairReader::open(files)?;
        let (mut source, mut target) = (String::new(), String::new());
        while reader.next_pair(&mut source, &mut target)? {
            if reservoir.len() < n {
                reservoir.push((
                    seen,
                    std::mem::take(&mut source),
                    std::mem::take(&mut target),
                ));
            } else {
                let j = rng.below(seen + 1) as usize;
                if j < n {
                    reservoir[j] = (
                        seen,
                        std::mem::take(&mut source),
                        std::mem::take(&mut target),
                    );
                }
            }
            seen += 1;
            if seen.is_multiple_of(8192) {
                progress.update(
                    consumed_before + reader.consumed().load(Ordering::Relaxed),
                    seen,
                );
            }
        }
        consumed_before += reader.consumed().load(Ordering::Relaxed);
    }
    progress.update(consumed_before, seen);
    progress.end();
    reservoir.sort_unstable_by_key(|(i, _, _)| *i);
    Ok(reservoir.into_iter().map(|(_, s, t)| (s, t)).collect())
}

/// Refuses tokenizer(s) saved in `run_dir` whose recorded settings differ from `asked`. Files
/// from before the settings were recorded (no settings file) are reused as they are.
fn check_tokenizer_settings(
    run_dir: &Path,
    settings_path: &Path,
    asked: &TokenizerSettings,
) -> Result<(), DataError> {
    let file = if run_dir.join(JOINT_TOKENIZER).is_file() {
        JOINT_TOKENIZER
    } else if MarianVocabulary::is_in(run_dir) {
        rosetta_sentencepiece::SOURCE_SPM
    } else {
        SOURCE_TOKENIZER
    };
    let Ok(text) = std::fs::read_to_string(settings_path) else {
        // A tokenizer nothing explains: not trained by this run, not named by `from`.
        return Err(DataError::UnexplainedTokenizer {
            path: run_dir.join(file),
            settings_file: TOKENIZER_SETTINGS,
        });
    };
    let saved: TokenizerSettings =
        serde_json::from_str(&text).map_err(|e| DataError::Tokenizer {
            context: format!("reading {}", settings_path.display()),
            reason: e.to_string(),
        })?;
    // BPE-dropout changes how training sentences are segmented, not the tokenizer.
    let trained_by = |s: &TokenizerSettings| TokenizerSettings {
        dropout: 0.0,
        ..s.clone()
    };
    if trained_by(&saved) == trained_by(asked) {
        return Ok(());
    }
    Err(DataError::StaleTokenizer {
        path: run_dir.join(file),
        saved: format!("{saved:?}"),
        asked: format!("{asked:?}"),
        settings_file: TOKENIZER_SETTINGS,
    })
}

/// Encodes one split, from the cache when a valid entry exists; a corrupt entry is replaced.
/// `tag`: the id of the language tag that starts every source (a multilingual run's), if any.
pub fn prepare_split(
    name: String,
    files: &CorpusFiles,
    tag: Option<u32>,
    tokenizers: &Tokenizers,
    filter: &LengthFilter,
    cache_dir: &Path,
    progress: &dyn Progress,
) -> Result<PreparedSplit, DataError> {
    let key = cache::cache_key(files, &tokenizers.source, &tokenizers.target, filter, tag)?;
    let entry = cache::entry_dir(cache_dir, &key);
    match cache::load(&entry, &key) {
        Ok(Some(corpus)) => {
            return Ok(PreparedSplit {
                name,
                corpus,
                from_cache: true,
            });
        }
        Ok(None) => {}
        // A corrupt cache entry is never trusted: it is rebuilt below and replaced.
        Err(DataError::CorruptCache { .. }) => {}
        Err(e) => return Err(e),
    }
    let corpus = encode_split(
        &name, files, tag, tokenizers, filter, &entry, &key, progress,
    )?;
    Ok(PreparedSplit {
        name,
        corpus,
        from_cache: false,
    })
}

/// Subword ids of a chunk: every source sentence, every target sentence.
type EncodedChunk = (Vec<Vec<u32>>, Vec<Vec<u32>>);

/// One encoded pair: source ids, target ids.
type EncodedPair = (Vec<u32>, Vec<u32>);

/// Encodes one chunk of pairs: the source and target ids of `chunk`, whose first pair is the
/// `first`-th pair read from its split.
type ChunkEncoder<'a> = dyn Fn(&ParallelCorpus, u64) -> Result<EncodedChunk, DataError> + Sync + 'a;

/// Reads, tokenizes, filters and writes a split chunk by chunk: one thread reads (and
/// decompresses) the next chunk while the tokenizers encode the current one on every core.
#[allow(clippy::too_many_arguments)]
fn encode_split(
    name: &str,
    files: &CorpusFiles,
    tag: Option<u32>,
    tokenizers: &Tokenizers,
    filter: &LengthFilter,
    entry: &Path,
    key: &str,
    progress: &dyn Progress,
) -> Result<StoredCorpus, DataError> {
    let plain = |chunk: &ParallelCorpus, _first: u64| {
        Ok((
            tokenizers.source.encode_batch(&chunk.source)?,
            tokenizers.target.encode_batch(&chunk.target)?,
        ))
    };
    write_split(name, files, &plain, tag, filter, entry, key, progress)
}

/// Streams a split through `encode`, the language tag (placed first in every source, where
/// given) and the length filter into a new stored corpus at `entry`.
#[allow(clippy::too_many_arguments)]
fn write_split(
    name: &str,
    files: &CorpusFiles,
    encode: &ChunkEncoder<'_>,
    tag: Option<u32>,
    filter: &LengthFilter,
    entry: &Path,
    key: &str,
    progress: &dyn Progress,
) -> Result<StoredCorpus, DataError> {
    let mut reader = PairReader::open(files)?;
    let consumed = reader.consumed();
    progress.begin(&format!("encoding {name}"), PairReader::total_bytes(files));
    let mut writer = StoredCorpusWriter::create(entry, key)?;
    let mut stats = FilterStats::default();
    let read = std::thread::scope(|scope| {
        let (chunks, received) =
            std::sync::mpsc::sync_channel::<Result<ParallelCorpus, DataError>>(2);
        let reading = scope.spawn(move || {
            loop {
                let mut chunk = ParallelCorpus::default();
                match reader.next_chunk(CHUNK_PAIRS, &mut chunk) {
                    Ok(true) => {
                        if chunks.send(Ok(chunk)).is_err() {
                            break;
                        }
                    }
                    Ok(false) => break,
                    Err(e) => {
                        let _ = chunks.send(Err(e));
                        break;
                    }
                }
            }
            reader.stats()
        });
        for chunk in received {
            let chunk = chunk?;
            let (mut sources, targets) = encode(&chunk, stats.offered as u64)?;
            if let Some(tag) = tag {
                for source in &mut sources {
                    source.insert(0, tag);
                }
            }
            stats.offered += sources.len();
            for (s, t) in sources.iter().zip(&targets) {
                match filter.judge(s.len(), t.len()) {
                    Verdict::Keep => writer.push(s, t)?,
                    Verdict::TooLong => stats.too_long += 1,
                    Verdict::BadRatio => stats.bad_ratio += 1,
                }
            }
            progress.update(consumed.load(Ordering::Relaxed), stats.offered as u64);
        }
        reading.join().map_err(|_| DataError::Worker {
            what: format!("the thread reading {name} stopped unexpectedly"),
        })
    })?;
    progress.end();
    stats.kept = writer.pairs() as usize;
    writer.finish(read, stats)
}

/// Salt of the generators of BPE-dropout.
const DROPOUT_SALT: u64 = 0xB5E0_D809_0C7A_11E5;

/// The training corpora of epoch `epoch`, segmented with BPE-dropout
/// (`data.tokenizer.dropout`): each pair's segmentation is drawn from `(seed, epoch, pair)`,
/// so an epoch is the same whenever it is encoded (a resumed run sees the same subwords).
/// Each corpus is encoded into the cache (or found there, when the epoch was encoded before
/// an interruption), then filtered by its dropout lengths (so an epoch may keep a few pairs
/// fewer than the plain segmentation); the same run's entries of other epochs are removed.
pub fn dropout_epoch(
    config: &DataConfig,
    base_dir: &Path,
    run_dir: &Path,
    data: &PreparedData,
    seed: u64,
    epoch: u64,
    progress: &dyn Progress,
) -> Result<CorpusMix, DataError> {
    let probability = config.tokenizer.dropout;
    let tokenizers = &data.tokenizers;
    let source = BpeDropout::new(&tokenizers.source, probability)?;
    let target = if tokenizers.joint {
        source.clone()
    } else {
        BpeDropout::new(&tokenizers.target, probability)?
    };
    let cache_dir = cache_dir(config, base_dir, run_dir);
    let streams = SplitMix64::derive(seed ^ DROPOUT_SALT, epoch);
    let splits = config.splits(base_dir)?;
    let tag_ids = tag_ids(&splits, tokenizers)?;
    // Each corpus with its direction's tag, and the weight the mix was prepared with (after any
    // temperature).
    let corpora: Vec<(&CorpusFiles, Option<u32>)> = splits
        .iter()
        .zip(&tag_ids)
        .flat_map(|(split, tag)| split.train.iter().map(move |(files, _)| (files, *tag)))
        .collect();
    let weights: Vec<f64> = data.train.corpora().map(|(_, w)| w).collect();
    let mut mixed = Vec::with_capacity(corpora.len());
    for (i, (((files, tag), weight), plain)) in corpora
        .iter()
        .zip(&weights)
        .zip(&data.train_splits)
        .enumerate()
    {
        let key = &plain.corpus.manifest().key;
        // One series of entries per (corpus, probability, seed): other runs sharing the cache
        // keep theirs.
        let series = format!(
            "{}-dropout-{i}-{probability}-{seed}-epoch-",
            file_name(&cache::entry_dir(&cache_dir, key))
        );
        let name = format!("{series}{epoch}");
        let entry = cache_dir.join(&name);
        let entry_key = format!("{key}:dropout:{i}:{probability}:{seed}:{epoch}");
        let corpus = match cache::load(&entry, &entry_key) {
            Ok(Some(corpus)) => corpus,
            Ok(None) | Err(DataError::CorruptCache { .. }) => {
                // Pairs are numbered across the corpora, so two corpora draw different streams.
                let offset = (i as u64) << 40;
                let encode = |chunk: &ParallelCorpus, first: u64| {
                    encode_with_dropout(chunk, first + offset, &source, &target, &streams)
                };
                let stage = format!("train {} (BPE-dropout, epoch {epoch})", i + 1);
                write_split(
                    &stage,
                    files,
                    &encode,
                    *tag,
                    &config.filter,
                    &entry,
                    &entry_key,
                    progress,
                )?
            }
            Err(e) => return Err(e),
        };
        // This run's other epochs are not needed again.
        if let Ok(entries) = std::fs::read_dir(&cache_dir) {
            for old in entries.flatten() {
                let other = old.file_name().to_string_lossy().into_owned();
                if other.starts_with(&series) && other != name {
                    let _ = std::fs::remove_dir_all(old.path());
                }
            }
        }
        mixed.push((corpus, *weight));
    }
    CorpusMix::new(mixed)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A chunk segmented with dropout on every core: pair `first + j` draws from its own
/// generators (one per side), whatever the chunk or thread it lands in.
fn encode_with_dropout(
    chunk: &ParallelCorpus,
    first: u64,
    source: &BpeDropout,
    target: &BpeDropout,
    streams: &SplitMix64,
) -> Result<EncodedChunk, DataError> {
    let n = chunk.source.len();
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(n.max(1));
    let per_thread = n.div_ceil(threads.max(1)).max(1);
    let encode_range = |start: usize| -> Result<Vec<EncodedPair>, DataError> {
        (start..(start + per_thread).min(n))
            .map(|j| {
                let pair = first + j as u64;
                let mut rng = SplitMix64::new(streams.peek(2 * pair));
                let s = source.encode(&chunk.source[j], &mut rng)?;
                let mut rng = SplitMix64::new(streams.peek(2 * pair + 1));
                let t = target.encode(&chunk.target[j], &mut rng)?;
                Ok((s, t))
            })
            .collect()
    };
    let parts: Vec<Result<Vec<EncodedPair>, DataError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .step_by(per_thread)
            .map(|start| scope.spawn(move || encode_range(start)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(DataError::Worker {
                        what: "a thread segmenting with BPE-dropout stopped unexpectedly".into(),
                    })
                })
            })
            .collect()
    });
    let (mut sources, mut targets) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for part in parts {
        for (s, t) in part? {
            sources.push(s);
            targets.push(t);
        }
    }
    Ok((sources, targets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::tests::corpus;

    #[test]
    fn dropout_segmentations_do_not_depend_on_chunks_or_threads() {
        let settings = TokenizerSettings {
            vocab_size: 330,
            ..TokenizerSettings::default()
        };
        let tokenizer = SubwordTokenizer::train(&settings, corpus().into_iter()).expect("train");
        let dropout = BpeDropout::new(&tokenizer, 0.3).expect("bpe");
        let texts = corpus();
        let chunk = |range: std::ops::Range<usize>| ParallelCorpus {
            source: texts[range.clone()].to_vec(),
            target: texts[range].iter().rev().cloned().collect(),
            ..ParallelCorpus::default()
        };
        let streams = SplitMix64::derive(9, 2);
        let whole =
            encode_with_dropout(&chunk(0..60), 0, &dropout, &dropout, &streams).expect("one chunk");
        // The same pairs in two chunks of other sizes: pair j draws the same either way.
        let mut split = encode_with_dropout(&chunk(0..23), 0, &dropout, &dropout, &streams)
            .expect("first part");
        let rest = encode_with_dropout(&chunk(23..60), 23, &dropout, &dropout, &streams)
            .expect("second part");
        split.0.extend(rest.0);
        split.1.extend(rest.1);
        // The reversed target side of a part is not the whole's: compare the sources, which
        // line up, and check the targets decode to their texts.
        assert_eq!(split.0, whole.0);
        for (ids, text) in split
            .1
            .iter()
            .zip(texts[..23].iter().rev().chain(texts[23..].iter().rev()))
        {
            assert_eq!(tokenizer.decode(ids).expect("decode"), *text);
        }
        // Another epoch draws otherwise.
        let other = encode_with_dropout(
            &chunk(0..60),
            0,
            &dropout,
            &dropout,
            &SplitMix64::derive(9, 3),
        )
        .expect("other epoch");
        assert_ne!(other.0, whole.0);
    }
}
