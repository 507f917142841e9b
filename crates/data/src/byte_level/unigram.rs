//! The Unigram model of a Rosetta `tokenizer.json`: the most probable segmentation of a word
//! by Viterbi over its pieces' log-probabilities, as the `tokenizers` crate's
//! `Unigram::encode_optimized` computes it: pieces tried shortest first from each character
//! boundary, a later candidate replacing an earlier only when strictly better, a character that
//! is not a piece by itself also offered as unknown at the lowest score less 10, and runs of
//! unknowns fused.

use std::collections::HashMap;

use serde::Deserialize;

/// What `tokenizers` subtracts from the lowest piece score to score an unknown character.
const UNKNOWN_PENALTY: f64 = 10.0;

/// A Unigram vocabulary: pieces with scores.
#[derive(Debug, Clone)]
pub(crate) struct UnigramModel {
    /// Piece text and score, by id.
    pub(crate) pieces: Vec<(String, f64)>,
    /// Piece text to id (the last of duplicates, as `tokenizers` keeps).
    pub(crate) ids: HashMap<String, u32>,
    /// The longest piece, in bytes.
    longest: usize,
    /// The unknown piece's id.
    unk: Option<u32>,
    /// The score of an unknown character.
    unknown_score: f64,
}

/// The `model` object of a Unigram `tokenizer.json`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UnigramJson {
    #[serde(rename = "type")]
    _kind: String,
    unk_id: Option<usize>,
    vocab: Vec<(String, f64)>,
    #[serde(default)]
    byte_fallback: bool,
}

/// One position of the lattice: the best path ending there.
#[derive(Clone, Copy)]
struct Best {
    score: f64,
    /// Where the last piece of the path starts; `None` while no path reaches here.
    start: Option<usize>,
    id: u32,
}

impl UnigramModel {
    /// The model of `json`, refusing byte fallback (Rosetta's tokenizers do not set it).
    pub(crate) fn from_json(json: UnigramJson) -> Result<Self, String> {
        if json.byte_fallback {
            return Err(
                "`model.byte_fallback` is set; Rosetta's tokenizers leave it unset and only they are read here"
                    .into(),
            );
        }
        let unk = match json.unk_id {
            Some(id) if id >= json.vocab.len() => {
                return Err(format!(
                    "`model.unk_id` {id} is outside the vocabulary of {} pieces",
                    json.vocab.len()
                ));
            }
            Some(id) => Some(id as u32),
            None => None,
        };
        let mut ids = HashMap::with_capacity(json.vocab.len());
        let mut lowest = f64::INFINITY;
        for (id, (piece, score)) in json.vocab.iter().enumerate() {
            ids.insert(piece.clone(), id as u32);
            lowest = lowest.min(*score);
        }
        Ok(Self {
            longest: json.vocab.iter().map(|(p, _)| p.len()).max().unwrap_or(0),
            pieces: json.vocab,
            ids,
            unk,
            unknown_score: lowest - UNKNOWN_PENALTY,
        })
    }

    /// Appends the ids of `word` to `out`; an error when an unknown character would be in the
    /// best segmentation and the model has no unknown piece (as in `tokenizers`).
    pub(crate) fn tokenize(&self, word: &str, out: &mut Vec<u32>) -> Result<(), String> {
        if word.is_empty() {
            return Ok(());
        }
        let size = word.len();
        let mut best = vec![
            Best {
                score: 0.0,
                start: None,
                id: 0,
            };
            size + 1
        ];
        let improves = |node: &Best, score: f64| node.start.is_none() || score > node.score;
        for (start, c) in word.char_indices() {
            let here = best[start].score;
            let width = c.len_utf8();
            let mut single = false;
            let mut end = start;
            for next in word[start..].chars() {
                end += next.len_utf8();
                if end - start > self.longest {
                    break;
                }
                if let Some(&id) = self.ids.get(&word[start..end]) {
                    let score = here + self.pieces[id as usize].1;
                    if improves(&best[end], score) {
                        best[end] = Best {
                            score,
                            start: Some(start),
                            id,
                        };
                    }
                    single |= end - start == width;
                }
            }
            // The character is not a piece by itself: it may be taken as unknown.
            let score = here + self.unknown_score;
            if !single && improves(&best[start + width], score) {
                let id = self
                    .unk
                    .ok_or_else(|| format!("{c:?} is not a piece and the model has no `unk_id`"))?;
                best[start + width] = Best {
                    score,
                    start: Some(start),
                    id,
                };
            }
        }
        // Back from the end; a run of unknown pieces becomes the id of its text (the unknown
        // piece's unless the text is a piece).
        let mut reversed = Vec::new();
        let mut end = size;
        let mut unknown_run: Option<(usize, u32)> = None;
        let fused = |text: &str, unk: u32| self.ids.get(text).copied().unwrap_or(unk);
        while end > 0 {
            let node = best[end];
            // Every character boundary is reached: each character is at least unknown.
            let Some(start) = node.start else {
                return Err(format!("no segmentation reaches byte {end}"));
            };
            match self.unk.filter(|&unk| unk == node.id) {
                Some(unk) => {
                    unknown_run.get_or_insert((end, unk));
                }
                None => {
                    if let Some((run_end, unk)) = unknown_run.take() {
                        reversed.push(fused(&word[end..run_end], unk));
                    }
                    reversed.push(node.id);
                }
            }
            end = start;
        }
        if let Some((run_end, unk)) = unknown_run {
            reversed.push(fused(&word[..run_end], unk));
        }
        out.extend(reversed.into_iter().rev());
        Ok(())
    }
}
