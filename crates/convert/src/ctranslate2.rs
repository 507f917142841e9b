//! A CTranslate2 model directory, written directly (no Python): `model.bin`, `config.json` and
//! the vocabulary file(s), for CTranslate2 4.x's `ctranslate2.Translator`.
//!
//! `model.bin` is CTranslate2's binary version 6 holding a `TransformerSpec` of revision 7, as
//! its `specs/model_spec.py` writes it: a `u32` version, the spec name, a `u32` revision, the
//! variables (name, rank, `u32` dimensions, a dtype id, a `u32` byte count, row-major data) and
//! an empty alias list, all little-endian; a string is a `u16` length (bytes + 1), its UTF-8
//! bytes and a NUL. The variables come from the PyTorch layout of
//! [`rosetta_model::export::torch_state_dict`] under CTranslate2's names (linear weights
//! `[out, in]`; self-attention's query, key and value fused `[3d, d]`; cross-attention's query
//! `[d, d]` and key/value fused `[2d, d]`), plus the settings CTranslate2 reads as scalars
//! (heads, pre- or post-norm, activation, embedding scaling). The sinusoidal positions are
//! written out as a table, because the table CTranslate2 generates itself is laid out
//! differently (sines then cosines, from position 1).
//!
//! `config.json` makes CTranslate2 frame sentences as Rosetta does: EOS appended to the source,
//! the decoder started from BOS, and Rosetta's LayerNorm epsilon. Token ids are the tokenizer's,
//! so CTranslate2 takes and returns the tokenizer's subword strings; the tokenizer file(s) and
//! Rosetta's `model.json` (for `max_positions`) are written beside them.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use rosetta_data::tokenizer::SubwordTokenizer;
use rosetta_model::burn::tensor::TensorData;
use rosetta_model::export::torch_state_dict;
use rosetta_model::{
    Activation, NormPosition, Quantization, TorchNames, TransformerConfig, positional,
};

use rosetta_infer::Translator;

use crate::error::ConvertError;
use crate::export::write_json;

/// The `model.bin` format version written (CTranslate2's `CURRENT_BINARY_VERSION`).
pub const BINARY_VERSION: u32 = 6;
/// The model specification written.
pub const SPEC_NAME: &str = "TransformerSpec";
/// The revision of [`SPEC_NAME`] written (CTranslate2 4.x's `TransformerSpec.revision`).
pub const SPEC_REVISION: u32 = 7;

/// Variables at least this large are written once when several are equal ([`model_bin`]).
const ALIAS_MIN_BYTES: usize = 4096;

/// One variable of `model.bin`.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// Dimensions; empty for a scalar.
    pub shape: Vec<u32>,
    /// The element type.
    pub dtype: Dtype,
    /// Row-major little-endian bytes.
    pub bytes: Vec<u8>,
}

/// The element types written, with CTranslate2's type ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `float32` (id 0).
    F32,
    /// `int8` (id 1).
    I8,
    /// `int16` (id 2).
    I16,
}

impl Dtype {
    /// CTranslate2's id of the type.
    pub fn id(self) -> u8 {
        match self {
            Dtype::F32 => 0,
            Dtype::I8 => 1,
            Dtype::I16 => 2,
        }
    }
}

impl Variable {
    fn floats(values: &[f32], shape: &[usize]) -> Self {
        Self {
            shape: shape.iter().map(|&d| d as u32).collect(),
            dtype: Dtype::F32,
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn int8(value: i8) -> Self {
        Self {
            shape: Vec::new(),
            dtype: Dtype::I8,
            bytes: value.to_le_bytes().to_vec(),
        }
    }

    fn int16(value: i16) -> Self {
        Self {
            shape: Vec::new(),
            dtype: Dtype::I16,
            bytes: value.to_le_bytes().to_vec(),
        }
    }
}

/// Writes the CTranslate2 model of `translator` into the (existing, empty) directory `dir`, its
/// linear maps' weights as `quantization` says; returns the files written.
pub fn write(
    translator: &Translator,
    quantization: Quantization,
    dir: &Path,
) -> Result<Vec<PathBuf>, ConvertError> {
    let config = &translator.config;
    let mut variables = variables(translator, config)?;
    if quantization == Quantization::Int8 {
        quantize_int8(&mut variables);
    }
    let model = dir.join("model.bin");
    fs::write(&model, model_bin(&variables)?).map_err(ConvertError::io(&model))?;

    let config_path = dir.join("config.json");
    let ids = config.special_tokens();
    let tokenizers = &translator.tokenizers;
    let name = |tokenizer: &SubwordTokenizer, id: u32| {
        tokenizer
            .id_to_token(id)
            .ok_or_else(|| ConvertError::Output {
                path: config_path.clone(),
                reason: format!("the tokenizer has no token for special id {id}"),
            })
    };
    // The decoder starts from the model's start token (BOS in Rosetta's vocabularies, the
    // padding token for an imported Marian model: its own row, not a zero vector).
    let json = serde_json::json!({
        "add_source_bos": false,
        "add_source_eos": true,
        "bos_token": name(&tokenizers.target, ids.bos)?,
        "decoder_start_token": name(&tokenizers.target, ids.bos)?,
        "eos_token": name(&tokenizers.target, ids.eos)?,
        "layer_norm_epsilon": config.layer_norm_eps,
        "multi_query_attention": false,
        "unk_token": name(&tokenizers.source, ids.unk)?,
    });
    let config_path = write_json(&json, &config_path)?;
    // Rosetta's own configuration of the model, as the safetensors export writes it: what a
    // caller needs to frame inputs as Rosetta does (`max_positions` for the length limit).
    let model_json = write_json(config, &dir.join("model.json"))?;

    let mut files = vec![model, config_path, model_json];
    let vocabularies: Vec<(&str, &SubwordTokenizer)> = if tokenizers.joint {
        vec![("shared_vocabulary.json", &tokenizers.source)]
    } else {
        vec![
            ("source_vocabulary.json", &tokenizers.source),
            ("target_vocabulary.json", &tokenizers.target),
        ]
    };
    for (name, tokenizer) in vocabularies {
        let path = dir.join(name);
        let tokens = vocabulary(tokenizer, &path)?;
        files.push(write_json(&tokens, &path)?);
    }
    files.extend(translator.save_tokenizers(dir)?);
    Ok(files)
}

/// Whether `name` is the weight of a linear map: an attention's or feed-forward's `linear_N`, or
/// the output projection. (CTranslate2's converter may quantize the embeddings too, with their
/// own `weight_scale`; Rosetta keeps them float32, as its own int8 does, and the layer norms.)
fn is_linear_weight(name: &str) -> bool {
    name == "decoder/projection/weight"
        || name
            .strip_suffix("/weight")
            .and_then(|prefix| prefix.rsplit('/').next())
            .is_some_and(|last| last.starts_with("linear_"))
}

/// Every linear map's weight (`[out, in]`, float32) as CTranslate2's converter quantizes it
/// (`ctranslate2.specs.model_spec`, `quantization="int8"`): per output row, `scale = 127 /
/// max|w|`, the weight `rint(w · scale)` in int8 beside `weight_scale` (`[out]`, float32). A
/// row of zeros keeps scale 1.
fn quantize_int8(variables: &mut BTreeMap<String, Variable>) {
    let names: Vec<String> = variables
        .keys()
        .filter(|name| is_linear_weight(name))
        .cloned()
        .collect();
    for name in names {
        let Some(variable) = variables.get(&name) else {
            continue;
        };
        let [rows, columns] = variable.shape[..] else {
            continue;
        };
        if variable.dtype != Dtype::F32 {
            continue;
        }
        let values: Vec<f32> = variable
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let (rows, columns) = (rows as usize, columns as usize);
        let mut scales = Vec::with_capacity(rows);
        let mut quantized = Vec::with_capacity(rows * columns);
        for row in values.chunks_exact(columns.max(1)) {
            let peak = row.iter().fold(0.0f32, |m, w| m.max(w.abs()));
            let scale = 127.0 / peak;
            // A row of zeros (or so small that its scale overflows, or not finite) keeps 1.
            let scale = if peak > 0.0 && scale.is_finite() && peak.is_finite() {
                scale
            } else {
                1.0
            };
            quantized.extend(
                row.iter()
                    .map(|w| (w * scale).round_ties_even().clamp(-127.0, 127.0) as i8),
            );
            scales.push(scale);
        }
        let scale_name = format!("{}_scale", name);
        variables.insert(
            name,
            Variable {
                shape: vec![rows as u32, columns as u32],
                dtype: Dtype::I8,
                bytes: quantized.iter().map(|&q| q as u8).collect(),
            },
        );
        variables.insert(scale_name, Variable::floats(&scales, &[rows]));
    }
}

/// The tokenizer's tokens in id order, one per row of the model's table (`rows`).
fn vocabulary(tokenizer: &SubwordTokenizer, path: &Path) -> Result<Vec<String>, ConvertError> {
    (0..tokenizer.vocab_size() as u32)
        .map(|id| {
            tokenizer
                .id_to_token(id)
                .ok_or_else(|| ConvertError::Output {
                    path: path.to_path_buf(),
                    reason: format!("the tokenizer has no token for id {id}"),
                })
        })
        .collect()
}

/// The variables of the model's `TransformerSpec`, by name.
pub fn variables(
    translator: &Translator,
    config: &TransformerConfig,
) -> Result<BTreeMap<String, Variable>, ConvertError> {
    let names = TorchNames::default();
    let state = torch_state_dict(&translator.model, config, &names)?;
    let export_error = |reason: String| ConvertError::Output {
        path: translator
            .checkpoint
            .clone()
            .unwrap_or_else(|| PathBuf::from("model.bin")),
        reason,
    };
    let tensor = |key: &str| -> Result<(Vec<f32>, Vec<usize>), ConvertError> {
        let data: &TensorData = state
            .get(key)
            .ok_or_else(|| export_error(format!("no tensor `{key}` in the PyTorch layout")))?;
        let values = data
            .try_to_vec::<f32>()
            .map_err(|e| export_error(format!("tensor `{key}`: {e:?}")))?;
        Ok((values, data.shape().iter().copied().collect()))
    };
    let d = config.d_model;
    let mut out = BTreeMap::new();
    let mut put = |name: String, (values, shape): (Vec<f32>, Vec<usize>)| {
        out.insert(name, Variable::floats(&values, &shape));
    };
    // Rows `rows` of a packed `[3d, d]` weight or `[3d]` bias.
    let rows = |(values, shape): (Vec<f32>, Vec<usize>), rows: std::ops::Range<usize>| {
        let width = if shape.len() == 2 { shape[1] } else { 1 };
        let mut shape = shape;
        shape[0] = rows.len();
        (values[rows.start * width..rows.end * width].to_vec(), shape)
    };
    let linear = |put: &mut dyn FnMut(String, (Vec<f32>, Vec<usize>)),
                  ours: &str,
                  theirs: &str|
     -> Result<(), ConvertError> {
        put(
            format!("{ours}/weight"),
            tensor(&format!("{theirs}.weight"))?,
        );
        put(format!("{ours}/bias"), tensor(&format!("{theirs}.bias"))?);
        Ok(())
    };
    let norm = |put: &mut dyn FnMut(String, (Vec<f32>, Vec<usize>)),
                ours: &str,
                theirs: &str|
     -> Result<(), ConvertError> {
        put(
            format!("{ours}/gamma"),
            tensor(&format!("{theirs}.weight"))?,
        );
        put(format!("{ours}/beta"), tensor(&format!("{theirs}.bias"))?);
        Ok(())
    };

    let t = &names.transformer;
    put(
        "encoder/embeddings_0/weight".into(),
        tensor(&names.source_embedding)?,
    );
    put(
        "decoder/embeddings/weight".into(),
        tensor(&names.target_embedding)?,
    );
    put(
        "decoder/projection/weight".into(),
        tensor(&format!("{}weight", names.output_projection))?,
    );
    if !config.tie_output_projection || config.output_bias() {
        put(
            "decoder/projection/bias".into(),
            tensor(&format!("{}bias", names.output_projection))?,
        );
    }
    let table = positional::table_in(config.max_positions, d, config.positions());
    for side in ["encoder", "decoder"] {
        put(
            format!("{side}/position_encodings/encodings"),
            (table.clone(), vec![config.max_positions, d]),
        );
    }
    // Self-attention (its fused Q;K;V as PyTorch packs it, then the output projection) and the
    // feed-forward block, the same in both stacks; `ffn_norm` is PyTorch's name for the latter's
    // LayerNorm (`norm2` in an encoder layer, `norm3` in a decoder layer).
    let shared_blocks = |put: &mut dyn FnMut(String, (Vec<f32>, Vec<usize>)),
                         ours: &str,
                         theirs: &str,
                         ffn_norm: &str|
     -> Result<(), ConvertError> {
        put(
            format!("{ours}/self_attention/linear_0/weight"),
            tensor(&format!("{theirs}.self_attn.in_proj_weight"))?,
        );
        put(
            format!("{ours}/self_attention/linear_0/bias"),
            tensor(&format!("{theirs}.self_attn.in_proj_bias"))?,
        );
        linear(
            put,
            &format!("{ours}/self_attention/linear_1"),
            &format!("{theirs}.self_attn.out_proj"),
        )?;
        norm(
            put,
            &format!("{ours}/self_attention/layer_norm"),
            &format!("{theirs}.norm1"),
        )?;
        linear(
            put,
            &format!("{ours}/ffn/linear_0"),
            &format!("{theirs}.linear1"),
        )?;
        linear(
            put,
            &format!("{ours}/ffn/linear_1"),
            &format!("{theirs}.linear2"),
        )?;
        norm(
            put,
            &format!("{ours}/ffn/layer_norm"),
            &format!("{theirs}.{ffn_norm}"),
        )
    };
    for i in 0..config.n_encoder_layers {
        let (ours, theirs) = (
            format!("encoder/layer_{i}"),
            format!("{t}encoder.layers.{i}"),
        );
        shared_blocks(&mut put, &ours, &theirs, "norm2")?;
    }
    for i in 0..config.n_decoder_layers {
        let (ours, theirs) = (
            format!("decoder/layer_{i}"),
            format!("{t}decoder.layers.{i}"),
        );
        shared_blocks(&mut put, &ours, &theirs, "norm3")?;
        // Cross-attention: the query, then the fused key and value.
        let weight = tensor(&format!("{theirs}.multihead_attn.in_proj_weight"))?;
        let bias = tensor(&format!("{theirs}.multihead_attn.in_proj_bias"))?;
        put(
            format!("{ours}/attention/linear_0/weight"),
            rows(weight.clone(), 0..d),
        );
        put(
            format!("{ours}/attention/linear_0/bias"),
            rows(bias.clone(), 0..d),
        );
        put(
            format!("{ours}/attention/linear_1/weight"),
            rows(weight, d..3 * d),
        );
        put(
            format!("{ours}/attention/linear_1/bias"),
            rows(bias, d..3 * d),
        );
        linear(
            &mut put,
            &format!("{ours}/attention/linear_2"),
            &format!("{theirs}.multihead_attn.out_proj"),
        )?;
        norm(
            &mut put,
            &format!("{ours}/attention/layer_norm"),
            &format!("{theirs}.norm2"),
        )?;
    }
    if config.has_final_norm() {
        norm(&mut put, "encoder/layer_norm", &format!("{t}encoder.norm"))?;
        norm(&mut put, "decoder/layer_norm", &format!("{t}decoder.norm"))?;
    }

    // CTranslate2's `ActivationType`: RELU 0, GELUTanh 1, SWISH 2, GELU 3.
    let activation: i8 = match config.activation {
        Activation::Relu => 0,
        Activation::Swish => 2,
        Activation::Gelu => 3,
    };
    let heads = i16::try_from(config.n_heads).map_err(|_| {
        export_error(format!(
            "{} heads do not fit CTranslate2's int16",
            config.n_heads
        ))
    })?;
    let pre_norm = i8::from(config.norm_position == NormPosition::Pre);
    for side in ["encoder", "decoder"] {
        out.insert(format!("{side}/activation"), Variable::int8(activation));
        out.insert(format!("{side}/num_heads"), Variable::int16(heads));
        out.insert(format!("{side}/pre_norm"), Variable::int8(pre_norm));
        // Embeddings times sqrt(d_model), as Rosetta's ScaledEmbedding (unless unscaled).
        out.insert(
            format!("{side}/scale_embeddings"),
            Variable::int8(i8::from(config.scale_embeddings())),
        );
    }
    out.insert("encoder/embeddings_merge".into(), Variable::int8(0));
    out.insert("encoder/multi_query_attention".into(), Variable::int8(0));
    for flag in [
        "alibi",
        "alibi_use_positive_positions",
        "scale_alibi",
        "start_from_zero_embedding",
    ] {
        out.insert(format!("decoder/{flag}"), Variable::int8(0));
    }
    out.insert("decoder/alignment_layer".into(), Variable::int16(-1));
    out.insert("decoder/alignment_heads".into(), Variable::int16(1));
    Ok(out)
}

/// The bytes of `model.bin` holding `variables`. A large variable equal to one written before
/// it (a shared or tied embedding table: up to three copies of the largest matrix) is written
/// as an alias of that one, as CTranslate2's own converters do.
pub fn model_bin(variables: &BTreeMap<String, Variable>) -> Result<Vec<u8>, ConvertError> {
    let too_big = |what: String| ConvertError::Output {
        path: PathBuf::from("model.bin"),
        reason: what,
    };
    let mut out = Vec::new();
    let string = |out: &mut Vec<u8>, text: &str| -> Result<(), ConvertError> {
        let length = u16::try_from(text.len() + 1)
            .map_err(|_| too_big(format!("name `{text}` is too long")))?;
        out.extend(length.to_le_bytes());
        out.extend(text.as_bytes());
        out.push(0);
        Ok(())
    };
    out.extend(BINARY_VERSION.to_le_bytes());
    string(&mut out, SPEC_NAME)?;
    out.extend(SPEC_REVISION.to_le_bytes());
    // Aliases: the later of two equal large variables names the earlier one.
    let mut first_of: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    let mut aliases: Vec<(&str, &str)> = Vec::new();
    let mut written: Vec<(&String, &Variable)> = Vec::new();
    for (name, variable) in variables {
        if variable.bytes.len() >= ALIAS_MIN_BYTES {
            let key = format!(
                "{:?}/{}/{}",
                variable.shape,
                variable.dtype.id(),
                rosetta_infer::checkpoint::sha256_hex(&variable.bytes)
            );
            if let Some(&original) = first_of.get(&key)
                && variables.get(original).is_some_and(|o| o == variable)
            {
                aliases.push((name, original));
                continue;
            }
            first_of.insert(key, name);
        }
        written.push((name, variable));
    }
    let count = u32::try_from(written.len()).map_err(|_| too_big("too many variables".into()))?;
    out.extend(count.to_le_bytes());
    for (name, variable) in written {
        string(&mut out, name)?;
        let rank = u8::try_from(variable.shape.len())
            .map_err(|_| too_big(format!("`{name}` has too many dimensions")))?;
        out.push(rank);
        for dim in &variable.shape {
            out.extend(dim.to_le_bytes());
        }
        out.push(variable.dtype.id());
        let size = u32::try_from(variable.bytes.len())
            .map_err(|_| too_big(format!("`{name}` is over 4 GiB")))?;
        out.extend(size.to_le_bytes());
        out.extend(&variable.bytes);
    }
    let count = u32::try_from(aliases.len()).map_err(|_| too_big("too many aliases".into()))?;
    out.extend(count.to_le_bytes());
    for (alias, original) in aliases {
        string(&mut out, alias)?;
        string(&mut out, original)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `model.bin` as CTranslate2's reader does (`src/models/model.cc`).
    struct Reader<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl Reader<'_> {
        fn take(&mut self, n: usize) -> &[u8] {
            let slice = &self.bytes[self.at..self.at + n];
            self.at += n;
            slice
        }

        fn u32(&mut self) -> u32 {
            u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
        }

        fn string(&mut self) -> String {
            let len = u16::from_le_bytes(self.take(2).try_into().expect("2 bytes")) as usize;
            let raw = self.take(len);
            assert_eq!(raw[len - 1], 0, "NUL-terminated");
            String::from_utf8(raw[..len - 1].to_vec()).expect("utf-8")
        }
    }

    fn read(bytes: &[u8]) -> (u32, String, u32, BTreeMap<String, Variable>) {
        let mut r = Reader { bytes, at: 0 };
        let version = r.u32();
        let name = r.string();
        let revision = r.u32();
        let count = r.u32();
        let mut variables = BTreeMap::new();
        for _ in 0..count {
            let name = r.string();
            let rank = r.take(1)[0] as usize;
            let shape: Vec<u32> = (0..rank).map(|_| r.u32()).collect();
            let dtype = match r.take(1)[0] {
                0 => Dtype::F32,
                1 => Dtype::I8,
                2 => Dtype::I16,
                other => panic!("dtype {other}"),
            };
            let size = r.u32() as usize;
            let bytes = r.take(size).to_vec();
            variables.insert(
                name,
                Variable {
                    shape,
                    dtype,
                    bytes,
                },
            );
        }
        let aliases = r.u32();
        for _ in 0..aliases {
            let alias = r.string();
            let original = r.string();
            let variable = variables[&original].clone();
            variables.insert(alias, variable);
        }
        assert_eq!(r.at, bytes.len(), "nothing after the aliases");
        (version, name, revision, variables)
    }

    #[test]
    fn model_bin_reads_back_as_written() {
        let mut variables = BTreeMap::new();
        variables.insert(
            "decoder/embeddings/weight".to_string(),
            Variable::floats(&[1.0, -2.5, 3.0, 0.5, 0.0, 7.25], &[3, 2]),
        );
        variables.insert("decoder/num_heads".to_string(), Variable::int16(4));
        variables.insert("encoder/pre_norm".to_string(), Variable::int8(1));
        // A large table under two names is written once, the second name an alias.
        let table: Vec<f32> = (0..2048).map(|v| v as f32).collect();
        for name in ["encoder/embeddings_0/weight", "decoder/projection/weight"] {
            variables.insert(name.to_string(), Variable::floats(&table, &[1024, 2]));
        }
        let bytes = model_bin(&variables).expect("written");
        assert!(
            bytes.len() < 2 * 2048 * 4,
            "the table is written once ({} bytes)",
            bytes.len()
        );
        // Header: version 6, "TransformerSpec" with its length 16 (15 + NUL), revision 7.
        assert_eq!(&bytes[..4], &6u32.to_le_bytes());
        assert_eq!(&bytes[4..6], &16u16.to_le_bytes());
        assert_eq!(&bytes[6..21], b"TransformerSpec");
        assert_eq!(bytes[21], 0);
        let (version, name, revision, read_back) = read(&bytes);
        assert_eq!(
            (version, name.as_str(), revision),
            (6, "TransformerSpec", 7)
        );
        assert_eq!(read_back, variables);
        let weight = &read_back["decoder/embeddings/weight"];
        assert_eq!(weight.shape, vec![3, 2]);
        assert_eq!(&weight.bytes[4..8], &(-2.5f32).to_le_bytes());
        assert_eq!(read_back["decoder/num_heads"].bytes, 4i16.to_le_bytes());
    }

    /// `--quantize int8`: the linear maps' weights become int8 with per-row scales, within half
    /// a step of the float values; embeddings and layer norms stay float32; written and read
    /// back.
    #[test]
    fn int8_quantizes_the_linear_weights_only() {
        let mut variables = BTreeMap::new();
        let weight = [0.5f32, -1.0, 0.25, 0.0, 0.0, 0.0, 2.0, 1.5, -0.75];
        for name in [
            "encoder/layer_0/ffn/linear_0/weight",
            "decoder/layer_1/self_attention/linear_1/weight",
            "decoder/projection/weight",
            "decoder/embeddings/weight",
            "encoder/layer_0/ffn/layer_norm/gamma",
        ] {
            variables.insert(name.to_string(), Variable::floats(&weight, &[3, 3]));
        }
        variables.insert(
            "encoder/layer_0/ffn/linear_0/bias".to_string(),
            Variable::floats(&[1.0, 2.0, 3.0], &[3]),
        );
        let before = variables.clone();
        quantize_int8(&mut variables);
        for name in [
            "encoder/layer_0/ffn/linear_0/weight",
            "decoder/layer_1/self_attention/linear_1/weight",
            "decoder/projection/weight",
        ] {
            let q = &variables[name];
            assert_eq!(
                (q.dtype, q.shape.clone()),
                (Dtype::I8, vec![3, 3]),
                "{name}"
            );
            let scale = &variables[&format!("{name}_scale")];
            assert_eq!((scale.dtype, scale.shape.clone()), (Dtype::F32, vec![3]));
            let scales: Vec<f32> = scale
                .bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            // Row 0: max 1.0; row 1: zeros (scale 1); row 2: max 2.0.
            assert_eq!(scales, vec![127.0, 1.0, 63.5]);
            for (i, (&byte, &w)) in q.bytes.iter().zip(&weight).enumerate() {
                let back = f32::from(byte as i8) / scales[i / 3];
                assert!(
                    (back - w).abs() <= 0.5 / scales[i / 3] + 1e-6,
                    "{name}[{i}]"
                );
            }
            assert_eq!(q.bytes[1] as i8, -127);
        }
        for name in [
            "decoder/embeddings/weight",
            "encoder/layer_0/ffn/layer_norm/gamma",
            "encoder/layer_0/ffn/linear_0/bias",
        ] {
            assert_eq!(variables[name], before[name], "{name} untouched");
        }
        let (_, _, _, read_back) = read(&model_bin(&variables).expect("written"));
        assert_eq!(read_back, variables);
    }
}
