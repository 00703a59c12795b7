-- wrk script: like shared/bench/wrk/auth.lua, plus a unique token per request when
-- BENCH_TOKENS_FILE (one JWT per line) is set; BENCH_TOKENS_FILE_ES256 is used instead for the
-- HAProxy ES256 frontend (port 18084). Prints the same BENCHJSON line.
local function read_lines(path)
  local lines = {}
  local f = io.open(path, "rb")
  if not f then return lines end
  for line in f:lines() do if #line > 0 then lines[#lines + 1] = line end end
  f:close()
  return lines
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local tokens = {}
local index = 0
local body = nil
local method = os.getenv("BENCH_METHOD") or "GET"
local headers = {}

function init(args)
  local file = os.getenv("BENCH_TOKENS_FILE")
  if wrk.port == "18084" and os.getenv("BENCH_TOKENS_FILE_ES256") then file = os.getenv("BENCH_TOKENS_FILE_ES256") end
  if file then tokens = read_lines(file) end
  if #tokens == 0 then
    local single = os.getenv("BENCH_TOKEN")
    if (single == nil or single == "") and os.getenv("BENCH_TOKEN_FILE") then single = read_file(os.getenv("BENCH_TOKEN_FILE")) end
    if single then tokens = { (single:gsub("%s+", "")) } end
  end
  local n = tonumber(os.getenv("BENCH_BODY_BYTES") or "0") or 0
  if n > 0 then
    body = string.rep("x", n)
    headers["Content-Type"] = "application/octet-stream"
  end
  -- start each connection-thread at a different place in the list
  index = math.random(1, math.max(#tokens, 1))
end

function request()
  index = index + 1
  if index > #tokens then index = 1 end
  headers["Authorization"] = "Bearer " .. tokens[index]
  return wrk.format(method, nil, headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"rps":%.1f,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes, summary.requests / secs,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
