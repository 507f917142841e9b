//! `rosetta translate`: translate lines from a file or stdin with a trained checkpoint.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_train::Translator;
use rosetta_train::device::parse_device;

use crate::search_args::SearchArgs;

/// Arguments of `rosetta translate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory (its best checkpoint, else its newest).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Input file, one sentence per line, gzip if it ends in `.gz` (default: standard input).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Output file (default: standard output).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Hypotheses per input line; above 1, each output line is `LINE<TAB>SCORE<TAB>TEXT`.
    #[arg(long, default_value_t = 1)]
    nbest: usize,
    #[command(flatten)]
    search: SearchArgs,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    device: String,
}

/// Lines read (and translated) at a time, so output streams while input is still coming.
const CHUNK: usize = 512;

/// Translates the input chunk by chunk, writing translations in input order.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device)?;
    let translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    let config = args.search.search_config(&translator, args.nbest);
    let input: Box<dyn BufRead> = match &args.input {
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
        None => Box::new(BufWriter::new(std::io::stdout())),
    };
    let input_name = args
        .input
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "standard input".into());
    let mut lines = input.lines();
    let mut line_no = 0usize;
    loop {
        let mut chunk = Vec::with_capacity(CHUNK);
        for line in lines.by_ref().take(CHUNK) {
            chunk.push(
                line.with_context(|| format!("{input_name}: line {}", line_no + chunk.len() + 1))?,
            );
        }
        if chunk.is_empty() {
            break;
        }
        let translations = translator.translate(&chunk, &config, args.search.batch_size)?;
        for (offset, t) in translations.iter().enumerate() {
            let n = line_no + offset + 1;
            if t.truncated {
                eprintln!(
                    "{input_name}: line {n} is longer than the model's {} positions; translated its first {} subwords",
                    translator.model.max_positions(),
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
    Ok(())
}
