//! Rosetta in the browser: a model trained with `rosetta train`, exported with `rosetta export
//! --web`, translating client-side in WebAssembly with no server.
//!
//! The crate compiles to `wasm32-unknown-unknown` on Burn's flex backend (with SIMD128) and the
//! `tokenizers` crate's WebAssembly build; `wasm-bindgen` turns it into `web/pkg/`, which the
//! page in `web/` loads (`scripts/build_web.sh` does both). Translation is
//! [`rosetta_infer::Translator`]'s, so the browser gives the tokens `rosetta translate` gives
//! for the same bundle. The JavaScript API is [`Translator`]; [`WebTranslator`] is the same
//! logic for Rust callers and tests.

pub mod error;
pub mod options;
pub mod translator;

pub use error::WebError;
pub use options::WebOptions;
pub use translator::{Alternative, ModelInfo, Translator, WebTranslation, WebTranslator};
