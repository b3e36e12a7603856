-- make bench: jsoncontract in nginx, measured with wrk on loopback, in one run:
--   1. requests/s of locations checking a 1 KB model reply (bench/nginx_bench_app.lua) against
--      a location that only says "ok" from Lua (content_by_lua; the goal: >= 0.8 of it) and one
--      that says it with nginx's `return 200`: `contract:check` (the Lua value built, answers
--      "ok") and `contract:check_json` (the same gates, answers with the checked JSON text as
--      the gateway's 200 does, no Lua value built), beside a location that sends the 1 KB reply
--      unchecked (the body's own cost); for scale, contract:check on the 70-byte support-ticket
--      reply; one worker, wrk -t2 -c50, BENCH_NGINX_ROUNDS rounds of BENCH_NGINX_SECONDS each,
--      locations interleaved, ratios per round, the median round; the format gate (decode)
--      and the schema gate (validate) alone show where check's time goes, and the same value
--      built by a Lua table constructor (lua_literal) what the Lua tables alone cost.
--   2. the gateway (jsoncontract.nginx) in front of the stand-in model answering after 200 ms:
--      wrk with 1,000 connections against one worker; requests/s, latency percentiles, errors,
--      and the worker's RSS (and its Lua heap) before, after each round and its peak (VmHWM).
-- Not a test: nothing asserts a time. Skipped with a message when nginx, its lua module or
-- wrk is missing. Environment: BENCH_NGINX_ROUNDS (default 5; 0 skips part 1),
-- BENCH_NGINX_SECONDS (default 3), BENCH_GATEWAY_SECONDS (default 10),
-- BENCH_GATEWAY_CONNECTIONS (default 1000), BENCH_GATEWAY_ROUNDS (default 3; 0 skips part 2).
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

local function median(t)
    local s = {}
    for i, v in ipairs(t) do s[i] = v end
    table.sort(s)
    return s[math.floor((#s + 1) / 2)]
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

------------------------------------------------------------------------------
-- 1. contract:check and contract:check_json vs fixed strings (BENCH_NGINX_ROUNDS=0 skips it)
------------------------------------------------------------------------------
if ROUNDS > 0 then
    local srv = nginx.start {
        ready = "/fixed_return",
        http = function(port)
            return table.concat({
                'init_by_lua_block { require("nginx_bench_app") }',
                "server { listen 127.0.0.1:" .. port .. " backlog=1024;",
                '  location = /fixed_return { return 200 "ok\\n"; }',
                '  location = /fixed_lua { content_by_lua_block { ngx.say("ok") } }',
                '  location = /fixed_reply { content_by_lua_block { require("nginx_bench_app").fixed_reply() } }',
                '  location = /check { content_by_lua_block { require("nginx_bench_app").check() } }',
                '  location = /check_json { content_by_lua_block { require("nginx_bench_app").check_json() } }',
                '  location = /check_ticket { content_by_lua_block { require("nginx_bench_app").check_ticket() } }',
                '  location = /decode { content_by_lua_block { require("nginx_bench_app").decode() } }',
                '  location = /validate { content_by_lua_block { require("nginx_bench_app").validate() } }',
                '  location = /cjson_decode { content_by_lua_block { require("nginx_bench_app").cjson_decode() } }',
                '  location = /ffi_status { content_by_lua_block { require("nginx_bench_app").ffi_status() } }',
                '  location = /lua_literal { content_by_lua_block { require("nginx_bench_app").lua_literal() } }',
                "}" }, "\n")
        end,
    }
    local ok, err = pcall(function()
        local reply = #require("nginx_bench_app").REPLY
        local status = require("jsoncontract.transport.curl").request { url = srv.base .. "/ffi_status",
            timeout_ms = 2000 }
        say("validator:check_json in the worker: %s", status and status.body and status.body:gsub("%s+$", "") or "?")
        say("nginx: contract:check and check_json on a %d-byte reply vs fixed strings; 1 worker, "
            .. "wrk -t2 -c50 -d%ds, %d rounds", reply, SECONDS, ROUNDS)
        -- Every round measures each location once, back to back, so a ratio compares
        -- neighbours in time (other processes on the machine come and go); the median round wins.
        local names = { "fixed_return", "fixed_lua", "fixed_reply", "check", "check_json", "check_ticket",
            "decode", "validate", "lua_literal" }
        -- lua-cjson as nginx's LuaJIT finds it: the location answers 500 without it
        local probe = wrk("-t1 -c1 -d1s", srv.base .. "/cjson_decode")
        local has_cjson = probe.requests > 0 and probe.non2xx == 0
        if has_cjson then
            names[#names + 1] = "cjson_decode"
        else
            say("  (lua-cjson not found by nginx's LuaJIT: the cjson_decode location is left out)")
        end
        -- ratio name -> { numerator location, denominator location }
        local RATIOS = {
            { "check/fixed_lua", "check", "fixed_lua" },
            { "check_json/fixed_lua", "check_json", "fixed_lua" },
            { "check/fixed_return", "check", "fixed_return" },
            { "check_json/fixed_return", "check_json", "fixed_return" },
            { "check_json/fixed_reply", "check_json", "fixed_reply" },
            { "check_ticket/fixed_lua", "check_ticket", "fixed_lua" },
            { "decode/fixed_lua", "decode", "fixed_lua" },
            { "validate/fixed_lua", "validate", "fixed_lua" },
            { "lua_literal/fixed_lua", "lua_literal", "fixed_lua" },
        }
        if has_cjson then RATIOS[#RATIOS + 1] = { "cjson_decode/fixed_lua", "cjson_decode", "fixed_lua" } end
        local rps, ratios = {}, {}
        for _, r in ipairs(RATIOS) do ratios[r[1]] = {} end
        -- The worker's CPU time per request: what a request costs nginx, whatever else runs on
        -- the machine (wall-clock req/s on a shared machine move with the neighbours).
        local cpu_us = {}
        for _, name in ipairs(names) do rps[name], cpu_us[name] = {}, {} end
        local worker = srv:workers()[1]
        for _, name in ipairs(names) do wrk("-t2 -c50 -d1s", srv.base .. "/" .. name) end -- warm up
        for round = 1, ROUNDS do
            for _, name in ipairs(names) do
                local c0 = cpu_seconds(worker)
                local r = wrk(fmt("-t2 -c50 -d%ds", SECONDS), srv.base .. "/" .. name)
                rps[name][round] = r.rps
                cpu_us[name][round] = (cpu_seconds(worker) - c0) * 1e6 / math.max(r.requests, 1)
                if r.non2xx > 0 or r.errors > 0 then say("  %s: %d non-2xx, %d socket errors", name, r.non2xx, r.errors) end
            end
            for _, r in ipairs(RATIOS) do ratios[r[1]][round] = rps[r[2]][round] / rps[r[3]][round] end
        end
        local function list(t, f)
            local out = {}
            for i, v in ipairs(t) do out[i] = fmt(f, v) end
            return table.concat(out, " ")
        end
        for _, name in ipairs(names) do
            say("  %-13s %9.0f req/s (median; rounds %s)", name, median(rps[name]), list(rps[name], "%.0f"))
        end
        local NOTE = {
            ["check/fixed_lua"] = "  (goal >= 0.80; contract:check, the Lua value built, answers \"ok\")",
            ["check_json/fixed_lua"] = "  (goal >= 0.80; contract:check_json, answers the 1 KB checked JSON)",
            ["check_json/fixed_reply"] = "  (both send the same 1 KB body: the checking alone)",
            ["check_ticket/fixed_lua"] = "  (contract:check on the 70-byte support-ticket reply)",
            ["decode/fixed_lua"] = "  (the format gate alone, building the value)",
            ["validate/fixed_lua"] = "  (the schema gate alone, on the decoded value)",
            ["cjson_decode/fixed_lua"] = "  (lua-cjson's lax decode alone, no schema: the peer, for scale)",
            ["lua_literal/fixed_lua"] = "  (the same value from a Lua table constructor, nothing parsed or checked:"
                .. " the floor of a check returning plain tables)",
        }
        for _, r in ipairs(RATIOS) do
            say("  ratio %-24s = %.2f  rounds %s%s", r[1], median(ratios[r[1]]), list(ratios[r[1]], "%.2f"),
                NOTE[r[1]] or "")
        end
        local cpu = {}
        for _, name in ipairs(names) do cpu[name] = median(cpu_us[name]) end
        say("  nginx worker CPU per request (median): %s", (function()
            local out = {}
            for i, name in ipairs(names) do out[i] = fmt("%s %.1f us", name, cpu[name]) end
            return table.concat(out, ", ")
        end)())
        say("  ratio by worker CPU (the req/s ratio with a core to itself): check/fixed_lua = %.2f, "
            .. "check_json/fixed_lua = %.2f, check_ticket/fixed_lua = %.2f%s", cpu.fixed_lua / cpu.check,
            cpu.fixed_lua / cpu.check_json, cpu.fixed_lua / cpu.check_ticket,
            cpu.cjson_decode and fmt(", cjson_decode/fixed_lua = %.2f", cpu.fixed_lua / cpu.cjson_decode) or "")
        -- Differences of medians, each with its own noise; decode and validate are not parts
        -- that add up to check (validate walks a Lua value, check validates the parsed tape).
        say("  worker CPU over its baseline: check +%.1f us (parse, validate, build the value; over fixed_lua), "
            .. "check_json +%.1f us (parse, validate; over fixed_reply, the same body), "
            .. "decode +%.1f us (parse, build), validate +%.1f us (a Lua value to a tape, validate), "
            .. "lua_literal +%.1f us (the value's tables alone); check >= 0.8 allows +%.1f us",
            cpu.check - cpu.fixed_lua, cpu.check_json - cpu.fixed_reply, cpu.decode - cpu.fixed_lua,
            cpu.validate - cpu.fixed_lua, cpu.lua_literal - cpu.fixed_lua, cpu.fixed_lua / 0.8 - cpu.fixed_lua)
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
