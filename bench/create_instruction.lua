-- A keyed write: create_instruction with a fresh idempotency key per request, built from the
-- thread number, a per-run nonce and a counter, so every call is a first use (IDEM-1), never a
-- replay.
dofile(os.getenv("BENCH_DIR") .. "/common.lua")
local threads = 0
local nonce = tostring(os.time())

function setup(thread)
   threads = threads + 1
   thread:set("thread_no", threads)
end

local counter = 0
function request()
   counter = counter + 1
   local key = string.format("bench-%s-%d-%d", nonce, thread_no or 0, counter)
   local body = tool_call("create_instruction",
      '{"restaurant_id":"rst_central","text":"Bench instruction","idempotency_key":"' .. key .. '"}')
   return wrk.format(nil, nil, nil, body)
end
