//! Attention masks. Every mask is `true` where attention is **blocked**.
//!
//! Masks are built with a broadcastable 4-D shape `[batch | 1, 1, queries | 1, keys]` so that
//! one mask serves every head; [`ScaledDotProductAttention`](crate::ScaledDotProductAttention)
//! expands it to `[batch, heads, queries, keys]`.

use burn::tensor::{Bool, Device, Int, Tensor};

/// `[batch, len]`: `true` at every position holding `pad_id`.
pub fn padding_mask(tokens: &Tensor<2, Int>, pad_id: usize) -> Tensor<2, Bool> {
    tokens.clone().equal_elem(pad_id as i64)
}

/// `[len, len]`: `true` above the diagonal, where query `i` would see a later key `j > i`.
pub fn look_ahead_mask(len: usize, device: &Device) -> Tensor<2, Bool> {
    Tensor::<2, Bool>::tril_mask([len, len], 0, device)
}

/// `[batch, 1, 1, keys]`: blocks padding keys for every query and every head.
pub fn key_padding_mask(padding: Tensor<2, Bool>) -> Tensor<4, Bool> {
    let [batch, keys] = padding.dims();
    padding.reshape([batch, 1, 1, keys])
}

/// `[batch, 1, len, len]`: the decoder self-attention mask, blocking future positions and
/// padding keys (the combination of [`look_ahead_mask`] and [`padding_mask`]).
pub fn causal_padding_mask(padding: Tensor<2, Bool>) -> Tensor<4, Bool> {
    let [batch, len] = padding.dims();
    let future = look_ahead_mask(len, &padding.device())
        .reshape([1, 1, len, len])
        .expand([batch, 1, len, len]);
    let pad = padding
        .reshape([batch, 1, 1, len])
        .expand([batch, 1, len, len]);
    future.bool_or(pad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    fn bools<const D: usize>(mask: Tensor<D, Bool>) -> Vec<bool> {
        mask.into_data().try_to_vec::<bool>().expect("bool data")
    }

    #[test]
    fn padding_mask_marks_pad_ids() {
        let device = Device::flex();
        let tokens = Tensor::<2, Int>::from_data(TensorData::from([[5, 6, 0], [7, 0, 0]]), &device);
        assert_eq!(
            bools(padding_mask(&tokens, 0)),
            vec![false, false, true, false, true, true]
        );
    }

    #[test]
    fn look_ahead_blocks_exactly_the_future() {
        let device = Device::flex();
        let mask = bools(look_ahead_mask(4, &device));
        for i in 0..4 {
            for j in 0..4 {
                assert_eq!(mask[i * 4 + j], j > i, "query {i} key {j}");
            }
        }
    }

    #[test]
    fn causal_padding_combines_both() {
        let device = Device::flex();
        let tokens = Tensor::<2, Int>::from_data(TensorData::from([[3, 4, 0]]), &device);
        let mask = bools(causal_padding_mask(padding_mask(&tokens, 0)));
        #[rustfmt::skip]
        let expected = vec![
            false, true, true,
            false, false, true,
            false, false, true,
        ];
        assert_eq!(mask, expected);
    }
}
