//! Python's `str.strip`, `lstrip` and `rstrip` (no argument), which `transformers` applies:
//! they remove the characters for which `str.isspace()` is true, a set that differs from
//! Rust's `char::is_whitespace` (Python includes U+001C..U+001F, Rust does not).

/// Whether Python 3's `str.isspace()` is true for `c`.
pub fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{0B}'
            | '\u{0C}'
            | '\r'
            | '\u{1C}'..='\u{1F}'
            | ' '
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// `s.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_python_space)
}

/// `s.lstrip()`.
pub fn lstrip(s: &str) -> &str {
    s.trim_start_matches(is_python_space)
}

/// `s.rstrip()`.
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_python_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_whitespace_set() {
        assert_eq!(strip("\u{1C} a\u{3000}b\u{A0}\n"), "a\u{3000}b");
        assert_eq!(lstrip("\t a "), "a ");
        assert_eq!(rstrip(" a \u{2029}"), " a");
        // Zero-width space and U+2581 are not Python whitespace.
        assert_eq!(strip("\u{200B}x\u{2581}"), "\u{200B}x\u{2581}");
        assert!(!'\u{180E}'.is_ascii() && !is_python_space('\u{180E}'));
        assert_eq!(
            (0..=0x10FFFFu32)
                .filter_map(char::from_u32)
                .filter(|&c| is_python_space(c))
                .count(),
            29
        );
    }
}
