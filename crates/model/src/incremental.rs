//! Incremental decoding with a key/value cache.
//!
//! Generating a target sentence token by token with [`Transformer::decode`] re-runs the decoder
//! over the whole prefix at every step (`O(t²)` work for `t` tokens). A [`DecoderState`] keeps,
//! for every decoder layer,
//!
//! - the **self-attention** keys and values of the target positions decoded so far, grown by one
//!   position per step (on flex, written in place into a buffer with room for more,
//!   [`crate::cache_copy`]; elsewhere appended with `cat` along the length axis), and
//! - the **cross-attention** keys and values of the encoder memory, projected once per source
//!   and reused at every step,
//!
//! so that [`Transformer::decode_step`] only computes the new position. No causal mask is needed
//! for the self-attention of a single new position: the cache holds only past (and present)
//! positions. The layer body is the one of the full pass ([`DecoderLayer::forward`]); only the
//! origin of the keys and values differs.
//!
//! The state's rows can be selected and reordered ([`DecoderState::select`]), which is what beam
//! search does when it keeps the best continuations of each beam.
//!
//! **Beams share their sentence's cross-attention cache.** In beam search the rows are
//! `sentences × beams`, and the beams of one sentence attend over the same encoder memory. The
//! cross-attention keys and values are therefore kept once per sentence, and a step moves the
//! `beams` queries of a sentence into the query-length axis (`[sentences · beams, 1, d]` →
//! `[sentences, beams, d]`) to attend over them in one product: re-selecting the beams at each
//! step ([`DecoderState::select_beams`]) copies only the self-attention cache, whose rows
//! really differ, and never the encoder memory, whose copy per beam and step used to cost
//! more than the step's own arithmetic at beam 5.

use std::cell::OnceCell;
use std::sync::Arc;

use burn::tensor::{Bool, Int, Tensor, TensorData};

use crate::decoder::{Decoder, DecoderLayer};
use crate::int8::{self, Int8Matrix};
use crate::mask;
use crate::multi_head::FusedSelfProjection;
use crate::split_product;
use crate::transformer::{Encoded, Transformer};

/// The cached keys and values of one decoder layer, each `[batch, heads, len, d_k]` (the
/// self-attention's, on flex, a view of the first `len` positions of a longer buffer).
#[derive(Debug, Clone)]
pub struct LayerCache {
    /// Self-attention keys of the target positions decoded so far; `None` before the first step.
    pub self_keys: Option<Tensor<4>>,
    /// Self-attention values of the target positions decoded so far; `None` before the first step.
    pub self_values: Option<Tensor<4>>,
    /// Cross-attention keys of the encoder memory (computed once, kept contiguous).
    pub cross_keys: Tensor<4>,
    /// Cross-attention values of the encoder memory (computed once, kept contiguous).
    pub cross_values: Tensor<4>,
    /// The self-attention's query, key and value projections joined (once per search).
    self_projection: FusedSelfProjection,
}

impl LayerCache {
    fn select(&mut self, order: &RowOrder) {
        let pick = |t: Tensor<4>| t.select(0, order.rows.clone());
        self.self_keys = self.self_keys.take().map(|t| order.apply(t));
        self.self_values = self.self_values.take().map(|t| order.apply(t));
        self.cross_keys = pick(self.cross_keys.clone());
        self.cross_values = pick(self.cross_values.clone());
    }
}

/// The decoder's state between incremental steps: one [`LayerCache`] per layer, the source
/// padding mask and the number of target positions already decoded.
///
/// The rows are `sentences × beams` (`beams` consecutive rows per sentence; 1 until
/// [`select_beams`](Self::select_beams) says otherwise); the self-attention cache has one entry
/// per row, the cross-attention cache and the padding mask one per sentence.
#[derive(Debug, Clone)]
pub struct DecoderState {
    layers: Vec<LayerCache>,
    /// `[sentences, 1, 1, src_len]`, `true` at source padding.
    memory_mask: Tensor<4, Bool>,
    /// Rows per sentence.
    beams: usize,
    step: usize,
    /// The output projection laid out for the steps' matrix product.
    projection: OutputProjection,
}

/// The output projection as one matrix product `[rows, d_model] x [d_model, vocab]`, its
/// weight contiguous. A tied projection is the target embedding `[vocab, d_model]` transposed:
/// as a transposed view, flex copied all of it (8 MB at a vocabulary of 8,000) before every
/// step's product, which took 1.1 ms of a 2.2 ms greedy step at batch 1; laid out once per
/// search, the product reads it in place.
///
/// On flex with two or more threads, the products of decoding's few rows are
/// [split](crate::split_product) in two halves of the columns. A tied projection's product of
/// one row reads the embedding in place, as the transposed view (for one row `gemm` reads it as
/// fast as a laid-out matrix), so that a search at batch 1 skips the 2–3.5 ms of laying out 8 MB
/// per sentence; products of more rows read it laid out, once per search.
#[derive(Debug, Clone)]
struct OutputProjection {
    /// `[d_model, vocab]`, possibly a view (the transposed embedding).
    weight: Tensor<2>,
    bias: Option<Tensor<1>>,
    /// `weight` laid out contiguously, on first use.
    laid_out: OnceCell<Tensor<2>>,
    /// Whether a one-row product may read `weight` as it is ([`split_product::splits_on`]).
    in_place: bool,
    /// The projection in int8 ([`Transformer::quantize_int8`]), used instead when present.
    int8: Option<Arc<Int8Matrix>>,
}

impl OutputProjection {
    /// A projection by `weight` `[d_model, vocab]` (a view is laid out on first use) and its
    /// bias.
    fn new(weight: Tensor<2>, bias: Option<Tensor<1>>) -> Self {
        Self {
            in_place: split_product::splits_on(&weight.device()),
            weight,
            bias,
            laid_out: OnceCell::new(),
            int8: None,
        }
    }

    /// `x` `[rows, d_model]` times the projection: `[rows, vocab]`.
    fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        if let Some(matrix) = &self.int8 {
            return int8::linear(x, matrix);
        }
        let weight = if self.in_place && x.dims()[0] == 1 {
            self.weight.clone()
        } else {
            self.laid_out
                .get_or_init(|| laid_out(self.weight.clone()))
                .clone()
        };
        split_product::linear(x, weight, self.bias.clone())
    }
}

impl DecoderState {
    /// The number of target positions decoded so far, which is also the position of the next
    /// token fed to [`Transformer::decode_step`].
    pub fn step(&self) -> usize {
        self.step
    }

    /// The number of rows (sentences, or sentences × beams).
    pub fn batch_size(&self) -> usize {
        self.memory_mask.dims()[0] * self.beams
    }

    /// The number of rows per sentence (1 outside beam search).
    pub fn beams(&self) -> usize {
        self.beams
    }

    /// The per-layer caches.
    pub fn layers(&self) -> &[LayerCache] {
        &self.layers
    }

    /// Keeps the rows `indices` (in that order, repetitions allowed) of every cached tensor:
    /// row `i` of the new state is row `indices[i]` of the old one. Used to drop finished
    /// sentences and to reorder, expand or duplicate beams.
    pub fn select(&mut self, indices: Tensor<1, Int>) {
        if self.beams > 1 {
            // Arbitrary rows: give every row its own copy of its sentence's memory first.
            let rows = self.batch_size();
            let device = indices.device();
            let owner: Vec<i64> = (0..rows).map(|row| (row / self.beams) as i64).collect();
            let owner = Tensor::<1, Int>::from_data(TensorData::new(owner, [rows]), &device);
            for layer in &mut self.layers {
                layer.cross_keys = layer.cross_keys.clone().select(0, owner.clone());
                layer.cross_values = layer.cross_values.clone().select(0, owner.clone());
            }
            self.memory_mask = self.memory_mask.clone().select(0, owner);
            self.beams = 1;
        }
        let order = RowOrder::new(indices.clone());
        for layer in &mut self.layers {
            layer.select(&order);
        }
        self.memory_mask = self.memory_mask.clone().select(0, indices);
    }

    /// Beam search's re-selection: row `r` of the new state continues row `rows[r]` of the old
    /// one, whose sentence is `sentences[r / beams]` (of the old sentences); `beams` rows per
    /// sentence from now on. `sentences = None` keeps the sentences as they are. Only the
    /// self-attention cache is copied row by row; the cross-attention cache and the mask are
    /// selected per sentence, and only when `sentences` is given.
    ///
    /// # Panics
    /// If `rows` is not `beams` rows for each of the (new) sentences.
    pub fn select_beams(
        &mut self,
        rows: Tensor<1, Int>,
        sentences: Option<Tensor<1, Int>>,
        beams: usize,
    ) {
        let order = RowOrder::new(rows.clone());
        for layer in &mut self.layers {
            layer.self_keys = layer.self_keys.take().map(|t| order.apply(t));
            layer.self_values = layer.self_values.take().map(|t| order.apply(t));
            if let Some(sentences) = &sentences {
                layer.cross_keys = layer.cross_keys.clone().select(0, sentences.clone());
                layer.cross_values = layer.cross_values.clone().select(0, sentences.clone());
            }
        }
        if let Some(sentences) = sentences {
            self.memory_mask = self.memory_mask.clone().select(0, sentences);
        }
        self.beams = beams.max(1);
        assert_eq!(
            rows.dims()[0],
            self.memory_mask.dims()[0] * self.beams,
            "select_beams: {} rows for {} sentences of {} beams",
            rows.dims()[0],
            self.memory_mask.dims()[0],
            self.beams
        );
    }
}

/// `t` copied into its own contiguous layout (a view, such as a transpose, is copied by the
/// reshape to one axis). Done once per search for what every step reads: the cross-attention
/// cache, whose heads are split as a view (`[batch, len, heads, d_k]` with two axes swapped)
/// that flex's attention would copy before every product (most of the 6.3% that flex's
/// `copy_2d_tiled` took of greedy search at batch 64), and a tied output projection, the
/// transposed embedding table.
fn laid_out<const D: usize>(t: Tensor<D>) -> Tensor<D> {
    let dims = t.dims();
    t.reshape([dims.iter().product::<usize>()]).reshape(dims)
}

/// Appends `new` `[b, h, q, d_k]` to `cached` along the length axis (natively in place when
/// `cached` has room, else copied, on two threads when large: [`crate::cache_copy`]).
fn append(cached: Option<Tensor<4>>, new: Tensor<4>) -> Tensor<4> {
    match cached {
        #[cfg(not(target_arch = "wasm32"))]
        Some(cached) => crate::cache_copy::append(cached, new),
        #[cfg(target_arch = "wasm32")]
        Some(cached) => Tensor::cat(vec![cached, new], 2),
        None => new,
    }
}

/// A reordering of the self-attention cache's rows (`select` along the first axis): natively
/// on two threads when large ([`crate::cache_copy`]), its indices read to the host once for
/// every tensor it reorders.
struct RowOrder {
    rows: Tensor<1, Int>,
    #[cfg(not(target_arch = "wasm32"))]
    host: Option<Vec<usize>>,
}

impl RowOrder {
    fn new(rows: Tensor<1, Int>) -> Self {
        Self {
            #[cfg(not(target_arch = "wasm32"))]
            host: crate::cache_copy::host_rows(&rows),
            rows,
        }
    }

    /// `t.select(0, rows)`.
    fn apply(&self, t: Tensor<4>) -> Tensor<4> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            crate::cache_copy::select_rows(t, &self.rows, self.host.as_deref())
        }
        #[cfg(target_arch = "wasm32")]
        {
            t.select(0, self.rows.clone())
        }
    }
}

impl DecoderLayer {
    /// Projects the encoder `memory` `[batch, src_len, d_model]` into this layer's
    /// cross-attention keys and values, with an empty self-attention cache.
    pub fn start_cache(&self, memory: Tensor<3>) -> LayerCache {
        let (cross_keys, cross_values) = self.cross_attention.project_keys_values(memory);
        LayerCache {
            self_keys: None,
            self_values: None,
            cross_keys: laid_out(cross_keys),
            cross_values: laid_out(cross_values),
            self_projection: self.self_attention.fuse_self_projection(),
        }
    }

    /// The layer over the new target positions `x` `[batch, q, d_model]` (usually `q = 1`)
    /// given the cache of the earlier ones, which it extends. Equal to the last `q` positions
    /// of [`forward`](Self::forward) over the whole prefix. `memory_mask` blocks source padding;
    /// when `q > 1` the new positions are masked causally among themselves.
    ///
    /// `beams` consecutive rows of `x` share each entry of the cross-attention cache (and of
    /// `memory_mask`): their queries attend together, `[rows, q, d]` as `[rows / beams,
    /// beams · q, d]`.
    pub fn forward_step(
        &self,
        x: Tensor<3>,
        cache: &mut LayerCache,
        memory_mask: Option<Tensor<4, Bool>>,
        beams: usize,
        return_weights: bool,
    ) -> (Tensor<3>, Option<Tensor<4>>) {
        let [_, new_len, _] = x.dims();
        let cross_keys = cache.cross_keys.clone();
        let cross_values = cache.cross_values.clone();
        self.run(
            x,
            |attention, h| {
                let past = cache.self_keys.as_ref().map_or(0, |k| k.dims()[2]);
                let device = h.device();
                let (queries, keys, values) = attention.project_self(&cache.self_projection, h);
                let keys = append(cache.self_keys.take(), keys);
                let values = append(cache.self_values.take(), values);
                cache.self_keys = Some(keys.clone());
                cache.self_values = Some(values.clone());
                // Query i (absolute position past + i) may see keys 0..=past + i.
                let causal = (new_len > 1).then(|| {
                    Tensor::<2, Bool>::tril_mask([new_len, past + new_len], past as i64, &device)
                        .reshape([1, 1, new_len, past + new_len])
                });
                attention
                    .attend_heads(queries, keys, values, causal, false)
                    .output
            },
            |attention, h| {
                if beams <= 1 {
                    let out =
                        attention.attend(h, cross_keys, cross_values, memory_mask, return_weights);
                    return (out.output, out.weights);
                }
                let [rows, q, d] = h.dims();
                let sentences = rows / beams;
                let out = attention.attend(
                    h.reshape([sentences, beams * q, d]),
                    cross_keys,
                    cross_values,
                    memory_mask,
                    return_weights,
                );
                // Weights [sentences, heads, beams · q, src] back to [rows, heads, q, src].
                let weights = out.weights.map(|w| {
                    let [_, heads, _, src] = w.dims();
                    w.reshape([sentences, heads, beams, q, src])
                        .swap_dims(1, 2)
                        .reshape([rows, heads, q, src])
                });
                (out.output.reshape([rows, q, d]), weights)
            },
        )
    }
}

impl Decoder {
    /// Starts incremental decoding against `encoded`: projects the cross-attention keys and
    /// values of every layer once; the steps' logits come from `projection`.
    fn start_state(&self, encoded: &Encoded, projection: OutputProjection) -> DecoderState {
        DecoderState {
            layers: self
                .layers
                .iter()
                .map(|layer| layer.start_cache(encoded.memory.clone()))
                .collect(),
            memory_mask: mask::key_padding_mask(encoded.source_padding.clone()),
            beams: 1,
            step: 0,
            projection,
        }
    }

    /// Decodes the new positions `embedded` `[batch, q, d_model]` (scaled target embeddings of
    /// the tokens at positions `state.step() .. state.step() + q`), extending `state`.
    /// Returns the final hidden states `[batch, q, d_model]` of the new positions.
    ///
    /// # Panics
    /// If the positions exceed the positional encoding's `max_positions`.
    pub fn forward_step(&self, embedded: Tensor<3>, state: &mut DecoderState) -> Tensor<3> {
        let [_, new_len, _] = embedded.dims();
        let mut x = self.embed_positions(embedded, state.step);
        for (layer, cache) in self.layers.iter().zip(state.layers.iter_mut()) {
            let (next, _) = layer.forward_step(
                x,
                cache,
                Some(state.memory_mask.clone()),
                state.beams,
                false,
            );
            x = next;
        }
        state.step += new_len;
        self.final_norm(x)
    }
}

impl Transformer {
    /// Starts incremental decoding of `encoded` (see [`decode_step`](Self::decode_step)).
    pub fn start_decoding(&self, encoded: &Encoded) -> DecoderState {
        let mut projection = match &self.output_projection {
            Some(linear) => OutputProjection::new(
                linear.weight.val(),
                linear.bias.as_ref().map(|bias| bias.val()),
            ),
            None => OutputProjection::new(
                self.target_embedding().embedding.weight.val().transpose(),
                self.output_bias.as_ref().map(|bias| bias.val()),
            ),
        };
        projection.int8 = self.output_int8_on(&encoded.memory.device()).cloned();
        self.decoder.start_state(encoded, projection)
    }

    /// One incremental decoding step: feeds `last_tokens` `[batch, 1]` (BOS at the first step,
    /// then the token chosen at the previous step) at position `state.step()` and returns the
    /// next-token logits `[batch, target_vocab]`. Equal to the last position of
    /// [`decode`](Self::decode) over the whole prefix, at the cost of one position. `state` must
    /// come from this model's [`start_decoding`](Self::start_decoding): it holds the model's
    /// output projection.
    ///
    /// # Panics
    /// If `state.step()` has reached the model's [`max_positions`](Self::max_positions).
    pub fn decode_step(&self, last_tokens: Tensor<2, Int>, state: &mut DecoderState) -> Tensor<2> {
        let hidden = self
            .decoder
            .forward_step(self.target_embedding().forward(last_tokens), state);
        let [batch, len, d_model] = hidden.dims();
        let last = hidden.slice([0..batch, len - 1..len, 0..d_model]);
        state.projection.apply(last.reshape([batch, d_model]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NormPosition, TransformerConfig};
    use burn::tensor::{Device, Distribution, TensorData, Tolerance};

    fn tokens(rows: &[&[i64]], device: &Device) -> Tensor<2, Int> {
        let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
    }

    fn model(norm: NormPosition, device: &Device) -> Transformer {
        device.seed(11);
        TransformerConfig::new(20, 25)
            .with_d_model(16)
            .with_n_heads(4)
            .with_d_ff(32)
            .with_n_encoder_layers(2)
            .with_n_decoder_layers(2)
            .with_dropout(0.0)
            .with_attention_dropout(0.0)
            .with_max_positions(16)
            .with_norm_position(norm)
            .init(device)
            .expect("valid")
    }

    #[test]
    fn steps_equal_the_full_pass_position_by_position() {
        let device = Device::flex();
        for norm in [NormPosition::Post, NormPosition::Pre] {
            let model = model(norm, &device);
            let encoded = model.encode(tokens(&[&[4, 5, 6, 3], &[7, 3, 0, 0]], &device));
            let target = tokens(&[&[2, 9, 10, 11, 12], &[2, 13, 14, 15, 16]], &device);
            let full = model.decode(target.clone(), &encoded);
            let mut state = model.start_decoding(&encoded);
            for t in 0..5 {
                assert_eq!(state.step(), t);
                let step = model.decode_step(target.clone().slice([0..2, t..t + 1]), &mut state);
                let expected = full.clone().slice([0..2, t..t + 1, 0..25]).reshape([2, 25]);
                step.into_data()
                    .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-5));
            }
            let cache = &state.layers()[0];
            assert_eq!(cache.self_keys.as_ref().expect("keys").dims(), [2, 4, 5, 4]);
            assert_eq!(cache.cross_keys.dims(), [2, 4, 4, 4]);
        }
    }

    /// The tied projection (the target embedding, laid out once per search by
    /// `start_decoding`) and a separate one with its bias give the full pass's logits.
    #[test]
    fn the_laid_out_projection_equals_the_models_own() {
        let device = Device::flex();
        for tied in [true, false] {
            device.seed(12);
            let model = TransformerConfig::new(25, 25)
                .with_d_model(16)
                .with_n_heads(4)
                .with_d_ff(32)
                .with_n_encoder_layers(1)
                .with_n_decoder_layers(1)
                .with_dropout(0.0)
                .with_attention_dropout(0.0)
                .with_max_positions(16)
                .with_share_embeddings(true)
                .with_tie_output_projection(tied)
                .init(&device)
                .expect("valid");
            let encoded = model.encode(tokens(&[&[4, 5, 6, 3], &[7, 3, 0, 0]], &device));
            let target = tokens(&[&[2, 9, 10], &[2, 13, 14]], &device);
            let full = model.decode(target.clone(), &encoded);
            let mut state = model.start_decoding(&encoded);
            for t in 0..3 {
                let step = model.decode_step(target.clone().slice([0..2, t..t + 1]), &mut state);
                let expected = full.clone().slice([0..2, t..t + 1, 0..25]).reshape([2, 25]);
                step.into_data()
                    .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-5));
            }
        }
    }

    #[test]
    fn a_chunk_of_several_positions_is_masked_causally() {
        let device = Device::flex();
        let model = model(NormPosition::Post, &device);
        let encoded = model.encode(tokens(&[&[4, 5, 6, 3]], &device));
        let target = tokens(&[&[2, 9, 10, 11, 12]], &device);
        let full = model.decode(target.clone(), &encoded);
        let mut state = model.start_decoding(&encoded);
        // Two positions, then three at once.
        let hidden_a = model.decoder.forward_step(
            model
                .target_embedding()
                .forward(target.clone().slice([0..1, 0..2])),
            &mut state,
        );
        let hidden_b = model.decoder.forward_step(
            model.target_embedding().forward(target.slice([0..1, 2..5])),
            &mut state,
        );
        assert_eq!(state.step(), 5);
        let stepped = model.project(Tensor::cat(vec![hidden_a, hidden_b], 1));
        stepped
            .into_data()
            .assert_approx_eq::<f32>(&full.into_data(), Tolerance::absolute(1e-5));
    }

    #[test]
    fn select_reorders_and_duplicates_rows() {
        let device = Device::flex();
        let model = model(NormPosition::Pre, &device);
        let encoded = model.encode(tokens(&[&[4, 5, 6, 3], &[7, 3, 0, 0]], &device));
        let target = tokens(&[&[2, 9, 10], &[2, 13, 14]], &device);
        let mut state = model.start_decoding(&encoded);
        model.decode_step(target.clone().slice([0..2, 0..1]), &mut state);
        model.decode_step(target.clone().slice([0..2, 1..2]), &mut state);
        // Rows [1, 0, 1]: the second sentence twice around the first.
        state.select(Tensor::from_data(TensorData::from([1i64, 0, 1]), &device));
        assert_eq!(state.batch_size(), 3);
        let last = tokens(&[&[14], &[10], &[14]], &device);
        let stepped = model.decode_step(last, &mut state);
        let full = model.decode(target, &encoded);
        let expect = |row: usize| {
            full.clone()
                .slice([row..row + 1, 2..3, 0..25])
                .reshape([1, 25])
        };
        let expected = Tensor::cat(vec![expect(1), expect(0), expect(1)], 0);
        stepped
            .into_data()
            .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-5));
    }

    #[test]
    fn beams_sharing_their_sentence_memory_step_as_rows_with_copies_do() {
        let device = Device::flex();
        for norm in [NormPosition::Post, NormPosition::Pre] {
            let model = model(norm, &device);
            let encoded = model.encode(tokens(&[&[4, 5, 6, 3], &[7, 3, 0, 0]], &device));
            let index = |rows: &[i64]| {
                Tensor::<1, Int>::from_data(TensorData::new(rows.to_vec(), [rows.len()]), &device)
            };
            let mut shared = model.start_decoding(&encoded);
            let mut copied = model.start_decoding(&encoded);
            let bos = tokens(&[&[2], &[2]], &device);
            model.decode_step(bos.clone(), &mut shared);
            model.decode_step(bos, &mut copied);

            // Three beams per sentence, from each sentence's single row.
            let rows = [0, 0, 0, 1, 1, 1];
            shared.select_beams(index(&rows), None, 3);
            copied.select(index(&rows));
            assert_eq!((shared.batch_size(), shared.beams()), (6, 3));
            assert_eq!(shared.layers()[0].cross_keys.dims()[0], 2);
            assert_eq!(copied.layers()[0].cross_keys.dims()[0], 6);
            let next = tokens(&[&[9], &[10], &[11], &[12], &[13], &[14]], &device);
            // The first layer with its cross-attention weights: per row, as with copies.
            let x = model
                .decoder
                .embed_positions(model.target_embedding().forward(next.clone()), 1);
            let layer = &model.decoder.layers[0];
            let (mut cache_a, mut cache_b) = (shared.layers[0].clone(), copied.layers[0].clone());
            let (out_a, weights_a) = layer.forward_step(
                x.clone(),
                &mut cache_a,
                Some(shared.memory_mask.clone()),
                3,
                true,
            );
            let (out_b, weights_b) =
                layer.forward_step(x, &mut cache_b, Some(copied.memory_mask.clone()), 1, true);
            out_a
                .into_data()
                .assert_approx_eq::<f32>(&out_b.into_data(), Tolerance::absolute(1e-5));
            let (weights_a, weights_b) = (weights_a.expect("weights"), weights_b.expect("weights"));
            assert_eq!(weights_a.dims(), [6, 4, 1, 4]);
            weights_a
                .into_data()
                .assert_approx_eq::<f32>(&weights_b.into_data(), Tolerance::absolute(1e-6));

            let a = model.decode_step(next.clone(), &mut shared);
            let b = model.decode_step(next, &mut copied);
            a.into_data()
                .assert_approx_eq::<f32>(&b.into_data(), Tolerance::absolute(1e-5));

            // The first sentence finishes; the second's beams are reordered.
            let rows = [4, 3, 5];
            shared.select_beams(index(&rows), Some(index(&[1])), 3);
            copied.select(index(&rows));
            assert_eq!(shared.layers()[1].cross_values.dims()[0], 1);
            let next = tokens(&[&[15], &[16], &[17]], &device);
            let a = model.decode_step(next.clone(), &mut shared);
            let b = model.decode_step(next, &mut copied);
            a.into_data()
                .assert_approx_eq::<f32>(&b.into_data(), Tolerance::absolute(1e-5));

            // An arbitrary select after sharing gives each row its own copy again.
            shared.select(index(&[2, 0]));
            copied.select(index(&[2, 0]));
            assert_eq!((shared.batch_size(), shared.beams()), (2, 1));
            let next = tokens(&[&[18], &[19]], &device);
            let a = model.decode_step(next.clone(), &mut shared);
            let b = model.decode_step(next, &mut copied);
            a.into_data()
                .assert_approx_eq::<f32>(&b.into_data(), Tolerance::absolute(1e-5));
        }
    }

    #[test]
    fn the_split_output_projection_equals_the_whole_product() {
        let device = Device::flex();
        device.seed(3);
        let embedding = Tensor::<2>::random([301, 48], Distribution::Normal(0.0, 1.0), &device);
        let weight = laid_out(embedding.clone().transpose());
        let bias = Tensor::<1>::random([301], Distribution::Normal(0.0, 1.0), &device);
        let projections = [Some(bias), None].into_iter().flat_map(|bias| {
            [
                (
                    OutputProjection::new(weight.clone(), bias.clone()),
                    bias.clone(),
                    false,
                ),
                (
                    OutputProjection::new(embedding.clone().transpose(), bias.clone()),
                    bias,
                    true,
                ),
            ]
        });
        for (projection, bias, tied) in projections {
            assert_eq!(projection.in_place, crate::helper_thread::available());
            // One row (a tied projection read in place), then more (laid out), then one again.
            for rows in [1, 5, 64, 1] {
                let x = Tensor::<2>::random([rows, 48], Distribution::Normal(0.0, 1.0), &device);
                let whole = x.clone().matmul(weight.clone());
                let whole = match &bias {
                    Some(bias) => whole + bias.clone().unsqueeze(),
                    None => whole,
                };
                let split = projection.apply(x);
                assert_eq!(split.dims(), [rows, 301]);
                let (split, whole) = (split.into_data(), whole.into_data());
                if tied && rows == 1 && projection.in_place {
                    // The embedding's rows read in place as a transposed view: the same sums
                    // added in another order.
                    split.assert_approx_eq::<f32>(&whole, Tolerance::rel_abs(1e-6, 1e-5));
                } else {
                    // The same products column by column: equal to the last bit.
                    assert_eq!(
                        split.try_to_vec::<f32>().expect("f32"),
                        whole.try_to_vec::<f32>().expect("f32")
                    );
                }
            }
        }
    }
}
