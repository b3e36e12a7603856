-- The gateway's own cost: requests/s of a round trip through jsoncontract.nginx serve() to an
-- upstream that answers at once (an OpenAI-shaped envelope from a location in the same nginx,
-- bench/nginx_bench_gateway_app.lua), against proxy_pass of the same request to the same
-- upstream (keep-alive both ways), and against the upstream alone. One worker, wrk -t2 -c50,
-- POST of a 200-byte mail, BENCH_NGINX_ROUNDS rounds (default 3) of BENCH_NGINX_SECONDS each
-- (default 3), locations interleaved, the median ratio. Both paths make two HTTP exchanges per
-- request in the one worker (client -> nginx, nginx -> upstream location), so the ratio is the
-- gateway's Lua work (prompt and request building, cosocket client, envelope, check, metrics)
-- against nginx's C proxy. Not a test: nothing asserts a time. Skipped when nginx, its lua
-- module or wrk is missing.
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
local srv = nginx.start {
    main = "env " .. KEY_ENV .. "=" .. KEY .. ";",
    ready = "/ready",
    worker_connections = 1024,
    http = function(port)
        local app = 'require("nginx_bench_gateway_app")'
        return table.concat({
            "lua_shared_dict jc_metrics 1m;",
            fmt("init_by_lua_block { %s.init{ root = %q, port = %d, key_env = %q } }", app,
                util.sh("pwd"):match("^(%S+)"), port, KEY_ENV),
            "upstream up_keepalive { server 127.0.0.1:" .. port .. "; keepalive 64; }",
            "server { listen 127.0.0.1:" .. port .. " backlog=1024;",
            '  location = /ready { return 200 "ok\\n"; }',
            "  location /up/ { content_by_lua_block { " .. app .. ".upstream() } }",
            "  location = /proxy { proxy_http_version 1.1; proxy_set_header Connection \"\";",
            "    proxy_pass http://up_keepalive/up/v1/chat/completions; }",
            "  location = /profile_start { content_by_lua_block { " .. app .. ".profile_start() } }",
            "  location = /profile_stop { content_by_lua_block { " .. app .. ".profile_stop() } }",
            "  location = /gateway { content_by_lua_block { " .. app .. '.gw:serve("support_ticket") } }',
            "  location = /gateway_schema_only { content_by_lua_block { " .. app
                .. '.gw:serve("ticket_schema_only") } }',
            "}" }, "\n")
    end,
}

local ok, err = pcall(function()
    -- one request each first: all must answer 200 (the gateway's 202, a hand-over, is a
    -- different path, which wrk would count as a success)
    local curl = require "jsoncontract.transport.curl"
    for _, path in ipairs { "/gateway", "/proxy", "/up/v1/chat/completions" } do
        local res = curl.request { url = srv.base .. path, body = MAIL, timeout_ms = 5000,
            headers = { ["Content-Type"] = "text/plain" } }
        if not res or res.status ~= 200 then
            error(path .. " does not answer 200: " .. (res and res.status .. " " .. res.body or "no answer"))
        end
        local r = wrk(srv.dir, path, srv.base)
        if r.non2xx > 0 or r.rps == 0 then error(path .. " does not answer 200: " .. r.out) end
    end
    say("nginx: serve() to an upstream in the same nginx vs proxy_pass to it; 1 worker, wrk -t2 -c50 "
        .. "-d%ds, POST %d-byte mail, %d rounds", SECONDS, #MAIL, ROUNDS)
    local ratios, ratios_up = {}, {}
    for round = 1, ROUNDS do
        local gw = wrk(srv.dir, "/gateway", srv.base)
        local px = wrk(srv.dir, "/proxy", srv.base)
        local up = wrk(srv.dir, "/up/v1/chat/completions", srv.base)
        ratios[round], ratios_up[round] = gw.rps / px.rps, px.rps / up.rps
        say("  round %d: gateway %.0f req/s (latency %s), proxy_pass %.0f req/s (latency %s), upstream alone "
            .. "%.0f req/s; gateway/proxy_pass = %.2f", round, gw.rps, gw.latency, px.rps, px.latency, up.rps,
            ratios[round])
    end
    table.sort(ratios)
    table.sort(ratios_up)
    say("gateway/proxy_pass = %.2f (median round; the goal: >= 0.5); proxy_pass/upstream alone = %.2f",
        ratios[math.floor((#ratios + 1) / 2)], ratios_up[math.floor((#ratios_up + 1) / 2)])
    -- Where the gateway's time goes: LuaJIT's sampling profiler in the worker during one more
    -- /gateway run, by VM state (compiled, interpreted, C, GC) and by function.
    for _, mode in ipairs { "vi1", "Fi1", "jitv" } do
        local out = srv.dir .. "/profile-" .. mode .. ".txt"
        curl.request { url = srv.base .. "/profile_start?mode=" .. mode .. "&path=" .. out, timeout_ms = 2000 }
        wrk(srv.dir, "/gateway", srv.base)
        curl.request { url = srv.base .. "/profile_stop?mode=" .. mode, timeout_ms = 2000 }
        local text = util.read(out) or "(no profile written)\n"
        if mode == "jitv" then
            -- the JIT's trace aborts by reason, most frequent first: code left to the interpreter
            local count = {}
            for line in text:gmatch("[^\n]+") do
                local where, why = line:match("^%[TRACE %-%-%- (.-) %-%- (.-)%]$")
                if why then
                    where = where:gsub("^%(%d+/%d+%) ", "")
                    local k = why .. " at " .. where
                    count[k] = (count[k] or 0) + 1
                end
            end
            local rows = {}
            for k, c in pairs(count) do rows[#rows + 1] = { k, c } end
            table.sort(rows, function(a, b) return a[2] > b[2] end)
            say("trace aborts in the worker under /gateway (jit.v), most frequent first:")
            for i = 1, math.min(12, #rows) do say("  %4d  %s", rows[i][2], rows[i][1]) end
        else
            say("profile of the worker under /gateway (jit.p %s, top of the samples):", mode)
            local n = 0
            for line in text:gmatch("[^\n]+") do
                n = n + 1
                if n <= 14 then say("  %s", line) end
            end
        end
    end
end)
srv:stop()
if not ok then error(err, 0) end
