//! A byte trie over piece strings: the lookups SentencePiece makes in its own darts-clone
//! tries of the vocabulary (all pieces that start a text, exact match, longest match).

/// A trie mapping byte strings to `u32` values (piece ids).
#[derive(Clone, Debug)]
pub struct PieceTrie {
    nodes: Vec<Node>,
}

#[derive(Clone, Debug, Default)]
struct Node {
    /// Children sorted by byte.
    children: Vec<(u8, u32)>,
    value: Option<u32>,
}

impl Default for PieceTrie {
    fn default() -> Self {
        PieceTrie {
            nodes: vec![Node::default()],
        }
    }
}

impl PieceTrie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    fn child(&self, node: usize, byte: u8) -> Option<usize> {
        let children = &self.nodes[node].children;
        children
            .binary_search_by_key(&byte, |&(b, _)| b)
            .ok()
            .map(|i| children[i].1 as usize)
    }

    /// Adds `key` with `value`; returns the value it replaced, if the key was there.
    pub fn insert(&mut self, key: &[u8], value: u32) -> Option<u32> {
        let mut node = 0;
        for &byte in key {
            node = match self.child(node, byte) {
                Some(next) => next,
                None => {
                    let next = self.nodes.len();
                    self.nodes.push(Node::default());
                    let children = &mut self.nodes[node].children;
                    let at = children.partition_point(|&(b, _)| b < byte);
                    children.insert(at, (byte, next as u32));
                    next
                }
            };
        }
        self.nodes[node].value.replace(value)
    }

    /// The value of exactly `key`.
    pub fn get(&self, key: &[u8]) -> Option<u32> {
        let mut node = 0;
        for &byte in key {
            node = self.child(node, byte)?;
        }
        self.nodes[node].value
    }

    /// Every key that is a prefix of `text`, shortest first, as `(length in bytes, value)`.
    pub fn prefixes<'a>(&'a self, text: &'a [u8]) -> impl Iterator<Item = (usize, u32)> + 'a {
        let mut node = Some(0usize);
        text.iter()
            .enumerate()
            .map_while(move |(i, &byte)| {
                let next = self.child(node?, byte)?;
                node = Some(next);
                Some((i + 1, self.nodes[next].value))
            })
            .filter_map(|(length, value)| value.map(|v| (length, v)))
    }

    /// The longest key that is a prefix of `text`, as `(length, value)`.
    pub fn longest_prefix(&self, text: &[u8]) -> Option<(usize, u32)> {
        self.prefixes(text).last()
    }

    /// Whether the trie holds no key.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1 && self.nodes[0].value.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trie() -> PieceTrie {
        let mut t = PieceTrie::new();
        for (key, value) in [("a", 1), ("ab", 2), ("abcd", 3), ("b", 4), ("▁a", 5)] {
            assert_eq!(t.insert(key.as_bytes(), value), None);
        }
        t
    }

    #[test]
    fn prefixes_come_shortest_first() {
        let t = trie();
        assert_eq!(
            t.prefixes(b"abcde").collect::<Vec<_>>(),
            vec![(1, 1), (2, 2), (4, 3)]
        );
        assert_eq!(t.prefixes(b"abc").collect::<Vec<_>>(), vec![(1, 1), (2, 2)]);
        assert_eq!(t.prefixes(b"ba").collect::<Vec<_>>(), vec![(1, 4)]);
        assert_eq!(t.prefixes(b"c").count(), 0);
        assert_eq!(t.prefixes(b"").count(), 0);
        assert_eq!(
            t.prefixes("▁ab".as_bytes()).collect::<Vec<_>>(),
            vec![(4, 5)]
        );
        assert_eq!(t.longest_prefix(b"abcz"), Some((2, 2)));
        assert_eq!(t.longest_prefix(b"z"), None);
    }

    #[test]
    fn exact_lookups_and_replacement() {
        let mut t = trie();
        assert_eq!(t.get(b"ab"), Some(2));
        assert_eq!(t.get(b"abc"), None);
        assert_eq!(t.get(b""), None);
        assert_eq!(t.insert(b"ab", 7), Some(2));
        assert_eq!(t.get(b"ab"), Some(7));
        assert!(!t.is_empty());
        assert!(PieceTrie::new().is_empty());
    }
}
