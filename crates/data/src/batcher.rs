//! Turning pairs of subword ids into the padded tensors and masks the model trains on, on any
//! device, natively also through Burn's `Batcher` and `Dataset` traits (the browser build
//! translates only, and compiles Burn without them).

#[cfg(not(target_arch = "wasm32"))]
use burn::data::dataloader::batcher::Batcher;
#[cfg(not(target_arch = "wasm32"))]
use burn::data::dataset::Dataset;
use burn::tensor::{Bool, Device, Int, Tensor};
use rosetta_model::framing::{Frame, SpecialTokens, frame_tensor};

use crate::error::DataError;
#[cfg(not(target_arch = "wasm32"))]
use crate::store::EncodedCorpus;
use crate::store::PairSource;
use crate::tokenizer::SPECIAL_TOKEN_IDS;

/// One pair of unframed subword sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairTokens {
    /// Source ids (no EOS yet).
    pub source: Vec<u32>,
    /// Target ids (no BOS/EOS yet).
    pub target: Vec<u32>,
}

#[cfg(not(target_arch = "wasm32"))]
impl Dataset<PairTokens, DataError> for EncodedCorpus {
    fn get(&self, index: usize) -> Result<PairTokens, DataError> {
        if index >= self.len() {
            return Err(DataError::IndexOutOfRange {
                index,
                len: self.len(),
            });
        }
        Ok(PairTokens {
            source: self.source.get(index).to_vec(),
            target: self.target.get(index).to_vec(),
        })
    }

    fn len(&self) -> usize {
        EncodedCorpus::len(self)
    }
}

/// A padded batch: everything one training or validation step needs.
#[derive(Debug, Clone)]
pub struct TranslationBatch {
    /// `[batch, src_len]`: source + EOS, padded with PAD.
    pub source: Tensor<2, Int>,
    /// `[batch, tgt_len]`: BOS + target, padded (the decoder input).
    pub target_input: Tensor<2, Int>,
    /// `[batch, tgt_len]`: target + EOS, padded (what each position must predict).
    pub target_output: Tensor<2, Int>,
    /// `[batch, src_len]`: `true` at source padding.
    pub source_padding: Tensor<2, Bool>,
    /// `[batch, tgt_len]`: `true` at target padding.
    pub target_padding: Tensor<2, Bool>,
    /// Non-padding source tokens (EOS included).
    pub source_tokens: usize,
    /// Non-padding target tokens (EOS included): the tokens the loss is over.
    pub target_tokens: usize,
}

/// Frames pairs with BOS/EOS and pads them to the longest sequence of the batch.
#[derive(Debug, Clone, Copy)]
pub struct TranslationBatcher {
    /// The special tokens of the model's vocabulary, which frame and pad every row.
    pub tokens: SpecialTokens,
}

impl Default for TranslationBatcher {
    /// Frames with the ids of Rosetta's own tokenizers ([`SPECIAL_TOKEN_IDS`]).
    fn default() -> Self {
        Self::new(SPECIAL_TOKEN_IDS)
    }
}

impl TranslationBatcher {
    /// A batcher framing with `tokens` (the model configuration's
    /// `TransformerConfig::special_tokens()`).
    pub fn new(tokens: SpecialTokens) -> Self {
        Self { tokens }
    }

    /// The batch of `indices` from `corpus` (in memory or on disk).
    pub fn batch_indices(
        &self,
        corpus: &(impl PairSource + ?Sized),
        indices: &[u32],
        device: &Device,
    ) -> Result<TranslationBatch, DataError> {
        Ok(self.batch_of(&read_pairs(corpus, indices)?, device))
    }

    /// The batch of pairs already read (see [`read_pairs`]).
    pub fn batch_of(&self, pairs: &[PairTokens], device: &Device) -> TranslationBatch {
        let pairs: Vec<(&[u32], &[u32])> = pairs
            .iter()
            .map(|p| (p.source.as_slice(), p.target.as_slice()))
            .collect();
        build(&pairs, &self.tokens, device)
    }
}

/// Reads the pairs `indices` of `corpus`, for [`TranslationBatcher::batch_of`].
pub fn read_pairs(
    corpus: &(impl PairSource + ?Sized),
    indices: &[u32],
) -> Result<Vec<PairTokens>, DataError> {
    indices
        .iter()
        .map(|&i| {
            let mut pair = PairTokens {
                source: Vec::new(),
                target: Vec::new(),
            };
            corpus.read_pair(i as usize, &mut pair.source, &mut pair.target)?;
            Ok(pair)
        })
        .collect()
}

#[cfg(not(target_arch = "wasm32"))]
impl Batcher<PairTokens, TranslationBatch> for TranslationBatcher {
    fn batch(&self, items: Vec<PairTokens>, device: &Device) -> TranslationBatch {
        let pairs: Vec<(&[u32], &[u32])> = items
            .iter()
            .map(|p| (p.source.as_slice(), p.target.as_slice()))
            .collect();
        build(&pairs, &self.tokens, device)
    }
}

fn build(pairs: &[(&[u32], &[u32])], tokens: &SpecialTokens, device: &Device) -> TranslationBatch {
    let sources: Vec<&[u32]> = pairs.iter().map(|(s, _)| *s).collect();
    let targets: Vec<&[u32]> = pairs.iter().map(|(_, t)| *t).collect();
    let source = frame_tensor(&sources, Frame::Eos, tokens, device);
    let target_input = frame_tensor(&targets, Frame::Bos, tokens, device);
    let target_output = frame_tensor(&targets, Frame::Eos, tokens, device);
    let source_tokens = sources.iter().map(|s| s.len() + 1).sum();
    let target_tokens = targets.iter().map(|t| t.len() + 1).sum();
    let pad = i64::from(tokens.pad);
    TranslationBatch {
        source_padding: source.clone().equal_elem(pad),
        // From the output (`y + EOS`), whose padding is the input's: the input may start with
        // the padding id itself (Marian's decoder start).
        target_padding: target_output.clone().equal_elem(pad),
        source,
        target_input,
        target_output,
        source_tokens,
        target_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(t: Tensor<2, Int>) -> Vec<i64> {
        t.into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .expect("ints")
    }

    #[test]
    fn frames_pads_and_masks() {
        let device = Device::flex();
        let mut corpus = EncodedCorpus::default();
        corpus.source.push(&[10, 11, 12]);
        corpus.target.push(&[20]);
        corpus.source.push(&[13]);
        corpus.target.push(&[21, 22, 23]);
        let batch = TranslationBatcher::default()
            .batch_indices(&corpus, &[0, 1], &device)
            .expect("in range");
        assert_eq!(ints(batch.source.clone()), vec![10, 11, 12, 3, 13, 3, 0, 0]);
        assert_eq!(
            ints(batch.target_input.clone()),
            vec![2, 20, 0, 0, 2, 21, 22, 23]
        );
        assert_eq!(
            ints(batch.target_output.clone()),
            vec![20, 3, 0, 0, 21, 22, 23, 3]
        );
        assert_eq!(
            batch
                .source_padding
                .into_data()
                .try_to_vec::<bool>()
                .expect("bools"),
            vec![false, false, false, false, false, false, true, true]
        );
        assert_eq!((batch.source_tokens, batch.target_tokens), (6, 6));
        // The Burn Dataset/Batcher path gives the same tensors.
        let items = vec![
            corpus.get(0).expect("pair 0"),
            corpus.get(1).expect("pair 1"),
        ];
        let again = TranslationBatcher::default().batch(items, &device);
        assert_eq!(ints(again.target_output), ints(batch.target_output));
        assert!(matches!(
            corpus.get(2),
            Err(DataError::IndexOutOfRange { index: 2, len: 2 })
        ));
    }
}
