//! The run configuration: one TOML file with sections `[model]`, `[data]`, `[training]`,
//! `[checkpoint]` and the run directory. Unknown keys, wrong types and missing keys are errors
//! naming the key and the file; every other value has a documented default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rosetta_data::DataConfig;
use rosetta_model::burn::optim::AdamConfig;
use rosetta_model::{ModelError, TransformerConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::embeddings::PretrainedEmbeddings;
use crate::error::{ConfigError, TrainError};
use crate::model_section::{ModelSection, take_tokenizer_keys};
use crate::schedule::LrSchedule;
use crate::start::{Start, resolve_model_table, resolve_tokenizer_table};

/// Everything a training run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The run directory: resolved config, tokenizer(s), checkpoints, logs, metrics.
    pub output_dir: PathBuf,
    /// The model's architecture, without the vocabulary sizes and padding id (they come from
    /// the tokenizer; see [`model_config`](Self::model_config)), and its starting vectors.
    #[serde(default)]
    pub model: ModelSection,
    /// Corpora, tokenizer, filtering, batching.
    pub data: DataConfig,
    /// Optimisation.
    #[serde(default)]
    pub training: TrainingConfig,
    /// Checkpointing.
    #[serde(default)]
    pub checkpoint: CheckpointConfig,
    /// The model a fine-tuning run starts from (`model.from`), found when the configuration
    /// was read.
    #[serde(skip)]
    pub start: Option<Start>,
}

/// The `[training]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainingConfig {
    /// Device to train on (`flex`; see `rosetta info` for what this build has).
    pub device: String,
    /// One seed for initialisation, dropout and data order.
    pub seed: u64,
    /// Stop after this many optimizer steps (if set).
    pub max_steps: Option<u64>,
    /// Stop after this many epochs (if set). When none of this, `max_steps` and `max_minutes`
    /// is set, 10.
    pub max_epochs: Option<u64>,
    /// Stop at the first optimizer step that ends after this many minutes of training, counted
    /// over every session of the run (a resumed run continues the same budget); data
    /// preparation and model loading are not counted (if set).
    pub max_minutes: Option<f64>,
    /// Also write the metrics as TensorBoard event files, into `RUN/tensorboard/`.
    pub tensorboard: bool,
    /// Keep an exponential moving average of the weights with this decay (e.g. 0.999), updated
    /// after every optimizer step, validated and translated with (if set).
    pub ema_decay: Option<f64>,
    /// Label smoothing of the loss (0 = plain masked cross-entropy).
    pub label_smoothing: f64,
    /// Batches whose gradients are summed before each optimizer step.
    pub accumulate: usize,
    /// Clip the global gradient norm to this value (as PyTorch's `clip_grad_norm_`); 0 = off.
    pub clip_norm: f64,
    /// Adam's hyper-parameters.
    pub optimizer: OptimizerConfig,
    /// The learning-rate schedule.
    pub schedule: LrSchedule,
    /// Validate every this many steps (and at each epoch end unless `validate_at_epoch_end`
    /// is false); 0 = only at epoch ends (never, with `validate_at_epoch_end = false`).
    pub validate_every: u64,
    /// Also validate at the end of each epoch (fairseq's default). Turn off to spend only the
    /// step-based validations, e.g. for a wall-clock budget shared with a reference run.
    pub validate_at_epoch_end: bool,
    /// Stop when the validation score chosen by `best_by` has not improved for this many
    /// validations (if set).
    pub patience: Option<u64>,
    /// Write a metrics line every this many steps.
    pub log_every: u64,
    /// Greedy-decode this many validation sentences at each validation and report their BLEU
    /// (0 = no BLEU during training).
    pub bleu_sentences: usize,
    /// What picks the best checkpoint and drives early stopping: `loss` or `bleu`.
    pub best_by: BestBy,
}

/// The validation metric that selects the best checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BestBy {
    /// Lowest validation loss.
    Loss,
    /// Highest validation BLEU (needs `bleu_sentences > 0`).
    Bleu,
}

impl TrainingConfig {
    /// The epoch limit in force: `max_epochs`, or 10 when no limit (steps, epochs, minutes) is
    /// set.
    pub fn epoch_limit(&self) -> Option<u64> {
        match (self.max_epochs, self.max_steps, self.max_minutes) {
            (Some(epochs), _, _) => Some(epochs),
            (None, None, None) => Some(10),
            (None, _, _) => None,
        }
    }
}

impl Default for TrainingConfig {
    fn default() -> Self {
        Self {
            device: "flex".into(),
            seed: 1,
            max_steps: None,
            max_epochs: None,
            max_minutes: None,
            tensorboard: false,
            ema_decay: None,
            label_smoothing: 0.1,
            accumulate: 1,
            clip_norm: 0.0,
            optimizer: OptimizerConfig::default(),
            schedule: LrSchedule::default(),
            validate_every: 1000,
            validate_at_epoch_end: true,
            patience: None,
            log_every: 50,
            bleu_sentences: 0,
            best_by: BestBy::Loss,
        }
    }
}

/// Adam, with the paper's betas and epsilon by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OptimizerConfig {
    /// First-moment decay.
    pub beta1: f32,
    /// Second-moment decay.
    pub beta2: f32,
    /// Numerical-stability term (Burn's own default, 1e-5, is too large for Transformers).
    pub epsilon: f32,
}

impl OptimizerConfig {
    /// Burn's Adam with these settings (no weight decay, no gradient clipping: the trainer
    /// clips the global norm itself).
    pub fn adam(&self) -> AdamConfig {
        AdamConfig::new()
            .with_beta_1(self.beta1)
            .with_beta_2(self.beta2)
            .with_epsilon(self.epsilon)
    }
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        Self {
            beta1: 0.9,
            beta2: 0.98,
            epsilon: 1e-9,
        }
    }
}

/// The `[checkpoint]` section.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointConfig {
    /// Save every this many optimizer steps (and at each epoch end unless `at_epoch_end` is
    /// false); 0 = only at epoch ends. The step a run stops at is always saved.
    pub every: u64,
    /// Also save at the end of each epoch.
    pub at_epoch_end: bool,
    /// How many of the latest checkpoints to keep.
    pub keep_last: usize,
    /// Keep a copy of the checkpoint with the best validation score (`best_by`) in `best/`.
    pub keep_best: bool,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            every: 1000,
            at_epoch_end: true,
            keep_last: 3,
            keep_best: true,
        }
    }
}

/// Command-line overrides of the few values users change per run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--device`.
    pub device: Option<String>,
    /// `--output`.
    pub output_dir: Option<PathBuf>,
    /// `--max-steps`.
    pub max_steps: Option<u64>,
    /// `--max-epochs`.
    pub max_epochs: Option<u64>,
    /// `--max-minutes`.
    pub max_minutes: Option<f64>,
}

/// A time budget must be a positive, finite number of minutes.
fn check_minutes(minutes: f64) -> Result<(), String> {
    if minutes.is_finite() && minutes > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "must be a positive number of minutes, got {minutes}"
        ))
    }
}

impl RunConfig {
    /// Reads and validates `path`; relative paths in it are relative to the current directory.
    pub fn load(path: &Path) -> Result<Self, TrainError> {
        let text = std::fs::read_to_string(path).map_err(TrainError::io(path))?;
        Self::parse(&text, path)
    }

    /// Parses configuration text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, TrainError> {
        let error = |e: ConfigError| e.in_file(path);
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| error(ConfigError::unkeyed(e.to_string())))?;
        let mut start = None;
        if let Some(toml::Value::Table(model)) = table.get_mut("model") {
            start = resolve_model_table(model).map_err(error)?;
            if start.is_none() {
                take_tokenizer_keys(model, rosetta_data::SPECIAL_TOKEN_IDS.pad).map_err(error)?;
            }
        }
        if let (Some(start), Some(toml::Value::Table(data))) = (&start, table.get_mut("data")) {
            resolve_tokenizer_table(data, start).map_err(error)?;
        }
        let mut config: RunConfig = serde_path_to_error::deserialize(table).map_err(|e| {
            let key = e.path().to_string();
            error(ConfigError::at(&key, e.into_inner().to_string()))
        })?;
        config.start = start;
        config.validate().map_err(error)?;
        // Check the model section now, with placeholder vocabulary sizes, so that a typo fails
        // before any data is read.
        let model = config.model_config(8, 8).map_err(|e| match e {
            TrainError::Model(ModelError::InvalidConfig { key, reason }) => {
                error(ConfigError::new(format!("model.{key}"), reason))
            }
            other => other,
        })?;
        let filter = &config.data.filter;
        for (key, value) in [
            ("max_source_tokens", filter.max_source_tokens),
            ("max_target_tokens", filter.max_target_tokens),
        ] {
            if value > model.max_positions {
                return Err(error(ConfigError::new(
                    format!("data.filter.{key}"),
                    format!(
                        "({value}) exceeds `model.max_positions` ({}): the model could not take such sentences; lower the filter or raise max_positions",
                        model.max_positions
                    ),
                )));
            }
        }
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let t = &self.training;
        let refuse = |key: &str, reason: String| Err(ConfigError::new(key, reason));
        if t.accumulate == 0 {
            return refuse("training.accumulate", "must be at least 1".into());
        }
        if !(0.0..1.0).contains(&t.label_smoothing) {
            return refuse(
                "training.label_smoothing",
                format!("must be in [0, 1), got {}", t.label_smoothing),
            );
        }
        if t.clip_norm < 0.0 || t.clip_norm.is_nan() {
            return refuse(
                "training.clip_norm",
                format!("must be >= 0, got {}", t.clip_norm),
            );
        }
        if let Some(minutes) = t.max_minutes {
            check_minutes(minutes).map_err(|e| ConfigError::new("training.max_minutes", e))?;
        }
        if let Some(decay) = t.ema_decay
            && !(decay > 0.0 && decay < 1.0)
        {
            return refuse(
                "training.ema_decay",
                format!("must be between 0 and 1 (exclusive), got {decay}"),
            );
        }
        if t.log_every == 0 {
            return refuse("training.log_every", "must be at least 1".into());
        }
        if t.best_by == BestBy::Bleu && t.bleu_sentences == 0 {
            return refuse(
                "training.best_by",
                "\"bleu\" needs `training.bleu_sentences` > 0".into(),
            );
        }
        if t.validate_every == 0 && !t.validate_at_epoch_end && t.patience.is_some() {
            return refuse("training.patience", "early stopping needs validation, but `training.validate_every` = 0 and `training.validate_at_epoch_end` = false turn it off".into());
        }
        if self.checkpoint.keep_last == 0 {
            return refuse("checkpoint.keep_last", "must be at least 1".into());
        }
        // The data section's own rules (train/valid or directions, the temperature, weights),
        // checked now rather than when the data are prepared.
        match self.data.splits(Path::new("")) {
            Ok(_) => {}
            Err(rosetta_data::DataError::InvalidSetting { key, reason }) => {
                return refuse(key, reason);
            }
            Err(other) => return Err(ConfigError::unkeyed(other.to_string())),
        }
        self.training.schedule.validate()?;
        self.check_decay_covers_training()
    }

    /// A cosine decay must last as long as training: past `steps` the rate stays at `min` (0
    /// for the quickstart), and every further step would be spent for nothing.
    fn check_decay_covers_training(&self) -> Result<(), ConfigError> {
        match (self.training.schedule, self.training.max_steps) {
            (LrSchedule::Cosine { steps, .. }, Some(max_steps)) if max_steps > steps => {
                Err(ConfigError::new(
                    "training.schedule.steps",
                    format!(
                        "({steps}) is below `training.max_steps` ({max_steps}, from the file or --max-steps): the cosine decay would end {} steps before training does; set `steps` to the number of steps trained",
                        max_steps - steps
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Applies command-line overrides; refused if they make the configuration inconsistent
    /// (a `--max-steps` beyond the end of a cosine decay).
    pub fn apply(&mut self, overrides: &Overrides) -> Result<(), TrainError> {
        if let Some(device) = &overrides.device {
            self.training.device = device.clone();
        }
        if let Some(dir) = &overrides.output_dir {
            self.output_dir = dir.clone();
        }
        if let Some(steps) = overrides.max_steps {
            self.training.max_steps = Some(steps);
        }
        if let Some(epochs) = overrides.max_epochs {
            self.training.max_epochs = Some(epochs);
        }
        if let Some(minutes) = overrides.max_minutes {
            check_minutes(minutes)
                .map_err(|reason| ConfigError::unkeyed(reason).in_file("--max-minutes"))?;
            self.training.max_minutes = Some(minutes);
        }
        self.check_decay_covers_training()
            .map_err(|e| e.in_file("--max-steps"))
    }

    /// The model's [`TransformerConfig`] for the given vocabulary sizes (the tokenizer's) and
    /// the data pipeline's padding id, validated.
    pub fn model_config(
        &self,
        source_vocab: usize,
        target_vocab: usize,
    ) -> Result<TransformerConfig, TrainError> {
        let config = match &self.start {
            Some(start) => {
                let config = start.model_config(&self.model);
                // Placeholder sizes (8, 8) check the section before any data is read.
                let placeholder = (source_vocab, target_vocab) == (8, 8);
                if !placeholder
                    && (config.source_vocab_size, config.target_vocab_size)
                        != (source_vocab, target_vocab)
                {
                    return Err(ConfigError::new(
                        "model.from",
                        format!(
                            "the model has vocabularies of {} and {}, the tokenizer {source_vocab} and {target_vocab}",
                            config.source_vocab_size, config.target_vocab_size
                        ),
                    )
                    .in_file(self.output_dir.join("config.toml")));
                }
                config
            }
            None => self.model.transformer(
                source_vocab,
                target_vocab,
                rosetta_data::SPECIAL_TOKEN_IDS.pad as usize,
            ),
        };
        config.validate()?;
        Ok(config)
    }

    /// The pretrained vectors of `[model.embeddings]`, if any.
    pub fn embeddings(&self) -> Option<&PretrainedEmbeddings> {
        self.model.embeddings.as_ref()
    }

    /// The settings that shape the training trajectory, by dotted key: a run resumed under
    /// other values would not be the run it continues (see [`TrainingState::run_settings`]).
    ///
    /// [`TrainingState::run_settings`]: crate::TrainingState::run_settings
    pub fn run_settings(&self) -> Result<BTreeMap<String, Value>, TrainError> {
        let t = &self.training;
        let value = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| {
                ConfigError::unkeyed(e.to_string()).in_file(self.output_dir.join("config.toml"))
            })
        };
        Ok(BTreeMap::from([
            ("training.seed".into(), value(serde_json::to_value(t.seed))?),
            (
                "training.accumulate".into(),
                value(serde_json::to_value(t.accumulate))?,
            ),
            (
                "training.label_smoothing".into(),
                value(serde_json::to_value(t.label_smoothing))?,
            ),
            (
                "training.clip_norm".into(),
                value(serde_json::to_value(t.clip_norm))?,
            ),
            (
                "training.optimizer".into(),
                value(serde_json::to_value(t.optimizer))?,
            ),
            (
                "training.schedule".into(),
                value(serde_json::to_value(t.schedule))?,
            ),
            (
                "training.ema_decay".into(),
                value(serde_json::to_value(t.ema_decay))?,
            ),
            (
                "model.embeddings".into(),
                value(serde_json::to_value(self.embeddings()))?,
            ),
            (
                "data.filter".into(),
                value(serde_json::to_value(self.data.filter))?,
            ),
            (
                "data.batch".into(),
                value(serde_json::to_value(self.data.batch))?,
            ),
            // Null for a single corpus (as runs from before multi-corpus training recorded).
            (
                "data.train.weights".into(),
                value(serde_json::to_value(
                    self.data.train.as_ref().and_then(|t| t.weights()),
                ))?,
            ),
            // Null for a bilingual run (as runs from before multilingual training recorded):
            // each direction with its corpus weights, and the temperature over them.
            (
                "data.directions".into(),
                value(serde_json::to_value(
                    (!self.data.directions.is_empty()).then(|| {
                        self.data
                            .directions
                            .iter()
                            .map(|d| (d.name(), d.train.weights()))
                            .collect::<Vec<_>>()
                    }),
                ))?,
            ),
            (
                "data.temperature".into(),
                value(serde_json::to_value(self.data.temperature))?,
            ),
        ]))
    }

    /// The configuration as TOML, every default filled in, headed by the vocabulary sizes of
    /// `model` (the model configuration it resolved to), which the tokenizer decided.
    pub fn resolved_toml(&self, model: &TransformerConfig) -> Result<String, TrainError> {
        Ok(format!(
            "# The resolved configuration of this run (every default filled in).\n# Vocabulary sizes, from the tokenizer: source {}, target {}.\n{}",
            model.source_vocab_size,
            model.target_vocab_size,
            self.to_toml()?
        ))
    }

    /// The configuration as TOML, as written into the run directory.
    pub fn to_toml(&self) -> Result<String, TrainError> {
        toml::to_string_pretty(self).map_err(|e| {
            ConfigError::unkeyed(e.to_string()).in_file(self.output_dir.join("config.toml"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosetta_data::{BatchSize, Bucketing};

    const MINIMAL: &str = r#"
output_dir = "runs/x"
[data]
train = { source = "a.en", target = "a.fr" }
valid = { source = "b.en", target = "b.fr" }
"#;

    fn parse(text: &str) -> Result<RunConfig, TrainError> {
        RunConfig::parse(text, Path::new("test.toml"))
    }

    #[test]
    fn defaults_fill_everything_else() {
        let config = parse(MINIMAL).expect("valid");
        assert_eq!(config.training, TrainingConfig::default());
        assert_eq!(config.checkpoint, CheckpointConfig::default());
        let model = config.model_config(100, 120).expect("model");
        assert_eq!(
            (
                model.d_model,
                model.source_vocab_size,
                model.target_vocab_size
            ),
            (512, 100, 120)
        );
    }

    #[test]
    fn multilingual_settings_are_checked_when_read() {
        let text = |temperature: &str, target: &str| {
            format!(
                "output_dir = \"runs/x\"\n[data]\ntemperature = {temperature}\n[[data.directions]]\nsource_lang = \"en\"\ntarget_lang = \"{target}\"\ntrain = {{ source = \"a.en\", target = \"a.de\" }}\nvalid = {{ source = \"b.en\", target = \"b.de\" }}\n"
            )
        };
        let config = parse(&text("5.0", "de")).expect("valid");
        assert_eq!(config.data.directions[0].name(), "en-de");
        assert_eq!(config.data.temperature, Some(5.0));
        for (text, expected) in [
            (text("0.0", "de"), "data.temperature"),
            (text("5.0", "German"), "target_lang"),
            (
                MINIMAL.replace("[data]\n", "[data]\ntemperature = 2.0\n"),
                "data.temperature",
            ),
            (
                MINIMAL
                    .replace("[data]\n", "[data]\ndirections = []\n")
                    .replace("train = { source = \"a.en\", target = \"a.fr\" }\n", ""),
                "data.train",
            ),
        ] {
            let err = parse(&text).expect_err(expected).to_string();
            assert!(
                err.contains(expected) && err.contains("test.toml"),
                "{expected}: {err}"
            );
        }
    }

    #[test]
    fn errors_name_the_key_and_the_file() {
        for (extra, key) in [
            ("[training]\nlearning_rate = 3\n", "learning_rate"),
            ("[training]\nseed = \"one\"\n", "training.seed"),
            ("[model]\nd_modle = 8\n", "d_modle"),
            ("[model]\ndropout = \"high\"\n", "model.dropout"),
            (
                "[model]\nembedding_init = \"Xavier\"\n",
                "model.embedding_init",
            ),
            (
                "[model]\nsource_vocab_size = 8\n",
                "model.source_vocab_size",
            ),
            (
                "[data.batch]\nby = \"tokens\"\nmax_tokens = 100\nbucket = \"longest\"\n",
                "data.batch",
            ),
            ("[checkpoint]\nkeep_last = 0\n", "checkpoint.keep_last"),
            ("[training]\nbest_by = \"bleu\"\n", "training.best_by"),
            (
                "[training]\nvalidate_every = 0\nvalidate_at_epoch_end = false\npatience = 3\n",
                "training.patience",
            ),
            ("colour = 1\n", "colour"),
            (
                "[model]\nmax_positions = 100\n",
                "data.filter.max_source_tokens",
            ),
        ] {
            let text = if extra.starts_with('[') {
                format!("{MINIMAL}{extra}")
            } else {
                format!("{extra}{MINIMAL}")
            };
            let err = parse(&text).expect_err(key).to_string();
            assert!(
                err.contains(key) && err.contains("test.toml"),
                "{key}: {err}"
            );
        }
        let err = parse("output_dir = \"x\"\n")
            .expect_err("no data")
            .to_string();
        assert!(err.contains("data"), "{err}");
    }

    #[test]
    fn token_batches_take_a_bucketing() {
        let text = format!("{MINIMAL}[data.batch]\nby = \"tokens\"\nmax_tokens = 100\n");
        let unset = parse(&text).expect("valid");
        let longer = parse(&format!("{text}bucket = \"longer_side\"\n")).expect("valid");
        let bucket = |c: &RunConfig| match c.data.batch {
            BatchSize::Tokens { bucket, .. } => bucket,
            BatchSize::Sentences { .. } => panic!("token batches"),
        };
        assert_eq!(bucket(&unset), Bucketing::BothSides);
        assert_eq!(bucket(&longer), Bucketing::LongerSide);
    }

    #[test]
    fn a_cosine_decay_shorter_than_training_is_refused() {
        let cosine = format!(
            "{MINIMAL}[training]\nmax_steps = 600\nschedule = {{ kind = \"cosine\", peak = 0.004, warmup = 100, steps = 500 }}\n"
        );
        let error = parse(&cosine)
            .expect_err("decay ends before training")
            .to_string();
        assert!(
            error.contains("training.schedule.steps") && error.contains("600"),
            "{error}"
        );
        let fits = cosine.replace("max_steps = 600", "max_steps = 500");
        let mut config = parse(&fits).expect("valid");
        let longer = Overrides {
            device: None,
            output_dir: None,
            max_steps: Some(501),
            max_epochs: None,
            max_minutes: None,
        };
        let error = config
            .apply(&longer)
            .expect_err("--max-steps beyond the decay")
            .to_string();
        assert!(
            error.contains("--max-steps") && error.contains("501"),
            "{error}"
        );
        let shorter = Overrides {
            max_steps: Some(200),
            ..longer
        };
        assert!(config.apply(&shorter).is_ok());
    }

    #[test]
    fn overrides_apply() {
        let mut config = parse(MINIMAL).expect("valid");
        config
            .apply(&Overrides {
                device: Some("ndarray".into()),
                output_dir: Some("elsewhere".into()),
                max_steps: Some(7),
                max_epochs: None,
                max_minutes: None,
            })
            .expect("consistent");
        assert_eq!(config.training.device, "ndarray");
        assert_eq!(config.output_dir, PathBuf::from("elsewhere"));
        assert_eq!(config.training.max_steps, Some(7));
        assert_eq!(config.training.max_epochs, None);
        assert_eq!(config.training.epoch_limit(), None);
        assert_eq!(
            parse(MINIMAL).expect("valid").training.epoch_limit(),
            Some(10)
        );
    }

    #[test]
    fn a_time_budget_is_a_limit_and_must_be_positive() {
        let mut config = parse(MINIMAL).expect("valid");
        let budget = Overrides {
            max_minutes: Some(55.5),
            ..Overrides::default()
        };
        config.apply(&budget).expect("consistent");
        assert_eq!(config.training.max_minutes, Some(55.5));
        // A time budget alone is the limit: no default of 10 epochs.
        assert_eq!(config.training.epoch_limit(), None);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let error = parse(MINIMAL)
                .expect("valid")
                .apply(&Overrides {
                    max_minutes: Some(bad),
                    ..Overrides::default()
                })
                .expect_err("refused")
                .to_string();
            assert!(
                error.contains("--max-minutes") && error.contains("positive"),
                "{error}"
            );
        }
        let error = parse(&format!("{MINIMAL}[training]\nmax_minutes = 0\n"))
            .expect_err("refused")
            .to_string();
        assert!(error.contains("key `training.max_minutes`"), "{error}");
    }

    #[test]
    fn resolved_config_round_trips() {
        let config =
            parse(&format!("{MINIMAL}[model]\nd_model = 64\nn_heads = 4\n")).expect("valid");
        let text = config.to_toml().expect("toml");
        assert_eq!(parse(&text).expect("reparse"), config);
    }
}
