-- Contracts: the example's cases through contract:check, rules, adapters, the prompt.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local util = require "support.util"

local ticket = dofile("examples/support_ticket.lua")
-- what its rules read (the shipped orders table, in memory), as a job opens it
local CTX = assert(ticket.context {})

local errs = util.errs

describe("jsoncontract.contract", function()
    describe("check() on the seed answers", function()
        local S = "a sentence."
        local cases = {
            { "a valid answer", '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"' .. S .. '"}', nil },
            { "wrong-language intent and 'ja' for a boolean",
              '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"' .. S .. '"}',
              "schema", { { "/intent", "enum" }, { "/urgent", "type" } },
              { '/intent "Lieferung" is not one of "delivery", "return", "payment", "other"',
                "/urgent is string, expected boolean" } },
            { "a missing field and an extra one",
              '{"intent":"return","urgent":false,"summary":"' .. S .. '","mood":"ruhig"}',
              "schema", { { "", "required" }, { "/mood", "additionalProperties" } },
              { "missing required field /order_id", "extra field /mood is not allowed" } },
            { "prose before a fenced block", 'Sure! Here is the data:\n```json\n{"intent":"delivery"}\n```', "format" },
            { "an unknown intent and a number for a string",
              '{"intent":"refund","order_id":1042,"urgent":false,"summary":"' .. S .. '"}',
              "schema", { { "/intent", "enum" }, { "/order_id", "type" } },
              { '/intent "refund" is not one of "delivery", "return", "payment", "other"',
                "/order_id is number, expected string or null" } },
        }
        for _, c in ipairs(cases) do
            it(c[1], function()
                local v, err = ticket.contract:check(c[2], { context = CTX })
                if not c[3] then
                    assert.is_table(v)
                    assert.equal("delivery", v.intent)
                    return
                end
                assert.is_nil(v)
                assert.equal(c[3], err.category)
                if c[4] then assert.same(c[4], errs(err)) end
                if c[5] then
                    for i, m in ipairs(c[5]) do assert.equal(m, err.errors[i].message) end
                end
            end)
        end
    end)

    describe("check() and null", function()
        it("accepts null for a missing order id and keeps it as jsoncontract.null", function()
            local v = assert(ticket.contract:check('{"intent":"other","order_id":null,"urgent":false,"summary":"Hi."}'))
            assert.equal(jc.null, v.order_id)
        end)
        it("rejects an invented empty order id by the pattern", function()
            local v, err = ticket.contract:check('{"intent":"other","order_id":"","urgent":false,"summary":"Hi."}')
            assert.is_nil(v)
            assert.same({ { "/order_id", "pattern" } }, errs(err))
        end)
        it("rejects a blank summary", function()
            local v, err = ticket.contract:check('{"intent":"other","order_id":null,"urgent":false,"summary":"   "}')
            assert.is_nil(v)
            assert.same({ { "/summary", "pattern" } }, errs(err))
        end)
    end)

    describe("rules", function()
        local orders = { exists = function(_, id) return id == "1042" end }
        it("pass when the order exists", function()
            local v = ticket.contract:check('{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x"}',
                { context = { orders = orders } })
            assert.equal("1042", v.order_id)
        end)
        it("fail with a pointer when the order does not exist, and say not to retry", function()
            local v, err = ticket.contract:check('{"intent":"delivery","order_id":"9999","urgent":true,"summary":"x"}',
                { context = { orders = orders } })
            assert.is_nil(v)
            assert.equal("rules", err.category)
            assert.equal("rule_failed", err.kind)
            assert.is_false(err.retry)
            assert.same({ { "/order_id", "rule:order_exists" } }, errs(err))
            assert.equal("order 9999 does not exist", err.errors[1].message)
        end)
        it("report a rule that raises as rule_error, not a crash", function()
            local c = jc.contract { name = "t", version = "1", schema = { type = "object" }, instructions = "x",
                rules = { function() error("boom") end } }
            local v, err = c:check("{}")
            assert.is_nil(v)
            assert.equal("rule_error", err.kind)
        end)
    end)

    describe("rule verdicts", function()
        local function verdict(fn)
            local c = jc.contract { name = "t", version = "1", schema = { type = "object" }, instructions = "x",
                rules = { { name = "r", check = fn } } }
            return c:check("{}")
        end
        local pass = {
            { "nothing", function() end },
            { "true", function() return true end },
            { "an empty list", function() return {} end },
        }
        for _, c in ipairs(pass) do
            it("passes on " .. c[1], function() assert.same({}, (verdict(c[2]))) end)
        end
        local fail = {
            { "false", function() return false end, "rule r failed" },
            { "a message", function() return "no" end, "no" },
            { "Lua's nil, message", function() return nil, "bad" end, "bad" },
            { "one error", function() return { pointer = "/a", message = "m" } end, "m" },
            { "a list", function() return { "m1", { message = "m2" } } end, "m1" },
        }
        for _, c in ipairs(fail) do
            it("fails on " .. c[1], function()
                local v, err = verdict(c[2])
                assert.is_nil(v)
                assert.equal("rule_failed", err.kind)
                assert.equal(c[3], err.errors[1].message)
            end)
        end
        local odd = {
            { "a number", function() return 5 end },
            { "a list of numbers", function() return { 5 } end },
            { "a list of booleans", function() return { true } end },
            { "a table message", function() return { message = {} } end },
            { "a table of unknown shape", function() return { x = "bad" } end },
        }
        for _, c in ipairs(odd) do
            it("fails closed as rule_error on " .. c[1], function()
                local v, err = verdict(c[2])
                assert.is_nil(v)
                assert.equal("rule_error", err.kind)
                assert.is_false(err.retry)
            end)
        end
        it("fails closed as rule_error when a rule yields", function()
            local v, err = verdict(function() coroutine.yield("surprise") end)
            assert.is_nil(v)
            assert.equal("rule_error", err.kind)
            assert.truthy(err.message:find("yielded", 1, true))
        end)
    end)

    describe("adapters", function()
        local fenced = '\n\n```json\n{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x"}\n```'
        it("reject a fenced reply strictly by default", function()
            local v, err = ticket.contract:check(fenced)
            assert.is_nil(v)
            assert.equal("format", err.category)
        end)
        it("accept it with unwrap-one-json-fence and record the adapter", function()
            local v, report = ticket.contract:check(fenced, { adapters = { "unwrap-one-json-fence" }, context = CTX })
            assert.equal("delivery", v.intent)
            assert.same({ "unwrap-one-json-fence" }, report.adapters)
        end)
        it("reject text before the fence even with the adapter", function()
            local v, err = ticket.contract:check("Sure!\n" .. fenced, { adapters = { "unwrap-one-json-fence" } })
            assert.is_nil(v)
            assert.equal("adapter_rejected", err.kind)
        end)
        it("reject two fenced blocks", function()
            local two = "```json\n{}\n```\n```json\n{}\n```"
            local v, err = ticket.contract:check(two, { adapters = { "unwrap-one-json-fence" } })
            assert.is_nil(v)
            assert.equal("adapter_rejected", err.kind)
        end)
        it("raise on opts.adapters given as one name instead of a list", function()
            assert.has_error(function() ticket.contract:check("{}", { adapters = "unwrap-one-json-fence" }) end,
                "check: opts.adapters must be a list of adapter names, got string")
        end)
    end)

    describe("check_json()", function()
        local orders = { exists = function(_, id) return id == "1042" end }
        local ctx = { context = { orders = orders } }
        local FENCE = { adapters = { "unwrap-one-json-fence" } }
        local order = jc.contract { name = "order", version = "1", instructions = "x", schema = {
            type = "object", required = { "id", "total" }, additionalProperties = false,
            properties = { id = { type = "integer", minimum = 1 }, total = { type = "number" } } } }

        -- { name, contract, text, opts }: check_json must agree with check on every one
        local cases = {
            { "an accepted ticket (rules run)", ticket.contract,
              '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x"}', ctx },
            { "a schema rejection", ticket.contract,
              '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"x"}', ctx },
            { "a format rejection", ticket.contract, '{"intent":"delivery",', ctx },
            { "a rules rejection", ticket.contract,
              '{"intent":"delivery","order_id":"9999","urgent":true,"summary":"x"}', ctx },
            { "a contract's own words for an error", ticket.contract_4digits,
              '{"intent":"delivery","order_id":"10420","urgent":true,"summary":"x"}', ctx },
            { "a fence without the adapter", order, '```json\n{"id":1,"total":2}\n```' },
            { "a fence with the adapter", order, '```json\n{"id":1,"total":2}\n```', FENCE },
            { "text before a fence", order, 'Sure:\n```json\n{"id":1,"total":2}\n```', FENCE },
            { "a contract without rules", order, '{"id":0,"total":"x"}' },
        }
        for _, c in ipairs(cases) do
            it("gives check's verdict and error: " .. c[1], function()
                local value, vreport = c[2]:check(c[3], c[4])
                local json, jreport = c[2]:check_json(c[3], c[4])
                assert.same(vreport, jreport)
                if value == nil then
                    assert.is_nil(json)
                else
                    assert.is_string(json)
                    assert.same(value, jc.decode(json))
                end
            end)
        end

        it("answers with the accepted text, integers beyond 2^53 exact", function()
            local text = '{"id":9007199254740993,"total":12345678901234567890.5}'
            local json, report = order:check_json(text)
            assert.equal(text, json)
            assert.same({}, report.adapters)
            assert.equal(core.array_mt, getmetatable(report.adapters))
        end)

        it("answers a success without adapters with one read-only report, allocating none", function()
            local _, r1 = order:check_json('{"id":1,"total":2}')
            local _, r2 = order:check('{"id":2,"total":3}')
            assert.equal(r1, r2)
            assert.same({ adapters = {} }, r1)
            assert.equal(core.array_mt, getmetatable(r1.adapters))
            assert.has_error(function() r1.note = "x" end, "the report of a check is read only (field note)")
            assert.is_nil(rawget(r1, "note"))
            -- an applied adapter, and a failure, get their own lists
            local _, r3 = order:check('```json\n{"id":1,"total":2}\n```', FENCE)
            assert.same({ "unwrap-one-json-fence" }, r3.adapters)
            local _, err = order:check('{"id":"x"}')
            assert.same({}, err.adapters)
            assert.are_not.equal(r1.adapters, err.adapters)
            assert.same({}, r1.adapters)
        end)

        it("answers with the JSON inside an unwrapped fence, without the whitespace around it", function()
            local json, report = order:check_json('\n```json\n  {"id":1, "total":2.50}\n```\n', FENCE)
            assert.equal('{"id":1, "total":2.50}', json)
            assert.same({ "unwrap-one-json-fence" }, report.adapters)
        end)

        it("runs the rules on the value and still answers with the text", function()
            local seen
            local c = jc.contract { name = "r", version = "1", instructions = "x",
                schema = { type = "object" },
                rules = { function(v) seen = v.n end, function(v) if v.n > 2 then return "too big" end end } }
            assert.equal('{"n":2}', c:check_json('{"n":2}'))
            assert.equal(2, seen)
            local json, err = c:check_json('{"n":3}')
            assert.is_nil(json)
            assert.equal("rules", err.category)
            assert.equal("rule_failed", err.kind)
        end)

        it("raises on misuse as check does, naming check_json", function()
            assert.has_error(function() order:check_json(5) end, "check_json: text must be a string, got number")
            assert.has_error(function() order:check_json("{}", 5) end, "check_json: opts must be a table, got number")
            assert.has_error(function() order:check_json("{}", { adapters = "unwrap-one-json-fence" }) end,
                "check_json: opts.adapters must be a list of adapter names, got string")
        end)
    end)

    describe("prompt()", function()
        it("is rendered from the schema: fields, types, allowed values, version", function()
            local p = ticket.contract:prompt()
            assert.truthy(p:find("Contract: support_ticket, version 1.0.0.", 1, true))
            assert.truthy(p:find('- intent: string, one of "delivery", "return", "payment", "other"', 1, true))
            assert.truthy(p:find("- order_id: string, matching the regular expression ^[0-9]{4,6}$, or null", 1, true))
            assert.truthy(p:find("- urgent: boolean", 1, true))
            assert.truthy(p:find("- no other fields", 1, true))
            -- fields in the order of `required`
            assert.truthy(p:find("- intent", 1, true) < p:find("- order_id", 1, true))
            assert.truthy(p:find("- urgent", 1, true) < p:find("- summary", 1, true))
        end)
    end)

    describe("feedback to the model", function()
        it("names a rule's JSON Pointer with its words (a schema item names its place itself)", function()
            local feedback = require "jsoncontract.feedback"
            local c = jc.contract { name = "t", version = "1", instructions = "x",
                schema = { type = "object", properties = { n = { type = "array" } } },
                rules = { { name = "even", check = function()
                    return { pointer = "/n/0", message = "must be even" }
                end } } }
            local _, err = c:check('{"n":[3]}')
            assert.equal("rules", err.category)
            assert.truthy(feedback.for_model(err):find("/n/0: must be even", 1, true), feedback.for_model(err))
            local _, serr = c:check('{"n":3}')
            local text = feedback.for_model(serr)
            assert.truthy(text:find("/n is number, expected array", 1, true), text)
            assert.falsy(text:find("/n: /n", 1, true), text)
        end)
    end)

    describe("feedback counts", function()
        it("counts the errors a rule left out, not the one item that stands for them", function()
            local feedback = require "jsoncontract.feedback"
            local items = {}
            for i = 1, 25 do items[i] = { pointer = "/a/" .. i, message = "bad " .. i } end
            items[26] = { pointer = "", message = "and 950 more errors from rule r", more = 950 }
            local text = feedback.join(items)
            assert.truthy(text:find("and 956 more errors$"), text)   -- 5 shown nowhere + 1 + 950
        end)
    end)

    describe("messages (the contract's own words)", function()
        it("name the missing member of a required error, and the place of any other", function()
            local c = jc.contract { name = "t", version = "1", instructions = "x",
                schema = { type = "object", required = { "a", "b" },
                    properties = { n = { type = "integer" }, c = { type = "object", required = { "d" } } } },
                messages = { ["/required"] = "is a required field", ["/properties/n/type"] = "must be a whole number",
                    ["/properties/c/required"] = "is needed" } }
            local _, err = c:check('{"n":1.5,"c":{}}')
            local got = {}
            for i, e in ipairs(err.errors) do got[i] = e.message end
            table.sort(got)
            assert.same({ "/a is a required field", "/b is a required field", "/c/d is needed",
                "/n 1.5 must be a whole number" }, got)
        end)
    end)

    describe("new() keeps its own schema", function()
        it("sends, prompts and hashes what it checks when the author changes the table afterwards", function()
            local schema = { type = "object", required = { "intent" }, additionalProperties = false,
                properties = { intent = { type = "string", enum = { "a", "b" } } } }
            local c1 = jc.contract { name = "t", version = "1.0.0", instructions = "x", schema = schema }
            local hash, prompt = c1.schema_hash, c1:prompt()
            schema.properties.intent.enum[3] = "c"      -- the author derives v2 from the same table
            local c2 = jc.contract { name = "t", version = "2.0.0", instructions = "x", schema = schema }
            assert.is_nil((c1:check('{"intent":"c"}')))
            local req = require("jsoncontract.providers.openai").build_request(c1,
                { { role = "user", content = "x" } }, { model = "m" })
            assert.truthy(req.body:find('"enum":["a","b"]', 1, true), req.body)
            assert.same({ hash, prompt }, { c1.schema_hash, c1:prompt() })
            assert.are_not.equal(c1.schema_hash, c2.schema_hash)
            assert.equal(1, #require("jsoncontract.contract.diff").diff(c1.schema, c2.schema))
        end)
    end)

    describe("new() misuse", function()
        local base = { name = "a", version = "1", instructions = "x", schema = {} }
        local function with(k, v)
            local d = {}
            for kk, vv in pairs(base) do d[kk] = vv end
            d[k] = v
            return function() jc.contract(d) end
        end
        it("raises on schema text that is not JSON, and on a schema that is not one, naming it", function()
            local ok, err = pcall(with("schema", "{bad"))
            assert.is_false(ok)
            assert.truthy(tostring(err):find("contract schema is not JSON: unexpected character 'b' at line 1, column 2",
                1, true), err)
            ok, err = pcall(with("schema", '{"type":3}'))
            assert.is_false(ok)
            assert.truthy(tostring(err):find("contract '" .. base.name .. "': invalid schema at /type", 1, true), err)
        end)
        it("raises on adapters given as a string", function()
            assert.has_error(with("adapters", "unwrap-one-json-fence"), "contract field 'adapters' must be a list (table)")
        end)
        it("raises on an unknown adapter name", function()
            assert.has_error(with("adapters", { "cut-braces" }))
        end)
        it("raises on rules given as a function", function()
            assert.has_error(with("rules", print), "contract field 'rules' must be a list (table)")
        end)
        it("raises on a rule name that is not a string", function()
            assert.has_error(with("rules", { { name = 5, check = print } }), "contract rule 1: name must be a non-empty string")
        end)
        it("raises on examples that are not {input, output}", function()
            assert.has_error(with("examples", { "abc" }), "contract example 1 must be {input = string, output = value}")
        end)
        it("describes $ref properties by their target and anyOf/oneOf by their branches", function()
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = [[{"type":"object",
                "properties":{"kind":{"anyOf":[{"type":"string","enum":["x"]},{"type":"integer"}]},
                "pick":{"oneOf":[{"$ref":"#/$defs/r"},{"type":"null"}]},
                "ref":{"$ref":"#/$defs/r"},"list":{"type":"array","items":{"$ref":"#/$defs/r"}}},
                "required":["kind","pick","ref","list"],
                "$defs":{"r":{"type":"object","properties":{"z":{"type":"string"}},"required":["z"],
                "additionalProperties":false}}}]] }
            local p = c:prompt()
            for _, want in ipairs { '- kind: one of: string, one of "x" | integer\n',
                "- pick: one of: object, with fields z | null\n",
                "- ref: object\n  - z: string\n  - no other fields\n",
                "- list: array\n  each item is an object with:\n    - z: string\n" } do
                assert.truthy(p:find(want, 1, true), want .. " in:\n" .. p)
            end
            assert.is_nil(p:find("any JSON value", 1, true), p)
        end)
        it("stays bounded on $ref cycles and wide or deep anyOfs", function()
            local c = jc.contract { name = "t", version = "1", instructions = "x", schema = [[{"type":"object",
                "properties":{"tree":{"$ref":"#/$defs/node"}},
                "$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}},
                "alt":{"anyOf":[{"anyOf":[{"anyOf":[{"anyOf":[{"type":"string"}]}]}]},{"$ref":"#/$defs/node"}]}}}}}]] }
            local p = c:prompt()
            assert.truthy(#p < 20000, #p)
            -- (a contract refuses a cycle that consumes nothing; describe alone still stops)
            local loop = { ["$ref"] = "#/$defs/a", ["$defs"] = { a = { ["$ref"] = "#/$defs/b" },
                b = { ["$ref"] = "#/$defs/a" } } }
            assert.equal("any JSON value", require("jsoncontract.contract").describe(loop))
            assert.truthy(p:find("one of several forms", 1, true), p)
            local wide = {}
            for i = 1, 50 do wide[i] = { const = ("v"):rep(40) .. i } end
            local line = jc.contract { name = "t", version = "1", instructions = "x",
                schema = { type = "object", properties = { w = { anyOf = wide } } } }:prompt():match("\n%- w: ([^\n]*)")
            assert.truthy(#line <= 620, #line)
            assert.truthy(line:find("more", 1, true), line)
        end)
        it("raises on an example answer the schema refuses, naming the example and why", function()
            local def = { name = "t", version = "1", instructions = "x",
                schema = { type = "object", properties = { intent = { type = "string", enum = { "delivery" } } },
                    required = { "intent" }, additionalProperties = false },
                examples = { { input = "a", output = { intent = "delivery" } },
                    { input = "where is my parcel", output = { intent = "Lieferung", extra = 1 } } } }
            local ok, err = pcall(function() return jc.contract(def) end)
            assert.is_false(ok)
            assert.truthy(err:find("contract 't': example 2 answer does not match the schema: "
                .. '/intent "Lieferung" is not one of "delivery"; extra field /extra is not allowed', 1, true), err)
            def.examples[2] = nil
            assert.truthy(jc.contract(def):prompt():find('Example 1 answer: {"intent":"delivery"}', 1, true))
        end)
        it("raises when check's opts is not a table", function()
            local c = jc.contract(base)
            assert.has_error(function() c:check("{}", 5) end, "check: opts must be a table, got number")
        end)
        it("raises on an unknown field", function()
            assert.has_error(function() jc.contract { name = "a", version = "1", instructions = "x", schema = {}, foo = 1 } end,
                "unknown contract field 'foo'")
        end)
        it("raises on a missing version", function()
            assert.has_error(function() jc.contract { name = "a", instructions = "x", schema = {} } end,
                "contract field 'version' must be a non-empty string")
        end)
    end)
end)

describe("the prompt of a list of scalars", function()
    it("says what each item must be, as it does for a list of objects", function()
        local c = jc.contract { name = "t", version = "1", instructions = "Tag it.", schema = {
            type = "object", required = { "tags" }, properties = {
                tags = { type = "array", minItems = 1, items = { type = "string", enum = { "a", "b" } } },
                scores = { type = "array", items = { type = "number", minimum = 0 } },
            } } }
        local p = c:prompt()
        assert.truthy(p:find("- tags: array, at least 1 item\n  each item: string, one of \"a\", \"b\"\n", 1, true), p)
        assert.truthy(p:find("- scores: array (optional)\n  each item: number, minimum 0\n", 1, true), p)
    end)
end)
