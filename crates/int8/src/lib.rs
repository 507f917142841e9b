//! int8 matrix products for CPU inference: a linear map's weight quantized to 8-bit integers
//! per output column ([`Int8Matrix`]), its input per row as it arrives ([`QuantizedRows`]),
//! multiplied in exact 32-bit integer sums and scaled back to floats, as CTranslate2's and
//! Marian's int8 do.
//!
//! The sums run on the best [`Kernel`] the CPU has (Intel AMX, AVX-512 VNNI, AVX2, or portable
//! Rust for every other target, WebAssembly included); all give the same bits. `rosetta-model` uses
//! these products behind its tensors (`Transformer::quantize_int8`).
//!
//! The workspace compiles this crate with `opt-level = 3` even in its dev profile, like its
//! dependencies and `rosetta-model`: at the dev profile's level 1 LLVM vectorizes no loop (the
//! portable kernel and the quantization of the inputs are plain loops).

mod kernel;
mod matrix;

pub use kernel::Kernel;
pub use matrix::{Int8Matrix, QuantizedRows};
