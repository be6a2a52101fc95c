//! Why a GitHub call failed, in the terms callers act on (retry later, look before creating
//! again, give up).

use std::time::Duration;

/// Why a call failed. No variant holds a token, and none holds request content.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// GitHub answered with an error status.
    #[error("GitHub {op} failed: HTTP {status}: {message}")]
    Status {
        op: &'static str,
        status: u16,
        /// GitHub's `message` field, when the answer had one.
        message: String,
    },
    /// A content-creating call may or may not have taken effect (timeout, 5xx): look before
    /// creating again.
    #[error("GitHub {op}: the outcome is unknown ({reason}); not repeated blindly")]
    Ambiguous { op: &'static str, reason: String },
    /// GitHub's rate limit asks for a longer wait than the policy sits out.
    #[error("GitHub {op}: rate limited for another {}s", retry_after.as_secs())]
    RateLimited {
        op: &'static str,
        retry_after: Duration,
    },
    /// The request could not be sent or the answer not read.
    #[error("GitHub {op}: {message}")]
    Transport { op: &'static str, message: String },
    /// The answer was not what the API describes.
    #[error("GitHub {op}: unexpected response: {message}")]
    Decode { op: &'static str, message: String },
    /// The App JWT could not be made, or no credentials are configured.
    #[error("GitHub App authentication: {0}")]
    Auth(String),
    /// A repository path with a `.` or `..` segment: refused before any request is made.
    #[error("GitHub {op}: refused the path {path:?}: it has a `.` or `..` segment")]
    UnsafePath { op: &'static str, path: String },
    /// A file larger than the caller reads: refused on GitHub's stated size, before its
    /// bytes are downloaded.
    #[error("GitHub {op}: the file is {size} bytes, more than the {limit} bytes read")]
    TooLarge {
        op: &'static str,
        size: u64,
        limit: usize,
    },
}

impl ClientError {
    /// Whether a later attempt would fail the same way: GitHub refused the request itself (a
    /// malformed or unprocessable request, a missing installation or resource, no permission),
    /// or the bot cannot authenticate at all. Server errors, timeouts and rate limits are not.
    pub fn is_permanent(&self) -> bool {
        match self {
            ClientError::Status { status, .. } => matches!(status, 400 | 403 | 404 | 410 | 422),
            ClientError::Auth(_)
            | ClientError::UnsafePath { .. }
            | ClientError::TooLarge { .. } => true,
            ClientError::Ambiguous { .. }
            | ClientError::RateLimited { .. }
            | ClientError::Transport { .. }
            | ClientError::Decode { .. } => false,
        }
    }

    /// The HTTP status, for errors that have one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}
