-- First page of list_orders (20 orders). LIST_RESTAURANT picks the restaurant (default
-- rst_central); bench/load.sh uses rst_large for the 1,000 vs 1,000,000 orders comparison.
dofile(os.getenv("BENCH_DIR") .. "/common.lua")
local restaurant = os.getenv("LIST_RESTAURANT") or "rst_central"
local cursor = os.getenv("LIST_CURSOR")
local extra = cursor and (',"cursor":"' .. cursor .. '"') or ""
wrk.body = tool_call("list_orders", '{"restaurant_id":"' .. restaurant .. '","limit":20' .. extra .. '}')
