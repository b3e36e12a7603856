-- Specs of the schema gate: core.compile(schema [, opts]) and
-- validator:validate(value [, opts]).
local core = require "jsoncontract.core"

local null = core.null

-- A JSON array as core.decode makes it (keeps an empty array an array).
local function A(t)
    return setmetatable(t, core.array_mt)
end

-- The errors of a failed validation as {pointer, keyword, schema_pointer, message}.
local function shape(err)
    local out = {}
    for i, e in ipairs(err.errors) do
        out[i] = { e.pointer, e.keyword, e.schema_pointer, e.message }
    end
    return out
end

local function check(v, value, expected, opts)
    local ok, err = v:validate(value, opts)
    if expected == true then
        assert.is_nil(err and tostring(err))
        assert.is_true(ok)
        return
    end
    assert.is_nil(ok)
    assert.equal("schema", err.category)
    assert.equal(expected.kind or "schema_mismatch", err.kind)
    assert.same(expected.errors, shape(err))
    local msgs = {}
    for i, e in ipairs(expected.errors) do msgs[i] = e[4] end
    assert.equal(table.concat(msgs, "; "), err.message)
    return err
end

describe("jsoncontract.core", function()
    after_each(function() collectgarbage("collect") end)

    describe("compile() + validate(): support-ticket contract (SEEDS §1)", function()
        local schema = {
            type = "object",
            required = A { "intent", "order_id", "urgent", "summary" },
            additionalProperties = false,
            properties = {
                intent = { type = "string", enum = A { "delivery", "return", "payment", "other" } },
                order_id = { type = "string" },
                urgent = { type = "boolean" },
                summary = { type = "string" },
            },
        }
        local ENUM = '"delivery", "return", "payment", "other"'
        local cases = {
            { "accepts a complete answer",
              { intent = "delivery", order_id = "1042", urgent = true, summary = "..." }, true },
            { "reports a foreign enum value and a string for a boolean",
              { intent = "Lieferung", order_id = "1042", urgent = "ja", summary = "..." },
              { errors = {
                  { "/intent", "enum", "/properties/intent/enum", '/intent "Lieferung" is not one of ' .. ENUM },
                  { "/urgent", "type", "/properties/urgent/type", "/urgent is string, expected boolean" },
              } } },
            { "reports a missing field, then an extra field",
              { intent = "return", urgent = false, summary = "...", mood = "ruhig" },
              { errors = {
                  { "", "required", "/required", "missing required field /order_id" },
                  { "/mood", "additionalProperties", "/additionalProperties", "extra field /mood is not allowed" },
              } } },
            { "reports a value not allowed and a number for a string",
              { intent = "refund", order_id = 1042, urgent = false, summary = "..." },
              { errors = {
                  { "/intent", "enum", "/properties/intent/enum", '/intent "refund" is not one of ' .. ENUM },
                  { "/order_id", "type", "/properties/order_id/type", "/order_id is number, expected string" },
              } } },
            { "reports a non-object at the root",
              "Sure! Here is the data:",
              { errors = { { "", "type", "/type", "(root) is string, expected object" } } } },
        }
        for _, case in ipairs(cases) do
            it(case[1], function()
                check(core.compile(schema), case[2], case[3])
            end)
        end

        it("gives extra fields for programs", function()
            local _, err = core.compile(schema):validate(
                { intent = "Lieferung", urgent = "ja", summary = "...", mood = "x" })
            local e = err.errors
            assert.equal("order_id", e[1].property)
            assert.same({ "delivery", "return", "payment", "other" }, e[2].allowed)
            assert.equal("boolean", e[3].expected)
            assert.equal("string", e[3].actual)
            assert.equal("mood", e[4].property)
            assert.equal("schema/schema_mismatch: " .. err.message, tostring(err))
        end)

        it("stops at the first error with opts.first", function()
            check(core.compile(schema),
                { intent = "Lieferung", order_id = "1042", urgent = "ja", summary = "..." },
                { errors = { { "/intent", "enum", "/properties/intent/enum",
                               '/intent "Lieferung" is not one of ' .. ENUM } } },
                { first = true })
        end)
    end)

    describe("validate(): keywords", function()
        local cases = {
            { "type list", { type = A { "string", "null" } }, 3,
              { { "", "type", "/type", "(root) is number, expected string or null" } } },
            { "type null accepts null", { type = "null" }, null, true },
            { "integer accepts 1.0", { type = "integer" }, 1.0, true },
            { "integer rejects 1.5", { type = "integer" }, 1.5,
              { { "", "type", "/type", "(root) is number, expected integer" } } },
            { "number accepts an integer", { type = "number" }, 7, true },
            { "empty array is an array", { type = "array" }, A {}, true },
            { "empty plain table is an object", { type = "object" }, {}, true },
            { "const compares 1 and 1.0", { const = 1 }, 1.0, true },
            { "const compares structurally", { const = { a = A { 1, 2 } } }, { a = A { 1, 2.0 } }, true },
            { "const message", { properties = { x = { const = 4 } } }, { x = 3 },
              { { "/x", "const", "/properties/x/const", "/x must be 4" } } },
            { "enum with structures", { enum = A { A { 1 }, { a = "b" } } }, { a = "c" },
              { { "", "enum", "/enum", '(root) {"a":"c"} is not one of [1], {"a":"b"}' } } },
            { "minLength counts code points", { minLength = 2 }, "Ä",
              { { "", "minLength", "/minLength", "(root) has 1 characters, minimum 2" } } },
            { "maxLength counts code points", { maxLength = 1 }, "Ä", true },
            { "summary must not be empty", { properties = { summary = { minLength = 1 } } }, { summary = "" },
              { { "/summary", "minLength", "/properties/summary/minLength", "/summary has 0 characters, minimum 1" } } },
            { "pattern is a search", { pattern = "[0-9]{4}" }, "ab1042cd", true },
            { "pattern message", { properties = { order_id = { pattern = "^[0-9]{4}$" } } }, { order_id = "10420" },
              { { "/order_id", "pattern", "/properties/order_id/pattern",
                  '/order_id "10420" does not match pattern ^[0-9]{4}$' } } },
            { "pattern $ does not match before a final newline", { pattern = "^ORD-[0-9]+$" }, "ORD-1\n",
              { { "", "pattern", "/pattern", '(root) "ORD-1\\n" does not match pattern ^ORD-[0-9]+$' } } },
            { "pattern \\d is ASCII only", { pattern = "^\\d+$" }, "\217\161\217\162",
              { { "", "pattern", "/pattern", '(root) "\217\161\217\162" does not match pattern ^\\d+$' } } },
            { "pattern . is one code point", { pattern = "^.$" }, "Ä", true },
            { "minimum", { properties = { qty = { minimum = 1 } } }, { qty = 0 },
              { { "/qty", "minimum", "/properties/qty/minimum", "/qty 0 is less than minimum 1" } } },
            { "maximum", { maximum = 5 }, 5.5,
              { { "", "maximum", "/maximum", "(root) 5.5 is greater than maximum 5" } } },
            { "exclusiveMinimum", { exclusiveMinimum = 1 }, 1,
              { { "", "exclusiveMinimum", "/exclusiveMinimum", "(root) 1 is not greater than exclusive minimum 1" } } },
            { "exclusiveMaximum", { exclusiveMaximum = 1 }, 1.0,
              { { "", "exclusiveMaximum", "/exclusiveMaximum", "(root) 1 is not less than exclusive maximum 1" } } },
            { "multipleOf", { multipleOf = 2 }, 7,
              { { "", "multipleOf", "/multipleOf", "(root) 7 is not a multiple of 2" } } },
            { "multipleOf with fractions", { multipleOf = 0.01 }, 19.99, true },
            { "minItems", { minItems = 1 }, A {},
              { { "", "minItems", "/minItems", "(root) has 0 items, minimum 1" } } },
            { "maxItems", { maxItems = 1 }, A { 1, 2 },
              { { "", "maxItems", "/maxItems", "(root) has 2 items, maximum 1" } } },
            { "uniqueItems: 1 and 1.0 are equal", { properties = { tags = { uniqueItems = true } } },
              { tags = A { "a", 1, "b", 1.0 } },
              { { "/tags", "uniqueItems", "/properties/tags/uniqueItems", "/tags has duplicate items at 1 and 3" } } },
            { "uniqueItems: structures", { uniqueItems = true }, A { { a = 1 }, { a = 2 } }, true },
            { "minProperties", { minProperties = 1 }, {},
              { { "", "minProperties", "/minProperties", "(root) has 0 properties, minimum 1" } } },
            { "maxProperties", { maxProperties = 1 }, { a = 1, b = 2 },
              { { "", "maxProperties", "/maxProperties", "(root) has 2 properties, maximum 1" } } },
            { "items and prefixItems", { prefixItems = A { { type = "string" } }, items = { type = "integer" } },
              A { 1, 2, "x" },
              { { "/0", "type", "/prefixItems/0/type", "/0 is number, expected string" },
                { "/2", "type", "/items/type", "/2 is string, expected integer" } } },
            { "draft-07 tuple items", { items = A { { type = "string" } }, additionalItems = false }, A { "a", 1 },
              { { "/1", "false", "/additionalItems", "/1 is not allowed" } } },
            { "patternProperties and additionalProperties schema",
              { patternProperties = { ["^x-"] = { type = "string" } }, additionalProperties = { type = "integer" } },
              { ["x-a"] = 1, b = "no", c = 2 },
              { { "/b", "type", "/additionalProperties/type", "/b is string, expected integer" },
                { "/x-a", "type", "/patternProperties/^x-/type", "/x-a is number, expected string" } } },
            { "pointer escapes ~ and /", { properties = { ["a/b~c"] = { type = "string" } } }, { ["a/b~c"] = 1 },
              { { "/a~1b~0c", "type", "/properties/a~1b~0c/type", "/a~1b~0c is number, expected string" } } },
            { "allOf reports each branch", { allOf = A { { minimum = 2 }, { multipleOf = 2 } } }, 1,
              { { "", "minimum", "/allOf/0/minimum", "(root) 1 is less than minimum 2" },
                { "", "multipleOf", "/allOf/1/multipleOf", "(root) 1 is not a multiple of 2" } } },
            { "anyOf reports once", { anyOf = A { { type = "string" }, { type = "null" } } }, 1,
              { { "", "anyOf", "/anyOf", "(root) does not match any of the 2 alternatives" } } },
            { "oneOf with two matches", { oneOf = A { { minimum = 0 }, { maximum = 5 }, { type = "string" } } }, 1,
              { { "", "oneOf", "/oneOf",
                  "(root) matches more than one of the 3 alternatives (0 and 1), expected exactly one" } } },
            { "oneOf with no match", { oneOf = A { { type = "string" } } }, 1,
              { { "", "oneOf", "/oneOf", "(root) does not match any of the 1 alternatives" } } },
            { "not", { ["not"] = { type = "string" } }, "x",
              { { "", "not", "/not", '(root) must not match the schema in "not"' } } },
            { "false schema", { properties = { x = false } }, { x = 1 },
              { { "/x", "false", "/properties/x", "/x is not allowed" } } },
            { "true schema", true, { anything = A { 1 } }, true },
            { "unknown keywords are annotations", { title = "t", ["x-foo"] = 1, examples = A { 1 } }, 2, true },
            { "a type failure ends the subschema", { type = "string", enum = A { "a" }, minLength = 3 }, 5,
              { { "", "type", "/type", "(root) is number, expected string" } } },
        }
        for _, case in ipairs(cases) do
            it(case[1], function()
                local expected = case[4]
                if expected ~= true then expected = { errors = expected } end
                check(core.compile(case[2]), case[3], expected)
            end)
        end

        it("reports members in required order, then byte order", function()
            local v = core.compile({
                required = A { "z", "a" },
                properties = { a = { type = "string" }, b = { type = "string" },
                               m = { type = "string" }, z = { type = "string" } },
            })
            local _, err = v:validate({ a = 1, b = 1, m = 1, z = 1 })
            local ptrs = {}
            for i, e in ipairs(err.errors) do ptrs[i] = e.pointer end
            assert.same({ "/z", "/a", "/b", "/m" }, ptrs)
        end)
    end)

    describe("validate(): format", function()
        local dates = {
            { "2028-02-29", true }, { "2026-02-28", true }, { "2027-02-30", false },
            { "2026-02-29", false }, { "1900-02-29", false }, { "2000-02-29", true },
            { "2027-6-12", false }, { "2027-06-12 ", false }, { "2027-13-01", false },
            { "2027-04-31", false }, { "2027-06-00", false }, { "20270612", false },
        }
        for _, d in ipairs(dates) do
            it("date " .. d[1] .. (d[2] and " passes" or " fails"), function()
                local v = core.compile({ properties = { start_date = { format = "date" } } },
                                       { format_assertion = true })
                if d[2] then
                    check(v, { start_date = d[1] }, true)
                else
                    check(v, { start_date = d[1] }, { errors = { { "/start_date", "format",
                        "/properties/start_date/format",
                        '/start_date "' .. d[1] .. '" is not a valid date' } } })
                end
            end)
        end

        local datetimes = {
            { "2027-06-12T10:00:00Z", true }, { "2027-06-12t10:00:00.123+02:00", true },
            { "1998-12-31T23:59:60Z", true }, { "1998-12-31T15:59:60-08:00", true },
            { "1998-12-31T22:59:60Z", false }, { "2027-06-12T10:00:00", false },
            { "2027-06-12T24:00:00Z", false }, { "2027-02-30T10:00:00Z", false },
            { "2027-06-12 10:00:00Z", false },
        }
        for _, d in ipairs(datetimes) do
            it("date-time " .. d[1] .. (d[2] and " passes" or " fails"), function()
                local v = core.compile({ format = "date-time" }, { format_assertion = true })
                local ok = v:validate(d[1])
                assert.equal(d[2], ok == true)
            end)
        end

        it("is an annotation unless format_assertion is on", function()
            check(core.compile({ format = "date" }), "2027-02-30", true)
        end)

        it("ignores unknown formats", function()
            check(core.compile({ format = "color" }, { format_assertion = true }), "x", true)
        end)
    end)

    describe("validate(): $ref and depth", function()
        local tree = {
            ["$ref"] = "#/$defs/node",
            ["$defs"] = {
                node = {
                    type = "object",
                    required = A { "value" },
                    properties = {
                        value = { type = "integer" },
                        children = { type = "array", items = { ["$ref"] = "#/$defs/node" } },
                    },
                    additionalProperties = false,
                },
            },
        }

        local function chain(depth)
            local root = { value = 0 }
            local cur = root
            for i = 1, depth do
                local child = { value = i }
                cur.children = A { child }
                cur = child
            end
            return root, cur
        end

        it("validates a recursive schema", function()
            local v = core.compile(tree)
            local root, leaf = chain(20)
            check(v, root, true)
            leaf.value = "x"
            local _, err = v:validate(root)
            assert.equal(1, #err.errors)
            assert.equal("type", err.errors[1].keyword)
            assert.equal("/$defs/node/properties/value/type", err.errors[1].schema_pointer)
            assert.equal(string.rep("/children/0", 20) .. "/value", err.errors[1].pointer)
        end)

        it("validates 400 levels (800 deep) within the default bound", function()
            check(core.compile(tree), (chain(400)), true)
        end)

        it("fails a 5000-deep instance cleanly as too_deep", function()
            local _, err = core.compile(tree):validate((chain(5000)))
            assert.equal("schema", err.category)
            assert.equal("too_deep", err.kind)
            assert.equal(1, #err.errors)
            assert.equal("max_depth", err.errors[1].keyword)
            assert.equal("value nested deeper than 1000 levels", err.errors[1].message)
            assert.equal(1001, select(2, err.errors[1].pointer:gsub("/", "")))
        end)

        it("honours max_depth", function()
            local v = core.compile({ items = { items = true } }, { max_depth = 1 })
            check(v, A { 1 }, true)
            local _, err = v:validate(A { A { 1 } })
            assert.equal("too_deep", err.kind)
            assert.equal("/0/0", err.errors[1].pointer)
        end)

        it("raises on a cyclic Lua table, also with decoded = true (every value is written to a tape)", function()
            local t = {}
            t.self = t
            local v = core.compile({ additionalProperties = { ["$ref"] = "#" } })
            assert.has_error(function() v:validate(t) end,
                "value at /self is a table that contains itself (a cycle), not JSON")
            assert.has_error(function() v:validate(t, { decoded = true }) end,
                "value at /self is a table that contains itself (a cycle), not JSON")
        end)

        it("refuses at compile a schema that refers to itself without progress", function()
            assert.has_error(function() core.compile({ ["$ref"] = "#" }) end,
                "invalid schema at (root): reference cycle that never consumes input "
                .. "(validation would not end)")
            assert.has_error(function()
                core.compile({ ["$defs"] = { a = { anyOf = { { ["$ref"] = "#/$defs/b" } } },
                                             b = { allOf = { { ["$ref"] = "#/$defs/a" } } } },
                               properties = { x = { ["$ref"] = "#/$defs/a" } } })
            end, "invalid schema at /$defs/a: reference cycle that never consumes input "
                .. "(validation would not end)")
        end)

        it("resolves ~0, ~1 and percent-encoding", function()
            local v = core.compile({
                ["$defs"] = { ["a/b"] = { type = "string" }, ["c~d"] = { type = "integer" },
                              ["e%f"] = { type = "null" } },
                properties = {
                    x = { ["$ref"] = "#/$defs/a~1b" },
                    y = { ["$ref"] = "#/$defs/c~0d" },
                    z = { ["$ref"] = "#/$defs/e%25f" },
                },
            })
            check(v, { x = "s", y = 1, z = null }, true)
            check(v, { x = 1 }, { errors = { { "/x", "type", "/$defs/a~1b/type", "/x is number, expected string" } } })
        end)

        it("resolves draft-07 definitions and array indexes", function()
            local v = core.compile({
                definitions = { pair = { prefixItems = A { { type = "string" }, { type = "integer" } } } },
                items = { ["$ref"] = "#/definitions/pair/prefixItems/1" },
            })
            check(v, A { 1, 2 }, true)
            check(v, A { "x" }, { errors = { { "/0", "type", "/definitions/pair/prefixItems/1/type",
                                               "/0 is string, expected integer" } } })
        end)
    end)

    describe("validate(): members in any order", function()
        -- the walk learns the member order it met last and tries it first: a guess, never a
        -- verdict, whatever order the objects before came in
        it("gives each object its own verdict, whatever order the objects before came in", function()
            local names = { "alpha", "beta", "gamma", "delta", "epsilon", "zeta_with_a_long_name_here" }
            local props = {}
            for _, k in ipairs(names) do props[k] = { type = "integer" } end
            local v = core.compile { type = "object", properties = props, required = A { "beta", "zeta_with_a_long_name_here" },
                                     additionalProperties = false }
            -- permutations by rotation and reversal, some members left out, some undeclared or wrong
            local seen = 0
            for round = 1, 3 do
                for shift = 0, #names - 1 do
                    for _, rev in ipairs { false, true } do
                        local order = {}
                        for k = 1, #names do order[k] = names[(k + shift - 1) % #names + 1] end
                        if rev then
                            for a = 1, math.floor(#order / 2) do order[a], order[#order - a + 1] = order[#order - a + 1], order[a] end
                        end
                        local members, want = {}, true
                        for k, name in ipairs(order) do
                            local drop = (k + round + shift) % 5 == 0
                            if drop then
                                if name == "beta" or name == "zeta_with_a_long_name_here" then want = false end
                            else
                                local bad = (k * round + shift) % 7 == 0
                                members[#members + 1] = string.format('"%s":%s', name, bad and '"x"' or tostring(k))
                                if bad then want = false end
                            end
                        end
                        if (round + shift) % 4 == 0 then
                            table.insert(members, 1 + shift % (#members + 1), '"omega":1')
                            want = false
                        end
                        local text = "{" .. table.concat(members, ",") .. "}"
                        assert.equal(want, v:validate(core.parse(text)) == true, text)
                        assert.equal(want, v:check_json(text) ~= nil, text)
                        assert.equal(want, v:validate(core.decode(text)) == true, text)
                        seen = seen + (want and 1 or 0)
                    end
                end
            end
            assert.is_true(seen > 0)
        end)

        it("finds a few declared names among many members (an if, a discriminating branch)", function()
            -- one or two declared properties under objects of many members: the walk looks for
            -- the declared names; names of one length but other bytes, long names, escaped names
            local long = "artifacthub.io/containsSecurityUpdates"
            local v = core.compile {
                ["if"] = { properties = { kind = { const = "a" } }, required = A { "kind" } },
                ["then"] = { properties = { [long] = { enum = A { "true", "false" } } } },
                ["else"] = { properties = { kinx = { type = "integer" }, [long] = { type = "string" } },
                             required = A { "kinx" } },
            }
            local filler = {}
            for k = 1, 12 do filler[k] = string.format('"f%02d":%d', k, k) end
            local function doc(extra) return "{" .. table.concat(filler, ",") .. "," .. extra .. "}" end
            local CASES = {
                { doc('"kind":"a","' .. long .. '":"true"'), true },
                { doc('"kind":"a","' .. long .. '":"maybe"'), false },
                { doc('"kind":"b","kinx":1'), true },
                { doc('"kind":"b","kinx":"1"'), false },
                { doc('"kind":"b","kinz":1'), false },                 -- kinx missing
                { doc('"ki\\u006ed":"a"'), true },                      -- an escaped name is the name
                { doc('"kinx":2,"' .. long:sub(1, -2) .. 'X":7'), true },   -- same length, other bytes
                { doc('"kinx":2,"' .. long .. '":7'), false },
            }
            for _, case in ipairs(CASES) do
                local text, want = case[1], case[2]
                assert.equal(want, v:validate(core.parse(text)) == true, text)
                assert.equal(want, v:check_json(text) ~= nil, text)
                assert.equal(want, v:validate(core.decode(text)) == true, text)
                local out = v:validate(core.decode(text), { output = "basic" })
                assert.equal(want, out.valid, text)
            end
        end)
    end)

    describe("validate(tape): the verdict without the state, and the walk with it", function()
        -- a tape's verdict is first taken with no Lua state; a walk that needs scratch (uniqueItems
        -- past 16 items, a regex format asserted, scratch past its first size, the memo, the depth
        -- and work bounds) or an invalid value is walked again with it: the same answers as for
        -- the Lua value
        it("agrees with validate(value) and check_json", function()
            local CASES = require("support.scratch_cases")()
            CASES[#CASES + 1] = { { type = "array", items = { ["$ref"] = "#" } },
                { string.rep("[", 20) .. string.rep("]", 20) }, { max_depth = 10 } }
            for i, case in ipairs(CASES) do
                local v = core.compile(case[1], case[3])
                for j, text in ipairs(case[2]) do
                    local what = "case " .. i .. "." .. j
                    local a, ea = v:validate(core.parse(text))
                    local b, eb = v:validate(core.decode(text))
                    assert.equal(b, a, what)
                    if a == nil then
                        -- a Lua value's members have no order: the same errors, maybe listed
                        -- in another order
                        assert.equal(eb.kind, ea.kind, what)
                        local function where(err)
                            local list = {}
                            for k, e in ipairs(err.errors) do list[k] = e.pointer .. " " .. e.keyword end
                            table.sort(list)
                            return table.concat(list, ", ")
                        end
                        -- (past the work budget, writing a Lua value to a tape is charged too:
                        -- it stops elsewhere)
                        if ea.kind ~= "budget_exceeded" then assert.equal(where(eb), where(ea), what) end
                    end
                    assert.equal(a == true, v:check_json(text) ~= nil, what)
                    -- check_json(text) with no options takes the verdict with no state first
                    local jv, ej = v:check_json(text)
                    local cv, ec = v:check(text)
                    assert.equal(cv ~= nil, jv ~= nil, what)
                    assert.same(ec, ej, what)
                    assert.equal(a == true, v:validate(core.parse(text), { output = "basic" }).valid, what)
                end
            end
        end)
    end)

    describe("validate(): misuse", function()
        it("raises on a non-JSON value", function()
            assert.has_error(function() core.compile(true):validate(print) end,
                "value of type function is not JSON")
        end)
        it("raises without a value", function()
            assert.has_error(function() core.compile(true):validate() end,
                "bad argument #1 to 'validate' (value expected)")
        end)
        it("raises on an unknown option", function()
            assert.has_error(function() core.compile(true):validate(1, { firts = true }) end,
                "bad argument #2 to 'validate' (unknown option 'firts')")
        end)
    end)

    describe("validate(): the whole instance must be JSON, whatever the schema", function()
        local co = coroutine.create(function() end)
        local cases = {
            { "NaN at the root", { type = "number", maximum = 10 }, 0 / 0, "value is NaN, not JSON" },
            { "NaN in an array", true, { a = A { 0 / 0 } }, "value at /a/0 is NaN, not JSON" },
            { "infinity", {}, { a = 1 / 0 }, "value at /a is infinity, not JSON" },
            { "-infinity at the root", { type = "number" }, -1 / 0, "value is -infinity, not JSON" },
            { "a function member", {}, { f = print }, "value at /f of type function is not JSON" },
            { "a function key", {}, { a = 1, [print] = 2 }, "object has a key of type function, not JSON" },
            { "a coroutine", true, { x = { y = co } }, "value at /x/y of type thread is not JSON" },
            { "a function in a marked array", {}, A { 1, print }, "value at /1 of type function is not JSON" },
            { "a number key (the encoder refuses it too)", {}, { [1] = 1, [3] = 3 },
              "object has a key of type number, not JSON" },
            { "a boolean key, pointer escaped", {}, { ["a/b"] = { [true] = 1 } },
              "object at /a~1b has a key of type boolean, not JSON" },
            { "a marked array with a string key", {}, { a = A { 1, x = 2 } },
              "array at /a has keys other than 1..n, not JSON" },
            { "a userdata (a file)", {}, A { io.stdout }, "value at /0 of type userdata is not JSON" },
        }
        for _, case in ipairs(cases) do
            it("raises on " .. case[1], function()
                local v = core.compile(case[2])
                assert.has_error(function() v:validate(case[3]) end, case[4])
            end)
        end

        it("raises on a marked array whose other key comes before 1..n in the traversal", function()
            -- on Lua 5.4, [1] and [2] written in a constructor live in the hash part, where
            -- another key may come before them; 64 names: some of them do, whatever the seed
            local v = core.compile(true)
            for i = 1, 64 do
                local t = A { ["k" .. i] = true, [1] = "a", [2] = "b" }
                assert.has_error(function() v:validate({ a = t }) end,
                    "array at /a has keys other than 1..n, not JSON")
            end
        end)

        it("checks a shared subtable once and raises on a cycle even with a schema that checks nothing", function()
            local t = {}
            t.self = t
            assert.has_error(function() core.compile({}):validate(t) end,
                "value at /self is a table that contains itself (a cycle), not JSON")
            local a = A { 1 }
            for _ = 1, 200 do a = A { a, a } end   -- 2^200 paths, 201 tables
            assert.is_true(core.compile(true):validate(a))
            a[1] = { bad = print }
            assert.has_error(function() core.compile(true):validate(a) end,
                "value at /0/bad of type function is not JSON")
        end)

        it("raises on a cycle (the tester's cases), with the pointer where the cycle closes", function()
            local t = {}
            t.a = t
            assert.has_error(function() core.compile({ type = "object" }):validate(t) end,
                "value at /a is a table that contains itself (a cycle), not JSON")
            local u = {}
            u[1] = u
            assert.has_error(function()
                core.compile({ type = "array", items = { type = "array" } }):validate(u)
            end, "value at /0 is a table that contains itself (a cycle), not JSON")
            local m = A {}
            m[1] = { x = m }
            assert.has_error(function() core.compile(true):validate({ k = m }) end,
                "value at /k/0/x is a table that contains itself (a cycle), not JSON")
            local big = {}   -- more than 8 members, the cycle at the last
            for i = 1, 20 do big["k" .. i] = i end
            big.z = { back = big }
            assert.has_error(function() core.compile(true):validate(big) end,
                "value at /z/back is a table that contains itself (a cycle), not JSON")
        end)

        it("passes a table shared on different branches (a DAG is JSON), with any schema", function()
            local shared = A { 1, { s = "x" } }
            local doc = { a = shared, b = shared, c = A { shared, shared } }
            assert.is_true(core.compile(true):validate(doc))
            assert.is_true(core.compile({ additionalProperties = { type = "array" } }):validate(doc))
            local leaf = { n = 1 }
            local row = A {}
            for i = 1, 50 do row[i] = leaf end
            local deep = { r = row }
            for _ = 1, 300 do deep = { l = deep, r = deep } end   -- 2^300 paths
            assert.is_true(core.compile(true):validate(deep))
            assert.same({ valid = true }, core.compile({ type = "object" }):validate(deep, { output = "basic" }))
        end)

        it("bounds the check by max_depth: deeper is too_deep even for a true schema", function()
            local d = {}
            local cur = d
            for _ = 1, 3 do cur.x = {}; cur = cur.x end
            local v = core.compile(true, { max_depth = 2 })
            local ok, err = v:validate(d)
            assert.is_nil(ok)
            assert.equal("too_deep", err.kind)
            assert.same({ { "/x/x/x", "max_depth", "", "value nested deeper than 2 levels" } }, shape(err))
        end)
    end)

    describe("validate(): uniqueItems on long arrays (hashed, not pairwise)", function()
        local v = core.compile({ uniqueItems = true })
        local function range(n, f)
            local t = {}
            for i = 1, n do t[i] = f(i) end
            return A(t)
        end

        it("accepts 20000 distinct integers, strings and objects", function()
            assert.is_true(v:validate(range(20000, function(i) return i end)))
            assert.is_true(v:validate(range(20000, function(i) return "s" .. i end)))
            assert.is_true(v:validate(range(20000, function(i) return { a = i, b = A { i, "x" } } end)))
        end)

        it("finds 1 and 1.0 equal far apart", function()
            local t = range(20000, function(i) return i end)
            t[20001] = 20000.0
            check(v, t, { errors = { { "", "uniqueItems", "/uniqueItems",
                                       "(root) has duplicate items at 19999 and 20000" } } })
        end)

        it("reports the pair a pairwise scan would: the first item that repeats, then its first repeat", function()
            local t = range(30, function(i) return "v" .. i end)
            t[31] = "v5"; t[32] = "v2"; t[33] = "v2"
            local vt = core.compile({ properties = { tags = { uniqueItems = true } } })
            check(vt, { tags = t }, { errors = { { "/tags", "uniqueItems", "/properties/tags/uniqueItems",
                                                   "/tags has duplicate items at 1 and 31" } } })
        end)

        it("compares objects whatever their member order", function()
            local t = range(20, function(i) return { i = i } end)
            local a, b = {}, {}
            a.x = 1; a.y = A { 1, { z = 2 } }; a.w = null
            b.w = null; b.y = A { 1.0, { z = 2 } }; b.x = 1.0
            t[21] = a; t[22] = "x"; t[23] = b
            check(v, t, { errors = { { "", "uniqueItems", "/uniqueItems",
                                       "(root) has duplicate items at 20 and 22" } } })
        end)

        it("tells apart large items that differ only in their last member", function()
            local items = {}
            for i = 1, 40 do
                items[i] = range(5000, function(k) return k == 5000 and i or k end)
            end
            assert.is_true(v:validate(A(items)))
            items[41] = range(5000, function(k) return k == 5000 and 7 or k end)
            check(v, A(items), { errors = { { "", "uniqueItems", "/uniqueItems",
                                              "(root) has duplicate items at 6 and 40" } } })
        end)

        it("raises on cyclic items", function()
            local cyc = {}
            cyc.self = cyc
            assert.has_error(function()
                v:validate(range(20, function(i) return { n = i, c = cyc } end))
            end, "value at /0/c/self is a table that contains itself (a cycle), not JSON")
        end)
    end)

    describe("validate(): string enums and short string arrays by length and words", function()
        -- names of one length that share their first and last 8 bytes (the words of a name
        -- past 16 bytes) and differ in the middle, short ones that differ in one middle byte
        local long_a, long_b = "abcdefgh-middle-A-stuvwxyz", "abcdefgh-middle-B-stuvwxyz"
        local function members(n)
            local t = {}
            for i = 1, n do t[i] = "member-" .. i end
            return t
        end

        it("tells apart members that differ only between their words, in small and large enums", function()
            for _, n in ipairs({ 3, 30 }) do
                local e = members(n)
                e[#e + 1] = long_a
                e[#e + 1] = "abc"
                e[#e + 1] = 7
                e[#e + 1] = "a"
                local v = core.compile({ enum = A(e) })
                for _, ok in ipairs({ long_a, "abc", 7, "a", "member-1", "member-" .. n }) do
                    check(v, ok, true)
                end
                for _, bad in ipairs({ long_b, "acc", "abd", "member-0", "b", 8, "" }) do
                    local ok = v:validate(bad)
                    assert.is_nil(ok, tostring(bad))
                    assert.is_nil(v:check_json(core.encode(bad)), tostring(bad))
                end
                assert.truthy(v:check_json('"abcdefgh-middle-\\u0041-stuvwxyz"'))
            end
        end)

        it("accepts a large enum that lists a member twice, and finds it", function()
            local e = members(20)
            e[21] = "member-3"
            local v = core.compile({ type = "string", enum = A(e) })
            check(v, "member-3", true)
            assert.truthy(v:check_json('"member-20"'))
            assert.is_nil(v:check_json('"member-21"'))
        end)

        it("finds the first duplicate pair of short strings, and of long ones", function()
            local v = core.compile({ properties = { tags = { uniqueItems = true } } })
            check(v, { tags = A { "abc", "abd", "x", "abd", "abc" } }, { errors = { { "/tags", "uniqueItems",
                "/properties/tags/uniqueItems", "/tags has duplicate items at 0 and 4" } } })
            check(v, { tags = A { long_a, long_b, "x" } }, true)
            check(v, { tags = A { long_a, long_b, long_b } }, { errors = { { "/tags", "uniqueItems",
                "/properties/tags/uniqueItems", "/tags has duplicate items at 1 and 2" } } })
            assert.truthy(v:check_json('{"tags":["a","b","c","\\u0061b"]}'))
            assert.is_nil(v:check_json('{"tags":["a","b","c","\\u0061"]}'))
        end)

        it("counts characters, not bytes, for minLength/maxLength of a member", function()
            local v = core.compile({ properties = { s = { type = "string", minLength = 2, maxLength = 3,
                                                          format = "email" } } })
            for _, ok in ipairs({ "ab", "\195\169\195\169", "\240\159\152\128xy" }) do
                check(v, { s = ok }, true)
                assert.truthy(v:check_json(core.encode({ s = ok })))
            end
            check(v, { s = "\195\169" }, { errors = { { "/s", "minLength", "/properties/s/minLength",
                "/s has 1 characters, minimum 2" } } })
            check(v, { s = "\195\169\195\169\195\169\195\169" }, { errors = { { "/s", "maxLength",
                "/properties/s/maxLength", "/s has 4 characters, maximum 3" } } })
            assert.is_nil(v:check_json('{"s":"\\u00e9"}'))
        end)

        it("stops a pairwise scan of strings at the work budget as before", function()
            local t = {}
            for i = 1, 16 do t[i] = "t" .. i end
            local v = core.compile({ uniqueItems = true }, { work_budget = 20 })
            check(v, A(t), { kind = "budget_exceeded", errors = { { "", "budget", "",
                "validation stopped at (root): the work budget of 20 units ran out" } } })
        end)

        -- (no string member: the in-line scan has no list to walk, "enum": [] none at all)
        it("finds no string in an enum without string members, nor in an empty one", function()
            for _, e in ipairs({ {}, { 1, true } }) do
                local v = core.compile({ enum = A(e) })
                for _, s in ipairs({ "", "a", "abcd", "abcdefgh", "a-string-past-16-bytes" }) do
                    assert.is_nil(v:validate(s), s)
                    assert.is_nil(v:check_json(core.encode(s)), s)
                end
            end
        end)
    end)

    describe("validate(): the decoded option", function()
        it("is accepted and ignored: the one walk that writes the tape checks every value", function()
            local v = core.compile({})
            assert.has_error(function() v:validate({ f = print }) end)
            assert.has_error(function() v:validate({ f = print }, { decoded = true }) end)
            assert.is_true(v:validate(core.decode('{"a":[1,2,{"b":null}]}'), { decoded = true }))
        end)
        it("still walks and reports what the schema checks", function()
            local v = core.compile({ type = "object", required = { "a" } })
            local ok, err = v:validate(core.decode("{}"), { decoded = true })
            assert.is_nil(ok)
            assert.equal("required", err.errors[1].keyword)
        end)
        it("must be a boolean", function()
            assert.has_error(function() core.compile({}):validate(1, { decoded = "yes" }) end)
        end)
    end)

    describe("validate(): bounded error text (max_errors)", function()
        local function strings(n, prefix)
            local t = {}
            for i = 1, n do t[i] = prefix .. i end
            return A(t)
        end

        it("lists at most 10 allowed values in an enum message, all of them in 'allowed'", function()
            local _, err = core.compile({ enum = strings(12, "v") }):validate("x")
            assert.equal('(root) "x" is not one of "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", '
                .. "... (12 values)", err.message)
            assert.equal(12, #err.errors[1].allowed)
            _, err = core.compile({ enum = strings(10, "v") }):validate("x")
            assert.equal('(root) "x" is not one of "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"',
                err.message)
        end)

        it("joins at most 20 messages in err.message, keeps every error up to max_errors", function()
            local v = core.compile({ items = { type = "string" } })
            local _, err = v:validate(A { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                          21, 22, 23, 24, 25 })
            assert.equal(25, #err.errors)
            assert.is_nil(err.truncated)
            local msgs = {}
            for i = 0, 19 do msgs[#msgs + 1] = "/" .. i .. " is number, expected string" end
            assert.equal(table.concat(msgs, "; ") .. "; and 5 more errors", err.message)
            assert.equal("/24 is number, expected string", err.errors[25].message)
        end)

        it("stops after max_errors (default 100) and sets err.truncated", function()
            local v = core.compile({ items = { enum = strings(1000, "value") } })
            local _, err = v:validate(strings(10000, "wrong"))
            assert.equal("schema_mismatch", err.kind)
            assert.equal(100, #err.errors)
            assert.is_true(err.truncated)
            assert.equal("/99", err.errors[100].pointer)
            assert.equal("; and 80 more errors; stopped after 100 errors", err.message:sub(-46))

            _, err = v:validate(strings(5, "wrong"), { max_errors = 3 })
            assert.equal(3, #err.errors)
            assert.is_true(err.truncated)
            local tail = ', ... (1000 values)'
            assert.equal('/0 "wrong1" is not one of "value1", "value2", "value3", "value4", "value5", "value6", '
                .. '"value7", "value8", "value9", "value10"' .. tail .. '; /1 "wrong2" is not one of "value1", '
                .. '"value2", "value3", "value4", "value5", "value6", "value7", "value8", "value9", "value10"' .. tail
                .. '; /2 "wrong3" is not one of "value1", "value2", "value3", "value4", "value5", "value6", '
                .. '"value7", "value8", "value9", "value10"' .. tail .. "; stopped after 3 errors", err.message)

            _, err = v:validate(strings(3, "wrong"), { max_errors = 3 })
            assert.equal(3, #err.errors)
            assert.is_nil(err.truncated)

            _, err = v:validate(strings(150, "wrong"), { max_errors = 0 })
            assert.equal(150, #err.errors)
            assert.is_nil(err.truncated)
            assert.equal("; and 130 more errors", err.message:sub(-21))
        end)

        -- A 1 MB key from the model names the place in every message about it: the message
        -- shows it clipped at a character boundary, the item's pointer and property keep it whole.
        it("clips a huge key in the message (extra field, nested error, required), never in pointer", function()
            local key = "k" .. string.rep("\195\164", 512 * 1024)   -- 1 MB: "k" then 2-byte characters
            local function only_message(schema, value, kw)
                local _, err = core.compile(schema):validate(value)
                assert.equal(1, #err.errors)
                local e = err.errors[1]
                assert.equal(kw, e.keyword)
                assert.equal("/" .. key, e.pointer:sub(1, #key + 1))
                assert.is_true(#e.message < 300, #e.message)
                assert.equal(e.message, err.message)
                assert.truthy(e.message:find("/k\195\164\195\164", 1, true), e.message)
                assert.truthy(e.message:find("...", 1, true))
                assert.truthy(core.decode(core.encode(e.message))) -- still valid UTF-8
                return e
            end
            local e = only_message({ type = "object", additionalProperties = false }, { [key] = 1 },
                "additionalProperties")
            assert.equal(key, e.property)
            assert.truthy(e.message:find("^extra field /k"))
            assert.truthy(e.message:find(" is not allowed$"))
            e = only_message({ type = "object", unevaluatedProperties = false }, { [key] = 1 },
                "unevaluatedProperties")
            assert.equal(key, e.property)
            e = only_message({ additionalProperties = { type = "string" } }, { [key] = 1 }, "type")
            assert.truthy(e.message:find(" is number, expected string$"))
            e = only_message({ additionalProperties = { required = A { "id" } } }, { [key] = {} }, "required")
            assert.truthy(e.message:find("^missing required field /k"))
            assert.equal("/" .. key, e.pointer)
            -- a short pointer stays whole
            local _, err = core.compile({ additionalProperties = false }):validate({ mood = 1 })
            assert.equal("extra field /mood is not allowed", err.message)
        end)

        it("names the parent of a missing nested field (required, dependentRequired)", function()
            local _, err = core.compile({ properties = { a = { required = A { "id" } } } }):validate({ a = { x = 1 } })
            assert.equal("missing required field /a/id", err.message)
            _, err = core.compile({ properties = { a = { dependentRequired = { x = A { "id" } } } } })
                :validate({ a = { x = 1 } })
            assert.equal("missing field /a/id, required when x is present", err.message)
        end)

        it("raises on a bad max_errors", function()
            local v = core.compile(true)
            for _, bad in ipairs({ -1, 1.5, "3", true }) do
                assert.has_error(function() v:validate(1, { max_errors = bad }) end,
                    "bad argument #2 to 'validate' (option 'max_errors' must be an integer from 0 to 1e9)")
            end
        end)
    end)

    describe("compile(): bad schemas raise", function()
        local cases = {
            { { properties = { x = { type = "strin" } } },
              'invalid schema at /properties/x/type: unknown type "strin"' },
            { { required = "order_id" }, "invalid schema at /required: must be an array of strings" },
            { { minLength = -1 }, "invalid schema at /minLength: must be a non-negative integer" },
            { { minLength = 1.5 }, "invalid schema at /minLength: must be a non-negative integer" },
            { { properties = A { 1 } }, "invalid schema at /properties: must be an object" },
            { { pattern = "(" },
              "invalid schema at /pattern: invalid regular expression at offset 1: missing closing parenthesis" },
            { { patternProperties = { ["["] = true } },
              "invalid schema at /patternProperties/[: invalid regular expression at offset 1: "
              .. "missing terminating ] for character class" },
            { { ["$ref"] = "#/$defs/nope" }, 'invalid schema at /$ref: cannot resolve "#/$defs/nope"' },
            { { items = { ["$ref"] = "other.json" } },
              'invalid schema at /items/$ref: cannot resolve "other.json": "other.json" is not in this '
              .. 'schema and no loader was given' },
            { { allOf = A {} }, "invalid schema at /allOf: must be a non-empty array of schemas" },
            { { anyOf = A { 1 } }, "invalid schema at /anyOf/0: expected an object or a boolean, got number" },
            { A { 1 }, "invalid schema at (root): expected an object or a boolean, got array" },
            { { multipleOf = 0 }, "invalid schema at /multipleOf: must be greater than 0" },
            { { enum = "a" }, "invalid schema at /enum: must be an array" },
            { { uniqueItems = 1 }, "invalid schema at /uniqueItems: must be a boolean" },
            { { maximum = 1 / 0 }, "invalid schema at /maximum: must be a finite number" },
            { { minimum = 0 / 0 }, "invalid schema at /minimum: must be a finite number" },
            { { properties = { a = { const = { x = A { -1 / 0 } } } } },
              "invalid schema at /properties/a/const: infinity is not JSON" },
            { { enum = A { 1, 0 / 0 } }, "invalid schema at /enum: NaN is not JSON" },
            { { enum = A { { f = print } } }, "invalid schema at /enum: a value of type function is not JSON" },
            { { properties = { a = { pattern = "^a" } }, maxLength = "3" },
              "invalid schema at /maxLength: must be a non-negative integer" },
        }
        for _, case in ipairs(cases) do
            it(case[2], function()
                assert.has_error(function() core.compile(case[1]) end, case[2])
            end)
        end

        it("raises on an unknown option", function()
            assert.has_error(function() core.compile({}, { format = true }) end,
                "bad argument #2 to 'compile' (unknown option 'format')")
        end)
        it("raises on a schema that is not a table, boolean or JSON text", function()
            assert.has_error(function() core.compile(42) end,
                "bad argument #1 to 'compile' (table, boolean or JSON text expected)")
        end)
        it("raises on schema text that is not JSON, with the format error's message", function()
            assert.has_error(function() core.compile('{"type":') end,
                "schema is not JSON: unexpected end of text at line 1, column 9: expected a JSON value")
            assert.has_error(function() core.compile('{"a":1,"a":2}') end)
        end)
    end)

    describe("validate(): regex limits", function()
        it("reports a hostile pattern as a pattern error, not a hang", function()
            local v = core.compile({ pattern = "^(a+)+$" })
            local _, err = v:validate(string.rep("a", 40) .. "!")
            assert.equal("schema_mismatch", err.kind)
            assert.equal("pattern", err.errors[1].keyword)
            assert.equal("(root) could not be checked against pattern ^(a+)+$: the match limit was hit",
                err.errors[1].message)
        end)
        it("bounds a hostile pattern on member names and over many items (max_errors ends the walk)", function()
            local _, err = core.compile({ patternProperties = { ["^(a+)+$"] = true } })
                :validate({ [string.rep("a", 40) .. "!"] = 1 })
            assert.same({ { "/" .. string.rep("a", 40) .. "!", "patternProperties", "/patternProperties",
                            "/" .. string.rep("a", 40) .. "! could not be checked against pattern ^(a+)+$: "
                            .. "the match limit was hit" } }, shape(err))
            local items = {}
            for i = 1, 1000 do items[i] = string.rep("a", 30) .. "!" end
            _, err = core.compile({ items = { pattern = "^(a+)+$" } }):validate(A(items))
            assert.equal(100, #err.errors)
            assert.is_true(err.truncated)
            assert.equal("/99", err.errors[100].pointer)
        end)
        -- The JIT keeps a frame per repetition of a group (24 to 48 bytes); PCRE2's default
        -- 32 KiB stack ended these near 1,000 characters, reported as the match limit.
        it("matches long strings against a repeated group (the JIT's stack grows past 32 KiB)", function()
            local cases = {
                { "^(a|b)+$", string.rep("ab", 1500) },                -- 3,000 characters
                { "^(\\w+\\s?)+$", string.rep("word ", 1000) },        -- 5,000 characters
                { "^(a|b)+$", string.rep("ab", 50000) },               -- 100 KB
                { "^([a-z]+ ?)+$", string.rep("word ", 200000) },      -- 1 MB
            }
            for _, case in ipairs(cases) do
                local v = core.compile({ pattern = case[1] })
                local ok, err = v:validate(case[2])
                assert.is_nil(err and err.errors[1].message, case[1] .. " on " .. #case[2])
                assert.is_true(ok)
                local value, cerr = v:check('"' .. case[2] .. '"')   -- from text: the same matcher
                assert.is_nil(cerr and tostring(cerr))
                assert.equal(case[2], value)
            end
        end)
        it("rejects a long string that does not match as a mismatch, not as unchecked", function()
            local s = string.rep("ab", 500000) .. "c"   -- 1 MB and one byte
            local _, err = core.compile({ pattern = "^(a|b)+$" }):validate(s)
            assert.equal("schema_mismatch", err.kind)
            assert.equal("pattern", err.errors[1].keyword)
            assert.truthy(err.errors[1].message:find(" does not match pattern ^(a|b)+$", 1, true),
                err.errors[1].message)
        end)
        it("names the JIT stack limit when a subject outgrows it (64 MiB)", function()
            local v = core.compile({ pattern = "^((a)|(b))+$" })   -- 48 bytes of stack a character
            local _, err = v:validate(string.rep("ab", 1000000))
            assert.equal("(root) could not be checked against pattern ^((a)|(b))+$: "
                .. "the JIT stack limit was hit", err.errors[1].message)
            assert.is_true(v:validate(string.rep("ab", 1000)))   -- the matcher's stack is reused
        end)
        it("refuses at compile a $ref loop through $defs", function()
            assert.has_error(function()
                core.compile({ ["$defs"] = { a = { ["$ref"] = "#/$defs/b" }, b = { ["$ref"] = "#/$defs/a" } },
                               ["$ref"] = "#/$defs/a" })
            end, "invalid schema at /$defs/a: reference cycle that never consumes input "
                .. "(validation would not end)")
        end)
        -- Park-Miller picks: the same sequence on every Lua (integers below 2^53 in doubles too)
        local function picker(seed)
            return function(list)
                seed = seed * 16807 % 2147483647
                return list[seed % #list + 1]
            end
        end
        -- The core's own scan (the pattern as given) against PCRE2 (the same pattern inside a
        -- group, which is not of the simple shape) on 'n' subjects of 0 to 'most' characters
        -- picked from 'chars'.
        local function same_as_pcre2(p, pick, chars, most, n)
            local fast, pcre = core.compile({ pattern = p }), core.compile({ pattern = "(?:" .. p .. ")" })
            local counts = {}
            for k = 0, most do counts[#counts + 1] = k end
            for _ = 1, n do
                local parts = {}
                for i = 1, pick(counts) do parts[i] = pick(chars) end
                local subject = table.concat(parts)
                assert.equal(pcre:validate(subject) == true, fast:validate(subject) == true,
                    "pattern " .. p .. " on " .. subject)
            end
        end
        it("decides simple anchored patterns as PCRE2 does (matched without it: ^atoms$ of ASCII sets, "
            .. "negated ones with \\s)", function()
            local pick = picker(20261202)
            local ATOMS = { "a", "b", "-", "\\.", "\\d", "\\w", "[a-c]", "[0-9]", "[A-Z]", "[a-z0-9_]", "[.-]",
                "x", "[b]", "[^a-c]", "[^@\\s]", "[^\\d.]", "[^x\\s-]", "@" }
            local QUANT = { "", "", "?", "*", "+", "{2}", "{1,3}", "{2,}", "{0,1}" }
            local ATOM_COUNTS = { 1, 2, 3, 4, 5 }
            -- beyond ASCII: U+00A0, U+2028, U+3000 and U+FEFF are ECMA-262 white space (\s),
            -- U+200B and U+1F600 are not
            local CHARS = { "a", "b", "c", "-", ".", "1", "9", "Z", "_", "x", "\195\169", " ", "@", "\t",
                "\194\160", "\226\128\168", "\227\128\128", "\239\187\191", "\226\128\139",
                "\240\159\152\128" }
            for _ = 1, 300 do
                local parts = { "^" }
                for _ = 1, pick(ATOM_COUNTS) do parts[#parts + 1] = pick(ATOMS) .. pick(QUANT) end
                parts[#parts + 1] = "$"
                same_as_pcre2(table.concat(parts), pick, CHARS, 7, 30)
            end
        end)
        it("tells strings apart by every byte in enum (in line and hashed), const and uniqueItems (0 to 40 bytes)",
            function()
            local unique = core.compile({ type = "array", uniqueItems = true })
            -- 17 members: past the in-line comparison, the enum is looked up by hash
            local function hashed(s)
                local list = { s }
                for k = 1, 16 do list[#list + 1] = k end
                return core.compile({ enum = list })
            end
            local compared = 0
            for len = 0, 40 do
                local a = string.rep("a", len)
                assert.is_nil(unique:validate({ a, a }), "uniqueItems, two of " .. len .. " bytes")
                assert.is_true(core.compile({ enum = { 1, 2, 3, 4, 5, 6, 7, 8, a } }):validate(a))
                assert.is_true(hashed(a):validate(a))
                assert.is_true(core.compile({ const = a }):validate(a))
                for pos = 1, len do
                    local b = a:sub(1, pos - 1) .. "b" .. a:sub(pos + 1)
                    assert.is_true(unique:validate({ a, b }), "uniqueItems, byte " .. pos .. " of " .. len)
                    assert.is_nil(core.compile({ enum = { 1, 2, 3, 4, 5, 6, 7, 8, b } }):validate(a),
                        "enum, byte " .. pos .. " of " .. len)
                    assert.is_nil(hashed(b):validate(a), "hashed enum, byte " .. pos .. " of " .. len)
                    assert.is_nil(core.compile({ const = b }):validate(a), "const, byte " .. pos .. " of " .. len)
                    compared = compared + 1
                end
            end
            assert.equal(820, compared)
        end)
        it("decides unanchored one-character searches (\\S, [a-c]+) as PCRE2 does", function()
            local pick = picker(20261204)
            local PATTERNS = { "\\S", "\\S+", "[a-c]", "\\d", "x", "[^@\\s]", "[^@\\s]+", "\\w+", "[.-]", "@",
                "\\S{2}", "\\S*", "a?", "^\\S", "\\S$", "ab" }
            local CHARS = { "a", "c", "-", ".", "1", "Z", "_", "x", "\195\169", " ", "@", "\t", "\n", "\194\160",
                "\226\128\168", "\227\128\128", "\239\187\191", "\226\128\139", "\240\159\152\128" }
            for _, p in ipairs(PATTERNS) do same_as_pcre2(p, pick, CHARS, 4, 200) end
        end)
        it("matches ^[^@\\s]+@[^@\\s]+$ as PCRE2 does on every ECMA-262 white space and its neighbours", function()
            local p = "^[^@\\s]+@[^@\\s]+$"
            local fast, pcre = core.compile({ pattern = p }), core.compile({ pattern = "(?:" .. p .. ")" })
            local function utf8char(cp)
                if cp < 0x80 then return string.char(cp) end
                if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
                return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
            end
            local cps = { 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0x9F, 0xA0, 0xA1, 0x167F, 0x1680, 0x1681,
                0x1FFF, 0x2000, 0x2005, 0x200A, 0x200B, 0x2027, 0x2028, 0x2029, 0x202A, 0x202F, 0x205E, 0x205F, 0x2060, 0x2FFF,
                0x3000, 0x3001, 0xFEFE, 0xFEFF, 0xFF00 }
            local rejected = 0
            for _, cp in ipairs(cps) do
                for _, subject in ipairs({ "a" .. utf8char(cp) .. "@b", "a@" .. utf8char(cp), utf8char(cp) .. "@b" }) do
                    local want = pcre:validate(subject) == true
                    assert.equal(want, fast:validate(subject) == true, string.format("U+%04X in %q", cp, subject))
                    if not want then rejected = rejected + 1 end
                end
            end
            assert.equal(3 * 17, rejected)   -- the 17 white space code points above, in each place
            assert.is_true(fast:validate("erika.mustermann@example.com"))
            assert.is_nil(fast:validate("erika@example@com"))
        end)
        it("refuses a string or key that is not UTF-8 (it is no JSON, as for encode and decode)", function()
            local v = core.compile({ pattern = "a" })
            assert.has_error(function() v:validate("a\255") end, "string is not UTF-8 text, not JSON")
            -- overlong, surrogate: every keyword, not just pattern
            local any = core.compile({ type = "string", maxLength = 1 })
            assert.has_error(function() any:validate("\192\128") end, "string is not UTF-8 text, not JSON")
            assert.has_error(function() any:validate({ "x", "\237\160\128" }) end,
                "string at /1 is not UTF-8 text, not JSON")
            -- the key's bytes stay out of the message
            assert.has_error(function() core.compile({}):validate({ a = { ["\255"] = 1 } }) end,
                "object at /a has a key that is not UTF-8 text, not JSON")
        end)
    end)

    describe("compile() options: draft, $schema, loader", function()
        it("reads draft-04 rules when asked (boolean exclusiveMaximum, id)", function()
            local v = core.compile({ maximum = 3, exclusiveMaximum = true }, { draft = "draft4" })
            check(v, 2, true)
            check(v, 3, { errors = { { "", "exclusiveMaximum", "/exclusiveMaximum",
                "(root) 3 is not less than exclusive maximum 3" } } })
        end)
        it("lets $schema win over the draft option", function()
            -- draft-07: $ref ignores its siblings; 2020-12 would apply maxLength too
            local schema = { ["$schema"] = "http://json-schema.org/draft-07/schema#",
                             definitions = { s = { type = "string" } },
                             ["$ref"] = "#/definitions/s", maxLength = 1 }
            check(core.compile(schema, { draft = "2020-12" }), "abc", true)
            schema["$schema"] = nil
            check(core.compile(schema, { draft = "2020-12" }), "abc", { errors = { { "", "maxLength",
                "/maxLength", "(root) has 3 characters, maximum 1" } } })
        end)
        it("raises on an unknown draft name", function()
            assert.has_error(function() core.compile({}, { draft = "draft6" }) end,
                "bad argument #2 to 'compile' (option 'draft' must be \"2020-12\", \"draft7\" or \"draft4\")")
        end)
        it("resolves remote references through the loader, once per document", function()
            local calls = {}
            local v = core.compile({
                ["$id"] = "https://example.com/schemas/order.json",
                properties = { id = { ["$ref"] = "defs.json#/$defs/order_id" },
                               tag = { ["$ref"] = "defs.json#tag" } },
            }, { loader = function(uri)
                calls[#calls + 1] = uri
                return { ["$defs"] = { order_id = { type = "string", pattern = "^ORD-[0-9]+$" },
                                       tag = { ["$anchor"] = "tag", maxLength = 3 } } }
            end })
            assert.same({ "https://example.com/schemas/defs.json" }, calls)
            check(v, { id = "ORD-12", tag = "abc" }, true)
            local err = check(v, { id = "ORD-20481937\n" }, { errors = { { "/id", "pattern",
                "https://example.com/schemas/defs.json#/$defs/order_id/pattern",
                '/id "ORD-20481937\\n" does not match pattern ^ORD-[0-9]+$' } } })
            assert.equal("https://example.com/schemas/defs.json#/$defs/order_id/pattern",
                err.errors[1].absolute_schema_location)
        end)
        it("turns a loader failure into a compile error naming the reference", function()
            assert.has_error(function()
                core.compile({ ["$ref"] = "https://example.com/x.json" },
                    { loader = function() return nil, "offline" end })
            end, 'invalid schema at /$ref: cannot resolve "https://example.com/x.json": '
                .. 'the loader found nothing: offline')
            assert.has_error(function()
                core.compile({ ["$ref"] = "https://example.com/x.json" },
                    { loader = function() error("boom", 0) end })
            end, 'invalid schema at /$ref: cannot resolve "https://example.com/x.json": the loader failed: boom')
        end)

        it("says what a misbehaving loader did, without calling its values' __tostring", function()
            local prefix = 'invalid schema at /$ref: cannot resolve "https://example.com/x.json": '
            local function fails(loader, message)
                local ok, err = pcall(core.compile, { ["$ref"] = "https://example.com/x.json" },
                    { loader = loader })
                assert.is_false(ok)
                assert.equal(prefix .. message, err)
            end
            local called = false
            local nasty = setmetatable({}, { __tostring = function()
                called = true
                error("tostring raised")
            end })
            fails(function() error({ x = 1 }) end, "the loader raised a table value")
            fails(function() error(nil) end, "the loader raised a nil value")
            fails(function() error(nasty) end, "the loader raised a table value")
            fails(function() error(print) end, "the loader raised a function value")
            fails(function() error(42, 0) end, "the loader failed: 42")
            fails(function() return 42 end,
                "the loader returned a number, expected a schema table or nil, message")
            fails(function() return print end,
                "the loader returned a function, expected a schema table or nil, message")
            fails(function() return nil, {} end, "the loader found nothing")
            fails(function() return nil, nasty end, "the loader found nothing")
            fails(function() end, "the loader found nothing")
            fails(function() return nil, "no such document" end, "the loader found nothing: no such document")
            fails(function() return '{"type":"string"}' end,
                "the loader returned a string; it must return the schema decoded (a table)")
            assert.is_false(called)
            -- a custom meta-schema is read raw: its metamethods do not run
            local meta = setmetatable({}, { __index = function() error("__index ran") end })
            local v0 = core.compile({ ["$schema"] = "https://example.com/meta", type = "string" },
                { loader = function() return meta end })
            assert.is_true(v0:validate("x"))
            -- a boolean schema is a schema
            local v = core.compile({ ["$ref"] = "https://example.com/x.json" },
                { loader = function() return false end })
            assert.is_nil((v:validate(1)))
        end)
        it("raises on a loader that is not a function", function()
            assert.has_error(function() core.compile({}, { loader = {} }) end,
                "bad argument #2 to 'compile' (option 'loader' must be a function)")
        end)
    end)

    describe("validate(): keywords beyond the first cut", function()
        it("multipleOf is exact for decimals", function()
            local v = core.compile({ multipleOf = 0.01 })
            check(v, 143.48, true)
            check(v, 0.07, true)
            check(v, 1e308, true)
            check(v, 143.485, { errors = { { "", "multipleOf", "/multipleOf",
                "(root) 143.485 is not a multiple of 0.01" } } })
        end)
        -- From text the schema's own numbers are read as written, on every Lua: LuaJIT's doubles
        -- (and Lua 5.4's int64) would round these bounds and values.
        it("compiled from JSON text, keeps bounds, const and enum integers beyond 2^53 and int64 exact", function()
            local function text_check(schema, instance, message)
                local v = core.compile(schema)
                local ok, err = v:check(instance)
                if message == true then
                    assert.is_truthy(ok, schema .. " must accept " .. instance)
                else
                    assert.is_nil(ok, schema .. " must reject " .. instance)
                    assert.are.equal(message, err.errors[1].message)
                end
            end
            text_check('{"maximum":9007199254740992}', "9007199254740993",
                "(root) 9007199254740993 is greater than maximum 9007199254740992")
            text_check('{"minimum":9007199254740993}', "9007199254740992",
                "(root) 9007199254740992 is less than minimum 9007199254740993")
            text_check('{"minimum":9007199254740993}', "9007199254740993", true)
            text_check('{"maximum":9223372036854775806}', "9223372036854775807",
                "(root) 9223372036854775807 is greater than maximum 9223372036854775806")
            text_check('{"maximum":18446744073709551615}', "18446744073709551616",
                "(root) 18446744073709551616 is greater than maximum 18446744073709551615")
            text_check('{"maximum":18446744073709551615}', "18446744073709551615", true)
            text_check('{"exclusiveMinimum":18446744073709551615}', "18446744073709551615",
                "(root) 18446744073709551615 is not greater than exclusive minimum 18446744073709551615")
            text_check('{"multipleOf":9007199254740993}', "18014398509481986", true)
            text_check('{"multipleOf":9007199254740993}', "18014398509481984",
                "(root) 18014398509481984 is not a multiple of 9007199254740993")
            -- a divisor beyond int64: its significant digits times a power of ten
            text_check('{"multipleOf":100000000000000000000}', "0", true)
            text_check('{"multipleOf":100000000000000000000}', "300000000000000000000", true)
            text_check('{"multipleOf":100000000000000000000}', "300000000000000000001",
                "(root) 300000000000000000001 is not a multiple of 100000000000000000000")
            -- a double against a bound beyond int64 that rounds to the same double
            text_check('{"minimum":10000000000000000001}', "1e19",
                "(root) 1e+19 is less than minimum 10000000000000000001")
            text_check('{"exclusiveMaximum":10000000000000000001}', "1e19", true)
            text_check('{"const":9007199254740993}', "9007199254740992", "(root) must be 9007199254740993")
            text_check('{"const":9007199254740993}', "9007199254740993", true)
            text_check('{"enum":["a",9007199254740993]}', "9007199254740992",
                '(root) 9007199254740992 is not one of "a", 9007199254740993')
            text_check('{"enum":["a",9007199254740993]}', "9007199254740993", true)
            text_check('{"properties":{"a":{"const":{"b":[18446744073709551617]}}}}',
                '{"a":{"b":[18446744073709551616]}}', '/a must be {"b":[18446744073709551617]}')
            text_check('{"properties":{"a":{"const":{"b":[18446744073709551617]}}}}',
                '{"a":{"b":[18446744073709551617]}}', true)
            -- the schema value comes back second, with the text's key order
            local v, schema = core.compile('{"type":"object","properties":{"z":{},"a":{}}}')
            assert.are.equal("jsoncontract.Validator", tostring(v):match("^jsoncontract%.Validator"))
            assert.are.same({ "type", "properties" }, getmetatable(schema).__order)
            assert.are.same({ "z", "a" }, getmetatable(schema.properties).__order)
        end)
        it("an empty enum lets nothing pass and says so", function()
            check(core.compile({ enum = A {} }), 1, { errors = { { "", "enum", "/enum",
                "(root) 1 is not allowed: the enum is empty" } } })
        end)
        if math.type then
            it("compares big integers as integers", function()
                local v = core.compile({ maximum = 9007199254740992 })
                check(v, 9007199254740992, true)
                check(v, 9007199254740993, { errors = { { "", "maximum", "/maximum",
                    "(root) 9007199254740993 is greater than maximum 9007199254740992" } } })
            end)
        end
        it("if/then/else picks the branch", function()
            local v = core.compile({ ["if"] = { properties = { urgent = { const = true } } },
                                     ["then"] = { required = A { "reason" } },
                                     ["else"] = { maxProperties = 1 } })
            check(v, { urgent = true, reason = "x" }, true)
            check(v, { urgent = true }, { errors = { { "", "required", "/then/required",
                "missing required field /reason" } } })
            check(v, { urgent = false, a = 1 }, { errors = { { "", "maxProperties",
                "/else/maxProperties", "(root) has 2 properties, maximum 1" } } })
        end)
        it("dependentRequired names both fields", function()
            local v = core.compile({ dependentRequired = { refund = A { "iban" } } })
            check(v, { refund = true }, { errors = { { "", "dependentRequired", "/dependentRequired",
                "missing field /iban, required when refund is present" } } })
        end)
        it("contains with minContains and maxContains", function()
            local v = core.compile({ contains = { type = "string" }, minContains = 2, maxContains = 3 })
            check(v, A { "a", 1, "b" }, true)
            check(v, A { "a", 1 }, { errors = { { "", "minContains", "/minContains",
                '(root) has 1 items matching "contains", minimum 2' } } })
            check(core.compile({ contains = { type = "string" } }), A { 1 }, { errors = { { "",
                "contains", "/contains", '(root) has no item that matches "contains"' } } })
        end)
        it("propertyNames checks each key at its own location", function()
            local v = core.compile({ propertyNames = { pattern = "^[a-z_]+$" } })
            check(v, { ok_name = 1 }, true)
            check(v, { Bad = 1 }, { errors = { { "/Bad", "pattern", "/propertyNames/pattern",
                '/Bad "Bad" does not match pattern ^[a-z_]+$' } } })
        end)
        it("unevaluatedProperties sees through allOf, anyOf and $ref", function()
            local v = core.compile({
                ["$defs"] = { base = { properties = { id = { type = "string" } } } },
                allOf = A { { ["$ref"] = "#/$defs/base" } },
                anyOf = A { { properties = { a = true }, required = A { "a" } },
                            { properties = { b = true }, required = A { "b" } } },
                unevaluatedProperties = false,
            })
            check(v, { id = "x", a = 1 }, true)
            check(v, { id = "x", a = 1, b = 2 }, true)
            check(v, { id = "x", a = 1, c = 3 }, { errors = { { "/c", "unevaluatedProperties",
                "/unevaluatedProperties", "extra field /c is not allowed" } } })
        end)
        it("$dynamicRef follows the dynamic scope", function()
            local v = core.compile({
                ["$id"] = "https://example.com/strict-tree",
                ["$dynamicAnchor"] = "node",
                ["$ref"] = "tree",
                unevaluatedProperties = false,
                ["$defs"] = { tree = {
                    ["$id"] = "tree", ["$dynamicAnchor"] = "node", type = "object",
                    properties = { data = true,
                                   children = { type = "array", items = { ["$dynamicRef"] = "#node" } } },
                } },
            })
            check(v, { children = A { { data = 1 } } }, true)
            local _, err = v:validate({ children = A { { daat = 1 } } })
            assert.equal("/children/0/daat", err.errors[1].pointer)
            assert.equal("unevaluatedProperties", err.errors[1].keyword)
        end)
        it("limits an email's local part to 64 octets (RFC 5321 4.5.3.1.1), quotes included", function()
            local v = core.compile({ format = "email" }, { format_assertion = true })
            local idn = core.compile({ format = "idn-email" }, { format_assertion = true })
            local l64, l65 = string.rep("a", 64), string.rep("a", 65)
            check(v, l64 .. "@example.com", true)
            check(idn, l64 .. "@example.com", true)
            check(v, l65 .. "@example.com", { errors = { { "", "format", "/format",
                '(root) "' .. l65 .. '@example.com" is not a valid email' } } })
            assert.is_nil((idn:validate(l65 .. "@example.com")))
            check(v, '"' .. string.rep("b", 62) .. '"@example.com', true)
            assert.is_nil((v:validate('"' .. string.rep("b", 63) .. '"@example.com')))
            -- octets, not characters: 32 two-byte characters are 64 octets
            check(idn, string.rep("\195\169", 32) .. "@example.com", true)
            assert.is_nil((idn:validate(string.rep("\195\169", 32) .. "a@example.com")))
        end)
        it("asserts formats only on request", function()
            local schema = { format = "email" }
            check(core.compile(schema), "not an email", true)
            local v = core.compile(schema, { format_assertion = true })
            check(v, "joe.bloggs@example.com", true)
            check(v, "joe..bloggs@example.com", { errors = { { "", "format", "/format",
                '(root) "joe..bloggs@example.com" is not a valid email' } } })
            local f = core.compile({ format = "ipv4" }, { format_assertion = true })
            check(f, "192.168.0.1", true)
            check(f, "192.168.00.1", { errors = { { "", "format", "/format",
                '(root) "192.168.00.1" is not a valid ipv4' } } })
            check(core.compile({ format = "no-such-format" }, { format_assertion = true }), "x", true)
        end)
        it("patterns follow ECMA-262: long property names, Unicode \\s, $ only at the end", function()
            check(core.compile({ pattern = "^\\p{Letter}+$" }), "Käse", true)
            check(core.compile({ pattern = "^\\s$" }), "\194\160", true)
            check(core.compile({ pattern = "^\\d$" }), "\217\163", { errors = { { "", "pattern",
                "/pattern", '(root) "\217\163" does not match pattern ^\\d$' } } })
            check(core.compile({ pattern = "^(?<y>[0-9]{4})$" }), "2024", true)
        end)
        it("refuses at compile what is not ECMA-262 (inline flags, PCRE-only escapes)", function()
            assert.has_error(function() core.compile({ pattern = "a(?i)b" }) end,
                "invalid schema at /pattern: invalid regular expression at offset 1: not ECMA-262 "
                .. "syntax (inline flags, comments and (?P...) groups are not allowed)")
            assert.has_error(function() core.compile({ pattern = "\\Z" }) end,
                "invalid schema at /pattern: invalid regular expression at offset 0: not ECMA-262 "
                .. "syntax (unknown escape)")
        end)
    end)

    describe("validate(): output formats", function()
        it("adds the absolute schema location to every error", function()
            local v = core.compile({ ["$id"] = "https://example.com/t.json",
                                     properties = { n = { type = "integer" } } })
            local _, err = v:validate({ n = "x" })
            assert.equal("https://example.com/t.json#/properties/n/type",
                err.errors[1].absolute_schema_location)
        end)
        it("returns JSON Schema's basic output on request", function()
            local v = core.compile({ properties = { n = { type = "integer" } }, required = A { "m" } })
            assert.same({ valid = true }, v:validate({ m = 1 }, { output = "basic" }))
            local out = v:validate({ n = "x" }, { output = "basic" })
            assert.is_false(out.valid)
            assert.same({
                { keywordLocation = "/required", absoluteKeywordLocation = "#/required",
                  instanceLocation = "", error = "missing required field /m" },
                { keywordLocation = "/properties/n/type", absoluteKeywordLocation = "#/properties/n/type",
                  instanceLocation = "/n", error = "/n is string, expected integer" },
            }, out.errors)
        end)
        it("gives the keyword location through $ref in basic output", function()
            local v = core.compile({ ["$defs"] = { id = { type = "string", maxLength = 3 } },
                                     properties = { a = { ["$ref"] = "#/$defs/id" } } })
            local out = v:validate({ a = "abcd" }, { output = "basic" })
            assert.same({ { keywordLocation = "/properties/a/$ref/maxLength",
                            absoluteKeywordLocation = "#/$defs/id/maxLength", instanceLocation = "/a",
                            error = "/a has 4 characters, maximum 3" } }, out.errors)
            local _, err = v:validate({ a = "abcd" })
            assert.equal("/$defs/id/maxLength", err.errors[1].schema_pointer)
        end)
        it("says truncated = true in basic output when max_errors stopped the walk", function()
            local v = core.compile({ items = { type = "string" } })
            local items = {}
            for i = 1, 150 do items[i] = i end
            local out = v:validate(A(items), { output = "basic" })
            assert.is_false(out.valid)
            assert.is_true(out.truncated)
            assert.equal(100, #out.errors)
            assert.equal("/99", out.errors[100].instanceLocation)
            out = v:validate(A(items), { output = "basic", max_errors = 0 })
            assert.is_nil(out.truncated)
            assert.equal(150, #out.errors)
            out = v:validate(A { 1, 2, 3 }, { output = "basic", max_errors = 3 })
            assert.is_nil(out.truncated)
            assert.equal(3, #out.errors)
            out = v:validate(A { 1, 2, 3, 4 }, { output = "basic", max_errors = 3 })
            assert.is_true(out.truncated)
            assert.equal(3, #out.errors)
            assert.same({ valid = true }, v:validate(A { "a" }, { output = "basic", max_errors = 1 }))
        end)
        it("raises on an unknown output format", function()
            assert.has_error(function() core.compile({}):validate(1, { output = "verbose" }) end,
                "bad argument #2 to 'validate' (option 'output' must be \"basic\")")
        end)
    end)

    describe("compile(): self-referencing schemas", function()
        it("validate a deep tree without unbounded recursion", function()
            local v = core.compile({ ["$defs"] = { node = { type = "object",
                properties = { child = { ["$ref"] = "#/$defs/node" } } } },
                ["$ref"] = "#/$defs/node" }, { max_depth = 200 })
            local deep = {}
            local cur = deep
            for _ = 1, 150 do cur.child = {}; cur = cur.child end
            check(v, deep, true)
            for _ = 1, 100 do cur.child = {}; cur = cur.child end
            local _, err = v:validate(deep)
            assert.equal("too_deep", err.kind)
        end)
    end)

    describe("bounded messages", function()
        it("names the place of a bad value under a 1 MB key, and an unknown 1 MB option, in a few hundred bytes",
            function()
            local K = ("k"):rep(1000000)
            local ok, err = pcall(core.compile({}).validate, core.compile({}), { [K] = { 0 / 0 } })
            assert.is_false(ok)
            assert.is_true(#err < 400, #err)
            assert.truthy(err:find("^value at /kkk"), err)
            assert.truthy(err:find("... is NaN, not JSON", 1, true), err)
            ok, err = pcall(core.decode, "1", { [K] = 1 })
            assert.is_false(ok)
            assert.is_true(#err < 300, #err)
            assert.truthy(err:find("unknown option 'kkk", 1, true), err)
        end)
    end)

    describe("numbers keep their kind", function()
        it("writes counts and integer limits as integers ('1', not '1.0'), floats as floats", function()
            local v = core.compile { properties = {
                s = { minLength = 1 }, a = { maxItems = 2 }, o = { minProperties = 1 },
                i = { minimum = 5 }, f = { maximum = 2.5 } } }
            local _, err = v:validate { s = "", a = A { 1, 2, 3 }, o = {}, i = 4, f = 3 }
            local seen = {}
            for _, e in ipairs(err.errors) do seen[e.keyword] = e end
            for _, kw in ipairs { "minLength", "maxItems", "minProperties" } do
                local e = assert(seen[kw], kw)
                if math.type then
                    assert.equal("integer", math.type(e.limit), kw)
                    assert.equal("integer", math.type(e.actual), kw)
                end
            end
            assert.equal("integer", math.type and math.type(seen.minimum.limit) or "integer")
            local text = core.encode { minLength = seen.minLength, minimum = seen.minimum, maximum = seen.maximum }
            assert.truthy(text:find('"limit":1,', 1, true), text)
            assert.truthy(text:find('"actual":0,', 1, true), text)
            assert.truthy(text:find('"limit":5,', 1, true), text)
            assert.truthy(text:find('"limit":2.5,', 1, true), text)
        end)
    end)

    describe("owns what it compiled", function()
        it("keeps enum and const as compiled when the caller changes or drops the schema's tables", function()
            local long = ("r"):rep(60)
            local colors = { "red_" .. long, "green_" .. long }
            local obj = { name = "n_" .. long, tags = { "t_" .. long } }
            local v = assert(core.compile { properties = { c = { enum = colors }, o = { const = obj } } })
            colors[1], colors[2] = "blue", nil
            obj.name, obj.tags[1] = "other", "x"
            colors, obj = nil, nil -- luacheck: ignore 311 (dropped: their strings become garbage)
            -- the old strings are garbage now; new ones may take their memory
            collectgarbage()
            collectgarbage()
            local junk = {}
            for i = 1, 20000 do junk[i] = "evil_" .. ("e"):rep(60) .. (i % 7) end
            assert.equal(20000, #junk)
            assert.is_true(v:validate { c = "red_" .. long, o = { name = "n_" .. long, tags = { "t_" .. long } } })
            local ok, err = v:validate { c = "blue", o = { name = "other", tags = { "x" } } }
            assert.is_nil(ok)
            assert.equal(2, #err.errors)
            -- what an error shows is the validator's own copy: changing it changes nothing
            local allowed = err.errors[1].allowed or err.errors[2].allowed
            assert.same({ "red_" .. long, "green_" .. long }, allowed)
            allowed[1] = "blue"
            assert.is_nil((v:validate { c = "blue", o = { name = "n_" .. long, tags = { "t_" .. long } } }))
        end)
    end)
end)
