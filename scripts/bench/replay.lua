-- Load B: the same finished key again and again: every answer is a replay.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
require "common"
wrk.method = "POST"
wrk.path = "/orders"
wrk.body = order_body
wrk.headers["Idempotency-Key"] = "bench-replay"
