//! What can go wrong in the browser build: a bad options object, or anything loading a bundle or
//! translating can refuse (with `rosetta-infer`'s messages, which are the command line's).

use rosetta_infer::InferError;

/// Everything the JavaScript API can refuse.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The options object has an unknown or mistyped key.
    #[error("translation options, key `{key}`: {reason}")]
    Options {
        /// The key at fault, as JavaScript spells it.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The options are not a JSON object.
    #[error("translation options: not an object ({0})")]
    NotAnObject(String),
    /// Both ways of limiting the output length were given.
    #[error("translation options: give maxLen, or maxLenA and maxLenB, not both")]
    ConflictingLimits,
    /// Loading the bundle or translating failed.
    #[error(transparent)]
    Infer(#[from] InferError),
}
