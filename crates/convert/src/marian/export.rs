//! `rosetta export --format hf`: a Rosetta model as a MarianMT directory that
//! `MarianMTModel.from_pretrained` and `AutoTokenizer.from_pretrained` load: `config.json`,
//! `generation_config.json`, `model.safetensors` and the tokenizer.
//!
//! An imported model goes back as it came (its MarianTokenizer files, its generation settings).
//! A model Rosetta trained goes with its `tokenizer.json` as a `PreTrainedTokenizerFast`; its
//! interleaved sinusoidal positions are not Marian's halves, so every weight's hidden dimension
//! is permuted into Marian's layout (the model computes the same function: LayerNorm, the
//! residual sums and the attention products do not depend on the order of the dimensions, and
//! the permuted positions are Marian's). A setting Marian cannot express (pre-norm, a final
//! LayerNorm) is refused, naming the key.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rosetta_data::SPECIAL_TOKEN_NAMES;
use rosetta_data::direction::tag_of;
use rosetta_data::pipeline::JOINT_TOKENIZER;
use rosetta_infer::{LengthNorm, Translator};
use rosetta_model::burn::tensor::TensorData;
use rosetta_model::export::{state_dict_of, write_safetensors};
use rosetta_model::{PositionLayout, TransformerConfig};
use serde_json::{Value, json};

use super::config::MarianConfig;
use super::{generation, weights};
use crate::error::ConvertError;

/// What an export wrote, and what of the model's decoding `transformers` cannot express.
#[derive(Debug, Clone, PartialEq)]
pub struct HfExport {
    /// The files written (in the staging directory; the caller moves them into place).
    pub files: Vec<PathBuf>,
    /// One line per decoding setting written approximately.
    pub notes: Vec<String>,
}

/// Writes `translator`'s model into the (empty) directory `dir` as a MarianMT directory.
pub fn write_hf(translator: &Translator, dir: &Path) -> Result<HfExport, ConvertError> {
    let config = &translator.config;
    let marian = MarianConfig::of(config)?;
    let tokens = config.special_tokens();
    let mut files = Vec::new();
    let mut notes = Vec::new();

    // Weights, in Marian's names and layout.
    let mut state = state_dict_of(&translator.model, &weights::layout(config))?;
    state = weights::complete_for_export(state, config);
    if config.positions() == PositionLayout::Interleaved {
        permute_hidden(&mut state, config.d_model)?;
    }
    let weights_path = dir.join("model.safetensors");
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    write_safetensors(&state, metadata, &weights_path)?;
    files.push(weights_path);

    files.push(write_json(dir, "config.json", &marian.to_json())?);

    let decoding = &translator.decoding;
    if decoding.length_norm == LengthNorm::Gnmt {
        notes.push(format!(
            "the length penalty is GNMT's ((5 + len) / 6)^{}; transformers divides by len^length_penalty: written as length_penalty = {}",
            decoding.alpha, decoding.alpha
        ));
    }
    let mut written = decoding.clone();
    if decoding.max_len_a > 0.0 {
        written.max_len_a = 0.0;
        written.max_len_b = config.max_positions.saturating_sub(2);
        notes.push(format!(
            "the output length limit {} · source + {} depends on the source; transformers' max_length does not: written as the model's {} positions (`rosetta translate --max-len-a 0 --max-len-b {}` decodes with that limit)",
            decoding.max_len_a,
            decoding.max_len_b,
            config.max_positions,
            written.max_len_b
        ));
    }
    files.push(write_json(
        dir,
        "generation_config.json",
        &generation::to_json(&written, tokens.pad, tokens.eos, tokens.bos),
    )?);

    match translator.tokenizers.marian_vocabulary() {
        Some(vocabulary) => {
            vocabulary.save(dir)?;
            files.extend(vocabulary.files().iter().map(|(name, _)| dir.join(name)));
        }
        None => {
            if !translator.tokenizers.joint {
                return Err(ConvertError::Unsupported {
                    key: "share_embeddings",
                    reason: "has two vocabularies (tokenizer.source.json and tokenizer.target.json); a Hugging Face tokenizer directory holds one: train with `data.tokenizer.joint = true`".into(),
                });
            }
            let path = dir.join(JOINT_TOKENIZER);
            let tags: Vec<String> = translator
                .directions
                .iter()
                .map(|d| tag_of(d.target.as_str()))
                .collect();
            let tokenizer = hf_tokenizer_json(&translator.tokenizers.source.to_json()?, &tags)
                .map_err(|reason| ConvertError::Json {
                    path: path.clone(),
                    reason,
                })?;
            files.push(write_json(dir, JOINT_TOKENIZER, &tokenizer)?);
            if !translator.directions.is_empty() {
                notes.push(format!(
                    "a multilingual model: start each source with its target language's tag and a space, as for OPUS-MT's multilingual models (`{} …`); the tags are {}",
                    tags[0],
                    tags.join(", ")
                ));
            }
            files.push(write_json(
                dir,
                "tokenizer_config.json",
                &fast_tokenizer_config(config),
            )?);
        }
    }
    Ok(HfExport { files, notes })
}

/// A trained tokenizer's `tokenizer.json` text as `transformers` should load it: a multilingual
/// model's language `tags` absorb the whitespace after them (`rstrip`), so that `>>de<< A man`,
/// Marian's convention, encodes as Rosetta frames it (the tag, then the tokens of `A man`; the
/// byte-level pre-tokenizer would otherwise read ` A` as another token than `A`).
fn hf_tokenizer_json(json: &str, tags: &[String]) -> Result<Value, String> {
    let mut tokenizer: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let added = tokenizer
        .get_mut("added_tokens")
        .and_then(Value::as_array_mut)
        .ok_or("no `added_tokens` list")?;
    for tag in tags {
        let token = added
            .iter_mut()
            .find(|t| t.get("content").and_then(Value::as_str) == Some(tag.as_str()))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| format!("the language tag {tag} is not an added token"))?;
        token.insert("rstrip".into(), Value::Bool(true));
    }
    Ok(tokenizer)
}

/// `tokenizer_config.json` of a Rosetta `tokenizer.json` as a `PreTrainedTokenizerFast`.
fn fast_tokenizer_config(config: &TransformerConfig) -> Value {
    let tokens = config.special_tokens();
    let name = |id: u32| {
        SPECIAL_TOKEN_NAMES
            .get(id as usize)
            .copied()
            .unwrap_or("<unk>")
    };
    json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "pad_token": name(tokens.pad),
        "unk_token": name(tokens.unk),
        "bos_token": name(tokens.bos),
        "eos_token": name(tokens.eos),
        "model_max_length": config.max_positions,
        "clean_up_tokenization_spaces": false,
        "add_prefix_space": false,
    })
}

fn write_json(dir: &Path, name: &str, value: &Value) -> Result<PathBuf, ConvertError> {
    let path = dir.join(name);
    let text = serde_json::to_string_pretty(value).map_err(|e| ConvertError::Json {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    std::fs::write(&path, text + "\n").map_err(ConvertError::io(&path))?;
    Ok(path)
}

/// The dimension of the residual stream that Marian's dimension `j` holds: the sine of
/// frequency `j` (interleaved at `2j`) in the first half, its cosine (at `2j + 1`) in the second.
fn interleaved_dimension(j: usize, d: usize) -> usize {
    if j < d / 2 {
        2 * j
    } else {
        2 * (j - d / 2) + 1
    }
}

/// Which axis of a MarianMT tensor runs over the residual stream's dimensions, by name: the
/// embedding tables' and the head's columns, the inputs of the attention and first feed-forward
/// projections, the outputs of the attention's output and second feed-forward projections, the
/// LayerNorms. `None` for tensors in another space (query/key/value and first feed-forward
/// biases, the logits bias).
fn hidden_axis(key: &str) -> Option<usize> {
    let columns = [
        ".embed_tokens.weight",
        "shared.weight",
        "lm_head.weight",
        "q_proj.weight",
        "k_proj.weight",
        "v_proj.weight",
        "fc1.weight",
    ];
    let rows = [
        "out_proj.weight",
        "out_proj.bias",
        "fc2.weight",
        "fc2.bias",
        "layer_norm.weight",
        "layer_norm.bias",
    ];
    if columns.iter().any(|s| key.ends_with(s)) {
        Some(1)
    } else if rows.iter().any(|s| key.ends_with(s)) {
        Some(0)
    } else {
        None
    }
}

/// Permutes the residual stream of `state` (a MarianMT state dict of a model with interleaved
/// positions) into Marian's sine-then-cosine layout.
fn permute_hidden(state: &mut BTreeMap<String, TensorData>, d: usize) -> Result<(), ConvertError> {
    let order: Vec<usize> = (0..d).map(|j| interleaved_dimension(j, d)).collect();
    for (key, data) in state.iter_mut() {
        let Some(axis) = hidden_axis(key) else {
            continue;
        };
        let shape: Vec<usize> = data.shape().iter().copied().collect();
        let values = data
            .try_to_vec::<f32>()
            .map_err(|e| ConvertError::Unsupported {
                key: "weights",
                reason: format!("tensor `{key}`: {e:?}"),
            })?;
        let permuted = match (axis, shape.as_slice()) {
            (0, [n]) if *n == d => order.iter().map(|&i| values[i]).collect(),
            (0, [n, cols]) if *n == d => order
                .iter()
                .flat_map(|&i| values[i * cols..(i + 1) * cols].iter().copied())
                .collect(),
            (1, [rows, n]) if *n == d => (0..*rows)
                .flat_map(|r| order.iter().map(move |&i| r * d + i))
                .map(|at| values[at])
                .collect(),
            _ => {
                return Err(ConvertError::Unsupported {
                    key: "d_model",
                    reason: format!("tensor `{key}` has shape {shape:?}, no axis of {d}"),
                });
            }
        };
        *data = TensorData::new(permuted, shape);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosetta_model::positional::table_in;

    /// The permutation turns the interleaved positional table into Marian's, row by row: the
    /// model with permuted weights adds Marian's positions where ours added the paper's.
    #[test]
    fn the_permutation_maps_interleaved_positions_to_halves() {
        let d = 12;
        let interleaved = table_in(7, d, PositionLayout::Interleaved);
        let mut state = BTreeMap::from([(
            "model.shared.weight".to_string(),
            TensorData::new(interleaved, [7, d]),
        )]);
        permute_hidden(&mut state, d).expect("permutes");
        let permuted = state["model.shared.weight"]
            .try_to_vec::<f32>()
            .expect("f32");
        assert_eq!(permuted, table_in(7, d, PositionLayout::Halves));
    }

    #[test]
    fn rows_and_columns_follow_the_residual_stream() {
        assert_eq!(
            hidden_axis("model.encoder.layers.0.self_attn.q_proj.weight"),
            Some(1)
        );
        assert_eq!(
            hidden_axis("model.encoder.layers.0.self_attn.q_proj.bias"),
            None
        );
        assert_eq!(
            hidden_axis("model.decoder.layers.1.encoder_attn.out_proj.bias"),
            Some(0)
        );
        assert_eq!(hidden_axis("model.decoder.layers.1.fc1.bias"), None);
        assert_eq!(
            hidden_axis("model.decoder.layers.1.final_layer_norm.weight"),
            Some(0)
        );
        assert_eq!(hidden_axis("final_logits_bias"), None);
        // A [d, 2] matrix permuted by rows, a [2, d] one by columns.
        let d = 4;
        let mut state = BTreeMap::from([
            (
                "x.fc2.weight".to_string(),
                TensorData::new((0..8).map(|v| v as f32).collect::<Vec<_>>(), [d, 2]),
            ),
            (
                "x.fc1.weight".to_string(),
                TensorData::new((0..8).map(|v| v as f32).collect::<Vec<_>>(), [2, d]),
            ),
        ]);
        permute_hidden(&mut state, d).expect("permutes");
        // Order of dimensions: 0, 2, 1, 3.
        assert_eq!(
            state["x.fc2.weight"].try_to_vec::<f32>().expect("f32"),
            [0., 1., 4., 5., 2., 3., 6., 7.]
        );
        assert_eq!(
            state["x.fc1.weight"].try_to_vec::<f32>().expect("f32"),
            [0., 2., 1., 3., 4., 6., 5., 7.]
        );
    }
}
