//! A reader for darts-clone double-array tries, the format of SentencePiece's precompiled
//! normalisation charsmap (`third_party/darts_clone/darts.h`, version 0.32).
//!
//! Each unit is a little-endian `u32`. Lookups follow `DoubleArrayImpl::commonPrefixSearch`
//! exactly; an index outside the array (damaged data) ends the search instead of reading past
//! it.

/// A double-array trie over byte keys whose values are `u32`s.
#[derive(Clone, Debug, Default)]
pub struct DoubleArray {
    units: Vec<u32>,
}

fn has_leaf(unit: u32) -> bool {
    (unit >> 8) & 1 == 1
}

fn value(unit: u32) -> u32 {
    unit & ((1 << 31) - 1)
}

fn label(unit: u32) -> u32 {
    unit & ((1 << 31) | 0xFF)
}

fn offset(unit: u32) -> usize {
    ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
}

impl DoubleArray {
    /// The units of a serialised array (`size / 4` units, as `set_array` takes them; a
    /// trailing partial unit is ignored).
    pub fn from_le_bytes(bytes: &[u8]) -> Self {
        let units = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        DoubleArray { units }
    }

    /// The array made of these units.
    #[cfg(test)]
    pub fn from_units(units: Vec<u32>) -> Self {
        DoubleArray { units }
    }

    /// The number of units.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Every key that is a prefix of `key`, shortest first, as `(value, key length in bytes)`.
    pub fn common_prefix_search(&self, key: &[u8]) -> Vec<(u32, usize)> {
        let mut results = Vec::new();
        let Some(&root) = self.units.first() else {
            return results;
        };
        let mut node_pos = offset(root);
        for (i, &byte) in key.iter().enumerate() {
            node_pos ^= usize::from(byte);
            let Some(&unit) = self.units.get(node_pos) else {
                return results;
            };
            if label(unit) != u32::from(byte) {
                return results;
            }
            node_pos ^= offset(unit);
            if has_leaf(unit) {
                let Some(&leaf) = self.units.get(node_pos) else {
                    return results;
                };
                results.push((value(leaf), i + 1));
            }
        }
        results
    }

    /// The longest key that is a prefix of `key`, as `(value, length)`: what SentencePiece's
    /// normaliser keeps of the common-prefix results.
    pub fn longest_prefix(&self, key: &[u8]) -> Option<(u32, usize)> {
        let mut longest: Option<(u32, usize)> = None;
        for (value, length) in self.common_prefix_search(key) {
            if longest.is_none_or(|(_, l)| length > l) {
                longest = Some((value, length));
            }
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAF: u32 = 1 << 8;

    fn unit(label: u32, offset: u32, leaf: bool) -> u32 {
        assert!(offset < (1 << 21));
        label | (offset << 10) | if leaf { LEAF } else { 0 }
    }

    fn value_unit(v: u32) -> u32 {
        (1 << 31) | v
    }

    /// Keys "a" -> 7 and "ab" -> 9, laid out by hand:
    /// root at 0 (offset 1): "a" at 1 ^ 0x61 = 0x60 (offset 4): its value at 0x60 ^ 4 = 0x64,
    /// "b" at 0x64 ^ 0x62 = 0x06 (offset 1): its value at 0x06 ^ 1 = 0x07.
    fn tiny() -> DoubleArray {
        let mut units = vec![0u32; 0x65];
        units[0] = unit(0, 1, false);
        units[0x60] = unit(0x61, 4, true);
        units[0x64] = value_unit(7);
        units[0x06] = unit(0x62, 1, true);
        units[0x07] = value_unit(9);
        DoubleArray::from_units(units)
    }

    #[test]
    fn unit_fields_decode_as_darts_does() {
        assert!(has_leaf(0x100));
        assert!(!has_leaf(0xFF));
        assert_eq!(value(0x8000_0005), 5);
        assert_eq!(label(0x8000_0061), 0x8000_0061);
        assert_eq!(label(0x0000_0461), 0x61);
        assert_eq!(offset(3 << 10), 3);
        // Bit 9 set: the offset is shifted by 8 more bits.
        assert_eq!(offset((3 << 10) | (1 << 9)), 3 << 8);
    }

    #[test]
    fn common_prefixes_of_a_hand_made_trie() {
        let trie = tiny();
        assert_eq!(trie.common_prefix_search(b"a"), vec![(7, 1)]);
        assert_eq!(trie.common_prefix_search(b"abc"), vec![(7, 1), (9, 2)]);
        assert_eq!(trie.common_prefix_search(b"ac"), vec![(7, 1)]);
        assert_eq!(trie.common_prefix_search(b"b"), vec![]);
        assert_eq!(trie.common_prefix_search(b""), vec![]);
        // A NUL byte never matches: the child at label 0 is the value unit, whose label has
        // the leaf bit set.
        assert_eq!(trie.common_prefix_search(b"a\0b"), vec![(7, 1)]);
        assert_eq!(trie.longest_prefix(b"abz"), Some((9, 2)));
        assert_eq!(trie.longest_prefix(b"z"), None);
    }

    #[test]
    fn damaged_arrays_end_the_search() {
        assert_eq!(DoubleArray::default().common_prefix_search(b"a"), vec![]);
        // The root points past the end.
        let trie = DoubleArray::from_units(vec![unit(0, 1000, false)]);
        assert_eq!(trie.common_prefix_search(b"abc"), vec![]);
        // A leaf whose value unit is past the end.
        let mut units = vec![0u32; 0x61];
        units[0] = unit(0, 1, false);
        units[0x60] = unit(0x61, 4, true);
        assert_eq!(
            DoubleArray::from_units(units).common_prefix_search(b"a"),
            vec![]
        );
        // Little-endian units, a trailing partial unit ignored.
        let trie = DoubleArray::from_le_bytes(&[1, 0, 0, 0, 2, 0, 0, 0, 9]);
        assert_eq!(trie.len(), 2);
    }
}
