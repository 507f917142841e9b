//! Exporting a [`Transformer`] as a PyTorch state dict: the inverse of [`crate::import`].
//!
//! [`torch_state_dict`] lays the parameters out as a module built around `torch.nn.Transformer`
//! keeps them (the layout of [`TorchNames`], as `scripts/rosetta_torch.py` and
//! `scripts/make_parity_fixture.py` build it): the query, key and value projections of each
//! attention packed into one `in_proj_weight` `[3d, d]` and `in_proj_bias` `[3d]`, linear
//! weights as `[out, in]`, LayerNorms as `weight`/`bias`. A shared or tied table is listed under
//! each of its names, as PyTorch's `state_dict()` lists it, so that `load_state_dict` with
//! `strict=True` accepts the result. Importing the export gives the same parameters, bit for
//! bit (`tests/export.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use burn::store::{ModuleSnapshot, bridge};
use burn::tensor::TensorData;

use crate::config::TransformerConfig;
use crate::error::ModelError;
use crate::import::{Entry, TorchNames, Transform, layout, transpose};
use crate::transformer::Transformer;

/// The parameters of `model` (built from `config`) as a PyTorch state dict under `names`, by
/// key, each `f32` in PyTorch's layout.
pub fn torch_state_dict(
    model: &Transformer,
    config: &TransformerConfig,
    names: &TorchNames,
) -> Result<BTreeMap<String, TensorData>, ModelError> {
    let export_error = |reason: String| ModelError::Export { reason };
    let mut state = state_dict_of(model, &layout(names, config))?;

    // The aliases PyTorch lists: the shared target table, the tied output projection.
    let table = |key: &str, state: &BTreeMap<String, TensorData>| {
        state
            .get(key)
            .cloned()
            .ok_or_else(|| export_error(format!("`{key}` is missing from the exported state dict")))
    };
    if config.share_embeddings {
        let shared = table(&names.source_embedding, &state)?;
        state.insert(names.target_embedding.clone(), shared);
    }
    if config.tie_output_projection {
        let tied = table(&names.target_embedding, &state)?;
        state.insert(format!("{}weight", names.output_projection), tied);
    }
    Ok(state)
}

/// The parameters of `model` as the foreign state dict `entries` lay out (the inverse of
/// [`crate::import::apply_state_dict`]), by key, each `f32` in the foreign layout. Every
/// parameter of the model must have its entry: one left over is an error naming it.
pub fn state_dict_of(
    model: &Transformer,
    entries: &[Entry],
) -> Result<BTreeMap<String, TensorData>, ModelError> {
    let export_error = |reason: String| ModelError::Export { reason };
    let mut ours: BTreeMap<String, TensorData> = BTreeMap::new();
    for tensor in model.collect(None, None, false) {
        let data = bridge::into_data(tensor.clone())
            .map_err(|e| export_error(format!("parameter `{}`: {e}", tensor.name)))?;
        ours.insert(tensor.name.clone(), data.convert::<f32>());
    }

    // Packed tensors are assembled from several of ours: start them at zero and fill each part.
    let mut state: BTreeMap<String, (Vec<f32>, Vec<usize>)> = BTreeMap::new();
    for entry in entries {
        let data = ours.remove(&entry.target).ok_or_else(|| {
            export_error(format!(
                "the model has no parameter `{}` (for `{}`)",
                entry.target, entry.source
            ))
        })?;
        let found: Vec<usize> = data.shape().iter().copied().collect();
        if found != entry.shape {
            return Err(export_error(format!(
                "parameter `{}` has shape {found:?}, the configuration says {:?}",
                entry.target, entry.shape
            )));
        }
        let values = data
            .try_to_vec::<f32>()
            .map_err(|e| export_error(format!("parameter `{}`: {e:?}", entry.target)))?;
        let source = entry.source.clone();
        match &entry.transform {
            Transform::Same => {
                state.insert(source, (values, entry.shape.clone()));
            }
            Transform::Row => {
                state.insert(source, (values, vec![1, entry.shape[0]]));
            }
            Transform::Transpose => {
                let (rows, cols) = (entry.shape[0], entry.shape[1]);
                state.insert(source, (transpose(&values, rows, cols), vec![cols, rows]));
            }
            Transform::RowsTransposed(range) => {
                // Ours is `[d, d]` as `[in, out]`; PyTorch's rows `range` of `[3d, d]` are `[out, in]`.
                let d = entry.shape[0];
                let packed = state
                    .entry(source)
                    .or_insert_with(|| (vec![0.0; 3 * d * d], vec![3 * d, d]));
                packed.0[range.start * d..range.end * d].copy_from_slice(&transpose(
                    &values,
                    d,
                    range.len(),
                ));
            }
            Transform::Elements(range) => {
                let d = entry.shape[0];
                let packed = state
                    .entry(source)
                    .or_insert_with(|| (vec![0.0; 3 * d], vec![3 * d]));
                packed.0[range.clone()].copy_from_slice(&values);
            }
        }
    }
    if let Some(left) = ours.keys().next() {
        return Err(export_error(format!(
            "parameter `{left}` has no place in the exported layout"
        )));
    }
    Ok(state
        .into_iter()
        .map(|(key, (values, shape))| (key, TensorData::new(values, shape)))
        .collect())
}

/// Writes `state` (as [`torch_state_dict`] returns it) to the safetensors file `path`, with
/// `metadata` in its header; atomically: a file already at `path` is replaced only once the new
/// one is complete. `safetensors.torch.load_file(path)` reads it back as a state dict.
pub fn write_safetensors(
    state: &BTreeMap<String, TensorData>,
    metadata: HashMap<String, String>,
    path: &Path,
) -> Result<(), ModelError> {
    let export_error = |reason: String| ModelError::Export { reason };
    let mut bytes: Vec<(String, Vec<u8>, Vec<usize>)> = Vec::with_capacity(state.len());
    for (key, data) in state {
        let values = data
            .clone()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .map_err(|e| export_error(format!("tensor `{key}`: {e:?}")))?;
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.push((key.clone(), raw, data.shape().iter().copied().collect()));
    }
    let views = bytes
        .iter()
        .map(|(key, raw, shape)| {
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), raw)
                .map(|view| (key.as_str(), view))
                .map_err(|e| export_error(format!("tensor `{key}`: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::serialize_to_file(views, Some(metadata), path)
        .map_err(|e| export_error(format!("cannot write {}: {e}", path.display())))
}
