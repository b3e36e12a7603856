-- The rules' sandbox: a rule (given as source text, or written as a closure in a contract file
-- loaded by jc.load_contract) reaches the pure libraries and its ctx, never the host: every
-- escape fails the rule with a named error, its budgets hold without the debug library, and
-- its memory is bounded (rules/rule_memory). On Lua 5.4 and LuaJIT alike; under nginx see
-- spec/rules_nginx_spec.lua, in a triage run spec/rules_triage_spec.lua.
local jc = require "jsoncontract"
local rules = require "jsoncontract.contract.rules"

local SCHEMA = { type = "object", properties = { tags = { type = "array" } } }
local TEXT = '{"tags":["x"]}'

local function check(rule, budget, ctx)
    local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA, rules = { rule },
        rules_budget = budget }
    return c:check(TEXT, ctx and { context = ctx })
end

-- The process's peak resident memory, KiB (Linux: VmHWM), or nil.
local function peak_kb()
    local f = io.open("/proc/self/status", "r")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return tonumber(s:match("VmHWM:%s*(%d+)"))
end

local function fails(kind, fragment, v, err)
    assert.is_nil(v)
    assert.equal("rules", err.category)
    assert.equal(kind, err.kind)
    assert.is_false(err.retry)
    if fragment then assert.truthy(err.message:find(fragment, 1, true), err.message) end
end

-- (name, source, error kind, a fragment of its message)
local ESCAPES = {
    { "os.exit", "os.exit(3)", "rule_error", "exit" },
    { "io.popen", "io.popen('id'):read('*a')", "rule_error", "'io'" },
    { "io.open", "io.open('/tmp/jc-sandbox-escape', 'w'):write('x')", "rule_error", "'io'" },
    { "package.loadlib", "package.loadlib('libc.so.6', 'system')", "rule_error", "'package'" },
    { "require 'ffi'", "local ffi = require 'ffi' ffi.cdef('int system(const char *)')", "rule_error",
        "require \"ffi\" is not available to rules" },
    { "require of a native module", "require 'jsoncontract.core'", "rule_error", "is not available to rules" },
    { "debug.sethook and an endless loop", "debug.sethook() while true do end", "rule_error", "'debug'" },
    { "an endless loop after a failed debug.sethook", "pcall(function() debug.sethook() end) while true do end",
        "rule_timeout", "steps" },
    { "setfenv (5.1)", "setfenv(1, {})", "rule_error", "setfenv" },
    { "getfenv (5.1)", "getfenv(0).x = 1", "rule_error", "getfenv" },
    { "collectgarbage('stop')", "collectgarbage('stop')", "rule_error", "collectgarbage(\"stop\") is not available" },
    { "string table mutation", "string.upper = function() return 'pwned' end", "rule_error",
        "string is read-only for rules" },
    { "string table mutation through the string metatable", "getmetatable('').__index.upper = nil", "rule_error",
        "index" },
    { "rawset on the string table", "rawset(string, 'upper', nil)", "rule_error", "rawset: this table is shared" },
    { "setmetatable on jc.null", "setmetatable(require('jsoncontract').null, {})", "rule_error", "setmetatable" },
    { "setmetatable on the array marker", "setmetatable(require('jsoncontract').array_mt, { __index = {} })",
        "rule_error", "this table is shared" },
    { "a field set on the array marker", "local v = ... getmetatable(v.tags).__name = 'pwned'", "rule_error",
        "jc.array_mt is read-only" },
    { "rawset on the array marker", "local v = ... rawset(getmetatable(v.tags), '__index', {})", "rule_error",
        "rawset: this table is shared" },
    { "load of bytecode", "assert(load(('').dump(function() end)))", "rule_error", "binary chunk" },
    { "load in binary mode", "assert(load('return 1', 'x', 'b'))", "rule_error", "source text only" },
    { "string.dump", "string.dump(function() end)", "rule_error", "dump" },
    { "a finalizer (runs outside the budget)", "setmetatable({}, { __gc = function() while true do end end })",
        "rule_error", "__gc" },
    { "jsoncontract's own table", "require('jsoncontract').null = 1", "rule_error", "read-only" },
    { "jc.ask (a network call)", "require('jsoncontract').ask()", "rule_error", "ask" },
    { "the contracts' shared metatable", [[
        local c = require("jsoncontract").contract { name = "x", version = "1", instructions = "x", schema = {} }
        getmetatable(c).__index.check = function() while true do end end]], "rule_error", "index" },
    { "the errors' shared metatable", [[
        local _, e = require("jsoncontract").decode("{")
        getmetatable(e).__tostring = function() while true do end end]], "rule_error", "index" },
    { "a trusted contract made inside the rule", [[
        local c = require("jsoncontract").contract { name = "x", version = "1", instructions = "x", schema = {},
            trusted = true, rules = { "os.exit(3)" } }
        local _, e = c:check("{}")
        error(e.message)]], "rule_error", "exit" },
    -- (5.4: __pairs's iterator hands out no state; LuaJIT's pairs gives the read-only view)
    { "pairs' state of a read-only library", "local _, state = pairs(string) state.upper = nil", "rule_error",
        "rule escape:1:" },
}

-- A wall budget no machine reaches, for the cases the step or memory budget must stop (on a
-- busy machine the default second has run out before ten million steps). The item's wall
-- budget (item_ms, default 5 s) bounds a rule's too: both are widened.
local STEPS_ONLY = { ms = 60000, item_ms = 60000 }

describe("the rules' sandbox", function()
    for _, case in ipairs(ESCAPES) do
        it("fails a rule that tries " .. case[1] .. " (" .. case[3] .. ")", function()
            local v, err = check({ name = "escape", check = case[2] }, STEPS_ONLY)
            fails(case[3], case[4], v, err)
            assert.equal("escape", err.rule)
        end)
    end

    it("leaves the process's tables as they were after all those tries", function()
        assert.is_string(tostring(select(2, jc.decode("{"))))
        assert.is_table(jc.contract { name = "x", version = "1", instructions = "x", schema = {} }:check("{}"))
        assert.equal("ABC", ("abc"):upper())
        assert.equal("function", type(string.dump))
        assert.equal("jsoncontract.array", rawget(jc.array_mt, "__name"))
        assert.is_nil(rawget(jc.array_mt, "__index"))
        assert.is_nil(io.open("/tmp/jc-sandbox-escape", "r"))
    end)

    it("offers the pure libraries, jc.null and what ctx hands it", function()
        local v = check([[
            local value, ctx = ...
            local jc = require "jsoncontract"
            assert(string.format("%05.1f", math.pi) == "003.1")
            assert(("a,b"):find(",", 1, true) == 2)
            assert(table.concat({ 1, 2 }, "-") == "1-2")
            assert(type(os.time()) == "number" and type(os.date("!%Y")) == "string" and os.clock() >= 0)
            assert(getmetatable(value.tags) == jc.array_mt)
            local mine = {}
            assert(getmetatable(setmetatable({}, mine)) == mine)
            local t = setmetatable({}, jc.array_mt)
            assert(jc.encode(t) == "[]" and jc.encode(jc.null) == "null")
            assert(select("#", pcall(error, "x")) == 2 and tostring(1) == "1" and tonumber("2") == 2)
            assert(load("return 1 + 1")() == 2)
            assert(collectgarbage("count") > 0)
            return ctx.lookup(value.tags[1])
        ]], nil, { lookup = function(tag) return tag == "x" end })
        assert.is_table(v)
    end)

    it("keeps the budgets with the debug library out of reach: a loop catching its error, a coroutine", function()
        fails("rule_timeout", "steps", check("while true do pcall(function() while true do end end) end", STEPS_ONLY))
        fails("rule_timeout", "steps", check("coroutine.wrap(function() while true do end end)()", STEPS_ONLY))
    end)

    describe("memory", function()
        it("fails a rule that grows the heap past its budget as rule_memory, and collects its garbage", function()
            local before = collectgarbage("count")
            local v, err = check("local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(1000) .. i end",
                { ms = 60000, item_ms = 60000, steps = 1e12 })
            fails("rule_memory", "ran over its budget of 64 MiB (memory)", v, err)
            assert.equal("memory", err.limit)
            assert.truthy(collectgarbage("count") < before + 16 * 1024, collectgarbage("count") - before .. " KiB more")
        end)

        it("fails a string.rep over the budget before it is made", function()
            local v, err = check({ name = "big", check = "return #string.rep('x', 3e8) > 0", budget = { mb = 8 } })
            fails("rule_memory", "ran over its budget of 8 MiB (memory)", v, err)
        end)

        -- (fewer instructions than one look at the budget's count: the end of a collection cycle
        -- has the hook look; on LuaJIT a cycle ends each time the heap doubles while a rule runs)
        it("fails a string doubled between two looks at the budget", function()
            local before, peak_before = collectgarbage("count"), peak_kb()
            local v, err = check({ name = "double", check = "local s = 'x' while true do s = s .. s end",
                budget = { mb = 16, ms = 60000 } }, STEPS_ONLY)
            fails("rule_memory", "16 MiB", v, err)
            assert.truthy(collectgarbage("count") < before + 16 * 1024, collectgarbage("count") - before .. " KiB more")
            -- stopped near its budget, not at the longest string the VM makes (LuaJIT: 2 GiB)
            local peak = peak_kb()
            if peak then assert.truthy(peak < peak_before + 512 * 1024, peak - peak_before .. " KiB more at the peak") end
        end)

        -- (LuaJIT: from one rule of an item to the next the collector runs at the host's pace;
        -- whole cycles must be back from the second rule's first instruction)
        it("fails a string doubled at once by an item's second rule", function()
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA, rules = {
                { name = "first", check = "local t = {} for i = 1, 1000 do t[i] = {} end" },
                { name = "double", check = "local s = 'x' while true do s = s .. s end", budget = { mb = 16, ms = 60000 } },
            }, rules_budget = STEPS_ONLY }
            local peak_before = peak_kb()
            local v, err = c:check(TEXT)
            fails("rule_memory", "rule double ran over its budget of 16 MiB", v, err)
            local peak = peak_kb()
            if peak then assert.truthy(peak < peak_before + 512 * 1024, peak - peak_before .. " KiB more at the peak") end
        end)

        -- (LuaJIT: the hook is global and the collector's pace the whole VM's: both are the
        -- host's again once the rules are done, whatever they came to)
        it("gives the host back its hook and its collector's pace after every kind of outcome", function()
            local function host_hook() end
            debug.sethook(host_hook, "", 1e6)
            local pace = collectgarbage("setstepmul", 300)
            for _, rule in ipairs { "return true", "return 'no'", "error('x')", "while true do end",
                    "local s = 'x' while true do s = s .. s end", "return {message = 1}" } do
                local v, err = check({ name = "r", check = rule, budget = { mb = 16, steps = 1e5 } })
                assert.is_true(v ~= nil or err ~= nil)
                local f, mask, count = debug.gethook()
                assert.same({ host_hook, "", 1e6 }, { f, mask, count }, rule)
                -- (setstepmul answers the multiplier it replaces)
                assert.equal(300, collectgarbage("setstepmul", 300), rule)
            end
            debug.sethook()
            if type(pace) == "number" and pace > 0 then collectgarbage("setstepmul", pace) end
        end)

        it("takes mb per rule and per contract, and refuses a bad one", function()
            assert.has_error(function() check(function() end, { mb = 0 }) end,
                "contract field 'rules_budget'.mb must be a positive number")
            fails("rule_memory", "1 MiB", check({ check = "local s = ('x'):rep(4e6) for _ = 1, 1e4 do end return #s > 0",
                budget = { mb = 1 } }))
        end)
    end)

    describe("contract files (jc.load_contract)", function()
        local dir
        setup(function()
            dir = os.tmpname()
            os.remove(dir)
            assert(os.execute("mkdir -p '" .. dir .. "'"))
        end)
        teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

        local function write(name, text)
            local f = assert(io.open(dir .. "/" .. name, "w"))
            f:write(text)
            f:close()
            return dir .. "/" .. name
        end

        it("runs the rules written as closures in the file, and their helpers, in the sandbox", function()
            local path = write("closures.lua", [[
local jc = require "jsoncontract"
local exit = os.exit            -- (nil here: os has no exit in the sandbox)
local function helper() return io.popen("id"):read("*a") end
local M = {}
M.contract = jc.contract { name = "closures", version = "1", instructions = "x", schema = { type = "object" },
    rules = {
        { name = "exit", check = function() exit(3) end },
        { name = "helper", check = function() return helper() end },
        { name = "passes", check = function(v) if v.x == jc.null then return nil end end },
    } }
return M
]])
            local mod = assert(jc.load_contract(path))
            local c = mod.contract
            fails("rule_error", "rule exit raised", c:check("{}"))
            local v, err = jc.contract { name = "h", version = "1", instructions = "x", schema = { type = "object" },
                rules = { c.rules[2].check } }:check("{}")
            fails("rule_error", "'io'", v, err)
            assert.matches("closures%.lua:%d+:", err.message)
        end)

        it("loads a file that says trusted = true as plain Lua", function()
            for _, where in ipairs { "trusted = true, ", "" } do
                local path = write("trusted.lua", [[
local jc = require "jsoncontract"
return { ]] .. where .. [[contract = jc.contract { name = "trusted", version = "1", instructions = "x",
    schema = { type = "object" }, trusted = true,
    rules = { function() return type(io) == "table" or "no io" end } } }
]])
                local mod = assert(jc.load_contract(path))
                assert.is_true(mod.contract.trusted)
                assert.is_table(mod.contract:check("{}"))
            end
        end)

        it("keeps a contract file's replay_context host code (the commands load it so)", function()
            assert(dofile("examples/orders.lua").open_shipped(dir .. "/orders.sqlite", "examples/orders.csv")):close()
            local mod = assert(require("jsoncontract.setup").load_contract("examples/support_ticket.lua"))
            local ctx = assert(mod.replay_context { evidence_dir = dir, root = "." })
            assert.is_true(ctx.orders:exists("1042"))
            -- and its rules are the sandboxed ones: what the file's closures reach is the sandbox's
            local v, err = mod.contract:check('{"intent":"other","order_id":"77777","urgent":false,"summary":"x"}',
                { context = ctx })
            assert.is_nil(v)
            assert.equal("rule_failed", err.kind)
            ctx.orders:close()
        end)

        it("loads a file whose first line says '-- jsoncontract: trusted' as plain Lua at once", function()
            local mod = assert(jc.load_contract(write("first_line.lua", [[
-- jsoncontract: trusted (it opens a file at its top level)
local f = assert(io.open("examples/orders.csv", "rb"))
f:close()
return { contract = require("jsoncontract").contract { name = "t", version = "1", instructions = "x",
    schema = { type = "object" }, trusted = true, rules = { function() return type(os.exit) == "function" end } } }
]])))
            assert.is_table(mod.contract:check("{}"))
        end)

        it("says why a file cannot load in the sandbox", function()
            local mod, err = jc.load_contract(write("native.lua", "local lfs = require 'lfs'\nreturn {}"))
            assert.is_nil(mod)
            assert.truthy(err:find("require \"lfs\" is not available to rules", 1, true), err)
            assert.truthy(select(2, jc.load_contract(dir .. "/missing.lua")):find("No such file", 1, true))
            assert.truthy(select(2, jc.load_contract(write("bin.lua", string.dump(function() end))))
                :find("binary chunk", 1, true))
        end)
    end)

    it("runs source text of a trusted contract with the process's globals", function()
        local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA, trusted = true,
            rules = { "return type(io) == 'table' or 'no io'" } }
        assert.is_table(c:check(TEXT))
        assert.has_error(function() check("return (") end)
    end)

    describe("set_interrupt", function()
        after_each(function() rules.set_interrupt(nil) end)

        it("stops a stuck rule when the run is stopping, as rule_interrupted", function()
            local n = 0
            rules.set_interrupt(function()
                n = n + 1
                if n > 100 then return "SIGTERM" end
            end)
            local v, err = check({ name = "stuck", check = "while true do end", budget = { steps = 1e15, ms = 60000 } }, STEPS_ONLY)
            fails("rule_interrupted", "rule stuck was stopped: the run is stopping (SIGTERM)", v, err)
            assert.equal("SIGTERM", err.signal)
            assert.equal("interrupt", err.limit)
        end)

        it("refuses what is not a function", function()
            assert.has_error(function() rules.set_interrupt(1) end, "set_interrupt: fn must be a function or nil")
        end)
    end)
end)

describe("a contract file with a mistake, loaded in the sandbox", function()
    it("is refused naming the author's file and line, not the sandbox's", function()
        local path = os.tmpname()
        finally(function() os.remove(path) end)
        local f = assert(io.open(path, "w"))
        f:write('local jc = require "jsoncontract"\nreturn { contract = jc.contract { name = "x", version = "1",\n'
            .. '    instructions = "i", schema = { type = "objct" } } }\n')
        f:close()
        local mod, err = jc.load_contract(path)
        assert.is_nil(mod)
        err = tostring(err)
        assert.truthy(err:find(path .. ":2: contract 'x': invalid schema at /type", 1, true), err)
        assert.is_nil(err:find("rules.lua", 1, true), err)
    end)
end)
