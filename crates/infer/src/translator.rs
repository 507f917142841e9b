//! [`Translator`]: translating with a trained checkpoint: load the model and its tokenizer(s), encode,
//! search (greedy or beam), decode. Empty lines give empty translations; lines longer than the
//! model's positions are cut and reported, never a crash.

use std::path::{Path, PathBuf};

use rosetta_data::{LanguagePair, Tokenizers};
use rosetta_model::burn::tensor::Device;
use rosetta_model::framing::{Frame, frame_tensor};
use rosetta_model::search::{SearchConfig, beam_search_ensemble, greedy_ensemble};
use rosetta_model::{Quantization, Transformer, TransformerConfig};

use crate::checkpoint;
use crate::error::{CheckpointFault, EnsembleMismatch, InferError};
use crate::options::TranslateOptions;

/// One translated line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// The best translation, detokenized.
    pub text: String,
    /// All requested hypotheses (best first): text and length-penalised score.
    pub n_best: Vec<(String, f32)>,
    /// Source subword ids fed to the model (after any cut), without EOS.
    pub source_tokens: Vec<u32>,
    /// Output subword ids of the best hypothesis.
    pub target_tokens: Vec<u32>,
    /// Whether the source was cut to fit the model's positions.
    pub truncated: bool,
}

/// A model and its tokenizer(s), ready to translate.
#[derive(Debug, Clone)]
pub struct Translator {
    /// The model, in evaluation mode.
    pub model: Transformer,
    /// Source and target tokenizers.
    pub tokenizers: Tokenizers,
    /// The model's configuration.
    pub config: TransformerConfig,
    /// Training steps behind the weights.
    pub step: u64,
    /// Source language code, where known (recorded in the checkpoint or bundle: from the
    /// training corpus's file names, or given to `rosetta import-hf`).
    pub source_lang: Option<String>,
    /// Target language code, where known (as `source_lang`).
    pub target_lang: Option<String>,
    /// The directions of a multilingual model (see [`Translator::target_prefix`]); empty for a
    /// bilingual one.
    pub directions: Vec<LanguagePair>,
    /// How this model decodes when the caller does not say otherwise (an imported model's
    /// generation settings; [`TranslateOptions::default`] for Rosetta's own).
    pub decoding: TranslateOptions,
    /// The checkpoint or bundle directory loaded; `None` for a model loaded from bytes.
    pub checkpoint: Option<PathBuf>,
    /// Further models translating with `model` as an ensemble (their log-probabilities averaged
    /// at every step; see [`Translator::join`]); empty for a single model.
    pub ensemble: Vec<Transformer>,
    device: Device,
}

/// The checkpoint a path names: a checkpoint directory itself; for a run directory its `best/`
/// checkpoint if any, else its newest step checkpoint.
pub fn find_checkpoint(path: &Path) -> Result<PathBuf, InferError> {
    if path.join("state.json").is_file() {
        return Ok(path.to_path_buf());
    }
    if path.join("best/state.json").is_file() {
        return Ok(path.join("best"));
    }
    checkpoint::resolve(path)
}

/// The languages a checkpoint, run directory or bundle records (as [`Translator::load`] would
/// report them), read without loading the weights.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedLanguages {
    /// The source language of a bilingual model, where known.
    pub source: Option<String>,
    /// The target language of a bilingual model, where known.
    pub target: Option<String>,
    /// A multilingual model's directions; empty for a bilingual model.
    pub directions: Vec<LanguagePair>,
}

/// The languages `path` (a checkpoint, run directory or bundle) records.
pub fn recorded_languages(path: &Path) -> Result<RecordedLanguages, InferError> {
    if crate::bundle::is_bundle(path) {
        let config = crate::bundle::read_config(path)?;
        return Ok(RecordedLanguages {
            source: config.source_lang,
            target: config.target_lang,
            directions: config.directions,
        });
    }
    let state = checkpoint::read_state(&find_checkpoint(path)?)?;
    Ok(RecordedLanguages {
        source: state.source_lang,
        target: state.target_lang,
        directions: state.directions,
    })
}

/// The tokenizer(s) of a checkpoint: from the first of the checkpoint directory and its two
/// parents (the run directory) that has them.
pub fn find_tokenizers(checkpoint: &Path) -> Result<Tokenizers, InferError> {
    for dir in checkpoint.ancestors().take(3) {
        if let Some(tokenizers) = Tokenizers::load(dir)? {
            return Ok(tokenizers);
        }
    }
    Err(InferError::checkpoint(
        checkpoint,
        CheckpointFault::NoTokenizer,
    ))
}

/// Cross-attention of one translated sentence: who looked where.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionMap {
    /// The source subwords (and `</s>`), as text pieces.
    pub source_labels: Vec<String>,
    /// The output subwords (and `</s>`), as text pieces.
    pub output_labels: Vec<String>,
    /// Row-major `[outputs, sources]`: row `t` is the attention of the decoder position that
    /// predicted output `t`.
    pub weights: Vec<f32>,
    /// The translation.
    pub translation: String,
}

impl Translator {
    /// Saves the tokenizer(s) into `dir` under their standard names (what [`Translator::load`]
    /// and every export look for); returns the files written.
    pub fn save_tokenizers(&self, dir: &Path) -> Result<Vec<PathBuf>, InferError> {
        self.tokenizers.save(dir)?;
        Ok(self
            .tokenizers
            .file_names()
            .into_iter()
            .map(|name| dir.join(name))
            .collect())
    }

    /// Translates `text` greedily, then returns the cross-attention of decoder layer `layer`
    /// (default: the last) for head `head` (default: the mean over heads).
    pub fn attention(
        &self,
        text: &str,
        layer: Option<usize>,
        head: Option<usize>,
    ) -> Result<AttentionMap, InferError> {
        let greedy = TranslateOptions {
            beam: 1,
            batch_size: 1,
            ..TranslateOptions::default()
        };
        let translation = self.translate_sentence(text, &greedy)?;
        self.cross_attention(&translation, layer, head)
    }

    /// The cross-attention behind `translation` (one sentence this translator produced, by any
    /// search): decoder layer `layer` (default: the last), head `head` (default: the mean over
    /// heads), one row per output subword and `</s>`, one column per source subword and `</s>`.
    pub fn cross_attention(
        &self,
        translation: &Translation,
        layer: Option<usize>,
        head: Option<usize>,
    ) -> Result<AttentionMap, InferError> {
        if translation.source_tokens.is_empty() {
            return Err(InferError::Request(
                "nothing to plot for an empty sentence".into(),
            ));
        }
        let layers = self.model.decoder.layers.len();
        let layer = layer.unwrap_or(layers.saturating_sub(1));
        if layer >= layers {
            return Err(InferError::Request(format!(
                "layer {layer} asked for; the decoder has {layers} (0 to {})",
                layers - 1
            )));
        }
        let tokens = &self.config.special_tokens();
        let source = frame_tensor(
            &[&translation.source_tokens],
            Frame::Eos,
            tokens,
            &self.device,
        );
        let target_input = frame_tensor(
            &[&translation.target_tokens],
            Frame::Bos,
            tokens,
            &self.device,
        );
        let encoded = self.model.encode(source);
        let out = self.model.decode_hidden(target_input, &encoded, true);
        let weights =
            out.cross_attention.get(layer).cloned().ok_or_else(|| {
                InferError::Request("the model returned no attention weights".into())
            })?;
        let [_, heads, rows, cols] = weights.dims();
        let map = match head {
            Some(h) if h >= heads => {
                return Err(InferError::Request(format!(
                    "head {h} asked for; layers have {heads} (0 to {})",
                    heads - 1
                )));
            }
            Some(h) => weights
                .slice([0..1, h..h + 1, 0..rows, 0..cols])
                .reshape([rows, cols]),
            None => weights.mean_dim(1).reshape([rows, cols]),
        };
        let piece =
            |tokenizer: &rosetta_data::SubwordTokenizer, id: u32| -> Result<String, InferError> {
                if id == tokens.eos {
                    return Ok("</s>".into());
                }
                let text = tokenizer.decode(&[id])?;
                Ok(if text.trim().is_empty() {
                    format!("[{id}]")
                } else {
                    text.trim().to_string()
                })
            };
        let mut source_labels = Vec::with_capacity(cols);
        for &id in translation.source_tokens.iter().chain(&[tokens.eos]) {
            source_labels.push(piece(&self.tokenizers.source, id)?);
        }
        let mut output_labels = Vec::with_capacity(rows);
        for &id in translation.target_tokens.iter().chain(&[tokens.eos]) {
            output_labels.push(piece(&self.tokenizers.target, id)?);
        }
        Ok(AttentionMap {
            source_labels,
            output_labels,
            weights: map
                .into_data()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .map_err(|e| InferError::Request(format!("{e:?}")))?,
            translation: translation.text.clone(),
        })
    }

    /// A translator of `model` (built from `config`) with `tokenizers`, on `device`.
    pub fn new(
        model: Transformer,
        tokenizers: Tokenizers,
        config: TransformerConfig,
        device: &Device,
    ) -> Self {
        Self {
            model,
            tokenizers,
            config,
            step: 0,
            source_lang: None,
            target_lang: None,
            directions: Vec::new(),
            decoding: TranslateOptions::default(),
            checkpoint: None,
            ensemble: Vec::new(),
            device: device.clone(),
        }
    }

    /// Loads the checkpoint named by `path` (see [`find_checkpoint`]), or the model bundle in
    /// directory `path` (see [`crate::bundle`]), onto `device`, checking that the tokenizer(s)
    /// beside it are the ones it was trained with.
    pub fn load(path: &Path, device: &Device) -> Result<Self, InferError> {
        if crate::bundle::is_bundle(path) {
            return crate::bundle::load_dir(path, device);
        }
        let checkpoint = find_checkpoint(path)?;
        let state = checkpoint::read_state(&checkpoint)?;
        let tokenizers = find_tokenizers(&checkpoint)?;
        if tokenizers.fingerprint()? != state.tokenizer_fingerprint {
            return Err(InferError::checkpoint(
                checkpoint,
                CheckpointFault::ForeignTokenizer,
            ));
        }
        let model = checkpoint::load_translation_model(&checkpoint, &state, device)?;
        Ok(Self {
            model,
            tokenizers,
            decoding: state.decoding.unwrap_or_default(),
            config: state.model,
            step: state.step,
            source_lang: state.source_lang,
            target_lang: state.target_lang,
            directions: state.directions,
            checkpoint: Some(checkpoint),
            ensemble: Vec::new(),
            device: device.clone(),
        })
    }

    /// Adds `other`'s model (and its own ensemble) to this translator's ensemble: from now on
    /// every search averages the models' log-probabilities at each step, each model with its own
    /// key/value cache (fairseq's `--path a:b`, Marian's `--models`). Refused unless `other`
    /// was trained with the same tokenizer(s). Cross-attention maps stay the first model's.
    pub fn join(&mut self, other: Translator) -> Result<(), InferError> {
        let refuse = |mismatch: EnsembleMismatch| {
            InferError::checkpoint(
                other.checkpoint.clone().unwrap_or_default(),
                CheckpointFault::EnsembleMismatch(mismatch),
            )
        };
        if other.tokenizers.fingerprint()? != self.tokenizers.fingerprint()? {
            return Err(refuse(EnsembleMismatch::Tokenizers));
        }
        for (side, ours, theirs) in [
            ("source", &self.source_lang, &other.source_lang),
            ("target", &self.target_lang, &other.target_lang),
        ] {
            if let (Some(ours), Some(theirs)) = (ours, theirs)
                && ours != theirs
            {
                return Err(refuse(EnsembleMismatch::Language {
                    side,
                    theirs: theirs.clone(),
                    ours: ours.clone(),
                }));
            }
        }
        let sorted = |directions: &[LanguagePair]| {
            let mut sorted = directions.to_vec();
            sorted.sort();
            sorted
        };
        if sorted(&other.directions) != sorted(&self.directions) {
            return Err(refuse(EnsembleMismatch::Directions {
                theirs: names(&other.directions),
                ours: names(&self.directions),
            }));
        }
        if other.model.target_vocab_size() != self.model.target_vocab_size() {
            return Err(refuse(EnsembleMismatch::Vocabulary {
                theirs: other.model.target_vocab_size(),
                ours: self.model.target_vocab_size(),
            }));
        }
        self.ensemble.push(other.model);
        self.ensemble.extend(other.ensemble);
        Ok(())
    }

    /// Makes the models multiply as `quantization` says: [`Quantization::Int8`] gives every
    /// model of the ensemble its int8 form ([`Transformer::quantize_int8`]); refused, naming the
    /// option, on a device where int8 does not run (the GPU ones).
    pub fn quantize(&mut self, quantization: Quantization) -> Result<(), InferError> {
        match quantization {
            Quantization::Float32 => Ok(()),
            Quantization::Int8 => {
                if !rosetta_model::int8::runs_on(&self.device) {
                    return Err(InferError::InvalidOption {
                        option: "quantize",
                        reason: format!(
                            "int8 runs on the CPU devices (flex, ndarray), not on {:?}",
                            self.device
                        ),
                    });
                }
                self.model.quantize_int8();
                for model in &mut self.ensemble {
                    model.quantize_int8();
                }
                Ok(())
            }
        }
    }

    /// The longest source or output any of the models can take (the smallest of their
    /// `max_positions`).
    pub fn max_positions(&self) -> usize {
        std::iter::once(&self.model)
            .chain(&self.ensemble)
            .map(Transformer::max_positions)
            .min()
            .unwrap_or(0)
    }

    /// The models that translate: `model`, then the ensemble's others.
    pub fn models(&self) -> Vec<&Transformer> {
        std::iter::once(&self.model).chain(&self.ensemble).collect()
    }

    /// The search that `options` describe, with this model's special tokens; refused, naming
    /// the option, if one is impossible (see [`TranslateOptions::validate`]).
    pub fn search_config(&self, options: &TranslateOptions) -> Result<SearchConfig, InferError> {
        options.search_config(self.config.special_tokens())
    }

    /// The target languages a multilingual model was trained for, each once, sorted.
    pub fn target_languages(&self) -> Vec<&str> {
        let mut languages: Vec<&str> = self.directions.iter().map(|d| d.target.as_str()).collect();
        languages.sort_unstable();
        languages.dedup();
        languages
    }

    /// The token that starts every source to ask for a translation into `target_lang`: a
    /// multilingual model's language tag (`>>de<<`), required and refused unless the model was
    /// trained into that language, naming the languages it was; for a bilingual model nothing,
    /// and `target_lang` must be its target language where that is known.
    pub fn target_prefix(&self, target_lang: Option<&str>) -> Result<Option<u32>, InferError> {
        let refuse = |reason: String| {
            Err(InferError::InvalidOption {
                option: "target-lang",
                reason,
            })
        };
        if self.directions.is_empty() {
            return match (target_lang, &self.target_lang) {
                (Some(asked), Some(known)) if asked != known => refuse(format!(
                    "the model translates into `{known}` only, not `{asked}`"
                )),
                _ => Ok(None),
            };
        }
        let trained = self.target_languages();
        match target_lang {
            None => refuse(format!(
                "the model translates into several languages ({}): say which (directions: {})",
                trained.join(", "),
                names(&self.directions)
            )),
            Some(asked) if !trained.contains(&asked) => refuse(format!(
                "the model was not trained to translate into `{asked}`; it translates into {} (directions: {})",
                trained.join(", "),
                names(&self.directions)
            )),
            Some(asked) => Ok(Some(self.tokenizers.source.language_tag(asked)?)),
        }
    }

    /// Translates one sentence with `options`.
    pub fn translate_sentence(
        &self,
        text: &str,
        options: &TranslateOptions,
    ) -> Result<Translation, InferError> {
        Ok(self
            .translate_lines(&[text.to_string()], options)?
            .pop()
            .unwrap_or_default())
    }

    /// Translates `lines` in order with `options` (`options.batch_size` sentences at a time).
    pub fn translate_lines(
        &self,
        lines: &[String],
        options: &TranslateOptions,
    ) -> Result<Vec<Translation>, InferError> {
        self.translate_lines_into(lines, options, None)
    }

    /// Translates `lines` into `target_lang` (see [`target_prefix`](Self::target_prefix)) in
    /// order with `options`.
    pub fn translate_lines_into(
        &self,
        lines: &[String],
        options: &TranslateOptions,
        target_lang: Option<&str>,
    ) -> Result<Vec<Translation>, InferError> {
        let config = self.search_config(options)?;
        self.translate_into(lines, &config, options.batch_size, target_lang)
    }

    /// The device the model lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Translates `lines` in order, `batch_size` sentences at a time, sorted by length inside
    /// the call for speed. `config.beam_size == 1` uses greedy search. A multilingual model
    /// needs [`translate_into`](Self::translate_into).
    pub fn translate(
        &self,
        lines: &[String],
        config: &SearchConfig,
        batch_size: usize,
    ) -> Result<Vec<Translation>, InferError> {
        self.translate_into(lines, config, batch_size, None)
    }

    /// [`translate`](Self::translate) into `target_lang`: a multilingual model's sources start
    /// with the language's tag (see [`target_prefix`](Self::target_prefix)), which counts
    /// towards the model's positions and is part of each [`Translation::source_tokens`].
    pub fn translate_into(
        &self,
        lines: &[String],
        config: &SearchConfig,
        batch_size: usize,
        target_lang: Option<&str>,
    ) -> Result<Vec<Translation>, InferError> {
        config.validate()?;
        let prefix = self.target_prefix(target_lang)?;
        let models = self.models();
        // Source + EOS must fit in the positional encoding of every model.
        let max_source = self.max_positions().saturating_sub(1).max(1);
        let mut results: Vec<Option<Translation>> = vec![None; lines.len()];
        let mut work: Vec<(usize, Vec<u32>, bool)> = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                results[i] = Some(Translation {
                    text: String::new(),
                    n_best: vec![(String::new(), 0.0)],
                    source_tokens: Vec::new(),
                    target_tokens: Vec::new(),
                    truncated: false,
                });
                continue;
            }
            let mut ids = self.tokenizers.source.encode(line)?;
            if let Some(tag) = prefix {
                ids.insert(0, tag);
            }
            let truncated = ids.len() > max_source;
            ids.truncate(max_source);
            work.push((i, ids, truncated));
        }
        work.sort_by_key(|(_, ids, _)| ids.len());
        for chunk in work.chunks(batch_size.max(1)) {
            let rows: Vec<&[u32]> = chunk.iter().map(|(_, ids, _)| ids.as_slice()).collect();
            let source = frame_tensor(&rows, Frame::Eos, &config.tokens, &self.device);
            let hypotheses = if config.beam_size == 1 {
                greedy_ensemble(&models, source, config)?
                    .into_iter()
                    .map(|h| vec![h])
                    .collect()
            } else {
                beam_search_ensemble(&models, source, config)?
            };
            for ((i, ids, truncated), n_best) in chunk.iter().zip(hypotheses) {
                let mut texts = Vec::with_capacity(n_best.len());
                for h in &n_best {
                    let text = self.tokenizers.target.decode(&h.tokens)?;
                    texts.push((one_line(text), h.score));
                }
                let (text, target_tokens) = match (texts.first(), n_best.first()) {
                    (Some((t, _)), Some(h)) => (t.clone(), h.tokens.clone()),
                    _ => (String::new(), Vec::new()),
                };
                results[*i] = Some(Translation {
                    text,
                    n_best: texts,
                    source_tokens: ids.clone(),
                    target_tokens,
                    truncated: *truncated,
                });
            }
        }
        Ok(results.into_iter().map(Option::unwrap_or_default).collect())
    }
}

/// Directions as messages list them: `en-de, en-fr`.
fn names(directions: &[LanguagePair]) -> String {
    if directions.is_empty() {
        return "none: a bilingual model".into();
    }
    directions
        .iter()
        .map(LanguagePair::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A decoded translation as one line. A byte-level vocabulary can spell line breaks (its `Ċ` is
/// `\n`), and an undertrained model may produce them; written out, they would split one
/// translation over several lines and misalign the output with its input, so they become spaces.
fn one_line(text: String) -> String {
    if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::{Translator, one_line};
    use crate::TranslateOptions;
    use crate::error::{CheckpointFault, EnsembleMismatch, InferError};
    use rosetta_data::{SubwordTokenizer, TokenizerSettings, Tokenizers};
    use rosetta_model::TransformerConfig;
    use rosetta_model::burn::tensor::Device;

    /// A random-weight translator whose tokenizer is trained on `texts`.
    fn random_translator(texts: &[&str], seed: u64) -> Translator {
        let settings = TokenizerSettings {
            vocab_size: 270,
            min_frequency: 1,
            ..TokenizerSettings::default()
        };
        let tokenizer = SubwordTokenizer::train(&settings, texts.iter().copied()).expect("trains");
        let vocab = tokenizer.vocab_size();
        let tokenizers = Tokenizers {
            source: tokenizer.clone(),
            target: tokenizer,
            joint: true,
        };
        let config = TransformerConfig::new(vocab, vocab)
            .with_d_model(16)
            .with_n_heads(2)
            .with_d_ff(32)
            .with_n_encoder_layers(1)
            .with_n_decoder_layers(1)
            .with_max_positions(24);
        let device = Device::flex();
        device.seed(seed);
        let model = config.init(&device).expect("model");
        Translator::new(model, tokenizers, config, &device)
    }

    #[test]
    fn an_ensemble_joins_models_of_one_tokenizer_only() {
        let texts = [
            "one two three",
            "four five six",
            "un deux trois",
            "quatre cinq six",
        ];
        let mut first = random_translator(&texts, 1);
        let second = random_translator(&texts, 2);
        let options = TranslateOptions {
            beam: 1,
            max_len_a: 0.0,
            max_len_b: 6,
            ..TranslateOptions::default()
        };
        let lines = vec!["one two".to_string(), "four six".to_string()];
        let alone = first.translate_lines(&lines, &options).expect("translates");
        first.join(second).expect("same tokenizer");
        assert_eq!(first.models().len(), 2);
        let together = first.translate_lines(&lines, &options).expect("translates");
        assert_eq!(together.len(), alone.len());

        let other = random_translator(&["entirely different words here"], 3);
        let error = first.join(other).expect_err("another tokenizer");
        assert!(
            matches!(
                error,
                InferError::Checkpoint {
                    fault: CheckpointFault::EnsembleMismatch(EnsembleMismatch::Tokenizers),
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("other tokenizer(s)"), "{error}");
        assert_eq!(first.models().len(), 2, "a refused model is not added");
    }

    #[test]
    fn line_breaks_in_a_translation_become_spaces() {
        assert_eq!(one_line("un\ndeux\r\ntrois".into()), "un deux  trois");
        assert_eq!(one_line("quatre cent".into()), "quatre cent");
        assert_eq!(one_line(String::new()), "");
    }
}
