-- Shared by the wrk scripts of scripts/bench.sh: the demo merchant's headers and a
-- prefix unique to this run and thread, so keys never collide across runs or threads.
wrk.headers["Authorization"] = "Bearer sk_test_demo"
wrk.headers["Content-Type"] = "application/json"
order_body = '{"amount":1999,"currency":"EUR","metadata":{"cart":"c_1"}}'
prefix = nil

function unique_prefix()
  if prefix == nil then
    prefix = (os.getenv("BENCH_RUN") or "run") .. "-" .. tostring({}):sub(8)
  end
  return prefix
end
