//! # rosetta-data
//!
//! The data side of Rosetta. So far: [`numbers`], the generator of the small English-to-French
//! number-words corpus that ships in `data/numbers/` for the quickstart and the tests.

pub mod error;
pub mod numbers;

pub use error::DataError;
