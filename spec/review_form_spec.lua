-- The review desk's building blocks without a server: HTML escaping, the form generated from a
-- contract's schema (and the value read back from it), and JSON Pointers marked in model text.
local jc = require "jsoncontract"
local html = require "jsoncontract.review.html"
local form = require "jsoncontract.review.form"
local spans = require "jsoncontract.review.spans"
local util = require "support.util"

local ticket = dofile("examples/support_ticket.lua")

describe("jsoncontract.review.html", function()
    describe("esc()", function()
        for _, case in ipairs {
            { "markup", "<script>alert('x')</script>", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" },
            { "an attribute break-out", '" onmouseover="x', "&quot; onmouseover=&quot;x" },
            { "an entity stays text", "&lt;", "&amp;lt;" },
            { "a control character is made visible", "a\27[31mb", "a\239\191\189[31mb" },
            { "tab and newline stay", "a\tb\nc", "a\tb\nc" },
            { "nil is empty", nil, "" },
            { "a number", 12, "12" },
        } do
            it("escapes " .. case[1], function()
                assert.equal(case[3], html.esc(case[2]))
            end)
        end
    end)

    it("query() encodes values and leaves out empty ones", function()
        assert.equal("?a=x%20y&b=%2F%26", html.query { a = "x y", b = "/&", c = "" })
        assert.equal("", html.query {})
    end)
end)

describe("jsoncontract.review.form", function()
    local function fields_of(out)
        local names = {}
        for name in out:gmatch('name="([^"]+)"') do names[#names + 1] = name end
        return names
    end

    describe("render()", function()
        it("gives each ticket field its control: enum choices, yes/no, text with an explicit null", function()
            local out = form.render(ticket.schema, nil, {})
            assert.same({ "v/intent", "v/order_id", "n/order_id", "v/urgent", "v/urgent", "v/summary" }, fields_of(out))
            assert.truthy(out:find('<select id="[^"]+" name="v/intent"'))
            for _, v in ipairs { "delivery", "return", "payment", "other" } do
                assert.truthy(out:find('<option value="&quot;' .. v .. '&quot;">' .. v .. "</option>", 1, true), v)
            end
            assert.truthy(out:find('name="n/order_id" value="1"> unknown (null)', 1, true))
            assert.truthy(out:find('type="radio" id="[^"]+" name="v/urgent" value="true"> yes'))
            -- the summary allows 200 characters: a text area
            assert.truthy(out:find('<textarea id="[^"]+" name="v/summary"'))
        end)

        it("shows a string's pattern and length beside it", function()
            local out = form.render(ticket.schema, nil, {})
            assert.truthy(out:find("matching the regular expression ^[0-9]{4,6}$", 1, true))
            assert.truthy(out:find("at least 1 character, at most 200 characters", 1, true))
        end)

        it("pre-fills a value, and keeps a value the contract forbids visible as not allowed", function()
            local v = jc.decode('{"intent":"Lieferung","order_id":null,"urgent":"ja","summary":"<b>Late</b>"}')
            local out = form.render(ticket.schema, v, {})
            assert.truthy(out:find('<option value="&quot;Lieferung&quot;" selected>Lieferung (not allowed)</option>',
                1, true))
            assert.truthy(out:find('name="n/order_id" value="1" checked>', 1, true))
            assert.truthy(out:find('value="&quot;ja&quot;" checked> ja (not allowed)', 1, true))
            assert.truthy(out:find(">&lt;b&gt;Late&lt;/b&gt;</textarea>", 1, true))
            assert.falsy(out:find("<b>Late", 1, true))
        end)

        it("puts each error beside its field; a missing required field beside that field", function()
            local _, err = ticket.contract:check('{"intent":"x","urgent":true}')
            local out, loose = form.render(ticket.schema, nil, err.errors)
            assert.same({}, loose)
            for _, p in ipairs { "/intent", "/order_id", "/summary" } do
                assert.truthy(out:find('<div class="field bad" data-pointer="' .. p .. '">', 1, true), p)
            end
            assert.truthy(out:find('<div class="field" data-pointer="/urgent">', 1, true))
            assert.truthy(out:find("missing required field /order_id", 1, true))
        end)

        it("routes a missing property by the error item's property, not by the message's wording", function()
            local schema = { type = "object", required = { "who" }, properties = {
                who = { type = "object", required = { "a/b" }, properties = { ["a/b"] = { type = "string" } } } } }
            local out, loose = form.render(schema, nil,
                { { pointer = "/who", keyword = "required", property = "a/b", message = "worded any way" } })
            assert.same({}, loose)
            assert.truthy(out:find('<div class="field bad" data-pointer="/who/a~1b">', 1, true))
            -- without `property` the error stays with the object, whatever the message says
            out = form.render(schema, nil,
                { { pointer = "/who", keyword = "required", message = "missing required field /who/a~1b" } })
            assert.falsy(out:find('<div class="field bad" data-pointer="/who/a~1b">', 1, true))
        end)

        it("returns the errors no field holds", function()
            local _, loose = form.render(ticket.schema, nil, { { pointer = "/extra", message = "not allowed" } })
            assert.equal(1, #loose)
            assert.equal("/extra", loose[1].pointer)
        end)

        it("nests objects as fieldsets, offers optional fields a leave-out box, edits the rest as JSON", function()
            local schema = { type = "object", required = { "who" }, properties = {
                who = { type = "object", required = { "name" }, properties = {
                    name = { type = "string", maxLength = 40 }, age = { type = { "integer", "null" } } } },
                tags = { type = "array", items = { enum = { "a", "b" } } },
                lines = { type = "array", items = { type = "string" } },
                any = { anyOf = { { type = "string" }, { type = "number" } } },
            } }
            local out = form.render(schema, nil, {})
            assert.truthy(out:find('<fieldset data-pointer="/who"><legend>who</legend>', 1, true))
            assert.same({ "v/who/name", "o/who/age", "v/who/age", "n/who/age", "o/any", "v/any", "o/lines",
                "v/lines", "o/tags", "v/tags", "v/tags" }, fields_of(out))
            assert.truthy(out:find('class="json"', 1, true))
        end)
    end)

    describe("read()", function()
        local function read(args, schema)
            return form.read(schema or ticket.schema, args)
        end
        for _, case in ipairs {
            { "a whole ticket", { ["v/intent"] = '"delivery"', ["v/order_id"] = "1042", ["v/urgent"] = "true",
                ["v/summary"] = "Late." },
              '{"intent":"delivery","order_id":"1042","summary":"Late.","urgent":true}' },
            { "unknown (null) wins over the text", { ["v/intent"] = '"other"', ["v/order_id"] = "12",
                ["n/order_id"] = "1", ["v/urgent"] = "false", ["v/summary"] = "x" },
              '{"intent":"other","order_id":null,"summary":"x","urgent":false}' },
            { "an unchosen enum and an unanswered yes/no are left out", { ["v/intent"] = "", ["v/order_id"] = "1042",
                ["v/summary"] = "x" }, '{"order_id":"1042","summary":"x"}' },
            { "a value outside the enum is kept as typed", { ["v/intent"] = '"refund"' }, '{"intent":"refund"}' },
            { "CR LF from a text area becomes LF", { ["v/summary"] = "a\r\nb" }, '{"summary":"a\\nb"}' },
        } do
            it("reads " .. case[1], function()
                local v, problems = read(case[2])
                assert.same({}, problems)
                assert.is_true(util.same_json(jc.decode(case[3]), v), jc.encode(v))
            end)
        end

        it("reads numbers as numbers and anything else as the text typed", function()
            local schema = { type = "object", properties = { n = { type = "integer" }, m = { type = "number" } } }
            local v = read({ ["v/n"] = " 42 ", ["v/m"] = "4x" }, schema)
            assert.equal(42, v.n)
            assert.equal("4x", v.m)
        end)

        it("reads checkboxes and lines as arrays", function()
            local schema = { type = "object", properties = { tags = { type = "array", items = { enum = { "a", "b" } } },
                lines = { type = "array", items = { type = "string" } } } }
            local v = read({ ["v/tags"] = { '"a"', '"b"' }, ["v/lines"] = "x\r\n\r\ny\n" }, schema)
            assert.is_true(util.same_json(jc.decode('{"tags":["a","b"],"lines":["x","y"]}'), v), jc.encode(v))
        end)

        it("names JSON text that does not parse as a form problem at its pointer", function()
            local schema = { type = "object", properties = { any = { anyOf = { { type = "string" } } } } }
            local v, problems = read({ ["v/any"] = "{nope" }, schema)
            assert.same({}, v)
            assert.equal(1, #problems)
            assert.same({ "/any", "form" }, { problems[1].pointer, problems[1].keyword })
        end)

        it("round-trips what it rendered, through the contract", function()
            local value = jc.decode('{"intent":"payment","order_id":null,"urgent":false,"summary":"Card declined."}')
            local out = form.render(ticket.schema, value, {})
            local args = {}
            for name, v in out:gmatch('name="([^"]+)" value="([^"]*)" checked') do args[name] = v end
            for name in out:gmatch('name="(v/intent)"') do args[name] = '"payment"' end
            args["v/summary"] = out:match('name="v/summary"[^>]*>([^<]*)</textarea>')
            local back = read(args)
            assert.truthy(ticket.contract:check(jc.encode(back)))
            assert.is_true(util.same_json(value, back), jc.encode(back))
        end)
    end)
end)

describe("jsoncontract.review.spans", function()
    it("finds every value's bytes by JSON Pointer, past text before the JSON", function()
        local text = 'Sure! {"a": [1, {"b~/c": "x"}], "d": null}'
        local s = spans.scan(text)
        local function at(p) return text:sub(s[p][1], s[p][2]) end
        assert.equal('{"a": [1, {"b~/c": "x"}], "d": null}', at(""))
        assert.equal("1", at("/a/0"))
        assert.equal('"x"', at("/a/1/b~0~1c"))
        assert.equal("null", at("/d"))
    end)

    it("keeps what it found before a cut", function()
        local s = spans.scan('{"intent": "payment", "urgent": fals')
        assert.truthy(s["/intent"])
        assert.is_nil(s[""])
    end)

    it("marks errors at their values, a missing one at its parent, and escapes the rest", function()
        local out = spans.mark('{"a":"<x>","b":{"c":1}}', { "/a", "/b/zz" })
        assert.equal('{&quot;a&quot;:<mark title="/a" data-pointer="/a">&quot;&lt;x&gt;&quot;</mark>,'
            .. '&quot;b&quot;:<mark title="/b" data-pointer="/b">{&quot;c&quot;:1}</mark>}', out)
    end)

    it("nests marks of nested values and marks a format error's offset", function()
        local out = spans.mark('{"a":{"b":1}} x', { "/a", "/a/b" }, 14)
        assert.equal('{&quot;a&quot;:<mark title="/a" data-pointer="/a">{&quot;b&quot;:<mark title="/a/b" '
            .. 'data-pointer="/a/b">1</mark>}</mark>} <mark class="at" title="format error here">x</mark>', out)
    end)

    it("never marks the root as a whole", function()
        local out = spans.mark("[1]", { "" })
        assert.equal("[1]", out)
    end)
end)
