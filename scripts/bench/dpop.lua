-- wrk script: DPoP-bound requests from BENCH_DPOP_FILE (scripts/bench/make_dpop_requests.py:
-- the bound token, then one proof per line). Each request sends `Authorization: DPoP <token>`
-- and the next unused proof. BENCH_PHASE=measure starts at the second half of the proofs, so
-- a warm-up run (the first half) and the measured run never replay each other's proofs.
-- One thread (wrk -t1) only: threads would share the list.
local proofs = {}
local token = nil
local index = 0
local last = 0

function init(args)
  local f = assert(io.open(os.getenv("BENCH_DPOP_FILE"), "rb"))
  token = f:read("*l")
  for line in f:lines() do if #line > 0 then proofs[#proofs + 1] = line end end
  f:close()
  local half = math.floor(#proofs / 2)
  if os.getenv("BENCH_PHASE") == "measure" then index, last = half, #proofs else index, last = 0, half end
end

function request()
  index = index + 1
  if index > last then
    -- Out of fresh proofs: a replay would be refused (401), which the summary then shows.
    index = last
  end
  return wrk.format("GET", "/", { ["Authorization"] = "DPoP " .. token, ["DPoP"] = proofs[index] })
end
