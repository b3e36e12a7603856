-- Issue 13: every provider's rules as data, applied. One spec per rule: a small schema, the
-- request body that goes out (decoded), and the lint finding for it.
local core = require "jsoncontract.core"
local jc = require "jsoncontract"
local providers = require "jsoncontract.providers"
local lint = require "jsoncontract.contract.lint"
local subset = require "jsoncontract.providers.schema_subset"
local evidence = require "jsoncontract.evidence"

local A = function(t) return setmetatable(t, core.array_mt) end
local MSGS = { { role = "user", content = "hi" } }

local function contract(schema)
    return { name = "c", version = "1", schema = schema, prompt = "p" }
end

-- The request for `schema`, its decoded body and the schema it carries (nil when none).
local SENT = {
    openai = function(b) return b.response_format and b.response_format.json_schema
        and b.response_format.json_schema.schema end,
    openai_responses = function(b) return b.text and b.text.format.schema end,
    anthropic = function(b) return b.output_config and b.output_config.format.schema end,
    gemini = function(b) return b.generationConfig.responseJsonSchema end,
    llamacpp = function(b) return b.response_format and b.response_format.json_schema
        and b.response_format.json_schema.schema end,
    ollama = function(b) return type(b.format) == "table" and b.format or nil end,
}
local function build(pname, schema, opts, msgs)
    local req = providers.get(pname).build_request(contract(schema), msgs or MSGS, opts or { model = "m" })
    local body = assert(core.decode(req.body))
    return req, body, SENT[pname](body)
end

-- The lint finding at `ptr` for `kw` (nil when none), and the provider's report.
local function finding(pname, schema, ptr, kw)
    local r = lint.lint(schema, pname)[1]
    for _, f in ipairs(r.findings) do
        if f.schema_pointer == ptr and f.keyword == kw then return f, r end
    end
    return nil, r
end

local function obj(props, required, extra)
    local s = { type = "object", properties = props, required = A(required or {}), additionalProperties = false }
    for k, v in pairs(extra or {}) do s[k] = v end
    return s
end

describe("jsoncontract.providers rules", function()
    describe("rules data", function()
        it("every row of every provider names its source and the date it was checked", function()
            local rows = 0
            local function visit(t, path)
                if type(t) ~= "table" then return end
                if t.why ~= nil or t.source ~= nil then
                    rows = rows + 1
                    assert.is_string(t.source, path)
                    assert.is_string(t.why, path)
                    assert.truthy(t.checked == "2026-12-01" or t.checked == "2026-12-04", path)
                    -- a source a user can open
                    assert.truthy(type(t.url) == "string" and t.url:match("^https://[%w%.%-]+/"), path)
                    return
                end
                for k, v in pairs(t) do
                    -- lists of rows (Anthropic's prefill rows by model) too
                    if (type(k) == "string" and k ~= "sources") or type(k) == "number" then
                        visit(v, path .. "." .. tostring(k))
                    end
                end
            end
            for _, name in ipairs({ "openai", "anthropic", "gemini", "llamacpp", "ollama" }) do
                local R = require("jsoncontract.providers.rules." .. name)
                assert.equal(name, R.provider)
                assert.equal("2026-12-01", R.checked)
                visit(R, name)
            end
            assert.truthy(rows > 100)
        end)

        it("says where the corpus lacked the primary document", function()
            local R = require "jsoncontract.providers.rules.openai"
            assert.truthy(R.native.limits.depth.source:find("not found in reference", 1, true))
            assert.truthy(R.native.ref_siblings.source:find("openai-python src/openai/lib/_pydantic.py", 1, true))
        end)
    end)

    describe("openai (strict mode)", function()
        it("inlines a $ref with sibling keywords (as openai-python does)", function()
            local s = obj({ a = { ["$ref"] = "#/$defs/A", description = "the a" } }, { "a" },
                { ["$defs"] = { A = { type = "string" } } })
            local req, body, sent = build("openai", s)
            assert.equal("native", req.mode)
            assert.is_true(body.response_format.json_schema.strict)
            assert.same({ type = "string", description = "the a" }, sent.properties.a)
            local f = finding("openai", s, "/properties/a", "$ref")
            assert.equal("rewritten", f.action)
            assert.truthy(f.source:find("_pydantic.py", 1, true))
        end)

        it("in a draft-07 schema, keywords next to $ref are left out (they are ignored there)", function()
            local s = obj({ a = { ["$ref"] = "#/definitions/A", minLength = 3, description = "d" } }, { "a" },
                { ["$schema"] = "http://json-schema.org/draft-07/schema#", definitions = { A = { type = "string" } } })
            local _, _, sent = build("openai", s)
            assert.same({ type = "string", description = "d" }, sent.properties.a)
            local f = finding("openai", s, "/properties/a/minLength", "minLength")
            assert.equal("rewritten", f.action)
            assert.truthy(f.reason:find("ignored in draft-07", 1, true))
        end)

        it("merges an allOf into one schema when that keeps its meaning", function()
            local s = obj({ o = { allOf = A { { type = "object", properties = { a = { type = "string" } },
                required = A { "a" } }, { properties = { b = { type = "integer" } }, required = A { "b" } } } } },
                { "o" })
            local req, _, sent = build("openai", s)
            assert.equal("native", req.mode)
            assert.same({ type = "object", properties = { a = { type = "string" }, b = { type = "integer" } },
                required = { "a", "b" }, additionalProperties = false }, sent.properties.o)
            assert.equal("rewritten", finding("openai", s, "/properties/o/allOf", "allOf").action)
        end)

        it("a node left without a type goes out with strict false, the cause named first", function()
            local s = obj({ x = { ["not"] = { type = "string" } } }, { "x" })
            local req, body = build("openai", s)
            assert.equal("native-nonstrict", req.mode)
            assert.is_false(body.response_format.json_schema.strict)
            assert.equal("strict", req.dropped[1].keyword)
            assert.truthy(req.dropped[1].reason:find("/properties/x no type left", 1, true))
            assert.same({ "native", "native-nonstrict", "/properties/x", "type" },
                { req.fallback.from, req.fallback.to, req.fallback.schema_pointer, req.fallback.keyword })
            local f, r = finding("openai", s, "/properties/x/not", "not")
            assert.equal("dropped", f.action)
            assert.is_true(r.fails)
        end)

        it("a node without type whose keywords name one type is sent with that type", function()
            local s = { properties = { a = { minLength = 1 }, n = { minimum = 0 } }, required = A { "a", "n" } }
            local req, _, sent = build("openai", s)
            assert.equal("native", req.mode)
            assert.equal("object", sent.type)
            assert.same({ type = "string", minLength = 1 }, sent.properties.a)
            assert.same({ type = "number", minimum = 0 }, sent.properties.n)
            assert.equal("narrowed", finding("openai", s, "/properties/a", "type").action)
            assert.equal("narrowed", finding("openai", s, "", "type").action)
        end)

        it("a root anyOf goes out in mode json", function()
            local s = { anyOf = A { obj({ a = { type = "string" } }, { "a" }), obj({ b = { type = "string" } }, { "b" }) } }
            local req, body = build("openai", s)
            assert.equal("json", req.mode)
            assert.same({ type = "json_object" }, body.response_format)
            assert.equal("anyOf", req.fallback.keyword)
            local _, r = finding("openai", s, "", "anyOf")
            assert.equal("json", r.mode)
        end)

        it("a root that is not an object goes out in mode prompt", function()
            local req, body = build("openai_responses", { type = "array", items = { type = "string" } })
            assert.equal("prompt", req.mode)
            assert.is_nil(body.text)
            assert.equal("fails", finding("openai", { type = "array" }, "", "type").action)
        end)

        describe("closing objects", function()
            -- an allOf that cannot be merged (properties/a in conflict): its parts define the members
            local ALLOF = '{"type":"object","allOf":[{"properties":{"a":{"type":"string","maxLength":3}},'
                .. '"required":["a"]},{"properties":{"a":{"type":"string","enum":["ab","x"]}}}]}'
            -- members only by propertyNames, minProperties and a schema for further properties
            local MAP = '{"type":"object","propertyNames":{"pattern":"^a"},"minProperties":1,'
                .. '"additionalProperties":{"type":"string"}}'

            it("plain properties and required: closed, narrowed, strict", function()
                local s = { type = "object", properties = { a = { type = "string" } }, required = A { "a" } }
                local req, body, sent = build("openai", s)
                assert.equal("native", req.mode)
                assert.is_true(body.response_format.json_schema.strict)
                assert.is_false(sent.additionalProperties)
                assert.equal("narrowed", finding("openai", s, "/additionalProperties", "additionalProperties").action)
                assert.equal("native", (build("anthropic", s)).mode)
            end)

            it("an allOf not merged: fails at its required, strict false with the object open", function()
                local s = assert(core.decode(ALLOF))
                local req, body, sent = build("openai", s)
                assert.equal("native-nonstrict", req.mode)
                assert.is_false(body.response_format.json_schema.strict)
                assert.is_nil(sent.additionalProperties)
                assert.same({ "/allOf/0/required", "required" }, { req.fallback.schema_pointer, req.fallback.keyword })
                local f = finding("openai", s, "/allOf/0/required", "required")
                assert.equal("fails", f.action)
                assert.truthy(f.reason:find("/allOf/0/required requires a", 1, true))
                assert.equal("fails", finding("openai", s, "/allOf/1/properties", "properties").action)
                assert.is_nil(finding("openai", s, "/additionalProperties", "additionalProperties"))
                local areq = build("anthropic", s)
                assert.equal("prompt", areq.mode)
                assert.equal("/allOf/0/required", areq.fallback.schema_pointer)
            end)

            it("propertyNames and minProperties: fails at minProperties, further properties shown", function()
                local s = assert(core.decode(MAP))
                local req, body, sent = build("openai", s)
                assert.equal("native-nonstrict", req.mode)
                assert.is_false(body.response_format.json_schema.strict)
                assert.same({ type = "string" }, sent.additionalProperties)
                assert.same({ "/minProperties", "minProperties" }, { req.fallback.schema_pointer, req.fallback.keyword })
                assert.truthy(req.fallback.reason:find("at least 1 property", 1, true))
                for _, kw in ipairs({ "minProperties", "propertyNames", "additionalProperties" }) do
                    assert.equal("fails", finding("openai", s, "/" .. kw, kw).action, kw)
                end
                assert.equal("prompt", (build("anthropic", s)).mode)
            end)

            it("a required name without an entry in properties fails (it was dropped, then closed out)", function()
                local s = { type = "object", properties = { a = { type = "string" } }, required = A { "a", "b" } }
                local req, _, sent = build("openai", s)
                assert.equal("native-nonstrict", req.mode)
                assert.same({ "a", "b" }, sent.required)
                local f = finding("openai", s, "/required", "required")
                assert.equal("fails", f.action)
                assert.truthy(f.reason:find("requires b, beyond the names in properties (a)", 1, true))
            end)

            it("anyOf branches with members the closed parent lacks fail; a union of whole objects does not", function()
                local function branch(k, name)
                    return obj({ kind = { const = k }, [name] = { type = "string" } }, { "kind", name })
                end
                local s = obj({ v = { type = "object", anyOf = A { branch("a", "x"), branch("b", "y") } } }, { "v" })
                assert.equal("native-nonstrict", (build("openai", s)).mode)
                assert.equal("fails", finding("openai", s, "/properties/v/anyOf/0/required", "required").action)
                -- a union of whole objects: each branch closed on its own names
                local t = obj({ v = { anyOf = A { branch("a", "x"), branch("b", "y") } } }, { "v" })
                local treq, _, tsent = build("openai", t)
                assert.equal("native", treq.mode)
                assert.is_false(tsent.properties.v.anyOf[1].additionalProperties)
            end)
        end)

        it("oneOf is sent as the weaker anyOf", function()
            local s = obj({ k = { oneOf = A { { type = "string" }, { type = "integer" } } } }, { "k" })
            local _, _, sent = build("openai", s)
            assert.same({ { type = "string" }, { type = "integer" } }, sent.properties.k.anyOf)
            assert.equal("weakened", finding("openai", s, "/properties/k/oneOf", "oneOf").action)
        end)

        it("enum values with a newline or NUL go out with strict false", function()
            local s = obj({ e = { type = "string", enum = A { "a\nb", "c" } } }, { "e" })
            local req = build("openai", s)
            assert.equal("native-nonstrict", req.mode)
            assert.equal("fails", finding("openai", s, "/properties/e/enum", "enum").action)
        end)

        it("anyOf objects that start with the same property: one starts with a property of its own", function()
            local function branch(tag, other, ordered)
                local props = { kind = { const = tag }, [other] = { type = "string" } }
                if ordered then props = jc.ordered(props, { "kind", other }) end
                return obj(props, { "kind", other })
            end
            local s = obj({ v = { anyOf = A { branch("a", "x"), branch("b", "y") } } }, { "v" })
            local req, _, sent = build("openai", s)
            assert.equal("native", req.mode)
            assert.truthy(req.body:find('"properties":{"x":{"type":"string"},"kind":', 1, true))
            assert.is_table(sent.properties.v.anyOf[2].properties.kind)
            assert.equal("rewritten", finding("openai", s, "/properties/v/anyOf/0/properties", "properties").action)
            -- the author's order is kept: then strict mode would reject it
            local t = obj({ v = { anyOf = A { branch("a", "x", true), branch("b", "y", true) } } }, { "v" })
            assert.equal("native-nonstrict", (build("openai", t)).mode)
            assert.equal("fails", finding("openai", t, "/properties/v/anyOf/0/properties", "properties").action)
        end)

        local function limit_case(name, schema, ptr, kw)
            it("counts the limit before sending: " .. name, function()
                local req = build("openai", schema)
                assert.equal("native-nonstrict", req.mode)
                local f = finding("openai", schema, ptr, kw)
                assert.equal("fails", f.action)
                assert.equal("https://platform.openai.com/docs/guides/structured-outputs#supported-schemas", f.source)
            end)
        end
        local values = A {}
        for i = 1, 1001 do values[i] = "v" .. i end
        limit_case("1,001 enum values", obj({ e = { type = "string", enum = values } }, { "e" }), "", "enum")
        local props, names = {}, A {}
        for i = 1, 5001 do props["p" .. i] = { type = "integer" }; names[i] = "p" .. i end
        limit_case("5,001 properties", obj(props, names), "", "properties")
        local deep = obj({ leaf = { type = "string" } }, { "leaf" })
        for _ = 1, 10 do deep = obj({ n = deep }, { "n" }) end
        limit_case("11 levels of nesting", deep, "", "properties")
        local long = A {}
        for i = 1, 251 do long[i] = string.format("%060d", i) end
        limit_case("251 enum strings of 60 characters", obj({ e = { type = "string", enum = long } }, { "e" }),
            "/properties/e/enum", "enum")
    end)

    describe("anthropic", function()
        it("a recursive schema goes out in mode prompt", function()
            local s = obj({ t = { ["$ref"] = "#/$defs/T" } }, { "t" },
                { ["$defs"] = { T = obj({ kids = { type = "array", items = { ["$ref"] = "#/$defs/T" } } }, { "kids" }) } })
            local req, body = build("anthropic", s)
            assert.equal("prompt", req.mode)
            assert.is_nil(body.output_config)
            assert.equal("/$defs/T/properties/kids/items", req.fallback.schema_pointer)
            assert.equal("fails", finding("anthropic", s, "/$defs/T/properties/kids/items", "$ref").action)
        end)

        it("more than 24 optional properties go out in mode prompt", function()
            local props = {}
            for i = 1, 25 do props["o" .. i] = { type = "string" } end
            local s = obj(props, {})
            local req = build("anthropic", s)
            assert.equal("prompt", req.mode)
            local f = finding("anthropic", s, "", "required")
            assert.truthy(f.reason:find("25 optional properties, more than 24", 1, true))
        end)

        it("more than 16 union-typed properties (type [x, null] counts) go out in mode prompt", function()
            local props, names = {}, A {}
            for i = 1, 17 do props["u" .. i] = { type = A { "string", "null" } }; names[i] = "u" .. i end
            local s = obj(props, names)
            assert.equal("prompt", (build("anthropic", s)).mode)
            assert.truthy(finding("anthropic", s, "", "anyOf").reason:find("17 properties with a union type", 1, true))
        end)

        it("drops a pattern with \\b or a large {n,m}, keeps a simple one", function()
            local s = obj({ a = { type = "string", pattern = "\\bx\\b" }, b = { type = "string", pattern = "^a{1,500}$" },
                c = { type = "string", pattern = "^[a-z]{2,8}$" } }, { "a", "b", "c" })
            local req, _, sent = build("anthropic", s)
            assert.equal("native", req.mode)
            assert.is_nil(sent.properties.a.pattern)
            assert.is_nil(sent.properties.b.pattern)
            assert.equal("^[a-z]{2,8}$", sent.properties.c.pattern)
            assert.truthy(finding("anthropic", s, "/properties/a/pattern", "pattern").reason:find("word boundary", 1, true))
            assert.truthy(finding("anthropic", s, "/properties/b/pattern", "pattern").reason:find("500 above 100", 1, true))
        end)

        it("drops an enum with non-primitive values", function()
            local s = obj({ e = { type = "array", items = { type = "integer" }, enum = A { A { 1, 2 }, A { 3 } } } },
                { "e" })
            local req, _, sent = build("anthropic", s)
            assert.equal("native", req.mode)
            assert.same({ type = "array", items = { type = "integer" } }, sent.properties.e)
            assert.equal("dropped", finding("anthropic", s, "/properties/e/enum", "enum").action)
        end)

        it("a node left without a type (the SDK's transform raises on it) goes out in mode prompt", function()
            local s = obj({ e = { enum = A { "a", { x = 1 } } } }, { "e" })
            local req = build("anthropic", s)
            assert.equal("prompt", req.mode)
            assert.equal("/properties/e", req.fallback.schema_pointer)
            assert.truthy(req.fallback.source:find("_transform.py", 1, true))
        end)

        it("an assistant prefill goes out in mode prompt on a model that takes one", function()
            local s = obj({ a = { type = "string" } }, { "a" })
            local req, body = build("anthropic", s, { model = "claude-sonnet-4-5" }, { { role = "user", content = "hi" },
                { role = "assistant", content = "{" } })
            assert.equal("prompt", req.mode)
            assert.is_nil(body.output_config)
            assert.equal("{", body.messages[2].content)
            assert.equal("messages", req.fallback.keyword)
            assert.equal("native", (build("anthropic", s)).mode)
        end)

        it("keeps minItems 0 or 1, drops others", function()
            local s = obj({ a = { type = "array", items = { type = "string" }, minItems = 1 },
                b = { type = "array", items = { type = "string" }, minItems = 2 } }, { "a", "b" })
            local _, _, sent = build("anthropic", s)
            assert.equal(1, sent.properties.a.minItems)
            assert.is_nil(sent.properties.b.minItems)
            assert.equal("dropped", finding("anthropic", s, "/properties/b/minItems", "minItems").action)
        end)
    end)

    describe("gemini (responseJsonSchema)", function()
        it("inlines a $ref with siblings and sends definitions as $defs, references rewritten", function()
            local s = obj({ a = { ["$ref"] = "#/definitions/A", description = "d" }, b = { ["$ref"] = "#/definitions/A" } },
                { "a", "b" }, { definitions = { A = { type = "string" } } })
            local req, _, sent = build("gemini", s)
            assert.equal("native", req.mode)
            assert.same({ type = "string", description = "d" }, sent.properties.a)
            assert.equal("#/$defs/A", sent.properties.b["$ref"])
            assert.same({ A = { type = "string" } }, sent["$defs"])
            assert.is_nil(sent.definitions)
            assert.equal("rewritten", finding("gemini", s, "/definitions", "definitions").action)
            assert.equal("rewritten", finding("gemini", s, "/properties/a", "$ref").action)
        end)

        it("a reference into nested definitions (not sent) is resolved from the reference as written", function()
            local s = obj({ b = { ["$ref"] = "#/definitions/A/definitions/B" } }, { "b" },
                { definitions = { A = { type = "object", definitions = { B = { type = "integer" } } } } })
            local req, _, sent = build("gemini", s)
            assert.equal("native", req.mode)
            assert.same({ type = "integer" }, sent.properties.b)
            assert.equal("rewritten", finding("gemini", s, "/properties/b", "$ref").action)
        end)

        it("a cycle through required properties goes out in mode json; through optional ones it stays", function()
            local function tree(req)
                return obj({ t = { ["$ref"] = "#/$defs/T" } }, { "t" },
                    { ["$defs"] = { T = obj({ kid = { ["$ref"] = "#/$defs/T" } }, req) } })
            end
            local req, body = build("gemini", tree({ "kid" }))
            assert.equal("json", req.mode)
            assert.equal("application/json", body.generationConfig.responseMimeType)
            assert.is_nil(body.generationConfig.responseJsonSchema)
            assert.equal("fails", finding("gemini", tree({ "kid" }), "/$defs/T/properties/kid", "$ref").action)
            assert.equal("native", (build("gemini", tree({}))).mode)
        end)

        it("takes null out of an enum as an anyOf branch, sends const as an enum, drops boolean enums", function()
            local s = obj({ e = { enum = A { "a", core.null } }, c = { const = "k" }, b = { enum = A { true } } },
                { "e", "c", "b" })
            local _, _, sent = build("gemini", s)
            assert.same({ { enum = { "a" } }, { type = "null" } }, sent.properties.e.anyOf)
            assert.same({ enum = { "k" } }, sent.properties.c)
            assert.is_nil(sent.properties.b.enum)
            assert.equal("rewritten", finding("gemini", s, "/properties/e/enum", "enum").action)
            assert.equal("dropped", finding("gemini", s, "/properties/b/enum", "enum").action)
        end)

        it("sets propertyOrdering from the author's order", function()
            local s = obj(jc.ordered({ answer = { type = "string" }, reasoning = { type = "string" } },
                { "reasoning", "answer" }), { "reasoning", "answer" })
            local req, _, sent = build("gemini", s)
            assert.same({ "reasoning", "answer" }, sent.propertyOrdering)
            assert.truthy(req.body:find('"reasoning":{"type":"string"},"answer"', 1, true))
        end)
    end)

    describe("llama.cpp grammar", function()
        it("writes \\d, \\w, \\s as classes, inside and outside brackets", function()
            local s = obj({ a = { type = "string", pattern = "^\\d{3}[\\d-]\\w\\s$" } }, { "a" })
            local _, _, sent = build("llamacpp", s)
            assert.equal("^[0-9]{3}[0-9-][0-9A-Za-z_][" .. " \\t\\n\\r\\x0B\\x0C\\u00A0\\u1680\\u2000-\\u200A"
                .. "\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF]$", sent.properties.a.pattern)
            assert.equal("rewritten", finding("llamacpp", s, "/properties/a/pattern", "pattern").action)
            -- escaped punctuation the grammar does not know: bare outside a class, \xHH inside
            assert.equal("^a/[\\x2D.]$", subset.grammar_pattern("^a\\/[\\-.]$"))
        end)

        it("the rewritten pattern means the same to the local validator", function()
            local p = assert(subset.grammar_pattern("^\\d+-\\w\\s[\\d.]$"))
            local v1 = jc.compile({ type = "string", pattern = "^\\d+-\\w\\s[\\d.]$" })
            local v2 = jc.compile({ type = "string", pattern = p })
            for _, x in ipairs({ "12-a 1", "1-_\t.", "x-a 1", "12-a1.", "12-\195\169 1" }) do
                assert.equal(v1:validate(x) == true, v2:validate(x) == true, x)
            end
        end)

        it("drops what a grammar cannot say: \\b, a backreference, an unanchored pattern, lookahead", function()
            for _, p in ipairs({ "^\\bx$", "^(a)\\1$", "[a-z]+", "^(?=a)a$" }) do
                local s = obj({ a = { type = "string", pattern = p } }, { "a" })
                local _, _, sent = build("llamacpp", s)
                assert.is_nil(sent.properties.a.pattern, p)
                assert.equal("dropped", finding("llamacpp", s, "/properties/a/pattern", "pattern").action, p)
            end
        end)

        it("leaves out items: false next to prefixItems", function()
            local s = obj({ t = { type = "array", prefixItems = A { { type = "string" } }, items = false } }, { "t" })
            local _, _, sent = build("llamacpp", s)
            assert.same({ type = "array", prefixItems = { { type = "string" } } }, sent.properties.t)
            assert.equal("rewritten", finding("llamacpp", s, "/properties/t/items", "items").action)
        end)

        it("merges an allOf of non-object parts instead of letting it collapse", function()
            local s = obj({ a = { allOf = A { { type = "string" }, { minLength = 2 } } } }, { "a" })
            local _, _, sent = build("llamacpp", s)
            assert.same({ type = "string", minLength = 2 }, sent.properties.a)
        end)

        it("moves properties next to anyOf into each branch", function()
            local s = { type = "object", properties = { k = { type = "string" } }, required = A { "k" },
                anyOf = A { { properties = { a = { type = "integer" } }, required = A { "a" } },
                    { properties = { b = { type = "integer" } }, required = A { "b" } } } }
            local _, _, sent = build("llamacpp", s)
            assert.is_nil(sent.properties)
            assert.same({ "a", "k" }, sent.anyOf[1].required)
            assert.same({ type = "string" }, sent.anyOf[2].properties.k)
            assert.equal("rewritten", finding("llamacpp", s, "/anyOf", "anyOf").action)
        end)

        it("inlines a $ref with siblings; reports minLength next to a pattern and bounds on numbers", function()
            local s = obj({ a = { ["$ref"] = "#/$defs/A", maxLength = 4 }, p = { type = "string", pattern = "^x+$",
                minLength = 2 }, n = { type = "number", minimum = 0 } }, { "a", "p", "n" },
                { ["$defs"] = { A = { type = "string" } } })
            local _, _, sent = build("llamacpp", s)
            assert.same({ type = "string", maxLength = 4 }, sent.properties.a)
            assert.is_nil(sent.properties.p.minLength)
            assert.is_nil(sent.properties.n.minimum)
            assert.equal("dropped", finding("llamacpp", s, "/properties/p/minLength", "minLength").action)
            assert.equal("dropped", finding("llamacpp", s, "/properties/n/minimum", "minimum").action)
        end)
    end)

    describe("ollama", function()
        it("a cloud model goes out in mode prompt (the cloud ignores format)", function()
            local s = obj({ a = { type = "string" } }, { "a" })
            local req, body = build("ollama", s, { model = "gpt-oss:120b-cloud" })
            assert.equal("prompt", req.mode)
            assert.is_nil(body.format)
            assert.truthy(req.fallback.source:find("docs.ollama.com", 1, true))
            assert.equal("native", (build("ollama", s, { model = "llama3.2" })).mode)
        end)

        it("applies the grammar rules to format", function()
            local s = obj({ a = { type = "string", pattern = "^\\d$" } }, { "a" })
            local _, _, sent = build("ollama", s)
            assert.equal("^[0-9]$", sent.properties.a.pattern)
        end)
    end)

    -- The remaining rows, as data: { provider, schema, pointer, keyword, action, check(sent, req) }.
    describe("more rows", function()
        local names = A {}
        for i = 1, 2000 do names[i] = string.rep("n", 55) .. string.format("%05d", i) end
        local CASES = {
            { "openai: more than 120,000 characters of names and enum values fail", "openai",
                obj({ e = { type = "string", enum = names } }, { "e" }), "", "properties", "fails",
                function(_, req) assert.equal("native-nonstrict", req.mode) end },
            { "openai: default is left out", "openai", obj({ a = { type = "string", default = "x" } }, { "a" }),
                "/properties/a/default", "default", "dropped",
                function(sent) assert.is_nil(sent.properties.a.default) end },
            { "anthropic: a $ref with siblings is inlined", "anthropic",
                obj({ a = { ["$ref"] = "#/$defs/A", title = "t" } }, { "a" }, { ["$defs"] = { A = { type = "string" } } }),
                "/properties/a", "$ref", "rewritten",
                function(sent) assert.same({ type = "string", title = "t" }, sent.properties.a) end },
            { "anthropic: an allOf that cannot be merged is left out", "anthropic",
                obj({ a = { type = "string", allOf = A { { type = "integer" } } } }, { "a" }),
                "/properties/a/allOf", "allOf", "dropped",
                function(sent) assert.same({ type = "string" }, sent.properties.a) end },
            { "gemini: an allOf is merged", "gemini", obj({ a = { allOf = A { { type = "string" }, { format = "date" } } } },
                { "a" }), "/properties/a/allOf", "allOf", "rewritten",
                function(sent) assert.same({ type = "string", format = "date" }, sent.properties.a) end },
            { "gemini: oneOf is sent, enforced as anyOf", "gemini",
                obj({ a = { oneOf = A { { type = "string" }, { type = "integer" } } } }, { "a" }),
                "/properties/a/oneOf", "oneOf", "weakened",
                function(sent) assert.equal(2, #sent.properties.a.oneOf) end },
            { "gemini: an unknown format is left out", "gemini", obj({ a = { type = "string", format = "email" } }, { "a" }),
                "/properties/a/format", "format", "dropped",
                function(sent) assert.is_nil(sent.properties.a.format) end },
            { "llamacpp: oneOf is enforced as anyOf", "llamacpp",
                obj({ a = { oneOf = A { { type = "string" }, { type = "integer" } } } }, { "a" }),
                "/properties/a/oneOf", "oneOf", "weakened",
                function(sent) assert.equal(2, #sent.properties.a.oneOf) end },
            { "llamacpp: minLength without type string is left out", "llamacpp",
                obj({ a = { minLength = 2 } }, { "a" }), "/properties/a/minLength", "minLength", "dropped",
                function(sent) assert.is_nil(sent.properties.a.minLength) end },
            { "llamacpp: uniqueItems is left out", "llamacpp",
                obj({ a = { type = "array", uniqueItems = true } }, { "a" }), "/properties/a/uniqueItems",
                "uniqueItems", "dropped", function(sent) assert.is_nil(sent.properties.a.uniqueItems) end },
            { "llamacpp: the email format is left out", "llamacpp", obj({ a = { type = "string", format = "email" } },
                { "a" }), "/properties/a/format", "format", "dropped",
                function(sent) assert.is_nil(sent.properties.a.format) end },
            { "llamacpp: an object without additionalProperties is closed by the grammar", "llamacpp",
                { type = "object", properties = { a = { type = "string" } } }, "", "additionalProperties", "narrowed",
                function(sent) assert.is_nil(sent.additionalProperties) end },
            { "ollama: keywords next to oneOf move into its branches", "ollama",
                { type = "object", oneOf = A { { properties = { a = { type = "string" } } },
                    { properties = { b = { type = "string" } } } } }, "/oneOf", "oneOf", "rewritten",
                function(sent) assert.equal("object", sent.oneOf[1].type) end },
        }
        for _, c in ipairs(CASES) do
            it(c[1], function()
                local req, _, sent = build(c[2], c[3])
                local f = finding(c[2], c[3], c[4], c[5])
                assert.is_table(f, c[4] .. " " .. c[5])
                assert.equal(c[6], f.action)
                assert.is_string(f.source)
                c[7](sent, req)
            end)
        end
    end)

    describe("every provider", function()
        it("a $ref whose target is not sent is resolved, never left dangling", function()
            local s = obj({ a = { ["$ref"] = "#/definitions/A" } }, { "a" }, { definitions = { A = { type = "string" } } })
            for _, name in ipairs({ "openai", "anthropic", "gemini", "llamacpp", "ollama" }) do
                local req, _, sent = build(name, s)
                assert.equal("native", req.mode, name)
                assert.truthy(subset.resolve(sent, sent.properties.a["$ref"]), name)
            end
        end)

        it("a $ref into a keyword that is not sent is resolved before the keyword is dropped", function()
            local s = obj({ a = { ["$ref"] = "#/patternProperties/x" } }, { "a" },
                { patternProperties = { x = { type = "string" } } })
            local req, _, sent = build("openai", s)
            assert.equal("native", req.mode)
            assert.same({ type = "string" }, sent.properties.a)
            assert.equal("rewritten", finding("openai", s, "/properties/a", "$ref").action)
            assert.equal("dropped", finding("openai", s, "/patternProperties", "patternProperties").action)
        end)

        it("the author's property order reaches every provider's schema and the prompt", function()
            local props = jc.ordered({ answer = { type = "string" }, reasoning = { type = "string" } },
                { "reasoning", "answer" })
            local s = obj(props, { "reasoning", "answer" })
            for _, name in ipairs({ "openai", "openai_responses", "anthropic", "gemini", "llamacpp", "ollama" }) do
                local req = build(name, s)
                local r, a = req.body:find('"reasoning":', 1, true), req.body:find('"answer":', 1, true)
                assert.truthy(r < a, name)
            end
            local c = jc.contract { name = "o", version = "1", instructions = "x", schema = s }
            local prompt = c:prompt()
            assert.truthy(prompt:find("- reasoning:", 1, true) < prompt:find("- answer:", 1, true))
        end)

        it("a JSON-text schema keeps its order (decode keep_order)", function()
            local c = jc.contract { name = "o", version = "1", instructions = "x", schema =
                '{"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string"}},'
                .. '"required":["reasoning","answer"],"additionalProperties":false}' }
            local req = providers.get("openai").build_request({ name = "o", schema = c.schema, prompt = c:prompt() },
                MSGS, { model = "m" })
            assert.truthy(req.body:find('"reasoning":', 1, true) < req.body:find('"answer":', 1, true))
        end)

        it("records the weaker mode and why in the evidence", function()
            local s = obj({ t = { ["$ref"] = "#/$defs/T" } }, { "t" },
                { ["$defs"] = { T = obj({ kid = { ["$ref"] = "#/$defs/T" } }, {}) } })
            local c = jc.contract { name = "rec", version = "1", instructions = "x", schema = s }
            local log = evidence.memory()
            local out = jc.ask(c, "hi", { provider = "anthropic", model = "m", base_url = "http://127.0.0.1:9",
                evidence = log, sleep = function() end, transport = function()
                    return { status = 200, headers = { ["content-type"] = "application/json" }, body = core.encode {
                        id = "msg_1", type = "message", role = "assistant", model = "m", stop_reason = "end_turn",
                        content = A { { type = "text", text = '{"t":{}}' } },
                        usage = { input_tokens = 1, output_tokens = 1 } } }
                end })
            assert.equal("accepted", out.status)
            local rec = assert(core.decode(log.lines[1]))
            assert.equal("prompt", rec.mode)
            assert.equal("native", rec.mode_fallback.from)
            assert.equal("prompt", rec.mode_fallback.to)
            assert.truthy(rec.mode_fallback.reason:find("recursive", 1, true))
        end)
    end)

    -- Checked again against the providers' SDK and server sources: the requests that went wrong
    -- and the constraints lost without a word.
    describe("round three", function()
        -- `value` is accepted by the contract's schema and by the schema sent (core validator).
        local function both_accept(schema, sent, value, what)
            assert.is_true(jc.compile(schema):validate(value), "contract: " .. what)
            assert.is_table(sent, what)
            local ok, err = jc.compile(sent):validate(value)
            assert.is_true(ok, what .. ": " .. tostring(err and err.message or err))
        end

        it("a recursive root ($ref \"#\") never reaches llama.cpp or Ollama: sent as a $defs copy", function()
            local s = obj({ name = { type = "string" }, kids = { type = "array", items = { ["$ref"] = "#" } } },
                { "name", "kids" })
            local valid = { name = "a", kids = A { { name = "b", kids = A {} } } }
            for _, name in ipairs({ "llamacpp", "ollama" }) do
                local req, _, sent = build(name, s)
                assert.equal("native", req.mode, name)
                assert.is_nil(req.body:find('"$ref":"#"', 1, true), name)
                assert.equal("#/$defs/root", sent.properties.kids.items["$ref"], name)
                assert.equal("#/$defs/root", sent["$defs"].root.properties.kids.items["$ref"], name)
                both_accept(s, sent, valid, name)
                assert.is_nil(jc.compile(sent):validate({ name = "a", kids = A { { name = 1, kids = A {} } } }), name)
                assert.equal("rewritten", finding(name, s, "/properties/kids/items", "$ref").action, name)
            end
            -- a name already taken gets a suffix
            local taken = obj({ k = { ["$ref"] = "#" }, r = { ["$ref"] = "#/$defs/root" } }, {},
                { ["$defs"] = { root = { type = "string" } } })
            local _, _, sent = build("llamacpp", taken)
            assert.equal("#/$defs/root_1", sent.properties.k["$ref"])
            assert.equal("string", sent["$defs"].root.type)
        end)

        it("a reference the converter cannot resolve goes out in mode json, and lint exits 1", function()
            -- "#a" names an $anchor: the local validator resolves it, the converter does not
            local s = obj({ a = { ["$ref"] = "#a" } }, { "a" }, { ["$defs"] = { A = { ["$anchor"] = "a", type = "string" } } })
            assert.is_true(jc.compile(s):validate({ a = "x" }))
            local req, body = build("llamacpp", s)
            assert.equal("json", req.mode)
            assert.same({ type = "json_object" }, body.response_format)
            assert.equal("fails", finding("llamacpp", s, "/properties/a", "$ref").action)
            local path = os.tmpname() .. ".json"
            finally(function() os.remove(path) end)
            local f = assert(io.open(path, "wb"))
            f:write(core.encode(s))
            f:close()
            local buf = {}
            local out = { write = function(self, ...) for _, x in ipairs({ ... }) do buf[#buf + 1] = x end return self end }
            assert.equal(1, require("jsoncontract.cli").main({ "lint", "--contract", path, "--provider", "llamacpp" },
                { stdout = out, stderr = out }))
            assert.truthy(table.concat(buf):find("would fail in mode native, sent in mode json", 1, true))
        end)

        it("prefixItems with items: false: the schema sent to OpenAI and Anthropic admits the contract's answer",
            function()
            local s = obj({ point = { type = "array", prefixItems = A { { type = "number" }, { type = "number" } },
                items = false } }, { "point" })
            local valid = { point = A { 1.5, 2 } }
            for _, name in ipairs({ "openai", "openai_responses", "anthropic" }) do
                local req, _, sent = build(name, s)
                assert.equal("native", req.mode, name)
                both_accept(s, sent, valid, name)
                assert.is_nil(sent.properties.point.items, name)
            end
            -- OpenAI takes maxItems: items: false is sent as the length it allows
            local _, _, sent = build("openai", s)
            assert.equal(2, sent.properties.point.maxItems)
            assert.is_nil(jc.compile(sent):validate({ point = A { 1, 2, 3 } }))
            assert.equal("rewritten", finding("openai", s, "/properties/point/items", "items").action)
            -- Anthropic does not: items is left out and lint says so
            local f = finding("anthropic", s, "/properties/point/items", "items")
            assert.equal("dropped", f.action)
            assert.truthy(f.reason:find("empty array only", 1, true))
            assert.equal("dropped", finding("anthropic", s, "/properties/point/prefixItems", "prefixItems").action)
        end)

        it("a copy that rejects one of the contract's examples is not sent", function()
            local res = { schema = { type = "array", maxItems = 0 }, findings = A {}, fails = A {} }
            subset.check_instances(res, subset.instances({ type = "array" }, { examples = { { input = "x",
                output = A { 1 } } } }))
            assert.equal(1, #res.fails)
            assert.truthy(res.fails[1].reason:find("example 1 of the contract", 1, true))
            -- an example the contract itself rejects is not used
            assert.equal(0, #subset.instances({ type = "string" }, { examples = { { input = "x", output = 1 } } }))
            -- closing objects narrows on purpose: an extra member in an example does not count
            local ok = { schema = { type = "object", properties = {}, additionalProperties = false },
                findings = A {}, fails = A {} }
            subset.check_instances(ok, { { value = { extra = 1 }, what = "x" } })
            assert.equal(0, #ok.fails)
        end)

        describe("anthropic: no assistant prefill to the models that reject it", function()
            local s = obj({ a = { type = "string" } }, { "a" })
            local PREFILLED = { { role = "user", content = "hi" }, { role = "assistant", content = "{" } }
            for _, model in ipairs({ "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7",
                "claude-opus-4-7-20260416", "us.anthropic.claude-opus-4-6-v1", "claude-future-9" }) do
                it(model, function()
                    for _, mode in ipairs({ "native", "prompt", "tool" }) do
                        local req, body = build("anthropic", s, { model = model, mode = mode }, PREFILLED)
                        assert.equal(1, #body.messages, mode)
                        assert.equal("user", body.messages[#body.messages].role, mode)
                        assert.equal(mode, req.mode)
                        assert.equal("messages", req.dropped[1].keyword)
                        assert.truthy(req.dropped[1].reason:find("left out for model " .. model, 1, true))
                    end
                    local req, body = build("anthropic", s, { model = model }, PREFILLED)
                    assert.is_table(body.output_config, "structured outputs still used")
                    assert.is_nil(req.fallback)
                    assert.has_error(function()
                        providers.get("anthropic").build_request(contract(s), { { role = "assistant", content = "{" } },
                            { model = model })
                    end)
                end)
            end
            it("the rows name their model and a source a user can open", function()
                local a = providers.get("anthropic")
                for _, m in ipairs({ "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7" }) do
                    local r = a.prefill_row(m)
                    assert.is_false(r.accepts)
                    assert.truthy(r.url:find("platform.claude.com", 1, true), m)
                end
                for _, m in ipairs({ "claude-sonnet-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-1-20250805",
                    "claude-sonnet-4-20250514", "claude-3-5-haiku-20241022" }) do
                    assert.is_true(a.prefill_row(m).accepts, m)
                end
            end)
        end)

        describe("llama.cpp and Ollama: what the converter reads instead is rewritten or listed", function()
            local function sent_prop(pname, prop)
                local s = obj({ x = prop }, { "x" })
                local req, _, sent = build(pname, s)
                return sent and sent.properties.x, s, req
            end
            for _, pname in ipairs({ "llamacpp", "ollama" }) do
                it(pname .. ": exclusiveMinimum beside minimum and fractional bounds become one exact pair", function()
                    local p, s = sent_prop(pname, { type = "integer", minimum = 0, exclusiveMinimum = 5,
                        maximum = 9.5 })
                    assert.same({ type = "integer", minimum = 6, maximum = 9 }, p)
                    assert.equal("rewritten", finding(pname, s, "/properties/x/exclusiveMinimum", "exclusiveMinimum").action)
                    assert.equal("rewritten", finding(pname, s, "/properties/x/maximum", "maximum").action)
                    local v1, v2 = jc.compile(s.properties.x), jc.compile(p)
                    for n = -3, 12 do assert.equal(v1:validate(n) == true, v2:validate(n) == true, n) end
                    local q = sent_prop(pname, { type = "integer", exclusiveMinimum = -2.5, exclusiveMaximum = 3 })
                    assert.same({ type = "integer", minimum = -2, maximum = 2 }, q)
                    -- no integer between the bounds: the contract admits nothing there; lint says it fails
                    local _, e, req = sent_prop(pname, { type = "integer", minimum = 2.2, maximum = 2.8 })
                    assert.equal("json", req.mode)
                    assert.equal("fails", finding(pname, e, "/properties/x", "minimum").action)
                end)

                it(pname .. ": pattern beside enum: only the values the pattern accepts are sent", function()
                    local p, s = sent_prop(pname, { type = "string", enum = A { "a1", "b", "c2" }, pattern = "^[a-z][0-9]$" })
                    assert.same({ "a1", "c2" }, p.enum)
                    assert.equal("rewritten", finding(pname, s, "/properties/x/enum", "enum").action)
                    -- const "b" fails the pattern: the contract admits no value there; not sent
                    local c, cs, req = sent_prop(pname, { const = "b", pattern = "^[a-z][0-9]$" })
                    assert.is_nil(c)
                    assert.equal("json", req.mode)
                    assert.equal("fails", finding(pname, cs, "/properties/x/const", "const").action)
                end)

                it(pname .. ": keywords beside an enum that cannot be checked on their own are listed", function()
                    local s = obj({ x = { type = "object", enum = A { { a = "x" } },
                        properties = { a = { ["$ref"] = "#/$defs/A" } } } }, { "x" },
                        { ["$defs"] = { A = { type = "string" } } })
                    local req, _, sent = build(pname, s)
                    assert.equal("native", req.mode)
                    assert.same({ { a = "x" } }, sent.properties.x.enum)
                    local f = finding(pname, s, "/properties/x/enum", "enum")
                    assert.equal("weakened", f.action)
                    assert.truthy(f.reason:find("properties", 1, true))
                    local r = lint.lint(s, pname)[1]
                    assert.is_false(r.fails)
                    local listed = false
                    for _, x in ipairs(r.not_enforced) do
                        if x.schema_pointer == "/properties/x/enum" then listed = true end
                    end
                    assert.is_true(listed)
                end)

                it(pname .. ": (?: is sent as a plain group with the same meaning", function()
                    local p = sent_prop(pname, { type = "string", pattern = "^(?:ab)+c$" })
                    assert.equal("^(ab)+c$", p.pattern)
                    local v1, v2 = jc.compile({ type = "string", pattern = "^(?:ab)+c$" }), jc.compile(p)
                    for _, x in ipairs({ "abc", "ababc", "ac", "abab", "(?:ab)c" }) do
                        assert.equal(v1:validate(x) == true, v2:validate(x) == true, x)
                    end
                end)
            end

            it("ollama: a grammar known to pass its buffer (max(32 KiB, 4 x schema)) goes out in mode json", function()
                local leaf = {}
                for i = 1, 20 do leaf[string.format("field_number_%08d", i)] = { type = "string" } end
                local node = { type = "object", properties = {} }
                local top = node
                for d = 1, 30 do
                    for k, v in pairs(leaf) do node.properties[k] = v end
                    local child = { type = "object", properties = {} }
                    node.properties["child_level_" .. d] = child
                    node = child
                end
                local req = build("ollama", top)
                assert.equal("json", req.mode)
                local f = finding("ollama", top, "", "format")
                assert.equal("fails", f.action)
                assert.truthy(f.reason:find("more than the %d+ kept"))
                -- the same schema is fine for llama-server, which has no such buffer
                assert.equal("native", (build("llamacpp", top)).mode)
                -- and a plain schema is under it
                assert.is_nil(finding("ollama", obj({ a = { type = "string" } }, { "a" }), "", "format"))
                -- past 32 KiB only: older builds cut it, newer keep 4 x the schema: listed, still sent
                local mid = { type = "object", properties = {} }
                for i = 1, 2000 do mid.properties[string.format("flat_field_%09d", i)] = { type = "string" } end
                local floor = subset.grammar_size_floor(mid)
                assert.truthy(floor > 32768 and floor < 4 * #core.encode(mid), floor)
                assert.equal("native", (build("ollama", mid)).mode)
                assert.equal("weakened", finding("ollama", mid, "", "format").action)
            end)
        end)

        describe("what providers now offer", function()
            it("anthropic mode tool: strict tool use, the answer read from the tool call", function()
                local s = obj({ a = { type = "string" } }, { "a" })
                local req, body = build("anthropic", s, { model = "claude-sonnet-4-5", mode = "tool" })
                assert.equal("tool", req.mode)
                assert.is_nil(body.output_config)
                assert.equal(1, #body.tools)
                assert.is_true(body.tools[1].strict)
                assert.same(req.schema_sent, body.tools[1].input_schema)
                assert.is_false(body.tools[1].input_schema.additionalProperties)
                assert.same({ type = "tool", name = body.tools[1].name }, body.tool_choice)
                local reply = assert(providers.get("anthropic").read_response(200, {}, core.encode {
                    id = "m1", type = "message", role = "assistant", model = "x", stop_reason = "tool_use",
                    content = A { { type = "tool_use", id = "t", name = body.tools[1].name, input = { a = "z" } } },
                    usage = { input_tokens = 1, output_tokens = 1 } }))
                assert.equal('{"a":"z"}', reply.text)
                -- through jc.ask: accepted, and the evidence names the mode
                local c = jc.contract { name = "t", version = "1", instructions = "x", schema = s }
                local log = evidence.memory()
                local out = jc.ask(c, "hi", { provider = "anthropic", model = "claude-opus-4-6", mode = "tool",
                    base_url = "http://127.0.0.1:9", evidence = log, sleep = function() end, transport = function()
                        return { status = 200, headers = { ["content-type"] = "application/json" }, body = core.encode {
                            id = "m", type = "message", role = "assistant", model = "m", stop_reason = "tool_use",
                            content = A { { type = "tool_use", id = "x", name = "t", input = { a = "z" } } },
                            usage = { input_tokens = 1, output_tokens = 1 } } }
                    end })
                assert.equal("accepted", out.status)
                assert.equal("z", out.value.a)
                assert.equal("tool", assert(core.decode(log.lines[1])).mode)
                -- an input schema must be an object: otherwise mode prompt, saying why
                local r2, b2 = build("anthropic", { type = "array", items = { type = "string" } },
                    { model = "claude-sonnet-4-5", mode = "tool" })
                assert.equal("prompt", r2.mode)
                assert.is_nil(b2.tools)
                assert.truthy(r2.fallback.url:find("strict-tool-use", 1, true))
            end)

            it("openai strict mode sends minLength/maxLength (secondary source, said in the row)", function()
                local s = obj({ a = { type = "string", minLength = 2, maxLength = 5 } }, { "a" })
                local req, _, sent = build("openai", s)
                assert.equal("native", req.mode)
                assert.same({ type = "string", minLength = 2, maxLength = 5 }, sent.properties.a)
                local row = providers.get("openai").rules.native.keywords.minLength
                assert.truthy(row.source:find("^secondary"))
                assert.truthy(row.url:find("pydantic%-ai/issues/7315"))
                -- only OpenAI's own API is reported to take them: an OpenAI-compatible server does not get them
                for _, name in ipairs({ "openai", "openai_responses" }) do
                    local r2, _, s2 = build(name, s, { model = "m", base_url = "http://127.0.0.1:8000" })
                    assert.equal("native", r2.mode, name)
                    assert.same({ type = "string" }, s2.properties.a, name)
                    assert.truthy(r2.dropped[1].url:find("pull/7400", 1, true), name)
                    local _, _, s3 = build(name, s, { model = "m", base_url = "https://api.openai.com/v1" })
                    assert.equal(2, s3.properties.a.minLength, name)
                end
            end)

            it("gemini 2.5 and later keep the key order without propertyOrdering; older models get it", function()
                local s = obj(jc.ordered({ answer = { type = "string" }, reasoning = { type = "string" } },
                    { "reasoning", "answer" }), { "reasoning", "answer" })
                for _, m in ipairs({ "gemini-2.5-flash", "gemini-3-pro-preview", "gemini-3.5-flash" }) do
                    local req, _, sent = build("gemini", s, { model = m })
                    assert.is_nil(sent.propertyOrdering, m)
                    assert.truthy(req.body:find('"reasoning":{"type":"string"},"answer"', 1, true), m)
                end
                for _, m in ipairs({ "gemini-2.0-flash", "gemini-flash-latest" }) do
                    local _, _, sent = build("gemini", s, { model = m })
                    assert.same({ "reasoning", "answer" }, sent.propertyOrdering, m)
                end
            end)
        end)

        it("lint --json gives sources a user can open, not maintainer notes", function()
            local s = obj({ a = { type = "integer", minimum = 0, exclusiveMinimum = 1 }, b = { type = "string",
                format = "email" }, t = { type = "array", prefixItems = A { { type = "number" } }, items = false } }, { "a" })
            local path = os.tmpname() .. ".json"
            finally(function() os.remove(path) end)
            local f = assert(io.open(path, "wb"))
            f:write(core.encode(s))
            f:close()
            local buf = {}
            local out = { write = function(self, ...) for _, x in ipairs({ ... }) do buf[#buf + 1] = x end return self end }
            assert.equal(1, require("jsoncontract.cli").main({ "lint", "--contract", path, "--json" },
                { stdout = out, stderr = out }))
            local text = table.concat(buf)
            assert.is_nil(text:find("artifactize", 1, true))
            assert.is_nil(text:find("not found in reference", 1, true))
            local report = assert(core.decode(text))
            local n = 0
            for _, r in ipairs(report) do
                for _, fd in ipairs(r.findings) do
                    if fd.source ~= nil then
                        n = n + 1
                        assert.truthy(fd.source:match("^https://[%w%.%-]+/"), fd.source)
                    end
                end
            end
            assert.truthy(n > 5)
        end)
    end)

    describe("jsoncontract lint --provider", function()
        it("exits 1 and says so when the native request would fail", function()
            local path = os.tmpname() .. ".json"
            finally(function() os.remove(path) end)
            local f = assert(io.open(path, "wb"))
            f:write('{"type":"array","items":{"type":"string"}}')
            f:close()
            local buf = {}
            local out = { write = function(self, ...) for _, x in ipairs({ ... }) do buf[#buf + 1] = x end return self end }
            local status = require("jsoncontract.cli").main({ "lint", "--contract", path, "--provider", "openai" },
                { stdout = out, stderr = out })
            assert.equal(1, status)
            assert.truthy(table.concat(buf):find("would fail in mode native, sent in mode prompt: / the root is not an "
                .. "object", 1, true))
        end)
    end)
end)
