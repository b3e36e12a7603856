-- make bench: jsoncontract in nginx, measured with wrk on loopback, in one run:
--   1. the contract check inside nginx: requests/s of four locations that each read the same
--      POSTed 1 KB reply (bench/ticket_1k.lua's TEXT) and answer "ok" after their work
--      (bench/nginx_bench_app.lua): the body read alone, `contract:check_json`,
--      `contract:check` (the Lua value built), lua-cjson's decode alone (nothing validated: the
--      floor of any location that builds the Lua value) and lua-cjson's decode + api7/jsonschema v0.9.12
--      (what APISIX and Kong plugins do; not packaged: JC_API7_JSONSCHEMA_PATH is a
--      lua_package_path fragment with it and neturl, e.g.
--      "/x/jsonschema/lib/?.lua;/x/neturl/lib/?.lua", else that location is skipped, saying so).
--      One worker, wrk -t2 -c50, BENCH_NGINX_ROUNDS rounds of BENCH_NGINX_SECONDS each,
--      locations interleaved; req/s per round, and the ratios check_json / body, check / body,
--      check_json / api7, check / api7, cjson / body, check / cjson as ranges over the rounds (and by the worker's CPU time
--      per request, which the neighbours on the machine move less).
--   2. the gateway (jsoncontract.nginx) in front of the stand-in model answering after 200 ms:
--      wrk with 1,000 connections against one worker; requests/s, latency percentiles, errors,
--      and the worker's RSS (and its Lua heap) before, after each round and its peak (VmHWM).
-- Not a test: nothing asserts a time. Skipped with a message when nginx, its lua module or
-- wrk is missing. Environment: BENCH_NGINX_ROUNDS (default 5; 0 skips part 1),
-- BENCH_NGINX_SECONDS (default 3), BENCH_GATEWAY_SECONDS (default 10),
-- BENCH_GATEWAY_CONNECTIONS (default 1000), BENCH_GATEWAY_ROUNDS (default 3; 0 skips part 2),
-- BENCH_NGINX_PROFILE (0 skips part 1's callgrind profile).
--   lua5.4 bench/nginx_bench.lua      (after make and make LUA=luajit)
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;bench/?.lua;" .. package.path
package.cpath = "build/lua5.4/?.so;" .. package.cpath

local util = require "support.util"
local nginx = require "support.nginx_server"

local ROUNDS = tonumber(os.getenv("BENCH_NGINX_ROUNDS")) or 5
local SECONDS = tonumber(os.getenv("BENCH_NGINX_SECONDS")) or 3
local GW_SECONDS = tonumber(os.getenv("BENCH_GATEWAY_SECONDS")) or 10
local GW_CONNS = tonumber(os.getenv("BENCH_GATEWAY_CONNECTIONS")) or 1000
local GW_ROUNDS = tonumber(os.getenv("BENCH_GATEWAY_ROUNDS")) or 3
local PROFILE = os.getenv("BENCH_NGINX_PROFILE") ~= "0"
local fmt = string.format

local function say(...) io.stdout:write(fmt(...), "\n") io.stdout:flush() end

local why = nginx.missing()
if why and why:find("LuaJIT build", 1, true) then
    nginx.run("make -s LUA=luajit >/dev/null")
    why = nginx.missing()
end
if not why and select(2, nginx.run("command -v wrk")) ~= 0 then why = "wrk not found on PATH (apt-get install wrk)" end
if why then
    say("nginx_bench: skipped: %s", why)
    return
end

-- wrk's summary: requests/s, latency percentiles (ms), non-2xx count, socket errors.
local function unit_ms(n, u)
    n = tonumber(n)
    if u == "us" then return n / 1000 elseif u == "s" then return n * 1000 elseif u == "m" then return n * 60000 end
    return n
end
local function parse_wrk(out)
    local r = { rps = tonumber(out:match("Requests/sec:%s+([%d%.]+)")) or 0, non2xx = 0, errors = 0, p = {} }
    r.non2xx = tonumber(out:match("Non%-2xx or 3xx responses: (%d+)")) or 0
    local c, rd, w, t = out:match("Socket errors: connect (%d+), read (%d+), write (%d+), timeout (%d+)")
    if c then r.errors = c + rd + w + t end
    r.requests = tonumber(out:match("(%d+) requests in")) or 0
    for pct, n, u in out:gmatch("%s(%d+)%%%s+([%d%.]+)(%a+)") do r.p[tonumber(pct)] = unit_ms(n, u) end
    return r
end

local function wrk(args, url)
    local out = nginx.run(fmt("wrk %s %s", args, url))
    local r = parse_wrk(out)
    if r.rps == 0 then say("wrk said: %s", out) end
    return r
end

-- CPU seconds (user + system) a process has used: fields 14 and 15 of /proc/<pid>/stat, in
-- clock ticks (100 per second on Linux).
local function cpu_seconds(pid)
    local stat = util.read("/proc/" .. pid .. "/stat") or ""
    local rest = stat:match("%) (.*)$") or ""
    local f = {}
    for x in rest:gmatch("%S+") do f[#f + 1] = x end
    -- after "pid (comm)" the fields start at 3: utime is field 14, stime 15
    return ((tonumber(f[12]) or 0) + (tonumber(f[13]) or 0)) / 100
end

local function rss_kb(pid, field)
    local status = util.read("/proc/" .. pid .. "/status") or ""
    return tonumber(status:match((field or "VmRSS") .. ":%s+(%d+)")) or 0
end

-- The profile: user-space instructions per request of each location, counted by callgrind in
-- a worker (nginx with master_process off) under wrk -c1, split by the object that runs them
-- (nginx and its lua module, LuaJIT's VM and GC, the JIT-compiled Lua, the core, libc, lua-cjson
-- and PCRE): what each location adds over the body read, and who runs it. Counts, not times:
-- the neighbours on the machine do not move them. The kernel's share (the sockets; a good half
-- of the worker's CPU time by `perf record -e cpu-clock`) is the same for every location and
-- not counted here. BENCH_NGINX_PROFILE=0 skips it; skipped when valgrind is missing.
local GROUPS = {
    { "nginx", "/nginx$" }, { "lua module", "ngx_http_lua_module" }, { "LuaJIT VM+GC", "libluajit" },
    -- machine code without an object: LuaJIT's traces and PCRE2's JIT-compiled patterns
    { "JIT code", "^%?%?%?$" }, { "core", "jsoncontract/core%.so$" }, { "libc", "libc%.so" },
    { "cjson", "cjson" }, { "pcre", "pcre" },
}

-- Self cost per object of a callgrind output file (positions: line; events: Ir; names compressed
-- or not): a cost line
-- belongs to the current `ob=`, except the inclusive cost line after `calls=`.
local function callgrind_by_object(path)
    local names, by, ob, after_call = {}, {}, "?", false
    for line in io.lines(path) do
        local key, id, name = line:match("^(c?ob)=%((%d+)%)%s*(.*)$")
        if not key then -- (names not compressed: the name itself, its own id)
            key, name = line:match("^(c?ob)=(.+)$")
            id = name
        end
        if key then
            if name ~= "" then names[id] = name end
            if key == "ob" then ob = names[id] or "?" end
        elseif line:match("^calls=") then
            after_call = true
        else
            local cost = line:match("^[%d+-]%S*%s+(%d+)$")
            if cost then
                if not after_call then by[ob] = (by[ob] or 0) + tonumber(cost) end
                after_call = false
            end
        end
    end
    local out = {}
    for obj, ir in pairs(by) do
        local group = "other"
        for _, g in ipairs(GROUPS) do
            if obj:find(g[2]) then group = g[1] break end
        end
        out[group] = (out[group] or 0) + ir
    end
    return out
end

-- Instructions per request of one location: { total =, [group] = }, or nil and why.
local function profile_location(name, http_conf, text)
    local url = "/" .. name
    return nginx.with_callgrind({ main = "env JC_API7_JSONSCHEMA_PATH;", worker_connections = 64,
        http = http_conf, ready_cmd = function(base)
            return fmt("curl -sf -o /dev/null -X POST --data-binary %s %s%s", nginx.q(text), base, url)
        end }, function(srv)
        local post = "-s " .. srv.dir .. "/post.lua"
        local f = assert(io.open(srv.dir .. "/post.lua", "w"))
        f:write(fmt('wrk.method = "POST"\nwrk.body = %q\n', text))
        f:close()
        wrk("-t1 -c1 -d2s " .. post, srv.base .. url) -- warm up: the traces are made
        local dump, n, non2xx = srv:count(url, "-d4s " .. post)
        if n == 0 or non2xx > 0 or not dump then error("no count (" .. n .. " requests)", 0) end
        local per = callgrind_by_object(dump)
        local total = 0
        for g, ir in pairs(per) do
            per[g] = ir / n
            total = total + per[g]
        end
        per.total = total
        return per
    end)
end

------------------------------------------------------------------------------
-- 1. the contract check inside nginx (BENCH_NGINX_ROUNDS=0 skips it)
------------------------------------------------------------------------------
local function median(t)
    local s = {}
    for i, v in ipairs(t) do s[i] = v end
    table.sort(s)
    local n = #s
    return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

-- "lo-hi" of a list of numbers.
local function range(t, f)
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(t) do lo, hi = math.min(lo, v), math.max(hi, v) end
    return fmt(f .. "-" .. f, lo, hi)
end

local function list(t, f)
    local out = {}
    for i, v in ipairs(t) do out[i] = fmt(f, v) end
    return table.concat(out, " ")
end

if ROUNDS > 0 then
    local API7 = os.getenv("JC_API7_JSONSCHEMA_PATH")
    -- inside http {}: the app, the four locations and /ffi_status
    local function http(port)
        local loc = {}
        for _, name in ipairs { "body", "check_json", "check", "cjson", "api7", "ffi_status" } do
            loc[#loc + 1] = fmt('  location = /%s { content_by_lua_block { require("nginx_bench_app").%s() } }',
                name, name)
        end
        return table.concat({
            'init_by_lua_block { require("nginx_bench_app") }',
            -- the 1 KB reply stays in memory (get_body_data), never in a temp file
            "client_body_buffer_size 16k; client_max_body_size 16k;",
            "server { listen 127.0.0.1:" .. port .. " backlog=1024;",
            table.concat(loc, "\n"),
            "}" }, "\n")
    end
    local srv = nginx.start {
        ready = "/ffi_status",
        -- the workers read it in init_by_lua (nginx passes no other variable on)
        main = "env JC_API7_JSONSCHEMA_PATH;",
        env = API7 and { JC_API7_JSONSCHEMA_PATH = API7 } or nil,
        http = http,
    }
    local ok, err = pcall(function()
        local TEXT = require("ticket_1k").TEXT
        local script = srv.dir .. "/post.lua"
        local f = assert(io.open(script, "w"))
        f:write(fmt('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %q\n',
            TEXT))
        f:close()
        local post = "-s " .. script
        local status = require("jsoncontract.transport.curl").request { url = srv.base .. "/ffi_status",
            timeout_ms = 2000 }
        say("nginx: the contract check on the POSTed %d-byte reply (bench/ticket_1k.lua); 1 worker, "
            .. "wrk -t2 -c50 -d%ds, %d rounds, locations interleaved; the core's path in the worker: %s",
            #TEXT, SECONDS, ROUNDS, status and status.body and status.body:gsub("%s+$", "") or "?")
        local names = { "body", "check_json", "check", "cjson", "api7" }
        local cjson_probe = wrk("-t1 -c1 -d1s " .. post, srv.base .. "/cjson")
        if cjson_probe.requests == 0 or cjson_probe.non2xx > 0 then
            table.remove(names, 4)
            say("  cjson: skipped (lua-cjson not found in the worker: apt-get install lua-cjson)")
        end
        local probe = wrk("-t1 -c1 -d1s " .. post, srv.base .. "/api7")
        if probe.requests == 0 or probe.non2xx > 0 then
            table.remove(names)
            say("  cjson+api7: skipped (set JC_API7_JSONSCHEMA_PATH to a lua_package_path fragment with "
                .. "api7/jsonschema v0.9.12 and neturl, e.g. \"/x/jsonschema/lib/?.lua;/x/neturl/lib/?.lua\"; "
                .. "the worker says: %s)", (nginx.run(fmt("curl -s -X POST --data-binary @/dev/null %s/api7",
                    srv.base)):gsub("%s+$", "")))
        end
        local rps, cpu_us = {}, {}
        for _, name in ipairs(names) do rps[name], cpu_us[name] = {}, {} end
        local worker = srv:workers()[1]
        for _, name in ipairs(names) do wrk("-t2 -c50 -d1s " .. post, srv.base .. "/" .. name) end -- warm up
        -- Every round measures each location once, back to back, so a ratio compares
        -- neighbours in time (other processes on the machine come and go).
        for round = 1, ROUNDS do
            for _, name in ipairs(names) do
                local c0 = cpu_seconds(worker)
                local r = wrk(fmt("-t2 -c50 -d%ds %s", SECONDS, post), srv.base .. "/" .. name)
                rps[name][round] = r.rps
                -- the worker's CPU time per request: what a request costs nginx, whatever else
                -- runs on the machine
                cpu_us[name][round] = (cpu_seconds(worker) - c0) * 1e6 / math.max(r.requests, 1)
                if r.non2xx > 0 or r.errors > 0 then say("  %s: %d non-2xx, %d socket errors", name, r.non2xx, r.errors) end
            end
        end
        local LABEL = { body = "body only", check_json = "check_json", check = "check", cjson = "cjson alone",
            api7 = "cjson+api7" }
        for _, name in ipairs(names) do
            say("  %-11s req/s per round %s; worker CPU %s us/request", LABEL[name], list(rps[name], "%.0f"),
                range(cpu_us[name], "%.1f"))
        end
        local RATIOS = {
            { "check_json", "body", "goal >= 0.90" }, { "check", "body", "goal >= 0.85" },
            { "check_json", "api7", "goal >= 1.30" }, { "check", "api7", "goal >= 1.30" },
            { "api7", "body", "the peer, for scale" },
            { "cjson", "body", "the floor of building the value (nothing validated)" },
            { "check", "cjson", "the checked value against the unchecked one" },
        }
        for _, r in ipairs(RATIOS) do
            if rps[r[1]] and rps[r[2]] then
                local by_rps, by_cpu = {}, {}
                for round = 1, ROUNDS do
                    by_rps[round] = rps[r[1]][round] / rps[r[2]][round]
                    by_cpu[round] = cpu_us[r[2]][round] / cpu_us[r[1]][round]
                end
                say("  %-11s / %-11s req/s %s (median %.2f; rounds %s), by worker CPU %s (median %.2f)  %s",
                    LABEL[r[1]], LABEL[r[2]], range(by_rps, "%.2f"), median(by_rps), list(by_rps, "%.2f"),
                    range(by_cpu, "%.2f"), median(by_cpu), r[3])
            end
        end
        if PROFILE then
            local why_not = select(2, nginx.run("command -v valgrind callgrind_control")) ~= 0
                and "valgrind not found on PATH (apt-get install valgrind)"
            if why_not then
                say("  profile: skipped: %s", why_not)
            else
                say("  profile: user-space instructions per request (callgrind, one worker, wrk -t1 -c1), "
                    .. "and what each location adds over the body read, by who runs it:")
                local base
                for _, name in ipairs(names) do
                    local per, perr = profile_location(name, http, TEXT)
                    if not per then
                        say("  %-11s profile failed: %s", LABEL[name], tostring(perr or "no requests counted"))
                    else
                        base = base or per
                        -- the body read by object; the others by what they add to it
                        local parts = {}
                        for _, g in ipairs(GROUPS) do
                            local d = (per[g[1]] or 0) - (name == "body" and 0 or (base[g[1]] or 0))
                            if math.abs(d) >= 50 then
                                parts[#parts + 1] = fmt(name == "body" and "%s %.0f" or "%s %+.0f", g[1], d)
                            end
                        end
                        say("  %-11s %6.0f%s: %s", LABEL[name], per.total, name == "body" and ""
                            or fmt(" (%+.0f)", per.total - base.total), table.concat(parts, ", "))
                    end
                end
            end
        end
    end)
    srv:stop()
    if not ok then error(err, 0) end
end

------------------------------------------------------------------------------
-- 2. the gateway holding many concurrent requests in front of a 200 ms model
------------------------------------------------------------------------------
if GW_ROUNDS > 0 then
    local standin, sport = nginx.start_standin { delay_ms = 200 }
    local srv
    local ok, err = pcall(function()
        srv = nginx.start {
            worker_connections = 4096,
            ready = "/fixed",
            http = function(port, dir)
                return table.concat({
                    "lua_shared_dict jc_metrics 1m;",
                    fmt('init_by_lua_block { require("jsoncontract.nginx").configure{ provider = "openai", '
                        .. 'model = "standin-1", base_url = "http://127.0.0.1:%d", metrics_dict = "jc_metrics", '
                        .. 'contracts = { support_ticket = %q }, pool_size = 256, backlog = 4096, '
                        .. 'timeout_ms = 60000, connect_timeout_ms = 60000, '
                        -- the rules' context: the job module's own (the orders), per worker on first use
                        .. 'context = (function() local c return function() c = c or dofile(%q).context {} '
                        .. 'return c end end)(), '
                        .. 'evidence = { path = %q } } }', sport, nginx.run("pwd"):match("^(%S+)")
                        .. "/examples/support_ticket.lua", nginx.run("pwd"):match("^(%S+)")
                        .. "/examples/support_ticket.lua", dir .. "/evidence.jsonl"),
                    "server { listen 127.0.0.1:" .. port .. " backlog=4096;",
                    '  location = /fixed { return 200 "ok"; }',
                    '  location = /triage { content_by_lua_block { require("jsoncontract.nginx").serve("support_ticket") } }',
                    '  location = /metrics { content_by_lua_block { require("jsoncontract.nginx").metrics() } }',
                    '  location = /lua_heap { content_by_lua_block { ngx.say(collectgarbage("count")) } }',
                    "}" }, "\n")
            end,
        }
        local script = srv.dir .. "/post.lua"
        local f = assert(io.open(script, "w"))
        f:write('wrk.method = "POST"\nwrk.body = "I want to return order 1187, the shoes do not fit."\n')
        f:close()
        local worker = srv:workers()[1]
        say("nginx: the gateway in front of the stand-in (200 ms per answer, pool_size 256, backlog 4096);"
            .. " 1 worker, wrk -t2 -c%d -d%ds", GW_CONNS, GW_SECONDS)
        local curl = require "jsoncontract.transport.curl"
        local function lua_heap_mib()
            local res = curl.request { url = srv.base .. "/lua_heap", timeout_ms = 5000 }
            return res and (tonumber(res.body) or 0) / 1024 or -1
        end
        say("  worker at start: RSS %5.1f MiB, Lua heap %5.1f MiB", rss_kb(worker) / 1024, lua_heap_mib())
        for round = 1, GW_ROUNDS do
            local c0 = cpu_seconds(worker)
            local r = wrk(fmt("-t2 -c%d -d%ds --timeout 30s --latency -s %s", GW_CONNS, GW_SECONDS, script),
                srv.base .. "/triage")
            say("  round %d: %7.0f req/s, %d requests, latency p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, "
                .. "%d non-2xx, %d socket errors; worker CPU %.0f us/request, RSS %5.1f MiB, Lua heap %5.1f MiB",
                round, r.rps, r.requests, r.p[50] or -1, r.p[90] or -1, r.p[99] or -1, r.non2xx, r.errors,
                (cpu_seconds(worker) - c0) * 1e6 / math.max(r.requests, 1), rss_kb(worker) / 1024, lua_heap_mib())
        end
        local stats = curl.request { url = "http://127.0.0.1:" .. sport .. "/stats",
            timeout_ms = 5000 }
        say("  worker RSS peak (VmHWM)   %6.1f MiB", rss_kb(worker, "VmHWM") / 1024)
        say("  stand-in: %s (connections accepted from the pool: keep-alive)", stats and stats.body or "?")
    end)
    if srv then srv:stop() end
    util.stop_standin(standin)
    if not ok then error(err, 0) end
end
