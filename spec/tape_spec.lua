-- The tape (csrc/tape.c): validator:check(text) validates the tape the parser wrote and
-- builds the Lua value only when it is valid; validator:validate(value) writes the Lua
-- value to a tape and runs the same validator. Exact integers beyond 2^53 on Lua 5.4 and
-- LuaJIT alike, positions on errors, keep_order, bounded work on hostile schemas.
local core = require "jsoncontract.core"


-- { pointer, keyword, schema_pointer, message } of each error item
local function shape(err)
    local out = {}
    for i, e in ipairs(err.errors or {}) do
        out[i] = { e.pointer, e.keyword, e.schema_pointer, e.message }
    end
    return out
end

describe("jsoncontract.core tape", function()
    after_each(function() collectgarbage("collect") end)

    describe("validator:check_json(text)", function()
        local schema = { type = "object", required = { "id" },
            properties = { id = { type = "integer" }, tags = { type = "array", items = { type = "string" } } } }

        it("answers with the accepted text itself, no copy when no whitespace surrounds it", function()
            local v = core.compile(schema)
            local text = '{"id":12345678901234567890,"tags":["a"]}'
            local json, extra = v:check_json(text)
            assert.equal(text, json)
            assert.is_nil(extra)
        end)

        it("keeps integers beyond 2^53 exactly as written", function()
            local v = core.compile(schema)
            assert.equal('{"id":9007199254740993}', v:check_json('{"id":9007199254740993}'))
            assert.equal('{"id":-123456789012345678901234567890}',
                v:check_json('{"id":-123456789012345678901234567890}'))
        end)

        it("drops the JSON whitespace around the value, and only that", function()
            local v = core.compile(schema)
            assert.equal('{ "id" : 1 ,\n "tags": [ ] }', v:check_json(' \r\n\t{ "id" : 1 ,\n "tags": [ ] }\n '))
            assert.equal('"a b"', core.compile(true):check_json('  "a b"  '))
        end)

        it("gives the same verdicts and errors as check", function()
            local v = core.compile(schema)
            local texts = { '{"id":1.5}', '{"tags":[1]}', '{"id":1,"id":2}', '{"id":1', '', '\239\187\191{"id":1}',
                '{"id":1} x', '[]' }
            for _, text in ipairs(texts) do
                local a, ea = v:check(text)
                local b, eb = v:check_json(text)
                assert.is_nil(a)
                assert.is_nil(b)
                assert.same(ea, eb)
            end
            local _, err = v:check_json('{"id":"x"}')
            assert.equal("schema", err.category)
            assert.same({ { "/id", "type", "/properties/id/type", "/id is string, expected integer" } }, shape(err))
            assert.same({ 6, 1, 7 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
        end)

        it("answers the same with no options (no protected call) as with them, call after call", function()
            -- check_json(text) takes the verdict on the validator's kept tape with no protected
            -- call; whatever it does not accept goes the full way, which reports. Mixed on one
            -- validator: valid, invalid, not JSON, whitespace, a text whose escapes overflow the
            -- tape's first arena block, one past the depth bound, and a verdict needing scratch.
            local v = core.compile({ type = "object", properties = { id = { type = "integer" },
                tags = { type = "array", uniqueItems = true, items = { type = "string" } } } })
            local esc = {}
            for k = 1, 3000 do esc[k] = '"\\u00e9' .. string.rep("\\n", 20) .. k .. '"' end
            local many = {}
            for k = 1, 40 do many[k] = '"t' .. k .. '"' end
            local texts = { '{"id":1}', '{"id":1.5}', '{"id":1', ' {"id":2}\n', '{"tags":[' .. table.concat(esc, ",") .. ']}',
                '{"id":3}', '{"tags":[' .. table.concat(many, ",") .. ']}', '{"tags":[' .. table.concat(many, ",") .. ',"t1"]}',
                '{"tags":' .. string.rep("[", 1200) .. string.rep("]", 1200) .. '}', '\239\187\191{}', '{"id":4}', '' }
            local function pack(...) return { n = select("#", ...), ... } end
            for round = 1, 2 do
                for i, text in ipairs(texts) do
                    local full = pack(v:check_json(text, {}))
                    local quick = pack(v:check_json(text))
                    assert.same(full, quick, "round " .. round .. ", text " .. i)
                    assert.equal(full[1] ~= nil, v:check(text) ~= nil, "round " .. round .. ", text " .. i)
                end
            end
        end)

        it("also returns the Lua value as check builds it with opts.value", function()
            local v = core.compile(schema)
            local json, value = v:check_json(' {"id":7,"tags":["x"]}', { value = true })
            assert.equal('{"id":7,"tags":["x"]}', json)
            assert.same(v:check('{"id":7,"tags":["x"]}'), value)
            assert.equal(core.array_mt, getmetatable(value.tags))
        end)

        it("raises on misuse as check does; check does not take opts.value", function()
            local v = core.compile(schema)
            assert.has_error(function() v:check_json(5) end)
            assert.has_error(function() v:check_json("{}", { value = 1 }) end)
            assert.error_matches(function() v:check("{}", { value = true }) end, "unknown option 'value'", 1, true)
            assert.error_matches(function() v:check("{}", { values = true }) end, "unknown option 'values'", 1, true)
            assert.error_matches(function() v:check("{}", { value = 1 }) end, "unknown option 'value'", 1, true)
            v:close()
            assert.has_error(function() v:check_json("{}") end)
        end)
    end)

    describe("validator:check(text)", function()
        it("returns the Lua value as decode builds it when valid", function()
            local v = core.compile({ type = "object", required = { "a" } })
            local value = assert(v:check('{"a":[1,{"b":null}],"c":"x"}'))
            assert.same(core.decode('{"a":[1,{"b":null}],"c":"x"}'), value)
            assert.equal(core.array_mt, getmetatable(value.a))
            assert.equal(core.null, value.a[2].b)
        end)

        it("builds strings equal to an enum member from the schema's kept string: the same values", function()
            -- small enums (compared in line) and large ones (by hash), members that are not
            -- strings, escaped strings (never marked), enum strings used as member names too,
            -- and a string marked inside a branch that fails
            local colours = { "red", "green", "blue", "cyan", "magenta", "yellow", "black", "white", "grey",
                "orange", 7, core.null, "" }
            local v = core.compile({ type = "object", properties = {
                small = { enum = { "a", "b", 3, "red" } },
                big = { type = "array", items = { enum = colours } },
                either = { anyOf = { { enum = { "x", "y" }, maxLength = 0 }, { type = "string" } } },
                map = { type = "object", additionalProperties = { enum = { "red", "a" } } },
            } })
            for _, text in ipairs {
                '{"small":"b","big":["grey","red","blue",7,null,"","orange"],"either":"y","map":{"red":"a","a":"red"}}',
                '{"small":"red","big":["r\\u0065d","\\u0067rey","white"],"either":"x","map":{"x":"\\u0061"}}',
                '{"small":3,"big":[],"either":"z","map":{}}',
            } do
                local value = assert(v:check(text))
                assert.same(core.decode(text), value)
                local _, also = v:check_json(text, { value = true })
                assert.same(value, also)
            end
            local _, err = v:check('{"small":"red","either":"y","big":["red",1]}')
            assert.equal("/big/1", err.errors[1].pointer)
            assert.same({ 41, 1, 42 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
            -- a string marked by its enum, then failing another keyword: its position is intact
            local tight = core.compile({ properties = { t = { allOf = { { enum = { "red" } }, { maxLength = 1 } } } } })
            _, err = tight:check('{"t":\n "red"}')
            assert.equal("/t", err.errors[1].pointer)
            assert.same({ 7, 2, 2 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
        end)

        it("fails a text nested deeper than the validator's max_depth as the Lua value fails, on every path", function()
            -- the schema looks at none of the deep part: the bound holds wherever the schema looks
            for _, case in ipairs {
                { 1, '{"a":[[[[[1]]]]]}', "/a/0" }, { 1, '{"a\\u002fb":{"c":[]}}', "/a~1b/c" },
                { 2, '[1,[2,[3,[4]]],5]', "/1/1/0" }, { 3, '{"x":[[[]]],"y":[[[[0]]]]}', "/y/0/0/0" },
                { 2, '{"a":{"b":{}}}', nil }, { 1, '[[],{},1]', nil },
            } do
                local v = core.compile(true, { max_depth = case[1] })
                local _, want = v:validate(core.decode(case[2]))
                if case[3] == nil then
                    assert.is_nil(want, case[2])
                else
                    assert.equal("too_deep", want.kind, case[2])
                    assert.equal(case[3], want.errors[1].pointer, case[2])
                end
                for name, got in pairs {
                    tape = select(2, v:validate(core.parse(case[2]))),
                    check = select(2, v:check(case[2])),
                    check_json = select(2, v:check_json(case[2])),
                } do
                    if want == nil then
                        assert.is_nil(got, name .. " " .. case[2])
                    else
                        assert.equal(want.kind, got.kind, name .. " " .. case[2])
                        assert.same({ want.errors[1].pointer, want.errors[1].message },
                            { got.errors[1].pointer, got.errors[1].message }, name .. " " .. case[2])
                    end
                end
            end
        end)

        it("returns format errors exactly as decode does", function()
            local v = core.compile(true)
            local _, e1 = v:check('{"a":1,"a":2}')
            local _, e2 = core.decode('{"a":1,"a":2}')
            assert.same(e2, e1)
            assert.equal("format", e1.category)
            assert.equal("duplicate_key", e1.kind)
        end)

        it("puts offset, line and column of the failing value on schema errors", function()
            local v = core.compile({ type = "object", properties = {
                n = { type = "integer", maximum = 5 },
                s = { type = "array", items = { type = "string" } } } })
            local _, err = v:check('{\n  "n": 7,\n  "s": ["x", 2]\n}')
            assert.equal("schema", err.category)
            assert.equal(2, #err.errors)
            assert.equal("/n", err.errors[1].pointer)
            assert.same({ 9, 2, 8 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
            assert.equal("/s/1", err.errors[2].pointer)
            assert.same({ 25, 3, 14 }, { err.errors[2].offset, err.errors[2].line, err.errors[2].column })
        end)

        it("counts columns in UTF-8 characters", function()
            local v = core.compile({ properties = { b = { type = "string" } } })
            local _, err = v:check('{"a":"ää","b":1}')
            assert.same({ 16, 1, 15 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
        end)

        it("knows where a string with escapes stands", function()
            local v = core.compile({ properties = { b = { maxLength = 0 } } })
            local _, err = v:check('{"a":"x\\ny",\n"b":"\\u00e4"}')
            assert.same({ 17, 2, 5 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
        end)

        it("keeps document order when asked", function()
            local v = core.compile(true)
            local value = v:check('{"z":1,"a":{"y":2,"b":3}}', { keep_order = true })
            assert.same({ "z", "a" }, getmetatable(value).__order)
            assert.same({ "y", "b" }, getmetatable(value.a).__order)
        end)

        it("raises on misuse", function()
            local v = core.compile(true)
            assert.has_error(function() v:check(1) end)
            assert.has_error(function() v:check("1", { nope = true }) end,
                "bad argument #2 to 'check' (unknown option 'nope')")
        end)
    end)

    describe("decode(text, {keep_order = true})", function()
        it("gives each object a metatable with __order, arrays keep array_mt", function()
            local value = core.decode('{"b":1,"a":[{"y":1,"x":2}],"c":{}}', { keep_order = true })
            assert.same({ "b", "a", "c" }, getmetatable(value).__order)
            assert.equal(core.array_mt, getmetatable(value.a))
            assert.same({ "y", "x" }, getmetatable(value.a[1]).__order)
            assert.same({}, getmetatable(value.c).__order)
            assert.is_nil(getmetatable(core.decode('{"a":1}')))
        end)
    end)

    describe("format errors carry the JSON Pointer of the value they are in, else of the container", function()
        local cases = {
            { '{"skills":["a","b","c\\q"]}', "invalid_escape", "/skills/2" },
            { '{"a":{"b":[1,2,}]}}', "unexpected_character", "/a/b" },
            { '[1,{"x":tru}]', "unexpected_character", "/1/x" },
            { '{"a" 1}', "unexpected_character", "" },
            { '{"a":1,"a":2}', "duplicate_key", "/a" },
        }
        for _, case in ipairs(cases) do
            it(case[1], function()
                local _, err = core.decode(case[1])
                assert.equal(case[2], err.kind)
                assert.equal(case[3], err.pointer)
            end)
        end
    end)

    describe("exact verdicts beyond 2^53 (Lua 5.4 and LuaJIT)", function()
        -- 2^53 and 2^64 are exact doubles; the instances are one above them
        local cases = {
            { { maximum = 9007199254740992 }, "9007199254740993", false },
            { { maximum = 9007199254740992 }, "9007199254740992", true },
            { { minimum = 18446744073709551616 }, "18446744073709551615", false },
            { { exclusiveMaximum = 9007199254740992 }, "9007199254740992", false },
            { { exclusiveMinimum = 9007199254740992 }, "9007199254740993", true },
            { { multipleOf = 2 }, "9007199254740993", false },
            { { multipleOf = 2 }, "9007199254740994", true },
            { { multipleOf = 3 }, "18446744073709551617", false },
            { { multipleOf = 7 }, "18446744073709551617", false },
            { { multipleOf = 274177 }, "18446744073709551617", true },   -- 2^64+1 = 274177 * 67280421310721
            { { const = 9007199254740992 }, "9007199254740993", false },
            { { enum = { 9007199254740992, 1 } }, "9007199254740993", false },
            { { maximum = 18446744073709551616 }, "18446744073709551617", false },
            { { maximum = 18446744073709551616 }, "18446744073709551616", true },
            { { maximum = 18446744073709551616 }, "-18446744073709551617", true },
            { { minimum = -9223372036854775808 }, "-9223372036854775809", false },
            { { uniqueItems = true }, "[9007199254740992, 9007199254740993]", true },
            { { uniqueItems = true }, "[18446744073709551616, 18446744073709551617]", true },
            { { uniqueItems = true }, "[18446744073709551617, 1, 18446744073709551617]", false },
            { { type = "integer" }, "123456789012345678901234567890", true },
        }
        for _, case in ipairs(cases) do
            local name = case[2] .. " against " .. core.encode(case[1])
            it(name, function()
                local v = core.compile(case[1])
                local ok, err = v:check(case[2])
                if case[3] then
                    assert.is_not_nil(ok, err and tostring(err))
                else
                    assert.is_nil(ok)
                    assert.equal("schema_mismatch", err.kind)
                end
            end)
        end

        it("says the exact number in the message", function()
            local _, err = core.compile({ maximum = 9007199254740992 }):check("9007199254740993")
            assert.truthy(err.errors[1].message:find("(root) 9007199254740993 is greater than maximum ", 1, true))
        end)
    end)

    describe("bounded work", function()
        it("a recursive anyOf whose branches both recurse: depth 30 in one pass (memo)", function()
            local v = core.compile({ ["$defs"] = { n = { anyOf = {
                { type = "array", items = { ["$ref"] = "#/$defs/n" } },
                { type = "array", items = { ["$ref"] = "#/$defs/n" }, minItems = 0 } } } },
                ["$ref"] = "#/$defs/n" })
            local text = string.rep("[", 30) .. "1" .. string.rep("]", 30)
            local ok, err = v:check(text)
            assert.is_nil(ok)
            assert.equal("schema_mismatch", err.kind)
            assert.is_not_nil(v:check(string.rep("[", 30) .. string.rep("]", 30)))
            -- oneOf with the same branch twice: exactly one never matches
            local o = core.compile({ ["$defs"] = { n = { oneOf = {
                { type = "array", items = { ["$ref"] = "#/$defs/n" } },
                { type = "array", items = { ["$ref"] = "#/$defs/n" } } } } },
                ["$ref"] = "#/$defs/n" })
            assert.is_nil((o:check(text)))
        end)

        it("a catastrophic pattern under contains over 10,000 items ends as budget_exceeded", function()
            local v = core.compile({ type = "array", contains = { type = "string", pattern = "^(a+)+$" } })
            local items = {}
            for i = 1, 10000 do items[i] = '"' .. string.rep("a", 30) .. 'b"' end
            local ok, err = v:check("[" .. table.concat(items, ",") .. "]")
            assert.is_nil(ok)
            assert.equal("schema", err.category)
            assert.equal("budget_exceeded", err.kind)
            assert.equal("budget", err.errors[1].keyword)
        end)

        it("reports a failure under additionalProperties 900 objects deep", function()
            -- each level reports its undeclared members in byte order from a block on the
            -- Lua stack: 900 blocks at once
            local v = core.compile({ type = "object", patternProperties = { ["^x"] = { type = "string" } },
                                     additionalProperties = { ["$ref"] = "#" } }, { max_depth = 3000 })
            local text = string.rep('{"a":', 900) .. "1" .. string.rep("}", 900)
            local ok, err = v:check(text, { max_depth = 3000 })
            assert.is_nil(ok)
            assert.equal("schema_mismatch", err.kind)
            assert.equal(1, #err.errors)
            assert.equal(string.rep("/a", 900), err.errors[1].pointer)
            assert.equal("type", err.errors[1].keyword)
        end)

        it("work_budget is a compile option", function()
            local v = core.compile({ type = "array", items = { type = "integer" } }, { work_budget = 10 })
            local _, err = v:check("[1,2,3,4,5,6,7,8,9,10,11,12]")
            assert.equal("budget_exceeded", err.kind)
            assert.is_not_nil(v:check("[1,2,3]"))
            assert.has_error(function() core.compile(true, { work_budget = 0 }) end,
                "bad argument #2 to 'compile' (option 'work_budget' must be an integer from 1 to 1e15)")
        end)
    end)

    describe("pattern and format regex accept only ECMA-262", function()
        for _, re in ipairs { "(*UTF)a", "(*CR)a", "(*LIMIT_MATCH=10)a", "x(*ACCEPT)" } do
            it("rejects " .. re, function()
                assert.has_error(function() core.compile({ pattern = re }) end)
                local v = core.compile({ format = "regex" }, { format_assertion = true })
                local ok, err = v:validate(re)
                assert.is_nil(ok)
                assert.equal("format", err.errors[1].keyword)
            end)
        end
        it("still accepts an escaped \\(* and a class [(*]", function()
            local v = core.compile({ pattern = "^\\(\\*x[(*]$" })
            assert.is_true(v:validate("(*x*"))
        end)
    end)

    describe("through contract:check", function()
        local jc = require "jsoncontract"
        local function contract(extra)
            local def = { name = "t", version = "1", instructions = "x",
                schema = { type = "object", properties = { n = { type = "integer", maximum = 5 } } } }
            for k, v in pairs(extra or {}) do def[k] = v end
            return jc.contract(def)
        end
        it("schema errors carry the position of the value in the reply", function()
            local _, err = contract():check('{\n "n": 9}')
            assert.equal("schema", err.category)
            assert.same({ 8, 2, 7 }, { err.errors[1].offset, err.errors[1].line, err.errors[1].column })
        end)
        it("a work_budget past which the reply fails as budget_exceeded", function()
            local _, err = contract({ work_budget = 1 }):check('{"n": 1}')
            assert.equal("budget_exceeded", err.kind)
        end)
        it("adapter rejections carry offset, line and column", function()
            local c = contract({ adapters = { "unwrap-one-json-fence" } })
            local _, err = c:check('Here it is:\n```json\n{"n": 1}\n```')
            assert.equal("adapter_rejected", err.kind)
            assert.same({ 0, 1, 1 }, { err.offset, err.line, err.column })
            _, err = c:check('```json\n{"n": 1}\n```\nThanks!')
            assert.same({ 21, 4, 1 }, { err.offset, err.line, err.column })
            _, err = c:check('```json\n{"n": 1}\n```\n```json\n{}\n```')
            assert.equal("adapter_rejected", err.kind)
            assert.same({ 21, 4, 1 }, { err.offset, err.line, err.column })
        end)
    end)

    describe("reentrant calls (a __gc that validates while a tape is in use)", function()
        it("give each call its own tape", function()
            local v = core.compile({ type = "array", items = { type = "object" } })
            local items = {}
            for i = 1, 2000 do items[i] = '{"a":"' .. string.rep("x", i % 50) .. '","b":[1,2,3]}' end
            local text = "[" .. table.concat(items, ",") .. "]"
            for i = 2, 2000, 2 do items[i] = tostring(i) end
            -- rejected: its errors are built (allocations, so finalizers) on the tape that
            -- check_json parsed before its protected call
            local bad = "[" .. table.concat(items, ",") .. "]"
            local bad_err = select(2, v:check_json(bad, {}))
            assert.is_true(bad_err.truncated)
            local inner, arm = 0, nil
            local function on_gc()
                inner = inner + 1
                assert(v:check(text))
                assert.equal(text, v:check_json(text))
                assert.same(bad_err, select(2, v:check_json(bad)))
                assert(core.decode(text))
                arm()
            end
            local proxy = rawget(_G, "newproxy")   -- LuaJIT / 5.1: __gc on a userdata
            arm = function()
                if proxy then
                    getmetatable(proxy(true)).__gc = on_gc
                else
                    setmetatable({}, { __gc = on_gc })
                end
            end
            local pause = collectgarbage("setpause", 10)
            finally(function() collectgarbage("setpause", pause); arm = function() end end)
            arm()
            for _ = 1, 400 do   -- until finalizers ran inside our calls a few times
                assert.equal(2000, #assert(v:check(text)))
                assert.equal(text, v:check_json(text))
                assert.same(bad_err, select(2, v:check_json(bad)))
                local d = assert(core.decode(text))
                assert.equal(2000, #d)
                assert.is_true(v:validate(d))
                if inner >= 3 then break end
            end
            assert.is_true(inner > 0)
        end)
    end)

    describe("validator:close()", function()
        it("frees now, is idempotent, and later calls raise", function()
            local v = core.compile(true)
            v:close()
            v:close()
            assert.has_error(function() v:validate(1) end, "calling 'validate' on bad self (validator is closed)")
            assert.has_error(function() v:check("1") end, "calling 'check' on bad self (validator is closed)")
        end)
    end)

    describe("one validator: text and Lua value give the same verdict and errors", function()
        local schema = {
            type = "object", required = { "id", "tags" }, additionalProperties = false,
            properties = {
                id = { type = "string", pattern = "^T-[0-9]+$" },
                n = { type = "number", minimum = 0, multipleOf = 0.5 },
                tags = { type = "array", items = { enum = { "a", "b" } }, uniqueItems = true },
                sub = { oneOf = { { type = "null" }, { type = "object", required = { "k" } } } },
            },
        }
        local docs = {
            '{"id":"T-1","tags":["a"]}',
            '{"id":"X","tags":["a","a","c"],"n":-1.25,"extra":true}',
            '{"tags":[],"sub":{}}',
            '{"id":"T-2","tags":["b"],"sub":null,"n":3.5}',
            '[1,2]',
        }
        local v = core.compile(schema)
        for _, text in ipairs(docs) do
            it(text, function()
                local a, ea = v:check(text)
                local b, eb = v:validate(core.decode(text))
                assert.equal(a ~= nil, b ~= nil)
                if ea then
                    assert.equal(ea.kind, eb.kind)
                    assert.same(shape(eb), shape(ea))
                end
            end)
        end
    end)
end)
