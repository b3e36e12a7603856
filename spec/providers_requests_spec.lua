-- build_request of every provider: the native schema field, the mode recorded in the request,
-- and a sentinel key that reaches the auth header and nothing else (URL, body, error messages
-- of a 401 that echoes it back).
local core = require "jsoncontract.core"
local providers = require "jsoncontract.providers"

local SENTINEL = "sk-jcSENTINEL-7f3a9c0d1e2b4a5968776655"
local GOOGLE_SENTINEL = "AIzaSyJC-SENTINEL-0123456789abcdefghijk"

local SCHEMA = {
    type = "object",
    properties = { label = { type = "string", enum = { "bug", "billing" } }, n = { type = "integer" } },
    required = { "label", "n" },
    additionalProperties = false,
}
local CONTRACT = { name = "ticket v1", version = "1", prompt = "Return JSON.", schema = SCHEMA }
local MSGS = { { role = "user", content = "hello" } }

-- provider -> { auth header name, header value prefix, path of the native schema in the body,
--   url suffix, key }
local CASES = {
    openai = { "authorization", "Bearer ", { "response_format", "json_schema", "schema" },
        "/v1/chat/completions", SENTINEL },
    openai_responses = { "authorization", "Bearer ", { "text", "format", "schema" }, "/v1/responses", SENTINEL },
    anthropic = { "x-api-key", "", { "output_config", "format", "schema" }, "/v1/messages", SENTINEL },
    gemini = { "x-goog-api-key", "", { "generationConfig", "responseJsonSchema" },
        "/v1beta/models/gemini-2.5-flash:generateContent", GOOGLE_SENTINEL },
    ollama = { "authorization", "Bearer ", { "format" }, "/api/chat", SENTINEL },
    llamacpp = { "authorization", "Bearer ", { "response_format", "json_schema", "schema" },
        "/v1/chat/completions", SENTINEL },
}

local function dig(t, path)
    for _, k in ipairs(path) do t = t and t[k] end
    return t
end

describe("build_request() of every provider", function()
    for _, name in ipairs(providers.names) do
        local p = providers.get(name)
        local c = CASES[name]
        describe(name, function()
            it("sends the schema in its native field and records mode native", function()
                local req = p.build_request(CONTRACT, MSGS, { model = "gemini-2.5-flash", api_key = c[5] })
                assert.equal("POST", req.method)
                assert.equal("native", req.mode)
                assert.equal(c[4], req.url:match("^https?://[^/]+(/.*)$"))
                local body = assert(core.decode(req.body))
                local sent = dig(body, c[3])
                assert.equal("object", sent.type)
                assert.same({ "label", "n" }, sent.required)
                assert.same(req.schema_sent.required, sent.required)
                assert.equal("table", type(req.dropped))
            end)

            it("puts the key only in its auth header", function()
                local req = p.build_request(CONTRACT, MSGS, { model = "gemini-2.5-flash", api_key = c[5],
                    base_url = "http://127.0.0.1:9" })
                assert.equal(c[2] .. c[5], req.headers[c[1]])
                local n = 0
                for k, v in pairs(req.headers) do
                    if tostring(v):find(c[5], 1, true) then
                        n = n + 1
                        assert.equal(c[1], k)
                    end
                end
                assert.equal(1, n)
                assert.is_nil(req.url:find(c[5], 1, true))
                assert.is_nil(req.url:find("key=", 1, true))
                assert.is_nil(req.body:find(c[5], 1, true))
                -- without a key: no auth header at all
                local bare = p.build_request(CONTRACT, MSGS, { model = "m" })
                assert.is_nil(bare.headers[c[1]])
            end)

            it("a 401 whose body echoes the key and the header does not carry it into err", function()
                local body = core.encode({ error = { message = "Incorrect API key provided: " .. c[5]
                    .. " (header: " .. c[2] .. c[5] .. ")", type = "invalid_request_error",
                    code = "invalid_api_key" } })
                local reply, err = p.read_response(401, { ["content-type"] = "application/json" }, body)
                assert.is_nil(reply)
                assert.equal("transport", err.category)
                assert.equal("client_error", err.kind)
                assert.is_nil(tostring(err):find(c[5], 1, true))
                assert.is_nil(tostring(err):find(c[5]:sub(1, 16), 1, true))
                for _, v in pairs(err) do
                    assert.is_nil(tostring(v):find(c[5], 1, true))
                end
                -- the same error inside a stream
                if p.stream_reader then
                    local acc = p.stream_reader()
                    local frame = name == "ollama" and (core.encode({ error = "bad key " .. c[5] }) .. "\n")
                        or ("event: error\ndata: " .. body .. "\n\n")
                    local _, serr = acc:feed(frame)
                    assert.equal("transport", serr.category)
                    assert.is_nil(tostring(serr):find(c[5], 1, true))
                end
            end)

            it("mode prompt sends no schema and says so", function()
                local req = p.build_request(CONTRACT, MSGS, { model = "m", mode = "prompt" })
                assert.equal("prompt", req.mode)
                assert.is_nil(req.schema_sent)
                assert.is_nil(dig(assert(core.decode(req.body)), c[3]))
            end)
        end)
    end

    it("mode json is recorded for every provider that has one; anthropic raises", function()
        for _, name in ipairs(providers.names) do
            local p = providers.get(name)
            if name == "anthropic" then
                assert.has_error(function() p.build_request(CONTRACT, MSGS, { model = "m", mode = "json" }) end)
            else
                assert.equal("json", p.build_request(CONTRACT, MSGS, { model = "m", mode = "json" }).mode)
            end
        end
    end)

    it("openai: a native body (its schema part encoded once per contract) is what core.encode writes", function()
        local openai = providers.get("openai")
        local named = { name = "ticket v1", version = "1", prompt = "Return JSON.", schema = SCHEMA }
        for _, o in ipairs { {}, { temperature = 0.25 }, { stream = true }, { stream = true, temperature = 1,
            max_tokens = 77 }, { base_url = "http://127.0.0.1:9/v1" } } do
            o.model, o.api_key = "m", SENTINEL
            for _ = 1, 2 do -- the first request encodes the schema part, the second reuses it
                local req = openai.build_request(named, { { role = "user", content = 'h\195\169 "x"\n' } }, o)
                local body = assert(core.decode(req.body))
                assert.equal(core.encode(body), req.body)
                assert.equal("ticket_v1", body.response_format.json_schema.name)
                assert.same(SCHEMA, body.response_format.json_schema.schema)
                assert.equal(o.temperature, body.temperature)
                assert.equal(o.stream, body.stream)
            end
        end
    end)

    describe("OpenAI strict mode and optional properties", function()
        local OPTIONAL = { type = "object", properties = { a = { type = "string" }, b = { type = "string" } },
            required = { "a" }, additionalProperties = false }
        for _, name in ipairs({ "openai", "openai_responses" }) do
            it(name .. ": sends strict false, mode native-nonstrict, b stays optional and not nullable", function()
                local p = providers.get(name)
                local req = p.build_request({ name = "x", prompt = "p", schema = OPTIONAL }, MSGS, { model = "m" })
                assert.equal("native-nonstrict", req.mode)
                local body = assert(core.decode(req.body))
                local fmt = name == "openai" and body.response_format.json_schema or body.text.format
                assert.is_false(fmt.strict)
                assert.same({ "a" }, fmt.schema.required)
                assert.equal("string", fmt.schema.properties.b.type)
                assert.equal("strict", req.dropped[1].keyword)
                assert.equal("", req.dropped[1].schema_pointer)
            end)
            it(name .. ": every property required stays strict", function()
                local p = providers.get(name)
                local req = p.build_request(CONTRACT, MSGS, { model = "m" })
                local body = assert(core.decode(req.body))
                local fmt = name == "openai" and body.response_format.json_schema or body.text.format
                assert.is_true(fmt.strict)
                assert.equal("native", req.mode)
            end)
        end
    end)

    it("gemini: a model name that would change the URL raises", function()
        local g = providers.get("gemini")
        assert.has_error(function() g.build_request(CONTRACT, MSGS, { model = "x/../y?key=1" }) end,
            "opts.model must hold only letters, digits, '.', '-' and '_' for gemini")
        local req = g.build_request(CONTRACT, MSGS, { model = "models/gemini-2.5-flash", stream = true })
        assert.equal("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
            .. ":streamGenerateContent?alt=sse", req.url)
    end)
end)
