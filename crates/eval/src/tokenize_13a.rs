//! sacreBLEU's default BLEU tokenizer, `13a` (the `mteval-v13a.pl` tokenization used by WMT),
//! ported from `sacrebleu/tokenizers/tokenizer_13a.py` and `tokenizer_re.py`.
//!
//! The regular expressions of `TokenizerRegexp` are simple enough to be applied as
//! left-to-right scans that reproduce Python's `re.sub` exactly (non-overlapping matches, the
//! search resuming after each match):
//!
//! 1. `([\{-\~\[-\` -\&\(-\+\:-\@\/])` → ` \1 `: ASCII punctuation and symbols except
//!    `'`, `,`, `-` and `.` get spaces around them;
//! 2. `([^0-9])([\.,])` → `\1 \2 `: a period or comma not preceded by a digit is split off;
//! 3. `([\.,])([^0-9])` → ` \1 \2`: a period or comma not followed by a digit is split off;
//! 4. `([0-9])(-)` → `\1 \2 `: a dash after a digit is split off;
//!
//! then runs of (Python) whitespace collapse to one space and the ends are trimmed.

use super::text::python_split;

/// Tokenizes one segment as sacreBLEU's `Tokenizer13a()(line)` does.
///
/// Removes `<skipped>`, joins `-\n` hyphenations, turns newlines into spaces, unescapes
/// `&quot;`, `&amp;`, `&lt;`, `&gt;` (in that order), then applies the regular-expression
/// tokenization described in the module documentation.
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if line.contains('&') {
        line = line
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    tokenize_regexp(&format!(" {line} "))
}

/// sacreBLEU's `TokenizerRegexp` (the language-dependent part of 13a, also used by `zh`).
pub fn tokenize_regexp(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let chars = space_symbols(&chars);
    let chars = scan_pairs(
        &chars,
        |a, b| !is_digit(a) && is_period_or_comma(b),
        Split::After,
    );
    let chars = scan_pairs(
        &chars,
        |a, b| is_period_or_comma(a) && !is_digit(b),
        Split::Before,
    );
    let chars = scan_pairs(&chars, |a, b| is_digit(a) && b == '-', Split::After);
    let spaced: String = chars.into_iter().collect();
    python_split(&spaced).collect::<Vec<_>>().join(" ")
}

/// `[0-9]` in a Python `str` pattern: ASCII digits only.
fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
}

fn is_period_or_comma(c: char) -> bool {
    c == '.' || c == ','
}

/// The character class of the first rule: `{`-`~`, `[`-`` ` ``, ` `-`&`, `(`-`+`, `:`-`@`, `/`.
fn is_spaced_symbol(c: char) -> bool {
    matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/')
}

/// Rule 1: `c` → ` c ` for every symbol of the class.
fn space_symbols(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len() * 2);
    for &c in chars {
        if is_spaced_symbol(c) {
            out.extend([' ', c, ' ']);
        } else {
            out.push(c);
        }
    }
    out
}

/// Where a rule with two one-character groups puts its spaces.
#[derive(Clone, Copy)]
enum Split {
    /// `\1 \2 `
    After,
    /// ` \1 \2`
    Before,
}

/// Rules 2-4: replaces each non-overlapping match of a two-character pattern, scanning left to
/// right as `re.sub` does.
fn scan_pairs(chars: &[char], matches: impl Fn(char, char) -> bool, split: Split) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len() + chars.len() / 2);
    let mut i = 0;
    while i < chars.len() {
        if i + 1 < chars.len() && matches(chars[i], chars[i + 1]) {
            let (a, b) = (chars[i], chars[i + 1]);
            match split {
                Split::After => out.extend([a, ' ', b, ' ']),
                Split::Before => out.extend([' ', a, ' ', b]),
            }
            i += 2;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs of sacreBLEU 2.6.0's `Tokenizer13a()` (the fixture file has more).
    #[test]
    fn tricky_strings_match_sacrebleu() {
        let cases = [
            ("Hello, world!", "Hello , world !"),
            ("1,000.50 and 2.5 and 3,5", "1,000.50 and 2.5 and 3,5"),
            ("a.b,c . , .. ,,", "a . b , c . , . . , ,"),
            ("end.", "end ."),
            ("3-4 a-b 5- -6 x-y-z", "3 - 4 a-b 5 - -6 x-y-z"),
            (
                "&quot;quoted&quot; &amp;amp; &lt;tag&gt; &apos;",
                "\" quoted \" & amp ; < tag > & apos ;",
            ),
            ("<skipped> text", "text"),
            ("hyphen-\nated line\nbreak", "hyphenated line break"),
            ("file\u{1c}separator\u{1d}group", "file separator group"),
            ("it's a dog's life", "it's a dog's life"),
            (
                "«Bonjour» — dit-il… «ça va?»",
                "«Bonjour» — dit-il… «ça va ? »",
            ),
            (
                "U.S.A. 3.14. .5 5. a. .a",
                "U . S . A . 3.14 . . 5 5 . a . . a",
            ),
            ("", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(tokenize_13a(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn pair_rules_do_not_overlap() {
        // `re.sub` resumes after a match: in "a..." the first match is "a.", the next ".."
        assert_eq!(tokenize_regexp(" a... "), "a . . .");
        // A digit on both sides protects a period or comma.
        assert_eq!(tokenize_regexp(" 1.5,2 "), "1.5,2");
        assert_eq!(tokenize_regexp(" 1. "), "1 .");
    }
}
