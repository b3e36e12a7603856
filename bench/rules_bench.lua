-- make bench: what the rules gate and the one redaction cost, against their plain peers
-- under the same Lua, side by side in one run.
--   rules:  a contract's rules gate (a copy per rule, the budget hook) against calling the
--           same rule on the value in a plain coroutine (the cost of the copy and the budget)
--   redact: secrets.redact (every spelling of the key) against a plain string.find
--           replacement (raw bytes only), on a 1 KB envelope and a 1 MB body
-- Prints microseconds per call (best of ROUNDS alternating rounds of CPU time, os.clock) and
-- the ratio gate/plain. Not a test: nothing here asserts a time.
--   lua5.4 bench/rules_bench.lua   (after make);   make bench LUA=luajit
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
