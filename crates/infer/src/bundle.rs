//! Model bundles: a trained model as a few files that load from their bytes alone, for programs
//! with no file system (the browser build, `crates/web`) and for shipping a model small.
//!
//! A bundle directory holds
//! - `model.bpk`: the weights, in Burn's burnpack format, as f32 or f16 ([`Precision`]);
//! - `bundle.json` ([`BundleConfig`]): the model's configuration, the precision, the language
//!   pair, the training step, the SHA-256 of `model.bpk` and the tokenizer fingerprint;
//! - `tokenizer.json`, or `tokenizer.source.json` and `tokenizer.target.json`, or an imported
//!   MarianMT model's `source.spm`, `target.spm`, `vocab.json` (and the optional files of its
//!   MarianTokenizer).
//!
//! `rosetta export --format web` writes one ([`write`]); [`Translator::load`], and so every
//! command that takes `--checkpoint`, reads one ([`load_dir`]); the browser build hands the
//! fetched bytes to [`load`]. f16 weights are cast back to f32 as they load, so a bundle
//! translates the same way on every platform: in the browser exactly as natively.

use std::path::{Path, PathBuf};

use rosetta_data::pipeline::{JOINT_TOKENIZER, SOURCE_TOKENIZER, TARGET_TOKENIZER};
use rosetta_data::{LanguagePair, MARIAN_FILES, MarianVocabulary, Tokenizers};
use rosetta_model::burn::module::{Module, ModuleMapper, Param};
use rosetta_model::burn::store::ModuleRecord;
use rosetta_model::burn::tensor::{Bytes, Device, FloatDType, Tensor};
use rosetta_model::{Transformer, TransformerConfig};
use serde::{Deserialize, Serialize};

use crate::checkpoint::sha256_hex;
use crate::error::InferError;
use crate::options::TranslateOptions;
use crate::translator::Translator;

/// The bundle's description, `bundle.json`.
pub const BUNDLE_FILE: &str = "bundle.json";
/// The bundle's weights, `model.bpk`.
pub const WEIGHTS_FILE: &str = "model.bpk";
/// The `format` field of every `bundle.json`.
pub const FORMAT_NAME: &str = "rosetta-bundle";
/// The layout version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// How the weights are stored. Computation is always in f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 4 bytes per parameter: the checkpoint's weights bit for bit.
    F32,
    /// 2 bytes per parameter: half the download, weights rounded to 11 significant bits.
    #[default]
    F16,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
        })
    }
}

impl Precision {
    fn dtype(self) -> FloatDType {
        match self {
            Precision::F32 => FloatDType::F32,
            Precision::F16 => FloatDType::F16,
        }
    }
}

/// `bundle.json`: everything needed to rebuild the model and check the files beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleConfig {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The layout version ([`FORMAT_VERSION`]).
    pub version: u32,
    /// The model's configuration (vocabulary sizes included).
    pub model: TransformerConfig,
    /// How `model.bpk` stores the weights.
    pub precision: Precision,
    /// Source language code, where known.
    pub source_lang: Option<String>,
    /// Target language code, where known.
    pub target_lang: Option<String>,
    /// The directions of a multilingual model (its sources start with their target language's
    /// tag); absent for a bilingual model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<LanguagePair>,
    /// One tokenizer for both sides (`tokenizer.json`) or two.
    pub joint_vocabulary: bool,
    /// The fingerprint of the tokenizer(s) the model was trained with.
    pub tokenizer_fingerprint: String,
    /// Training steps behind the weights.
    pub step: u64,
    /// SHA-256 of `model.bpk`, hex-encoded.
    pub weights_sha256: String,
    /// An imported MarianMT model's tokenizer files (SentencePiece models and vocabularies), in
    /// place of `tokenizer.json`; absent for a model Rosetta trained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marian_tokenizer: Option<Vec<String>>,
    /// How the model decodes when the page does not say (an imported model's generation
    /// settings); absent: Rosetta's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<TranslateOptions>,
}

fn bundle_error(file: impl Into<PathBuf>, reason: impl Into<String>) -> InferError {
    InferError::Bundle {
        file: file.into(),
        reason: reason.into(),
    }
}

impl BundleConfig {
    /// Parses `bundle.json`'s text, refusing other formats and versions, and naming the key at
    /// fault (unknown keys inside `model` included: a misspelt setting would otherwise fall back
    /// to its default and build another model than the one trained).
    pub fn from_json(text: &str) -> Result<Self, InferError> {
        let error = |reason: String| bundle_error(BUNDLE_FILE, reason);
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| error(format!("not JSON: {e}")))?;
        if !value.is_object() {
            return Err(error("not a JSON object".into()));
        }
        if value["format"] != FORMAT_NAME {
            return Err(error(format!(
                "key `format` is {}, not {FORMAT_NAME:?}: not a Rosetta model bundle",
                value["format"]
            )));
        }
        if value["version"] != FORMAT_VERSION {
            return Err(error(format!(
                "key `version` is {}; this Rosetta reads version {FORMAT_VERSION}",
                value["version"]
            )));
        }
        let config: Self = serde_path_to_error::deserialize(&value)
            .map_err(|e| error(format!("key `{}`: {}", e.path(), e.inner())))?;
        let known = serde_json::to_value(&config.model).map_err(|e| error(e.to_string()))?;
        if let (Some(given), Some(known)) = (value["model"].as_object(), known.as_object())
            && let Some(key) = given.keys().find(|key| !known.contains_key(*key))
        {
            return Err(error(format!("key `model.{key}`: unknown field")));
        }
        config.model.validate().map_err(|e| match e {
            rosetta_model::ModelError::InvalidConfig { key, reason } => {
                error(format!("key `model.{key}`: {reason}"))
            }
            other => error(format!("key `model`: {other}")),
        })?;
        Ok(config)
    }

    /// The tokenizer files the bundle holds, in the order [`load`] takes them.
    pub fn tokenizer_files(&self) -> Vec<&'static str> {
        match &self.marian_tokenizer {
            Some(files) => MARIAN_FILES
                .into_iter()
                .filter(|name| files.iter().any(|f| f == name))
                .collect(),
            None if self.joint_vocabulary => vec![JOINT_TOKENIZER],
            None => vec![SOURCE_TOKENIZER, TARGET_TOKENIZER],
        }
    }

    /// The tokenizer(s) from the bytes of [`tokenizer_files`](Self::tokenizer_files), in
    /// that order.
    pub fn tokenizers(&self, files: Vec<Vec<u8>>) -> Result<Tokenizers, InferError> {
        let names = self.tokenizer_files();
        if files.len() != names.len() {
            return Err(bundle_error(
                BUNDLE_FILE,
                format!(
                    "{} tokenizer files given, the bundle has {}",
                    files.len(),
                    names.len()
                ),
            ));
        }
        if self.marian_tokenizer.is_some() {
            let vocabulary = MarianVocabulary::from_files(names.into_iter().zip(files).collect())?;
            return Ok(Tokenizers::marian(vocabulary));
        }
        let mut texts = Vec::with_capacity(files.len());
        for (name, bytes) in names.iter().zip(files) {
            texts.push(
                String::from_utf8(bytes)
                    .map_err(|e| bundle_error(*name, format!("not UTF-8 text: {e}")))?,
            );
        }
        Ok(Tokenizers::from_json(
            &texts[0],
            texts.get(1).map(String::as_str),
        )?)
    }
}

/// Casts every float parameter of a module to one dtype.
struct CastFloats(FloatDType);

impl ModuleMapper for CastFloats {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let dtype = self.0;
        param.map(|tensor| tensor.cast(dtype))
    }
}

/// `model`'s weights as burnpack bytes in `precision`.
pub fn weights(model: &Transformer, precision: Precision) -> Result<Vec<u8>, InferError> {
    let model = match precision {
        Precision::F32 => model.clone(),
        Precision::F16 => model.clone().map(&mut CastFloats(precision.dtype())),
    };
    let bytes = model
        .into_record()
        .into_bytes()
        .map_err(|e| bundle_error(WEIGHTS_FILE, format!("cannot serialize the weights: {e}")))?;
    Ok(bytes.to_vec())
}

/// `translator` as a bundle: its `bundle.json` and the bytes of its `model.bpk`, weights in
/// `precision`.
pub fn describe(
    translator: &Translator,
    precision: Precision,
) -> Result<(BundleConfig, Vec<u8>), InferError> {
    let bytes = weights(&translator.model, precision)?;
    let config = BundleConfig {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        model: translator.config.clone(),
        precision,
        source_lang: translator.source_lang.clone(),
        target_lang: translator.target_lang.clone(),
        directions: translator.directions.clone(),
        joint_vocabulary: translator.tokenizers.joint,
        tokenizer_fingerprint: translator.tokenizers.fingerprint()?,
        step: translator.step,
        weights_sha256: sha256_hex(&bytes),
        marian_tokenizer: translator.tokenizers.marian_vocabulary().map(|vocabulary| {
            vocabulary
                .files()
                .iter()
                .map(|(name, _)| (*name).to_string())
                .collect()
        }),
        decoding: (translator.decoding != TranslateOptions::default())
            .then(|| translator.decoding.clone()),
    };
    Ok((config, bytes))
}

/// Writes `translator` as a bundle into the existing, empty directory `dir`, with weights in
/// `precision`. Returns the files written.
pub fn write(
    translator: &Translator,
    precision: Precision,
    dir: &Path,
) -> Result<Vec<PathBuf>, InferError> {
    let (config, bytes) = describe(translator, precision)?;
    let weights_path = dir.join(WEIGHTS_FILE);
    std::fs::write(&weights_path, &bytes).map_err(InferError::io(&weights_path))?;
    let config_path = dir.join(BUNDLE_FILE);
    let text = serde_json::to_string_pretty(&config)
        .map_err(|e| bundle_error(BUNDLE_FILE, format!("cannot encode it: {e}")))?;
    std::fs::write(&config_path, text).map_err(InferError::io(&config_path))?;
    let mut files = vec![weights_path, config_path];
    files.extend(translator.save_tokenizers(dir)?);
    Ok(files)
}

/// A lower bound on the bytes of `config`'s weights in `precision` (the embedding tables and
/// the layers' matrices, biases and norms left out), in f64 so that no size can overflow: a
/// `model.bpk` shorter than this cannot be the model's, and is refused before the model (whose
/// size `bundle.json` alone decides) is allocated.
fn minimum_weight_bytes(config: &TransformerConfig, precision: Precision) -> f64 {
    let d = config.d_model as f64;
    let d_ff = config.d_ff as f64;
    let tables = if config.share_embeddings { 1.0 } else { 2.0 };
    let vocab = config.source_vocab_size.max(config.target_vocab_size) as f64;
    let encoder = config.n_encoder_layers as f64 * (4.0 * d * d + 2.0 * d * d_ff);
    let decoder = config.n_decoder_layers as f64 * (8.0 * d * d + 2.0 * d * d_ff);
    let parameters = tables * vocab * d + encoder + decoder;
    let bytes = match precision {
        Precision::F32 => 4.0,
        Precision::F16 => 2.0,
    };
    parameters * bytes
}

/// Whether `dir` is a bundle directory (holds `bundle.json`).
pub fn is_bundle(dir: &Path) -> bool {
    dir.join(BUNDLE_FILE).is_file()
}

/// Reads the `bundle.json` of the bundle in directory `dir`.
pub fn read_config(dir: &Path) -> Result<BundleConfig, InferError> {
    let path = dir.join(BUNDLE_FILE);
    let bytes = std::fs::read(&path).map_err(InferError::io(path.clone()))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| bundle_error(path.clone(), format!("not UTF-8 text: {e}")))?;
    BundleConfig::from_json(&text).map_err(|e| match e {
        InferError::Bundle { reason, .. } => bundle_error(path, reason),
        other => other,
    })
}

/// Loads the bundle in directory `dir` onto `device`.
pub fn load_dir(dir: &Path, device: &Device) -> Result<Translator, InferError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(InferError::io(path))
    };
    let config = read_config(dir)?;
    let mut files = Vec::new();
    for name in config.tokenizer_files() {
        files.push(read(name)?);
    }
    let tokenizers = config.tokenizers(files)?;
    let mut translator =
        load(&config, read(WEIGHTS_FILE)?, tokenizers, device).map_err(|e| match e {
            InferError::Bundle { file, reason } => bundle_error(dir.join(file), reason),
            other => other,
        })?;
    translator.checkpoint = Some(dir.to_path_buf());
    Ok(translator)
}

/// Builds the translator that `config`, the bytes of `model.bpk` and the tokenizer(s) describe,
/// on `device`, refusing weights whose SHA-256 is not the recorded one and tokenizers that are
/// not the model's.
pub fn load(
    config: &BundleConfig,
    weights: Vec<u8>,
    tokenizers: Tokenizers,
    device: &Device,
) -> Result<Translator, InferError> {
    if sha256_hex(&weights) != config.weights_sha256 {
        return Err(bundle_error(
            WEIGHTS_FILE,
            format!(
                "its SHA-256 is not the one {BUNDLE_FILE} records ({} bytes read): the file is \
                 damaged or belongs to another bundle",
                weights.len()
            ),
        ));
    }
    let needed = minimum_weight_bytes(&config.model, config.precision);
    if (weights.len() as f64) < needed {
        return Err(bundle_error(
            WEIGHTS_FILE,
            format!(
                "{} bytes cannot hold the model {BUNDLE_FILE} describes (at least {needed:.0} \
                 bytes of {} weights): the files do not belong together",
                weights.len(),
                config.precision
            ),
        ));
    }
    if tokenizers.joint != config.joint_vocabulary {
        return Err(bundle_error(
            BUNDLE_FILE,
            format!(
                "the model was trained with {} tokenizer(s), {} given",
                if config.joint_vocabulary { 1 } else { 2 },
                if tokenizers.joint { 1 } else { 2 }
            ),
        ));
    }
    if tokenizers.fingerprint()? != config.tokenizer_fingerprint {
        return Err(bundle_error(
            config.tokenizer_files()[0],
            "not the tokenizer the model was trained with (its fingerprint differs)",
        ));
    }
    let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(weights))
        .map_err(|e| bundle_error(WEIGHTS_FILE, format!("cannot read the weights: {e}")))?
        .cast_to_module_dtype();
    let model = config
        .model
        .init(device)
        .map_err(|e| bundle_error(BUNDLE_FILE, format!("key `model`: {e}")))?
        .try_load_record(record)
        .map_err(|e| bundle_error(WEIGHTS_FILE, format!("cannot load the weights: {e}")))?;
    let mut translator = Translator::new(model, tokenizers, config.model.clone(), device);
    translator.step = config.step;
    translator.source_lang = config.source_lang.clone();
    translator.target_lang = config.target_lang.clone();
    translator.directions = config.directions.clone();
    translator.decoding = config.decoding.clone().unwrap_or_default();
    Ok(translator)
}

#[cfg(test)]
mod tests {
    use super::{BundleConfig, FORMAT_NAME, Precision};
    use rosetta_model::TransformerConfig;

    fn config_json() -> serde_json::Value {
        let config = BundleConfig {
            format: FORMAT_NAME.into(),
            version: 1,
            model: TransformerConfig::new(300, 300),
            precision: Precision::F16,
            source_lang: Some("en".into()),
            target_lang: Some("fr".into()),
            directions: Vec::new(),
            joint_vocabulary: true,
            tokenizer_fingerprint: "abc:abc".into(),
            step: 40,
            weights_sha256: "00".into(),
            marian_tokenizer: None,
            decoding: None,
        };
        serde_json::to_value(config).expect("serializes")
    }

    fn parse(value: &serde_json::Value) -> Result<BundleConfig, String> {
        BundleConfig::from_json(&value.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_bundle_description_reads_back() {
        let value = config_json();
        assert_eq!(value["precision"], "f16");
        let config = parse(&value).expect("parses");
        assert_eq!(config.step, 40);
        assert_eq!(config.tokenizer_files(), vec!["tokenizer.json"]);
        let mut two = value.clone();
        two["joint_vocabulary"] = false.into();
        assert_eq!(
            parse(&two).expect("parses").tokenizer_files(),
            vec!["tokenizer.source.json", "tokenizer.target.json"]
        );
    }

    #[test]
    fn other_formats_versions_and_keys_are_refused_by_name() {
        let mut other = config_json();
        other["format"] = "ctranslate2".into();
        let error = parse(&other).unwrap_err();
        assert!(
            error.starts_with("model bundle bundle.json: key `format`"),
            "{error}"
        );
        let mut later = config_json();
        later["version"] = 2.into();
        let error = parse(&later).unwrap_err();
        assert!(error.contains("key `version` is 2"), "{error}");
        let mut misspelt = config_json();
        misspelt["precison"] = "f32".into();
        let error = parse(&misspelt).unwrap_err();
        assert!(error.contains("precison"), "{error}");
        let mut mistyped = config_json();
        mistyped["precision"] = "int4".into();
        let error = parse(&mistyped).unwrap_err();
        assert!(error.contains("key `precision`"), "{error}");
        let mut model = config_json();
        model["model"]["d_model"] = "wide".into();
        let error = parse(&model).unwrap_err();
        assert!(error.contains("key `model.d_model`"), "{error}");
    }
}
