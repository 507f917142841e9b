//! Where a MarianMT state dict keeps each of Rosetta's parameters, both ways.
//!
//! Hugging Face's names (`modeling_marian.py`): `model.shared.weight` (the one table when the
//! encoder and decoder share it), `model.{encoder,decoder}.embed_tokens.weight`,
//! `model.{encoder,decoder}.layers.{i}.self_attn.{q,k,v,out}_proj.{weight,bias}`,
//! `self_attn_layer_norm`, the decoder's `encoder_attn` and `encoder_attn_layer_norm`, `fc1`,
//! `fc2`, `final_layer_norm`, `lm_head.weight` and the `[1, vocab]` buffer `final_logits_bias`.
//! Linear weights are `[out, in]` (Burn's are `[in, out]`). A tied or shared table may be stored
//! once or under each of its names (older files), and older files also hold the sinusoidal
//! `embed_positions`, which `transformers` recomputes: each alias is accepted when it holds the
//! values of what it aliases.

use std::collections::BTreeMap;
use std::path::Path;

use rosetta_model::burn::tensor::TensorData;
use rosetta_model::import::{Entry, Transform};
use rosetta_model::positional::table_in;
use rosetta_model::{ModelError, PositionLayout, TransformerConfig};

use crate::error::ConvertError;

/// The shared table of a model whose encoder and decoder share one.
const SHARED: &str = "model.shared.weight";
/// The encoder's table.
const ENCODER_TABLE: &str = "model.encoder.embed_tokens.weight";
/// The decoder's table.
const DECODER_TABLE: &str = "model.decoder.embed_tokens.weight";
/// The output projection's weight.
const LM_HEAD: &str = "lm_head.weight";
/// The bias added to the logits.
const LOGITS_BIAS: &str = "final_logits_bias";
/// The sinusoidal tables older files store.
const POSITIONS: [&str; 2] = [
    "model.encoder.embed_positions.weight",
    "model.decoder.embed_positions.weight",
];

/// Every parameter of a Rosetta model of `config` (a Marian-shaped one: post-norm, no final
/// norm) with the MarianMT key it comes from.
pub fn layout(config: &TransformerConfig) -> Vec<Entry> {
    let d = config.d_model;
    let ff = config.d_ff;
    let mut entries = Vec::new();
    let mut push = |target: String, source: String, transform: Transform, shape: Vec<usize>| {
        entries.push(Entry {
            target,
            source,
            transform,
            shape,
        });
    };
    if config.share_embeddings {
        push(
            "source_embedding.embedding.weight".into(),
            SHARED.into(),
            Transform::Same,
            vec![config.source_vocab_size, d],
        );
    } else {
        push(
            "source_embedding.embedding.weight".into(),
            ENCODER_TABLE.into(),
            Transform::Same,
            vec![config.source_vocab_size, d],
        );
        push(
            "target_embedding.embedding.weight".into(),
            DECODER_TABLE.into(),
            Transform::Same,
            vec![config.target_vocab_size, d],
        );
    }
    let linear = |push: &mut dyn FnMut(String, String, Transform, Vec<usize>),
                  ours: String,
                  theirs: String,
                  (inputs, outputs): (usize, usize)| {
        push(
            format!("{ours}.weight"),
            format!("{theirs}.weight"),
            Transform::Transpose,
            vec![inputs, outputs],
        );
        push(
            format!("{ours}.bias"),
            format!("{theirs}.bias"),
            Transform::Same,
            vec![outputs],
        );
    };
    let norm = |push: &mut dyn FnMut(String, String, Transform, Vec<usize>),
                ours: String,
                theirs: String| {
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
    let attention =
        |push: &mut dyn FnMut(String, String, Transform, Vec<usize>), ours: &str, theirs: &str| {
            for (our, their) in [
                ("w_q", "q_proj"),
                ("w_k", "k_proj"),
                ("w_v", "v_proj"),
                ("w_o", "out_proj"),
            ] {
                linear(
                    push,
                    format!("{ours}.{our}"),
                    format!("{theirs}.{their}"),
                    (d, d),
                );
            }
        };
    let feed_forward =
        |push: &mut dyn FnMut(String, String, Transform, Vec<usize>), ours: &str, theirs: &str| {
            linear(
                push,
                format!("{ours}.linear_inner"),
                format!("{theirs}.fc1"),
                (d, ff),
            );
            linear(
                push,
                format!("{ours}.linear_outer"),
                format!("{theirs}.fc2"),
                (ff, d),
            );
        };
    for i in 0..config.n_encoder_layers {
        let (ours, theirs) = (
            format!("encoder.layers.{i}"),
            format!("model.encoder.layers.{i}"),
        );
        attention(
            &mut push,
            &format!("{ours}.self_attention"),
            &format!("{theirs}.self_attn"),
        );
        norm(
            &mut push,
            format!("{ours}.self_attention_norm"),
            format!("{theirs}.self_attn_layer_norm"),
        );
        feed_forward(&mut push, &format!("{ours}.feed_forward"), &theirs);
        norm(
            &mut push,
            format!("{ours}.feed_forward_norm"),
            format!("{theirs}.final_layer_norm"),
        );
    }
    for i in 0..config.n_decoder_layers {
        let (ours, theirs) = (
            format!("decoder.layers.{i}"),
            format!("model.decoder.layers.{i}"),
        );
        attention(
            &mut push,
            &format!("{ours}.self_attention"),
            &format!("{theirs}.self_attn"),
        );
        norm(
            &mut push,
            format!("{ours}.self_attention_norm"),
            format!("{theirs}.self_attn_layer_norm"),
        );
        attention(
            &mut push,
            &format!("{ours}.cross_attention"),
            &format!("{theirs}.encoder_attn"),
        );
        norm(
            &mut push,
            format!("{ours}.cross_attention_norm"),
            format!("{theirs}.encoder_attn_layer_norm"),
        );
        feed_forward(&mut push, &format!("{ours}.feed_forward"), &theirs);
        norm(
            &mut push,
            format!("{ours}.feed_forward_norm"),
            format!("{theirs}.final_layer_norm"),
        );
    }
    let vocab = config.target_vocab_size;
    if config.tie_output_projection {
        if config.output_bias() {
            push(
                "output_bias".into(),
                LOGITS_BIAS.into(),
                Transform::Row,
                vec![vocab],
            );
        }
    } else {
        push(
            "output_projection.weight".into(),
            LM_HEAD.into(),
            Transform::Transpose,
            vec![d, vocab],
        );
        // Marian's head has no bias of its own: the logits bias is the untied projection's.
        push(
            "output_projection.bias".into(),
            LOGITS_BIAS.into(),
            Transform::Row,
            vec![vocab],
        );
    }
    entries
}

/// `tensors` (a MarianMT state dict read from `path`) made ready for [`layout`]: each alias of
/// a table (the shared table stored under the encoder's or decoder's name too, a tied `lm_head`,
/// the sinusoidal `embed_positions`) checked against what it aliases and removed, the table
/// stored under an alias alone moved to its name, a missing `final_logits_bias` filled with
/// zeros (as `transformers` loads it). A tensor no parameter takes is refused, by name.
pub fn resolve_aliases(
    mut tensors: BTreeMap<String, TensorData>,
    config: &TransformerConfig,
    path: &Path,
) -> Result<BTreeMap<String, TensorData>, ConvertError> {
    let refuse = |reason: String| {
        ConvertError::Model(ModelError::Apply {
            path: path.to_path_buf(),
            reason,
        })
    };
    // A table and its aliases: the first one present is the table, the others must equal it.
    let mut unify = |name: &str, aliases: &[&str], setting: &str| -> Result<(), ConvertError> {
        let present: Vec<String> = std::iter::once(name)
            .chain(aliases.iter().copied())
            .filter(|key| tensors.contains_key(*key))
            .map(str::to_string)
            .collect();
        let Some(first) = present.first() else {
            return Ok(());
        };
        let table = tensors
            .remove(first)
            .ok_or_else(|| refuse(format!("`{first}` vanished")))?;
        for alias in &present[1..] {
            let copy = tensors
                .remove(alias)
                .ok_or_else(|| refuse(format!("`{alias}` vanished")))?;
            if copy != table {
                return Err(refuse(format!(
                    "`{alias}` differs from `{first}`, yet {setting} says they are one table"
                )));
            }
        }
        tensors.insert(name.to_string(), table);
        Ok(())
    };
    match (config.share_embeddings, config.tie_output_projection) {
        (true, true) => unify(
            SHARED,
            &[ENCODER_TABLE, DECODER_TABLE, LM_HEAD],
            "share_encoder_decoder_embeddings and tie_word_embeddings",
        )?,
        (true, false) => unify(
            SHARED,
            &[ENCODER_TABLE, DECODER_TABLE],
            "share_encoder_decoder_embeddings",
        )?,
        (false, true) => unify(DECODER_TABLE, &[LM_HEAD], "tie_word_embeddings")?,
        (false, false) => {
            // Untied (`tie_word_embeddings = false`): `transformers` reads the encoder's and
            // decoder's own tables and leaves `model.shared` unused; it only stands in for a
            // table the file lacks.
            if let Some(shared) = tensors.remove(SHARED) {
                for table in [ENCODER_TABLE, DECODER_TABLE] {
                    tensors
                        .entry(table.to_string())
                        .or_insert_with(|| shared.clone());
                }
            }
        }
    }
    let d = config.d_model;
    let table = table_in(config.max_positions, d, PositionLayout::Halves);
    for key in POSITIONS {
        let Some(stored) = tensors.remove(key) else {
            continue;
        };
        let shape: Vec<usize> = stored.shape().iter().copied().collect();
        let values = stored
            .try_to_vec::<f32>()
            .map_err(|e| refuse(format!("`{key}`: {e:?}")))?;
        let rows = shape.first().copied().unwrap_or(0);
        let fits = shape.len() == 2 && shape[1] == d && rows <= config.max_positions;
        let largest = values
            .iter()
            .zip(&table)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        if !fits || largest > 1e-5 {
            return Err(refuse(format!(
                "`{key}` (shape {shape:?}) is not Marian's sinusoidal table of {} positions (largest difference {largest}): the model's positions are not the ones Rosetta computes",
                config.max_positions
            )));
        }
    }
    if !tensors.contains_key(LOGITS_BIAS) {
        let vocab = config.target_vocab_size;
        tensors.insert(
            LOGITS_BIAS.into(),
            TensorData::new(vec![0.0f32; vocab], [1, vocab]),
        );
    } else if config.tie_output_projection && !config.output_bias() {
        // A tied model configured without the bias: the bias must be zero to be left out.
        let bias = tensors
            .remove(LOGITS_BIAS)
            .unwrap_or_else(|| TensorData::new(Vec::<f32>::new(), [0]));
        let values = bias
            .try_to_vec::<f32>()
            .map_err(|e| refuse(format!("`{LOGITS_BIAS}`: {e:?}")))?;
        if values.iter().any(|&v| v != 0.0) {
            return Err(refuse(format!(
                "`{LOGITS_BIAS}` is not zero, and the model configuration has no output bias"
            )));
        }
    }
    let wanted: std::collections::BTreeSet<String> = layout(config)
        .into_iter()
        .map(|entry| entry.source)
        .collect();
    let unused: Vec<&str> = tensors
        .keys()
        .map(String::as_str)
        .filter(|key| !wanted.contains(*key))
        .collect();
    if !unused.is_empty() {
        return Err(refuse(format!(
            "tensors that a MarianMT model of this configuration has no place for: {}",
            unused.join(", ")
        )));
    }
    Ok(tensors)
}

/// The model's state dict as `save_pretrained` writes a MarianMT model of `config`: `entries`'
/// tensors (a shared table once as `model.shared.weight`, a tied head not at all), a zero
/// `final_logits_bias` for a model without one, and, for one table on both sides with an untied
/// output projection, that table as the encoder's and the decoder's (`transformers` unties
/// every table when the head is untied).
pub fn complete_for_export(
    mut state: BTreeMap<String, TensorData>,
    config: &TransformerConfig,
) -> BTreeMap<String, TensorData> {
    if config.share_embeddings
        && !config.tie_output_projection
        && let Some(shared) = state.remove(SHARED)
    {
        state.insert(ENCODER_TABLE.into(), shared.clone());
        state.insert(DECODER_TABLE.into(), shared);
    }
    if !state.contains_key(LOGITS_BIAS) {
        let vocab = config.target_vocab_size;
        state.insert(
            LOGITS_BIAS.into(),
            TensorData::new(vec![0.0f32; vocab], [1, vocab]),
        );
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(share: bool, tie: bool) -> TransformerConfig {
        TransformerConfig::new(12, if share { 12 } else { 14 })
            .with_d_model(8)
            .with_n_heads(2)
            .with_d_ff(16)
            .with_n_encoder_layers(1)
            .with_n_decoder_layers(2)
            .with_max_positions(20)
            .with_share_embeddings(share)
            .with_tie_output_projection(tie)
            .with_output_bias(Some(tie))
            .with_positions(Some(PositionLayout::Halves))
    }

    #[test]
    fn layouts_name_each_parameter_once() {
        for (share, tie) in [(true, true), (false, true), (false, false), (true, false)] {
            let entries = layout(&config(share, tie));
            let targets: std::collections::BTreeSet<_> =
                entries.iter().map(|e| &e.target).collect();
            assert_eq!(targets.len(), entries.len());
            // One layer of the encoder: 4 attention projections and 2 linears, weight and bias
            // each (12), 2 LayerNorms (4): 16; a decoder layer: 8 + 4 + 6 = 26.
            let tables = if share { 1 } else { 2 };
            let head = if tie { 1 } else { 2 };
            assert_eq!(entries.len(), tables + 16 + 2 * 26 + head, "{share} {tie}");
        }
    }

    fn zeros(shape: [usize; 2]) -> TensorData {
        TensorData::new(vec![0.0f32; shape[0] * shape[1]], shape)
    }

    #[test]
    fn aliases_are_accepted_when_equal_and_refused_otherwise() {
        let config = config(true, true);
        let table = TensorData::new((0..96).map(|v| v as f32).collect::<Vec<_>>(), [12, 8]);
        let mut tensors = BTreeMap::new();
        tensors.insert(ENCODER_TABLE.to_string(), table.clone());
        tensors.insert(LM_HEAD.to_string(), table.clone());
        let positions = table_in(20, 8, PositionLayout::Halves);
        tensors.insert(
            POSITIONS[0].to_string(),
            TensorData::new(positions, [20, 8]),
        );
        let resolved =
            resolve_aliases(tensors.clone(), &config, Path::new("m.bin")).expect("aliases");
        assert_eq!(resolved.get(SHARED), Some(&table));
        assert!(
            resolved.contains_key(LOGITS_BIAS),
            "a missing bias is zeros"
        );
        assert!(!resolved.contains_key(LM_HEAD) && !resolved.contains_key(POSITIONS[0]));

        tensors.insert(LM_HEAD.to_string(), zeros([12, 8]));
        let error =
            resolve_aliases(tensors.clone(), &config, Path::new("m.bin")).expect_err("differs");
        assert!(error.to_string().contains("lm_head.weight"), "{error}");

        tensors.insert(LM_HEAD.to_string(), table.clone());
        tensors.insert(POSITIONS[1].to_string(), zeros([20, 8]));
        let error =
            resolve_aliases(tensors.clone(), &config, Path::new("m.bin")).expect_err("learned");
        assert!(error.to_string().contains("embed_positions"), "{error}");

        tensors.remove(POSITIONS[1]);
        tensors.insert("model.encoder.layer_norm.weight".to_string(), zeros([1, 8]));
        let error = resolve_aliases(tensors, &config, Path::new("m.bin")).expect_err("unknown");
        assert!(
            error
                .to_string()
                .contains("model.encoder.layer_norm.weight"),
            "{error}"
        );
    }
}
