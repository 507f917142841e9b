//! The BPE model of a Rosetta `tokenizer.json`: a word of byte-level symbols merged pair by
//! pair, lowest rank first and leftmost first among equals, as the `tokenizers` crate's
//! `Word::merge_all` does (its heap and its check for entries gone stale), optionally
//! dropping each merge with a probability (BPE-dropout, drawing from a seeded generator).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::Deserialize;

use crate::rng::SplitMix64;

/// A BPE vocabulary and its merges.
#[derive(Debug, Clone)]
pub(crate) struct BpeModel {
    /// Token text to id.
    pub(crate) vocab: HashMap<String, u32>,
    /// Id to token text.
    pub(crate) tokens: HashMap<u32, String>,
    /// `(left, right) -> (rank, merged id)`.
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// The id of the unknown token, for a character outside the vocabulary.
    unk: Option<u32>,
}

/// Merge dropout: the probability of skipping a merge and the generator it draws from.
pub(crate) struct Dropout<'a> {
    /// In `[0, 1)`.
    pub(crate) probability: f64,
    /// Seeded by the caller.
    pub(crate) rng: &'a mut SplitMix64,
}

/// A merge as `tokenizer.json` writes it: a pair, or (older files) one string "left right".
#[derive(Deserialize)]
#[serde(untagged)]
enum MergeEntry {
    Pair(String, String),
    Joined(String),
}

/// The `model` object of a BPE `tokenizer.json`, with the options Rosetta writes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BpeJson {
    #[serde(rename = "type")]
    _kind: String,
    dropout: Option<f64>,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    fuse_unk: bool,
    #[serde(default)]
    byte_fallback: bool,
    #[serde(default)]
    ignore_merges: bool,
    vocab: HashMap<String, u32>,
    merges: Vec<MergeEntry>,
}

impl BpeModel {
    /// The model of `json`, refusing options Rosetta's tokenizers do not set (the error names
    /// the key).
    pub(crate) fn from_json(json: BpeJson) -> Result<Self, String> {
        let unsupported = [
            ("dropout", json.dropout.is_some_and(|p| p != 0.0)),
            (
                "continuing_subword_prefix",
                json.continuing_subword_prefix.is_some(),
            ),
            ("end_of_word_suffix", json.end_of_word_suffix.is_some()),
            ("fuse_unk", json.fuse_unk),
            ("byte_fallback", json.byte_fallback),
            ("ignore_merges", json.ignore_merges),
        ];
        if let Some((key, _)) = unsupported.iter().find(|(_, set)| *set) {
            return Err(format!(
                "`model.{key}` is set; Rosetta's tokenizers leave it unset and only they are read here"
            ));
        }
        let vocab = json.vocab;
        let unk =
            match &json.unk_token {
                Some(token) => Some(vocab.get(token).copied().ok_or_else(|| {
                    format!("`model.unk_token` {token:?} is not in the vocabulary")
                })?),
                None => None,
            };
        let id = |token: &str, rank: usize| {
            vocab.get(token).copied().ok_or_else(|| {
                format!("`model.merges[{rank}]` names {token:?}, not in the vocabulary")
            })
        };
        let mut merges = HashMap::with_capacity(json.merges.len());
        for (rank, entry) in json.merges.iter().enumerate() {
            let (left, right) = match entry {
                MergeEntry::Pair(left, right) => (left.as_str(), right.as_str()),
                MergeEntry::Joined(joined) => match joined.split(' ').collect::<Vec<_>>()[..] {
                    [left, right] => (left, right),
                    _ => return Err(format!("`model.merges[{rank}]` {joined:?} is not a pair")),
                },
            };
            let rank_u32 = u32::try_from(rank).map_err(|_| "too many merges".to_string())?;
            merges.insert(
                (id(left, rank)?, id(right, rank)?),
                (rank_u32, id(&format!("{left}{right}"), rank)?),
            );
        }
        let tokens = vocab.iter().map(|(t, &id)| (id, t.clone())).collect();
        Ok(Self {
            vocab,
            tokens,
            merges,
            unk,
        })
    }

    /// Appends the ids of `word` (byte-level symbols) to `out`: one symbol per character (the
    /// unknown token for a character outside the vocabulary, none without one), merged.
    pub(crate) fn tokenize(&self, word: &str, dropout: Option<Dropout<'_>>, out: &mut Vec<u32>) {
        let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
        let mut buffer = [0u8; 4];
        for c in word.chars() {
            let Some(id) = self
                .vocab
                .get(c.encode_utf8(&mut buffer) as &str)
                .copied()
                .or(self.unk)
            else {
                continue;
            };
            let index = symbols.len() as isize;
            symbols.push(Symbol {
                id,
                prev: index - 1,
                next: index + 1,
                removed: false,
            });
        }
        if let Some(last) = symbols.last_mut() {
            last.next = -1;
        }
        let (probability, mut rng) = match dropout {
            Some(Dropout { probability, rng }) if probability > 0.0 => (probability, Some(rng)),
            _ => (0.0, None),
        };
        let threshold = (probability * 2f64.powi(64)) as u64;
        // A min-heap on (rank, position).
        let mut queue: BinaryHeap<Reverse<(u32, usize, u32)>> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, w)| {
                self.merges
                    .get(&(w[0].id, w[1].id))
                    .map(|&(rank, id)| Reverse((rank, pos, id)))
            })
            .collect();
        let mut skipped = Vec::new();
        while let Some(Reverse(top)) = queue.pop() {
            let (_, pos, new_id) = top;
            if let Some(rng) = rng.as_deref_mut()
                && rng.next_u64() < threshold
            {
                skipped.push(Reverse(top));
                continue;
            }
            queue.extend(skipped.drain(..));
            let current = symbols[pos];
            if current.removed || current.next < 0 {
                continue;
            }
            let next_pos = current.next as usize;
            let right = symbols[next_pos];
            // An entry for a pair that has changed since it was queued.
            if self
                .merges
                .get(&(current.id, right.id))
                .is_none_or(|&(_, id)| id != new_id)
            {
                continue;
            }
            symbols[pos].id = new_id;
            symbols[pos].next = right.next;
            symbols[next_pos].removed = true;
            if right.next >= 0 {
                symbols[right.next as usize].prev = pos as isize;
            }
            let merged = symbols[pos];
            if merged.prev >= 0 {
                let prev = merged.prev as usize;
                if let Some(&(rank, id)) = self.merges.get(&(symbols[prev].id, merged.id)) {
                    queue.push(Reverse((rank, prev, id)));
                }
            }
            if merged.next >= 0 {
                let next = merged.next as usize;
                if let Some(&(rank, id)) = self.merges.get(&(merged.id, symbols[next].id)) {
                    queue.push(Reverse((rank, pos, id)));
                }
            }
        }
        out.extend(symbols.iter().filter(|s| !s.removed).map(|s| s.id));
    }
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    prev: isize,
    next: isize,
    removed: bool,
}
