-- jsoncontract.contract.rules: the rules gate. A rule sees its own copy (mutation at every
-- depth changes nothing that is accepted), what it returns is checked, and it runs under a
-- step and wall-time budget (endless loop, deep recursion, slow SQLite query, a wait in a
-- batch) that fails closed as rules/rule_timeout, on Lua 5.4 and LuaJIT alike.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local rules = require "jsoncontract.contract.rules"
local batch = require "jsoncontract.batch"
local util = require "support.util"

local SCHEMA = {
    type = "object",
    properties = {
        intent = { type = "string", enum = { "delivery", "return" } },
        order = { type = "object", properties = {
            id = { type = "string" },
            lines = { type = "array", items = { type = "object", properties = { sku = { type = "string" } } } },
        } },
        tags = { type = "array", items = { type = "string" } },
    },
    required = { "intent" },
    additionalProperties = false,
}
local TEXT = '{"intent":"delivery","order":{"id":"1042","lines":[{"sku":"a-1"},{"sku":"b-2"}]},"tags":["x","y"]}'

local function contract(rule, budget)
    return jc.contract { name = "t", version = "1", instructions = "Sort the mail.", schema = SCHEMA,
        rules = { rule }, rules_budget = budget }
end

local function check(rule, budget, ctx)
    return contract(rule, budget):check(TEXT, ctx and { context = ctx })
end

describe("jsoncontract.contract.rules", function()
    after_each(function() collectgarbage("collect") end)

    describe("the value a rule sees", function()
        local MUTATIONS = {
            { "sets a top-level field", function(v) v.intent = "HACKED" end },
            { "adds a top-level field", function(v) v.extra = 1 end },
            { "removes a required field", function(v) v.intent = nil end },
            { "changes a nested field", function(v) v.order.id = "9999" end },
            { "changes an array element at depth 3", function(v) v.order.lines[1].sku = "HACKED" end },
            { "appends to an array", function(v) v.tags[#v.tags + 1] = "z" end },
            { "replaces a nested table", function(v) v.order = { id = 1 } end },
            { "turns an array into an object", function(v) setmetatable(v.tags, nil); v.tags.k = 1 end },
            { "puts NaN and a function in", function(v) v.order.id = 0 / 0; v.tags[1] = print end },
            { "changes the array marker's table", function(v)
                local copy_mt = getmetatable(v.tags)
                assert(copy_mt == core.array_mt) -- the shared marker is the same table...
                setmetatable(v.order.lines, { __index = function() return "HACKED" end })
            end },
        }
        it("cannot change the array marker every JSON array shares (the rule errs; no array changes)", function()
            local v, err = check(function(v) getmetatable(v.tags).__index = function() return "HACKED" end end)
            assert.is_nil(v)
            assert.equal("rule_error", err.kind)
            assert.truthy(err.message:find("shared by every JSON array", 1, true), err.message)
            assert.is_nil(rawget(core.array_mt, "__index"))
            assert.is_nil(core.decode("[1]")[5])
            assert.has_error(function() setmetatable(core.array_mt, nil) end)
            assert.equal("jsoncontract.array", getmetatable(core.array_mt))
        end)
        for _, case in ipairs(MUTATIONS) do
            it("accepts the schema gate's value byte for byte when a rule " .. case[1], function()
                local v, report = check(case[2])
                assert.is_table(v, tostring(report))
                assert.equal(core.encode(core.decode(TEXT)), core.encode(v))
                assert.equal("delivery", v.intent)
            end)
        end

        it("gives each rule its own copy: a change by one rule never reaches the next", function()
            local seen
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA, rules = {
                function(v) v.order.lines[2].sku = "HACKED" end,
                function(v) seen = v.order.lines[2].sku end,
            } }
            assert.is_table(c:check(TEXT))
            assert.equal("b-2", seen)
        end)

        it("copies metatables as getmetatable shows them: the array marker kept, a key order copied", function()
            local v = jc.decode('{"a":[1,{"b":2}],"c":{"d":true}}', { keep_order = true })
            local c = rules.copy(v)
            assert.equal(core.array_mt, getmetatable(c.a))
            assert.not_equal(getmetatable(v), getmetatable(c))
            assert.same(getmetatable(v).__order, getmetatable(c).__order)
            getmetatable(c).__order[1] = "changed"
            assert.equal("a", getmetatable(v).__order[1])
            local locked = setmetatable({ x = 1 }, { __metatable = "locked", __index = function() return 0 end })
            local lc = rules.copy(locked)
            assert.is_nil(getmetatable(lc))
            assert.same({ x = 1 }, lc)
            local hostile = setmetatable({ y = 2 }, { __pairs = function() error("__pairs ran") end })
            assert.equal(2, rules.copy(hostile).y) -- read raw: no metamethod runs
            local key = { k = 1 }
            local kc = rules.copy({ [key] = "v", list = { 1, 2, 3 } })
            local copied_key = next(kc, nil) == "list" and next(kc, "list") or next(kc, nil)
            assert.not_equal(key, copied_key)
            assert.same(key, copied_key)
            assert.same({ 1, 2, 3 }, kc.list)
            assert.equal(5, rules.copy(5))
            assert.equal(print, rules.copy(print))
        end)

        it("refuses a value nested deeper than 3,000 tables, and copies the next value whole", function()
            local deep = {}
            for _ = 1, 3001 do deep = { deep } end
            assert.error_matches(function() rules.copy(deep) end, "nested too deep to copy for the rules", 1, true)
            local t = { a = { b = {} } }
            t.a.b.up = t
            local c = rules.copy(t)
            assert.equal(c, c.a.b.up)
            assert.not_equal(t, c)
        end)

        it("copies shared tables once and keeps cycles", function()
            local t = { a = {} }
            t.b, t.a.self = t.a, t.a
            local c = rules.copy(t)
            assert.not_equal(t.a, c.a)
            assert.equal(c.a, c.b)
            assert.equal(c.a, c.a.self)
        end)
    end)

    describe("what a rule returns", function()
        local CASES = {
            { "NaN", function() return 0 / 0 end, "rule_error", "returned a number" },
            { "a function", function() return print end, "rule_error", "returned a function" },
            { "a coroutine", function() return coroutine.create(function() end) end, "rule_error", "returned a thread" },
            { "a message that is a number", function() return { { message = 42 } } end, "rule_error",
                "a message of type number" },
            { "a pointer that is a table", function() return { pointer = {}, message = "x" } end, "rule_error",
                "a pointer of type table" },
            { "a raised table", function() error({ code = 42, message = "db down" }) end, "rule_error",
                'raised: {code = 42, message = "db down"}' },
            { "a raised table with __tostring", function()
                error(setmetatable({}, { __tostring = function() return "OrderDbError: timeout" end }))
            end, "rule_error", "raised: OrderDbError: timeout" },
            { "a yield", function() coroutine.yield("hello") end, "rule_error", "yielded" },
            { "a returned table whose reading raises", function()
                return setmetatable({}, { __index = function() error("no such field") end })
            end, "rule_error", "returned a value that raised when read: " },
        }
        for _, case in ipairs(CASES) do
            it("turns " .. case[1] .. " into rules/" .. case[3], function()
                local v, err = check(case[2])
                assert.is_nil(v)
                assert.equal("rules", err.category)
                assert.equal(case[3], err.kind)
                assert.equal("rule1", err.rule)
                assert.is_false(err.retry)
                assert.truthy(err.message:find(case[4], 1, true), err.message)
            end)
        end

        it("keeps the reason of false, reason", function()
            local _, err = check({ name = "why", check = function() return false, "order 1042 is closed" end })
            assert.equal("rule_failed", err.kind)
            assert.equal("order 1042 is closed", err.errors[1].message)
            assert.equal("order 1042 is closed", err.message)
            local _, plain = check({ name = "why", check = function() return false end })
            assert.equal("rule why failed", plain.message)
        end)

        it("reads false, reason and nil, reason alike, whatever form the reason takes", function()
            for _, first in ipairs { false, "nil" } do
                if first == "nil" then first = nil end
                for _, reason in ipairs { "closed", { pointer = "/intent", message = "closed" },
                    { { pointer = "/intent", message = "closed" } } } do
                    local _, err = check({ name = "why", check = function() return first, reason end })
                    assert.equal("rule_failed", err.kind)
                    assert.equal("closed", err.errors[1].message)
                end
            end
            -- an empty list after false or nil is no reason: false still fails, nil still passes
            local _, err = check({ name = "why", check = function() return false, {} end })
            assert.same({ "rule_failed", "rule why failed" }, { err.kind, err.message })
            assert.is_truthy((check({ name = "why", check = function() return nil, {} end })))
        end)

        it("keeps an earlier rule's failures when a later rule breaks", function()
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA, rules = {
                { name = "small", check = function() return { pointer = "/intent", message = "too many" } end },
                { name = "broken", check = function(_, ctx) return ctx.limit end } } }
            local v, err = c:check(TEXT)
            assert.is_nil(v)
            assert.same({ "rule_error", "broken", false }, { err.kind, err.rule, err.retry })
            assert.equal(1, #err.errors)
            assert.same({ "/intent", "too many", "small" }, { err.errors[1].pointer, err.errors[1].message,
                err.errors[1].rule })
        end)

        local BAD_VERDICTS = {
            { "an empty message", function() return "" end, "returned an empty message in error 1" },
            { "a blank message", function() return { pointer = "/intent", message = " \t\n" } end,
                "returned an empty message in error 1" },
            { "false and a blank message", function() return false, "   " end, "returned an empty message" },
            { "false and an empty message", function() return false, "" end, "returned an empty message" },
            { "an empty message in a list", function() return { "x", { message = "" } } end,
                "returned an empty message in error 2" },
            { "false and a number", function() return false, 42 end, "returned false and a number" },
            { "a pointer that does not start with /", function() return { pointer = "not a pointer\n", message = "x" } end,
                'returned the pointer "not a pointer\\10" in error 1, which is not a JSON Pointer (it does not start' },
            { "a pointer with a control character", function() return { pointer = "/a\0b", message = "x" } end,
                "(it has a control character)" },
            { "a pointer with a bad ~ escape", function() return { pointer = "/a~2", message = "x" } end,
                "(it has a ~ that is not ~0 or ~1)" },
        }
        for _, case in ipairs(BAD_VERDICTS) do
            it("turns " .. case[1] .. " into rules/rule_error naming the rule", function()
                local v, err = check({ name = "shape", check = case[2] })
                assert.is_nil(v)
                assert.same({ "rules", "rule_error", "shape", false }, { err.category, err.kind, err.rule, err.retry })
                assert.truthy(err.message:find("rule shape " .. case[3], 1, true)
                    or err.message:find(case[3], 1, true), err.message)
            end)
        end

        it("takes the empty pointer and pointers with ~0 and ~1", function()
            local _, err = check(function()
                return { { pointer = "", message = "a" }, { pointer = "/a~0b~1c/0", message = "b" } }
            end)
            assert.equal("rule_failed", err.kind)
            assert.same({ "", "/a~0b~1c/0" }, { err.errors[1].pointer, err.errors[2].pointer })
        end)

        it("makes a Latin-1 message valid UTF-8 with replacement characters", function()
            local v, err = check(function() return { pointer = "/intent", message = "Kunde M\252ller (\255)" } end)
            assert.is_nil(v)
            assert.equal("rule_failed", err.kind)
            assert.equal("Kunde M\239\191\189ller (\239\191\189)", err.errors[1].message)
            assert.truthy(core.encode(err.errors)) -- encodable
        end)

        it("bounds a long message and a long pointer, eliding the middle with the length", function()
            local long = string.rep("x", 5000)
            local _, err = check(function() return { pointer = "/" .. long, message = long } end)
            local e = err.errors[1]
            assert.truthy(#e.message < 600)
            assert.truthy(e.message:find("(5,000 bytes)", 1, true), e.message)
            assert.truthy(e.pointer:find("(5,001 bytes)", 1, true), e.pointer)
            assert.truthy(#err.message < 2100)
        end)

        it("keeps at most 50 errors of one rule and counts the rest", function()
            local _, err = check(function()
                local out = {}
                for i = 1, 1000 do out[i] = "bad " .. i end
                return out
            end)
            assert.equal(51, #err.errors)
            assert.equal("and 950 more errors from rule rule1", err.errors[51].message)
        end)
    end)

    describe("budgets", function()
        -- A rule that runs a contract check of its own reaches this module's bookkeeping (the
        -- worker pool, LuaJIT's hook table); the outer budget must never cut it halfway.
        it("leaves the gate whole when the budget runs out inside a nested check, at every step", function()
            local S = { type = "object" }
            local inner = jc.contract { name = "in", version = "1", instructions = "x", schema = S,
                rules = { function() end } }
            local plain = jc.contract { name = "p", version = "1", instructions = "x", schema = S,
                rules = { function() end } }
            local grain = rules.GRAIN
            rules.GRAIN = 1 -- a look at the budget at every instruction: every cut point is tried
            local ok, problem = pcall(function()
                for steps = 20, 400 do
                    local outer = jc.contract { name = "out", version = "1", instructions = "x", schema = S,
                        rules = { function() pcall(inner.check, inner, "{}") end }, rules_budget = { steps = steps } }
                    outer:check("{}")
                    local v, err = plain:check("{}")
                    if not v then error("after a nested check cut at " .. steps .. " steps: " .. tostring(err), 0) end
                end
            end)
            rules.GRAIN = grain
            assert.is_true(ok, problem)
        end)

        it("gives the hook that was set before back after a nested rule ran over its time", function()
            local S = { type = "object" }
            local function spin(ms) local t = core.monotonic() + ms / 1000 while core.monotonic() < t do end end
            local inner = jc.contract { name = "in", version = "1", instructions = "x", schema = S,
                rules = { function() spin(30) end }, rules_budget = { ms = 1000, item_ms = 1000 } }
            local outer = jc.contract { name = "out", version = "1", instructions = "x", schema = S,
                rules = { function() pcall(inner.check, inner, "{}") end }, rules_budget = { ms = 10, item_ms = 10 } }
            local function mine() end
            debug.sethook(mine, "", 1000000)
            local _, err = outer:check("{}")
            local hook, mask, count = debug.gethook()
            debug.sethook()
            assert.equal("rule_timeout", err.kind)
            assert.same({ mine, "", 1000000 }, { hook, mask, count })
        end)

        it("gives the hook that was set before back after several rules, and after a copy that raised", function()
            local list = rules.normalize({ function() end, function() return "no" end, function() end })
            local deep = {}
            local t = deep
            for _ = 1, core.MAX_DEPTH + 5 do t[1] = {} t = t[1] end
            local function mine() end
            debug.sethook(mine, "", 1000000)
            local _, err = rules.run(list, { a = 1 })
            local after_run = { debug.gethook() }
            local copied, problem = pcall(rules.run, list, deep)
            local after_raise = { debug.gethook() }
            rules.run(list, { a = 1 })
            local after_next = { debug.gethook() }
            debug.sethook()
            assert.equal("rule_failed", err.kind)
            assert.is_false(copied)
            assert.matches("nested too deep", problem)
            assert.same({ mine, "", 1000000 }, after_run)
            assert.same({ mine, "", 1000000 }, after_raise)
            assert.same({ mine, "", 1000000 }, after_next)
        end)

        it("keeps nothing of a checked reply's context once the check is done (workers are reused)", function()
            local c = contract(function() end)
            local weak = setmetatable({}, { __mode = "v" })
            do
                local ctx = { db = "request 1's handle" }
                weak[1] = ctx
                assert.is_table(c:check(TEXT, { context = ctx }))
            end
            collectgarbage("collect")
            collectgarbage("collect")
            assert.is_nil(weak[1])
        end)

        local function assert_timeout(v, err, limit)
            assert.is_nil(v)
            assert.equal("rules", err.category)
            assert.equal("rule_timeout", err.kind)
            assert.equal(limit, err.limit)
            assert.is_false(err.retry)
        end

        -- (the step cases get a wall budget no machine reaches: on a busy one the default
        -- second has run out before ten million steps; the item's, default 5 s, bounds a
        -- rule's too)
        local STEPS_ONLY = { ms = 60000, item_ms = 60000 }

        it("stops an endless loop (steps)", function()
            local v, err = check(function() while true do end end, STEPS_ONLY)
            assert_timeout(v, err, "steps")
            assert.truthy(err.message:find("rule rule1 ran over its budget of", 1, true))
        end)

        it("stops an endless loop in a helper defined outside the rule", function()
            local function helper() local x = 0 while true do x = x + 1 end end
            local _, err = check(function() helper() end)
            assert.equal("rule_timeout", err.kind)
        end)

        it("stops an endless loop that catches the budget's error with pcall", function()
            local _, err = check(function()
                while true do pcall(function() while true do end end) end
            end)
            assert.equal("rule_timeout", err.kind)
        end)

        it("stops an endless loop by wall time when the step budget is large", function()
            local _, err = check({ name = "spin", check = function() while true do end end,
                budget = { steps = 1e15, ms = 50 } })
            assert.equal("rule_timeout", err.kind)
            assert.equal("ms", err.limit)
            assert.equal("spin", err.rule)
        end)

        -- A coroutine the rule creates runs under the rule's budget: the sandbox's `coroutine`
        -- adopts it. (The loops are long, not endless, so that code that does not count them
        -- fails here instead of hanging.)
        local LONG = "local function long_loop() local x = 0 for _ = 1, 3000000 do x = x + 1 end return x end\n"
        local function long_loop() local x = 0 for _ = 1, 3000000 do x = x + 1 end return x end
        local CHILDREN = {
            { "coroutine.wrap", "coroutine.wrap(long_loop)()" },
            { "coroutine.create", "assert(coroutine.resume(coroutine.create(long_loop)))" },
            { "a coroutine inside a coroutine", "coroutine.wrap(function() coroutine.wrap(function() long_loop() end)() end)()" },
            { "a coroutine that catches the budget's error", [[
                coroutine.wrap(function()
                    for _ = 1, 3000 do pcall(function() for _ = 1, 1000 do end end) end
                end)()]] },
            { "a coroutine that yields between loops", [[
                local gen = coroutine.wrap(function() while true do long_loop() coroutine.yield() end end)
                for _ = 1, 3 do gen() end]] },
        }
        for _, case in ipairs(CHILDREN) do
            it("counts the steps of " .. case[1] .. " the rule creates", function()
                local v, err = check({ name = "gen", check = LONG .. case[2], budget = { steps = 100000, ms = 60000 } },
                    STEPS_ONLY)
                assert_timeout(v, err, "steps")
                assert.equal("gen", err.rule)
                assert.is_table(check(function() end)) -- and the next check runs as ever
            end)
        end

        it("stops a coroutine the rule creates by wall time", function()
            -- 3 s of processor time take at least 3 s of wall time: the 50 ms budget ends the
            -- loop inside the coroutine, which then never gets to say it ran to its end
            local ctx = {}
            local v, err = check({ name = "gen", budget = { steps = 1e15, ms = 50 }, check = [[
                local _, ctx = ...
                coroutine.wrap(function()
                    local stop = os.clock() + 3
                    while os.clock() < stop do end
                    ctx.loop_ended = true
                end)()]] }, nil, ctx)
            assert_timeout(v, err, "ms")
            assert.is_nil(ctx.loop_ended)
        end)

        it("counts the steps of coroutines a rule creates against the item", function()
            -- each rule's coroutine runs 3-6 million instructions, under 8 million of its own
            local spin = LONG .. "coroutine.wrap(long_loop)()"
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA,
                rules = { spin, spin, spin },
                rules_budget = { steps = 8000000, item_steps = 8000000, ms = 60000, item_ms = 60000 } }
            local _, err = c:check(TEXT)
            assert.equal("rule_timeout", err and err.kind)
            assert.equal("steps", err.limit)
            assert.not_equal("rule1", err.rule)
        end)

        it("leaves alone a coroutine a rule made once the rule is done", function()
            local ctx = {}
            local v = check("local _, c = ... c.gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)",
                nil, ctx)
            assert.is_table(v)
            assert.same({ 1, 2, 3 }, { ctx.gen(), ctx.gen(), ctx.gen() })
            assert.equal(3000000, coroutine.wrap(long_loop)()) -- and other code is not counted
        end)

        it("never changes the global coroutine table (the budget-aware one is the sandbox's)", function()
            -- (a fresh interpreter: this one may have loaded the module long before)
            local script = os.tmpname()
            local f = assert(io.open(script, "w"))
            f:write([[
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("JC_TEST_CPATH") or "build/lua5.4/?.so") .. ";" .. package.cpath
local create, wrap = coroutine.create, coroutine.wrap
local jc = require "jsoncontract"
local c = jc.contract { name = "t", version = "1", instructions = "x", schema = {},
    rules = { "coroutine.wrap(function() end)()" } }
assert(c:check("{}"))
print(coroutine.create == create, coroutine.wrap == wrap)
]])
            f:close()
            local said = util.sh(util.LUA .. " " .. script .. " 2>&1")
            os.remove(script)
            assert.equal("true\ttrue\n", said)
        end)

        it("stops a raised table whose __tostring never returns (it runs under the budget)", function()
            local _, err = check(function()
                error(setmetatable({}, { __tostring = function() while true do end end }))
            end)
            assert.equal("rule_timeout", err.kind)
        end)

        it("stops a deep recursion that runs out of stack", function()
            -- a wall budget no machine reaches: only the stack may stop it (under ASan on a
            -- busy machine, growing a 5.4 stack to its limit has taken over the default second)
            local _, err = check({ name = "rule1", budget = { ms = 60000 }, check = function()
                local function down(n) return 1 + down(n + 1) end
                return down(1)
            end }, STEPS_ONLY)
            assert.equal("rule_timeout", err.kind)
            assert.equal("stack", err.limit)
        end)

        it("stops a deep exponential recursion (steps)", function()
            local _, err = check(function()
                local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
                return fib(60)
            end, STEPS_ONLY)
            assert.equal("rule_timeout", err.kind)
            assert.equal("steps", err.limit)
        end)

        it("fails a slow SQLite query closed, whatever the rule answered", function()
            local ok, driver = pcall(require, "luasql.sqlite3")
            if not ok then return pending("luasql.sqlite3 not installed") end
            local env = driver.sqlite3()
            local conn = assert(env:connect(":memory:"))
            finally(function() conn:close(); env:close() end)
            local _, err = check({ name = "order_in_db", budget = { ms = 100 }, check = function()
                local cur = assert(conn:execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 " ..
                    "FROM c WHERE x < 2000000) SELECT count(*) FROM c"))
                cur:fetch()
                cur:close()
                return true -- passes, but too late to be trusted
            end })
            assert.equal("rule_timeout", err.kind)
            assert.equal("ms", err.limit)
            assert.equal("order_in_db", err.rule)
        end)

        it("cuts a rule's wait in a batch to its budget while the other items go on", function()
            local c = contract({ name = "slow_lookup", budget = { ms = 200 }, check = function()
                batch.sleep(30) -- a slow lookup that waits through the scheduler
            end })
            local quick = jc.contract { name = "q", version = "1", instructions = "x", schema = SCHEMA,
                rules = { function() end } }
            local order = {}
            local results = batch.run({ c, quick }, function(k)
                local v, err = k:check(TEXT)
                return { v = v, err = err }
            end, { on_done = function(i) order[#order + 1] = i end })
            assert.same({ 2, 1 }, order)
            assert.is_table(results[2].v)
            assert.equal("rule_timeout", results[1].err.kind)
            assert.equal("ms", results[1].err.limit)
        end)

        it("has a budget per item over all rules", function()
            -- each rule runs 4 to 8 million instructions, under its own budget of 10 million
            local spin = function() local x = 0 for _ = 1, 2000000 do x = x + 1 end end
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = SCHEMA,
                rules = { spin, spin, spin, spin }, rules_budget = { item_steps = 12000000, ms = 60000, item_ms = 60000 } }
            local _, err = c:check(TEXT)
            assert.equal("rule_timeout", err.kind)
            assert.equal("steps", err.limit)
            assert.not_equal("rule1", err.rule)
        end)

        it("leaves the interpreter's hook as it was", function()
            local before = debug.gethook()
            check(function() while true do end end)
            assert.equal(before, (debug.gethook()))
        end)

        it("documents its defaults", function()
            assert.same({ steps = 10000000, ms = 1000, item_steps = 50000000, item_ms = 5000, mb = 64 }, rules.DEFAULT_BUDGET)
        end)

        it("raises on a budget of the wrong shape", function()
            assert.has_error(function() contract(function() end, { steps = -1 }) end,
                "contract field 'rules_budget'.steps must be a positive number")
            assert.has_error(function() contract(function() end, { seconds = 1 }) end,
                "contract field 'rules_budget': unknown field 'seconds'")
            assert.has_error(function() contract({ check = function() end, budget = { ms = 0 / 0 } }) end,
                "contract rule 1: budget.ms must be a positive number")
        end)
    end)
end)

describe("a rule's batch.send outside a batch", function()
    local c_def = {
        name = "sends", version = "1.0.0", instructions = "x", schema = { type = "object" }, trusted = true,
        rules = { function()
            local res, err = batch.send { url = "http://127.0.0.1:1/lookup" }
            if not res then return "lookup failed: " .. tostring(err.category) end
            return res.body == "known" or "unknown"
        end },
    }

    it("goes through the transport the caller passes (check{transport=}, the run's)", function()
        local c = jc.contract(c_def)
        local seen = {}
        local function send(req)
            seen[#seen + 1] = req
            return { status = 200, headers = {}, body = "known" }
        end
        local v, report = c:check("{}", { transport = send })
        assert.is_table(v, report and report.message)
        assert.same({}, report.adapters)
        assert.equal(1, #seen)
        assert.equal("http://127.0.0.1:1/lookup", seen[1].url)
        assert.is_true(seen[1].timeout_ms >= 1 and seen[1].timeout_ms <= rules.DEFAULT_BUDGET.ms + 1)
        -- and through rules.run's `send` argument
        local list = rules.normalize(c_def.rules)
        assert.is_true(rules.run(list, {}, nil, nil, send))
        assert.equal(2, #seen)
    end)

    it("without one, goes through the transport jsoncontract.transport.default picks (curl here)", function()
        local _, err = jc.contract(c_def):check("{}")
        assert.equal("rule_failed", err.kind)
        assert.matches("lookup failed: transport", err.message)
    end)
end)
