//! The training loop: batches in a seeded order, forward, label-smoothed loss, backward,
//! gradient accumulation and clipping, Adam with the configured schedule; validation,
//! checkpoints and exact resume.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use rosetta_data::{
    CorpusMix, EncodedCorpus, PairTokens, PreparedData, TranslationBatcher, plan_epoch,
    prepare_with,
};
use rosetta_model::Transformer;
use rosetta_model::burn::module::Module;
use rosetta_model::burn::optim::ModuleOptimizer;
use rosetta_model::burn::tensor::Device;
use rosetta_model::search::{SearchConfig, greedy};

use crate::config::{BestBy, RunConfig};
use crate::data_progress::PreparationBars;
use crate::device::parse_device;
use crate::error::{ConfigError, ResumeConflict, TrainError};
use crate::loss::SequenceCrossEntropy;
use crate::prefetch::GroupReader;
use crate::rng::step_seed;
use crate::run_log::{Accumulated, MetricsRecord, RunLog};
use crate::step::{StepSettings, optimizer_step};
use rosetta_eval::corpus_bleu;
use rosetta_infer::checkpoint::{self, CheckpointState};

use crate::checkpoint::{self as run_checkpoint, TrainingState};

/// Where to start from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// A new run; refused if the run directory already holds checkpoints.
    No,
    /// The newest checkpoint of the run directory.
    Latest,
    /// A given checkpoint directory (or run directory).
    From(PathBuf),
}

/// How to run, beyond the configuration.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Start fresh or resume.
    pub resume: Resume,
    /// Draw progress bars (off in tests and when output is not a terminal).
    pub progress: bool,
    /// Set from outside (Ctrl-C) to save a checkpoint and stop after the current step.
    pub stop: Arc<AtomicBool>,
    /// Directory that relative corpus paths are resolved against.
    pub base_dir: PathBuf,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            resume: Resume::No,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            base_dir: PathBuf::from("."),
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `max_steps` reached.
    MaxSteps,
    /// `max_epochs` reached.
    MaxEpochs,
    /// Validation loss stopped improving for `patience` validations.
    EarlyStopping,
    /// Interrupted (Ctrl-C); a checkpoint was saved.
    Interrupted,
    /// `max_minutes` of training spent.
    TimeBudget,
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct TrainSummary {
    /// Optimizer steps taken in total (including before a resume).
    pub steps: u64,
    /// Epoch the run ended in.
    pub epoch: u64,
    /// Best validation loss (per-token negative log-likelihood).
    pub best_valid_loss: Option<f64>,
    /// Directory of the best checkpoint, if kept.
    pub best_checkpoint: Option<PathBuf>,
    /// Directory of the last checkpoint.
    pub last_checkpoint: PathBuf,
    /// Why the run ended.
    pub stop: StopReason,
    /// What the data pipeline did.
    pub data_summary: String,
}

/// Prepares the data of a run (tokenizer training, encoding into the cache), as `train`
/// does first, with progress bars if `options.progress`; returns the prepared data and one
/// line per stage that ran (what it did, pairs per second).
pub fn prepare_data(
    config: &RunConfig,
    options: &TrainOptions,
) -> Result<(PreparedData, Vec<String>), TrainError> {
    let bars = PreparationBars::new(options.progress);
    std::fs::create_dir_all(&config.output_dir).map_err(TrainError::io(&config.output_dir))?;
    let data = prepare_with(&config.data, &options.base_dir, &config.output_dir, &bars)?;
    Ok((data, bars.finished()))
}

/// Trains as configured. The run directory receives the resolved configuration, the
/// tokenizer(s), checkpoints, `metrics.jsonl` and `train.log`.
pub fn train(config: &RunConfig, options: &TrainOptions) -> Result<TrainSummary, TrainError> {
    let run_dir = config.output_dir.clone();
    std::fs::create_dir_all(&run_dir).map_err(TrainError::io(&run_dir))?;
    let device = parse_device(&config.training.device)?;

    let resume_from = match &options.resume {
        Resume::No => {
            if !checkpoint::list(&run_dir)?.is_empty() {
                return Err(TrainError::resume(&run_dir, ResumeConflict::RunExists));
            }
            None
        }
        Resume::Latest => Some(checkpoint::resolve(&run_dir)?),
        Resume::From(path) => Some(checkpoint::resolve(path)?),
    };
    let resumed_state = resume_from
        .as_deref()
        .map(run_checkpoint::read_state)
        .transpose()?;
    if let Some(state) = &resumed_state
        && state.checkpoint.tokenizer != config.data.tokenizer
    {
        return Err(TrainError::resume(
            resume_from.clone().unwrap_or_default(),
            ResumeConflict::TokenizerSettings {
                saved: state.checkpoint.tokenizer.clone(),
                now: config.data.tokenizer.clone(),
            },
        ));
    }

    let run_settings = config.run_settings()?;
    if let (Some(state), Some(dir)) = (&resumed_state, &resume_from)
        && let Some(saved) = &state.run_settings
    {
        for (key, now) in &run_settings {
            let before = saved.get(key).unwrap_or(&serde_json::Value::Null);
            if !same_setting(before, now) {
                return Err(TrainError::resume(
                    dir,
                    ResumeConflict::RunSetting {
                        key: key.clone(),
                        before: before.clone(),
                        now: now.clone(),
                    },
                ));
            }
        }
    }

    let mut log = RunLog::open(&run_dir, config.training.tensorboard)?;
    let (data, stages) = prepare_data(config, options)?;
    for line in &stages {
        say(&log.line(line)?, options.progress);
    }
    let data_summary = data.to_string();
    for line in data_summary.lines() {
        say(&log.line(line)?, options.progress);
    }
    let fingerprint = data.tokenizers.fingerprint()?;
    let model_config = config.model_config(
        data.tokenizers.source.vocab_size(),
        data.tokenizers.target.vocab_size(),
    )?;
    let start = config.start.as_ref();
    if let Some(start) = start
        && start.state.tokenizer_fingerprint != fingerprint
    {
        return Err(ConfigError::new(
            "model.from",
            format!(
                "{} was trained with another tokenizer than the one in {}",
                start.checkpoint.display(),
                run_dir.display()
            ),
        )
        .in_file(run_dir.join("config.toml")));
    }
    // The language pair: the starting model's, else the training corpus's file extensions.
    let languages = match start {
        Some(start) => (
            start.state.source_lang.clone(),
            start.state.target_lang.clone(),
        ),
        None => config
            .data
            .train
            .as_ref()
            .and_then(|train| {
                train
                    .resolved(&options.base_dir)
                    .first()
                    .and_then(|(files, _)| files.language_pair())
            })
            .unzip(),
    };

    let train_device = device.clone().autodiff();
    train_device.seed(config.training.seed);
    let mut adam = config.training.optimizer.adam().init();
    let mut ema = None;
    let (mut model, mut state) = match (&resume_from, resumed_state) {
        (Some(dir), Some(state)) => {
            if state.checkpoint.tokenizer_fingerprint != fingerprint {
                return Err(TrainError::resume(
                    dir,
                    ResumeConflict::TokenizerFiles {
                        files: tokenizer_files(&run_dir),
                    },
                ));
            }
            if state.checkpoint.model != model_config {
                return Err(TrainError::resume(
                    dir,
                    ResumeConflict::ModelShape {
                        saved: state.checkpoint.model.clone(),
                        now: model_config.clone(),
                    },
                ));
            }
            let mut model = checkpoint::load_model(dir, &state.checkpoint, &train_device)?;
            if config.embeddings().is_some_and(|e| e.freeze) {
                model = crate::embeddings::freeze(model);
            }
            adam = run_checkpoint::load_optimizer(dir, &state, adam)?;
            ema = checkpoint::load_ema(dir, &state.checkpoint, &device)?;
            say(
                &log.line(&format!(
                    "resumed from {} at step {}, epoch {}, batch {}",
                    dir.display(),
                    state.checkpoint.step,
                    state.epoch,
                    state.batch_in_epoch
                ))?,
                options.progress,
            );
            (model, state)
        }
        _ => {
            let mut model = match start {
                Some(start) => {
                    let mut model = checkpoint::load_translation_weights(
                        &start.checkpoint,
                        &start.state,
                        &model_config,
                        &train_device,
                    )?;
                    // A fixed logits bias stays fixed, as Hugging Face keeps its buffer.
                    model.output_bias = model.output_bias.map(|bias| bias.set_require_grad(false));
                    say(
                        &log.line(&format!(
                            "starting from {} (step {}), with its tokenizer from {}",
                            start.checkpoint.display(),
                            start.state.step,
                            start.tokenizer_dir.display()
                        ))?,
                        options.progress,
                    );
                    model
                }
                None => model_config.init(&train_device)?,
            };
            if let Some(settings) = config.embeddings() {
                let (initialised, report) = crate::embeddings::apply(
                    model,
                    settings,
                    &data.tokenizers,
                    &options.base_dir,
                    config.training.seed,
                )?;
                model = initialised;
                for line in report {
                    say(&log.line(&line)?, options.progress);
                }
            }
            let state = TrainingState {
                checkpoint: CheckpointState {
                    format: checkpoint::FORMAT,
                    step: 0,
                    model: model_config.clone(),
                    tokenizer: config.data.tokenizer.clone(),
                    tokenizer_fingerprint: fingerprint,
                    files: Default::default(),
                    decoding: start.and_then(|s| s.state.decoding.clone()),
                    source_lang: languages.0.clone(),
                    target_lang: languages.1.clone(),
                    directions: data.directions.clone(),
                },
                epoch: 0,
                batch_in_epoch: 0,
                seed: config.training.seed,
                best_valid_loss: None,
                best_valid_bleu: None,
                validations_without_improvement: 0,
                training_seconds: 0.0,
                run_settings: Some(run_settings.clone()),
            };
            say(
                &log.line(&format!("model: {} parameters", model.num_params()))?,
                options.progress,
            );
            (model, state)
        }
    };

    // A run resumed from a checkpoint older than the recorded settings records them from now on.
    state
        .run_settings
        .get_or_insert_with(|| run_settings.clone());

    // Written only now, once every resume check has passed: a refused resume leaves the run
    // directory as it was.
    let config_path = run_dir.join("config.toml");
    std::fs::write(&config_path, config.resolved_toml(&model_config)?)
        .map_err(TrainError::io(&config_path))?;

    // The moving average of the weights starts as a copy of them (also when a run that kept
    // none is resumed with `ema_decay`: refused by the run-settings check for runs that
    // recorded their settings).
    if config.training.ema_decay.is_some() && ema.is_none() {
        ema = Some(model.valid());
    }
    let mut run = Run {
        config,
        data: &data,
        device,
        train_device,
        run_dir: run_dir.clone(),
        base_dir: options.base_dir.clone(),
        loss: SequenceCrossEntropy::new(model_config.pad_id, config.training.label_smoothing),
        eval_loss: SequenceCrossEntropy::new(model_config.pad_id, 0.0),
        batcher: TranslationBatcher::new(model_config.special_tokens()),
        log,
        progress: options.progress,
        last_checkpoint: None,
        last_saved: None,
        ema: if config.training.ema_decay.is_some() {
            ema
        } else {
            None
        },
    };
    let stop = run.run(&mut model, &mut adam, &mut state, &options.stop)?;
    let best_checkpoint = run_dir.join("best");
    let summary = TrainSummary {
        steps: state.checkpoint.step,
        epoch: state.epoch,
        best_valid_loss: state.best_valid_loss,
        best_checkpoint: best_checkpoint.is_dir().then_some(best_checkpoint),
        last_checkpoint: run
            .last_checkpoint
            .clone()
            .unwrap_or_else(|| checkpoint::step_dir(&run_dir, state.checkpoint.step)),
        stop,
        data_summary,
    };
    let best = summary
        .best_valid_loss
        .map(|l| format!("best validation loss {l:.4} (perplexity {:.2})", l.exp()))
        .unwrap_or_else(|| "no validation yet".into());
    let line = run.log.line(&format!(
        "stopped ({stop:?}) at step {}, epoch {}; {best}; last checkpoint {}{}",
        summary.steps,
        summary.epoch,
        summary.last_checkpoint.display(),
        summary
            .best_checkpoint
            .as_ref()
            .map(|b| format!(", best {}", b.display()))
            .unwrap_or_default()
    ))?;
    say(&line, options.progress);
    Ok(summary)
}

/// The tokenizer file(s) of a run directory, for messages.
fn tokenizer_files(run_dir: &std::path::Path) -> String {
    use rosetta_data::pipeline::{JOINT_TOKENIZER, SOURCE_TOKENIZER, TARGET_TOKENIZER};
    let joint = run_dir.join(JOINT_TOKENIZER);
    if joint.is_file() {
        joint.display().to_string()
    } else {
        format!(
            "{} and {}",
            run_dir.join(SOURCE_TOKENIZER).display(),
            run_dir.join(TARGET_TOKENIZER).display()
        )
    }
}

/// Whether two recorded settings are the same: equal, floating-point numbers up to the last
/// bits that a round trip through `state.json`'s decimal text can change.
fn same_setting(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        // Integers (seeds, sizes) exactly; only floats within their decimal round trip.
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                _ => x == y,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_setting(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_setting(v, w)))
        }
        _ => a == b,
    }
}

fn say(line: &str, progress: bool) {
    if progress {
        eprintln!("{line}");
    }
}

struct Run<'a> {
    config: &'a RunConfig,
    data: &'a PreparedData,
    device: Device,
    train_device: Device,
    run_dir: PathBuf,
    /// What relative corpus paths are relative to.
    base_dir: PathBuf,
    loss: SequenceCrossEntropy,
    eval_loss: SequenceCrossEntropy,
    /// Frames and pads batches with the model's special tokens.
    batcher: TranslationBatcher,
    log: RunLog,
    progress: bool,
    last_checkpoint: Option<PathBuf>,
    /// The state last written, to avoid writing the same checkpoint twice.
    last_saved: Option<TrainingState>,
    /// The moving average of the weights (`training.ema_decay`), on the evaluation device.
    ema: Option<Transformer>,
}

impl Run<'_> {
    fn run(
        &mut self,
        model: &mut Transformer,
        optimizer: &mut ModuleOptimizer,
        state: &mut TrainingState,
        stop: &AtomicBool,
    ) -> Result<StopReason, TrainError> {
        let t = &self.config.training;
        // Borrowed from the data, not from `self`: the prefetching thread reads it while the
        // loop below changes `self`.
        let data: &PreparedData = self.data;
        let train = data.train();
        let d_model = state.checkpoint.model.d_model;
        // The training time of earlier sessions; this session's is added after every step.
        let (session, earlier_seconds) = (Instant::now(), state.training_seconds);
        let budget_seconds = t.max_minutes.map(|minutes| minutes * 60.0);
        loop {
            if let Some(max) = t.epoch_limit()
                && state.epoch >= max
            {
                self.save(model, optimizer, state)?;
                return Ok(StopReason::MaxEpochs);
            }
            // A run resumed at (or past) a limit it already reached takes no further step.
            if let Some(max) = t.max_steps
                && state.checkpoint.step >= max
            {
                self.save(model, optimizer, state)?;
                return Ok(StopReason::MaxSteps);
            }
            if let Some(budget) = budget_seconds
                && state.training_seconds >= budget
            {
                self.save(model, optimizer, state)?;
                return Ok(StopReason::TimeBudget);
            }
            // With BPE-dropout, every epoch has its own segmentation of the training corpora.
            let resegmented;
            let train = if self.config.data.tokenizer.dropout > 0.0 {
                resegmented = self.dropout_epoch(state)?;
                &resegmented
            } else {
                train
            };
            let plan = rosetta_data::plan(train, self.config.data.batch, state.seed, state.epoch)?;
            let bar = self.bar(plan.len() as u64, state);
            let mut window = Accumulated::default();
            let mut window_start = Instant::now();
            let mut last_lr = 0.0;
            let mut last_norm = 0.0;
            // The pairs of the coming steps, read here or, with `data.prefetch`, on a thread
            // that stays that many steps ahead.
            let stopped = std::thread::scope(|scope| -> Result<Option<StopReason>, TrainError> {
                let mut groups = GroupReader::start(
                    scope,
                    train,
                    &plan,
                    state.batch_in_epoch as usize,
                    t.accumulate,
                    self.config.data.prefetch,
                );
                while (state.batch_in_epoch as usize) < plan.len() {
                    let pairs = groups.next_group()?;
                    let step = state.checkpoint.step + 1;
                    let (sums, norm, next) =
                        self.step(model.clone(), optimizer, &pairs, step, d_model)?;
                    *model = next;
                    if let (Some(decay), Some(ema)) = (t.ema_decay, self.ema.take()) {
                        let decay = crate::ema::warmed_decay(decay, step);
                        self.ema = Some(crate::ema::update(ema, &model.valid(), decay));
                    }
                    last_lr = t.schedule.learning_rate(d_model, step);
                    last_norm = norm;
                    state.checkpoint.step = step;
                    state.batch_in_epoch += pairs.len() as u64;
                    state.training_seconds = earlier_seconds + session.elapsed().as_secs_f64();
                    window.loss += sums.loss;
                    window.nll += sums.nll;
                    window.tokens += sums.tokens;
                    window.correct += sums.correct;
                    bar.set_position(state.batch_in_epoch);

                    if step.is_multiple_of(t.log_every) {
                        let seconds = window_start.elapsed().as_secs_f64().max(1e-9);
                        let record = MetricsRecord::Train {
                            step,
                            epoch: state.epoch,
                            loss: window.mean_loss(),
                            perplexity: window.mean_nll().exp(),
                            accuracy: window.accuracy(),
                            learning_rate: last_lr,
                            grad_norm: last_norm,
                            target_tokens_per_second: window.tokens as f64 / seconds,
                            seconds: Some(state.training_seconds),
                        };
                        self.log.record(&record)?;
                        bar.set_message(format!(
                            "loss {:.3} ppl {:.2} acc {:.1}% lr {:.2e} {:.0} tok/s",
                            window.mean_loss(),
                            window.mean_nll().exp(),
                            100.0 * window.accuracy(),
                            last_lr,
                            window.tokens as f64 / seconds
                        ));
                        window = Accumulated::default();
                        window_start = Instant::now();
                    }
                    let mut early = false;
                    if t.validate_every > 0 && step.is_multiple_of(t.validate_every) {
                        early = self.validate(model, state, &bar)?;
                    }
                    if self.config.checkpoint.every > 0
                        && step.is_multiple_of(self.config.checkpoint.every)
                    {
                        self.save(model, optimizer, state)?;
                    }
                    if early {
                        bar.finish_and_clear();
                        self.save(model, optimizer, state)?;
                        return Ok(Some(StopReason::EarlyStopping));
                    }
                    if let Some(max) = t.max_steps
                        && step >= max
                    {
                        bar.finish_and_clear();
                        self.save(model, optimizer, state)?;
                        return Ok(Some(StopReason::MaxSteps));
                    }
                    if let Some(budget) = budget_seconds
                        && state.training_seconds >= budget
                    {
                        bar.finish_and_clear();
                        self.save(model, optimizer, state)?;
                        let line = self.log.line(&format!(
                            "time budget of {:.1} minutes spent at step {step}: checkpoint saved",
                            budget / 60.0
                        ))?;
                        say(&line, self.progress);
                        return Ok(Some(StopReason::TimeBudget));
                    }
                    if stop.load(Ordering::SeqCst) {
                        bar.finish_and_clear();
                        self.save(model, optimizer, state)?;
                        let line = self
                            .log
                            .line(&format!("interrupted at step {step}: checkpoint saved"))?;
                        say(&line, self.progress);
                        return Ok(Some(StopReason::Interrupted));
                    }
                }
                Ok(None)
            })?;
            if let Some(reason) = stopped {
                return Ok(reason);
            }
            bar.finish_and_clear();
            let line = self.log.line(&format!(
                "epoch {} done at step {} (lr {last_lr:.2e}, grad norm {last_norm:.3})",
                state.epoch, state.checkpoint.step
            ))?;
            say(&line, self.progress);
            state.epoch += 1;
            state.batch_in_epoch = 0;
            let early =
                t.validate_at_epoch_end && self.validate(model, state, &ProgressBar::hidden())?;
            if early || self.config.checkpoint.at_epoch_end {
                self.save(model, optimizer, state)?;
            }
            if early {
                return Ok(StopReason::EarlyStopping);
            }
        }
    }

    /// The training corpora segmented with BPE-dropout for the epoch of `state`.
    fn dropout_epoch(&mut self, state: &TrainingState) -> Result<CorpusMix, TrainError> {
        let bars = PreparationBars::new(self.progress);
        let data: &PreparedData = self.data;
        let corpora = rosetta_data::pipeline::dropout_epoch(
            &self.config.data,
            &self.base_dir,
            &self.run_dir,
            data,
            state.seed,
            state.epoch,
            &bars,
        )?;
        for line in bars.finished() {
            say(&self.log.line(&line)?, self.progress);
        }
        Ok(corpora)
    }

    /// One optimizer step over the batches of pairs `group`; returns the sums for metrics, the
    /// gradient norm before clipping, and the updated model.
    fn step(
        &self,
        model: Transformer,
        optimizer: &mut ModuleOptimizer,
        group: &[Vec<PairTokens>],
        step: u64,
        d_model: usize,
    ) -> Result<(Accumulated, f64, Transformer), TrainError> {
        let t = &self.config.training;
        // The loss of the step is normalised by the target tokens of the whole group.
        let group_tokens: usize = group.iter().flatten().map(|p| p.target.len() + 1).sum();
        // Dropout masks are a pure function of (seed, step, batch): resuming replays them.
        let batches = group.iter().enumerate().map(|(j, pairs)| {
            (
                step_seed(t.seed, step, j as u64),
                self.batcher.batch_of(pairs, &self.train_device),
            )
        });
        let settings = StepSettings {
            step,
            learning_rate: t.schedule.learning_rate(d_model, step),
            clip_norm: t.clip_norm,
            group_tokens,
        };
        let out = optimizer_step(
            model,
            optimizer,
            &self.loss,
            &self.train_device,
            batches,
            settings,
        )?;
        Ok((out.sums, out.grad_norm, out.model))
    }

    /// Validates; records the result, keeps the best checkpoint; returns whether early
    /// stopping triggers.
    fn validate(
        &mut self,
        model: &Transformer,
        state: &mut TrainingState,
        bar: &ProgressBar,
    ) -> Result<bool, TrainError> {
        let valid = self.data.valid();
        if valid.is_empty() {
            return Ok(false);
        }
        // With a moving average of the weights, the average is what is validated (and what
        // translation will use).
        let eval_model = match &self.ema {
            Some(ema) => ema.clone(),
            None => model.valid(),
        };
        // Each direction's pairs planned and summed apart (a bilingual run is one range).
        let lengths = valid.framed_lengths();
        let mut per_direction = Vec::with_capacity(self.data.valid_ranges.len());
        for (label, range) in &self.data.valid_ranges {
            let plan = plan_epoch(&lengths[range.clone()], self.config.data.batch, 0, 0)?;
            let mut sums = Accumulated::default();
            for indices in &plan {
                let indices: Vec<u32> = indices.iter().map(|&i| i + range.start as u32).collect();
                let batch = self.batcher.batch_indices(valid, &indices, &self.device)?;
                let logits = eval_model.forward(batch.source, batch.target_input);
                let out = self.eval_loss.forward(logits, batch.target_output);
                let nll = out.sum.into_scalar::<f32>() as f64;
                sums.nll += nll;
                sums.tokens += batch.target_tokens as u64;
                sums.correct += out.correct.into_scalar::<i64>() as u64;
            }
            per_direction.push((label.clone(), sums));
        }
        // A multilingual run's loss and accuracy are the directions' means, each direction
        // counting once (so `best/` is chosen on their average).
        let directions: std::collections::BTreeMap<String, f64> = per_direction
            .iter()
            .filter_map(|(label, sums)| label.clone().map(|l| (l, sums.mean_nll())))
            .collect();
        let count = per_direction.len().max(1) as f64;
        let (loss, accuracy) = if directions.is_empty() {
            let sums = per_direction.first().map(|(_, s)| *s).unwrap_or_default();
            (sums.mean_nll(), sums.accuracy())
        } else {
            (
                per_direction.iter().map(|(_, s)| s.mean_nll()).sum::<f64>() / count,
                per_direction.iter().map(|(_, s)| s.accuracy()).sum::<f64>() / count,
            )
        };
        // Greedy BLEU on each direction's first `bleu_sentences` pairs; a multilingual run's
        // BLEU is the directions' mean.
        let mut directions_bleu = std::collections::BTreeMap::new();
        let bleu = if self.config.training.bleu_sentences > 0 {
            let mut scores = Vec::with_capacity(self.data.valid_ranges.len());
            for (label, range) in &self.data.valid_ranges {
                let score = self.greedy_bleu(&eval_model, valid, range.clone())?;
                if let Some(label) = label {
                    directions_bleu.insert(label.clone(), score);
                }
                scores.push(score);
            }
            Some(scores.iter().sum::<f64>() / scores.len().max(1) as f64)
        } else {
            None
        };
        let loss_improved = state.best_valid_loss.is_none_or(|b| loss < b);
        let bleu_improved = bleu.is_some_and(|b| state.best_valid_bleu.is_none_or(|best| b > best));
        if loss_improved {
            state.best_valid_loss = Some(loss);
        }
        if bleu_improved {
            state.best_valid_bleu = bleu;
        }
        let best = match self.config.training.best_by {
            BestBy::Loss => loss_improved,
            BestBy::Bleu => bleu_improved,
        };
        if best {
            state.validations_without_improvement = 0;
        } else {
            state.validations_without_improvement += 1;
        }
        self.log.record(&MetricsRecord::Valid {
            step: state.checkpoint.step,
            epoch: state.epoch,
            loss,
            perplexity: loss.exp(),
            accuracy,
            bleu,
            best,
            seconds: Some(state.training_seconds),
            directions: directions.clone(),
            directions_bleu: directions_bleu.clone(),
        })?;
        let by_direction = if directions.is_empty() {
            String::new()
        } else {
            let each: Vec<String> = directions
                .iter()
                .map(|(d, l)| format!("{d} {l:.4}"))
                .collect();
            format!(" (mean of {})", each.join(", "))
        };
        let bleu_by_direction = if directions_bleu.is_empty() {
            String::new()
        } else {
            let each: Vec<String> = directions_bleu
                .iter()
                .map(|(d, b)| format!("{d} {b:.2}"))
                .collect();
            format!(" (mean of {})", each.join(", "))
        };
        let line = self.log.line(&format!(
            "validation at step {}: loss {loss:.4}{by_direction}, perplexity {:.2}, accuracy {:.1}%{}{}",
            state.checkpoint.step,
            loss.exp(),
            100.0 * accuracy,
            bleu.map(|b| format!(", greedy BLEU {b:.2}{bleu_by_direction}"))
                .unwrap_or_default(),
            if best { " (best)" } else { "" }
        ))?;
        if self.progress {
            if bar.is_hidden() {
                eprintln!("{line}");
            } else {
                bar.println(&line);
            }
        }
        if best && self.config.checkpoint.keep_best {
            run_checkpoint::save(
                &self.run_dir.join("best"),
                model,
                None,
                self.ema.as_ref(),
                state,
            )?;
        }
        Ok(self
            .config
            .training
            .patience
            .is_some_and(|p| state.validations_without_improvement >= p))
    }

    /// Greedy BLEU of the first `bleu_sentences` validation pairs against their detokenized
    /// references.
    fn greedy_bleu(
        &self,
        model: &Transformer,
        valid: &EncodedCorpus,
        range: std::ops::Range<usize>,
    ) -> Result<f64, TrainError> {
        let n = self.config.training.bleu_sentences.min(range.len());
        let config = SearchConfig::new(self.batcher.tokens).with_beam_size(1);
        let tokenizers = &self.data.tokenizers;
        let mut hyps = Vec::with_capacity(n);
        let mut refs = Vec::with_capacity(n);
        let indices: Vec<u32> = (range.start as u32..(range.start + n) as u32).collect();
        for chunk in indices.chunks(64) {
            let batch = self.batcher.batch_indices(valid, chunk, &self.device)?;
            for h in greedy(model, batch.source, &config)? {
                hyps.push(tokenizers.target.decode(&h.tokens)?);
            }
            for &i in chunk {
                refs.push(tokenizers.target.decode(valid.target.get(i as usize))?);
            }
        }
        Ok(corpus_bleu(&hyps, &[refs])?.score)
    }

    fn save(
        &mut self,
        model: &Transformer,
        optimizer: &ModuleOptimizer,
        state: &TrainingState,
    ) -> Result<(), TrainError> {
        // The end of an epoch, a step interval and a stop can all ask for a checkpoint of the
        // same unchanged state: write it once.
        if self.last_saved.as_ref() == Some(state) {
            return Ok(());
        }
        let dir = checkpoint::step_dir(&self.run_dir, state.checkpoint.step);
        run_checkpoint::save(&dir, model, Some(optimizer), self.ema.as_ref(), state)?;
        run_checkpoint::prune(&self.run_dir, self.config.checkpoint.keep_last)?;
        self.last_checkpoint = Some(dir);
        self.last_saved = Some(state.clone());
        Ok(())
    }

    fn bar(&self, len: u64, state: &TrainingState) -> ProgressBar {
        if !self.progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(len);
        let style = ProgressStyle::with_template(
            "epoch {prefix} [{bar:30}] {pos}/{len} batches, ETA {eta} | {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(state.epoch.to_string());
        bar.set_position(state.batch_in_epoch);
        bar
    }
}

#[cfg(test)]
mod tests {
    use super::same_setting;
    use serde_json::json;

    #[test]
    fn settings_compare_integers_exactly_and_floats_up_to_their_round_trip() {
        assert!(same_setting(
            &json!(0.98_f64),
            &json!(0.980_000_000_000_000_1_f64)
        ));
        assert!(!same_setting(&json!(0.98), &json!(0.99)));
        // Two seeds above 2^53 that one f64 cannot tell apart.
        let (a, b) = (9_007_199_254_740_993_u64, 9_007_199_254_740_992_u64);
        assert!(!same_setting(&json!(a), &json!(b)));
        assert!(same_setting(
            &json!({"x": [1, 2.5]}),
            &json!({"x": [1, 2.5]})
        ));
        assert!(!same_setting(&json!({"x": [1, 2.5]}), &json!({"x": [1]})));
        assert!(!same_setting(&json!({"x": 1}), &json!({"y": 1})));
    }
}
