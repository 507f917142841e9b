//! The `tokenizers` crate's ByteLevel pre-tokenizer (GPT-2's), without a regular-expression
//! engine: text split into the words of the pattern
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//! as a backtracking engine matches it (alternatives tried in order, greedy repetition), each
//! word then written in the byte alphabet ([`super::alphabet`]). The character classes are
//! regex-syntax's own Unicode tables, copied into `unicode_classes.rs` and checked against it by
//! a test: the workspace builds `tokenizers` with its `fancy-regex` feature (the root
//! `Cargo.toml`), whose classes are regex-syntax's; with the crate's default, Oniguruma, they
//! would be Oniguruma's.
//!
//! One difference is known: fancy-regex gives up on a run of about a million whitespace
//! characters (its backtracking stack's limit), and `tokenizers` then keeps the rest of the text
//! as one word; here the run is split as the pattern says.

use super::unicode_classes::{LETTER, NUMBER, WHITE_SPACE};

/// What a character is to the pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `\p{L}`.
    Letter,
    /// `\p{N}`.
    Number,
    /// `\s` (Unicode White_Space).
    Space,
    /// Anything else: `[^\s\p{L}\p{N}]`.
    Other,
}

fn in_table(table: &[(char, char)], c: char) -> bool {
    table
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn class_of(c: char) -> Class {
    if c.is_ascii() {
        return if c.is_ascii_alphabetic() {
            Class::Letter
        } else if c.is_ascii_digit() {
            Class::Number
        } else if matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r') {
            Class::Space
        } else {
            Class::Other
        };
    }
    if in_table(LETTER, c) {
        Class::Letter
    } else if in_table(NUMBER, c) {
        Class::Number
    } else if in_table(WHITE_SPACE, c) {
        Class::Space
    } else {
        Class::Other
    }
}

/// The words of `text` in order; they cover it exactly.
pub(crate) fn words(text: &str) -> Words<'_> {
    Words { rest: text }
}

/// Iterator of [`words`].
pub(crate) struct Words<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let (word, rest) = self.rest.split_at(word_length(self.rest));
        self.rest = rest;
        Some(word)
    }
}

/// The byte length of the pattern's match at the start of `s` (not empty).
fn word_length(s: &str) -> usize {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return 0;
    };
    // 's|'t|'re|'ve|'m|'ll|'d
    if first == '\'' {
        let tail = &s[1..];
        if let Some(suffix) = ["s", "t", "re", "ve", "m", "ll", "d"]
            .into_iter()
            .find(|suffix| tail.starts_with(suffix))
        {
            return 1 + suffix.len();
        }
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
    // A space followed by whitespace (or nothing) matches none of the three.
    let (start, head) = match (first, chars.next()) {
        (' ', Some(second)) if class_of(second) != Class::Space => (1, second),
        (c, _) if class_of(c) != Class::Space => (0, c),
        _ => return whitespace_length(s),
    };
    let class = class_of(head);
    let run: usize = s[start..]
        .chars()
        .take_while(|&c| class_of(c) == class)
        .map(char::len_utf8)
        .sum();
    start + run
}

/// `\s+(?!\S)|\s+` at the start of `s` (which starts with whitespace): the whole run of
/// whitespace when it ends the text or is one character; otherwise all of it but the last
/// character, which the next word may take (a space before a letter joins the letters).
fn whitespace_length(s: &str) -> usize {
    let mut run = 0;
    let mut last = 0;
    let mut count = 0;
    for c in s.chars() {
        if class_of(c) != Class::Space {
            break;
        }
        last = c.len_utf8();
        run += last;
        count += 1;
    }
    if run == s.len() || count == 1 {
        run
    } else {
        run - last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_syntax::hir::{Class as HirClass, HirKind};

    /// The ranges regex-syntax gives a class, as `tokenizers`' regular expression sees it.
    fn regex_ranges(pattern: &str) -> Vec<(char, char)> {
        let hir = regex_syntax::parse(pattern).expect("pattern");
        match hir.kind() {
            HirKind::Class(HirClass::Unicode(class)) => class
                .ranges()
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect(),
            other => panic!("{pattern} is not a Unicode class: {other:?}"),
        }
    }

    fn table_source(name: &str, ranges: &[(char, char)]) -> String {
        let mut out = format!("pub(super) const {name}: &[(char, char)] = &[\n");
        for (low, high) in ranges {
            out.push_str(&format!(
                "    ('\\u{{{:x}}}', '\\u{{{:x}}}'),\n",
                *low as u32, *high as u32
            ));
        }
        out.push_str("];\n");
        out
    }

    /// The committed tables are regex-syntax's; with `ROSETTA_WRITE_UNICODE_TABLES=1` this test
    /// writes them (after a regex-syntax upgrade).
    #[test]
    fn unicode_tables_are_regex_syntaxs() {
        let tables = [
            ("LETTER", regex_ranges(r"\p{L}"), LETTER),
            ("NUMBER", regex_ranges(r"\p{N}"), NUMBER),
            ("WHITE_SPACE", regex_ranges(r"\s"), WHITE_SPACE),
        ];
        if std::env::var_os("ROSETTA_WRITE_UNICODE_TABLES").is_some() {
            let mut source = String::from(
                "//! regex-syntax's Unicode classes `\\p{L}`, `\\p{N}` and `\\s`, the character classes of\n\
                 //! GPT-2's pre-tokenizer pattern, as sorted inclusive ranges. Generated, not edited:\n\
                 //! `ROSETTA_WRITE_UNICODE_TABLES=1 cargo test -p rosetta-data --lib unicode_tables`\n\
                 //! (a test checks them against regex-syntax, the version `tokenizers` compiles with).\n\n",
            );
            for (name, ranges, _) in &tables {
                source.push_str(&table_source(name, ranges));
            }
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/byte_level/unicode_classes.rs"
            );
            std::fs::write(path, source).expect("write the tables");
        }
        for (name, ranges, committed) in &tables {
            assert_eq!(committed, ranges, "{name}: regenerate the tables");
        }
    }

    #[test]
    fn every_character_is_classed_as_regex_syntax_classes_it() {
        let letter = regex_ranges(r"\p{L}");
        let number = regex_ranges(r"\p{N}");
        let space = regex_ranges(r"\s");
        let inside = |table: &[(char, char)], c: char| table.iter().any(|&(l, h)| l <= c && c <= h);
        for c in (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .step_by(7)
            .chain('\0'..='\u{2FF}')
        {
            let expected = if inside(&letter, c) {
                Class::Letter
            } else if inside(&number, c) {
                Class::Number
            } else if inside(&space, c) {
                Class::Space
            } else {
                Class::Other
            };
            assert_eq!(class_of(c), expected, "{c:?} U+{:04X}", c as u32);
        }
    }

    #[test]
    fn words_follow_gpt2s_pattern() {
        fn split(text: &str) -> Vec<&str> {
            words(text).collect()
        }
        assert_eq!(
            split("Hello world, it's 2026!"),
            ["Hello", " world", ",", " it", "'s", " 2026", "!"]
        );
        assert_eq!(split("a  b"), ["a", " ", " b"]);
        assert_eq!(split("a \n b"), ["a", " \n", " b"]);
        assert_eq!(split("a\nb"), ["a", "\n", "b"]);
        assert_eq!(split("end   "), ["end", "   "]);
        assert_eq!(split(" 'll've"), [" '", "ll", "'ve"]);
        assert_eq!(split("x'Sy"), ["x", "'", "Sy"]);
        assert_eq!(split("½ → 猫3"), ["½", " →", " 猫", "3"]);
        assert!(split("").is_empty());
    }
}
