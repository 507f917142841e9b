//! SentencePiece's text normaliser (`src/normalizer.cc`), exactly: the precompiled charsmap
//! applied by longest prefix, user-defined symbols kept unnormalised, `add_dummy_prefix`,
//! `remove_extra_whitespaces` and `escape_whitespaces` (spaces become `▁`, U+2581).

use crate::darts::DoubleArray;
use crate::error::Error;
use crate::piece_trie::PieceTrie;
use crate::proto::NormalizerSpec;

/// The escaped space, U+2581 (LOWER ONE EIGHTH BLOCK).
pub const SPACE_SYMBOL: &str = "\u{2581}";

/// A compiled normalisation rule table: `<u32 trie size><darts-clone trie><NUL-terminated
/// replacement strings>`; the trie maps a source string to the offset of its replacement.
#[derive(Clone, Debug)]
pub struct PrecompiledCharsMap {
    trie: DoubleArray,
    normalized: Vec<u8>,
}

impl PrecompiledCharsMap {
    /// Splits a `precompiled_charsmap` blob (`Normalizer::DecodePrecompiledCharsMap`); `origin`
    /// names the model in the error.
    pub fn from_blob(blob: &[u8], origin: &str) -> Result<Self, Error> {
        let Some((size, rest)) = blob.split_first_chunk::<4>() else {
            return Err(Error::invalid(
                origin,
                "precompiled_charsmap is broken (shorter than its 4-byte header)",
            ));
        };
        if rest.is_empty() {
            return Err(Error::invalid(
                origin,
                "precompiled_charsmap is broken (nothing after its header)",
            ));
        }
        let size = u32::from_le_bytes(*size) as usize;
        if size > rest.len() {
            return Err(Error::invalid(
                origin,
                format!(
                    "precompiled_charsmap is broken: its trie claims {size} bytes, {} are left",
                    rest.len()
                ),
            ));
        }
        let (trie, normalized) = rest.split_at(size);
        Ok(PrecompiledCharsMap {
            trie: DoubleArray::from_le_bytes(trie),
            normalized: normalized.to_vec(),
        })
    }

    /// The longest rule whose source is a prefix of `input`: `(replacement, bytes consumed)`.
    ///
    /// A rule pointing outside the replacement strings, or at bytes that are not UTF-8, or
    /// ending inside a character of `input` (only in damaged data) is ignored.
    pub fn longest_match<'a>(&'a self, input: &str) -> Option<(&'a str, usize)> {
        let (value, length) = self.trie.longest_prefix(input.as_bytes())?;
        if !input.is_char_boundary(length) {
            return None;
        }
        let start = value as usize;
        let tail = self.normalized.get(start..)?;
        // Read up to the NUL, as the C++ reads a C string (the blob's end bounds it here).
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let replacement = std::str::from_utf8(&tail[..end]).ok()?;
        Some((replacement, length))
    }
}

/// SentencePiece's normaliser for one model.
#[derive(Clone, Debug)]
pub struct Normalizer {
    charsmap: Option<PrecompiledCharsMap>,
    user_defined: PieceTrie,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

impl Normalizer {
    /// The normaliser of `spec`, passing `user_defined` symbols through unnormalised (the
    /// model's USER_DEFINED pieces; none for a denormaliser). `origin` names the model.
    pub fn new(spec: &NormalizerSpec, user_defined: &[&str], origin: &str) -> Result<Self, Error> {
        let charsmap = match spec.precompiled_charsmap.as_deref() {
            None | Some([]) => None,
            Some(blob) => Some(PrecompiledCharsMap::from_blob(blob, origin)?),
        };
        let mut trie = PieceTrie::new();
        for (i, symbol) in user_defined.iter().enumerate() {
            trie.insert(symbol.as_bytes(), i as u32);
        }
        Ok(Normalizer {
            charsmap,
            user_defined: trie,
            add_dummy_prefix: spec.add_dummy_prefix(),
            remove_extra_whitespaces: spec.remove_extra_whitespaces(),
            escape_whitespaces: spec.escape_whitespaces(),
        })
    }

    /// Whether a `▁` is put before the text.
    pub fn add_dummy_prefix(&self) -> bool {
        self.add_dummy_prefix
    }

    /// Whether leading, trailing and repeated spaces are removed.
    pub fn remove_extra_whitespaces(&self) -> bool {
        self.remove_extra_whitespaces
    }

    /// Whether spaces are written as `▁`.
    pub fn escape_whitespaces(&self) -> bool {
        self.escape_whitespaces
    }

    /// The normalised form of the first character(s) of a non-empty `input` and how many bytes
    /// they take (`Normalizer::NormalizePrefix`): a user-defined symbol as it is, else the
    /// longest charsmap rule, else the first character unchanged.
    fn normalize_prefix<'a>(&'a self, input: &'a str) -> (&'a str, usize) {
        if let Some((length, _)) = self.user_defined.longest_prefix(input.as_bytes()) {
            return (&input[..length], length);
        }
        if let Some(found) = self
            .charsmap
            .as_ref()
            .and_then(|map| map.longest_match(input))
        {
            return found;
        }
        let length = input.chars().next().map_or(0, char::len_utf8);
        (&input[..length], length)
    }

    /// Normalises `input` as `Normalizer::Normalize` does (without the alignment).
    pub fn normalize(&self, input: &str) -> String {
        let mut input = input;
        if input.is_empty() {
            return String::new();
        }
        // Leading spaces (what normalises to exactly one space).
        if self.remove_extra_whitespaces {
            while !input.is_empty() {
                let (normalized, consumed) = self.normalize_prefix(input);
                if normalized != " " {
                    break;
                }
                input = &input[consumed..];
            }
        }
        if input.is_empty() {
            return String::new();
        }
        let space = if self.escape_whitespaces {
            SPACE_SYMBOL
        } else {
            " "
        };
        let mut out = String::with_capacity(input.len() * 3);
        if self.add_dummy_prefix {
            out.push_str(space);
        }
        let mut is_prev_space = self.remove_extra_whitespaces;
        while !input.is_empty() {
            let (normalized, consumed) = self.normalize_prefix(input);
            let mut piece = normalized;
            // Spaces after a space are dropped.
            while is_prev_space && piece.starts_with(' ') {
                piece = &piece[1..];
            }
            if !piece.is_empty() {
                if self.escape_whitespaces {
                    for (i, part) in piece.split(' ').enumerate() {
                        if i > 0 {
                            out.push_str(SPACE_SYMBOL);
                        }
                        out.push_str(part);
                    }
                } else {
                    out.push_str(piece);
                }
                is_prev_space = piece.ends_with(' ');
            }
            input = &input[consumed..];
            if !self.remove_extra_whitespaces {
                is_prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        add_dummy_prefix: bool,
        remove_extra_whitespaces: bool,
        escape_whitespaces: bool,
    ) -> NormalizerSpec {
        NormalizerSpec {
            name: Some("identity".into()),
            precompiled_charsmap: None,
            add_dummy_prefix: Some(add_dummy_prefix),
            remove_extra_whitespaces: Some(remove_extra_whitespaces),
            escape_whitespaces: Some(escape_whitespaces),
        }
    }

    #[test]
    fn whitespace_flags() {
        let n = Normalizer::new(&spec(true, true, true), &[], "t").unwrap();
        assert_eq!(n.normalize("  a  b "), "▁a▁b");
        assert_eq!(n.normalize("   "), "");
        assert_eq!(n.normalize(""), "");
        let n = Normalizer::new(&spec(true, false, true), &[], "t").unwrap();
        assert_eq!(n.normalize("  a  b "), "▁▁▁a▁▁b▁");
        let n = Normalizer::new(&spec(false, true, false), &[], "t").unwrap();
        assert_eq!(n.normalize("  a  b "), "a b");
        let n = Normalizer::new(&spec(false, false, false), &[], "t").unwrap();
        assert_eq!(n.normalize(" a\tb "), " a\tb ");
    }

    #[test]
    fn user_defined_symbols_pass_through() {
        let n = Normalizer::new(&spec(true, true, true), &["a b", "<x>"], "t").unwrap();
        // Matched before whitespace handling: its space is still escaped.
        assert_eq!(n.normalize("a b<x>  c"), "▁a▁b<x>▁c");
    }

    #[test]
    fn broken_charsmap_blobs_are_errors_naming_the_model() {
        let mut s = spec(true, true, true);
        for blob in [vec![1, 0, 0], vec![0, 0, 0, 0], vec![9, 0, 0, 0, 1, 2]] {
            s.precompiled_charsmap = Some(blob);
            let err = Normalizer::new(&s, &[], "m.spm").unwrap_err().to_string();
            assert!(
                err.starts_with("m.spm: ") && err.contains("precompiled_charsmap"),
                "{err}"
            );
        }
    }
}
