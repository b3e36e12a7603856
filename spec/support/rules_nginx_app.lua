-- The nginx side of spec/rules_nginx_spec.lua (not part of the library): a contract whose
-- rule loops, sleeps (ngx.sleep) or waits on a slow cosocket read, and a /ping that shows
-- the worker is free while such a rule waits. Runs on nginx's LuaJIT with build/luajit's core.
-- luacheck: globals ngx
local jc = require "jsoncontract"

local M = {}

local TEXT = '{"order_id":"1042"}'
local SCHEMA = { type = "object", properties = { order_id = { type = "string" } } }
local contracts = {}

-- The rule body for each kind (a function of this file, or source text run in the rules'
-- sandbox); `ctx.port` is the fault server's port for the cosocket one.
local RULES = {
    ok = function() end,
    -- waits briefly and then fails: the rule's answer wins the race with its timer
    nap = function(value)
        ngx.sleep(0.02)
        return { pointer = "/order_id", message = "order " .. value.order_id .. " checked after a wait" }
    end,
    loop = function() while true do end end,
    spin = function() local x = 0 while true do x = x + 1 end end,
    -- an endless loop in a coroutine the rule creates (the sandbox's coroutine.wrap, over
    -- OpenResty's: source text runs in the rules' sandbox)
    child = "coroutine.wrap(function() while true do end end)()",
    -- a wait inside a coroutine the rule creates, past the rule's budget (200 ms); ngx.sleep
    -- comes through ctx
    child_sleep = "local _, ctx = ... coroutine.wrap(function() ctx.sleep(1.5) end)()",
    -- a generator left suspended (it waits on nothing), then a wait of the rule's own; says so
    -- when that wait ended (a rule killed on time never gets there)
    gen_sleep = function()
        local gen = coroutine.wrap(function() coroutine.yield(1) end)
        gen()
        ngx.sleep(30)
        ngx.shared.rules:set("gen_sleep_ended", true)
    end,
    sleep = function()
        ngx.shared.rules:set("waiting", true)
        ngx.sleep(30) -- a slow lookup that yields the worker
    end,
    cosocket = function(_, ctx)
        ngx.shared.rules:set("waiting", true)
        local sock = ngx.socket.tcp()
        sock:settimeout(30000)
        assert(sock:connect("127.0.0.1", ctx.port))
        sock:send("GET /slow?n=100 HTTP/1.1\r\nHost: x\r\n\r\n")
        return sock:receive("*a") and nil -- 100 bytes at 200 ms each: a slow database
    end,
}

-- Several rules on one item: each changes its own copy and says what it saw, one naps
-- (waits within its budget) in "several_nap".
local function seen_once(name)
    return function(value)
        local was = value.order_id
        value.order_id = name
        if was ~= "1042" then return "rule " .. name .. " saw " .. tostring(was) end
    end
end
local function napping(value)
    ngx.sleep(0.01)
    return seen_once("nap")(value)
end

--- Compile one contract per rule kind (at init_by_lua time).
function M.init()
    contracts.several = jc.contract { name = "several", version = "1", instructions = "x", schema = SCHEMA,
        rules = { seen_once("a"), seen_once("b"), seen_once("c") } }
    contracts.several_nap = jc.contract { name = "several_nap", version = "1", instructions = "x", schema = SCHEMA,
        rules = { seen_once("a"), napping, seen_once("b"), seen_once("c"), { name = "last", check = function()
            return "last rule ran" end } } }
    for kind, f in pairs(RULES) do
        local budget, item = { ms = 1000 }, nil
        if kind == "spin" then budget, item = { ms = 300, steps = 1e15 }, { item_steps = 1e15 } end
        if kind == "child_sleep" or kind == "gen_sleep" then budget = { ms = 200 } end
        -- (the step budget must stop these: their wall time gets room no busy machine uses up)
        if kind == "loop" or kind == "child" then budget, item = { ms = 30000 }, { item_ms = 30000 } end
        contracts[kind] = jc.contract { name = kind, version = "1", instructions = "x", schema = SCHEMA,
            rules = { { name = kind, check = f, budget = budget } }, rules_budget = item }
    end
end

local function reply(value)
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode(value))
end

--- GET /rule?kind=K[&port=P]: contract:check with that rule; {ok} or {kind, limit, rule};
-- `ended`: whether a rule that says when its wait ended (gen_sleep) has said so.
function M.rule()
    local args = ngx.req.get_uri_args()
    local c = contracts[args.kind]
    local spawn, spawns = ngx.thread.spawn, 0
    ngx.thread.spawn = function(...) -- counted: the light threads the rules gate starts
        spawns = spawns + 1
        return spawn(...)
    end
    local ok, v, err = pcall(c.check, c, TEXT, { context = { port = tonumber(args.port), sleep = ngx.sleep } })
    ngx.thread.spawn = spawn
    if not ok then error(v, 0) end
    ngx.shared.rules:set("waiting", false)
    local ended = ngx.shared.rules:get(args.kind .. "_ended") or false
    if v then return reply({ ok = true, spawns = spawns, ended = ended }) end
    return reply({ ok = false, category = err.category, kind = err.kind, limit = err.limit or jc.null,
        rule = err.rule or jc.null, message = err.message, spawns = spawns, ended = ended })
end

-- Rules given as source text (in the rules' sandbox), each trying one way out of it.
local ESCAPES = {
    os_exit = "os.exit(3)",
    io_popen = "return io.popen('id'):read('*a')",
    io_open = "io.open('/tmp/jc-nginx-escape', 'w'):write('x')",
    loadlib = "package.loadlib('libc.so.6', 'system')",
    ffi = "require('ffi').cdef('int system(const char *)')",
    sethook_loop = "pcall(function() debug.sethook() end) while true do end",
    loop = "while true do end",
    memory = "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(1000) .. i end",
    big = "local s = ('x'):rep(3e8) for _ = 1, 1e4 do end return #s > 0",
    -- (a string doubled 40 times: 2^40 bytes, fewer instructions than one look at the count)
    double = "local s = 'x' for _ = 1, 40 do s = s .. s end return #s > 0",
    -- (the same in an item's second rule, after one that passed: from one rule to the next the
    -- collector runs at the host's pace, and whole cycles must be back at the second's first
    -- instruction)
    double_second = "local s = 'x' for _ = 1, 40 do s = s .. s end return #s > 0",
    string_table = "string.upper = nil",
    null_mt = "setmetatable(require('jsoncontract').null, {})",
    array_mt = "setmetatable(require('jsoncontract').array_mt, {})",
    bytecode = "assert(load(('').dump(function() end)))",
    dump = "string.dump(function() end)",
}

-- The worker's resident memory now ("VmRSS") or at its peak ("VmHWM"), KiB (Linux).
local function rss_kb(field)
    local f = io.open("/proc/self/status", "r")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return tonumber(s:match((field or "VmRSS") .. ":%s*(%d+)"))
end

--- GET /escape?case=NAME: a rule that tries that escape; {kind, message, pid, heap_kb, rss_kb,
-- peak_kb, upper} (upper: string.upper still works for the worker), or GET /escape?file=exit|shell: the
-- closures of spec/support/rules_sandbox_contract.lua, loaded as the gateway loads a file.
function M.escape()
    local args = ngx.req.get_uri_args()
    local c, text
    if args.file then
        local dir = package.searchpath("support.rules_nginx_app", package.path):match("^(.*)/") -- luacheck: ignore 143
        c = assert(jc.load_contract(dir .. "/rules_sandbox_contract.lua")).contract
        text = '{"' .. args.file .. '":true}'
    else
        -- (the memory and endless-loop cases get time enough that the memory or step budget, not
        -- a slow machine's clock, is what stops them)
        local roomy = args.case == "memory" or args.case == "big" or args.case:match("^double")
            or args.case:match("loop$")
        local list = { { name = args.case, check = assert(ESCAPES[args.case], "no such case"),
            budget = roomy and { ms = 30000 } or nil } }
        if args.case == "double_second" then table.insert(list, 1, { name = "first", check = "return true" }) end
        c = jc.contract { name = "escape", version = "1", instructions = "x", schema = SCHEMA, rules = list,
            rules_budget = roomy and { item_ms = 30000 } or nil }
        text = TEXT
    end
    local v, err = c:check(text)
    return reply({ ok = v ~= nil, kind = err and err.kind or jc.null, limit = err and err.limit or jc.null,
        message = err and err.message or jc.null, pid = ngx.worker.pid(), heap_kb = collectgarbage("count"),
        rss_kb = rss_kb() or jc.null, peak_kb = rss_kb("VmHWM") or jc.null, upper = ("abc"):upper() })
end

--- In a phase where nginx allows no light thread (header_filter: the gate's `spawn` is
-- refused and its rules run in plain coroutines): contract:check with the rules of `kind`;
-- "ok N" (N: the calls to spawn) or the error's kind and limit.
function M.in_phase(kind)
    local c = assert(contracts[kind], "no such kind")
    local spawn, spawns = ngx.thread.spawn, 0
    ngx.thread.spawn = function(...)
        spawns = spawns + 1
        return spawn(...)
    end
    local ok, v, err = pcall(c.check, c, TEXT, { context = {} })
    ngx.thread.spawn = spawn
    if not ok then return "raised " .. tostring(v) end
    if v then return "ok " .. spawns end
    return err.kind .. " " .. tostring(err.limit)
end

--- GET /ping?wait=1: with wait, answers once a rule is waiting (at most 10 s), saying whether
-- one was; without, at once.
function M.ping()
    local waited = false
    if ngx.var.arg_wait then
        for _ = 1, 1000 do
            if ngx.shared.rules:get("waiting") then
                waited = true
                break
            end
            ngx.sleep(0.01)
        end
    end
    return reply({ pong = true, served_while_rule_waited = waited })
end

return M
