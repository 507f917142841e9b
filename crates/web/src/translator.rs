//! [`WebTranslator`]: a model bundle loaded from its bytes, translating; the logic behind the
//! JavaScript API (`crate::js`, compiled for WebAssembly only), free of JavaScript types and
//! tested natively.

use rosetta_infer::bundle::{self, BundleConfig};
use rosetta_infer::rosetta_model::burn::module::Module;
use rosetta_infer::rosetta_model::burn::tensor::Device;
use serde::Serialize;

use crate::error::WebError;
use crate::options::WebOptions;

/// One hypothesis of an n-best list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    /// The detokenized text.
    pub translation: String,
    /// Its length-penalised log-probability.
    pub score: f32,
}

/// One translated sentence, as JavaScript receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebTranslation {
    /// The best translation.
    pub translation: String,
    /// Its score.
    pub score: f32,
    /// All requested hypotheses, best first.
    pub nbest: Vec<Alternative>,
    /// Source subword ids fed to the model (after any cut).
    pub source_tokens: Vec<u32>,
    /// Output subword ids of the best hypothesis.
    pub target_tokens: Vec<u32>,
    /// Whether the source was cut to fit the model's positions.
    pub truncated: bool,
}

/// What a loaded model is, for the page to show.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// Source language code, if the bundle names it.
    pub source_lang: Option<String>,
    /// Target language code, if the bundle names it.
    pub target_lang: Option<String>,
    /// A multilingual bundle's directions (`{ source, target }`), each chosen with the
    /// `targetLang` option; empty for a bilingual one.
    pub directions: Vec<rosetta_infer::LanguagePair>,
    /// Training steps behind the weights.
    pub step: u64,
    /// Number of parameters.
    pub parameters: usize,
    /// How the bundle stored the weights (`f32` or `f16`).
    pub precision: String,
}

/// A loaded bundle and the settings it came with: the logic behind the JavaScript `Translator`,
/// free of JavaScript types.
#[derive(Debug, Clone)]
pub struct WebTranslator {
    inner: rosetta_infer::Translator,
    precision: String,
}

impl WebTranslator {
    /// Loads a bundle from the bytes of `model.bpk`, the text of `bundle.json` (`config`) and the
    /// bytes of its tokenizer files in the order [`bundle_files`](Self::bundle_files) lists them
    /// (`tokenizer.json`; or `tokenizer.source.json` and `tokenizer.target.json`; or an
    /// imported MarianMT model's `source.spm`, `target.spm`, `vocab.json`, ...), onto Burn's
    /// flex backend.
    pub fn load(
        model: Vec<u8>,
        config: &str,
        tokenizer_files: Vec<Vec<u8>>,
    ) -> Result<Self, WebError> {
        let config = BundleConfig::from_json(config)?;
        let tokenizers = config.tokenizers(tokenizer_files)?;
        let inner = bundle::load(&config, model, tokenizers, &Device::flex())?;
        Ok(Self {
            inner,
            precision: config.precision.to_string(),
        })
    }

    /// The files of the bundle that `bundle.json` (the text `config`) describes, beside it:
    /// `model.bpk` and the tokenizer(s); refused, naming the key, if `config` is not a bundle
    /// description this build reads. The page checks this before downloading the weights.
    pub fn bundle_files(config: &str) -> Result<Vec<&'static str>, WebError> {
        let config = BundleConfig::from_json(config)?;
        let mut files = vec![bundle::WEIGHTS_FILE];
        files.extend(config.tokenizer_files());
        Ok(files)
    }

    /// Translates `lines` in order with the options in `options_json` (see [`WebOptions`]).
    pub fn translate(
        &self,
        lines: &[String],
        options_json: Option<&str>,
    ) -> Result<Vec<WebTranslation>, WebError> {
        let web = WebOptions::from_json(options_json)?;
        let options = web.resolve(&self.inner.decoding)?;
        let translations =
            self.inner
                .translate_lines_into(lines, &options, web.target_lang.as_deref())?;
        Ok(translations
            .into_iter()
            .map(|t| WebTranslation {
                score: t.n_best.first().map_or(0.0, |(_, score)| *score),
                nbest: t
                    .n_best
                    .into_iter()
                    .map(|(translation, score)| Alternative { translation, score })
                    .collect(),
                translation: t.text,
                source_tokens: t.source_tokens,
                target_tokens: t.target_tokens,
                truncated: t.truncated,
            })
            .collect())
    }

    /// The model's languages, step, size and stored precision.
    pub fn info(&self) -> ModelInfo {
        ModelInfo {
            source_lang: self.inner.source_lang.clone(),
            target_lang: self.inner.target_lang.clone(),
            directions: self.inner.directions.clone(),
            step: self.inner.step,
            parameters: self.inner.model.num_params(),
            precision: self.precision.clone(),
        }
    }
}
