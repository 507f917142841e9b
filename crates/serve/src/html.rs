//! LibreTranslate's `format: "html"`: the text of an HTML fragment or document is translated
//! and its markup kept.
//!
//! The input is split into tokens (tags, comments, declarations, text) by a lenient scanner:
//! a `<` that does not start a tag is text, and nothing is ever added to the markup, so the
//! output holds exactly the input's tags, attributes, comments and entities outside the
//! translated text, in the input's order. The text is cut into *segments* at block-level tags
//! (`<p>`, `<li>`, `<td>`, `<br>` ... any tag that is not inline); each segment is translated
//! whole, as one sentence, so inline tags (`<b>`, `<a href>`, `<em>` ...) do not cut a sentence
//! in pieces. Untranslatable content is copied: `<script>`, `<style>`, `<textarea>`,
//! `<code>`, `<pre>`, `<kbd>`, `<samp>`, `<var>` and any element with `translate="no"` or class
//! `notranslate`.
//!
//! **Inline tags** are placed by word alignment, as Bergamot does: the segment's text is
//! translated without them, each output word is aligned to the source word its subwords
//! attend to most (the model's cross-attention, last decoder layer, mean over heads; see
//! `Translator::word_alignment`), and each inline element wraps the output words aligned to
//! the source words it wrapped (the smallest run covering them, kept inside its parent's run
//! and after its earlier siblings', so the result is always well nested). An element none of
//! whose words found a match keeps its place relative to its neighbours and wraps the output
//! word aligned best to its first source word. A void element (`<br>` inside inline text,
//! `<img>`) goes before the output word aligned to the source word it preceded.
//!
//! Translated text is escaped (`&`, `<`, `>`), so a translation that looks like markup stays
//! text.

/// Elements whose content is never translated (besides `translate="no"` and `notranslate`).
const KEPT: &[&str] = &[
    "script", "style", "textarea", "code", "pre", "kbd", "samp", "var", "svg", "math", "template",
    "noscript",
];

/// Elements whose content is raw text up to their end tag (no tags inside).
const RAW_TEXT: &[&str] = &["script", "style", "textarea", "title", "xmp"];

/// Inline (phrasing) elements: they do not end a segment.
const INLINE: &[&str] = &[
    "a", "abbr", "b", "bdi", "bdo", "cite", "data", "dfn", "em", "font", "i", "ins", "del", "mark",
    "q", "s", "small", "span", "strong", "sub", "sup", "time", "u", "img", "wbr",
];

/// Void elements: no end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

/// A token of the input, as the scanner cut it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// Text, as written (entities not yet decoded).
    Text(String),
    /// A start tag, as written, with its lower-case name.
    Start {
        name: String,
        raw: String,
        keep: bool,
        closed: bool,
    },
    /// An end tag, as written, with its lower-case name.
    End { name: String, raw: String },
    /// A comment, declaration, processing instruction or raw-text content: copied.
    Other(String),
}

/// Scans `input` into tokens; never fails (what is not markup is text).
fn scan(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut text = String::new();
    let mut rest = input;
    let flush = |text: &mut String, tokens: &mut Vec<Token>| {
        if !text.is_empty() {
            tokens.push(Token::Text(std::mem::take(text)));
        }
    };
    while let Some(at) = rest.find('<') {
        text.push_str(&rest[..at]);
        rest = &rest[at..];
        let after = &rest[1..];
        // A comment, a declaration (<!DOCTYPE>, <![CDATA[), a processing instruction.
        let other_end = if after.starts_with("!--") {
            Some(rest.find("-->").map_or(rest.len(), |i| i + 3))
        } else if after.starts_with('!') || after.starts_with('?') {
            Some(rest.find('>').map_or(rest.len(), |i| i + 1))
        } else {
            None
        };
        if let Some(end) = other_end {
            flush(&mut text, &mut tokens);
            tokens.push(Token::Other(rest[..end].to_string()));
            rest = &rest[end..];
            continue;
        }
        let closing = after.starts_with('/');
        let name_start = if closing { 2 } else { 1 };
        let name_len = rest[name_start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':'))
            .unwrap_or(rest.len() - name_start);
        let starts_with_letter = rest[name_start..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic());
        let end = match starts_with_letter.then(|| tag_end(rest)) {
            Some(TagEnd::At(end)) => end,
            Some(TagEnd::OpenQuote) => {
                // A quoted attribute value never closed: the rest of the input belongs to this
                // broken tag (as in a browser), copied as it is.
                flush(&mut text, &mut tokens);
                tokens.push(Token::Other(rest.to_string()));
                return tokens;
            }
            Some(TagEnd::Unfinished) | None => {
                // Not a tag: a literal `<`.
                text.push('<');
                rest = &rest[1..];
                continue;
            }
        };
        flush(&mut text, &mut tokens);
        let raw = rest[..end].to_string();
        let name = rest[name_start..name_start + name_len].to_ascii_lowercase();
        rest = &rest[end..];
        if closing {
            tokens.push(Token::End { name, raw });
            continue;
        }
        let keep = KEPT.contains(&name.as_str()) || is_no_translate(&raw);
        let closed = raw.ends_with("/>") || VOID.contains(&name.as_str());
        let raw_text = RAW_TEXT.contains(&name.as_str()) && !raw.ends_with("/>");
        tokens.push(Token::Start {
            name: name.clone(),
            raw,
            keep,
            closed,
        });
        if raw_text {
            // Everything up to `</name` is content, copied as it is.
            let end = find_end_tag(rest, &name);
            if end > 0 {
                tokens.push(Token::Other(rest[..end].to_string()));
            }
            rest = &rest[end..];
        }
    }
    text.push_str(rest);
    flush(&mut text, &mut tokens);
    tokens
}

/// How a tag starting at `rest[0] == '<'` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagEnd {
    /// After its `>`, at this byte.
    At(usize),
    /// It does not: another `<` or the end of the input comes first, outside quotes.
    Unfinished,
    /// A quoted attribute value runs to the end of the input.
    OpenQuote,
}

/// Where the tag starting at `rest[0] == '<'` ends, minding quoted attribute values. Each call
/// reads at most to the next `<` outside quotes, or to the end once (then the input is done),
/// so scanning stays linear in the input's length.
fn tag_end(rest: &str) -> TagEnd {
    let mut quote = None;
    for (i, c) in rest.char_indices().skip(1) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return TagEnd::At(i + 1),
            (None, '<') => return TagEnd::Unfinished,
            _ => {}
        }
    }
    if quote.is_some() {
        TagEnd::OpenQuote
    } else {
        TagEnd::Unfinished
    }
}

/// The byte where raw-text content ends: the first `</name` (any case), or the end.
fn find_end_tag(rest: &str, name: &str) -> usize {
    rest.match_indices("</")
        .map(|(i, _)| i)
        .find(|&i| {
            rest.as_bytes()
                .get(i + 2..i + 2 + name.len())
                .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name.as_bytes()))
        })
        .unwrap_or(rest.len())
}

/// Whether a start tag says its content is not to be translated.
fn is_no_translate(raw: &str) -> bool {
    let lower = raw.to_ascii_lowercase();
    let attribute = |name: &str| -> Option<String> {
        let at = lower.find(&format!(" {name}="))? + name.len() + 2;
        let value = &lower[at..];
        let (quote, value) = match value.chars().next()? {
            q @ ('"' | '\'') => (Some(q), &value[1..]),
            _ => (None, value),
        };
        let end = match quote {
            Some(q) => value.find(q)?,
            None => value
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .unwrap_or(value.len()),
        };
        Some(value[..end].to_string())
    };
    attribute("translate").is_some_and(|v| v == "no")
        || attribute("class").is_some_and(|v| v.split_whitespace().any(|c| c == "notranslate"))
}

/// Decodes the character references of HTML text (`&amp;`, `&#233;`, `&#xE9;` and the common
/// named ones); an unknown reference stays as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
            .map(|i| i + 1);
        let decoded = end.filter(|&e| rest[e..].starts_with(';')).and_then(|e| {
            let name = &rest[1..e];
            let c = if let Some(number) = name.strip_prefix("#x").or(name.strip_prefix("#X")) {
                u32::from_str_radix(number, 16)
                    .ok()
                    .and_then(char::from_u32)
            } else if let Some(number) = name.strip_prefix('#') {
                number.parse().ok().and_then(char::from_u32)
            } else {
                named_entity(name)
            }?;
            Some((c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn named_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "eacute" => 'é',
        "egrave" => 'è',
        "agrave" => 'à',
        "auml" => 'ä',
        "ouml" => 'ö',
        "uuml" => 'ü',
        "szlig" => 'ß',
        "ccedil" => 'ç',
        "copy" => '©',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "laquo" => '«',
        "raquo" => '»',
        _ => return None,
    })
}

/// Escapes translated text for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// An inline element of a segment: its tags and the source words it wraps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inline {
    open: String,
    close: String,
    /// First and one-past-last source word it covers (equal: it covers none; it then sits
    /// before word `first`).
    words: (usize, usize),
    /// The element it is inside (an index into the segment's elements), if any.
    parent: Option<usize>,
}

/// A run of the document to translate: its text (whitespace collapsed) and inline elements.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    /// Whitespace before the text, as written.
    lead: String,
    /// The text, entities decoded, whitespace runs as one space, trimmed.
    text: String,
    /// Whitespace after the text.
    trail: String,
    elements: Vec<Inline>,
}

/// A piece of the parsed document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Markup or untranslated content, copied as written.
    Kept(String),
    /// Text to translate (the index of its segment).
    Segment(usize),
}

/// An HTML input, cut into what is kept and what is translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlDocument {
    pieces: Vec<Piece>,
    segments: Vec<Segment>,
}

/// One segment's translation: its text and, for each of its words (split at whitespace), the
/// source word it aligns to (`None`: no alignment; the tags then go around the whole text).
pub type SegmentTranslation = (String, Option<Vec<usize>>);

/// A segment being gathered: text pieces and inline tag events.
#[derive(Default)]
struct Gathering {
    /// Raw tokens of the run, to copy back if it has no text.
    raw: String,
    /// (decoded text) or tag events, in order.
    items: Vec<Item>,
}

enum Item {
    Text(String),
    Open(String, String),
    Close(String, String),
    Void(String),
}

impl HtmlDocument {
    /// Parses `input` (a fragment or a whole document); never fails.
    pub fn parse(input: &str) -> Self {
        let mut doc = Self {
            pieces: Vec::new(),
            segments: Vec::new(),
        };
        let mut run = Gathering::default();
        // Inside an untranslated element: its name and depth.
        let mut kept: Option<(String, usize)> = None;
        for token in scan(input) {
            if let Some((name, depth)) = &mut kept {
                let raw = match &token {
                    Token::Text(raw) | Token::Other(raw) => raw.clone(),
                    Token::Start {
                        name: n,
                        raw,
                        closed,
                        ..
                    } => {
                        if n == name && !closed {
                            *depth += 1;
                        }
                        raw.clone()
                    }
                    Token::End { name: n, raw } => {
                        if n == name {
                            *depth -= 1;
                        }
                        raw.clone()
                    }
                };
                doc.pieces.push(Piece::Kept(raw));
                if *depth == 0 {
                    kept = None;
                }
                continue;
            }
            match token {
                Token::Text(raw) => {
                    run.raw.push_str(&raw);
                    run.items.push(Item::Text(decode_entities(&raw)));
                }
                Token::Start {
                    name,
                    raw,
                    keep,
                    closed,
                } => {
                    if keep {
                        doc.finish(&mut run);
                        doc.pieces.push(Piece::Kept(raw));
                        if !closed {
                            kept = Some((name, 1));
                        }
                    } else if INLINE.contains(&name.as_str()) {
                        run.raw.push_str(&raw);
                        run.items.push(if closed {
                            Item::Void(raw)
                        } else {
                            Item::Open(name, raw)
                        });
                    } else {
                        doc.finish(&mut run);
                        doc.pieces.push(Piece::Kept(raw));
                    }
                }
                Token::End { name, raw } => {
                    if INLINE.contains(&name.as_str()) {
                        run.raw.push_str(&raw);
                        run.items.push(Item::Close(name, raw));
                    } else {
                        doc.finish(&mut run);
                        doc.pieces.push(Piece::Kept(raw));
                    }
                }
                Token::Other(raw) => {
                    doc.finish(&mut run);
                    doc.pieces.push(Piece::Kept(raw));
                }
            }
        }
        doc.finish(&mut run);
        doc
    }

    /// Ends the run being gathered: a segment if it has text and well-nested inline tags,
    /// else its parts copied (text runs between tags then become segments of their own).
    fn finish(&mut self, run: &mut Gathering) {
        let run = std::mem::take(run);
        if run.items.is_empty() {
            return;
        }
        match segment_of(&run.items) {
            Some(segment) if !segment.text.is_empty() => {
                self.pieces.push(Piece::Segment(self.segments.len()));
                self.segments.push(segment);
            }
            Some(_) => self.pieces.push(Piece::Kept(run.raw)),
            None => {
                // Badly nested inline tags: each text run alone, the tags where they were.
                for item in run.items {
                    match item {
                        Item::Text(text) => {
                            let one = [Item::Text(text)];
                            match segment_of(&one) {
                                Some(segment) if !segment.text.is_empty() => {
                                    self.pieces.push(Piece::Segment(self.segments.len()));
                                    self.segments.push(segment);
                                }
                                Some(segment) => {
                                    self.pieces.push(Piece::Kept(segment.lead + &segment.trail))
                                }
                                None => {}
                            }
                        }
                        Item::Open(_, raw) | Item::Close(_, raw) | Item::Void(raw) => {
                            self.pieces.push(Piece::Kept(raw));
                        }
                    }
                }
            }
        }
    }

    /// The texts to translate, one per segment, in order.
    pub fn texts(&self) -> Vec<String> {
        self.segments.iter().map(|s| s.text.clone()).collect()
    }

    /// The document with each segment replaced by its translation (`translations[i]` for
    /// `texts()[i]`), inline tags placed by the alignments.
    pub fn render(&self, translations: &[SegmentTranslation]) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Kept(raw) => out.push_str(raw),
                Piece::Segment(i) => {
                    let segment = &self.segments[*i];
                    let (text, alignment) = translations
                        .get(*i)
                        .map_or((segment.text.as_str(), None), |(t, a)| {
                            (t.as_str(), a.as_deref())
                        });
                    out.push_str(&segment.lead);
                    out.push_str(&place_tags(segment, text, alignment));
                    out.push_str(&segment.trail);
                }
            }
        }
        out
    }
}

/// The segment `items` make, or `None` when its inline tags are not well nested.
fn segment_of(items: &[Item]) -> Option<Segment> {
    // The text with whitespace collapsed, and for each tag event the word count at it.
    let mut text = String::new();
    let mut pending_space = false;
    let mut lead = String::new();
    let mut trail = String::new();
    let mut words = 0;
    let mut in_word = false;
    let mut elements: Vec<Inline> = Vec::new();
    let mut open: Vec<(usize, String)> = Vec::new();
    let mut started = false;
    for item in items {
        match item {
            Item::Text(t) => {
                for c in t.chars() {
                    if c.is_whitespace() && c != '\u{a0}' {
                        if !started {
                            lead.push(c);
                        } else {
                            trail.push(c);
                            pending_space = true;
                        }
                        in_word = false;
                    } else {
                        if pending_space && !text.is_empty() {
                            text.push(' ');
                        }
                        pending_space = false;
                        trail.clear();
                        started = true;
                        if !in_word {
                            words += 1;
                            in_word = true;
                        }
                        text.push(c);
                    }
                }
            }
            Item::Open(name, raw) => {
                // A tag between two letters does not split the word: it starts at the next
                // word if none is being written, else at the current one.
                let first = if in_word { words - 1 } else { words };
                elements.push(Inline {
                    open: raw.clone(),
                    close: String::new(),
                    words: (first, first),
                    parent: open.last().map(|(i, _)| *i),
                });
                open.push((elements.len() - 1, name.clone()));
            }
            Item::Close(name, raw) => {
                let (index, open_name) = open.pop()?;
                if &open_name != name {
                    return None;
                }
                elements[index].close = raw.clone();
                elements[index].words.1 = words;
            }
            Item::Void(raw) => {
                let at = if in_word { words - 1 } else { words };
                elements.push(Inline {
                    open: raw.clone(),
                    close: String::new(),
                    words: (at, at),
                    parent: open.last().map(|(i, _)| *i),
                });
            }
        }
    }
    if !open.is_empty() {
        return None;
    }
    if !started {
        // Whitespace only: all of it is the lead.
        lead.push_str(&trail);
        trail.clear();
    }
    Some(Segment {
        lead,
        text,
        trail,
        elements,
    })
}

/// The translated `text` of `segment` with its inline elements placed by `alignment` (one
/// source word per output word).
fn place_tags(segment: &Segment, text: &str, alignment: Option<&[usize]>) -> String {
    let out_words: Vec<&str> = text.split_whitespace().collect();
    let n = out_words.len();
    // Each element's run of output words [start, end), inside its parent's and after its
    // earlier siblings'.
    let mut runs: Vec<(usize, usize)> = Vec::with_capacity(segment.elements.len());
    // Per parent (None as usize::MAX), where the next sibling may start.
    let mut next_free: std::collections::HashMap<usize, usize> = Default::default();
    for element in &segment.elements {
        let (lo, hi) = match element.parent {
            Some(p) => runs[p],
            None => (0, n),
        };
        let key = element.parent.unwrap_or(usize::MAX);
        let floor = next_free.get(&key).copied().unwrap_or(lo).max(lo);
        let wanted = match alignment {
            Some(alignment) if alignment.len() == n => {
                let (first, last) = element.words;
                let covered: Vec<usize> = (0..n)
                    .filter(|&w| (first..last).contains(&alignment[w]))
                    .collect();
                match (covered.first(), covered.last()) {
                    (Some(&a), Some(&b)) => (a, b + 1),
                    _ => {
                        // No output word aligned to its words (or it has none): before the
                        // first output word aligned at or after its first source word.
                        let at = (0..n).find(|&w| alignment[w] >= first).unwrap_or(n);
                        if last > first {
                            (at, (at + 1).min(n))
                        } else {
                            (at, at)
                        }
                    }
                }
            }
            // No alignment: around the whole text (elements with words), or at its end.
            _ => {
                if element.words.1 > element.words.0 {
                    (0, n)
                } else {
                    (n, n)
                }
            }
        };
        let start = wanted.0.clamp(floor, hi);
        let end = wanted.1.clamp(start, hi);
        runs.push((start, end));
        next_free.insert(key, end);
    }
    // Write the words with the tags around their runs: opens before word `start`, closes after
    // word `end - 1` (innermost first), empty elements where they start.
    let mut opens: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    let mut closes: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (i, &(start, end)) in runs.iter().enumerate() {
        opens[start].push(i);
        closes[end].push(i);
    }
    let mut out = String::new();
    for position in 0..=n {
        // Closes at this position: the elements that end here, latest opened first. An empty
        // element opened here closes right after its open, below.
        for &i in closes[position].iter().rev() {
            if runs[i].0 < position {
                out.push_str(&segment.elements[i].close);
            }
        }
        if position > 0 && position < n {
            out.push(' ');
        }
        for &i in &opens[position] {
            out.push_str(&segment.elements[i].open);
            if runs[i].1 == position {
                out.push_str(&segment.elements[i].close);
            }
        }
        if position < n {
            out.push_str(&escape(out_words[position]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Translates by upper-casing each word, aligning each output word to itself.
    fn identity(doc: &HtmlDocument) -> String {
        let translations: Vec<SegmentTranslation> = doc
            .texts()
            .into_iter()
            .map(|t| {
                let n = t.split_whitespace().count();
                (t.to_uppercase(), Some((0..n).collect()))
            })
            .collect();
        doc.render(&translations)
    }

    #[test]
    fn markup_is_kept_and_text_translated() {
        let input = "<!DOCTYPE html><p class=\"x\">Hello  world</p>\n<ul><li>one</li><li>two &amp; three</li></ul>";
        let doc = HtmlDocument::parse(input);
        assert_eq!(doc.texts(), ["Hello world", "one", "two & three"]);
        assert_eq!(
            identity(&doc),
            "<!DOCTYPE html><p class=\"x\">HELLO WORLD</p>\n<ul><li>ONE</li><li>TWO &amp; THREE</li></ul>"
        );
    }

    #[test]
    fn inline_tags_follow_their_words() {
        let doc = HtmlDocument::parse(
            "<p>a <b>big</b> dog <a href=\"/x?a=1&amp;b=2\">runs fast</a>.</p>",
        );
        assert_eq!(doc.texts(), ["a big dog runs fast."]);
        assert_eq!(
            identity(&doc),
            "<p>A <b>BIG</b> DOG <a href=\"/x?a=1&amp;b=2\">RUNS FAST.</a></p>"
        );
        // Reordered: "dog big a" with alignment [2, 1, 0]: <b> follows "big" to position 1.
        let doc = HtmlDocument::parse("a <b>big</b> dog");
        assert_eq!(
            doc.render(&[("chien grand un".into(), Some(vec![2, 1, 0]))]),
            "chien <b>grand</b> un"
        );
        // Nested, and a sibling whose words moved before its elder sibling's: kept after it
        // (empty), so that the tags stay well nested and in the input's order.
        let doc = HtmlDocument::parse("<i>x <b>y</b></i> <u>z</u>");
        assert_eq!(
            doc.render(&[("Z Y X".into(), Some(vec![2, 1, 0]))]),
            "Z <i><b>Y</b> X</i><u></u>"
        );
    }

    #[test]
    fn untranslatable_content_and_entities_are_copied() {
        let input = "<p>Press <code>Ctrl+C</code> now</p><script>if (a < b) { x = \"<p>\"; }</script><div translate=\"no\">Rosetta <b>stays</b></div><span class='notranslate'>Keep</span><style>p{}</style>";
        let doc = HtmlDocument::parse(input);
        assert_eq!(doc.texts(), ["Press", "now"]);
        let out = identity(&doc);
        assert_eq!(
            out,
            "<p>PRESS <code>Ctrl+C</code> NOW</p><script>if (a < b) { x = \"<p>\"; }</script><div translate=\"no\">Rosetta <b>stays</b></div><span class='notranslate'>Keep</span><style>p{}</style>"
        );
    }

    #[test]
    fn a_translation_that_looks_like_markup_is_escaped() {
        let doc = HtmlDocument::parse("<p>x</p>");
        assert_eq!(
            doc.render(&[("<script>alert(1)</script> & co".into(), None)]),
            "<p>&lt;script&gt;alert(1)&lt;/script&gt; &amp; co</p>"
        );
    }

    #[test]
    fn malformed_input_adds_no_markup() {
        for input in [
            "a < b and <b>bold",
            "<p>unclosed <i>italic</p>",
            "<b>x</i>y</b>",
            "<a href=\"x",
            "<!-- never closed",
            "&bogus; &#xZZ; &amp",
        ] {
            let doc = HtmlDocument::parse(input);
            let out = identity(&doc);
            let tags = |s: &str| -> Vec<String> {
                scan(s)
                    .into_iter()
                    .filter_map(|t| match t {
                        Token::Start { raw, .. } | Token::End { raw, .. } | Token::Other(raw) => {
                            Some(raw)
                        }
                        Token::Text(_) => None,
                    })
                    .collect()
            };
            assert_eq!(tags(&out), tags(input), "{input:?} -> {out:?}");
        }
        let doc = HtmlDocument::parse("a < b");
        assert_eq!(identity(&doc), "A &lt; B");
    }

    #[test]
    fn adversarial_inputs_scan_in_linear_time_and_keep_their_bytes() {
        // Each of these was quadratic in a naive scanner; 200,000 repetitions take seconds
        // there and milliseconds here.
        for unit in ["<a \"", "<script></script>", "<b", "&amp", "<!--x-->"] {
            let input = unit.repeat(200_000);
            let doc = HtmlDocument::parse(&input);
            let out = identity(&doc);
            let kept: usize = scan(&out)
                .iter()
                .filter(|t| !matches!(t, Token::Text(_)))
                .count();
            let kept_in: usize = scan(&input)
                .iter()
                .filter(|t| !matches!(t, Token::Text(_)))
                .count();
            assert_eq!(kept, kept_in, "{unit}");
        }
        assert_eq!(
            scan("<p title=\"x>y"),
            [Token::Other("<p title=\"x>y".into())]
        );
        assert_eq!(find_end_tag("a</SCRIPT>", "script"), 1);
        assert_eq!(find_end_tag("a</scrip", "script"), 8);
    }

    #[test]
    fn whitespace_around_segments_is_kept() {
        let doc = HtmlDocument::parse("<p>\n  two words  \n</p>  <p> </p>");
        assert_eq!(doc.texts(), ["two words"]);
        assert_eq!(identity(&doc), "<p>\n  TWO WORDS  \n</p>  <p> </p>");
    }
}
