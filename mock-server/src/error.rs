//! The one error type of a tool call, and the one place it becomes the contract's envelope.

use chataigne_contract::ErrorCode;
use chataigne_contract::envelope::ErrorBody;

/// Why a tool call failed. Carries only safe text: never an argument value (ENV-6).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}")]
pub struct ToolError {
    pub code: ErrorCode,
    pub retry_after_ms: Option<u64>,
    pub required_scope: Option<String>,
    /// Where the arguments fail (JSON pointers and keywords), for MCP_INVALID_ARGUMENTS.
    pub detail: Option<String>,
}

impl ToolError {
    pub fn new(code: ErrorCode) -> Self {
        ToolError { code, retry_after_ms: None, required_scope: None, detail: None }
    }

    pub fn retry_after(code: ErrorCode, ms: u64) -> Self {
        ToolError { retry_after_ms: Some(ms.max(1)), ..ToolError::new(code) }
    }

    pub fn invalid(detail: impl Into<String>) -> Self {
        ToolError { detail: Some(detail.into()), ..ToolError::new(ErrorCode::InvalidArguments) }
    }

    pub fn body(&self, request_id: &str) -> ErrorBody {
        let mut body = ErrorBody::new(self.code, request_id);
        if let Some(detail) = &self.detail {
            body.message = format!("{}: {detail}", body.message);
        }
        body.retry_after_ms = self.retry_after_ms;
        body.required_scope = self.required_scope.clone();
        body
    }
}

impl From<ErrorCode> for ToolError {
    fn from(code: ErrorCode) -> Self {
        ToolError::new(code)
    }
}
