-- The FFI path (jsoncontract.ffi, LuaJIT) against the C API path: the same values, errs and
-- raises on JSONTestSuite, the support-emails corpus and edge cases, and no harm from a
-- finalizer that decodes while a value is built. Pending where ffi is not available (PUC Lua).
local core = require "jsoncontract.core"
local jffi = require "jsoncontract.ffi"
local util = require "support.util"

-- Deep equality of two decoded values, metatables (array_mt) included; 'what' names the path.
local function same(a, b, what)
    if type(a) ~= type(b) then error(what .. ": " .. type(a) .. " / " .. type(b)) end
    if type(a) == "table" then
        if getmetatable(a) ~= getmetatable(b) then error(what .. ": metatables differ") end
        for k, v in pairs(a) do same(v, b[k], what .. "/" .. tostring(k)) end
        for k in pairs(b) do
            if a[k] == nil then error(what .. ": extra key " .. tostring(k)) end
        end
    elseif a ~= b and not (a ~= a and b ~= b) then
        error(what .. ": " .. tostring(a) .. " / " .. tostring(b))
    end
end

local ERR_FIELDS = { "category", "kind", "message", "offset", "line", "column", "pointer", "key" }

-- Decode 'text' both ways and compare values or errs.
local function both(text, what)
    local va, ea = core.decode(text)
    local vb, eb = jffi.decode(text)
    if va == nil then
        assert.is_nil(vb, what)
        for _, f in ipairs(ERR_FIELDS) do assert.equal(ea[f], eb[f], what .. " err." .. f) end
    else
        same(va, vb, what)
    end
end

local function list(dir)
    local names = {}
    local p = io.popen('ls -1 "' .. dir .. '" 2>/dev/null')
    for name in p:lines() do names[#names + 1] = name end
    p:close()
    return names
end

describe("jsoncontract.ffi", function()
    if not jffi.available then
        it("is available on LuaJIT", function() pending("FFI path not available: " .. tostring(jffi.reason)) end)
        return
    end

    it("decodes every JSONTestSuite file as core.decode does", function()
        local dir = util.shared("corpora/JSONTestSuite/test_parsing")
        local names = list(dir)
        if #names == 0 then pending("JSONTestSuite not found") end
        for _, name in ipairs(names) do both(util.read(dir .. "/" .. name), name) end
    end)

    it("decodes the support-emails corpus as core.decode does, line by line and as one array", function()
        local text = util.read(util.shared("corpora/support-emails/emails.jsonl"))
        if not text then pending("support-emails corpus not found") end
        local lines = {}
        for line in text:gmatch("[^\n]+") do
            lines[#lines + 1] = line
            both(line, "line " .. #lines)
        end
        both("[" .. table.concat(lines, ",") .. "]", "the corpus as one array")
    end)

    it("agrees on edge cases: nesting, empty containers, numbers, escapes, limits", function()
        local CASES = {
            "{}", "[]", "[[]]", '{"a":{}}', '{"a":[],"b":[{}]}', "0", "-0", "1e2", "-1.5",
            "9007199254740993", "123456789012345678901234567890", "1e-400", "true", "false", "null",
            '"\\u00e9\\ud83d\\ude00\\n"', '{"\\u0061b":1,"c\\"d":[1,"x",null,true]}', '""',
            string.rep("[", 1000) .. string.rep("]", 1000), string.rep("[", 1001) .. string.rep("]", 1001),
            '{"a":[1,2,{"b":[3,{"c":4}]}],"d":5}', '[1,[2,[3,[4]]],5]', '{"note":"a\\qb"}',
            '{"a":1,"a":2}', "", " ", "[1,]", '{"x":tru}', "\239\187\191{}", '"a\0b"',
        }
        for i, text in ipairs(CASES) do both(text, "case " .. i) end
    end)

    it("raises as core.decode does on misuse, and takes options through core.decode", function()
        assert.has_error(function() jffi.decode(nil) end)
        assert.has_error(function() jffi.decode({}) end)
        assert.has_error(function() jffi.decode("1", { nope = true }) end)
        assert.has_error(function() jffi.decode("1", nil, 3) end)
        local v = jffi.decode('{"b":1,"a":2}', { keep_order = true })
        assert.same({ "b", "a" }, getmetatable(v).__order)
        local _, err = jffi.decode("[[1]]", { max_depth = 1 })
        assert.equal("too_deep", err.kind)
    end)

    -- check_json / check both ways on one validator and text: same result or same err.
    local function check_both(v, text, what)
        for _, m in ipairs { "check_json", "check" } do
            local a, ea = jffi.capi[m](v, text)
            local b, eb = jffi[m](v, text)
            if a == nil then
                assert.is_nil(b, what)
                assert.equal(tostring(ea), tostring(eb), what)
                for _, f in ipairs(ERR_FIELDS) do assert.equal(ea[f], eb[f], what .. " err." .. f) end
            else
                same(a, b, what .. " " .. m)
            end
        end
        local tape = core.parse(text)
        if tape then
            local a, ea = jffi.capi.validate(v, tape)
            local b, eb = jffi.validate(v, tape)
            assert.equal(a, b, what .. " validate(tape)")
            assert.equal(tostring(ea), tostring(eb), what .. " validate(tape)")
        end
    end

    it("is the validators' check_json and validate method, giving what the C API gives", function()
        local v = core.compile({ type = "object", required = { "a" } })
        assert.equal(jffi.check_json, getmetatable(v).__index.check_json)
        assert.equal(jffi.validate, getmetatable(v).__index.validate)
        assert.is_true(v:validate(core.parse('{"a":1}')))
        assert.is_true(v:validate({ a = 1 }))
        assert.is_nil(v:validate(core.parse('{"b":1}')))
        assert.is_false(v:validate(core.parse('{"b":1}'), { output = "basic" }).valid)
        for _, text in ipairs { '{"a":1}', ' {"a":1}\n', '{"b":1}', "[1]", "{", "", '{"a":1,"a":2}' } do
            check_both(v, text, text)
        end
        assert.equal('{"a":1}', v:check_json(' {"a":1}\n'))
        local t = '{"a":1}'
        assert.equal(t, v:check_json(t))
    end)

    it("runs the JSON-Schema-Test-Suite (2020-12, draft7, draft4) as the C API does", function()
        local root = util.shared("corpora/JSON-Schema-Test-Suite/")
        local n = 0
        for _, d in ipairs { { "draft2020-12", "2020-12" }, { "draft7", "draft7" }, { "draft4", "draft4" } } do
            local dir = root .. "tests/" .. d[1]
            for _, name in ipairs(list(dir)) do
                if name:match("%.json$") then
                    for _, group in ipairs(core.decode(util.read(dir .. "/" .. name))) do
                        local ok, v = pcall(core.compile, group.schema, { draft = d[2], loader = function(uri)
                            local rel = uri:match("^http://localhost:1234/(.*)$")
                            local text = rel and util.read(root .. "remotes/" .. rel)
                            return text and core.decode(text)
                        end })
                        if ok then
                            for _, test in ipairs(group.tests) do
                                local text = core.encode(test.data)
                                check_both(v, text, name .. ": " .. group.description .. " / " .. test.description)
                                n = n + 1
                            end
                        end
                    end
                end
            end
        end
        if n == 0 then pending("JSON-Schema-Test-Suite not found") end
        assert.is_true(n > 2000)
    end)

    it("gives the C API's verdicts where the walk needs more than its first scratch", function()
        -- each of these makes the validator's verdict run leave its no-state fast path
        -- (uniqueItems past 16 items, a 'regex' format asserted, scratch past 64 entries, the
        -- memo, the depth and work bounds): the FFI then runs it on its state, same answer
        local CASES = require("support.scratch_cases")()
        -- deeper than the default max_depth of a text: the too_deep path
        CASES[#CASES + 1] = { { type = "array" }, { string.rep("[", 1001) .. string.rep("]", 1001) } }
        for i, c in ipairs(CASES) do
            local v = core.compile(c[1], c[3])
            for j, text in ipairs(c[2]) do check_both(v, text, "case " .. i .. "." .. j) end
        end
    end)

    it("raises on misuse with the C API's messages", function()
        local v = core.compile(true)
        -- each call's arguments after the validator, by a function (explicit nils count)
        local CALLS = {
            { "validate", function(f) return pcall(f, v) end },
            { "validate", function(f) return pcall(f, v, 1, { firts = true }) end },
            { "validate", function(f) return pcall(f, v, print) end },
            { "check_json", function(f) return pcall(f, v) end },
            { "check_json", function(f) return pcall(f, v, nil) end },
            { "check_json", function(f) return pcall(f, v, "1", 2) end },
            { "check_json", function(f) return pcall(f, v, "1", nil, 3) end },
            { "check", function(f) return pcall(f, v) end },
            { "check", function(f) return pcall(f, v, 1) end },
        }
        for i, call in ipairs(CALLS) do
            local ok_a, msg_a = call[2](jffi.capi[call[1]])
            local ok_b, msg_b = call[2](jffi[call[1]])
            assert.is_false(ok_a, "call " .. i)
            assert.is_false(ok_b, "call " .. i)
            assert.equal(msg_a, msg_b, "call " .. i)
        end
        assert.equal(select(2, pcall(jffi.capi.decode)), select(2, pcall(jffi.decode)))
    end)

    it("falls back to the C API for options, a closed validator and misuse", function()
        local v = core.compile({ type = "array" })
        assert.same({ "[1]", core.decode("[1]") }, { jffi.check_json(v, "[1]", { value = true }) })
        assert.has_error(function() jffi.check_json(v, nil) end)
        assert.has_error(function() jffi.check_json(v, "[1]", { nope = 1 }) end)
        v:close()
        local ok, msg = pcall(jffi.check_json, v, "[1]")
        assert.is_false(ok)
        assert.truthy(tostring(msg):find("validator is closed", 1, true))
        assert.has_error(function() v:check_json("[1]") end)
        assert.has_error(function() v:validate(core.parse("[1]")) end)
    end)

    it("a finalizer that validates inside a walk of the same validator leaves that walk whole", function()
        -- a walk's scratch (dynamic scope, locations) is its validator's: a call made from a
        -- finalizer inside it is answered by the C API, which gives the nested call its own
        local ffi = require "ffi"
        local v = core.compile {
            ["$id"] = "https://example.com/tree", ["$dynamicAnchor"] = "node",
            type = "object", required = { "kids" },
            properties = { kids = { type = "array", items = { ["$dynamicRef"] = "#node" } },
                           n = { type = "integer" } },
        }
        local parts = {}
        for k = 1, 200 do parts[k] = string.format('{"kids":[{"kids":[],"n":"x%d"}]}', k) end
        local bad = core.parse('{"kids":[' .. table.concat(parts, ",") .. ']}')
        local want_ok, want = v:validate(bad)
        assert.is_nil(want_ok)
        local good, fine = core.parse('{"kids":[{"kids":[]}]}'), '{"kids":[{"kids":[],"n":1}]}'
        local inner, ran = true, 0
        for _ = 1, 10 do
            for _ = 1, 40 do
                ffi.gc(ffi.new("char[1]"), function()
                    ran = ran + 1
                    inner = inner and v:validate(good) == true and v:check_json(fine) == fine
                        and v:validate(core.parse('{"kids":1}')) == nil
                end)
            end
            local ok, err = v:validate(bad)
            assert.is_nil(ok)
            assert.equal(tostring(want), tostring(err))
        end
        collectgarbage("collect")
        assert.is_true(ran > 0)
        assert.is_true(inner)
    end)

    it("a finalizer that decodes while a value is built gets its own value, and leaves it whole", function()
        local inner = {}
        local big = "[" .. string.rep('{"k":"v","n":[1,2,3]},', 2000) .. '{"k":"v"}]'
        for round = 1, 20 do
            for _ = 1, 50 do
                setmetatable({}, { __gc = function()
                    inner[#inner + 1] = jffi.decode('{"inner":[1,2]}')
                end })
            end
            local v = jffi.decode(big)
            assert.equal(2001, #v, "round " .. round)
            assert.equal("v", v[2001].k)
            assert.same({ 1, 2, 3 }, v[2000].n)
        end
        collectgarbage("collect")
        for _, v in ipairs(inner) do assert.same({ 1, 2 }, v.inner) end
    end)
end)
