//! Framing token ids for the model: each sequence gets its beginning-of-sentence token in front
//! (decoder inputs) or its end-of-sentence token behind (encoder inputs, decoder targets), and
//! the rows of a batch are padded to the longest. The one place this is written: the data
//! batcher, translation and sequence scoring all call it.

use burn::tensor::{Device, Int, Tensor, TensorData};

/// What goes around each sequence of a framed batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// `BOS y_1 … y_n`: a decoder input (teacher forcing).
    Bos(u32),
    /// `x_1 … x_n EOS`: an encoder input, or a decoder target.
    Eos(u32),
}

/// Row-major ids of `rows` framed by `frame` and padded with `pad` to the longest framed row;
/// with the row length (at least 1, so that an empty batch still has a shape).
pub fn frame_rows<R: AsRef<[u32]>>(rows: &[R], frame: Frame, pad: u32) -> (Vec<i64>, usize) {
    let len = rows.iter().map(|r| r.as_ref().len() + 1).max().unwrap_or(1);
    let mut ids = vec![i64::from(pad); rows.len() * len];
    for (row, tokens) in ids.chunks_exact_mut(len).zip(rows) {
        let tokens = tokens.as_ref();
        let (start, edge, id) = match frame {
            Frame::Bos(bos) => (1, 0, bos),
            Frame::Eos(eos) => (0, tokens.len(), eos),
        };
        for (slot, &token) in row[start..].iter_mut().zip(tokens) {
            *slot = i64::from(token);
        }
        row[edge] = i64::from(id);
    }
    (ids, len)
}

/// [`frame_rows`] as a `[rows, len]` tensor on `device`.
pub fn frame_tensor<R: AsRef<[u32]>>(
    rows: &[R],
    frame: Frame,
    pad: u32,
    device: &Device,
) -> Tensor<2, Int> {
    let (ids, len) = frame_rows(rows, frame, pad);
    Tensor::from_data(TensorData::new(ids, [rows.len(), len]), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_framed_and_padded_to_the_longest() {
        let rows = [vec![5, 6, 7], vec![8], vec![]];
        let (ids, len) = frame_rows(&rows, Frame::Eos(2), 0);
        assert_eq!(len, 4);
        assert_eq!(ids, [5, 6, 7, 2, 8, 2, 0, 0, 2, 0, 0, 0]);
        let (ids, len) = frame_rows(&rows, Frame::Bos(1), 0);
        assert_eq!(len, 4);
        assert_eq!(ids, [1, 5, 6, 7, 1, 8, 0, 0, 1, 0, 0, 0]);
        let empty: [Vec<u32>; 0] = [];
        assert_eq!(frame_rows(&empty, Frame::Eos(2), 0), (vec![], 1));
    }
}
