-- Load D: POST /payments with pm_card_visa, each paying one of the orders prepared by
-- `bench orders` (ids ord_ + their number in 32 hex digits); threads take disjoint
-- ranges of BENCH_ORDERS_PER_THREAD.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
require "common"
local per_thread = tonumber(os.getenv("BENCH_ORDERS_PER_THREAD") or "100000")
local threads = 0
function setup(thread)
  thread:set("base", threads * per_thread)
  threads = threads + 1
end
local n = 0
request = function()
  n = n + 1
  local order = string.format("ord_%032x", base + n)
  wrk.headers["Idempotency-Key"] = unique_prefix() .. "-" .. n
  return wrk.format("POST", "/payments", nil,
    '{"order_id":"' .. order .. '","payment_method":"pm_card_visa"}')
end
