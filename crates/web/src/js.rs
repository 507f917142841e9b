//! The JavaScript API, compiled for WebAssembly only: [`Translator`] loads a model bundle from
//! its bytes and translates.
//!
//! ```js
//! import init, { Translator } from "./pkg/rosetta_web.js";
//! await init();
//! const translator = Translator.load(modelBytes, tokenizerJson, bundleJson);
//! const { translation, score } = translator.translate("four hundred twelve", { beam: 5 });
//! ```
//!
//! Every method is a thin layer over [`WebTranslator`], which holds the logic and is tested
//! natively; errors reach JavaScript as exceptions carrying the command line's messages. Native
//! builds leave this module (and `wasm-bindgen`, `js-sys`) out, so that the workspace's tests
//! compile the same dependency features as the `rosetta` binary: one build of Burn for both.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::error::WebError;
use crate::translator::WebTranslator;

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
    /// `tokenizer.json`, or an imported MarianMT model's tokenizer files, in the order `load`
    /// takes them. Throws, naming the key, if the text is
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
    /// `bundle.json`, and an array of the bytes (`Uint8Array`s) of its tokenizer files in the
    /// order `bundleFiles` lists them after `model.bpk`.
    pub fn load(
        model: Vec<u8>,
        config: &str,
        tokenizers: js_sys::Array,
    ) -> Result<Translator, JsError> {
        report_panics_to_the_console();
        let files = tokenizers
            .iter()
            .map(|file| js_sys::Uint8Array::new(&file).to_vec())
            .collect();
        let inner = WebTranslator::load(model, config, files).map_err(js_error)?;
        Ok(Self { inner })
    }

    /// Translates one sentence: `{ translation, score, nbest, sourceTokens, targetTokens,
    /// truncated }`. `options`: `{ beam, alpha, lengthNorm, beamStop, maxLen, maxLenA, maxLenB,
    /// nbest, targetLang }`, each optional (defaults: `rosetta translate`'s, beam 5;
    /// `targetLang` is required by a multilingual bundle).
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

    /// `{ sourceLang, targetLang, directions, step, parameters, precision }` (`directions`: a
    /// multilingual bundle's `{ source, target }` pairs, each chosen with the `targetLang` option).
    pub fn info(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.info())
    }
}
