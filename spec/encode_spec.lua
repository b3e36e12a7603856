-- core.encode: Lua values -> JSON text, deterministic.
local core = require "jsoncontract.core"
local util = require "support.util"

local HAVE_INTEGER = math.type ~= nil

-- { name, value, expected text }
local CASES = {
    { "null", core.null, "null" },
    { "true", true, "true" },
    { "false", false, "false" },
    { "an integer", 42, "42" },
    { "a negative integer", -7, "-7" },
    { "a fraction", 1.5, "1.5" },
    { "0.1 in its shortest form", 0.1, "0.1" },
    { "a third with 16 digits", 1 / 3, "0.3333333333333333" },
    { "a large float", 1e300, "1e+300" },
    { "the smallest denormal", 5e-324, "4.94065645841247e-324" },
    { "a string", "abc", '"abc"' },
    { "quotes and backslashes", 'a"b\\c', '"a\\"b\\\\c"' },
    { "short escapes", "\b\f\n\r\t", '"\\b\\f\\n\\r\\t"' },
    { "other control characters", "\0\1\31", '"\\u0000\\u0001\\u001f"' },
    { "a slash and DEL unescaped", "/\127", '"/\127"' },
    { "UTF-8 as is", "caf\195\169 \240\157\132\158", '"caf\195\169 \240\157\132\158"' },
    { "an empty table as an object", {}, "{}" },
    { "an empty marked array", setmetatable({}, core.array_mt), "[]" },
    { "a sequence as an array", { 1, "a", true }, '[1,"a",true]' },
    { "a marked array", setmetatable({ 1, 2 }, core.array_mt), "[1,2]" },
    { "an object with sorted keys", { b = 1, a = 2, B = 3, aa = 4 }, '{"B":3,"a":2,"aa":4,"b":1}' },
    { "nested values", { list = { 1, { x = core.null } }, e = {} }, '{"e":{},"list":[1,{"x":null}]}' },
    { "an escaped key", { ['a"\n'] = 1 }, '{"a\\"\\n":1}' },
}

local raises = util.raises

-- Equality that tells arrays from objects and null from nil.
local same = util.same_json

describe("jsoncontract.core", function()
    describe("encode()", function()
        for _, case in ipairs(CASES) do
            it("writes " .. case[1], function()
                assert.equal(case[3], core.encode(case[2]))
            end)
        end

        it("writes integral floats with .0 on Lua 5.3+ and as integers on LuaJIT", function()
            if HAVE_INTEGER then
                assert.equal("2.0", core.encode(2.0))
                assert.equal("-0.0", core.encode(-0.0))
                assert.equal("1e+16", core.encode(1e16))
                assert.equal("float", math.type(core.decode(core.encode(2.0))))
            else
                assert.equal("2", core.encode(2.0))
            end
        end)

        it("writes 64-bit integers exactly on Lua 5.3+", function()
            if not HAVE_INTEGER then
                pending("exact integers need Lua 5.3+")
                return
            end
            assert.equal("9007199254740993", core.encode(9007199254740993))
            assert.equal("-9223372036854775808", core.encode(math.mininteger))
            assert.equal("9223372036854775807", core.encode(math.maxinteger))
        end)

        it("writes integral floats of every size the same as before the fast path", function()
            local want = HAVE_INTEGER and { "0.0", "-1.0", "12345.0", "999999999999999.0", "1e+15",
                "-1e+15", "0.5", "-123.25" } or { "0", "-1", "12345", "999999999999999", "1e+15",
                "-1e+15", "0.5", "-123.25" }
            local got = { 0.0, -1.0, 12345.0, 999999999999999.0, 1e15, -1e15, 0.5, -123.25 }
            for i, d in ipairs(got) do assert.equal(want[i], core.encode(d)) end
        end)

        -- The plain-ASCII scan reads 8 bytes at a time: an escape, a multi-byte
        -- character and an invalid byte at every position of strings 0..20 long.
        it("escapes and checks a special byte at every position of a string", function()
            for len = 0, 20 do
                for at = 0, len do
                    local a, b = ("a"):rep(at), ("b"):rep(len - at)
                    assert.equal('"' .. a .. '\\"' .. b .. '"', core.encode(a .. '"' .. b))
                    assert.equal('"' .. a .. '\\u001f' .. b .. '"', core.encode(a .. "\31" .. b))
                    assert.equal('"' .. a .. '\226\130\172' .. b .. '"', core.encode(a .. "\226\130\172" .. b))
                    local ok, msg = pcall(core.encode, { k = a .. "\255" .. b })
                    assert.is_false(ok)
                    assert.truthy(msg:find("cannot encode an invalid UTF-8 string at /k", 1, true), msg)
                    ok = pcall(core.encode, a .. "\226\130")   -- cut at the end
                    assert.is_false(ok)
                end
            end
        end)

        it("grows the output across escapes in long strings", function()
            local s = ("\n"):rep(5000) .. ("\1"):rep(3000) .. ("é"):rep(3000)
            local text = core.encode({ s, s })
            assert.equal(2 * (2 + 5000 * 2 + 3000 * 6 + 3000 * 2) + 3, #text)
            local v = core.decode(text)
            assert.equal(s, v[1])
            assert.equal(s, v[2])
        end)

        it("gives the same text when its kept output block is reused, grown or dropped", function()
            local small, big = { a = 1 }, { s = ("x"):rep(100000) }
            local huge = { ("y"):rep(9 * 1024 * 1024) }         -- past the 8 MiB kept at most
            local want_small, want_big = '{"a":1}', '{"s":"' .. ("x"):rep(100000) .. '"}'
            for _ = 1, 2 do
                assert.equal(want_small, core.encode(small))
                assert.equal(want_big, core.encode(big))
                assert.equal(want_small, core.encode(small))
                assert.equal(9 * 1024 * 1024 + 4, #core.encode(huge))
                assert.equal(want_big, core.encode(big))
                assert.has_error(function() core.encode({ big, function() end }) end,
                    "cannot encode a function value at /1")
                assert.equal(want_big, core.encode(big))
            end
        end)

        it("sorts the names of small and large objects (C stack and heap paths)", function()
            for _, n in ipairs({ 1, 2, 15, 16, 17, 24, 25, 200 }) do
                local t, names = {}, {}
                for i = n, 1, -1 do
                    local k = ("%03d"):format((i * 7919) % 1000) .. "k"
                    t[k] = i
                    names[#names + 1] = k
                end
                table.sort(names)
                local parts = {}
                for i, k in ipairs(names) do parts[i] = ('"%s":%s'):format(k, core.encode(t[k])) end
                assert.equal("{" .. table.concat(parts, ",") .. "}", core.encode(t))
            end
        end)

        it("gives the same text for equal tables built in different orders", function()
            local a, b = {}, {}
            for i = 1, 50 do a["k" .. i] = i end
            for i = 50, 1, -1 do b["k" .. i] = i end
            assert.equal(core.encode(a), core.encode(b))
        end)

        it("indents when asked", function()
            assert.equal('{\n  "a": [\n    1,\n    {}\n  ],\n  "b": []\n}',
                core.encode({ a = { 1, {} }, b = setmetatable({}, core.array_mt) }, { indent = 2 }))
            assert.equal("[1,2]", core.encode({ 1, 2 }, { indent = 0 }))
        end)

        it("round-trips decode -> encode -> decode", function()
            local text = '{"a":[1,2.5,"x\\u0000y",null,true,false,{"b":[]}],"z":{},"\\u00e9":-3e-7}'
            local v = core.decode(text)
            local again = core.decode(core.encode(v))
            assert.is_true(same(v, again))
            assert.equal(core.encode(v), core.encode(again))
        end)

        it("understands lua-cjson's null and array markers", function()
            local ok, cjson = pcall(require, "cjson")
            if not ok then
                pending("lua-cjson not installed")
                return
            end
            assert.equal("[null]", core.encode({ cjson.null }))
            if cjson.empty_array then
                assert.equal("[]", core.encode(cjson.empty_array))
                assert.equal('{"a":[]}', core.encode({ a = cjson.empty_array }))
            end
            if cjson.empty_array_mt then
                assert.equal("[]", core.encode(setmetatable({}, cjson.empty_array_mt)))
            end
            if cjson.array_mt then
                assert.equal("[]", core.encode(setmetatable({}, cjson.array_mt)))
                assert.equal("[1]", core.encode(setmetatable({ 1 }, cjson.array_mt)))
            end
            -- what cjson decodes, we encode the same way
            assert.equal('{"a":["x",true],"b":null}', core.encode(cjson.decode('{"b":null,"a":["x",true]}')))
        end)

        it("raises with the JSON Pointer of the value it cannot encode", function()
            raises("cannot encode a function value at /a/1", core.encode, { a = { 1, print } })
            raises("cannot encode a function value at the root", core.encode, print)
            raises("cannot encode a thread value at /x", core.encode, { x = coroutine.create(function() end) })
            raises("cannot encode a userdata value at /0", core.encode, { io.stdout })
            raises("cannot encode a nil value at the root", core.encode, nil)
            raises("cannot encode NaN at /n", core.encode, { n = 0 / 0 })
            raises("cannot encode an infinite number at /n", core.encode, { n = math.huge })
            raises("cannot encode an infinite number at /n", core.encode, { n = -math.huge })
            raises("cannot encode an invalid UTF-8 string at /s~1t~0", core.encode, { ["s/t~"] = "\255" })
            raises("cannot encode an invalid UTF-8 string at the root", core.encode, "\237\160\128")
            raises("cannot encode a member name with invalid UTF-8 at /", core.encode, { ["\192\128"] = 1 })
            raises("cannot encode a table whose keys are neither all strings (object) nor exactly 1..n (array) at /t",
                core.encode, { t = { 1, x = 2 } })
            raises("nor exactly 1..n (array) at the root", core.encode, { 1, nil, 3 })
            raises("nor exactly 1..n (array) at the root", core.encode, { [true] = 1 })
            raises("cannot encode an array whose keys are not exactly 1..n at the root",
                core.encode, setmetatable({ a = 1 }, core.array_mt))
        end)

        it("raises on a cycle through the depth limit", function()
            local t = {}
            t.a = { t }
            raises("cannot encode a table nested deeper than 1000 levels (or a cycle) at /a/0/a/0", core.encode, t)
            raises("deeper than 3 levels (or a cycle) at /a/0/a", core.encode, t, { max_depth = 3 })
            -- the 2,000-byte pointer of a deep cycle is elided in the middle, with its length
            local ok, msg = pcall(core.encode, t, { max_depth = 1000 })
            assert.is_false(ok)
            assert.truthy(msg:find("at " .. ("/a/0"):rep(20) .. "\226\128\166(2000 bytes)\226\128\166"
                .. ("/a/0"):rep(10), 1, true), msg)
            assert.truthy(#msg < 250, msg)
            assert.equal("[[[]]]", core.encode({ { {} } }, { max_depth = 3 }):gsub("{}", "[]"))
        end)

        it("raises on misuse", function()
            raises("(value expected)", core.encode)
            raises("(unknown option 'pretty')", core.encode, 1, { pretty = true })
            raises("(option 'indent' must be an integer from 0 to 16)", core.encode, 1, { indent = -1 })
            raises("(option 'max_depth' must be an integer from 1 to 3000)", core.encode, 1, { max_depth = 0 })
            raises("(table expected, got string)", core.encode, 1, "x")
            raises("(no more than 2 arguments expected)", core.encode, 1, nil, 1)
        end)

        it("leaves the caller's tables untouched", function()
            local t = { b = { 1, 2 }, a = "x" }
            core.encode(t)
            assert.is_nil(getmetatable(t))
            assert.same({ b = { 1, 2 }, a = "x" }, t)
        end)
    end)
    describe("encode() and __order (the author's property order)", function()
        local function ord(t, o) return setmetatable(t, { __order = o }) end
        local ORDER_CASES = {
            { "listed names first, in that order", ord({ b = 1, a = 2, answer = 3, reasoning = 4 },
                { "reasoning", "answer" }), '{"reasoning":4,"answer":3,"a":2,"b":1}' },
            { "names absent from the object, repeats and non-strings are skipped",
                ord({ y = 1, x = 2 }, { "nope", "y", "y", 7, "x" }), '{"y":1,"x":2}' },
            { "an empty __order keeps byte order", ord({ b = 1, a = 2 }, {}), '{"a":2,"b":1}' },
            { "an empty object with __order is {}", ord({}, { "a" }), "{}" },
            { "a sequence with __order is still an array", ord({ 1, 2 }, { "a" }), "[1,2]" },
            { "nested objects keep their own order",
                { p = ord({ z = ord({ n = 1, m = 2 }, { "n" }), a = 0 }, { "z", "a" }) },
                '{"p":{"z":{"n":1,"m":2},"a":0}}' },
        }
        for _, c in ipairs(ORDER_CASES) do
            it(c[1], function() assert.equal(c[3], core.encode(c[2])) end)
        end

        it("orders more names than fit on the C stack (40)", function()
            local t, o, want = {}, {}, {}
            for i = 1, 40 do
                t["k" .. i] = i
                o[#o + 1] = "k" .. (41 - i)
                want[#want + 1] = string.format('"k%d":%d', 41 - i, 41 - i)
            end
            assert.equal("{" .. table.concat(want, ",") .. "}", core.encode(ord(t, o)))
        end)

        it("keep_order = false writes byte order (a canonical text, for hashes)", function()
            assert.equal('{"a":2,"b":1}', core.encode(ord({ b = 1, a = 2 }, { "b" }), { keep_order = false }))
            local ok, msg = pcall(core.encode, {}, { keep_order = 1 })
            assert.is_false(ok)
            assert.truthy(msg:find("(option 'keep_order' must be a boolean)", 1, true))
        end)

        it("jc.ordered sets the order on a Lua-table schema, and raises on misuse", function()
            local jc = require "jsoncontract"
            local props = jc.ordered({ answer = { type = "string" }, reasoning = { type = "string" } },
                { "reasoning", "answer" })
            assert.equal('{"reasoning":{"type":"string"},"answer":{"type":"string"}}', jc.encode(props))
            assert.has_error(function() jc.ordered(setmetatable({}, core.array_mt), {}) end,
                "ordered: tbl is marked as a JSON array")
            assert.has_error(function() jc.ordered({}, { 1 }) end, "ordered: order[1] must be a string, got number")
            assert.has_error(function() jc.ordered(setmetatable({}, {}), {}) end,
                "ordered: tbl already has a metatable")
        end)

        it("a contract keeps its schema hash whatever the order", function()
            local jc = require "jsoncontract"
            local def = function(schema)
                return jc.contract { name = "t", version = "1", instructions = "x", schema = schema }
            end
            local a = def({ type = "object", properties = { b = { type = "string" }, a = { type = "string" } } })
            local b = def({ type = "object", properties = jc.ordered({ b = { type = "string" },
                a = { type = "string" } }, { "b", "a" }) })
            assert.equal(a.schema_hash, b.schema_hash)
            local prompt = b:prompt()
            assert.truthy(prompt:find("- b: ", 1, true) < prompt:find("- a: ", 1, true))
            prompt = a:prompt()
            assert.truthy(prompt:find("- a: ", 1, true) < prompt:find("- b: ", 1, true))
        end)
    end)
end)
