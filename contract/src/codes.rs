//! Error codes and categories of the contract's table (§9, ENV-5).

use serde::{Deserialize, Serialize};

/// The nine error categories (ENV-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Validation,
    Authentication,
    Authorization,
    NotFound,
    Conflict,
    RateLimit,
    Timeout,
    Dependency,
    Internal,
}

impl Category {
    pub const ALL: [Category; 9] = [
        Category::Validation,
        Category::Authentication,
        Category::Authorization,
        Category::NotFound,
        Category::Conflict,
        Category::RateLimit,
        Category::Timeout,
        Category::Dependency,
        Category::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Validation => "validation",
            Category::Authentication => "authentication",
            Category::Authorization => "authorization",
            Category::NotFound => "not_found",
            Category::Conflict => "conflict",
            Category::RateLimit => "rate_limit",
            Category::Timeout => "timeout",
            Category::Dependency => "dependency",
            Category::Internal => "internal",
        }
    }
}

macro_rules! codes {
    ($($variant:ident = $text:literal, $cat:ident, $retry:literal, $msg:literal;)*) => {
        /// Every error code of §9, each with one fixed category and retryable flag.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ErrorCode {
            $(#[serde(rename = $text)] $variant,)*
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $text,)* }
            }

            pub fn category(self) -> Category {
                match self { $(ErrorCode::$variant => Category::$cat,)* }
            }

            pub fn retryable(self) -> bool {
                match self { $(ErrorCode::$variant => $retry,)* }
            }

            /// The fixed, argument-free message (ENV-6: never echo an input).
            pub fn default_message(self) -> &'static str {
                match self { $(ErrorCode::$variant => $msg,)* }
            }

            pub fn parse(text: &str) -> Option<ErrorCode> {
                match text { $($text => Some(ErrorCode::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    InvalidArguments = "MCP_INVALID_ARGUMENTS", Validation, false,
        "The arguments do not match the tool's input schema or limits";
    AuthenticationRequired = "MCP_AUTHENTICATION_REQUIRED", Authentication, false,
        "A valid access token is required";
    ScopeRequired = "MCP_SCOPE_REQUIRED", Authorization, false,
        "The access token lacks the scope this tool requires";
    ResourceForbidden = "MCP_RESOURCE_FORBIDDEN", Authorization, false,
        "The resource is unavailable or your delegated access is insufficient";
    ResourceNotFound = "MCP_RESOURCE_NOT_FOUND", NotFound, false,
        "No such resource in this restaurant";
    CursorInvalid = "MCP_CURSOR_INVALID", Validation, false,
        "The cursor is invalid or was reused with other filters; restart the pagination";
    ExpectedStateMismatch = "MCP_EXPECTED_STATE_MISMATCH", Conflict, false,
        "The resource changed since it was read; reload it before deciding";
    OrderStatusPreconditionFailed = "ORDER_STATUS_PRECONDITION_FAILED", Conflict, false,
        "The order status does not allow this transition";
    IdempotencyMismatch = "MCP_IDEMPOTENCY_MISMATCH", Conflict, false,
        "This idempotency key was used with other arguments";
    OperationInProgress = "MCP_OPERATION_IN_PROGRESS", Conflict, true,
        "The same operation is still in progress; retry after the given delay";
    RateLimited = "MCP_RATE_LIMITED", RateLimit, true,
        "Too many calls to this tool; retry after the given delay";
    ToolTimeout = "MCP_TOOL_TIMEOUT", Timeout, true,
        "The read did not complete within its deadline";
    OutcomeUnknown = "MCP_OUTCOME_UNKNOWN", Timeout, false,
        "The write did not complete within its deadline; read the resource before retrying";
    OutputTooLarge = "MCP_OUTPUT_TOO_LARGE", Validation, false,
        "The response would exceed the output limit; narrow the request";
    DependencyUnavailable = "MCP_DEPENDENCY_UNAVAILABLE", Dependency, true,
        "A backing service is unavailable; retry later";
    InternalError = "MCP_INTERNAL_ERROR", Internal, true,
        "An unexpected error occurred; retry once and report the request_id";
}

impl ErrorCode {
    /// Codes this project added (§9 **ext**): the seed names no code for these situations, so a
    /// server may refuse them with a code of its own in the same category.
    pub fn is_ext(self) -> bool {
        matches!(
            self,
            ErrorCode::InvalidArguments
                | ErrorCode::AuthenticationRequired
                | ErrorCode::RateLimited
                | ErrorCode::DependencyUnavailable
        )
    }
}

/// A code as a server wrote it: one of §9, or one of the server's own. The seed names codes for
/// some refusals only (§9 **ext**), so a code the table does not hold is data to judge — by its
/// category and flag — never a reason to stop reading the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Code {
    Known(ErrorCode),
    Other(String),
}

impl Code {
    pub fn as_str(&self) -> &str {
        match self {
            Code::Known(code) => code.as_str(),
            Code::Other(text) => text,
        }
    }

    /// The code of §9, when it is one.
    pub fn known(&self) -> Option<ErrorCode> {
        match self {
            Code::Known(code) => Some(*code),
            Code::Other(_) => None,
        }
    }
}

impl From<ErrorCode> for Code {
    fn from(code: ErrorCode) -> Self {
        Code::Known(code)
    }
}

impl PartialEq<ErrorCode> for Code {
    fn eq(&self, other: &ErrorCode) -> bool {
        self.known() == Some(*other)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_round_trips_and_matches_section_9() {
        let table: Vec<_> = ErrorCode::ALL
            .iter()
            .map(|c| format!("{} {} {}", c, c.category().as_str(), c.retryable()))
            .collect();
        insta::assert_snapshot!(table.join("\n"));
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
    }

    #[test]
    fn a_code_outside_the_table_is_read_as_data() {
        let known: Code = serde_json::from_str("\"MCP_CURSOR_INVALID\"").unwrap();
        assert_eq!(known, ErrorCode::CursorInvalid);
        let other: Code = serde_json::from_str("\"INVALID_ARGUMENT\"").unwrap();
        assert_eq!(other, Code::Other("INVALID_ARGUMENT".into()));
        assert_eq!(other.known(), None);
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"INVALID_ARGUMENT\"");
        assert_eq!(serde_json::to_string(&known).unwrap(), "\"MCP_CURSOR_INVALID\"");
    }
}
