-- The gateway's own cost: requests/s of a round trip through jsoncontract.nginx serve() to an
-- upstream that answers at once (an OpenAI-shaped envelope with a Content-Length from a
-- location in the same nginx, bench/nginx_bench_gateway_app.lua; every request passes every
-- gate and is answered 200), against proxy_pass of the same request to the same upstream
-- (keep-alive both ways, 64 idle connections each), the same gateway with a contract of the
-- same schema and no rules (the support ticket's rules look the order up in SQLite), and the
-- upstream alone. One worker, wrk -t2 -c50, POST of a 170-byte mail, BENCH_NGINX_ROUNDS rounds
-- (default 3) of BENCH_NGINX_SECONDS each (default 3), locations interleaved; per location
-- req/s and the worker's CPU time per request (which other load on the machine changes less),
-- the ratios' range over the rounds. Both paths make two HTTP exchanges per request in the one
-- worker (client -> nginx, nginx -> upstream location), so the ratio is the gateway's Lua work
-- (prompt and request building, cosocket client, envelope, check, rules) against nginx's C
-- proxy. In order:
--   1. the exchange alone, four ways: proxy_pass, the smallest cosocket client, nginx's
--      upstream module through ngx.location.capture, jsoncontract.transport.openresty;
--   2. instructions per request of every location under callgrind (counts: the neighbours on
--      the machine do not move them), with a gateway whose provider call is replaced by its
--      answer (serve and jc.ask alone), and the same two with metrics (a shared dict) and
--      evidence (a file) on, as a deployment runs them (/gateway_full, /gateway_full_stub);
--   3. the gateway's rounds;
--   4. a profile of the worker under /gateway (BENCH_GW_PROFILE names another location):
--      folded stacks (out/nginx_gateway.folded), perf's split by library (under /gateway), the
--      JIT's trace aborts.
-- BENCH_GW_ONLY=exchange|instructions|rounds|profile runs that part alone; BENCH_GW_PROFILE_MODE=Fli1
-- adds jit.p's report of that mode (out/nginx_gateway.prof); BENCH_GW_INSTRUCTIONS=0
-- skips part 2. Not a test: nothing asserts a time. Skipped when nginx, its lua module or wrk
-- is missing (part 2 when valgrind is).
--   lua5.4 bench/nginx_gateway_bench.lua      (after make and make LUA=luajit)
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;bench/?.lua;" .. package.path
package.cpath = "build/lua5.4/?.so;" .. package.cpath

local util = require "support.util"
local nginx = require "support.nginx_server"

local ROUNDS = tonumber(os.getenv("BENCH_NGINX_ROUNDS")) or 3
local SECONDS = tonumber(os.getenv("BENCH_NGINX_SECONDS")) or 3
local fmt = string.format

local function say(...) print(fmt(...)) end

local missing = nginx.missing()
if not missing and select(2, nginx.run("command -v wrk")) ~= 0 then missing = "wrk not found on PATH" end
if missing then
    say("nginx_gateway_bench: skipped: %s", missing)
    return
end

local MAIL = "Hello, my parcel for order 1042 has not arrived after two weeks and I need it before "
    .. "Friday for a birthday. Please send a replacement by express or refund me. Thanks, Ana"

local function wrk(dir, path, base)
    local script = dir .. "/post.lua"
    local f = assert(io.open(script, "w"))
    f:write(fmt('wrk.method = "POST"\nwrk.body = %q\nwrk.headers["Content-Type"] = "text/plain"\n', MAIL))
    f:close()
    local out = nginx.run(fmt("wrk -t2 -c50 -d%ds -s %s %s%s", SECONDS, script, base, path))
    local rps = tonumber(out:match("Requests/sec:%s+([%d%.]+)")) or 0
    local non2xx = tonumber(out:match("Non%-2xx or 3xx responses:%s+(%d+)")) or 0
    local lat = out:match("Latency%s+(%S+)")
    return { rps = rps, non2xx = non2xx, latency = lat, out = out }
end

local KEY_ENV = "JC_BENCH_KEY"
-- A key shaped as OpenAI's are (what the redaction of every response looks for; a key that
-- shares a half with the model's name, "bench-key" and "bench-1", would send each response
-- through the slow scan for its spellings)
local KEY = "sk-proj-Xb7QeT2vLm9RkA4sWn8ZpC1dHy6FjU3gKo5Ei0VrBt"
-- The lines inside http {} (the bench's locations), for nginx listening on `port`.
local function http_conf(port, dir)
        local app = 'require("nginx_bench_gateway_app")'
        return table.concat({
            "lua_shared_dict jc_metrics 1m;",
            fmt("init_by_lua_block { %s.init{ root = %q, port = %d, key_env = %q, evidence = %q } }", app,
                util.sh("pwd"):match("^(%S+)"), port, KEY_ENV, dir .. "/evidence.jsonl"),
            "upstream up_keepalive { server 127.0.0.1:" .. port .. "; keepalive 64; }",
            "server { listen 127.0.0.1:" .. port .. " backlog=1024;",
            '  location = /ready { return 200 "ok\\n"; }',
            "  location /up/ { content_by_lua_block { " .. app .. ".upstream() } }",
            "  location = /proxy { proxy_http_version 1.1; proxy_set_header Connection \"\";",
            "    proxy_pass http://up_keepalive/up/v1/chat/completions; }",
            "  location = /cosocket_min { content_by_lua_block { " .. app .. ".cosocket_min() } }",
            "  location = /transport_only { content_by_lua_block { " .. app .. ".transport_only() } }",
            "  location = /capture_min { content_by_lua_block { " .. app .. ".capture_min() } }",
            "  location = /_jc_declare { internal; set $jc_upstream_auth \"\"; return 404; }",
            "  location = /_jc_upstream { internal; proxy_http_version 1.1; proxy_pass_request_headers off;",
            "    proxy_set_header Connection \"\"; proxy_set_header Content-Type application/json;",
            "    proxy_set_header Authorization $jc_upstream_auth;",
            "    proxy_pass http://up_keepalive/up/v1/chat/completions; }",
            "  location = /profile_start { content_by_lua_block { " .. app .. ".profile_start() } }",
            "  location = /profile_stop { content_by_lua_block { " .. app .. ".profile_stop() } }",
            "  location = /gateway { content_by_lua_block { " .. app .. '.gw:serve("support_ticket") } }',
            "  location = /gateway_schema_only { content_by_lua_block { " .. app
                .. '.gw:serve("ticket_schema_only") } }',
            "  location = /gateway_rule_nothing { content_by_lua_block { " .. app
                .. '.gw:serve("ticket_rule_nothing") } }',
            "  location = /gateway_stub { content_by_lua_block { " .. app
                .. '.gw_stub:serve("ticket_schema_only") } }',
            "  location = /gateway_full { content_by_lua_block { " .. app
                .. '.gw_full:serve("ticket_schema_only") } }',
            "  location = /gateway_full_stub { content_by_lua_block { " .. app
                .. '.gw_full_stub:serve("ticket_schema_only") } }',
            '  location = /metrics { content_by_lua_block { ' .. app .. '.gw_full:metrics() } }',
            "}" }, "\n")
end
local srv = nginx.start {
    main = "env " .. KEY_ENV .. "=" .. KEY .. ";",
    ready = "/ready",
    worker_connections = 1024,
    http = http_conf,
}

-- Instructions per request (user space, callgrind) of each of `paths`, in one nginx process
-- (master_process off) with the same configuration, under wrk -t1 -c1 after a warm-up: counts,
-- which the other load on the machine does not move, where req/s and CPU time move by 20%.
-- Both sides of every exchange are in the process, as in the rounds. Returns { [path] = n } or
-- nil and why.
local function instructions(paths)
    if select(2, nginx.run("command -v valgrind callgrind_control")) ~= 0 then return nil, "valgrind not found" end
    local keep = os.getenv("BENCH_GW_KEEP")
    return nginx.with_callgrind({ main = "env " .. KEY_ENV .. "=" .. KEY .. ";", ready = "/ready",
        http = http_conf, keep = keep }, function(counting)
        if keep then say("keeping %s", counting.dir) end
        local post = fmt("-s %s/post.lua", counting.dir)
        local f = assert(io.open(counting.dir .. "/post.lua", "w"))
        f:write(fmt('wrk.method = "POST"\nwrk.body = %q\nwrk.headers["Content-Type"] = "text/plain"\n', MAIL))
        f:close()
        local out = {}
        -- every location warmed up before any is counted: the first gateway location counted
        -- otherwise carried the process's one-time costs (the contracts' first use, the rules'
        -- context opened, traces still being made), 400,000-600,000 instructions per request
        for _, path in ipairs(paths) do nginx.run(fmt("wrk -t1 -c1 -d2s %s %s%s", post, counting.base, path)) end
        for _, path in ipairs(paths) do
            -- warm up until the JIT has settled: while LuaJIT compiles traces, valgrind translates
            -- each new one and a run of 2 s serves a few dozen requests, whose counts then carry
            -- the compiler's work; settled, it serves hundreds
            for _ = 1, 8 do
                local w = nginx.run(fmt("wrk -t1 -c1 -d2s %s %s%s", post, counting.base, path))
                if (tonumber(w:match("(%d+) requests in")) or 0) >= 400 then break end
            end
            local dump, n, non2xx = counting:count(path, "-d4s " .. post)
            local total = nginx.dump_total(dump)
            if n == 0 or non2xx > 0 or not total then error(path .. ": no count (" .. n .. " requests)") end
            out[path] = total / n
        end
        return out
    end)
end

local ok, err = pcall(function()
    -- one request each first: all must answer 200 (the gateway's 202, a hand-over, is a
    -- different path, which wrk would count as a success)
    local curl = require "jsoncontract.transport.curl"
    for _, path in ipairs { "/gateway", "/gateway_schema_only", "/proxy", "/up/v1/chat/completions",
        "/cosocket_min", "/capture_min", "/transport_only", "/gateway_stub", "/gateway_rule_nothing", "/gateway_full",
        "/gateway_full_stub" } do
        local res = curl.request { url = srv.base .. path, body = MAIL, timeout_ms = 5000,
            headers = { ["Content-Type"] = "text/plain" } }
        if not res or res.status ~= 200 then
            error(path .. " does not answer 200: " .. (res and res.status .. " " .. res.body or "no answer"))
        end
        local r = wrk(srv.dir, path, srv.base)
        if r.non2xx > 0 or r.rps == 0 then error(path .. " does not answer 200: " .. r.out) end
    end
    local worker = assert(srv:workers()[1], "no nginx worker")
    local tck = tonumber(nginx.run("getconf CLK_TCK"):match("%d+")) or 100
    -- The worker's CPU time (user + system) in seconds: per request it is the cost that a
    -- noisy machine (other processes taking the cores) does not change much, unlike req/s.
    local function cpu()
        local stat = util.read("/proc/" .. worker .. "/stat") or ""
        local fields = {}
        for f in stat:gsub("^.-%) ", ""):gmatch("%S+") do fields[#fields + 1] = f end
        return ((tonumber(fields[12]) or 0) + (tonumber(fields[13]) or 0)) / tck
    end
    local function measure(path)
        local c0 = cpu()
        local r = wrk(srv.dir, path, srv.base)
        local n = tonumber(r.out:match("(%d+) requests in")) or 0
        r.us = n > 0 and (cpu() - c0) * 1e6 / n or 0
        return r
    end
    local function median(t)
        table.sort(t)
        return t[math.floor((#t + 1) / 2)]
    end
    local function range(t)
        local lo, hi = math.huge, -math.huge
        for _, v in ipairs(t) do lo, hi = math.min(lo, v), math.max(hi, v) end
        return fmt("%.2f-%.2f (median %.2f)", lo, hi, median(t))
    end
    -- The exchange alone, before any gateway work: the smallest cosocket client, and nginx's
    -- upstream module through ngx.location.capture, each against proxy_pass.
    local only = os.getenv("BENCH_GW_ONLY") -- "exchange": that part alone; "profile": the profile alone
    -- the location profiled (default /gateway): e.g. /transport_only for the transport alone
    local profiled = os.getenv("BENCH_GW_PROFILE") or "/gateway"
    if only ~= "profile" and only ~= "instructions" and only ~= "rounds" then
    say("nginx: the exchange alone (answering the upstream's body) vs proxy_pass; %d rounds", ROUNDS)
    local r_co, r_cap, r_tr, c_co, c_cap, c_tr = {}, {}, {}, {}, {}, {}
    for round = 1, ROUNDS do
        local px = measure("/proxy")
        local co = measure("/cosocket_min")
        local cap = measure("/capture_min")
        local tr = measure("/transport_only")
        r_co[round], r_cap[round], r_tr[round] = co.rps / px.rps, cap.rps / px.rps, tr.rps / px.rps
        c_co[round], c_cap[round], c_tr[round] = px.us / co.us, px.us / cap.us, px.us / tr.us
        say("  round %d: proxy_pass %.0f req/s %.0f us, smallest cosocket client %.0f req/s %.0f us, "
            .. "capture + proxy_pass %.0f req/s %.0f us, transport.openresty %.0f req/s %.0f us", round, px.rps,
            px.us, co.rps, co.us, cap.rps, cap.us, tr.rps, tr.us)
    end
    say("smallest cosocket client/proxy_pass: req/s %s, by CPU %s", range(r_co), range(c_co))
    say("capture + proxy_pass/proxy_pass: req/s %s, by CPU %s", range(r_cap), range(c_cap))
    say("transport.openresty/proxy_pass: req/s %s, by CPU %s", range(r_tr), range(c_tr))
    end
    -- Instructions per location (BENCH_GW_INSTRUCTIONS=0 skips them; BENCH_GW_PATHS names
    -- the locations counted, default all)
    if only == "instructions" or (only ~= "exchange" and only ~= "profile" and only ~= "rounds"
            and os.getenv("BENCH_GW_INSTRUCTIONS") ~= "0") then
        local paths = { "/proxy", "/cosocket_min", "/capture_min", "/transport_only", "/gateway",
            "/gateway_schema_only", "/gateway_rule_nothing", "/gateway_stub", "/gateway_full", "/gateway_full_stub",
            "/up/v1/chat/completions" }
        if os.getenv("BENCH_GW_PATHS") then
            paths = {}
            for p in os.getenv("BENCH_GW_PATHS"):gmatch("%S+") do paths[#paths + 1] = p end
        end
        local count, why = instructions(paths)
        if count then
            local row = {}
            for _, p in ipairs(paths) do row[#row + 1] = fmt("%s %.0f", p, count[p]) end
            say("instructions per request (callgrind, user space, one process, wrk -c1): %s", table.concat(row, ", "))
            if count["/proxy"] and count["/gateway"] then
                say("  proxy_pass/gateway by instructions: %.2f", count["/proxy"] / count["/gateway"])
            end
        else
            say("instructions per request: skipped: %s", why)
        end
    end
    if only == "exchange" or only == "instructions" then return end
    if only ~= "profile" then

    say("nginx: serve() to an upstream in the same nginx vs proxy_pass to it; 1 worker, wrk -t2 -c50 "
        .. "-d%ds, POST %d-byte mail, %d rounds; req/s and the worker's CPU us per request", SECONDS, #MAIL, ROUNDS)
    local ratio, cost, ratio_so, cost_so = {}, {}, {}, {}
    for round = 1, ROUNDS do
        local gw = measure("/gateway")
        local px = measure("/proxy")
        local so = measure("/gateway_schema_only")
        local up = measure("/up/v1/chat/completions")
        ratio[round], cost[round] = gw.rps / px.rps, px.us / gw.us
        ratio_so[round], cost_so[round] = so.rps / px.rps, px.us / so.us
        say("  round %d: gateway %.0f req/s %.0f us, proxy_pass %.0f req/s %.0f us, gateway without rules "
            .. "%.0f req/s %.0f us, upstream alone %.0f req/s %.0f us; gateway/proxy_pass = %.2f req/s, %.2f by CPU",
            round, gw.rps, gw.us, px.rps, px.us, so.rps, so.us, up.rps, up.us, ratio[round], cost[round])
    end
    say("gateway/proxy_pass: req/s %s, by CPU per request %s; the goal: >= 0.5", range(ratio), range(cost))
    say("gateway without the contract's rules (the same schema)/proxy_pass: req/s %s, by CPU %s", range(ratio_so),
        range(cost_so))
    end
    if only == "rounds" then return end

    -- Where the gateway's time goes, during one more /gateway run each:
    -- * folded stacks from LuaJIT's profiler in the worker (bench/nginx_bench_gateway_app.lua,
    --   "fold"), the VM state first: flame graph input, kept in out/nginx_gateway.folded;
    -- * perf's samples of the worker by library (the kernel's TCP, nginx, LuaJIT's VM and GC,
    --   the core), when perf can record here;
    -- * the JIT's trace aborts (jit.v).
    os.execute("mkdir -p out")
    local folded = util.sh("pwd"):match("^(%S+)") .. "/out/nginx_gateway.folded"
    -- BENCH_GW_PROFILE_MODE (a jit.p mode, e.g. "Fli1": functions and their lines): that
    -- report in out/nginx_gateway.prof as well, from one more run
    local pmode = os.getenv("BENCH_GW_PROFILE_MODE")
    if pmode then
        local report = util.sh("pwd"):match("^(%S+)") .. "/out/nginx_gateway.prof"
        curl.request { url = srv.base .. "/profile_start?mode=" .. pmode .. "&path=" .. report, timeout_ms = 2000 }
        wrk(srv.dir, profiled, srv.base)
        curl.request { url = srv.base .. "/profile_stop?mode=" .. pmode, timeout_ms = 2000 }
        say("jit.p %s report of the worker under %s in %s", pmode, profiled, report)
    end
    curl.request { url = srv.base .. "/profile_start?mode=fold&path=" .. folded, timeout_ms = 2000 }
    wrk(srv.dir, profiled, srv.base)
    curl.request { url = srv.base .. "/profile_stop?mode=fold", timeout_ms = 2000 }
    local states, self_, incl, total = {}, {}, {}, 0
    for line in (util.read(folded) or ""):gmatch("[^\n]+") do
        local stack, n = line:match("^(.*) (%d+)$")
        n = tonumber(n) or 0
        total = total + n
        local frames = {}
        for f in stack:gmatch("[^;]+") do frames[#frames + 1] = f end
        states[frames[1]] = (states[frames[1]] or 0) + n
        local leaf = frames[#frames]
        if #frames > 1 then self_[leaf] = (self_[leaf] or 0) + n end
        local seen = {}
        for i = 2, #frames do
            if not seen[frames[i]] then
                seen[frames[i]] = true
                incl[frames[i]] = (incl[frames[i]] or 0) + n
            end
        end
    end
    local function top(t, k)
        local rows = {}
        for name, n in pairs(t) do rows[#rows + 1] = { name, n } end
        table.sort(rows, function(x, y) return x[2] > y[2] end)
        local out = {}
        for i = 1, math.min(k, #rows) do out[i] = fmt("%s %.0f%%", rows[i][1], rows[i][2] * 100 / total) end
        return table.concat(out, ", ")
    end
    if total > 0 then
        local names = { N = "compiled", I = "interpreted", C = "C (or nginx)", G = "GC", J = "JIT compiler" }
        local st = {}
        for k, n in pairs(states) do st[#st + 1] = fmt("%s %.0f%%", names[k] or k, n * 100 / total) end
        table.sort(st)
        say("profile of the worker under %s (LuaJIT's profiler, %d samples, folded stacks in %s):", profiled, total,
            folded)
        say("  VM states: %s", table.concat(st, ", "))
        say("  self: %s", top(self_, 10))
        say("  inclusive: %s", top(incl, 12))
    end
    if select(2, nginx.run("command -v perf")) == 0 then
        local data = srv.dir .. "/perf.data"
        nginx.run(fmt("perf record -q -e cpu-clock -p %d -o %s -- sleep %d >/dev/null 2>&1 & sleep 0.2; "
            .. "wrk -t2 -c50 -d%ds -s %s/post.lua %s/gateway >/dev/null; wait", worker, data, SECONDS, SECONDS + 1,
            srv.dir, srv.base))
        local rep = nginx.run(fmt("perf report -i %s --sort dso --stdio 2>/dev/null", data))
        local rows = {}
        for pct, dso in rep:gmatch("\n%s+([%d%.]+)%%%s+(%S[^\n]*)") do
            if #rows < 8 then rows[#rows + 1] = fmt("%s %s%%", dso:gsub("%s+$", ""), pct) end
        end
        if #rows > 0 then say("perf: the worker under /gateway by library: %s", table.concat(rows, ", ")) end
    end
    local log = srv.dir .. "/jitv.txt"
    curl.request { url = srv.base .. "/profile_start?mode=jitv&path=" .. log, timeout_ms = 2000 }
    wrk(srv.dir, profiled, srv.base)
    curl.request { url = srv.base .. "/profile_stop?mode=jitv", timeout_ms = 2000 }
    -- the JIT's trace aborts by reason, most frequent first: code left to the interpreter
    local count, flushes, traces = {}, 0, 0
    for line in (util.read(log) or ""):gmatch("[^\n]+") do
        if line:find("flush", 1, true) then flushes = flushes + 1 end
        if line:match("^%[TRACE +%d") then traces = traces + 1 end
        local where, why = line:match("^%[TRACE %-%-%- (.-) %-%- (.-)%]$")
        if why then
            where = where:gsub("^%(%d+/%d+%) ", "")
            local k = why .. " at " .. where
            count[k] = (count[k] or 0) + 1
        end
    end
    local rows = {}
    for k, c in pairs(count) do rows[#rows + 1] = { k, c } end
    table.sort(rows, function(x, y) return x[2] > y[2] end)
    say("traces compiled in the worker under %s during one run: %d, trace flushes: %d (jit.v); aborts, most "
        .. "frequent first:", profiled, traces, flushes)
    for i = 1, math.min(10, #rows) do say("  %4d  %s", rows[i][2], rows[i][1]) end
end)
srv:stop()
if not ok then error(err, 0) end
