-- Steady mixed load for bench/soak.sh. Every call leaves the server's state where it was once
-- the warm-up is over, so memory has no legitimate reason to grow:
--   reads      get_order (a few orders), list_orders page 1, page 2 through SOAK_CURSOR
--   writes     create_instruction and send_message cycling over a fixed set of idempotency keys
--              (first use in the warm-up, replays afterwards); set_restaurant_status on
--              rst_small flipping open/paused with expected_status (a success or a conflict)
--   errors     unknown order, invalid arguments, a restaurant of another organization, a forged
--              cursor, a key reused with other arguments (soak.sh makes its first use), an
--              unknown tool, an invalid token (HTTP 401)
-- wrk reports non-2xx only in aggregate, so response() counts HTTP statuses, tool error codes and
-- replays per thread, and done() prints them as "soak: <what> <count>" lines for soak.sh.
dofile(os.getenv("BENCH_DIR") .. "/common.lua")

local cursor = os.getenv("SOAK_CURSOR") or ""

-- Weighted mix: one entry per slot, walked round-robin per thread so the mix is exact.
local C = "rst_central"
local mix = {
   { "get_order", function(n) return '{"restaurant_id":"' .. C .. '","order_id":"ord_c000' .. (n % 9 + 1) .. '"}' end },
   { "get_order", function(n) return '{"restaurant_id":"' .. C .. '","order_id":"ord_c0001"}' end },
   { "get_order", function(n) return '{"restaurant_id":"' .. C .. '","order_id":"ord_c0002"}' end },
   { "list_orders", function(n) return '{"restaurant_id":"' .. C .. '","limit":20}' end },
   { "list_orders", function(n) return '{"restaurant_id":"' .. C .. '","limit":20,"cursor":"' .. cursor .. '"}' end },
   { "get_restaurant", function(n) return '{"restaurant_id":"rst_central"}' end },
   { "create_instruction", function(n)
      local k = n % 16
      return '{"restaurant_id":"' .. C .. '","text":"Soak instruction ' .. k .. '","idempotency_key":"soak-instr-' .. k .. '"}'
   end },
   { "send_message", function(n)
      local k = n % 8
      return '{"restaurant_id":"' .. C .. '","conversation_id":"cnv_c01","text":"Soak message ' .. k .. '","idempotency_key":"soak-msg-' .. k .. '"}'
   end },
   { "set_restaurant_status", function(n)
      local to, from = "open", "paused"
      if n % 2 == 1 then to, from = "paused", "open" end
      return '{"restaurant_id":"rst_small","status":"' .. to .. '","expected_status":"' .. from .. '"}'
   end },
   -- Error paths.
   { "get_order", function(n) return '{"restaurant_id":"' .. C .. '","order_id":"ord_soakmissing' .. (n % 4) .. '"}' end },
   { "list_orders", function(n) return '{"restaurant_id":"' .. C .. '","limit":0}' end },
   { "get_order", function(n) return '{"restaurant_id":"' .. C .. '"}' end },
   { "get_restaurant", function(n) return '{"restaurant_id":"rst_rival"}' end },
   { "list_orders", function(n) return '{"restaurant_id":"' .. C .. '","limit":20,"cursor":"soakforgedcursor' .. (n % 4) .. '"}' end },
   { "create_instruction", function(n)
      -- soak.sh used this key once with another text: MCP_IDEMPOTENCY_MISMATCH, nothing stored.
      return '{"restaurant_id":"' .. C .. '","text":"Other text","idempotency_key":"soak-mismatch"}'
   end },
   { "no_such_tool", function(n) return '{}' end },
   { "get_order", function(n) return '{"restaurant_id":"' .. C .. '","order_id":"ord_c0001"}' end, "Bearer soak-invalid-token" },
}

local threads = {}
function setup(thread)
   table.insert(threads, thread)
   thread:set("thread_no", #threads)
end

local bad_headers = {}
for k, v in pairs(wrk.headers) do bad_headers[k] = v end

local n = 0
function init(args)
   n = (thread_no or 1) * 7 -- threads start at different slots
   counts = {}
end

function request()
   n = n + 1
   local entry = mix[n % #mix + 1]
   local body = tool_call(entry[1], entry[2](n))
   if entry[3] then
      bad_headers["Authorization"] = entry[3]
      return wrk.format(nil, nil, bad_headers, body)
   end
   return wrk.format(nil, nil, nil, body)
end

local function bump(key)
   counts[key] = (counts[key] or 0) + 1
end

function response(status, headers, body)
   bump("http " .. status)
   if status >= 500 then bump("5xx") end
   if status < 200 or status > 299 then bump("non-2xx") end
   if status ~= 200 then return end
   if string.find(body, '"isError":false', 1, true) then
      bump(string.find(body, '"replayed":true', 1, true) and "tool success (replayed)" or "tool success")
   else
      -- MCP_* codes, and ORDER_STATUS_PRECONDITION_FAILED (a compare-and-set lost to a racing flip)
      local code = string.match(body, '"code":"([A-Z][A-Z_]+)"')
      if code then
         bump("tool error " .. code)
      else
         local rpc = string.match(body, '"error":{"code":(%-?%d+)')
         bump(rpc and ("json-rpc error " .. rpc) or "unclassified 200")
      end
   end
end

function done(summary, latency, requests)
   local total = {}
   for _, t in ipairs(threads) do
      for k, v in pairs(t:get("counts") or {}) do total[k] = (total[k] or 0) + v end
   end
   total["5xx"] = total["5xx"] or 0
   total["non-2xx"] = total["non-2xx"] or 0
   local keys = {}
   for k in pairs(total) do table.insert(keys, k) end
   table.sort(keys)
   for _, k in ipairs(keys) do io.write(string.format("soak: %s %d\n", k, total[k])) end
   io.write(string.format("soak: calls %d\n", summary.requests))
   io.write(string.format("soak: socket errors %d\n", summary.errors.connect + summary.errors.read
      + summary.errors.write + summary.errors.timeout))
   io.write(string.format("soak: p50_ms %.2f\nsoak: p99_ms %.2f\n",
      latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
