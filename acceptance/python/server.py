"""A Chataigne restaurant MCP server on the official Python MCP SDK (the `mcp` package).

Streamable HTTP at /mcp with the SDK's stateful session manager (SSE answers), its DNS-rebinding
protection, its bearer-token middleware and RFC 9728 metadata; the 17 tools of the contract over
the published dataset, in memory. Usage: python server.py [--port N] [--log-file PATH]
[--dataset PATH]."""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import time
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
import mcp.types as types
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from catalogue import CODES, INPUT_SCHEMAS, SCOPES, TOOLS, annotations, output_schema
from guards import SlidingLogLimiter
from service import MAX_TEXT, Caller, Refusal, Restaurants, check_meaning

HERE = Path(__file__).resolve().parent
calls_log = logging.getLogger("chataigne.calls")


# --- tokens -------------------------------------------------------------------------------------

class StaticTokens:
    """The SDK's TokenVerifier protocol over this server's own static tokens, one per persona of
    the dataset: `py-token-<persona>`, with the persona's user, OAuth client, scopes and audience."""

    def __init__(self, dataset: dict, resource: str):
        self._tokens = {
            f"py-token-{p['persona']}": AccessToken(
                token=f"py-token-{p['persona']}", client_id=p["client_id"], scopes=list(p["scopes"]),
                subject=p["user_id"], resource=p.get("audience", resource))
            for p in dataset["personas"]}

    async def verify_token(self, token: str) -> AccessToken | None:
        found = self._tokens.get(token)
        return found.model_copy() if found else None


# --- the tool pipeline ----------------------------------------------------------------------------

VALIDATORS = {name: Draft202012Validator(schema) for name, schema in INPUT_SCHEMAS.items()}
PROBLEMS = {
    "required": "is missing", "type": "has the wrong type", "enum": "is not one of the allowed values",
    "minimum": "is below its minimum", "maximum": "is above its maximum", "minLength": "is too short",
    "maxLength": "is too long", "pattern": "is not in the expected form", "minItems": "has too few values",
    "maxItems": "has too many values", "uniqueItems": "holds a value twice",
}


def schema_problem(tool: str, args: Any) -> str | None:
    """A message for the first broken rule of the tool's input schema; names the argument (a name
    of our schema, never a value the caller sent) and the rule."""
    error = best_match(VALIDATORS[tool].iter_errors(args))
    if error is None:
        return None
    if error.validator == "additionalProperties":
        return "An argument this tool does not take was given."
    if error.validator == "required":
        name = next((r for r in error.validator_value if isinstance(args, dict) and r not in args), "an argument")
    else:
        name = next((p for p in error.absolute_path if isinstance(p, str)), None)
    if name is None:
        return "The arguments must be a JSON object."
    return f"The argument '{name}' {PROBLEMS.get(error.validator, 'breaks a rule of its schema')}."


class Chataigne:
    def __init__(self, dataset: dict, secret: bytes):
        self.store = Restaurants(dataset, secret)
        self.limiter = SlidingLogLimiter()

    def run(self, tool_name: str, token: AccessToken | None, args: Any):
        """Authentication → rate limit → scope → input schema → membership, ownership and role
        (in the tool) → idempotency → precondition → effect."""
        tool = TOOLS[tool_name]
        if token is None or not token.subject:
            raise Refusal("MCP_AUTHENTICATION_REQUIRED", "A valid bearer token is required.")
        caller = Caller(client=token.client_id, user=token.subject, scopes=frozenset(token.scopes))
        wait = self.limiter.admit((caller.client, caller.user, tool.name), tool.per_minute)
        if wait is not None:
            raise Refusal("MCP_RATE_LIMITED", f"Too many calls of this tool in the last minute (at most "
                          f"{tool.per_minute}). Wait before calling it again.", retry_after_ms=wait)
        if tool.scope not in caller.scopes:
            raise Refusal("MCP_SCOPE_REQUIRED", "Your token was not granted the scope this tool needs; "
                          "reconnect and consent to it.", required_scope=tool.scope)
        problem = schema_problem(tool.name, args)
        if problem is None and (bad := check_meaning(tool.name, args)) is not None:
            problem = f"The argument '{bad}' is out of its allowed range or not a real value."
        if problem:
            raise Refusal("MCP_INVALID_ARGUMENTS", problem)
        return getattr(self.store, tool.name)(caller, args)


def new_request_id() -> str:
    return "req_" + secrets.token_hex(12)


def envelope_error(code: str, message: str, request_id: str, extra: dict) -> types.CallToolResult:
    category, retryable = CODES[code]
    error = {"code": code, "category": category, "retryable": retryable, "message": message,
             "request_id": request_id, **extra}
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")],
        structured_content={"data": {"error": error}, "meta": {"request_id": request_id}},
        is_error=True,
    )


def envelope_success(answer, request_id: str) -> types.CallToolResult:
    meta: dict[str, Any] = {"request_id": request_id, "truncated": bool(answer.page and answer.page.truncated),
                            "replayed": answer.replayed}
    if answer.page and answer.page.next_cursor:
        meta["next_cursor"] = answer.page.next_cursor
    summary = answer.summary.encode()[:MAX_TEXT].decode(errors="ignore")
    return types.CallToolResult(content=[types.TextContent(text=summary)],
                                structured_content={"data": answer.data, "meta": meta})


def build_server(app: Chataigne) -> Server:
    tools = [
        types.Tool(name=t.name, title=t.name.replace("_", " "), description=t.description,
                   input_schema=INPUT_SCHEMAS[t.name], output_schema=output_schema(t.name),
                   annotations=types.ToolAnnotations(**{
                       {"readOnlyHint": "read_only_hint", "destructiveHint": "destructive_hint",
                        "idempotentHint": "idempotent_hint", "openWorldHint": "open_world_hint"}[k]: v
                       for k, v in annotations(t).items()}))
        for t in TOOLS.values()
    ]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            raise MCPError(code=INVALID_PARAMS, message="Unknown tool")
        request_id = new_request_id()
        started = time.perf_counter()
        outcome = "ok"
        try:
            with anyio.fail_after(tool.deadline_s):
                answer = app.run(tool.name, get_access_token(),
                                 params.arguments if params.arguments is not None else {})
            result = envelope_success(answer, request_id)
            if answer.replayed:
                outcome = "ok-replayed"
        except Refusal as refusal:
            outcome = refusal.code
            result = envelope_error(refusal.code, refusal.message, request_id, refusal.extra)
        except TimeoutError:
            outcome = "MCP_OUTCOME_UNKNOWN" if tool.is_write else "MCP_TOOL_TIMEOUT"
            result = envelope_error(outcome, "The call passed its deadline." + (
                " Its effect may or may not have happened: read the resource, or retry with the same "
                "idempotency key." if tool.is_write else " It is safe to retry."), request_id, {})
        except Exception as exc:  # never leak: the class name to the log, nothing to the caller
            outcome = f"MCP_INTERNAL_ERROR ({type(exc).__name__})"
            result = envelope_error("MCP_INTERNAL_ERROR", "Something went wrong on our side. Retry once; "
                                    "report the request_id if it happens again.", request_id, {})
        calls_log.info("tool=%s outcome=%s ms=%.1f request_id=%s", tool.name, outcome,
                       (time.perf_counter() - started) * 1000, request_id)
        return result

    return Server("chataigne-python", version="0.1.0",
                  instructions="Chataigne restaurant operations: orders, conversations, transcripts, "
                  "instructions and analytics of the restaurants you belong to.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def build_app(dataset: dict, port: int, secret: bytes) -> Starlette:
    """The SDK's pieces, put together the way `Server.streamable_http_app` does, except that no scope
    is required at the HTTP layer (each tool checks its own and answers MCP_SCOPE_REQUIRED) while the
    metadata still lists every scope the tools use."""
    origin = f"http://127.0.0.1:{port}"
    resource = AnyHttpUrl(f"{origin}/mcp")
    server = build_server(Chataigne(dataset, secret))
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"],
            allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
        ),
        max_request_body_size=1024 * 1024,
    )
    verifier = StaticTokens(dataset, str(resource))
    # A JSON body that is no JSON-RPC message keeps the SDK's answer (HTTP 400, -32602; JSON-RPC
    # names -32600, python-sdk#3557): the transport requires only the 4xx, which passes the seed.
    endpoint = StreamableHTTPASGIApp(manager)
    routes = [
        Route("/mcp", endpoint=RequireAuthMiddleware(endpoint, [], build_resource_metadata_url(resource))),
        *create_protected_resource_routes(resource_url=resource, authorization_servers=[AnyHttpUrl(origin)],
                                          scopes_supported=list(SCOPES), resource_name="Chataigne (Python)"),
    ]
    middleware = [
        Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier, resource_server_url=resource)),
        Middleware(AuthContextMiddleware),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lambda _app: manager.run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("CHATAIGNE_PY_PORT", "18181")))
    parser.add_argument("--log-file", default=os.environ.get("CHATAIGNE_PY_LOG", "chataigne-python.log"))
    parser.add_argument("--dataset", default=str(HERE / ".." / ".." / "fixtures" / "dataset.json"))
    options = parser.parse_args()

    handler = logging.FileHandler(options.log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("chataigne").setLevel(logging.INFO)

    with open(options.dataset, encoding="utf-8") as f:
        dataset = json.load(f)
    app = build_app(dataset, options.port, secrets.token_bytes(32))
    logging.getLogger("chataigne").info("listening on 127.0.0.1:%d", options.port)
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
