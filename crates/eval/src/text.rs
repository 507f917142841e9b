//! Python's notion of whitespace, which sacreBLEU relies on through `str.split()` and
//! `str.rstrip()`.
//!
//! Python's `str.isspace` is Unicode's `White_Space` (what [`char::is_whitespace`] tests) plus
//! the four ASCII information separators U+001C..U+001F, which Python treats as line breaks.

/// True for the characters Python's `str.isspace()` accepts.
pub fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The words of `text` as Python's `text.split()` returns them (runs of Python whitespace
/// separate words; no empty words).
pub fn python_split(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_python_whitespace).filter(|w| !w.is_empty())
}

/// `text` without trailing Python whitespace, as Python's `text.rstrip()`.
pub fn python_rstrip(text: &str) -> &str {
    text.trim_end_matches(is_python_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_matches_python_isspace() {
        // The full list printed by `[hex(c) for c in range(0x110000) if chr(c).isspace()]`
        // under CPython 3.11.
        let python: Vec<u32> = vec![
            0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000,
            0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028,
            0x2029, 0x202f, 0x205f, 0x3000,
        ];
        let ours: Vec<u32> = (0..=0x10ffffu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_whitespace(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, python);
    }

    #[test]
    fn split_and_rstrip_like_python() {
        let words: Vec<&str> = python_split("  a\u{1c}b\u{3000}\tc  ").collect();
        assert_eq!(words, ["a", "b", "c"]);
        assert_eq!(python_split("   ").count(), 0);
        assert_eq!(python_rstrip(" a b \u{a0}\u{1f}\n"), " a b");
    }
}
