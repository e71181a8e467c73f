-- Load C: 90 % new keys, 10 % retries of one of this thread's last 1000 keys.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
require "common"
local n, recent = 0, {}
request = function()
  local key
  if n > 0 and math.random() < 0.1 then
    key = recent[math.random(math.min(n, 1000))]
  else
    n = n + 1
    key = unique_prefix() .. "-" .. n
    recent[(n - 1) % 1000 + 1] = key
  end
  wrk.headers["Idempotency-Key"] = key
  return wrk.format("POST", "/orders", nil, order_body)
end
