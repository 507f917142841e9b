//! How `transformers`' Python tokenizers split text on added tokens (`</s>`, `<unk>`, `<pad>`
//! and any other added token) before the model sees it: `Trie.split` (longest match first,
//! with its lookahead), then the `lstrip` / `rstrip` / `single_word` pass of
//! `PythonBackend.tokenize` (transformers 5.23 `tokenization_python.py`), ported literally,
//! on Python string indices (characters).

use std::collections::{BTreeMap, HashMap};

use crate::pytext;

/// An added token and the flags `PythonBackend.tokenize` honours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedToken {
    /// The token's text.
    pub content: String,
    /// Strip whitespace from the end of the text before it.
    pub lstrip: bool,
    /// Strip whitespace from the start of the text after it.
    pub rstrip: bool,
    /// Only a whole word: glued to a neighbour that is not separated by a space.
    pub single_word: bool,
    /// Whether it is a special token (skipped by decoding with `skip_special_tokens`).
    pub special: bool,
}

impl AddedToken {
    /// A special token without stripping (what `transformers` makes of a plain string).
    pub fn special(content: &str) -> Self {
        AddedToken {
            content: content.to_owned(),
            lstrip: false,
            rstrip: false,
            single_word: false,
            special: true,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Node {
    children: BTreeMap<char, usize>,
    terminal: bool,
}

/// `transformers.tokenization_python.Trie`: splits a text on the tokens it holds.
#[derive(Clone, Debug)]
pub struct TokenTrie {
    nodes: Vec<Node>,
}

impl Default for TokenTrie {
    fn default() -> Self {
        TokenTrie {
            nodes: vec![Node::default()],
        }
    }
}

impl TokenTrie {
    /// A trie of `tokens` (empty strings are ignored, as `Trie.add` does).
    pub fn new<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Self {
        let mut trie = TokenTrie::default();
        for token in tokens {
            trie.add(token);
        }
        trie
    }

    fn add(&mut self, word: &str) {
        if word.is_empty() {
            return;
        }
        let mut node = 0;
        for c in word.chars() {
            node = match self.nodes[node].children.get(&c) {
                Some(&next) => next,
                None => {
                    let next = self.nodes.len();
                    self.nodes.push(Node::default());
                    self.nodes[node].children.insert(c, next);
                    next
                }
            };
        }
        self.nodes[node].terminal = true;
    }

    fn child(&self, node: usize, c: char) -> Option<usize> {
        self.nodes[node].children.get(&c).copied()
    }

    /// `Trie.split`: the text cut at the boundaries of the tokens found (the longest match
    /// first), as character offsets into `text`.
    fn split_offsets(&self, text: &[char]) -> Vec<usize> {
        let len = text.len();
        // (start, trie node) of the partial matches, in order of start.
        let mut states: Vec<(usize, usize)> = Vec::new();
        let mut offsets = vec![0usize];
        let mut skip = 0usize;
        for current in 0..len {
            let current_char = text[current];
            if skip != 0 && current < skip {
                continue;
            }
            let mut to_remove: Vec<usize> = Vec::new();
            let mut reset = false;
            let mut i = 0;
            while i < states.len() {
                let (state_start, trie_pointer) = states[i];
                if self.nodes[trie_pointer].terminal {
                    let mut start = state_start;
                    let mut end = current;
                    for &(lookstart, looktrie) in &states {
                        let mut looktrie_pointer = looktrie;
                        let mut lookahead_index;
                        if lookstart > start {
                            break;
                        } else if lookstart < start {
                            lookahead_index = current + 1;
                            end = current + 1;
                        } else {
                            lookahead_index = current;
                            end = current;
                        }
                        let mut next_char = text.get(lookahead_index).copied();
                        if self.nodes[looktrie_pointer].terminal {
                            start = lookstart;
                            end = lookahead_index;
                            skip = lookahead_index;
                        }
                        while let Some(next) =
                            next_char.and_then(|c| self.child(looktrie_pointer, c))
                        {
                            looktrie_pointer = next;
                            lookahead_index += 1;
                            if self.nodes[looktrie_pointer].terminal {
                                start = lookstart;
                                end = lookahead_index;
                                skip = lookahead_index;
                            }
                            if lookahead_index == len {
                                break;
                            }
                            next_char = text.get(lookahead_index).copied();
                        }
                    }
                    offsets.push(start);
                    offsets.push(end);
                    reset = true;
                    break;
                } else if let Some(next) = self.child(trie_pointer, current_char) {
                    states[i].1 = next;
                } else {
                    to_remove.push(state_start);
                }
                i += 1;
            }
            if reset {
                states.clear();
            } else {
                states.retain(|(start, _)| !to_remove.contains(start));
            }
            if current >= skip
                && let Some(next) = self.child(0, current_char)
            {
                states.push((current, next));
            }
        }
        for &(start, trie_pointer) in &states {
            if self.nodes[trie_pointer].terminal {
                offsets.push(start);
                offsets.push(len);
                break;
            }
        }
        offsets
    }

    /// `Trie.split` + `Trie.cut_text`: `text` cut into the tokens found and the text between.
    pub fn split(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut offsets = self.split_offsets(&chars);
        offsets.push(chars.len());
        let mut tokens = Vec::new();
        let mut start = 0;
        for end in offsets {
            // `start > end` is the case transformers logs as a bug and skips.
            if start >= end {
                continue;
            }
            tokens.push(chars[start..end].iter().collect());
            start = end;
        }
        tokens
    }
}

/// `PythonBackend.tokenize`'s pass over the split text: for each added token (by content),
/// strip its neighbours (`rstrip`: the next one's leading whitespace; `lstrip`: the previous
/// one's trailing whitespace) and glue a `single_word` token to a neighbour that is not
/// separated by a space. Emptied entries stay (the caller skips them).
pub fn apply_token_flags(tokens: &mut [String], added: &HashMap<String, AddedToken>) {
    for i in 0..tokens.len() {
        let Some(token) = added.get(&tokens[i]) else {
            continue;
        };
        let left = if i > 0 {
            Some(tokens[i - 1].clone())
        } else {
            None
        };
        let right = if i + 1 < tokens.len() {
            Some(tokens[i + 1].clone())
        } else {
            None
        };
        if token.rstrip
            && let Some(right) = right.as_deref().filter(|r| !r.is_empty())
        {
            tokens[i + 1] = pytext::lstrip(right).to_owned();
        }
        if token.lstrip
            && let Some(left) = left.as_deref().filter(|l| !l.is_empty())
        {
            tokens[i - 1] = pytext::rstrip(left).to_owned();
        }
        if token.single_word {
            let content = tokens[i].clone();
            if left
                .as_deref()
                .is_some_and(|l| !l.is_empty() && !l.ends_with(' '))
            {
                tokens[i - 1].push_str(&content);
                tokens[i].clear();
            } else if right
                .as_deref()
                .is_some_and(|r| !r.is_empty() && !r.starts_with(' '))
            {
                tokens[i + 1] = content + &tokens[i + 1];
                tokens[i].clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(tokens: &[&str], text: &str) -> Vec<String> {
        TokenTrie::new(tokens.iter().copied()).split(text)
    }

    #[test]
    fn splits_like_the_transformers_docstrings() {
        assert_eq!(
            split(&[], "[CLS] This is a extra_id_100"),
            vec!["[CLS] This is a extra_id_100"]
        );
        assert_eq!(
            split(
                &["[CLS]", "extra_id_1", "extra_id_100"],
                "[CLS] This is a extra_id_100"
            ),
            vec!["[CLS]", " This is a ", "extra_id_100"]
        );
        assert_eq!(
            split(&["A", "P", "[SPECIAL]"], "[SPECIAL]"),
            vec!["[SPECIAL]"]
        );
        assert_eq!(split(&["AB", "B", "C"], "ABC"), vec!["AB", "C"]);
        assert_eq!(split(&["ABC", "B", "CD"], "ABCD"), vec!["ABC", "D"]);
        assert_eq!(
            split(&["TOKEN]"], "This is something [SPECIAL_TOKEN]"),
            vec!["This is something [SPECIAL_", "TOKEN]"]
        );
    }

    #[test]
    fn splits_marian_special_tokens() {
        let t = ["</s>", "<unk>", "<pad>"];
        assert_eq!(
            split(&t, "a</s>b <unk> c"),
            vec!["a", "</s>", "b ", "<unk>", " c"]
        );
        assert_eq!(split(&t, "</s></s>"), vec!["</s>", "</s>"]);
        assert_eq!(split(&t, "<</s>>"), vec!["<", "</s>", ">"]);
        assert_eq!(split(&t, "<un</s>"), vec!["<un", "</s>"]);
        assert_eq!(split(&t, "é</s>"), vec!["é", "</s>"]);
        assert_eq!(split(&t, ""), Vec::<String>::new());
    }

    #[test]
    fn strip_and_single_word_flags() {
        let mut added = HashMap::new();
        let mut eos = AddedToken::special("</s>");
        eos.lstrip = true;
        eos.rstrip = true;
        added.insert("</s>".to_owned(), eos);
        let mut unk = AddedToken::special("<unk>");
        unk.single_word = true;
        added.insert("<unk>".to_owned(), unk);
        let mut tokens: Vec<String> = ["a  ", "</s>", "\t b", "<unk>", "c"]
            .map(String::from)
            .to_vec();
        apply_token_flags(&mut tokens, &added);
        assert_eq!(tokens, vec!["a", "</s>", "b<unk>", "", "c"]);
        let mut tokens: Vec<String> = ["x ", "<unk>", "y"].map(String::from).to_vec();
        apply_token_flags(&mut tokens, &added);
        assert_eq!(tokens, vec!["x ", "", "<unk>y"]);
    }
}
