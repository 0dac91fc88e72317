-- Licensed under the Apache License, Version 2.0; see LICENSE.
--
-- interleave.lua - a wrk script that runs several scenarios inside one run.
--
--     wrk -t N -c N -d SECONDS -s interleave.lua http://127.0.0.1:PORT/ -- SPEC
--
-- On these small shared machines, whole runs one after the other give
-- ratios that wander by 10 to 25 %.  Here every connection switches to the
-- next scenario at the same wall-clock instants (every SLICE ms, forward
-- through the list, then backward, so that no scenario always follows the
-- same neighbour), and each response is put to the scenario of its
-- request: all scenarios share the machine's good and bad moments.
--
-- Give -t and -c the same number: with one connection per thread, the
-- time between two request() calls of a thread is one request of the
-- scenario asked first (written, answered, read), so the attribution needs
-- no response() callback, which would make wrk copy every body into Lua.
--
-- SPEC is a file of tab-separated lines:
--     param   slice_ms|from_ms|until_ms|quota   NUMBER
--     scenario   NAME   PATH   COOKIE-or-empty
-- from_ms and until_ms bound the measured window, in ms after the Unix
-- second `epoch` (also a param); quota, if set, stops each thread after
-- that many requests.  done() prints two lines per scenario:
--     pdftoken-bench scenario NAME COUNT SUM_NS BUCKET:COUNT ...
--     pdftoken-bench cycles NAME CYCLE:COUNT:SUM_NS ...
-- where a bucket b holds durations in [exp(b/100), exp((b+1)/100)) ns,
-- and a cycle is one pass through every scenario.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } pdftoken_bench_ts;
int clock_gettime(int clock_id, pdftoken_bench_ts *ts);
]]

local CLOCK_REALTIME = 0
local ts = ffi.new("pdftoken_bench_ts")
local epoch = 0

-- Nanoseconds since `epoch`: small enough for a double's 53 bits.
local function now_ns()
    ffi.C.clock_gettime(CLOCK_REALTIME, ts)
    return (tonumber(ts.tv_sec) - epoch) * 1e9 + tonumber(ts.tv_nsec)
end

-- Global, so that done() (in wrk's main Lua state, which never runs
-- init()) can fetch the names from a thread.
bench_names = {}
local requests = {}
local param = {slice_ms = 40, from_ms = 0, until_ms = 1e12, quota = 0,
               epoch = 0}

local function load_spec(path)
    local f = assert(io.open(path, "r"))
    for line in f:lines() do
        local fields = {}
        for field in (line .. "\t"):gmatch("([^\t]*)\t") do
            fields[#fields + 1] = field
        end
        if fields[1] == "param" then
            param[fields[2]] = tonumber(fields[3])
        elseif fields[1] == "scenario" then
            local headers = {}
            if fields[4] and fields[4] ~= "" then
                headers["Cookie"] = fields[4]
            end
            bench_names[#bench_names + 1] = fields[2]
            requests[#requests + 1] = wrk.format("GET", fields[3], headers)
        end
    end
    f:close()
    assert(#bench_names > 0, "no scenario in " .. path)
end

local threads = {}

function setup(thread)
    threads[#threads + 1] = thread
end

local slice, from, till, quota, n
local last_t, last_s, last_cycle
local issued = 0
-- Numeric keys (cheap to update on every request), in globals that the
-- main state copies with thread:get(): count and sum of ns per scenario
-- s, the histogram at s * 10000 + bucket, and the same count and sum per
-- cycle (one pass through every scenario) at cycle * 64 + s, so that a
-- burst of other work on the machine can be outvoted by the cycles it
-- missed.
st_count, st_sum, st_hist, cy_count, cy_sum = {}, {}, {}, {}, {}

function init(args)
    load_spec(args[1])
    epoch = param.epoch
    slice = param.slice_ms * 1e6
    from = param.from_ms * 1e6
    till = param.until_ms * 1e6
    quota = param.quota
    n = #bench_names
    assert(n < 64, "at most 63 scenarios")
end

local function record(s, cycle, d)
    st_count[s] = (st_count[s] or 0) + 1
    st_sum[s] = (st_sum[s] or 0) + d
    local h = s * 10000 + math.floor(math.log(d) * 100)
    st_hist[h] = (st_hist[h] or 0) + 1
    local k = cycle * 64 + s
    cy_count[k] = (cy_count[k] or 0) + 1
    cy_sum[k] = (cy_sum[k] or 0) + d
end

function request()
    local t = now_ns()
    if last_t and last_t >= from and t <= till then
        record(last_s, last_cycle, t - last_t)
    end
    local slot = math.floor(t / slice)
    local pos = slot % n
    local cycle = math.floor(slot / n)
    local s = pos + 1
    if cycle % 2 == 1 then
        s = n - pos
    end
    last_t, last_s, last_cycle = t, s, cycle
    issued = issued + 1
    if quota > 0 and issued >= quota then
        wrk.thread:stop()
    end
    return requests[s]
end

local function merge(into, name)
    for _, thread in ipairs(threads) do
        for k, v in pairs(thread:get(name)) do
            into[k] = (into[k] or 0) + v
        end
    end
    return into
end

function done(summary, latency, reqs)
    local names = threads[1]:get("bench_names")
    local count, sum = merge({}, "st_count"), merge({}, "st_sum")
    local hist, cyc, cys = merge({}, "st_hist"), merge({}, "cy_count"),
                           merge({}, "cy_sum")
    for s, name in ipairs(names) do
        local parts = {}
        for k, v in pairs(hist) do
            if math.floor(k / 10000) == s then
                parts[#parts + 1] = (k - s * 10000) .. ":" .. v
            end
        end
        io.write(string.format("pdftoken-bench scenario %s %d %.0f %s\n",
                               name, count[s] or 0, sum[s] or 0,
                               table.concat(parts, " ")))
        parts = {}
        for k, v in pairs(cyc) do
            if k % 64 == s then
                parts[#parts + 1] = string.format("%d:%d:%.0f",
                                                  math.floor(k / 64), v,
                                                  cys[k])
            end
        end
        io.write(string.format("pdftoken-bench cycles %s %s\n", name,
                               table.concat(parts, " ")))
    end
    local e = summary.errors
    io.write(string.format(
        "pdftoken-bench summary requests %d duration_us %d connect %d "
        .. "read %d write %d status %d timeout %d\n",
        summary.requests, summary.duration, e.connect, e.read, e.write,
        e.status, e.timeout))
end
