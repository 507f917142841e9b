//! Tutorial demonstration: the shape of every intermediate tensor, first through scaled
//! dot-product attention (the third tutorial's table: batch 2, length 4, `d_model` 512), then
//! through an encoder layer, a decoder layer and the full model.

use burn::tensor::activation::softmax;
use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};

use rosetta_model::attention::ScaledDotProductAttention;
use rosetta_model::config::TransformerConfig;
use rosetta_model::error::ModelError;
use rosetta_model::mask;

/// One row of a shape table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeRow {
    /// The tensor (the tutorial's name where it has one).
    pub stage: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// What it is.
    pub note: String,
}

fn row(stage: &str, shape: &[usize], note: &str) -> ShapeRow {
    ShapeRow {
        stage: stage.to_string(),
        shape: shape.to_vec(),
        note: note.to_string(),
    }
}

/// The third tutorial's table: `Q, K, V` of `[batch, len, d_model]` (one head, so
/// `d_k = d_model`), `Kᵀ`, `Q·Kᵀ`, the scaled scores, the weights `p_attn`, the output. The
/// weights and the output come from [`ScaledDotProductAttention`] (run with a heads axis of 1,
/// removed again for the table); `Kᵀ` and `Q·Kᵀ` are the same operations done by hand.
pub fn attention_shape_table(batch: usize, len: usize, d_model: usize, seed: u64) -> Vec<ShapeRow> {
    let device = Device::flex();
    device.seed(seed);
    let normal = Distribution::Normal(0.0, 1.0);
    let q = Tensor::<3>::random([batch, len, d_model], normal, &device);
    let k = Tensor::<3>::random([batch, len, d_model], normal, &device);
    let v = Tensor::<3>::random([batch, len, d_model], normal, &device);
    let k_t = k.clone().swap_dims(1, 2);
    let qk = q.clone().matmul(k_t.clone());
    let scores = qk.clone().div_scalar((d_model as f64).sqrt());
    let p_attn = softmax(scores.clone(), 2);
    let attended = ScaledDotProductAttention::new(0.0).forward(
        q.clone().unsqueeze_dim(1),
        k.clone().unsqueeze_dim(1),
        v.clone().unsqueeze_dim(1),
        None,
        true,
    );
    let module_weights: Tensor<3> = attended
        .weights
        .map(|w| w.squeeze_dim(1))
        .unwrap_or_else(|| p_attn.clone());
    let output: Tensor<3> = attended.context.squeeze_dim(1);
    vec![
        row(
            "Q, K, V",
            &q.dims(),
            "batch, seq_len, d_model (d_k = d_model: one head)",
        ),
        row(
            "Kᵀ",
            &k_t.dims(),
            "K.transpose(-2, -1): the last two axes swapped",
        ),
        row("Q·Kᵀ", &qk.dims(), "raw attention scores"),
        row("scores", &scores.dims(), "divided by sqrt(d_k)"),
        row(
            "p_attn",
            &module_weights.dims(),
            "after softmax over the keys",
        ),
        row("output", &output.dims(), "p_attn · V"),
    ]
}

/// Shapes through the full model built from `config` (dropout is irrelevant to shapes), for a
/// source and a target batch of `batch x len` tokens (no padding): embeddings, one encoder
/// layer, the encoder stack, the decoder's look-ahead mask, one decoder layer with its
/// cross-attention, the decoder stack, the logits.
pub fn model_shape_table(
    config: &TransformerConfig,
    batch: usize,
    len: usize,
    seed: u64,
) -> Result<Vec<ShapeRow>, ModelError> {
    let device = Device::flex();
    device.seed(seed);
    let model = config.init(&device)?;
    let token = |b: usize, t: usize, vocab: usize| {
        // Any non-padding id: 1 + a deterministic spread over the vocabulary.
        (1 + (b * 7 + t * 3) % vocab.saturating_sub(1).max(1)) as i64
    };
    let tokens = |vocab: usize| {
        let ids: Vec<i64> = (0..batch)
            .flat_map(|b| (0..len).map(move |t| token(b, t, vocab)))
            .collect();
        Tensor::<2, Int>::from_data(TensorData::new(ids, [batch, len]), &device)
    };
    let source = tokens(config.source_vocab_size);
    let target = tokens(config.target_vocab_size);

    let embedded = model.source_embedding.forward(source.clone());
    let positioned = model.encoder.positional.forward(embedded.clone(), 0);
    let source_mask = mask::key_padding_mask(mask::padding_mask(&source, config.pad_id));
    let mut rows = vec![
        row("source tokens", &source.dims(), "batch, source_len"),
        row(
            "target tokens",
            &target.dims(),
            "batch, target_len (decoder input)",
        ),
        row("source embedding", &embedded.dims(), "× sqrt(d_model)"),
        row(
            "+ positional encoding",
            &positioned.dims(),
            "same shape, positions added",
        ),
        row(
            "source padding mask",
            &source_mask.dims(),
            "batch, 1, 1, source_len: broadcast over heads and queries",
        ),
    ];
    if let Some(layer) = model.encoder.layers.first() {
        let attended = layer.self_attention.forward(
            positioned.clone(),
            positioned.clone(),
            Some(source_mask.clone()),
            true,
        );
        if let Some(weights) = attended.weights {
            rows.push(row(
                "encoder self-attention weights",
                &weights.dims(),
                "batch, heads, source_len, source_len",
            ));
        }
        let out = layer.forward(positioned, Some(source_mask));
        rows.push(row(
            "encoder layer output",
            &out.dims(),
            "attention + FFN, each with residual and LayerNorm",
        ));
    }
    let encoded = model.encode(source);
    rows.push(row(
        "encoder memory",
        &encoded.memory.dims(),
        &format!("after {} encoder layers", config.n_encoder_layers),
    ));
    let target_padding = mask::padding_mask(&target, config.pad_id);
    let look_ahead = mask::causal_padding_mask(target_padding);
    rows.push(row(
        "look-ahead mask",
        &look_ahead.dims(),
        "batch, 1, target_len, target_len: future and padding blocked",
    ));
    let target_embedded = model
        .decoder
        .positional
        .forward(model.target_embedding().forward(target.clone()), 0);
    if let Some(layer) = model.decoder.layers.first() {
        let (out, weights) = layer.forward(
            target_embedded,
            encoded.memory.clone(),
            Some(look_ahead),
            Some(mask::key_padding_mask(encoded.source_padding.clone())),
            true,
        );
        if let Some(weights) = weights {
            rows.push(row(
                "cross-attention weights",
                &weights.dims(),
                "batch, heads, target_len, source_len",
            ));
        }
        rows.push(row(
            "decoder layer output",
            &out.dims(),
            "masked self-attention, cross-attention, FFN",
        ));
    }
    let hidden = model.decode_hidden(target, &encoded, false).hidden;
    rows.push(row(
        "decoder output",
        &hidden.dims(),
        &format!("after {} decoder layers", config.n_decoder_layers),
    ));
    let logits = model.project(hidden);
    rows.push(row(
        "logits",
        &logits.dims(),
        "batch, target_len, target_vocab",
    ));
    Ok(rows)
}
