//! GPT-2's byte alphabet: each of the 256 byte values written as one printable character, so
//! that any text is a string over 256 symbols and no character is ever unknown. The printable
//! ASCII and Latin-1 bytes stand for themselves; the other 68 (controls, space, the soft
//! hyphen) take U+0100 onwards in byte order, as the `tokenizers` crate's `bytes_char` assigns
//! them.

/// Whether byte `b` stands for itself.
const fn is_printable(b: u8) -> bool {
    matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The character standing for each byte value.
pub(crate) const BYTE_CHARS: [char; 256] = byte_chars();

/// One past the largest code point in the alphabet (the 68 others take U+0100–U+0143).
const ALPHABET_END: usize = 0x144;

/// The byte each alphabet character stands for, by code point; -1 for other code points.
const CHAR_BYTES: [i16; ALPHABET_END] = char_bytes();

const fn byte_chars() -> [char; 256] {
    let mut chars = ['\0'; 256];
    let mut next = 0x100u32;
    let mut b = 0;
    while b < 256 {
        let code = if is_printable(b as u8) {
            b as u32
        } else {
            next += 1;
            next - 1
        };
        chars[b] = match char::from_u32(code) {
            Some(c) => c,
            None => panic!("the byte alphabet lies below U+0144"),
        };
        b += 1;
    }
    chars
}

const fn char_bytes() -> [i16; ALPHABET_END] {
    let mut bytes = [-1i16; ALPHABET_END];
    let mut b = 0;
    while b < 256 {
        bytes[BYTE_CHARS[b] as usize] = b as i16;
        b += 1;
    }
    bytes
}

/// The byte `c` stands for, if it is in the alphabet.
pub(crate) fn byte_of(c: char) -> Option<u8> {
    CHAR_BYTES
        .get(c as usize)
        .and_then(|&b| u8::try_from(b).ok())
}

/// Appends `text`'s bytes to `out`, each as its alphabet character.
pub(crate) fn push_bytes(text: &str, out: &mut String) {
    out.extend(text.bytes().map(|b| BYTE_CHARS[usize::from(b)]));
}

/// The text of byte-level `tokens`, as the `tokenizers` crate's ByteLevel decoder gives it: each
/// token's characters turned back into bytes (a token with a character outside the alphabet,
/// such as a special token, contributes its own UTF-8 bytes), the bytes read as UTF-8 with
/// U+FFFD for invalid sequences.
pub(crate) fn decode<'a>(tokens: impl IntoIterator<Item = &'a str>) -> String {
    let mut bytes = Vec::new();
    for token in tokens {
        let start = bytes.len();
        for c in token.chars() {
            match byte_of(c) {
                Some(b) => bytes.push(b),
                None => {
                    bytes.truncate(start);
                    bytes.extend_from_slice(token.as_bytes());
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPT-2's `bytes_to_unicode`, written as its reference implementation does (a list of the
    /// printable bytes, the others appended at 256 + n).
    fn reference() -> Vec<(u8, char)> {
        let mut bs: Vec<u32> = (0x21..=0x7E)
            .chain(0xA1..=0xAC)
            .chain(0xAE..=0xFF)
            .collect();
        let mut cs = bs.clone();
        let mut n = 0;
        for b in 0..256 {
            if !bs.contains(&b) {
                bs.push(b);
                cs.push(256 + n);
                n += 1;
            }
        }
        bs.into_iter()
            .zip(cs)
            .map(|(b, c)| (b as u8, char::from_u32(c).expect("valid")))
            .collect()
    }

    #[test]
    fn the_alphabet_is_gpt2s_and_inverts() {
        let reference = reference();
        assert_eq!(reference.len(), 256);
        for (b, c) in reference {
            assert_eq!(BYTE_CHARS[usize::from(b)], c, "byte {b:#04x}");
            assert_eq!(byte_of(c), Some(b), "{c:?}");
        }
        assert_eq!(BYTE_CHARS[usize::from(b' ')], 'Ġ');
        assert_eq!(byte_of('\u{144}'), None);
        assert_eq!(byte_of('猫'), None);
    }

    #[test]
    fn decoding_gives_back_the_bytes_and_keeps_foreign_tokens() {
        let mut symbols = String::new();
        push_bytes("ünseen → 猫", &mut symbols);
        assert!(symbols.chars().all(|c| byte_of(c).is_some()));
        assert_eq!(decode([symbols.as_str()]), "ünseen → 猫");
        // A token outside the alphabet is its own text; half a character becomes U+FFFD.
        assert_eq!(decode(["ab", "猫", "Ġc"]), "ab猫 c");
        assert_eq!(decode(["Ã"]), "\u{FFFD}");
    }
}
