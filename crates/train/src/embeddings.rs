//! Pretrained word vectors as the starting rows of the embedding tables (tutorial 003's tip;
//! OpenNMT's `-pre_word_vecs_enc`/`_dec`): `[model.embeddings]` names word2vec or fastText text
//! files (`WORD v1 … vD` per line, with or without fastText's `COUNT DIM` header).
//!
//! A subword whose text (the tokenizer's decoding of it, spaces trimmed) is a word of the file,
//! exactly or lowercased, starts from that word's vector; the others keep their random start.
//! The vectors are rescaled as a whole to the root mean square of the table they replace, so
//! that training starts on the scale the model expects. A piece from inside a word that spells
//! a word of the file (`the` in `ba|the`) gets that word's vector too: byte-level BPE marks only
//! word-initial pieces, and a sentence's first word carries no mark. A file whose dimension is not
//! `d_model` is refused unless `project = true`, which maps it through a fixed random Gaussian
//! projection (seeded by the run's seed). `freeze = true` keeps the tables as they start (with
//! a tied output projection, that projection too).

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use rosetta_data::SubwordTokenizer;
use rosetta_model::burn::tensor::{Tensor, TensorData};
use rosetta_model::rng::SplitMix64;
use rosetta_model::{ScaledEmbedding, Transformer};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, TrainError};

/// The largest vector dimension read (fastText's and word2vec's are 300).
const MAX_DIMENSION: usize = 65_536;

/// The `[model.embeddings]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PretrainedEmbeddings {
    /// Vectors for the source (or shared) embedding table.
    #[serde(default)]
    pub source: Option<PathBuf>,
    /// Vectors for the target embedding table (not with `share_embeddings`).
    #[serde(default)]
    pub target: Option<PathBuf>,
    /// Keep the initialised tables fixed during training.
    #[serde(default)]
    pub freeze: bool,
    /// Map vectors of another dimension to `d_model` through a fixed random projection.
    #[serde(default)]
    pub project: bool,
}

/// How much of a table the vectors covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Subwords that started from a vector.
    pub found: usize,
    /// Subwords in the table (special tokens included).
    pub total: usize,
}

fn error(path: &Path, message: impl Into<String>) -> TrainError {
    ConfigError::unkeyed(message).in_file(path)
}

/// The vectors of `wanted` words (and their lowercase forms) in the text file at `path`, and
/// the file's dimension; other words are skipped as they are read, so that a file of millions
/// of words costs only the memory of the vocabulary's.
pub fn read_vectors(
    path: &Path,
    wanted: &HashSet<String>,
) -> Result<(usize, HashMap<String, Vec<f32>>), TrainError> {
    let file = std::fs::File::open(path).map_err(TrainError::io(path))?;
    let reader = std::io::BufReader::new(file);
    let mut dim = None;
    let mut vectors = HashMap::new();
    for (index, line) in reader.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|e| error(path, format!("line {number}: {e}")))?;
        // A byte-order mark, Windows line ends and trailing blanks are not part of the data.
        let line = line.trim_start_matches('\u{feff}').trim_end();
        if line.is_empty() {
            continue;
        }
        // Values are separated by single spaces; a word may itself hold other blanks (GloVe's
        // larger files have words with non-breaking spaces), so the values are the last fields.
        let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
        // fastText's header: the number of words and the dimension.
        if number == 1
            && fields.len() == 2
            && fields[0].parse::<u64>().is_ok()
            && let Ok(d) = fields[1].parse::<usize>()
        {
            if d == 0 || d > MAX_DIMENSION {
                return Err(error(
                    path,
                    format!("line 1: dimension {d}; expected 1 to {MAX_DIMENSION}"),
                ));
            }
            dim = Some(d);
            continue;
        }
        let d = *dim.get_or_insert(fields.len().saturating_sub(1).min(MAX_DIMENSION));
        if d == 0 || fields.len() < d + 1 {
            return Err(error(
                path,
                format!(
                    "line {number}: {} fields, expected a word and {d} numbers",
                    fields.len()
                ),
            ));
        }
        let (word_fields, values) = fields.split_at(fields.len() - d);
        let word = word_fields.join(" ");
        if !wanted.contains(&word) {
            continue;
        }
        let vector = values
            .iter()
            .map(|v| v.parse::<f32>().ok().filter(|x| x.is_finite()))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| {
                error(
                    path,
                    format!("line {number}: a value is not a finite number"),
                )
            })?;
        vectors.entry(word).or_insert(vector);
    }
    let dim = dim.ok_or_else(|| error(path, "holds no vectors"))?;
    Ok((dim, vectors))
}

/// The text of every subword of `tokenizer`, by id (empty for special tokens).
fn subword_words(tokenizer: &SubwordTokenizer) -> Result<Vec<String>, TrainError> {
    (0..tokenizer.vocab_size() as u32)
        .map(|id| Ok(tokenizer.decode(&[id])?.trim().to_string()))
        .collect()
}

/// A fixed `[from, to]` Gaussian projection, entries `N(0, 1/from)`, from `seed`.
fn projection(from: usize, to: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let scale = (1.0 / from as f64).sqrt();
    (0..from * to)
        .map(|_| {
            // Box–Muller from two uniforms in (0, 1].
            let uniform =
                |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let u1 = 1.0 - uniform(&mut rng);
            let u2 = uniform(&mut rng);
            ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos() * scale) as f32
        })
        .collect()
}

/// `table`'s rows replaced by the vectors of the words of `path` their subwords spell.
fn initialise(
    table: ScaledEmbedding,
    tokenizer: &SubwordTokenizer,
    path: &Path,
    project: bool,
    seed: u64,
) -> Result<(ScaledEmbedding, Coverage), TrainError> {
    let words = subword_words(tokenizer)?;
    let wanted: HashSet<String> = words
        .iter()
        .filter(|w| !w.is_empty())
        .flat_map(|w| [w.clone(), w.to_lowercase()])
        .collect();
    let (dim, vectors) = read_vectors(path, &wanted)?;
    let weight = table.embedding.weight.val();
    let [vocab, d_model] = weight.dims();
    if dim != d_model && !project {
        return Err(error(
            path,
            format!(
                "vectors of dimension {dim} for a model of d_model {d_model}: set `project = true` in [model.embeddings] to map them through a random projection, or use vectors of dimension {d_model}"
            ),
        ));
    }
    let found: Vec<(usize, &Vec<f32>)> = words
        .iter()
        .enumerate()
        .take(vocab)
        .filter(|(_, word)| !word.is_empty())
        .filter_map(|(id, word)| {
            vectors
                .get(word)
                .or_else(|| vectors.get(&word.to_lowercase()))
                .map(|vector| (id, vector))
        })
        .collect();
    if found.is_empty() {
        return Err(error(
            path,
            format!(
                "none of the {vocab} subwords of the vocabulary is a word of this file: nothing to start from"
            ),
        ));
    }
    // Made only now that it is needed (the dimension was capped when read).
    let matrix = (dim != d_model).then(|| projection(dim, d_model, seed));
    let rows: Vec<(usize, Vec<f32>)> = found
        .into_iter()
        .map(|(id, vector)| {
            let row = match &matrix {
                None => vector.clone(),
                Some(m) => (0..d_model)
                    .map(|j| (0..dim).map(|i| vector[i] * m[i * d_model + j]).sum())
                    .collect(),
            };
            (id, row)
        })
        .collect();
    let mut values = weight
        .clone()
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .map_err(|e| error(path, format!("cannot read the embedding table: {e:?}")))?;
    // Root mean square: the vectors are scaled as they are, their mean included.
    let rms = |xs: &[f32]| {
        let n = xs.len().max(1) as f64;
        (xs.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / n).sqrt()
    };
    let flat: Vec<f32> = rows
        .iter()
        .flat_map(|(_, row)| row.iter().copied())
        .collect();
    let vectors_rms = rms(&flat);
    let factor = if vectors_rms > 0.0 {
        (rms(&values) / vectors_rms) as f32
    } else {
        1.0
    };
    for (id, row) in &rows {
        for (j, &x) in row.iter().enumerate() {
            values[id * d_model + j] = x * factor;
        }
    }
    let device = weight.device();
    let mut table = table;
    // A tensor made from data is a constant: it becomes a trained parameter again explicitly.
    table.embedding.weight = table
        .embedding
        .weight
        .map(|_| Tensor::from_data(TensorData::new(values, [vocab, d_model]), &device))
        .set_require_grad(true);
    let coverage = Coverage {
        found: rows.len(),
        total: vocab,
    };
    Ok((table, coverage))
}

/// Initialises `model`'s embedding table(s) from the vectors `settings` name (relative paths
/// against `base`) and freezes them if asked; returns a line per table for the log.
pub fn apply(
    mut model: Transformer,
    settings: &PretrainedEmbeddings,
    tokenizers: &rosetta_data::Tokenizers,
    base: &Path,
    seed: u64,
) -> Result<(Transformer, Vec<String>), TrainError> {
    let resolve = |p: &PathBuf| {
        if p.is_absolute() {
            p.clone()
        } else {
            base.join(p)
        }
    };
    let mut report = Vec::new();
    if let Some(path) = &settings.source {
        let path = resolve(path);
        let (table, coverage) = initialise(
            model.source_embedding,
            &tokenizers.source,
            &path,
            settings.project,
            seed,
        )?;
        model.source_embedding = table;
        report.push(describe("source", &path, coverage));
    }
    if let Some(path) = &settings.target {
        let path = resolve(path);
        let Some(target) = model.target_embedding.take() else {
            return Err(error(
                &path,
                "[model.embeddings] target: the model shares one embedding table (share_embeddings = true); give its vectors as `source`",
            ));
        };
        let (table, coverage) = initialise(
            target,
            &tokenizers.target,
            &path,
            settings.project,
            seed ^ 1,
        )?;
        model.target_embedding = Some(table);
        report.push(describe("target", &path, coverage));
    }
    if settings.freeze {
        model = freeze(model);
        report.push("embeddings: frozen (not trained)".into());
    }
    Ok((model, report))
}

/// `model` with its embedding table(s) excluded from training.
pub fn freeze(mut model: Transformer) -> Transformer {
    use rosetta_model::burn::module::Module;
    model.source_embedding = model.source_embedding.no_grad();
    model.target_embedding = model.target_embedding.map(|table| table.no_grad());
    model
}

fn describe(side: &str, path: &Path, coverage: Coverage) -> String {
    format!(
        "embeddings: {side} table, {} of {} subwords from {} ({:.1}%)",
        coverage.found,
        coverage.total,
        path.display(),
        100.0 * coverage.found as f64 / coverage.total.max(1) as f64
    )
}

#[cfg(test)]
mod tests {
    use super::{projection, read_vectors};
    use std::collections::HashSet;

    #[test]
    fn vector_files_with_and_without_a_header_read_the_wanted_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wanted: HashSet<String> = ["two", "three"].iter().map(|s| s.to_string()).collect();
        for (name, text) in [
            (
                "fasttext.vec",
                "3 2\none 0.1 0.2\ntwo 0.3 0.4\nthree -1 2e-1\n",
            ),
            ("glove.txt", "one 0.1 0.2\ntwo 0.3 0.4\nthree -1 2e-1\n"),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            let (dim, vectors) = read_vectors(&path, &wanted).expect("reads");
            assert_eq!(dim, 2, "{name}");
            assert_eq!(vectors.len(), 2, "{name}");
            assert_eq!(vectors["three"], vec![-1.0, 0.2], "{name}");
        }
        // A byte-order mark, CRLF line ends, and a word with a non-breaking space inside.
        let odd = dir.path().join("odd.vec");
        std::fs::write(
            &odd,
            "\u{feff}2 2\r\ntwo 0.3 0.4\r\nthree\u{a0}more 1 2\r\n\r\n",
        )
        .expect("write");
        let with_space: HashSet<String> = ["two", "three\u{a0}more"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (dim, vectors) = read_vectors(&odd, &with_space).expect("reads");
        assert_eq!((dim, vectors.len()), (2, 2));
        assert_eq!(vectors["three\u{a0}more"], vec![1.0, 2.0]);
        let huge = dir.path().join("huge.vec");
        std::fs::write(&huge, "0 4611686018427387904\n").expect("write");
        let message = read_vectors(&huge, &wanted).unwrap_err().to_string();
        assert!(message.contains("dimension"), "{message}");
        let bad = dir.path().join("bad.vec");
        std::fs::write(&bad, "one 0.1 0.2\ntwo 0.3\n").expect("write");
        let message = read_vectors(&bad, &wanted).unwrap_err().to_string();
        assert!(
            message.contains("bad.vec") && message.contains("line 2"),
            "{message}"
        );
        std::fs::write(&bad, "two 0.1 nan\n").expect("write");
        let message = read_vectors(&bad, &wanted).unwrap_err().to_string();
        assert!(
            message.contains("line 1") && message.contains("finite"),
            "{message}"
        );
    }

    #[test]
    fn the_projection_is_seeded_and_scaled() {
        let a = projection(300, 64, 7);
        assert_eq!(a, projection(300, 64, 7));
        assert_ne!(a, projection(300, 64, 8));
        let variance = a.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / a.len() as f64;
        assert!((variance * 300.0 - 1.0).abs() < 0.05, "{variance}");
    }
}
