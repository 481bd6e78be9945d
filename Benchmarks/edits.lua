-- wrk script for POST /fields. Run with as many threads as connections (-t N -c N): each wrk
-- thread then has one connection and one form token, so its edits reach the server in order
-- and `seq` (a per-thread counter) always increases per field per session.
--
--   wrk -t 50 -c 50 -d 10s --latency -s Benchmarks/edits.lua http://127.0.0.1:PORT/fields -- TOKENS_FILE [SEQ_BASE]
--
-- TOKENS_FILE holds real tokens (from GET /), one per line; thread i uses line i (wrapping).
-- Each edit sets `password`, alternating between a weak and a strong value, so every edit
-- changes requirements and strength and produces events on the session's streams.

local threads = {}
local count = 0

function setup(thread)
  count = count + 1
  thread:set("thread_index", count)
  table.insert(threads, thread)
end

function init(args)
  local path = args[1] or os.getenv("TOKENS_FILE")
  local file = assert(io.open(path, "r"), "cannot open tokens file " .. tostring(path))
  local list = {}
  for line in file:lines() do
    if #line > 0 then list[#list + 1] = line end
  end
  file:close()
  assert(#list > 0, "no tokens in " .. path)
  token = list[((thread_index - 1) % #list) + 1]
  seq = tonumber(args[2] or "0")
  applied = 0
  stale = 0
  unexpected = 0
  values = { "abc", "Abcdefgh-472" }
  headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
end

function request()
  seq = seq + 1
  local body = "token=" .. token .. "&field=password&value=" .. values[(seq % 2) + 1] .. "&seq=" .. seq
  return wrk.format("POST", "/fields", headers, body)
end

function response(status, _, body)
  if status == 202 then
    if string.find(body, '"applied":true', 1, true) then
      applied = applied + 1
    else
      stale = stale + 1
    end
  else
    unexpected = unexpected + 1
  end
end

function done(summary, latency, requests)
  local applied_total, stale_total, unexpected_total, last_seq = 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    applied_total = applied_total + thread:get("applied")
    stale_total = stale_total + thread:get("stale")
    unexpected_total = unexpected_total + thread:get("unexpected")
    last_seq = math.max(last_seq, thread:get("seq"))
  end
  local e = summary.errors
  io.write(string.format(
    'JSON {"duration_us":%d,"requests":%d,"bytes":%d,"applied":%d,"stale":%d,"non_202":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d},"last_seq":%d}\n',
    summary.duration, summary.requests, summary.bytes, applied_total, stale_total, unexpected_total,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    last_seq))
end
