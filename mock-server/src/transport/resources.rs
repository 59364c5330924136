//! The resources the server serves (`resources/list`, `resources/templates/list`,
//! `resources/read`): the contract's text, and each restaurant through the template
//! `chataigne://restaurants/{restaurant_id}`, whose read *is* a `get_restaurant` call (the caller's
//! token, the whole pipeline, its rate window and log line). What is absent, foreign or malformed
//! reads as one "resource not found" carrying the URI (SEP-2164), so a read tells no more than
//! the tool does.

use rmcp::ErrorData;
use rmcp::model::{ErrorCode as RpcCode, ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::json;

use chataigne_contract::ErrorCode;

use crate::error::ToolError;

pub const CONTRACT_URI: &str = "chataigne://contract";
pub const RESTAURANT_PREFIX: &str = "chataigne://restaurants/";

const CONTRACT: &str = include_str!("../../../docs/CONTRACT.md");

/// The `resources/list` entries: the documents every caller may read.
pub fn list() -> Vec<Resource> {
    vec![
        Resource::new(CONTRACT_URI, "contract")
            .with_title("The Chataigne restaurant contract")
            .with_description(
                "The normative contract the tools follow: clauses, envelope, error codes, limits",
            )
            .with_mime_type("text/markdown")
            .with_size(CONTRACT.len() as u64),
    ]
}

/// A restaurant as a `resources/list` entry (only the `resources-list-every-restaurant` defect
/// lists restaurants: the healthy list has the contract alone, restaurants by template).
pub fn restaurant_entry(id: &str, name: &str) -> Resource {
    Resource::new(format!("{RESTAURANT_PREFIX}{id}"), name).with_mime_type("application/json")
}

/// The `resources/templates/list` entries.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{RESTAURANT_PREFIX}{{restaurant_id}}"), "restaurant")
            .with_title("A restaurant")
            .with_description(
                "A restaurant you may read, as get_restaurant answers it (its envelope: data.restaurant and \
                 meta.request_id); read through the same checks and rate limit as the tool",
            )
            .with_mime_type("application/json"),
    ]
}

/// What a URI names.
pub enum Target<'a> {
    Contract,
    /// A restaurant: the rest of the URI, checked by the pipeline as `restaurant_id`.
    Restaurant(&'a str),
    Unknown,
}

pub fn target(uri: &str) -> Target<'_> {
    if uri == CONTRACT_URI {
        return Target::Contract;
    }
    match uri.strip_prefix(RESTAURANT_PREFIX) {
        Some(id) if !id.is_empty() => Target::Restaurant(id),
        _ => Target::Unknown,
    }
}

pub fn contract() -> ReadResourceResult {
    ReadResourceResult::new(vec![
        ResourceContents::text(CONTRACT, CONTRACT_URI).with_mime_type("text/markdown"),
    ])
}

/// A restaurant's envelope as the resource's one JSON text.
pub fn restaurant(uri: &str, envelope: &serde_json::Value) -> ReadResourceResult {
    ReadResourceResult::new(vec![
        ResourceContents::text(envelope.to_string(), uri).with_mime_type("application/json"),
    ])
}

/// Nothing readable at `uri`: -32602 for 2026-07-28 peers, -32002 for older ones (rmcp picks the
/// code by revision, as each revision's specification says), `data.uri` either way.
pub fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found("resource not found", Some(json!({ "uri": uri })))
}

/// A tool error on a restaurant read. Absent, foreign and malformed IDs are all "not found" (as
/// absent and foreign are one refusal for the tool); any other refusal (rate limit, scope,
/// deadline, internal) is -32603 carrying the contract's error, with its `request_id`.
pub fn refused(uri: &str, request_id: &str, error: &ToolError) -> ErrorData {
    match error.code {
        ErrorCode::ResourceForbidden | ErrorCode::ResourceNotFound | ErrorCode::InvalidArguments => {
            not_found(uri)
        }
        code => ErrorData::new(
            RpcCode::INTERNAL_ERROR,
            code.as_str(),
            Some(json!({ "uri": uri, "error": error.body(request_id) })),
        ),
    }
}
