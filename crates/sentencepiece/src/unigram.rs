//! SentencePiece's unigram segmentation (`unigram::Model::EncodeOptimized` in
//! `src/unigram_model.cc`), exactly, including its arithmetic: the best path is a Viterbi
//! search over NORMAL and USER_DEFINED pieces (UNUSED ones are skipped), user-defined symbols
//! scored `length_in_bytes * max_score - 0.1`, a character no one-character piece covers
//! scored `min_score - 10` as `<unk>`, and every sum and comparison in `f32`. A candidate
//! replaces the best path ending at the same place only if strictly better, so on a tie the
//! one found first stays (paths are extended from left to right, shorter pieces first).
//!
//! The arithmetic is SentencePiece 0.2.3's, measured: on 20,000 random tie-heavy strings the
//! `f32` Viterbi matches it on every one, while 0.2.1's (a `double` candidate, since its
//! `- 0.1` literal is a double, compared with the stored `float`) differs on 15 and an all-`f64`
//! one on 23. Exact ties such as `0`+`00` against `00`+`0` are where it shows.

use crate::piece_trie::PieceTrie;
use crate::proto::PieceType;

/// The score penalty of an unknown character below the lowest piece score (`kUnkPenalty`).
pub const UNK_PENALTY: f32 = 10.0;

/// One piece of a [`Unigram`] table.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoredPiece {
    /// The piece's text.
    pub piece: String,
    /// Its score (log probability).
    pub score: f32,
    /// Its kind.
    pub kind: PieceType,
}

/// The segmentation model: the piece table, its trie and score bounds.
#[derive(Clone, Debug)]
pub struct Unigram {
    pieces: Vec<ScoredPiece>,
    trie: PieceTrie,
    unk_id: u32,
    min_score: f32,
    max_score: f32,
}

/// A segment of the normalised text: its byte range and piece id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Start byte in the normalised text.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
    /// The piece id (the unknown piece's id for an unknown character).
    pub id: u32,
}

#[derive(Clone, Copy)]
struct BestPath {
    id: u32,
    score: f32,
    starts_at: Option<usize>,
}

/// The byte length of the UTF-8 character starting with `lead` (`string_util::OneCharLen`).
fn one_char_len(lead: u8) -> usize {
    const LENGTHS: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    usize::from(LENGTHS[usize::from(lead >> 4)])
}

impl Unigram {
    /// The model of `pieces` (index = id), whose unknown piece is `unk_id`.
    ///
    /// The trie holds NORMAL, USER_DEFINED and UNUSED pieces, as SentencePiece's does; the
    /// caller has checked that these strings are unique and non-empty.
    pub fn new(pieces: Vec<ScoredPiece>, unk_id: u32) -> Self {
        // FLT_MAX and FLT_MIN (the smallest positive normal float), as the C++ starts them.
        let mut min_score = f32::MAX;
        let mut max_score = f32::MIN_POSITIVE;
        let mut trie = PieceTrie::new();
        for (id, p) in pieces.iter().enumerate() {
            if p.kind == PieceType::Normal {
                min_score = min_score.min(p.score);
                max_score = max_score.max(p.score);
            }
            if matches!(
                p.kind,
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused
            ) {
                trie.insert(p.piece.as_bytes(), id as u32);
            }
        }
        Unigram {
            pieces,
            trie,
            unk_id,
            min_score,
            max_score,
        }
    }

    /// The pieces, by id.
    pub fn pieces(&self) -> &[ScoredPiece] {
        &self.pieces
    }

    /// The unknown piece's id.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// The lowest NORMAL piece score (`f32::MAX` if there is none).
    #[cfg(test)]
    pub fn min_score(&self) -> f32 {
        self.min_score
    }

    /// The highest NORMAL piece score, at least `f32::MIN_POSITIVE` (as the C++ starts it).
    #[cfg(test)]
    pub fn max_score(&self) -> f32 {
        self.max_score
    }

    /// The score of an unknown character.
    pub fn unk_score(&self) -> f32 {
        self.min_score - UNK_PENALTY
    }

    /// The score a piece of `length` bytes gets in the lattice: a user-defined symbol's bonus
    /// (`length * max_score - 0.1`) or its own score.
    pub fn lattice_score(&self, id: u32, length: usize) -> f32 {
        let piece = &self.pieces[id as usize];
        if piece.kind == PieceType::UserDefined {
            length as f32 * self.max_score - 0.1
        } else {
            piece.score
        }
    }

    /// The piece id of exactly `piece` among NORMAL, USER_DEFINED and UNUSED pieces.
    pub fn lookup(&self, piece: &str) -> Option<u32> {
        self.trie.get(piece.as_bytes())
    }

    /// The best segmentation of a normalised text (empty for an empty text). Consecutive
    /// unknown characters stay separate segments here.
    pub fn encode(&self, normalized: &str) -> Vec<Segment> {
        let bytes = normalized.as_bytes();
        let size = bytes.len();
        if size == 0 {
            return Vec::new();
        }
        let unk_score = self.unk_score();
        let mut best = vec![
            BestPath {
                id: 0,
                score: 0.0,
                starts_at: None
            };
            size + 1
        ];
        let mut starts_at = 0;
        while starts_at < size {
            let till_here = best[starts_at].score;
            let mblen = one_char_len(bytes[starts_at]).min(size - starts_at);
            let mut has_single_node = false;
            for (length, id) in self.trie.prefixes(&bytes[starts_at..]) {
                if self.pieces[id as usize].kind == PieceType::Unused {
                    continue;
                }
                let candidate = self.lattice_score(id, length) + till_here;
                let target = &mut best[starts_at + length];
                if target.starts_at.is_none() || candidate > target.score {
                    *target = BestPath {
                        id,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
                if length == mblen {
                    has_single_node = true;
                }
            }
            if !has_single_node {
                let candidate = unk_score + till_here;
                let target = &mut best[starts_at + mblen];
                if target.starts_at.is_none() || candidate > target.score {
                    *target = BestPath {
                        id: self.unk_id,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
            }
            starts_at += mblen;
        }
        let mut segments = Vec::new();
        let mut end = size;
        while end > 0 {
            let node = best[end];
            // Every character boundary is reached (a piece or an unknown covers each
            // character), so the backtrace always finds its start.
            let Some(start) = node.starts_at else { break };
            segments.push(Segment {
                start,
                end,
                id: node.id,
            });
            end = start;
        }
        segments.reverse();
        segments
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(piece: &str, score: f32, kind: PieceType) -> ScoredPiece {
        ScoredPiece {
            piece: piece.to_owned(),
            score,
            kind,
        }
    }

    /// `<unk>`, then pieces with scores chosen so the best paths are easy to compute by hand.
    fn table(extra: &[(&str, f32, PieceType)]) -> Unigram {
        let mut pieces = vec![
            piece("<unk>", 0.0, PieceType::Unknown),
            piece("<s>", 0.0, PieceType::Control),
            piece("a", -1.0, PieceType::Normal),
            piece("b", -1.0, PieceType::Normal),
            piece("ab", -1.5, PieceType::Normal),
            piece("abc", -4.0, PieceType::Normal),
            piece("c", -2.0, PieceType::Normal),
        ];
        pieces.extend(extra.iter().map(|&(p, s, k)| piece(p, s, k)));
        Unigram::new(pieces, 0)
    }

    fn segment(u: &Unigram, text: &str) -> Vec<(String, u32)> {
        u.encode(text)
            .into_iter()
            .map(|s| (text[s.start..s.end].to_owned(), s.id))
            .collect()
    }

    fn seg(items: &[(&str, u32)]) -> Vec<(String, u32)> {
        items.iter().map(|&(p, id)| (p.to_owned(), id)).collect()
    }

    #[test]
    fn viterbi_picks_the_best_total() {
        let u = table(&[]);
        // ab (-1.5) beats a + b (-2).
        assert_eq!(segment(&u, "ab"), seg(&[("ab", 4)]));
        // ab + c (-3.5) beats abc (-4).
        assert_eq!(segment(&u, "abc"), seg(&[("ab", 4), ("c", 6)]));
        assert_eq!(segment(&u, ""), seg(&[]));
    }

    #[test]
    fn unknown_characters_score_min_minus_ten_and_stay_separate() {
        let u = table(&[]);
        assert_eq!(u.min_score(), -4.0);
        assert_eq!(u.unk_score(), -14.0);
        assert_eq!(segment(&u, "xé"), seg(&[("x", 0), ("é", 0)]));
        assert_eq!(segment(&u, "axb"), seg(&[("a", 2), ("x", 0), ("b", 3)]));
        // Control pieces are not in the lattice.
        assert_eq!(segment(&u, "<s>"), seg(&[("<", 0), ("s", 0), (">", 0)]));
    }

    #[test]
    fn user_defined_symbols_get_the_length_bonus() {
        // max_score stays FLT_MIN (all scores negative): bonus = len * FLT_MIN - 0.1 ~ -0.1.
        let u = table(&[("bc", -100.0, PieceType::UserDefined)]);
        assert_eq!(u.max_score(), f32::MIN_POSITIVE);
        assert_eq!(segment(&u, "abc"), seg(&[("a", 2), ("bc", 7)]));
    }

    #[test]
    fn unused_pieces_are_skipped() {
        let u = table(&[("abcd", 0.0, PieceType::Unused)]);
        assert_eq!(segment(&u, "abcd"), seg(&[("ab", 4), ("c", 6), ("d", 0)]));
        assert_eq!(u.lookup("abcd"), Some(7));
        assert_eq!(u.lookup("<s>"), None);
    }

    #[test]
    fn ties_keep_the_first_candidate() {
        // a + b and ab both total -2; ab reaches the end first (from position 0), and the
        // later a + b (from position 1) is not strictly better.
        let u = Unigram::new(
            vec![
                piece("<unk>", 0.0, PieceType::Unknown),
                piece("a", -1.0, PieceType::Normal),
                piece("b", -1.0, PieceType::Normal),
                piece("ab", -2.0, PieceType::Normal),
            ],
            0,
        );
        assert_eq!(segment(&u, "ab"), seg(&[("ab", 3)]));
    }

    #[test]
    fn sums_are_f32() {
        // Two paths to the end of "abc": a + bc (found first) and ab + c (found later), equal
        // in f32 (-1.0) but not in f64 (ab + c is -1 + 1e-9). In f32 the first stays; 0.2.1's
        // double candidate would have switched to ab + c.
        let (a, bc, ab, c) = (-0.5f32, -0.5f32, -1.0f32, 1e-9f32);
        assert_eq!(ab + c, a + bc);
        assert!(f64::from(c) + f64::from(ab) > f64::from(a + bc));
        let u = Unigram::new(
            vec![
                piece("<unk>", 0.0, PieceType::Unknown),
                piece("a", a, PieceType::Normal),
                piece("bc", bc, PieceType::Normal),
                piece("ab", ab, PieceType::Normal),
                piece("c", c, PieceType::Normal),
                piece("b", -50.0, PieceType::Normal),
            ],
            0,
        );
        assert_eq!(segment(&u, "abc"), seg(&[("a", 1), ("bc", 2)]));
    }
}
