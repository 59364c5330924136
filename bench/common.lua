-- Shared by the wrk scripts of bench/load.sh: a JSON-RPC POST to /mcp with the headers a
-- Streamable HTTP client sends and the owner persona's development token.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.headers["Authorization"] = "Bearer dev-token-owner"

function tool_call(name, arguments)
   return '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' .. name
      .. '","arguments":' .. arguments .. '}}'
end
