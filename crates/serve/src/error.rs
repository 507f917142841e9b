//! Errors of the server: a request that cannot be answered becomes a JSON body
//! `{"error": "..."}` with a 4xx or 5xx status, the shape LibreTranslate's clients read.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A request refused or failed: what kind of fault it is (which decides the status, in
/// [`ApiError::status`], the one place statuses are chosen) and the message the client sees,
/// naming the field or limit at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed: not JSON, a field of the wrong type, a language the server
    /// does not translate (400).
    #[error("{0}")]
    BadRequest(String),
    /// The server requires an API key and the request has none (401, with
    /// `WWW-Authenticate: Bearer`).
    #[error("{0}")]
    Unauthorized(String),
    /// The request's API key, or admin key, is not one the server knows (403).
    #[error("{0}")]
    Forbidden(String),
    /// No such endpoint (404).
    #[error("{0}")]
    NotFound(String),
    /// The endpoint takes another method (405).
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The request is over a limit of the server: body bytes, sentences, characters (413).
    #[error("{0}")]
    TooLarge(String),
    /// The request is well-formed but asks for what cannot be done (an impossible decoding
    /// option) (422).
    #[error("{0}")]
    Unprocessable(String),
    /// The server's queue is full: try again after `retry_after` seconds (429 with
    /// `Retry-After`).
    #[error("the server is busy (its queue is full); try again in {retry_after} s")]
    Busy {
        /// Seconds to wait before retrying.
        retry_after: u64,
    },
    /// The client is over its limit of requests or characters per minute: try again after
    /// `retry_after` seconds (429 with `Retry-After`).
    #[error("{message}")]
    RateLimited {
        /// Which limit, and when to try again.
        message: String,
        /// Seconds to wait before retrying.
        retry_after: u64,
    },
    /// The request was not answered within the server's deadline (504).
    #[error("{0}")]
    Timeout(String),
    /// The server is stopping (503).
    #[error("{0}")]
    Unavailable(String),
    /// The server's own fault (500).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// [`ApiError::BadRequest`].
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::BadRequest(message.into())
    }

    /// The HTTP status of the fault.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Busy { .. } | ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<rosetta_infer::InferError> for ApiError {
    /// A translation option the request made impossible is the request's fault (422), a request
    /// the model cannot answer (an attention map of nothing) too (400); anything else is the
    /// server's (500).
    fn from(error: rosetta_infer::InferError) -> Self {
        match error {
            rosetta_infer::InferError::InvalidOption { .. } => {
                Self::Unprocessable(error.to_string())
            }
            rosetta_infer::InferError::Request(message) => Self::BadRequest(message),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = Json(serde_json::json!({ "error": self.to_string() }));
        match self {
            ApiError::Busy { retry_after } | ApiError::RateLimited { retry_after, .. } => (
                status,
                [(header::RETRY_AFTER, retry_after.to_string())],
                body,
            )
                .into_response(),
            ApiError::Unauthorized(_) => (
                status,
                [(header::WWW_AUTHENTICATE, "Bearer".to_string())],
                body,
            )
                .into_response(),
            _ => (status, body).into_response(),
        }
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
    /// A file the server reads at start (API keys, the models file) is missing or malformed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, with the line where there is one.
        reason: String,
    },
    /// The models cannot be served as given (no model, two with one id or one language pair,
    /// one that fails to load at start).
    #[error("{0}")]
    Models(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full queue is 429 with the seconds to wait; each kind has its status.
    #[test]
    fn every_kind_has_its_status_and_a_json_message() {
        let busy = ApiError::Busy { retry_after: 2 }.into_response();
        assert_eq!(busy.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(busy.headers()[header::RETRY_AFTER], "2");
        let limited = ApiError::RateLimited {
            message: "x".into(),
            retry_after: 7,
        }
        .into_response();
        assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(limited.headers()[header::RETRY_AFTER], "7");
        let unauthorized = ApiError::Unauthorized("x".into()).into_response();
        assert_eq!(unauthorized.headers()[header::WWW_AUTHENTICATE], "Bearer");
        for (error, status) in [
            (ApiError::bad_request("x"), 400),
            (ApiError::Unauthorized("x".into()), 401),
            (ApiError::Forbidden("x".into()), 403),
            (ApiError::NotFound("x".into()), 404),
            (ApiError::MethodNotAllowed("x".into()), 405),
            (ApiError::TooLarge("x".into()), 413),
            (ApiError::Unprocessable("x".into()), 422),
            (ApiError::Unavailable("x".into()), 503),
            (ApiError::Timeout("x".into()), 504),
            (ApiError::Internal("x".into()), 500),
        ] {
            assert_eq!(error.status().as_u16(), status, "{error:?}");
            assert!(
                error
                    .into_response()
                    .headers()
                    .get(header::RETRY_AFTER)
                    .is_none()
            );
        }
        // An impossible option is the request's fault, not the server's.
        let option = rosetta_infer::InferError::InvalidOption {
            option: "beam",
            reason: "is 0".into(),
        };
        assert_eq!(
            ApiError::from(option).status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
