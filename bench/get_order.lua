-- get_order of rst_central's newest order, the same body every request.
dofile(os.getenv("BENCH_DIR") .. "/common.lua")
wrk.body = tool_call("get_order", '{"restaurant_id":"rst_central","order_id":"ord_c0001"}')
