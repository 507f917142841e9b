//! Word alignment from the model's cross-attention: which source word each output word
//! translates, for placing markup (serve's `format: "html"`) the way Bergamot places it.

use rosetta_data::SubwordTokenizer;

use crate::error::InferError;
use crate::translator::{Translation, Translator};

/// The word of each subword of `tokens`: a subword that starts with a word-boundary marker
/// (`Ġ` in byte-level BPE, `▁` in SentencePiece) starts a new word; the first starts word 0.
fn word_of_each(tokenizer: &SubwordTokenizer, tokens: &[u32]) -> Vec<usize> {
    let mut word = 0;
    tokens
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            let starts = tokenizer
                .id_to_token(id)
                .is_some_and(|piece| piece.starts_with('Ġ') || piece.starts_with('▁'));
            if i > 0 && starts {
                word += 1;
            }
            word
        })
        .collect()
}

/// Maps index `i` of `from` items onto `to` items, proportionally (the identity when equal).
fn rescale(i: usize, from: usize, to: usize) -> usize {
    if from == to || from == 0 {
        i.min(to.saturating_sub(1))
    } else {
        (i * to / from).min(to.saturating_sub(1))
    }
}

impl Translator {
    /// For each word of `translation.text` (split at whitespace), the word of `source` (split
    /// at whitespace) it aligns to: the source word whose subwords its subwords attend to most
    /// in the last decoder layer (mean over heads). Where the tokenizer's words and the
    /// whitespace words differ in number, indices are mapped proportionally.
    pub fn word_alignment(
        &self,
        source: &str,
        translation: &Translation,
    ) -> Result<Vec<usize>, InferError> {
        let target_words = translation.text.split_whitespace().count();
        let source_words = source.split_whitespace().count();
        if target_words == 0 {
            return Ok(Vec::new());
        }
        if translation.source_tokens.is_empty() || translation.target_tokens.is_empty() {
            return Ok(vec![0; target_words]);
        }
        let map = self.cross_attention(translation, None, None)?;
        let columns = translation.source_tokens.len() + 1;
        let source_word = word_of_each(&self.tokenizers.source, &translation.source_tokens);
        let target_word = word_of_each(&self.tokenizers.target, &translation.target_tokens);
        let n_source = source_word.last().map_or(1, |w| w + 1);
        let n_target = target_word.last().map_or(1, |w| w + 1);
        let mut scores = vec![0f32; n_target * n_source];
        for (t, &tw) in target_word.iter().enumerate() {
            let Some(row) = map.weights.get(t * columns..(t + 1) * columns) else {
                break;
            };
            for (s, &sw) in source_word.iter().enumerate() {
                scores[tw * n_source + sw] += row[s];
            }
        }
        let best: Vec<usize> = scores
            .chunks(n_source)
            .map(|row| {
                row.iter()
                    .enumerate()
                    .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
                        if v > bv { (i, v) } else { (bi, bv) }
                    })
                    .0
            })
            .collect();
        Ok((0..target_words)
            .map(|w| {
                let token_word = best[rescale(w, target_words, n_target)];
                rescale(token_word, n_source, source_words.max(1))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::rescale;

    #[test]
    fn rescaling_is_the_identity_for_equal_counts_and_stays_in_range() {
        assert_eq!(
            (0..4).map(|i| rescale(i, 4, 4)).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(
            (0..4).map(|i| rescale(i, 4, 2)).collect::<Vec<_>>(),
            [0, 0, 1, 1]
        );
        assert_eq!((0..2).map(|i| rescale(i, 2, 5)).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(rescale(3, 0, 1), 0);
    }
}
