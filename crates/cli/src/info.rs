//! `rosetta info`: the backends compiled into this build and the devices they can see.

use anyhow::Result;
use rosetta_train::device::{BACKENDS, parse_device, probe};

use crate::output::outln;

/// Arguments of `rosetta info`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Do not try the devices (GPU backends can take seconds to start).
    #[arg(long)]
    no_probe: bool,
}

/// Prints each backend: compiled in or which feature adds it, and for compiled ones, which
/// devices answer.
pub fn run(args: &Args) -> Result<()> {
    outln!("rosetta {}", env!("CARGO_PKG_VERSION"));
    outln!(
        "CPU threads: {} (set RAYON_NUM_THREADS to change)",
        rosetta_train::bench::rayon_threads()
    );
    outln!("backends:");
    for backend in BACKENDS {
        if !backend.compiled {
            outln!(
                "  {:<8} not compiled in (build with --features {}): {}",
                backend.name,
                backend.feature.unwrap_or(backend.name),
                backend.about
            );
            continue;
        }
        outln!("  {:<8} compiled in: {}", backend.name, backend.about);
        if args.no_probe {
            continue;
        }
        for name in backend.probes {
            let outcome = parse_device(name)
                .map_err(|e| e.to_string())
                .and_then(|device| probe(&device));
            match outcome {
                Ok(()) => outln!("    --device {name:<10} available"),
                Err(reason) => outln!(
                    "    --device {name:<10} unavailable: {}",
                    reason.lines().next().unwrap_or("")
                ),
            }
        }
    }
    Ok(())
}
