//! Errors of the server: a request that cannot be answered becomes a JSON body
//! `{"error": "..."}` with a 4xx or 5xx status, the shape LibreTranslate's clients read.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A request refused or failed, with the status and the message the client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, in plain words, naming the field or limit at fault.
    pub message: String,
}

impl ApiError {
    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// An error with any status.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

/// Errors that stop the server from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound or the connection loop failed.
    #[error("{address}: {source}")]
    Io {
        /// The address the server listens on.
        address: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A server setting is impossible.
    #[error("option --{option}: {reason}")]
    InvalidOption {
        /// The option, as `rosetta serve` spells it.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The translation options are impossible.
    #[error(transparent)]
    Infer(#[from] rosetta_infer::InferError),
}
