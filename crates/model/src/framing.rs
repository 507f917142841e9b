//! Framing token ids for the model: each sequence gets its beginning-of-sentence token in front
//! (decoder inputs) or its end-of-sentence token behind (encoder inputs, decoder targets), and
//! the rows of a batch are padded to the longest. The one place this is written: the data
//! batcher, translation and sequence scoring all call it, with the [`SpecialTokens`] of the
//! vocabulary (the data crate's `rosetta_data::SPECIAL_TOKEN_IDS` for Rosetta's tokenizers).

use burn::tensor::{Device, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

/// The ids of the special tokens of a vocabulary, the same on both sides: padding, unknown,
/// beginning and end of sentence. The data crate owns the values (its tokenizers reserve ids
/// 0–3 for them); the model's padding id, the search's and the framing's ids are taken from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpecialTokens {
    /// Id of `<pad>`, which fills rows out to the batch's longest.
    pub pad: u32,
    /// Id of `<unk>`, for what the vocabulary cannot spell.
    pub unk: u32,
    /// Id of the token fed to the decoder first: `<s>` in Rosetta's vocabularies, the
    /// `decoder_start_token_id` of an imported model (Marian's is its padding id).
    pub bos: u32,
    /// Id of `</s>`, which ends every source sentence and every translation.
    pub eos: u32,
}

impl SpecialTokens {
    /// The ids of every tokenizer Rosetta trains (`<pad>` 0, `<unk>` 1, `<s>` 2, `</s>` 3),
    /// which a model configuration without its own [`special_tokens`] has.
    ///
    /// [`special_tokens`]: crate::TransformerConfig::special_tokens
    pub const ROSETTA: SpecialTokens = SpecialTokens {
        pad: 0,
        unk: 1,
        bos: 2,
        eos: 3,
    };

    /// The id that goes around each sequence framed by `frame`.
    pub fn framing_id(&self, frame: Frame) -> u32 {
        match frame {
            Frame::Bos => self.bos,
            Frame::Eos => self.eos,
        }
    }
}

/// What goes around each sequence of a framed batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// `BOS y_1 … y_n`: a decoder input (teacher forcing).
    Bos,
    /// `x_1 … x_n EOS`: an encoder input, or a decoder target.
    Eos,
}

/// Row-major ids of `rows` framed by `frame` and padded to the longest framed row, with the
/// ids of `tokens`; with the row length (at least 1, so that an empty batch still has a
/// shape).
pub fn frame_rows<R: AsRef<[u32]>>(
    rows: &[R],
    frame: Frame,
    tokens: &SpecialTokens,
) -> (Vec<i64>, usize) {
    let len = rows.iter().map(|r| r.as_ref().len() + 1).max().unwrap_or(1);
    let mut ids = vec![i64::from(tokens.pad); rows.len() * len];
    let id = i64::from(tokens.framing_id(frame));
    for (row, sequence) in ids.chunks_exact_mut(len).zip(rows) {
        let sequence = sequence.as_ref();
        let (start, edge) = match frame {
            Frame::Bos => (1, 0),
            Frame::Eos => (0, sequence.len()),
        };
        for (slot, &token) in row[start..].iter_mut().zip(sequence) {
            *slot = i64::from(token);
        }
        row[edge] = id;
    }
    (ids, len)
}

/// [`frame_rows`] as a `[rows, len]` tensor on `device`.
pub fn frame_tensor<R: AsRef<[u32]>>(
    rows: &[R],
    frame: Frame,
    tokens: &SpecialTokens,
    device: &Device,
) -> Tensor<2, Int> {
    let (ids, len) = frame_rows(rows, frame, tokens);
    Tensor::from_data(TensorData::new(ids, [rows.len(), len]), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKENS: SpecialTokens = SpecialTokens {
        pad: 0,
        unk: 3,
        bos: 1,
        eos: 2,
    };

    #[test]
    fn rows_are_framed_and_padded_to_the_longest() {
        let rows = [vec![5, 6, 7], vec![8], vec![]];
        let (ids, len) = frame_rows(&rows, Frame::Eos, &TOKENS);
        assert_eq!(len, 4);
        assert_eq!(ids, [5, 6, 7, 2, 8, 2, 0, 0, 2, 0, 0, 0]);
        let (ids, len) = frame_rows(&rows, Frame::Bos, &TOKENS);
        assert_eq!(len, 4);
        assert_eq!(ids, [1, 5, 6, 7, 1, 8, 0, 0, 1, 0, 0, 0]);
        let padded_with_9 = SpecialTokens { pad: 9, ..TOKENS };
        let (ids, _) = frame_rows(&rows, Frame::Eos, &padded_with_9);
        assert_eq!(ids, [5, 6, 7, 2, 8, 2, 9, 9, 2, 9, 9, 9]);
        let empty: [Vec<u32>; 0] = [];
        assert_eq!(frame_rows(&empty, Frame::Eos, &TOKENS), (vec![], 1));
    }
}
