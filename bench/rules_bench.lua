-- make bench: what the rules gate and the one redaction cost, against their plain peers
-- under the same Lua, side by side in one run.
--   rules:  a contract's rules gate (a copy per rule, the budget hook) against calling the
--           same rule on the value in a plain coroutine (the cost of the copy and the budget)
--   redact: secrets.redact (every spelling of the key) against a plain string.find
--           replacement (raw bytes only), on a 1 KB envelope and a 1 MB body
-- Prints microseconds per call (best of ROUNDS alternating rounds of CPU time, os.clock) and
-- the ratio gate/plain. Then, under PUC Lua with nginx, its lua module, wrk and valgrind here
-- (BENCH_RULES_NGINX=0 skips it): what the gate costs inside nginx, in user-space instructions
-- per request (callgrind, one process, wrk -c1: counts, which the load on the machine does not
-- move) of locations that answer "ok" after nothing, after `rules.run` of one rule that looks
-- at nothing, of one that looks an order up in a table, and after allocating 40 KB (a
-- gateway request's garbage) with and without the rule: the rule's cost is the difference,
-- and the last pair shows what the collector's whole cycles while a rule runs cost across
-- requests (the worker holds LIVE_MB, default 4, MiB of live tables); and the bytes the gate
-- allocates per passing rule. Not a test: nothing here asserts a time.
--   lua5.4 bench/rules_bench.lua   (after make and make LUA=luajit);   make bench LUA=luajit
local is_jit = type(jit) == "table"
local build = os.getenv("BUILD") or (is_jit and "build/luajit" or "build/lua5.4")
package.cpath = build .. "/?.so;" .. package.cpath
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

local jc = require "jsoncontract"
local rules = require "jsoncontract.contract.rules"
local secrets = require "jsoncontract.secrets"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 15
local clock, fmt = os.clock, string.format

local TICKET = '{"intent":"delivery","order_id":"55310","urgent":true,"summary":"The customer\'s parcel for '
    .. 'order 55310 has not arrived after two weeks and they need it before Friday for a birthday.",'
    .. '"tags":["late","express","refund"],"lines":[{"sku":"A-1","qty":1},{"sku":"B-2","qty":3}]}'
local VALUE = jc.decode(TICKET)
local KNOWN = { ["55310"] = true }
local function rule(v) if not KNOWN[v.order_id] then return { pointer = "/order_id", message = "unknown" } end end
local LIST, BUDGET = rules.normalize({ { name = "order_exists", check = rule } })

local function plain_gate()
    local co = coroutine.create(rule)
    return coroutine.resume(co, VALUE, nil)
end
local function gate() return rules.run(LIST, VALUE, nil, BUDGET) end

local KEY = "sk-proj-0123456789abcdefghijklmnopqrstuv"
local ENVELOPE = '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":'
    .. '"assistant","content":' .. jc.encode(TICKET) .. '},"finish_reason":"stop"}],"usage":{"prompt_tokens":'
    .. '120,"completion_tokens":60}}'
local BIG = string.rep(ENVELOPE, math.floor(1024 * 1024 / #ENVELOPE))

local start = 0
local function plain_redact(text)
    -- the start moves over the first 8 bytes: LuaJIT hoists a find whose arguments never
    -- change out of the loop (the column measured 0.00 us)
    start = start % 8 + 1
    local i, j = text:find(KEY, start, true)
    if not i then return text end
    return text:sub(1, i - 1) .. "[redacted]" .. text:sub(j + 1)
end

-- Best time per call (µs) of `f` over `n` calls, `ROUNDS` times, alternating with `g`.
local function pair(n, f, g)
    local best_f, best_g = math.huge, math.huge
    for _ = 1, ROUNDS do
        local t = clock()
        for _ = 1, n do f() end
        best_f = math.min(best_f, (clock() - t) / n)
        t = clock()
        for _ = 1, n do g() end
        best_g = math.min(best_g, (clock() - t) / n)
    end
    return best_f * 1e6, best_g * 1e6
end

print(fmt("%s, %d rounds", is_jit and jit.version or _VERSION, ROUNDS))
print(fmt("%-34s %12s %12s %8s", "case", "gate us", "plain us", "ratio"))
local function row(name, n, f, g)
    local a, b = pair(n, f, g)
    print(fmt("%-34s %12.2f %12.2f %8.2f", name, a, b, a / b))
end
row("rules gate, one rule, 1 KB value", 2000, gate, plain_gate)
-- The lengths go to a sink: LuaJIT drops string work whose result is never read.
local sink = 0
row("redact, 1 KB envelope", 2000, function() sink = sink + #secrets.redact(ENVELOPE, KEY) end,
    function() sink = sink + #plain_redact(ENVELOPE) end)
row("redact, 1 MB body", 3, function() sink = sink + #secrets.redact(BIG, KEY) end,
    function() sink = sink + #plain_redact(BIG) end)
assert(sink > 0)

-- Inside nginx (see the top): instructions per request of each location.
local function nginx_part()
    package.path = "spec/?.lua;" .. package.path
    local nginx = require "support.nginx_server"
    local missing = nginx.missing()
    if not missing and select(2, nginx.run("command -v wrk valgrind callgrind_control")) ~= 0 then
        missing = "wrk or valgrind not found on PATH"
    end
    if missing then return print("rules gate in nginx: skipped: " .. missing) end
    local dir = nginx.run("mktemp -d"):match("^(%S+)")
    local app = [[
local rules = require "jsoncontract.contract.rules"
local VALUE = require("jsoncontract").decode(']] .. TICKET:gsub("'", "\\'") .. [[')
local KNOWN = { ["55310"] = true }
local NOTHING, BUDGET = rules.normalize({ { name = "nothing", check = function() return nil end } })
local LOOKUP = rules.normalize({ { name = "order_exists",
    check = function(v) if not KNOWN[v.order_id] then return "unknown order" end end } })
local LIVE = {}
for i = 1, ]] .. (tonumber(os.getenv("LIVE_MB")) or 4) .. [[ * 1024 * 1024 / 200 do LIVE[i] = { i, tostring(i) .. "-live-live-live" } end
local function garbage()
    local t = {}
    for i = 1, 640 do t[i] = { i, i + 1 } end
    return t
end
package.loaded.rules_bench_app = {
    none = function() ngx.say("ok") end,
    nothing = function() assert(rules.run(NOTHING, VALUE, nil, BUDGET)) ngx.say("ok") end,
    lookup = function() assert(rules.run(LOOKUP, VALUE, nil, BUDGET)) ngx.say("ok") end,
    garbage = function() garbage() ngx.say("ok") end,
    garbage_nothing = function() garbage() assert(rules.run(NOTHING, VALUE, nil, BUDGET)) ngx.say("ok") end,
    -- bytes the gate allocates per passing rule (the collector stopped over 100 runs)
    alloc = function()
        collectgarbage("stop")
        local before = collectgarbage("count")
        for _ = 1, 100 do assert(rules.run(NOTHING, VALUE, nil, BUDGET)) end
        local bytes = (collectgarbage("count") - before) * 1024 / 100
        collectgarbage("restart")
        ngx.say(string.format("%.0f", bytes))
    end,
    live = LIVE,
}]]
    local f = assert(io.open(dir .. "/app.lua", "w"))
    f:write(app)
    f:close()
    local seconds = tonumber(os.getenv("BENCH_RULES_NGINX_SECONDS")) or 4
    local res, err = nginx.with_callgrind({ worker_connections = 64, ready = "/none", http = function(port)
        return table.concat({ fmt("init_by_lua_block { dofile(%q) }", dir .. "/app.lua"),
            "server { listen 127.0.0.1:" .. port .. ";",
            "  location / { content_by_lua_block { package.loaded.rules_bench_app[ngx.var.uri:sub(2)]() } } }" },
            "\n")
    end }, function(srv)
        local out = { alloc = tonumber((nginx.run("curl -sf " .. srv.base .. "/alloc"))) or 0 }
        for _, path in ipairs { "none", "nothing", "lookup", "garbage", "garbage_nothing" } do
            nginx.run(fmt("wrk -t1 -c1 -d2s %s/%s", srv.base, path)) -- warm up: the traces are made
            local dump, n, non2xx = srv:count("/" .. path, fmt("-d%ds", seconds))
            local total = nginx.dump_total(dump)
            if n == 0 or non2xx > 0 or not total then error(path .. ": no count (" .. n .. " requests)") end
            out[path] = total / n
        end
        return out
    end)
    nginx.run("rm -rf " .. nginx.q(dir))
    if not res then return print("rules gate in nginx: no count: " .. err) end
    print(fmt("rules gate in nginx, instructions per request (callgrind, one process, wrk -c1): "
        .. "a location answering ok %.0f; with one rule that looks at nothing +%.0f; one that looks the order "
        .. "up +%.0f; 40 KB of garbage %.0f, with the rule that looks at nothing +%.0f; %.0f bytes allocated "
        .. "per passing rule", res.none, res.nothing - res.none, res.lookup - res.none, res.garbage,
        res.garbage_nothing - res.garbage, res.alloc))
end
if not is_jit and os.getenv("BENCH_RULES_NGINX") ~= "0" then nginx_part() end
