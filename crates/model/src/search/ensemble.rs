//! What produces a search's next-token scores: one model's decoder stepped with or without its
//! key/value cache ([`Stepper`]), or several models stepped together ([`Ensemble`]).

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

use crate::incremental::DecoderState;
use crate::transformer::{Encoded, Transformer};

/// Produces next-token logits step by step, with or without the key/value cache.
// One stepper per search call, never moved in a loop: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum Stepper {
    Cached(DecoderState),
    Recompute {
        encoded: Encoded,
        prefix: Option<Tensor<2, Int>>,
    },
}

impl Stepper {
    fn new(model: &Transformer, encoded: Encoded, use_cache: bool) -> Self {
        if use_cache {
            Self::Cached(model.start_decoding(&encoded))
        } else {
            Self::Recompute {
                encoded,
                prefix: None,
            }
        }
    }

    /// Logits `[rows, vocab]` for the token after `last` `[rows, 1]`.
    fn step(&mut self, model: &Transformer, last: Tensor<2, Int>) -> Tensor<2> {
        match self {
            Self::Cached(state) => model.decode_step(last, state),
            Self::Recompute { encoded, prefix } => {
                let full = match prefix.take() {
                    Some(earlier) => Tensor::cat(vec![earlier, last], 1),
                    None => last,
                };
                *prefix = Some(full.clone());
                let logits = model.decode(full, encoded);
                let [rows, len, vocab] = logits.dims();
                logits
                    .slice([0..rows, len - 1..len, 0..vocab])
                    .reshape([rows, vocab])
            }
        }
    }

    /// Beam search's re-selection (see [`DecoderState::select_beams`]): rows `rows` continue,
    /// `beams` per sentence, the sentences being `sentences` of the old ones (`None`: all, in
    /// order).
    fn select_beams(
        &mut self,
        rows: Tensor<1, Int>,
        sentences: Option<Tensor<1, Int>>,
        beams: usize,
    ) {
        match self {
            Self::Cached(state) => state.select_beams(rows, sentences, beams),
            Self::Recompute { .. } => self.select(rows),
        }
    }

    /// Keeps rows `indices`, in that order.
    fn select(&mut self, indices: Tensor<1, Int>) {
        match self {
            Self::Cached(state) => state.select(indices),
            Self::Recompute { encoded, prefix } => {
                encoded.memory = encoded.memory.clone().select(0, indices.clone());
                encoded.source_padding = encoded.source_padding.clone().select(0, indices.clone());
                *prefix = prefix.take().map(|p| p.select(0, indices));
            }
        }
    }
}

/// The steppers of an ensemble's models, stepped together.
pub(super) struct Ensemble<'a> {
    models: &'a [&'a Transformer],
    steppers: Vec<Stepper>,
}

impl<'a> Ensemble<'a> {
    /// Encodes `source` with every model and starts decoding.
    pub(super) fn new(
        models: &'a [&'a Transformer],
        source: Tensor<2, Int>,
        use_cache: bool,
    ) -> Self {
        let steppers = models
            .iter()
            .map(|model| Stepper::new(model, model.encode(source.clone()), use_cache))
            .collect();
        Self { models, steppers }
    }

    /// Next-token scores `[rows, vocab]` for the token after `last`: one model's logits, or the
    /// mean of several models' log-probabilities (the callers' log-softmax renormalizes either).
    pub(super) fn step(&mut self, last: Tensor<2, Int>) -> Tensor<2> {
        if let ([model], [stepper]) = (self.models, self.steppers.as_mut_slice()) {
            return stepper.step(model, last);
        }
        let mut sum: Option<Tensor<2>> = None;
        for (model, stepper) in self.models.iter().zip(&mut self.steppers) {
            let log_p = log_softmax(stepper.step(model, last.clone()), 1);
            sum = Some(match sum {
                Some(total) => total + log_p,
                None => log_p,
            });
        }
        let sum = sum.expect("an ensemble of at least one model");
        sum / self.models.len() as f64
    }

    /// [`Stepper::select_beams`] on every model.
    pub(super) fn select_beams(
        &mut self,
        rows: Tensor<1, Int>,
        sentences: Option<Tensor<1, Int>>,
        beams: usize,
    ) {
        for stepper in &mut self.steppers {
            stepper.select_beams(rows.clone(), sentences.clone(), beams);
        }
    }

    /// [`Stepper::select`] on every model.
    pub(super) fn select(&mut self, indices: Tensor<1, Int>) {
        for stepper in &mut self.steppers {
            stepper.select(indices.clone());
        }
    }
}
