//! The MCP face of the server (rmcp's `ServerHandler`): `tools/list` from the contract's
//! catalogue, `tools/call` through the pipeline, and the one place a tool outcome becomes the
//! contract's envelope; resources and prompts (`resources`, `prompts`). Also the per-call log
//! line and the error report of an internal error, which name no argument (SEC-1).

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use chataigne_contract::envelope::{self, Meta};
use chataigne_contract::{ErrorCode, MAX_STRUCTURED_BYTES, MAX_SUMMARY_BYTES, ToolName};
use futures::FutureExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode as RpcCode,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::app::App;
use crate::auth::Principal;
use crate::error::ToolError;
use crate::pipeline::{self, Outcome, UnknownTool};
use crate::reporting::Cause;
use crate::transport::prompts;
use crate::transport::resources::{self, Target};

/// The request ID the HTTP gate minted, so the header and the envelope agree (ENV-2).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

pub fn new_request_id() -> String {
    use rand::Rng;
    use rand::distr::Alphanumeric;
    let tail: String = rand::rng().sample_iter(&Alphanumeric).take(20).map(char::from).collect();
    format!("req_{tail}")
}

#[derive(Clone)]
pub struct Handler {
    app: Arc<App>,
    /// stdio only: the principal of `CHATAIGNE_TOKEN`, if valid.
    stdio_principal: Option<Principal>,
}

impl Handler {
    pub fn http(app: Arc<App>) -> Handler {
        Handler { app, stdio_principal: None }
    }
}

pub async fn serve_stdio(app: Arc<App>, token: Option<String>) -> anyhow::Result<()> {
    let stdio_principal = token.and_then(|t| app.tokens.check(&t));
    let service = Handler { app, stdio_principal }.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

/// The tools/list entries: the contract's descriptors, as published and validated.
pub fn tool_descriptors(app: &App) -> Vec<Value> {
    let mut tools: Vec<Value> = ToolName::ALL
        .iter()
        .map(|t| {
            let mut d = t.descriptor();
            d["inputSchema"] = app.input_schema(*t);
            if app.variants.any() {
                d["outputSchema"] = app.variants.output_schema(*t);
            }
            d
        })
        .collect();
    tools.extend(app.defects.extra_tools());
    tools
}

impl ServerHandler for Handler {
    // Logging is deprecated (SEP-2577) but still probed by generic clients and the official
    // conformance suite; it is accepted and changes nothing (our logs are the server's own).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        // Every capability advertised is served (tests/it/capabilities.rs): tools; resources (the
        // contract's text, each restaurant by template) and prompts (guides to the tools);
        // logging, accepted as a no-op. No subscriptions, no list-changed notifications.
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .enable_logging()
            .build();
        if self.app.defects.hides_prompts_capability() {
            capabilities.prompts = None;
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("chataigne-mock", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Chataigne restaurant tools. Lists page with meta.next_cursor; writes need expected_status \
                 or an idempotency_key. Keep meta.request_id to report a problem.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(self.app.defects.protocol_versions())
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.app.defects.logging_unserved() {
            return Err(ErrorData::new(RpcCode::METHOD_NOT_FOUND, "logging/setLevel", None));
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = tool_descriptors(&self.app)
            .into_iter()
            .map(serde_json::from_value::<Tool>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| ErrorData::internal_error("tool catalogue", None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (principal, request_id) = self.caller(&context);
        let (outcome, args) =
            self.run(principal.as_ref(), &request_id, &request.name, request.arguments).await;
        match outcome {
            Ok(Err(e)) if self.app.defects.failure_as_rpc_error(e.code) => {
                Err(ErrorData::internal_error(e.code.as_str(), None))
            }
            Ok(outcome) => Ok(to_result(&self.app, &request_id, outcome, &args).into()),
            Err(UnknownTool) if self.app.defects.unknown_tool_as_method() => {
                Err(ErrorData::new(RpcCode::METHOD_NOT_FOUND, "unknown tool", None))
            }
            // PROTO-2: the tool name is a parameter; the name is not echoed.
            Err(UnknownTool) => Err(ErrorData::invalid_params("unknown tool", None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut listed = resources::list();
        if self.app.defects.lists_every_restaurant() {
            let store = self.app.store.read();
            listed.extend(store.restaurants.values().map(|r| resources::restaurant_entry(&r.id, &r.name)));
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut templates = resources::templates();
        if self.app.defects.export_template() {
            // Listed only: advertising the operation is the defect (ABS-1 judges what is offered).
            templates.push(
                rmcp::model::ResourceTemplate::new(
                    "chataigne://exports/{restaurant_id}/orders.csv",
                    "orders export",
                )
                .with_mime_type("text/csv"),
            );
        }
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        if self.app.defects.export_template() && uri.starts_with("chataigne://exports/") {
            // The `export-template` defect serves what it lists: an export's header line.
            let csv = rmcp::model::ResourceContents::text("id,status,total_cents\n", uri)
                .with_mime_type("text/csv");
            return Ok(rmcp::model::ReadResourceResult::new(vec![csv]).into());
        }
        let id = match resources::target(uri) {
            Target::Contract => return Ok(resources::contract().into()),
            Target::Unknown => return Err(resources::not_found(uri)),
            Target::Restaurant(id) => id,
        };
        // A restaurant's read is get_restaurant's call, with every check of the pipeline.
        let (principal, request_id) = self.caller(&context);
        if self.app.defects.resource_read_unchecked() {
            // The `foreign-resource-read` defect: a handler that reads the store around the
            // pipeline, so any restaurant is served to any caller.
            let found = self.app.store.read().restaurant(id).map(serde_json::to_value);
            if let Some(Ok(restaurant)) = found {
                let envelope =
                    json!({ "data": { "restaurant": restaurant }, "meta": { "request_id": request_id } });
                return Ok(resources::restaurant(uri, &envelope).into());
            }
        }
        let arguments = serde_json::Map::from_iter([("restaurant_id".to_owned(), Value::from(id))]);
        let (outcome, args) =
            self.run(principal.as_ref(), &request_id, "get_restaurant", Some(arguments)).await;
        match outcome {
            Ok(Ok(output)) => {
                let result = to_result(&self.app, &request_id, Ok(output), &args);
                // to_result turns a success over the size limit into MCP_OUTPUT_TOO_LARGE (ENV-3).
                if result.is_error == Some(true) {
                    return Err(resources::refused(
                        uri,
                        &request_id,
                        &ToolError::new(ErrorCode::OutputTooLarge),
                    ));
                }
                let mut envelope = result.structured_content.unwrap_or_default();
                if let (Some(stale), Some(status)) =
                    (self.app.defects.resource_status(), envelope.pointer_mut("/data/restaurant/status"))
                {
                    *status = stale.into();
                }
                Ok(resources::restaurant(uri, &envelope).into())
            }
            Ok(Err(error))
                if self.app.defects.resource_read_oracle()
                    && error.code == ErrorCode::ResourceForbidden
                    && self.app.store.read().restaurant(id).is_some() =>
            {
                Err(ErrorData::internal_error(ErrorCode::ResourceForbidden.as_str(), None))
            }
            Ok(Err(error))
                if self.app.defects.resource_read_late() && error.code == ErrorCode::ToolTimeout =>
            {
                // The `resource-read-late` defect: a read past the tool's deadline waits for the
                // store instead, and serves the restaurant late.
                let found = self.app.store.read().restaurant(id).map(serde_json::to_value);
                match found {
                    Some(Ok(restaurant)) => {
                        let envelope = json!({ "data": { "restaurant": restaurant }, "meta": { "request_id": request_id } });
                        Ok(resources::restaurant(uri, &envelope).into())
                    }
                    _ => Err(resources::refused(uri, &request_id, &error)),
                }
            }
            Ok(Err(error)) => Err(resources::refused(uri, &request_id, &error)),
            Err(UnknownTool) => Err(ErrorData::internal_error("get_restaurant", None)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if self.app.defects.prompt_get_unserved() {
            return Err(ErrorData::new(RpcCode::METHOD_NOT_FOUND, "prompts/get", None));
        }
        let unknown = self.app.defects.unknown_prompt_internal() && !prompts::exists(&request.name);
        if unknown {
            return Err(ErrorData::internal_error("internal error", None));
        }
        // The `unknown-prompt-first` defect: an unknown name falls back to the first prompt.
        let name = match prompts::exists(&request.name) {
            false if self.app.defects.unknown_prompt_first() => prompts::first(),
            _ => request.name.as_str(),
        };
        prompts::get(name, request.arguments.as_ref()).map(Into::into)
    }
}

impl Handler {
    /// Who calls, and the request ID of the call: the gate's principal and ID over HTTP (so the
    /// header and the envelope agree, ENV-2); over stdio the token's principal and a fresh ID.
    fn caller(&self, context: &RequestContext<RoleServer>) -> (Option<Principal>, String) {
        let parts = context.extensions.get::<http::request::Parts>();
        let mut principal = match parts {
            Some(parts) => parts.extensions.get::<Principal>().cloned(),
            None => self.stdio_principal.clone(),
        };
        let version = parts.and_then(|p| p.headers.get("mcp-protocol-version")).and_then(|v| v.to_str().ok());
        if let Some(p) = principal.as_mut().filter(|_| self.app.defects.skips_scopes_for(version)) {
            p.scopes = ToolName::ALL.iter().map(|t| t.scope().to_owned()).collect();
        }
        let request_id =
            parts.and_then(|p| p.extensions.get::<RequestId>()).map_or_else(new_request_id, |r| r.0.clone());
        (principal, request_id)
    }

    /// One tool call through the pipeline, logged, and reported when it ends in an internal
    /// error: the one path of `tools/call` and of a restaurant resource's read. Also returns the
    /// arguments the defect modes read after the pipeline (`Null` without defects).
    async fn run(
        &self,
        principal: Option<&Principal>,
        request_id: &str,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> (Result<Outcome, UnknownTool>, Value) {
        let started = Instant::now();
        // Only the defect modes read the arguments after the pipeline: no copy otherwise.
        let args = match self.app.defects.any() {
            true => Value::Object(arguments.clone().unwrap_or_default()),
            false => Value::Null,
        };
        // Boxed: rmcp moves the request future between its per-request tasks, so a small
        // future is cheaper to carry than the pipeline's whole state inline.
        let call = Box::pin(pipeline::call(&self.app, principal, name, arguments));
        // A panic in a read ends the call here as MCP_INTERNAL_ERROR with its envelope (a
        // write's effect runs in a task of its own, whose panic the pipeline already maps).
        let (outcome, cause) = match AssertUnwindSafe(call).catch_unwind().await {
            Ok(outcome) => (outcome, Cause::Error),
            Err(_panic) => (Ok(Err(ErrorCode::InternalError.into())), Cause::Panic),
        };
        let (tool, outcome_name) = match &outcome {
            Err(UnknownTool) => ("unknown", "unknown_tool"),
            Ok(Ok(_)) => (name, "ok"),
            Ok(Err(e)) => (name, e.code.as_str()),
        };
        log_call(&self.app, request_id, tool, principal, outcome_name, started, &args);
        if let Ok(Err(error)) = &outcome
            && error.code == ErrorCode::InternalError
        {
            // One event per internal error, next to its envelope: request_id, tool, code only.
            self.app.reporter.internal_error(request_id, name, cause, &args);
        }
        (outcome, args)
    }
}

/// The one place an outcome becomes the envelope (ENV-1, ENV-4) and its limits hold (ENV-3).
pub fn to_result(app: &App, request_id: &str, outcome: Outcome, args: &Value) -> CallToolResult {
    let (mut structured, summary, is_error) = match outcome {
        Ok(out) => {
            let meta = Meta {
                truncated: app.defects.truncated(out.truncated, out.next_cursor.is_some()),
                next_cursor: out.next_cursor,
                replayed: out.replayed,
                ..Meta::new(request_id)
            };
            let structured = envelope::success(out.data, &meta);
            if envelope::json_len(&structured) > MAX_STRUCTURED_BYTES && !app.defects.no_truncation() {
                error_parts(request_id, ToolError::new(ErrorCode::OutputTooLarge))
            } else {
                (structured, out.summary, false)
            }
        }
        Err(error) => error_parts(request_id, error),
    };
    let mut summary = Some(cut(summary, MAX_SUMMARY_BYTES));
    if is_error && app.variants.any() {
        app.variants.envelope(&mut structured, app.clock.now_ms());
    }
    app.defects.envelope(&mut structured, &mut summary, args);
    // Built by hand: rmcp's `structured` constructors also serialize the value into a text
    // block, which the summary replaces anyway.
    let extra = app.defects.extra_text(&structured, is_error);
    let content = summary.into_iter().chain(extra).map(ContentBlock::text).collect();
    let mut result = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    result.structured_content = Some(structured);
    result
}

fn error_parts(request_id: &str, error: ToolError) -> (Value, String, bool) {
    let body = error.body(request_id);
    let summary = format!("{}: {} (request_id {request_id})", body.code, body.message);
    (envelope::error(&body), summary, true)
}

/// Cut a text to at most `max` bytes on a character boundary.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        text.truncate(text.floor_char_boundary(max));
    }
    text
}

/// One line per call: who, which tool, how it ended, how long. Never the arguments (SEC-1).
fn log_call(
    app: &App,
    request_id: &str,
    tool: &str,
    p: Option<&Principal>,
    outcome: &str,
    started: Instant,
    args: &Value,
) {
    let latency_ms = started.elapsed().as_millis() as u64;
    let client_id = p.map_or("", |p| p.client_id.as_str());
    let user_id = p.map_or("", |p| p.user_id.as_str());
    // The defect modes that leak on purpose, so the suite's canary check can catch them.
    for (field, argument) in app.defects.leaked_to_log() {
        let leaked = args.get(*argument).and_then(Value::as_str).unwrap_or_default();
        tracing::info!(request_id, field, value = %leaked, "leaked on purpose (defect mode)");
    }
    tracing::info!(request_id, tool, client_id, user_id, outcome, latency_ms, "tool call");
}
