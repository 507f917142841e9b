//! Importing a PyTorch checkpoint (`torch.save(model.state_dict())`, or the same state dict
//! saved as safetensors) of a model built around `torch.nn.Transformer` into a Rosetta
//! [`Transformer`]. [`crate::export`] writes the same layout back out.
//!
//! PyTorch keeps the query, key and value projections of each attention packed in one
//! `in_proj_weight` `[3d, d]` and stores linear weights as `[out, in]`; LayerNorm has
//! `weight`/`bias`. The import reads the file with Burn's own PyTorch reader
//! ([`burn::store::PytorchStore`]), splits and transposes what needs it, checks every shape
//! against the configured model, and applies the tensors with Burn's store machinery. Every
//! parameter of the model must be filled: nothing is silently left at its initial value.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

#[cfg(not(target_arch = "wasm32"))]
use burn::store::PytorchStore;
use burn::store::burn_pack::Tensor as PackTensor;
use burn::store::{ModuleSnapshot, ModuleStore, SafetensorsStore, bridge};
use burn::tensor::TensorData;

use crate::config::TransformerConfig;
use crate::error::ModelError;
use crate::transformer::Transformer;

/// Where a PyTorch checkpoint keeps each part of the model (the keys of its state dict).
///
/// The defaults fit a module such as
/// ```python
/// class Seq2Seq(nn.Module):
///     def __init__(self):
///         self.source_embedding = nn.Embedding(src_vocab, d_model)
///         self.target_embedding = nn.Embedding(tgt_vocab, d_model)
///         self.transformer = nn.Transformer(d_model, nhead, ..., batch_first=True)
///         self.output_projection = nn.Linear(d_model, tgt_vocab)
/// ```
/// (the layout `scripts/make_parity_fixture.py` writes).
#[derive(Debug, Clone)]
pub struct TorchNames {
    /// Prefix of the `nn.Transformer` submodule, with its trailing dot (may be empty).
    pub transformer: String,
    /// Key of the source embedding table `[src_vocab, d_model]`.
    pub source_embedding: String,
    /// Key of the target embedding table (ignored when embeddings are shared).
    pub target_embedding: String,
    /// Prefix of the output `nn.Linear` (ignored when the projection is tied).
    pub output_projection: String,
}

impl Default for TorchNames {
    fn default() -> Self {
        Self {
            transformer: "transformer.".into(),
            source_embedding: "source_embedding.weight".into(),
            target_embedding: "target_embedding.weight".into(),
            output_projection: "output_projection.".into(),
        }
    }
}

/// How one PyTorch tensor becomes one Rosetta parameter.
#[derive(Debug, Clone)]
pub enum Transform {
    /// Copied as is.
    Same,
    /// A `[1, n]` row (Marian's `final_logits_bias`), as a vector `[n]`.
    Row,
    /// A `[out, in]` linear weight, transposed to Burn's `[in, out]`.
    Transpose,
    /// Rows `range` of a packed `[3d, d]` projection, then transposed.
    RowsTransposed(Range<usize>),
    /// Elements `range` of a packed `[3d]` bias.
    Elements(Range<usize>),
}

/// One parameter to fill: its Rosetta path, the PyTorch key it comes from, the transform and
/// the shape the configured model expects. A list of them is a state dict's layout, which
/// [`apply_state_dict`] imports and [`crate::export::state_dict_of`] exports.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The Rosetta parameter's path (`encoder.layers.0.self_attention.w_q.weight`).
    pub target: String,
    /// The key in the foreign state dict.
    pub source: String,
    /// How the foreign tensor becomes ours.
    pub transform: Transform,
    /// The shape of our parameter.
    pub shape: Vec<usize>,
}

/// Imports a PyTorch `nn.Transformer`-based checkpoint into a [`Transformer`].
#[derive(Debug, Clone)]
pub struct TorchImport {
    path: PathBuf,
    names: TorchNames,
    top_level_key: Option<String>,
}

impl TorchImport {
    /// Prepares an import of the `.pt`/`.pth` file (or `.safetensors` file) at `path` with the
    /// default [`TorchNames`].
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            names: TorchNames::default(),
            top_level_key: None,
        }
    }

    /// Uses other key names.
    pub fn with_names(mut self, names: TorchNames) -> Self {
        self.names = names;
        self
    }

    /// Reads the state dict from under `key` (e.g. `"model"` or `"state_dict"`) of a checkpoint
    /// that holds more than the weights.
    pub fn with_top_level_key(mut self, key: impl Into<String>) -> Self {
        self.top_level_key = Some(key.into());
        self
    }

    /// Fills every parameter of `model`, built from `config`, from the checkpoint.
    pub fn load_into(
        &self,
        model: &mut Transformer,
        config: &TransformerConfig,
    ) -> Result<(), ModelError> {
        let tensors = self.read()?;
        let entries = layout(&self.names, config);
        let mut used: std::collections::BTreeSet<&str> =
            entries.iter().map(|e| e.source.as_str()).collect();
        // PyTorch lists a shared or tied parameter under each of its names: those copies are
        // accepted when they hold the very values of the table they alias. The output
        // projection is tied to the target embedding (the source one when they are shared).
        let n = &self.names;
        let output_weight = format!("{}weight", n.output_projection);
        let target_table = if config.share_embeddings {
            n.source_embedding.as_str()
        } else {
            n.target_embedding.as_str()
        };
        let aliases = [
            (
                config.share_embeddings,
                n.target_embedding.as_str(),
                n.source_embedding.as_str(),
                "share_embeddings",
            ),
            (
                config.tie_output_projection,
                output_weight.as_str(),
                target_table,
                "tie_output_projection",
            ),
        ];
        for (applies, alias, table, setting) in aliases {
            let (Some(copy), Some(original)) = (tensors.get(alias), tensors.get(table)) else {
                continue;
            };
            if !applies {
                continue;
            }
            if copy != original {
                return Err(ModelError::Apply {
                    path: self.path.clone(),
                    reason: format!(
                        "`{alias}` differs from `{table}`, so the checkpoint's model is not {setting}; set `{setting} = false`"
                    ),
                });
            }
            used.insert(alias);
        }
        let unused: Vec<&str> = tensors
            .keys()
            .map(String::as_str)
            .filter(|key| !used.contains(key))
            .collect();
        if !unused.is_empty() {
            let hint = if unused
                .iter()
                .any(|k| k.ends_with("encoder.norm.weight") || k.ends_with("decoder.norm.weight"))
            {
                " (it has the stacks' final LayerNorms: set `final_norm = true` in the model configuration)"
            } else {
                ""
            };
            return Err(ModelError::Apply {
                path: self.path.clone(),
                reason: format!(
                    "the checkpoint holds tensors this model configuration has no place for: {}{hint}",
                    unused.join(", ")
                ),
            });
        }
        apply_state_dict(model, &tensors, &entries, &self.path)
    }

    /// Reads every tensor of the checkpoint as `f32` data, by key.
    fn read(&self) -> Result<BTreeMap<String, TensorData>, ModelError> {
        read_state_dict(&self.path, self.top_level_key.as_deref())
    }
}

/// Every tensor of a `torch.save` pickle, from under `top_level_key` if given, with Burn's
/// reader.
#[cfg(not(target_arch = "wasm32"))]
fn read_pickle(
    path: &Path,
    top_level_key: Option<&str>,
) -> Result<BTreeMap<String, PackTensor>, String> {
    let mut store = PytorchStore::from_file(path).map_indices_contiguous(false);
    if let Some(key) = top_level_key {
        store = store.with_top_level_key(key);
    }
    store.get_all_tensors().cloned().map_err(|e| e.to_string())
}

/// The browser build reads safetensors only (Burn's pickle reader is not compiled for it).
#[cfg(target_arch = "wasm32")]
fn read_pickle(
    _path: &Path,
    _top_level_key: Option<&str>,
) -> Result<BTreeMap<String, PackTensor>, String> {
    Err("PyTorch pickles are not read in the browser build; convert the file to safetensors".into())
}

/// Reads every tensor of a PyTorch checkpoint (`torch.save` pickle: `.pt`, `.pth`, `.bin`) or
/// safetensors file as `f32` data, by key, with Burn's readers (`PytorchStore`,
/// [`SafetensorsStore`]); from under `top_level_key` of a pickle that nests its state dict.
pub fn read_state_dict(
    path: &Path,
    top_level_key: Option<&str>,
) -> Result<BTreeMap<String, TensorData>, ModelError> {
    let read_error = |reason: String| ModelError::TorchRead {
        path: path.to_path_buf(),
        reason,
    };
    if !path.is_file() {
        return Err(read_error("no such file".into()));
    }
    let is_safetensors = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("safetensors"));
    let all = if is_safetensors {
        // A safetensors file is a flat map of tensors: there is no nesting to undo.
        if let Some(key) = top_level_key {
            return Err(read_error(format!(
                "a safetensors file has no nested state dict (top-level key `{key}` given)"
            )));
        }
        let mut store = SafetensorsStore::from_file(path);
        store
            .get_all_tensors()
            .map_err(|e| read_error(e.to_string()))?
            .clone()
    } else {
        read_pickle(path, top_level_key).map_err(read_error)?
    };
    all.iter()
        .map(|(name, tensor)| {
            let data =
                bridge::to_data(tensor).map_err(|e| read_error(format!("tensor `{name}`: {e}")))?;
            Ok((name.clone(), data.convert::<f32>()))
        })
        .collect()
}

/// Fills every parameter of `model` from `tensors` (read from `path`) as `entries` lay them
/// out: each tensor transformed and its shape checked ([`ModelError::MissingTensor`],
/// [`ModelError::ShapeMismatch`]), and every parameter of the model filled, none left at its
/// initial value ([`ModelError::Apply`]). Tensors of `tensors` that no entry names are the
/// caller's to refuse or accept.
pub fn apply_state_dict(
    model: &mut Transformer,
    tensors: &BTreeMap<String, TensorData>,
    entries: &[Entry],
    path: &Path,
) -> Result<(), ModelError> {
    let mut converted = Vec::with_capacity(entries.len());
    for entry in entries {
        let data = tensors
            .get(&entry.source)
            .ok_or_else(|| ModelError::MissingTensor {
                path: path.to_path_buf(),
                key: entry.source.clone(),
                target: entry.target.clone(),
            })?;
        let data = apply_transform(data, entry, path)?;
        converted.push(bridge::from_data(data, entry.target.clone(), None));
    }
    let result = model.apply(converted, None, None, false);
    let apply_error = |reason: String| ModelError::Apply {
        path: path.to_path_buf(),
        reason,
    };
    if !result.errors.is_empty() {
        return Err(apply_error(format!("{:?}", result.errors)));
    }
    if !result.missing.is_empty() {
        let missing: Vec<_> = result
            .missing
            .iter()
            .map(|(path, _)| path.as_str())
            .collect();
        return Err(apply_error(format!(
            "parameters left unset: {}",
            missing.join(", ")
        )));
    }
    if !result.unused.is_empty() {
        return Err(apply_error(format!(
            "tensors matched no parameter: {}",
            result.unused.join(", ")
        )));
    }
    Ok(())
}

/// The full list of parameters of a model built from `config`, with the PyTorch keys (named by
/// `names`) they come from: the layout both the import and the export follow.
pub fn layout(names: &TorchNames, config: &TransformerConfig) -> Vec<Entry> {
    let d = config.d_model;
    let ff = config.d_ff;
    let n = names;
    let t = &n.transformer;
    let mut entries = Vec::new();
    let mut push = |target: String, source: String, transform: Transform, shape: Vec<usize>| {
        entries.push(Entry {
            target,
            source,
            transform,
            shape,
        })
    };

    push(
        "source_embedding.embedding.weight".into(),
        n.source_embedding.clone(),
        Transform::Same,
        vec![config.source_vocab_size, d],
    );
    if !config.share_embeddings {
        push(
            "target_embedding.embedding.weight".into(),
            n.target_embedding.clone(),
            Transform::Same,
            vec![config.target_vocab_size, d],
        );
    }

    let attention =
        |push: &mut dyn FnMut(String, String, Transform, Vec<usize>), ours: &str, theirs: &str| {
            for (k, name) in ["w_q", "w_k", "w_v"].iter().enumerate() {
                let rows = k * d..(k + 1) * d;
                push(
                    format!("{ours}.{name}.weight"),
                    format!("{theirs}.in_proj_weight"),
                    Transform::RowsTransposed(rows.clone()),
                    vec![d, d],
                );
                push(
                    format!("{ours}.{name}.bias"),
                    format!("{theirs}.in_proj_bias"),
                    Transform::Elements(rows),
                    vec![d],
                );
            }
            push(
                format!("{ours}.w_o.weight"),
                format!("{theirs}.out_proj.weight"),
                Transform::Transpose,
                vec![d, d],
            );
            push(
                format!("{ours}.w_o.bias"),
                format!("{theirs}.out_proj.bias"),
                Transform::Same,
                vec![d],
            );
        };
    let norm =
        |push: &mut dyn FnMut(String, String, Transform, Vec<usize>), ours: &str, theirs: &str| {
            push(
                format!("{ours}.gamma"),
                format!("{theirs}.weight"),
                Transform::Same,
                vec![d],
            );
            push(
                format!("{ours}.beta"),
                format!("{theirs}.bias"),
                Transform::Same,
                vec![d],
            );
        };
    let feed_forward =
        |push: &mut dyn FnMut(String, String, Transform, Vec<usize>), ours: &str, theirs: &str| {
            push(
                format!("{ours}.linear_inner.weight"),
                format!("{theirs}.linear1.weight"),
                Transform::Transpose,
                vec![d, ff],
            );
            push(
                format!("{ours}.linear_inner.bias"),
                format!("{theirs}.linear1.bias"),
                Transform::Same,
                vec![ff],
            );
            push(
                format!("{ours}.linear_outer.weight"),
                format!("{theirs}.linear2.weight"),
                Transform::Transpose,
                vec![ff, d],
            );
            push(
                format!("{ours}.linear_outer.bias"),
                format!("{theirs}.linear2.bias"),
                Transform::Same,
                vec![d],
            );
        };

    for i in 0..config.n_encoder_layers {
        let ours = format!("encoder.layers.{i}");
        let theirs = format!("{t}encoder.layers.{i}");
        attention(
            &mut push,
            &format!("{ours}.self_attention"),
            &format!("{theirs}.self_attn"),
        );
        norm(
            &mut push,
            &format!("{ours}.self_attention_norm"),
            &format!("{theirs}.norm1"),
        );
        feed_forward(&mut push, &format!("{ours}.feed_forward"), &theirs);
        norm(
            &mut push,
            &format!("{ours}.feed_forward_norm"),
            &format!("{theirs}.norm2"),
        );
    }
    for i in 0..config.n_decoder_layers {
        let ours = format!("decoder.layers.{i}");
        let theirs = format!("{t}decoder.layers.{i}");
        attention(
            &mut push,
            &format!("{ours}.self_attention"),
            &format!("{theirs}.self_attn"),
        );
        norm(
            &mut push,
            &format!("{ours}.self_attention_norm"),
            &format!("{theirs}.norm1"),
        );
        attention(
            &mut push,
            &format!("{ours}.cross_attention"),
            &format!("{theirs}.multihead_attn"),
        );
        norm(
            &mut push,
            &format!("{ours}.cross_attention_norm"),
            &format!("{theirs}.norm2"),
        );
        feed_forward(&mut push, &format!("{ours}.feed_forward"), &theirs);
        norm(
            &mut push,
            &format!("{ours}.feed_forward_norm"),
            &format!("{theirs}.norm3"),
        );
    }
    if config.has_final_norm() {
        norm(&mut push, "encoder.norm", &format!("{t}encoder.norm"));
        norm(&mut push, "decoder.norm", &format!("{t}decoder.norm"));
    }
    if config.tie_output_projection && config.output_bias() {
        // An imported model's fixed logits bias, as the bias of the (tied) output `nn.Linear`.
        push(
            "output_bias".into(),
            format!("{}bias", n.output_projection),
            Transform::Same,
            vec![config.target_vocab_size],
        );
    }
    if !config.tie_output_projection {
        let o = &n.output_projection;
        push(
            "output_projection.weight".into(),
            format!("{o}weight"),
            Transform::Transpose,
            vec![d, config.target_vocab_size],
        );
        push(
            "output_projection.bias".into(),
            format!("{o}bias"),
            Transform::Same,
            vec![config.target_vocab_size],
        );
    }
    entries
}

/// Applies `entry.transform` to `data`, checking the source and result shapes.
pub fn apply_transform(
    data: &TensorData,
    entry: &Entry,
    path: &Path,
) -> Result<TensorData, ModelError> {
    let found: Vec<usize> = data.shape().iter().copied().collect();
    let mismatch = |expected: Vec<usize>| ModelError::ShapeMismatch {
        path: path.to_path_buf(),
        key: entry.source.clone(),
        found: found.clone(),
        expected,
    };
    let values = data
        .try_to_vec::<f32>()
        .map_err(|e| ModelError::TorchRead {
            path: path.to_path_buf(),
            reason: format!("tensor `{}`: {e:?}", entry.source),
        })?;
    let expected = &entry.shape;
    let (values, shape) = match &entry.transform {
        Transform::Same => {
            if &found != expected {
                return Err(mismatch(expected.clone()));
            }
            (values, expected.clone())
        }
        Transform::Row => {
            let row = vec![1, expected[0]];
            if found != row {
                return Err(mismatch(row));
            }
            (values, expected.clone())
        }
        Transform::Transpose => {
            let torch_shape = vec![expected[1], expected[0]];
            if found != torch_shape {
                return Err(mismatch(torch_shape));
            }
            (
                transpose(&values, expected[1], expected[0]),
                expected.clone(),
            )
        }
        Transform::RowsTransposed(rows) => {
            let d = expected[0];
            let packed = vec![3 * d, d];
            if found != packed {
                return Err(mismatch(packed));
            }
            let block = &values[rows.start * d..rows.end * d];
            (transpose(block, rows.len(), d), expected.clone())
        }
        Transform::Elements(range) => {
            let packed = vec![3 * expected[0]];
            if found != packed {
                return Err(mismatch(packed));
            }
            (values[range.clone()].to_vec(), expected.clone())
        }
    };
    Ok(TensorData::new(values, shape))
}

/// Transposes a row-major `[rows, cols]` matrix.
pub fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_swaps_rows_and_columns() {
        // [[1, 2, 3], [4, 5, 6]] -> [[1, 4], [2, 5], [3, 6]]
        assert_eq!(
            transpose(&[1., 2., 3., 4., 5., 6.], 2, 3),
            vec![1., 4., 2., 5., 3., 6.]
        );
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let config = TransformerConfig::new(10, 10)
            .with_d_model(8)
            .with_n_heads(2);
        let mut model = config
            .init(&burn::tensor::Device::flex())
            .expect("valid config");
        let err = TorchImport::new("/nonexistent/model.pt")
            .load_into(&mut model, &config)
            .expect_err("no file");
        assert!(err.to_string().contains("/nonexistent/model.pt"), "{err}");
    }
}
