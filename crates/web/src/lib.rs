//! Rosetta in the browser: a model trained with `rosetta train`, exported with `rosetta export
//! --web`, translating client-side in WebAssembly with no server.
//!
//! The crate compiles to `wasm32-unknown-unknown` on Burn's flex backend (with SIMD128), with
//! `rosetta_data::byte_level` reading the trained tokenizer in place of the `tokenizers` crate
//! (the same tokens); `wasm-bindgen` turns it into `web/pkg/`, which the page in `web/` loads (`scripts/build_web.sh` does both). Translation is
//! [`rosetta_infer::Translator`]'s, so the browser gives the tokens `rosetta translate` gives
//! for the same bundle. The JavaScript API is `Translator` (module `js`, compiled for
//! WebAssembly only); [`WebTranslator`] is the same logic for Rust callers and tests.

pub mod error;
#[cfg(target_arch = "wasm32")]
pub mod js;
pub mod options;
pub mod translator;

pub use error::WebError;
#[cfg(target_arch = "wasm32")]
pub use js::Translator;
pub use options::WebOptions;
pub use translator::{Alternative, ModelInfo, WebTranslation, WebTranslator};
