//! Pieces to text, as `SentencePieceProcessor::Decode` does for a model without byte pieces.

use crate::model::SentencePieceModel;
use crate::normalizer::SPACE_SYMBOL;

/// Decodes `pieces` with `model` (see [`SentencePieceModel::decode_pieces`]).
///
/// Each piece is looked up (`PieceToId`; a string that is no piece counts as `<unk>`). A
/// control piece decodes to nothing; the unknown piece's own text to the unknown surface;
/// another string that is no piece to itself, unchanged. Other pieces have `▁` replaced by a
/// space, except that while nothing has been written yet (and the model adds a dummy prefix or
/// removes extra whitespace) one leading `▁` of each piece is dropped. With
/// `remove_extra_whitespaces` every piece until the first visible text loses its leading `▁`;
/// without it, only the first one that had one. Finally the denormaliser, if the model has
/// one, is applied to the whole text.
pub(crate) fn decode_pieces<S: AsRef<str>>(model: &SentencePieceModel, pieces: &[S]) -> String {
    let normalizer = model.normalizer();
    let strips_bos_space = normalizer.add_dummy_prefix() || normalizer.remove_extra_whitespaces();
    let mut text = String::new();
    let mut is_bos_ws = true;
    let mut bos_ws_seen = false;
    for piece in pieces {
        let piece = piece.as_ref();
        if bos_ws_seen || !text.is_empty() {
            is_bos_ws = false;
        }
        let id = model.piece_to_id(piece);
        bos_ws_seen = false;
        if model.is_control(id) {
            continue;
        }
        if model.is_unknown(id) {
            if model.id_to_piece(id) == Some(piece) {
                text.push_str(model.unk_surface());
            } else {
                text.push_str(piece);
            }
            continue;
        }
        let mut piece = piece;
        if is_bos_ws
            && strips_bos_space
            && let Some(rest) = piece.strip_prefix(SPACE_SYMBOL)
        {
            piece = rest;
            bos_ws_seen = !normalizer.remove_extra_whitespaces();
        }
        text.push_str(&piece.replace(SPACE_SYMBOL, " "));
    }
    match model.denormalizer() {
        Some(denormalizer) => denormalizer.normalize(&text),
        None => text,
    }
}
