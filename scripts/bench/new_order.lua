-- Load A: every request is a new order under a new Idempotency-Key.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
require "common"
local n = 0
request = function()
  n = n + 1
  wrk.headers["Idempotency-Key"] = unique_prefix() .. "-" .. n
  return wrk.format("POST", "/orders", nil, order_body)
end
