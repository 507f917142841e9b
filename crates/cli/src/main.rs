//! `rosetta`: the command-line front end of Rosetta.

mod attention;
mod average;
mod bench_decode;
mod describe;
mod eval;
mod import_torch;
mod make_numbers;
mod model_config;
mod train;
mod translate;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Rosetta: Transformer machine translation on Burn.
#[derive(Parser, Debug)]
#[command(name = "rosetta", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train a translator from a run configuration (resumable).
    Train(train::Args),
    /// Plot the cross-attention of a translated sentence as a heatmap (PNG).
    Attention(attention::Args),
    /// Average the parameters of several checkpoints of a run into one model.
    Average(average::Args),
    /// Measure decoding speed (greedy and beam, several batch sizes) of a trained checkpoint.
    BenchDecode(bench_decode::Args),
    /// Translate sentences (file or stdin) with a trained checkpoint.
    Translate(translate::Args),
    /// Print a model configuration's architecture and parameter counts.
    Describe(describe::Args),
    /// Score a hypothesis file against reference files: BLEU and chrF (sacreBLEU-compatible).
    Eval(eval::Args),
    /// Import a PyTorch `nn.Transformer`-based checkpoint into a Rosetta model file.
    ImportTorch(import_torch::Args),
    /// Generate the English-to-French number-words corpus (`data/numbers/`).
    MakeNumbers(make_numbers::Args),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Train(args) => train::run(&args),
        Command::Attention(args) => attention::run(&args),
        Command::Average(args) => average::run(&args),
        Command::BenchDecode(args) => bench_decode::run(&args),
        Command::Translate(args) => translate::run(&args),
        Command::Describe(args) => describe::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::ImportTorch(args) => import_torch::run(&args),
        Command::MakeNumbers(args) => make_numbers::run(&args),
    }
}
