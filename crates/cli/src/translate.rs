//! `rosetta translate`: translate lines from a file or stdin with a trained checkpoint.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_model::parse_device;

use crate::search_args::SearchArgs;

/// Arguments of `rosetta translate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory (its best checkpoint, else its newest), or a
    /// model bundle. Repeat for an ensemble: the models' log-probabilities are averaged at each
    /// step (they must share their tokenizer).
    #[arg(long, required = true)]
    checkpoint: Vec<PathBuf>,
    /// Input file, one sentence per line, gzip if it ends in `.gz` (default: standard input).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Output file (default: standard output).
    #[arg(long)]
    output: Option<PathBuf>,
    /// The language to translate into: required by a multilingual model (its sources start
    /// with the language's tag, `>>de<<`), which refuses a language it was not trained for,
    /// naming those it was; a bilingual model accepts its own target language only.
    #[arg(long)]
    target_lang: Option<String>,
    /// Hypotheses per input line; above 1, each output line is `LINE<TAB>SCORE<TAB>TEXT`.
    #[arg(long, default_value_t = 1)]
    nbest: usize,
    #[command(flatten)]
    search: SearchArgs,
    /// Sentences per batch (inputs are sorted by length within each batch of work).
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    device: String,
    #[command(flatten)]
    quantize: crate::ensemble::QuantizeArgs,
}

/// Refuses a multilingual model for `command`, which has no `--target-lang` (yet), before any
/// work: its translations would need a target language.
pub fn bilingual_only(translator: &rosetta_infer::Translator, command: &str) -> Result<()> {
    if translator.directions.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "`rosetta {command}` takes a bilingual model; this one is multilingual ({}): use `rosetta translate --target-lang` or `rosetta eval --target-lang`",
        translator.target_languages().join(", ")
    )
}

/// Lines read (and translated) at a time, so output streams while input is still coming.
const CHUNK: usize = 512;

/// Reads up to `CHUNK` lines of `input` (without their `\n` or `\r\n`). A line that is not
/// valid UTF-8 becomes an empty line and its number (1-based, counting from `first_line`) is
/// returned in the second list, so that one bad byte loses one line, not the job.
fn read_chunk(
    input: &mut dyn BufRead,
    first_line: usize,
    input_name: &str,
) -> Result<(Vec<String>, Vec<usize>)> {
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut invalid = Vec::new();
    let mut buffer = Vec::new();
    while chunk.len() < CHUNK {
        let more = rosetta_data::corpus::read_line_bytes(input, &mut buffer)
            .with_context(|| format!("{input_name}: line {}", first_line + chunk.len()))?;
        if !more {
            break;
        }
        match String::from_utf8(std::mem::take(&mut buffer)) {
            Ok(line) => chunk.push(line),
            Err(_) => {
                invalid.push(first_line + chunk.len());
                chunk.push(String::new());
            }
        }
    }
    Ok((chunk, invalid))
}

/// Translates the input chunk by chunk, writing translations in input order: one output line
/// (or `nbest` lines) per input line, whatever the input holds.
pub fn run(args: &Args) -> Result<()> {
    // Checked before the model loads, so that an impossible option fails at once.
    args.search
        .options(&Default::default(), args.nbest, args.batch_size)?;
    let device = parse_device(&args.device)?;
    let translator = crate::ensemble::load(&args.checkpoint, &device, args.quantize.quantize)?;
    // A direction the model cannot translate is refused before any input is read.
    let target = args.target_lang.as_deref();
    translator.target_prefix(target)?;
    let options = args
        .search
        .options(&translator.decoding, args.nbest, args.batch_size)?;
    let mut input: Box<dyn BufRead> = match &args.input {
        Some(path) => rosetta_data::corpus::open_text(path)
            .with_context(|| format!("cannot open {}", path.display()))?,
        None => Box::new(BufReader::new(std::io::stdin())),
    };
    let output_name = args
        .output
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "standard output".into());
    let mut output: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(BufWriter::new(crate::output::Stdout)),
    };
    let input_name = args
        .input
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "standard input".into());
    let mut line_no = 0usize;
    let mut skipped = 0usize;
    loop {
        let (chunk, invalid) = read_chunk(input.as_mut(), line_no + 1, &input_name)?;
        if chunk.is_empty() {
            break;
        }
        for n in &invalid {
            eprintln!(
                "{input_name}: line {n} is not valid UTF-8; wrote an empty translation for it"
            );
        }
        skipped += invalid.len();
        let translations = translator.translate_lines_into(&chunk, &options, target)?;
        for (offset, t) in translations.iter().enumerate() {
            let n = line_no + offset + 1;
            if t.truncated {
                eprintln!(
                    "{input_name}: line {n} is longer than the model's {} positions; translated its first {} subwords",
                    translator.max_positions(),
                    t.source_tokens.len()
                );
            }
            if args.nbest > 1 {
                for (text, score) in &t.n_best {
                    writeln!(output, "{n}\t{score:.4}\t{text}")
                        .with_context(|| format!("cannot write to {output_name}"))?;
                }
            } else {
                writeln!(output, "{}", t.text)
                    .with_context(|| format!("cannot write to {output_name}"))?;
            }
        }
        output
            .flush()
            .with_context(|| format!("cannot write to {output_name}"))?;
        line_no += chunk.len();
    }
    if skipped > 0 {
        eprintln!(
            "{input_name}: {skipped} of {line_no} lines were not valid UTF-8 (empty translations written)"
        );
    }
    Ok(())
}
