-- Lua code run inside the C core's calls: a __gc finalizer runs at any allocation, and may
-- call the same validator, encode or stream again, or close the validator in use. Each call
-- must keep its own state (csrc/core.c jc_pcall_busy, schema_lua.c jc_v_call, encode.c
-- jc_encbuf, stream.c busy). And uniqueItems on shared Lua tables (a DAG) is bounded.
local core = require "jsoncontract.core"

-- Arm a finalizer that calls 'f' and re-arms itself while 'state.on'; GC set to run often.
local function with_finalizer(f, body)
    local state = { on = true, calls = 0 }
    local function arm()
        local function gc()
            if state.on then state.calls = state.calls + 1; f(state); arm() end
        end
        local proxy = rawget(_G, "newproxy")
        if proxy then getmetatable(proxy(true)).__gc = gc   -- LuaJIT / 5.1
        else setmetatable({}, { __gc = gc }) end
    end
    local restore
    if _VERSION == "Lua 5.4" then
        collectgarbage("incremental", 1, 1000, 0)
        restore = function() collectgarbage("incremental", 200, 100, 13) end
    else
        local pause = collectgarbage("setpause", 1)
        local mul = collectgarbage("setstepmul", 1000)
        restore = function() collectgarbage("setpause", pause); collectgarbage("setstepmul", mul) end
    end
    finally(function()
        state.on = false
        restore()
        collectgarbage("collect")
    end)
    arm()
    body(state)
    state.on = false
    return state
end

describe("jsoncontract.core reentry from __gc", function()
    it("validator:close() from a __gc during validate waits for the call's end", function()
        local arr = {}
        for i = 1, 20000 do arr[i] = i end
        local target, done = nil, 0
        local opts = { max_errors = 0 }
        local st = with_finalizer(function() if target then target:close() end end, function()
            for _ = 1, 5 do
                local v = core.compile({ items = { type = "string" } })
                target = v
                local ok, r, err = pcall(v.validate, v, arr, opts)
                target = nil
                if ok then    -- closed inside the call: it completed all the same
                    assert.is_nil(r)
                    assert.equal(20000, #err.errors)
                    done = done + 1
                else          -- closed by a __gc before the call began
                    assert.matches("validator is closed", r)
                end
                v:close()
                assert.has_error(function() v:validate(1) end,
                    "calling 'validate' on bad self (validator is closed)")
            end
        end)
        assert.is_true(st.calls > 0)
        assert.is_true(done > 0)
    end)

    it("the same validator called again from a __gc keeps the running call's pointers", function()
        local v = core.compile({ properties = { a = { items = { type = "string" } } } })
        local arr = {}
        for i = 1, 20000 do arr[i] = i end
        local inner_ok = true
        local st = with_finalizer(function(s)
            local _, err = v:validate({ [string.rep("Z", 64) .. s.calls] = { a = 1 } })
            inner_ok = inner_ok and err == nil
            local _, e2 = v:check('{"a":[1]}')
            inner_ok = inner_ok and e2.errors[1].pointer == "/a/0"
        end, function()
            local ok, err = v:validate({ a = arr }, { max_errors = 0 })
            assert.is_nil(ok)
            assert.equal(20000, #err.errors)
            for i, e in ipairs(err.errors) do
                assert.equal("/a/" .. (i - 1), e.pointer)
            end
        end)
        assert.is_true(st.calls > 0)
        assert.is_true(inner_ok)
        -- and afterwards the validator works as before (nothing left marked in use)
        assert.is_true(v:validate({ a = { "x" } }))
    end)

    it("encode called from a __gc during encode gives both callers their own text", function()
        local big = string.rep("x", 64 * 1024)
        local obj = {}
        for i = 1, 500 do
            local o = {}
            for j = 1, 20 do o["k" .. j] = string.rep("v", 50) end
            obj[i] = o
        end
        local expect = core.encode(obj)   -- the kept block is now > 4 KB
        local inner_ok = true
        local st = with_finalizer(function(s)
            if s.calls > 200 then return end
            inner_ok = inner_ok and core.encode({ big }) == '["' .. big .. '"]'
        end, function()
            for _ = 1, 3 do assert.equal(expect, core.encode(obj)) end
        end)
        assert.is_true(inner_ok)
        assert.has_error(function() core.encode({ function() end }) end)
        assert.equal(expect, core.encode(obj))
        -- the collector decides when a finalizer runs: inside encode on Lua 5.4 as a rule
        -- (LuaJIT's encode allocates too little), but not in every run of the whole suite
        if st.calls == 0 then pending("no finalizer ran inside encode this time") end
    end)

    it("stream feed from a __gc during feed's too_big path raises, the reader stays whole", function()
        local target, msgs = nil, {}
        local chunk = '["' .. string.rep("\n", 50000)
        local st = with_finalizer(function()
            if target then
                local ok, e = pcall(target.feed, target, string.rep("y", 100000))
                if not ok then msgs[tostring(e):match("stream is in use") or tostring(e)] = true end
            end
        end, function()
            for _ = 1, 20 do
                local r = core.stream_new({ max_bytes = 100000 })
                assert.is_true(r:feed(chunk))
                target = r
                local ok, err = r:feed(chunk .. chunk)
                local _, meta = r:preview()
                target = nil
                assert.is_nil(ok)
                assert.equal("too_big", err.kind)
                assert.is_true(meta.invalid)
                local ok2, err2 = r:feed("x")
                assert.is_nil(ok2)
                assert.equal(err, err2)
            end
        end)
        for m in pairs(msgs) do assert.equal("stream is in use", m) end
        if st.calls == 0 then pending("no finalizer ran inside feed this time") end
    end)

    it("uniqueItems on shared tables (a DAG) is quick, or budget_exceeded when hostile", function()
        local function chain(d) local t = { 1 } for _ = 1, d do t = { t, t } end return t end
        local v = core.compile({ uniqueItems = true })
        local t = chain(40)
        local ok, err = v:validate(t)
        assert.is_nil(ok)
        assert.equal("schema_mismatch", err.kind)
        ok, err = v:validate({ chain(40), chain(40) })
        assert.is_nil(ok)
        assert.equal("budget_exceeded", err.kind)
        local items = {}
        for i = 1, 40 do items[i] = chain(40) end
        local _; _, err = v:validate(items)
        assert.equal("budget_exceeded", err.kind)
        _, err = v:validate({ chain(5), chain(6), chain(5) })
        assert.equal("(root) has duplicate items at 0 and 2", err.errors[1].message)
        assert.is_true(v:validate({ chain(5), chain(6), { chain(5) } }))
    end)
end)
