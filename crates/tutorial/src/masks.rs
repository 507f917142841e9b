//! Tutorial demonstration: the two masks. The padding mask marks the padding tokens of each
//! sequence; the look-ahead mask marks, for each query position, the later positions; the
//! decoder uses their combination. `true` (printed 1, as the tutorial's masks) = blocked.

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use rosetta_model::mask;

/// The masks of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasksDemo {
    /// The token ids, one row per sequence.
    pub tokens: Vec<Vec<i64>>,
    /// `[batch][len]`: `true` at padding.
    pub padding: Vec<Vec<bool>>,
    /// `[len][len]`: `true` where query `i` would see key `j > i`.
    pub look_ahead: Vec<Vec<bool>>,
    /// `[batch][len][len]`: the decoder self-attention mask, look-ahead or padding.
    pub combined: Vec<Vec<Vec<bool>>>,
}

/// Builds the padding, look-ahead and combined masks of `tokens` with padding id `pad_id`.
pub fn masks_demo<const L: usize>(tokens: &[[i64; L]], pad_id: usize) -> MasksDemo {
    let device = Device::flex();
    let batch = tokens.len();
    let flat: Vec<i64> = tokens.iter().flatten().copied().collect();
    let ids = Tensor::<2, Int>::from_data(TensorData::new(flat, [batch, L]), &device);
    let padding = mask::padding_mask(&ids, pad_id);
    let combined = mask::causal_padding_mask(padding.clone());
    let look_ahead = mask::look_ahead_mask(L, &device);
    let split =
        |v: Vec<bool>| -> Vec<Vec<bool>> { v.chunks(L.max(1)).map(<[bool]>::to_vec).collect() };
    MasksDemo {
        tokens: tokens.iter().map(|t| t.to_vec()).collect(),
        padding: split(bools(padding)),
        look_ahead: split(bools(look_ahead)),
        combined: bools(combined)
            .chunks((L * L).max(1))
            .map(|m| split(m.to_vec()))
            .collect(),
    }
}

fn bools<const D: usize>(mask: Tensor<D, Bool>) -> Vec<bool> {
    mask.into_data().try_to_vec::<bool>().unwrap_or_default()
}

/// Formats a boolean matrix as rows of 0/1 (1 = blocked), one line per row.
pub fn format_mask(rows: &[Vec<bool>]) -> String {
    rows.iter()
        .map(|r| {
            let cells: Vec<&str> = r.iter().map(|&b| if b { "1" } else { "0" }).collect();
            format!("[{}]", cells.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
