//! The number-words corpus: English number words to French number words, e.g.
//! `four hundred seventy-one` → `quatre cent soixante et onze`.
//!
//! A small, exact, self-made parallel corpus: every line has one right translation, the
//! mapping needs reordering-free but non-trivial structure (French `soixante-dix`, `quatre-vingts`,
//! agreement of `cent(s)`), and it is generated, so it needs no download and no licence.
//!
//! English follows US usage without "and" (`one thousand two hundred five`), tens and units
//! joined by a hyphen. French follows the traditional (pre-1990) spelling:
//! - `et` joins `un`/`onze` to `vingt`, `trente` ... `soixante` (`vingt et un`,
//!   `soixante et onze`) but not to `quatre-vingt` (`quatre-vingt-un`, `quatre-vingt-onze`);
//! - hyphens join tens and units below one hundred (`dix-sept`, `soixante-dix-huit`), never
//!   around `cent` and `mille`;
//! - `vingt` (in `quatre-vingts`) and `cent` take an `s` when multiplied and ending the number
//!   (`quatre-vingts`, `deux cents`), not otherwise (`quatre-vingt-deux`, `deux cent un`,
//!   `quatre-vingt mille`, `deux cent mille`);
//! - `mille` never varies and takes no `un` before it (`mille`, `deux mille`).

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use rosetta_data::rng::SplitMix64;

/// Largest number the corpus draws (inclusive).
pub const MAX: u32 = 999_999;

const EN_UNITS: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const EN_TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const FR_UNITS: [&str; 20] = [
    "zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "onze",
    "douze", "treize", "quatorze", "quinze", "seize", "dix-sept", "dix-huit", "dix-neuf",
];
const FR_TENS: [&str; 7] = [
    "",
    "",
    "vingt",
    "trente",
    "quarante",
    "cinquante",
    "soixante",
];

/// `n` (at most [`MAX`]) in English words.
pub fn english(n: u32) -> String {
    assert!(n <= MAX, "{n} is above {MAX}");
    if n == 0 {
        return EN_UNITS[0].to_string();
    }
    let mut words = Vec::new();
    let (thousands, rest) = (n / 1000, n % 1000);
    if thousands > 0 {
        words.push(english_below_thousand(thousands));
        words.push("thousand".to_string());
    }
    if rest > 0 {
        words.push(english_below_thousand(rest));
    }
    words.join(" ")
}

fn english_below_thousand(n: u32) -> String {
    let mut words = Vec::new();
    let (hundreds, rest) = (n / 100, n % 100);
    if hundreds > 0 {
        words.push(format!("{} hundred", EN_UNITS[hundreds as usize]));
    }
    if rest > 0 {
        words.push(if rest < 20 {
            EN_UNITS[rest as usize].to_string()
        } else if rest % 10 == 0 {
            EN_TENS[(rest / 10) as usize].to_string()
        } else {
            format!(
                "{}-{}",
                EN_TENS[(rest / 10) as usize],
                EN_UNITS[(rest % 10) as usize]
            )
        });
    }
    words.join(" ")
}

/// `n` (at most [`MAX`]) in French words, traditional spelling.
pub fn french(n: u32) -> String {
    assert!(n <= MAX, "{n} is above {MAX}");
    if n == 0 {
        return FR_UNITS[0].to_string();
    }
    let mut words = Vec::new();
    let (thousands, rest) = (n / 1000, n % 1000);
    match thousands {
        0 => {}
        1 => words.push("mille".to_string()),
        // Before `mille`, `vingt` and `cent` do not end the number: no plural `s`.
        t => {
            words.push(french_below_thousand(t, false));
            words.push("mille".to_string());
        }
    }
    if rest > 0 {
        words.push(french_below_thousand(rest, true));
    }
    words.join(" ")
}

/// `1 <= n < 1000`; `ends_number` says whether nothing follows (plural `-s` of `cents`/`vingts`).
fn french_below_thousand(n: u32, ends_number: bool) -> String {
    let mut words = Vec::new();
    let (hundreds, rest) = (n / 100, n % 100);
    match hundreds {
        0 => {}
        1 => words.push("cent".to_string()),
        h => {
            let plural = ends_number && rest == 0;
            words.push(format!(
                "{} {}",
                FR_UNITS[h as usize],
                if plural { "cents" } else { "cent" }
            ));
        }
    }
    if rest > 0 {
        words.push(french_below_hundred(rest, ends_number));
    }
    words.join(" ")
}

/// `1 <= n < 100`.
fn french_below_hundred(n: u32, ends_number: bool) -> String {
    if n < 20 {
        return FR_UNITS[n as usize].to_string();
    }
    let (tens, units) = (n / 10, n % 10);
    match tens {
        2..=6 => {
            let ten = FR_TENS[tens as usize];
            match units {
                0 => ten.to_string(),
                1 => format!("{ten} et un"),
                u => format!("{ten}-{}", FR_UNITS[u as usize]),
            }
        }
        // 70-79: soixante + 10..19.
        7 => match units {
            1 => "soixante et onze".to_string(),
            u => format!("soixante-{}", FR_UNITS[10 + u as usize]),
        },
        // 80-99: quatre-vingt + 0..19, with no `et`.
        _ => {
            let below_twenty = n - 80;
            if below_twenty == 0 {
                if ends_number {
                    "quatre-vingts"
                } else {
                    "quatre-vingt"
                }
                .to_string()
            } else {
                format!("quatre-vingt-{}", FR_UNITS[below_twenty as usize])
            }
        }
    }
}

/// Sizes of the three splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitSizes {
    /// Training pairs (all numbers below 100 are among them).
    pub train: usize,
    /// Validation pairs.
    pub valid: usize,
    /// Test pairs.
    pub test: usize,
}

/// The numbers of each split; no number appears in two splits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splits {
    /// Training numbers.
    pub train: Vec<u32>,
    /// Validation numbers.
    pub valid: Vec<u32>,
    /// Test numbers.
    pub test: Vec<u32>,
}

/// Draws disjoint splits with seed `seed`.
///
/// Every number below 100 goes to training (the vocabulary every larger number is built from);
/// the rest are drawn with a uniform number of digits (3 to 6), so that short and long numbers
/// are equally common, and dealt to test, validation, then training.
pub fn draw_splits(sizes: SplitSizes, seed: u64) -> Result<Splits> {
    let small: Vec<u32> = (0..100).collect();
    if sizes.train < small.len() {
        bail!(
            "the training split needs at least {} pairs (every number below 100), got {}",
            small.len(),
            sizes.train
        );
    }
    let drawn = sizes.train - small.len() + sizes.valid + sizes.test;
    let available = (MAX + 1 - 100) as usize;
    if drawn > available / 2 {
        bail!(
            "{drawn} distinct numbers of 3 to 6 digits asked for; at most {} can be drawn",
            available / 2
        );
    }
    let mut rng = SplitMix64::new(seed);
    let mut seen: HashSet<u32> = HashSet::with_capacity(drawn);
    let mut order = Vec::with_capacity(drawn);
    while order.len() < drawn {
        let digits = 3 + rng.below(4) as u32;
        let low = 10u64.pow(digits - 1);
        let n = (low + rng.below(9 * low)) as u32;
        if seen.insert(n) {
            order.push(n);
        }
    }
    let test = order[..sizes.test].to_vec();
    let valid = order[sizes.test..sizes.test + sizes.valid].to_vec();
    let mut train = small;
    train.extend_from_slice(&order[sizes.test + sizes.valid..]);
    // Interleave the small numbers with the rest instead of leaving them all at the top.
    rng.shuffle(&mut train);
    Ok(Splits { train, valid, test })
}

/// Writes `{train,valid,test}.{en,fr}` into `dir` (created if needed), one number per line.
pub fn write_corpus(dir: &Path, splits: &Splits) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, numbers) in [
        ("train", &splits.train),
        ("valid", &splits.valid),
        ("test", &splits.test),
    ] {
        for (lang, words) in [("en", english as fn(u32) -> String), ("fr", french)] {
            let path = dir.join(format!("{name}.{lang}"));
            let mut text = String::new();
            for &n in numbers {
                text.push_str(&words(n));
                text.push('\n');
            }
            let mut file = fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_words() {
        for (n, words) in [
            (0, "zero"),
            (7, "seven"),
            (13, "thirteen"),
            (40, "forty"),
            (471, "four hundred seventy-one"),
            (1000, "one thousand"),
            (1005, "one thousand five"),
            (12_345, "twelve thousand three hundred forty-five"),
            (100_000, "one hundred thousand"),
            (
                999_999,
                "nine hundred ninety-nine thousand nine hundred ninety-nine",
            ),
        ] {
            assert_eq!(english(n), words, "{n}");
        }
    }

    #[test]
    fn french_words() {
        for (n, words) in [
            (0, "zéro"),
            (1, "un"),
            (16, "seize"),
            (17, "dix-sept"),
            (20, "vingt"),
            (21, "vingt et un"),
            (22, "vingt-deux"),
            (61, "soixante et un"),
            (70, "soixante-dix"),
            (71, "soixante et onze"),
            (72, "soixante-douze"),
            (79, "soixante-dix-neuf"),
            (80, "quatre-vingts"),
            (81, "quatre-vingt-un"),
            (90, "quatre-vingt-dix"),
            (91, "quatre-vingt-onze"),
            (99, "quatre-vingt-dix-neuf"),
            (100, "cent"),
            (101, "cent un"),
            (180, "cent quatre-vingts"),
            (200, "deux cents"),
            (201, "deux cent un"),
            (471, "quatre cent soixante et onze"),
            (1000, "mille"),
            (1001, "mille un"),
            (2000, "deux mille"),
            (21_000, "vingt et un mille"),
            (80_000, "quatre-vingt mille"),
            (80_080, "quatre-vingt mille quatre-vingts"),
            (200_000, "deux cent mille"),
            (300_200, "trois cent mille deux cents"),
            (
                999_999,
                "neuf cent quatre-vingt-dix-neuf mille neuf cent quatre-vingt-dix-neuf",
            ),
        ] {
            assert_eq!(french(n), words, "{n}");
        }
    }

    #[test]
    fn splits_are_disjoint_sized_and_seeded() {
        let sizes = SplitSizes {
            train: 2000,
            valid: 300,
            test: 300,
        };
        let a = draw_splits(sizes, 1).expect("drawable");
        assert_eq!(
            (a.train.len(), a.valid.len(), a.test.len()),
            (2000, 300, 300)
        );
        let mut all: Vec<u32> = a
            .train
            .iter()
            .chain(&a.valid)
            .chain(&a.test)
            .copied()
            .collect();
        let total = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), total, "a number appears twice");
        assert!((0..100).all(|n| a.train.contains(&n)));
        assert_eq!(a, draw_splits(sizes, 1).expect("drawable"));
        assert_ne!(a, draw_splits(sizes, 2).expect("drawable"));
    }

    #[test]
    fn impossible_sizes_are_refused() {
        let too_small = SplitSizes {
            train: 50,
            valid: 1,
            test: 1,
        };
        assert!(draw_splits(too_small, 1).is_err());
    }
}
