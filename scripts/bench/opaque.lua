-- wrk script: every request carries the same opaque (non-JWS) access token, for the
-- cached-introspection benchmark (BENCH_OPAQUE_TOKEN, default "opaque-bench-token-0001").
local token = os.getenv("BENCH_OPAQUE_TOKEN") or "opaque-bench-token-0001"
function request()
  return wrk.format("GET", "/", { ["Authorization"] = "Bearer " .. token })
end
