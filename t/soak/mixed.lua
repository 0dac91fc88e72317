-- Licensed under the Apache License, Version 2.0; see LICENSE.
--
-- wrk script for `make soak` (t/soak/soak.py): every thread rotates
-- through the same pre-built raw requests (R1 to R5 and hostile ones,
-- minted by soak.py), starting at its own offset, and counts the statuses
-- it gets back.
--
--   wrk -c 256 -t 2 -d 60s -s t/soak/mixed.lua URL -- requests.lua
--
-- requests.lua returns a table of raw HTTP/1.1 requests (keep-alive, each
-- with an X-Test-Id naming its kind, for the access log).

local threads = {}
local counter = 0

function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
    table.insert(threads, thread)
end

function init(args)
    reqs = dofile(args[1])
    -- Spread the threads over the rotation.
    pos = (id * 7) % #reqs
    statuses = {}
end

function request()
    pos = pos % #reqs + 1
    return reqs[pos]
end

function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
end

-- One machine-readable line per figure, read by soak.py.
function done(summary, latency, requests)
    local total = {}
    for _, thread in ipairs(threads) do
        local s = thread:get("statuses")
        for code, n in pairs(s) do
            total[code] = (total[code] or 0) + n
        end
    end
    io.write(string.format("SOAK requests %d\n", summary.requests))
    io.write(string.format("SOAK duration_us %d\n", summary.duration))
    for _, k in ipairs({"connect", "read", "write", "status", "timeout"}) do
        io.write(string.format("SOAK error_%s %d\n", k, summary.errors[k]))
    end
    for code, n in pairs(total) do
        io.write(string.format("SOAK status_%d %d\n", code, n))
    end
    io.write(string.format("SOAK latency_p50_us %d\n",
                           latency:percentile(50)))
    io.write(string.format("SOAK latency_p99_us %d\n",
                           latency:percentile(99)))
    io.write(string.format("SOAK latency_max_us %d\n", latency.max))
end
