//! `rosetta`: the command-line front end of Rosetta.

mod allocator;
mod attention;
mod average;
mod bench_decode;
mod bench_serve;
mod bench_train;
mod describe;
mod ensemble;
mod eval;
mod export;
mod import_hf;
mod import_torch;
mod info;
mod make_numbers;
mod model_config;
mod numbers;
mod output;
mod plot;
mod prepare;
mod search_args;
mod serve;
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
    /// Train the tokenizer(s) and encode the corpora into the cache, without training.
    Prepare(prepare::Args),
    /// Plot the cross-attention of a translated sentence as a heatmap (PNG).
    Attention(attention::Args),
    /// Average the parameters of several checkpoints of a run into one model.
    Average(average::Args),
    /// Measure decoding speed (greedy and beam, several batch sizes) of a trained checkpoint.
    BenchDecode(bench_decode::Args),
    /// Measure training speed (target tokens/s, peak memory) of a configuration's model.
    BenchTrain(bench_train::Args),
    /// List the backends compiled into this build and the devices they can see.
    Info(info::Args),
    /// Translate sentences (file or stdin) with a trained checkpoint.
    Translate(translate::Args),
    /// Serve a trained checkpoint over HTTP/JSON (LibreTranslate and OpenNMT APIs, a page).
    Serve(serve::Args),
    /// Measure a server under concurrent load beside offline batched translation.
    BenchServe(bench_serve::Args),
    /// Print a model configuration's architecture and parameter counts.
    Describe(describe::Args),
    /// Draw the training curves of one or more runs (loss, validation, learning rate) as a PNG.
    Plot(plot::Args),
    /// Score a hypothesis file against reference files: BLEU and chrF (sacreBLEU-compatible).
    Eval(eval::Args),
    /// Export a trained model: safetensors with PyTorch names, a CTranslate2 model, or a bundle
    /// for the browser.
    Export(export::Args),
    /// Import a PyTorch `nn.Transformer`-based checkpoint into a Rosetta model file.
    ImportTorch(import_torch::Args),
    /// Import a Hugging Face MarianMT (OPUS-MT) directory into a Rosetta run directory.
    ImportHf(import_hf::Args),
    /// Generate the English-to-French number-words corpus (`data/numbers/`).
    MakeNumbers(make_numbers::Args),
}

fn main() -> Result<()> {
    let result = run(Cli::parse());
    match result {
        // The reader of standard output has gone (`rosetta translate | head`): what it asked
        // for is written; end quietly, as `outln!` does.
        Err(error) if output::is_stdout_closed(&error) => Ok(()),
        other => other,
    }
}

fn run(cli: Cli) -> Result<()> {
    // Training and batch decoding reuse the same large buffers at every step (decoding: the
    // logits and the growing self-attention cache; the kernel's zeroing of pages handed back
    // and faulted in again took 7% of greedy decoding at batch 64). A server's batches change
    // shape with every request, so there mimalloc returns freed memory to the system as usual.
    if matches!(
        cli.command,
        Command::Train(_)
            | Command::BenchTrain(_)
            | Command::Translate(_)
            | Command::Eval(_)
            | Command::BenchDecode(_)
    ) {
        allocator::keep_freed_memory();
    }
    match cli.command {
        Command::Train(args) => train::run(&args),
        Command::Prepare(args) => prepare::run(&args),
        Command::Attention(args) => attention::run(&args),
        Command::Average(args) => average::run(&args),
        Command::BenchDecode(args) => bench_decode::run(&args),
        Command::BenchTrain(args) => bench_train::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Translate(args) => translate::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::BenchServe(args) => bench_serve::run(&args),
        Command::Describe(args) => describe::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Export(args) => export::run(&args),
        Command::ImportTorch(args) => import_torch::run(&args),
        Command::ImportHf(args) => import_hf::run(&args),
        Command::MakeNumbers(args) => make_numbers::run(&args),
    }
}
