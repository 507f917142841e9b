//! The JavaScript API: [`Translator`] loads a model bundle from its bytes and translates.
//!
//! ```js
//! import init, { Translator } from "./pkg/rosetta_web.js";
//! await init();
//! const translator = Translator.load(modelBytes, tokenizerJson, bundleJson);
//! const { translation, score } = translator.translate("four hundred twelve", { beam: 5 });
//! ```
//!
//! Every method is a thin layer over [`WebTranslator`], which holds the logic and is tested
//! natively; errors reach JavaScript as exceptions carrying the command line's messages.

use rosetta_data::Tokenizers;
use rosetta_infer::bundle::{self, BundleConfig};
use rosetta_infer::rosetta_model::burn::module::Module;
use rosetta_infer::rosetta_model::burn::tensor::Device;
use serde::Serialize;
use wasm_bindgen::prelude::*;

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
    /// Training steps behind the weights.
    pub step: u64,
    /// Number of parameters.
    pub parameters: usize,
    /// How the bundle stored the weights (`f32` or `f16`).
    pub precision: String,
}

/// A loaded bundle and the settings it came with: the logic behind [`Translator`], free of
/// JavaScript types.
#[derive(Debug, Clone)]
pub struct WebTranslator {
    inner: rosetta_infer::Translator,
    precision: String,
}

impl WebTranslator {
    /// Loads a bundle from the bytes of `model.bpk`, the text of `tokenizer.json` (or of
    /// `tokenizer.source.json` with `target_tokenizer` that of `tokenizer.target.json`) and the
    /// text of `bundle.json`, onto Burn's flex backend.
    pub fn load(
        model: Vec<u8>,
        tokenizer: &str,
        config: &str,
        target_tokenizer: Option<&str>,
    ) -> Result<Self, WebError> {
        let config = BundleConfig::from_json(config)?;
        let tokenizers = Tokenizers::from_json(tokenizer, target_tokenizer)
            .map_err(rosetta_infer::InferError::from)?;
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
        let options = WebOptions::from_json(options_json)?.resolve()?;
        let translations = self.inner.translate_lines(lines, &options)?;
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
            step: self.inner.step,
            parameters: self.inner.model.num_params(),
            precision: self.precision.clone(),
        }
    }
}

/// A translator running in the page: `Translator.load(...)`, then `translate` or
/// `translateBatch`.
#[wasm_bindgen]
pub struct Translator {
    inner: WebTranslator,
}

/// A JavaScript exception carrying `error`'s message.
fn js_error(error: WebError) -> JsError {
    JsError::new(&error.to_string())
}

/// A Rust value as a plain JavaScript object (through JSON, which every value here is).
fn to_js(value: &impl Serialize) -> Result<JsValue, JsError> {
    let text = serde_json::to_string(value).map_err(|e| JsError::new(&e.to_string()))?;
    js_sys::JSON::parse(&text).map_err(|_| JsError::new("cannot build the result object"))
}

/// The JSON text of a JavaScript options object (`None` for `undefined` or `null`).
fn options_json(options: &JsValue) -> Result<Option<String>, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(None);
    }
    let text = js_sys::JSON::stringify(options)
        .map_err(|_| JsError::new("translation options: not a plain object"))?;
    Ok(text.as_string())
}

#[wasm_bindgen]
extern "C" {
    /// The browser console's `console.error`.
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

/// Sends Rust panic messages to the browser console (once per page). A panic is a bug, never
/// the answer to bad input; it ends the module (`panic = "abort"`), and without this hook the
/// page would see only "unreachable".
fn report_panics_to_the_console() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            console_error(&format!("rosetta-web panicked: {info}"));
        }));
    });
}

#[wasm_bindgen]
impl Translator {
    /// The files to fetch beside `bundle.json` (its text): `["model.bpk", "tokenizer.json"]`,
    /// or with two vocabularies `tokenizer.source.json` and `tokenizer.target.json` in place of
    /// `tokenizer.json`, in the order `load` takes them. Throws, naming the key, if the text is
    /// not a bundle description this build reads, so that nothing is downloaded in vain.
    #[wasm_bindgen(js_name = bundleFiles)]
    pub fn bundle_files(config: &str) -> Result<Vec<String>, JsError> {
        report_panics_to_the_console();
        Ok(WebTranslator::bundle_files(config)
            .map_err(js_error)?
            .into_iter()
            .map(str::to_string)
            .collect())
    }

    /// Loads a model bundle (`rosetta export --web`): the bytes of `model.bpk`, the text of
    /// `tokenizer.json` and of `bundle.json`, and for a model with two vocabularies the text of
    /// `tokenizer.target.json` (the first tokenizer is then `tokenizer.source.json`).
    pub fn load(
        model: Vec<u8>,
        tokenizer: &str,
        config: &str,
        target_tokenizer: Option<String>,
    ) -> Result<Translator, JsError> {
        report_panics_to_the_console();
        let inner = WebTranslator::load(model, tokenizer, config, target_tokenizer.as_deref())
            .map_err(js_error)?;
        Ok(Self { inner })
    }

    /// Translates one sentence: `{ translation, score, nbest, sourceTokens, targetTokens,
    /// truncated }`. `options`: `{ beam, alpha, lengthNorm, beamStop, maxLen, maxLenA, maxLenB,
    /// nbest }`, each optional (defaults: `rosetta translate`'s, beam 5).
    pub fn translate(&self, text: String, options: JsValue) -> Result<JsValue, JsError> {
        let options = options_json(&options)?;
        let mut translations = self
            .inner
            .translate(&[text], options.as_deref())
            .map_err(js_error)?;
        to_js(&translations.pop())
    }

    /// Translates several sentences together (faster than one at a time): an array of what
    /// `translate` returns, in order. `options` also takes `batchSize`.
    #[wasm_bindgen(js_name = translateBatch)]
    pub fn translate_batch(
        &self,
        lines: Vec<String>,
        options: JsValue,
    ) -> Result<JsValue, JsError> {
        let options = options_json(&options)?;
        let translations = self
            .inner
            .translate(&lines, options.as_deref())
            .map_err(js_error)?;
        to_js(&translations)
    }

    /// `{ sourceLang, targetLang, step, parameters, precision }`.
    pub fn info(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.info())
    }
}
