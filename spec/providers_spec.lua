-- Specs for jsoncontract.providers (openai, anthropic; the shared gate steps on gemini, ollama
-- and openai_responses too): request building, the strict schema subsets and the protocol gate
-- over the shared provider fixtures.

local core = require "jsoncontract.core"
local providers = require "jsoncontract.providers"
local openai = require "jsoncontract.providers.openai"
local anthropic = require "jsoncontract.providers.anthropic"
local gemini = require "jsoncontract.providers.gemini"
local ollama = require "jsoncontract.providers.ollama"
local openai_responses = require "jsoncontract.providers.openai_responses"

local util = require "support.util"

local FIXTURES = util.shared("fixtures")
local read, deep_equal = util.read, util.deep_equal

describe("jsoncontract.providers", function()
    describe("get()", function()
        it("returns the provider modules by name", function()
            assert.equal(openai, providers.get("openai"))
            assert.equal(anthropic, providers.get("anthropic"))
            assert.same({ "anthropic", "gemini", "llamacpp", "ollama", "openai", "openai_responses" },
                providers.names)
            for _, name in ipairs(providers.names) do
                local p = providers.get(name)
                assert.equal(name, p.name)
                assert.equal(require("jsoncontract.providers." .. name), p)
            end
        end)
        it("raises on an unknown name, listing the known ones", function()
            assert.has_error(function() providers.get("gemeni") end,
                'unknown provider "gemeni" (known: anthropic, gemini, llamacpp, ollama, openai, openai_responses)')
            assert.has_error(function() providers.get(nil) end,
                "provider name must be a string, got nil")
        end)
    end)

    describe("openai.is_openai()", function()
        it("takes OpenAI's own host in any spelling for strict mode's native rules, and no look-alike", function()
            for _, url in ipairs { "https://api.openai.com/v1", "https://API.openai.com./v1", "https://x@api.openai.com" } do
                assert.is_true(openai.is_openai(url), url)
            end
            for _, url in ipairs { "https://api.openai.com.example.com/v1", "http://127.0.0.1:8080/v1",
                "https://api.openai.com:8443" } do
                assert.is_false(openai.is_openai(url), url)
            end
        end)
    end)

    describe("missing_key()", function()
        local REFUSED = "openai's API (api.openai.com) refuses every request without an API key: give api_key "
            .. "(it is usually in OPENAI_API_KEY), or a base_url for a server that needs none"
        it("refuses every spelling of the provider's own host that a transport sends there", function()
            for _, url in ipairs { "https://api.openai.com", "https://API.OPENAI.COM/v1", "HTTPS://api.openai.com",
                "https://api.openai.com./v1", "https://API.openai.com.:443/v1", "https://api.openai.com:443",
                "http://api.openai.com/", "https://x@api.openai.com/v1", "https://user:pw@api.openai.com",
                "https://api.openai.com?x=1", "https://api.openai.com#f" } do
                assert.equal(REFUSED, providers.missing_key("openai", url, nil), url)
            end
        end)
        it("lets another host decide: a proxy, a local server, a look-alike name", function()
            for _, url in ipairs { "http://127.0.0.1:9/v1", "https://[::1]:8443/v1", "http://[::1]/",
                "https://api.openai.com.example.com/v1", "https://example.com/api.openai.com",
                "https://example.com?h=api.openai.com", "https://api.openai.com@example.com/v1",
                "https://llm-proxy.example.com" } do
                assert.is_nil(providers.missing_key("openai", url, nil), url)
            end
        end)
        it("counts an empty or blank key as none", function()
            for _, key in ipairs { "", " ", "\t\n" } do
                assert.equal(REFUSED, providers.missing_key("openai", nil, key), ("%q"):format(key))
            end
            assert.is_nil(providers.missing_key("openai", nil, "sk-test-7f3a9c"))
        end)
        it("never quotes the base_url nor the key it was given", function()
            local msg = providers.missing_key("openai", "https://sk-user-secret:pw-9f2@API.openai.com./v1", " ")
            assert.equal(REFUSED, msg)
            assert.is_nil(msg:find("secret", 1, true))
            assert.is_nil(msg:find("pw-9f2", 1, true))
        end)
        it("takes a provider module, with or without FACTS", function()
            assert.equal(REFUSED:gsub("^openai", "openai_responses"), providers.missing_key(openai_responses))
            assert.is_nil(providers.missing_key({ name = "mine", build_request = function() end }))
            assert.is_nil(providers.missing_key("ollama"))
            assert.is_nil(providers.missing_key("llamacpp"))
        end)
    end)

    --------------------------------------------------------------------------
    -- build_request
    --------------------------------------------------------------------------
    local KEY = "sk-test-7f3a9c"
    local function contract(schema, name)
        return {
            name = name or "support-triage", version = "1.0.0", prompt = "Return one JSON object.",
            schema = schema or {
                type = "object",
                properties = { label = { type = "string", enum = { "bug", "billing" } } },
                required = { "label" },
                additionalProperties = false,
            },
        }
    end
    local MSGS = { { role = "user", content = "My invoice is wrong." } }

    describe("openai.build_request()", function()
        local URLS = {
            { nil, "https://api.openai.com/v1/chat/completions" },
            { "http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions" },
            { "http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/chat/completions" },
            { "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/chat/completions" },
            { "http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions" },
            { "https://gw.example/openai", "https://gw.example/openai/v1/chat/completions" },
        }
        for _, case in ipairs(URLS) do
            it("joins base_url " .. tostring(case[1]) .. " to " .. case[2], function()
                local req = openai.build_request(contract(), MSGS, { model = "m", base_url = case[1] })
                assert.equal(case[2], req.url)
                assert.equal("POST", req.method)
            end)
        end

        it("puts the key only in the Authorization header", function()
            local req = openai.build_request(contract(), MSGS, { model = "gpt-4o-mini", api_key = KEY })
            assert.same({ ["content-type"] = "application/json", authorization = "Bearer " .. KEY },
                req.headers)
            assert.is_nil(req.body:find(KEY, 1, true))
            local noauth = openai.build_request(contract(), MSGS, { model = "gpt-4o-mini" })
            assert.same({ ["content-type"] = "application/json" }, noauth.headers)
        end)

        it("sends the system prompt, the messages and the strict schema in response_format", function()
            local req = openai.build_request(contract(), MSGS, { model = "gpt-4o-mini", temperature = 0 })
            local body = assert(core.decode(req.body))
            assert.equal("gpt-4o-mini", body.model)
            assert.equal(1024, body.max_completion_tokens)
            assert.equal(0, body.temperature)
            assert.equal(2, #body.messages)
            assert.same({ role = "system", content = "Return one JSON object." }, body.messages[1])
            assert.same({ role = "user", content = "My invoice is wrong." }, body.messages[2])
            assert.equal("json_schema", body.response_format.type)
            assert.equal("support-triage", body.response_format.json_schema.name)
            assert.is_true(body.response_format.json_schema.strict)
            assert.is_true(deep_equal(req.schema_sent, body.response_format.json_schema.schema))
            assert.is_false(body.response_format.json_schema.schema.additionalProperties)
            assert.equal("native", req.mode)
            assert.equal(0, #req.dropped)
        end)

        it("omits temperature when not given and takes max_tokens", function()
            local req = openai.build_request(contract(), MSGS, { model = "m", max_tokens = 77 })
            local body = assert(core.decode(req.body))
            assert.is_nil(body.temperature)
            assert.equal(77, body.max_completion_tokens)
        end)

        it("mode json asks for json_object and sends no schema", function()
            local req = openai.build_request(contract(), MSGS, { model = "m", mode = "json" })
            local body = assert(core.decode(req.body))
            assert.same({ type = "json_object" }, body.response_format)
            assert.equal("json", req.mode)
            assert.is_nil(req.schema_sent)
        end)

        it("mode prompt sends no response_format", function()
            local req = openai.build_request(contract(), MSGS, { model = "m", mode = "prompt" })
            local body = assert(core.decode(req.body))
            assert.is_nil(body.response_format)
            assert.equal("prompt", req.mode)
            assert.is_nil(req.schema_sent)
        end)

        it("sanitises the contract name for json_schema.name", function()
            assert.equal("support_triage_v2_", openai.schema_name("support triage/v2."))
            assert.equal(string.rep("a", 64), openai.schema_name(string.rep("a", 70)))
            assert.equal("contract", openai.schema_name(""))
            local req = openai.build_request(contract(nil, "a b"), MSGS, { model = "m" })
            assert.equal("a_b", assert(core.decode(req.body)).response_format.json_schema.name)
        end)

        it("sends the recorded request's schema unchanged (fixture json-schema-strict.ok.json)", function()
            local text = read(FIXTURES .. "/openai-chat/manifest.json")
            if not text then return pending("fixtures not found at " .. FIXTURES .. "/openai-chat") end
            local fx
            for _, f in ipairs(assert(core.decode(text)).fixtures) do
                if f.file == "json-schema-strict.ok.json" then fx = f end
            end
            local rf = fx.request.response_format.json_schema
            local req = openai.build_request(contract(rf.schema, rf.name), fx.request.messages,
                { model = fx.request.model })
            local body = assert(core.decode(req.body))
            assert.is_true(deep_equal(rf.schema, body.response_format.json_schema.schema))
            assert.equal("Book", body.response_format.json_schema.name)
            assert.equal(0, #req.dropped)
        end)

        it("raises on misuse", function()
            assert.has_error(function() openai.build_request(contract(), MSGS, {}) end,
                "opts.model must be a non-empty string")
            assert.has_error(function() openai.build_request(contract(), MSGS, { model = "m", mode = "xml" }) end,
                'opts.mode "xml" is not supported by openai (supported: json, native, prompt)')
            assert.has_error(function() openai.build_request(contract(), MSGS, { model = "m", max_tokens = 0 }) end,
                "opts.max_tokens must be a positive integer")
            assert.has_error(function()
                openai.build_request(contract(), { { role = "system", content = "x" } }, { model = "m" })
            end, 'messages[1].role must be "user" or "assistant"')
        end)

        it("sends a root that is not an object in mode prompt, saying why (no 400 known in advance)",
            function()
            local req = openai.build_request(contract({ type = "array" }), MSGS, { model = "m" })
            assert.equal("prompt", req.mode)
            assert.is_nil(core.decode(req.body).response_format)
            assert.same({ from = "native", to = "prompt", schema_pointer = "", keyword = "type",
                reason = "the root is not an object: the root must be an object",
                source = openai.rules.native.root.object.source, url = openai.rules.native.root.object.url },
                req.fallback)
        end)
    end)

    describe("anthropic.build_request()", function()
        local URLS = {
            { nil, "https://api.anthropic.com/v1/messages" },
            { "http://127.0.0.1:9000", "http://127.0.0.1:9000/v1/messages" },
            { "http://127.0.0.1:9000/v1", "http://127.0.0.1:9000/v1/messages" },
            { "http://127.0.0.1:9000/v1/", "http://127.0.0.1:9000/v1/messages" },
        }
        for _, case in ipairs(URLS) do
            it("joins base_url " .. tostring(case[1]) .. " to " .. case[2], function()
                local req = anthropic.build_request(contract(), MSGS, { model = "m", base_url = case[1] })
                assert.equal(case[2], req.url)
            end)
        end

        it("puts the key only in x-api-key and sends anthropic-version", function()
            local req = anthropic.build_request(contract(), MSGS, { model = "claude-sonnet-4-5", api_key = KEY })
            assert.same({ ["content-type"] = "application/json", ["anthropic-version"] = "2023-06-01",
                ["x-api-key"] = KEY }, req.headers)
            assert.is_nil(req.body:find(KEY, 1, true))
        end)

        it("follows the recorded request shape of output-config-json-schema.ok.json", function()
            local text = read(FIXTURES .. "/anthropic/manifest.json")
            if not text then return pending("fixtures not found at " .. FIXTURES .. "/anthropic") end
            local fx
            for _, f in ipairs(assert(core.decode(text)).fixtures) do
                if f.file == "output-config-json-schema.ok.json" then fx = f end
            end
            local rq = fx.request
            local c = contract(rq.output_config.format.schema, "OrderItem")
            local req = anthropic.build_request(c, rq.messages, { model = rq.model, max_tokens = rq.max_tokens })
            local body = assert(core.decode(req.body))
            assert.is_true(deep_equal(rq.output_config, body.output_config))
            assert.is_true(deep_equal(rq.messages, body.messages))
            assert.equal(rq.model, body.model)
            assert.equal(1024, body.max_tokens)
            assert.equal("Return one JSON object.", body.system)
            assert.equal(fx.request_headers["anthropic-version"], req.headers["anthropic-version"])
            assert.equal(0, #req.dropped)
        end)

        it("mode prompt sends no output_config; mode json raises", function()
            local req = anthropic.build_request(contract(), MSGS, { model = "m", mode = "prompt" })
            assert.is_nil(assert(core.decode(req.body)).output_config)
            assert.is_nil(req.schema_sent)
            assert.has_error(function() anthropic.build_request(contract(), MSGS, { model = "m", mode = "json" }) end,
                'opts.mode "json" is not supported by anthropic (supported: native, prompt, tool)')
        end)
    end)

    describe("provider_schema()", function()
        local function schema()
            return {
                type = "object",
                properties = {
                    name = { type = "string", minLength = 1, maxLength = 80 },
                    email = { type = "string", format = "email" },
                    site = { type = "string", format = "uri" },
                    code = { type = "string", pattern = "^(?!x)[a-z]+$" },
                    score = { type = "number", minimum = 0, maximum = 1 },
                    tags = { type = "array", items = { type = "string" }, minItems = 2, uniqueItems = true },
                    kind = { oneOf = { { const = "a" }, { const = "b" } } },
                    level = { enum = { "low", "high" } },
                    meta = { type = "object", properties = { note = { type = "string" } } },
                },
                required = { "name", "score", "tags", "kind" },
            }
        end
        local function by_pointer(dropped)
            local t = {}
            for _, d in ipairs(dropped) do t[d.schema_pointer .. " " .. d.keyword] = true end
            return t
        end

        it("openai: closes objects, requires every property, makes optional ones nullable", function()
            local sent, dropped = openai.provider_schema(schema())
            assert.same({ "name", "score", "tags", "kind", "code", "email", "level", "meta", "site" },
                sent.required)
            assert.is_false(sent.additionalProperties)
            assert.is_false(sent.properties.meta.additionalProperties)
            assert.same({ "note" }, sent.properties.meta.required)
            assert.same({ "string", "null" }, sent.properties.meta.properties.note.type)
            assert.same({ "string", "null" }, sent.properties.email.type)
            assert.same({ "object", "null" }, sent.properties.meta.type)
            -- enum: wrapped, since a null would fail the enum
            assert.same({ { enum = { "low", "high" } }, { type = "null" } }, sent.properties.level.anyOf)
            assert.equal("string", sent.properties.name.type) -- required stays as it was
            assert.equal(1, sent.properties.name.minLength) -- strict mode takes string lengths
            assert.equal(80, sent.properties.name.maxLength)
            assert.equal(0, sent.properties.score.minimum)
            assert.equal(2, sent.properties.tags.minItems)
            assert.is_nil(sent.properties.tags.uniqueItems)
            assert.is_nil(sent.properties.site.format)
            assert.equal("email", sent.properties.email.format)
            assert.is_nil(sent.properties.code.pattern)
            assert.same({ { const = "a" }, { const = "b" } }, sent.properties.kind.anyOf)
            assert.is_nil(sent.properties.kind.oneOf)
            assert.same({
                ["/additionalProperties additionalProperties"] = true,
                ["/properties/site/format format"] = true,
                ["/properties/code/pattern pattern"] = true,
                ["/properties/tags/uniqueItems uniqueItems"] = true,
                ["/properties/kind/oneOf oneOf"] = true,
                ["/properties/meta/additionalProperties additionalProperties"] = true,
                ["/properties/meta/properties/note required"] = true,
                ["/properties/code required"] = true,
                ["/properties/email required"] = true,
                ["/properties/level required"] = true,
                ["/properties/meta required"] = true,
                ["/properties/site required"] = true,
            }, by_pointer(dropped))
            for _, d in ipairs(dropped) do assert.is_string(d.reason) end
        end)

        it("anthropic: closes objects, keeps optional properties, drops numeric and length limits", function()
            local sent, dropped = anthropic.provider_schema(schema())
            assert.same({ "name", "score", "tags", "kind" }, sent.required)
            assert.is_false(sent.additionalProperties)
            assert.is_nil(sent.properties.meta.required)
            assert.equal("string", sent.properties.email.type)
            assert.equal("uri", sent.properties.site.format)
            assert.is_nil(sent.properties.score.minimum)
            assert.is_nil(sent.properties.tags.minItems) -- only 0 or 1 is supported
            assert.same({
                ["/additionalProperties additionalProperties"] = true,
                ["/properties/name/minLength minLength"] = true,
                ["/properties/name/maxLength maxLength"] = true,
                ["/properties/code/pattern pattern"] = true,
                ["/properties/score/minimum minimum"] = true,
                ["/properties/score/maximum maximum"] = true,
                ["/properties/tags/minItems minItems"] = true,
                ["/properties/tags/uniqueItems uniqueItems"] = true,
                ["/properties/kind/oneOf oneOf"] = true,
                ["/properties/meta/additionalProperties additionalProperties"] = true,
            }, by_pointer(dropped))
        end)

        it("never mutates the caller's schema", function()
            for _, p in ipairs({ openai, anthropic }) do
                local s, before = schema(), schema()
                p.provider_schema(s)
                assert.is_true(deep_equal(before, s))
                local c = contract(s)
                p.build_request(c, MSGS, { model = "m" })
                assert.is_true(deep_equal(before, c.schema))
            end
        end)
    end)

    --------------------------------------------------------------------------
    -- read_response: one small case per kind beyond the fixtures
    --------------------------------------------------------------------------
    describe("read_response()", function()
        local function oa(choice_fields, extra)
            local choice = '{"index":0,' .. choice_fields .. '}'
            return '{"id":"c1","object":"chat.completion","model":"m","choices":[' .. choice
                .. (extra or "") .. '],"usage":{"prompt_tokens":3,"completion_tokens":4}}'
        end
        local function an(content, stop)
            return '{"id":"msg_1","type":"message","role":"assistant","model":"m","content":' .. content
                .. ',"stop_reason":"' .. stop .. '","usage":{"input_tokens":3,"output_tokens":4,'
                .. '"cache_read_input_tokens":10}}'
        end
        local CASES = {
            { "openai 502 with an HTML body", openai, 502, {}, "<html><body>Bad gateway</body></html>",
              "transport", "server_error", { retryable = true } },
            { "openai 301", openai, 301, { location = "https://x.example/" }, "",
              "transport", "redirect", { retryable = false, location = "https://x.example/" } },
            { "openai 404 model not found", openai, 404, {},
              '{"error":{"message":"The model `x` does not exist","type":"invalid_request_error",'
              .. '"param":null,"code":"model_not_found"}}',
              "transport", "client_error", { retryable = false, provider_code = "model_not_found" } },
            { "openai 429 with retry-after-ms", openai, 429, { ["retry-after-ms"] = "1500", ["retry-after"] = "2" },
              '{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}',
              "transport", "rate_limited", { retryable = true, retry_after = 1.5 } },
            { "openai 429 with retry-after", openai, 429, { ["Retry-After"] = "2" }, "",
              "transport", "rate_limited", { retryable = true, retry_after = 2 } },
            { "anthropic 503 overloaded_error", anthropic, 503, {},
              '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
              "transport", "overloaded", { retryable = true } },
            { "anthropic 200 error body", anthropic, 200, {},
              '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
              "transport", "overloaded", { retryable = true } },
            { "openai 200 HTML", openai, 200, { ["content-type"] = "text/html" }, "<html></html>",
              "protocol", "invalid_envelope" },
            { "anthropic 200 truncated JSON", anthropic, 200, {}, '{"type":"message",',
              "protocol", "invalid_envelope" },
            { "openai no choices", openai, 200, {}, '{"object":"chat.completion","choices":[]}',
              "protocol", "no_message" },
            { "openai choice without message", openai, 200, {}, oa('"finish_reason":"stop"'),
              "protocol", "no_message" },
            { "anthropic without content", anthropic, 200, {},
              '{"type":"message","role":"assistant","stop_reason":"end_turn"}', "protocol", "no_message" },
            { "openai content null", openai, 200, {},
              oa('"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"stop"'),
              "protocol", "no_content" },
            { "openai content empty", openai, 200, {},
              oa('"message":{"role":"assistant","content":""},"finish_reason":"stop"'),
              "protocol", "no_content" },
            { "anthropic empty content end_turn", anthropic, 200, {}, an("[]", "end_turn"),
              "protocol", "no_content" },
            { "anthropic thinking only", anthropic, 200, {},
              an('[{"type":"thinking","thinking":"hm","signature":"s"}]', "end_turn"), "protocol", "no_content" },
            { "openai two choices", openai, 200, {},
              oa('"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"',
                 ',{"index":1,"message":{"role":"assistant","content":"[]"},"finish_reason":"stop"}'),
              "protocol", "ambiguous_content" },
            { "openai two tool calls", openai, 200, {},
              oa('"message":{"role":"assistant","content":null,"tool_calls":['
                 .. '{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},'
                 .. '{"id":"b","type":"function","function":{"name":"f","arguments":"{\\"x\\":1}"}}]},'
                 .. '"finish_reason":"tool_calls"'),
              "protocol", "ambiguous_content" },
            { "anthropic two tool_use blocks", anthropic, 200, {},
              an('[{"type":"tool_use","id":"a","name":"f","input":{}},'
                 .. '{"type":"tool_use","id":"b","name":"f","input":{"x":1}}]', "tool_use"),
              "protocol", "ambiguous_content" },
            { "openai unknown finish_reason", openai, 200, {},
              oa('"message":{"role":"assistant","content":"{}"},"finish_reason":"eos"'),
              "protocol", "unknown_finish_reason" },
            { "anthropic pause_turn", anthropic, 200, {}, an('[{"type":"text","text":"{}"}]', "pause_turn"),
              "protocol", "unknown_finish_reason" },
            { "openai length with whole JSON", openai, 200, {},
              oa('"message":{"role":"assistant","content":"{\\"a\\":1}"},"finish_reason":"length"'),
              "truncated", "max_tokens" },
            { "anthropic max_tokens with whole JSON", anthropic, 200, {},
              an('[{"type":"text","text":"{\\"a\\":1}"}]', "max_tokens"), "truncated", "max_tokens" },
            { "anthropic context window", anthropic, 200, {},
              an('[{"type":"text","text":"{"}]', "model_context_window_exceeded"), "truncated", "context_window" },
            { "anthropic refusal with text", anthropic, 200, {},
              an('[{"type":"text","text":"I cannot help."}]', "refusal"), "refused", "refusal",
              { refusal = "I cannot help." } },
            -- a text answer beside a tool call is two answers: neither is dropped silently
            { "openai text beside a tool call", openai, 200, {},
              oa('"message":{"role":"assistant","content":"{\\"v\\":\\"reject\\"}","tool_calls":['
                 .. '{"id":"a","type":"function","function":{"name":"f","arguments":"{\\"v\\":\\"approve\\"}"}}]},'
                 .. '"finish_reason":"stop"'),
              "protocol", "ambiguous_content" },
            { "anthropic text block beside a tool_use block", anthropic, 200, {},
              an('[{"type":"text","text":"{\\"v\\":\\"reject\\"}"},'
                 .. '{"type":"tool_use","id":"a","name":"f","input":{"v":"approve"}}]', "end_turn"),
              "protocol", "ambiguous_content" },
            { "gemini text part beside a functionCall part", gemini, 200, {},
              '{"candidates":[{"finishReason":"STOP","content":{"role":"model","parts":['
              .. '{"text":"{\\"v\\":\\"reject\\"}"},{"functionCall":{"name":"f","args":{"v":"approve"}}}]}}]}',
              "protocol", "ambiguous_content" },
            { "ollama content beside a tool call", ollama, 200, {},
              '{"model":"m","done":true,"done_reason":"stop","message":{"role":"assistant",'
              .. '"content":"{\\"v\\":\\"reject\\"}","tool_calls":[{"function":{"name":"f","arguments":{"v":"approve"}}}]}}',
              "protocol", "ambiguous_content" },
            -- a refusal of a shape the API does not document is still no answer
            { "openai refusal that is an object", openai, 200, {},
              oa('"message":{"role":"assistant","content":"{}","refusal":{"text":"no"}},"finish_reason":"stop"'),
              "refused", "refusal" },
            { "responses refusal part without text", openai_responses, 200, {},
              '{"status":"completed","output":[{"type":"message","role":"assistant","content":['
              .. '{"type":"refusal","refusal":null},{"type":"output_text","text":"{}"}]}]}',
              "refused", "refusal" },
            { "responses refusal part with no refusal field", openai_responses, 200, {},
              '{"status":"completed","output":[{"type":"message","role":"assistant","content":['
              .. '{"type":"refusal"},{"type":"output_text","text":"{}"}]}]}',
              "refused", "refusal" },
            { "openai 2xx with choices and an error", openai, 200, {},
              '{"choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],'
              .. '"error":{"message":"upstream failed","type":"server_error"}}',
              "protocol", "no_message" },
            { "openai message with role user", openai, 200, {},
              oa('"message":{"role":"user","content":"{}"},"finish_reason":"stop"'),
              "protocol", "no_message" },
            { "openai 400 content_filter code", openai, 400, {},
              '{"error":{"message":"filtered","type":"invalid_request_error","code":"content_filter"}}',
              "filtered", "content_filter", { retryable = false } },
        }
        for _, c in ipairs(CASES) do
            it(c[1] .. " -> " .. c[6] .. "/" .. c[7], function()
                local reply, err, partial = c[2].read_response(c[3], c[4], c[5])
                assert.is_nil(reply)
                assert.equal(c[6], err.category)
                assert.equal(c[7], err.kind)
                assert.equal(c[3], err.status)
                assert.equal(core.error_mt, getmetatable(getmetatable(err)))
                for k, v in pairs(c[8] or {}) do assert.equal(v, err[k]) end
                assert.is_nil(rawget(err, "reply")) -- the reply travels beside the err
                if c[6] ~= "transport" and c[7] ~= "invalid_envelope" and partial then
                    assert.is_table(partial.usage)
                end
            end)
        end

        it("keeps usage on a gate failure (anthropic sums cached input tokens)", function()
            local _, err, partial = anthropic.read_response(200, {}, an('[{"type":"text","text":"{"}]', "max_tokens"))
            assert.equal("truncated", err.category)
            assert.is_nil(rawget(err, "reply"))
            assert.same({ input_tokens = 13, output_tokens = 4 }, partial.usage)
            assert.equal("{", partial.text)
            assert.equal("length", partial.finish)
        end)

        it("names the provider's error type and message", function()
            local _, err = openai.read_response(404, {},
                '{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}')
            assert.equal("openai HTTP 404: invalid_request_error/model_not_found: no such model", err.message)
            local _, err2 = openai.read_response(502, {}, "<html>\nBad\tgateway</html>")
            assert.equal("openai HTTP 502: non-JSON error body: <html> Bad gateway</html>", err2.message)
        end)

        it("takes a tool call beside whitespace-only text, and JSON null error beside choices", function()
            local reply = assert(anthropic.read_response(200, {},
                an('[{"type":"text","text":"\\n\\n"},{"type":"tool_use","id":"a","name":"f","input":{"v":1}}]',
                   "tool_use")))
            assert.equal('{"v":1}', reply.text)
            assert.equal("tool_use", reply.finish)
            reply = assert(openai.read_response(200, {}, '{"error":null,"choices":[{"index":0,"message":'
                .. '{"role":"assistant","content":"{}","refusal":null},"finish_reason":"stop"}]}'))
            assert.equal("{}", reply.text)
        end)

        it("accepts a stop_sequence stop and concatenates text blocks", function()
            local reply = assert(anthropic.read_response(200, {},
                an('[{"type":"text","text":"{\\"a\\":"},{"type":"text","text":"1}"}]', "stop_sequence")))
            assert.equal('{"a":1}', reply.text)
            assert.equal("stop", reply.finish)
            assert.equal("stop_sequence", reply.finish_reason)
        end)

        it("raises on misuse", function()
            assert.has_error(function() openai.read_response("200", {}, "{}") end,
                "status must be an integer, got string")
            assert.has_error(function() anthropic.read_response(200, {}, nil) end,
                "body must be a string, got nil")
        end)
    end)

    --------------------------------------------------------------------------
    -- Fixtures: the decision each recorded envelope must get.
    --------------------------------------------------------------------------
    -- What this module decides per fixture file. `ok` = read_response succeeds; `text` =
    -- "from_fixture" compares with the content the fixture carries.
    local DECISIONS = {
        ["openai-chat"] = {
            ["json-schema-strict.ok.json"] = { ok = true, finish = "stop", finish_reason = "stop",
                text = '{"title":"THE NAME OF THE WIND","author":{"first_name":"Patrick",'
                    .. '"last_name":"Rothfuss"},"rating":7}',
                usage = { input_tokens = 172, output_tokens = 29 }, model = "gpt-4o-2024-08-06",
                id = "chatcmpl-CRl1ZG4wFCynijp6yzg6mt5CECdl8" },
            ["json-object-mode.ok.json"] = { ok = true, finish = "stop", text = "from_fixture",
                usage = { input_tokens = 278, output_tokens = 46 } },
            ["tool-call.forced.finish-stop.json"] = { ok = true, finish = "tool_use", finish_reason = "stop",
                text = '{"title":"THE NAME OF THE WIND","author":{"first_name":"Patrick",'
                    .. '"last_name":"Rothfuss"},"rating":7}',
                usage = { input_tokens = 172, output_tokens = 29 } },
            ["tool-call.strict.json"] = { ok = true, finish = "tool_use", finish_reason = "tool_calls",
                text = '{"city":"San Francisco","state":"CA"}', usage = { input_tokens = 48, output_tokens = 19 } },
            -- manifest expect "format": the envelope gate passes it on; the format gate rejects the fence
            ["fenced-json.openai-compatible.envelope.json"] = { ok = true, finish = "stop",
                text = "from_fixture", usage = { input_tokens = 431, output_tokens = 79 } },
            ["length.truncated-text.json"] = { category = "truncated", kind = "max_tokens",
                usage = { input_tokens = 14, output_tokens = 50 } },
            ["length.truncated-json.json"] = { category = "truncated", kind = "max_tokens",
                reply_text = '{"', usage = { input_tokens = 79, output_tokens = 1 } },
            ["refusal.json"] = { category = "refused", kind = "refusal",
                refusal = "I'm very sorry, but I can't assist with that request.",
                usage = { input_tokens = 64, output_tokens = 13 } },
            ["content-filter.json"] = { category = "filtered", kind = "content_filter",
                usage = { input_tokens = 889, output_tokens = 0 } },
            -- documented headers: tokens remaining 0, reset-tokens "6ms" (the body says 6ms too)
            ["error-429-rate-limit.json"] = { category = "transport", kind = "rate_limited",
                status = 429, retryable = true, retry_after = 0.006 },
            ["error-429-insufficient-quota.json"] = { category = "transport", kind = "quota_exceeded",
                status = 429, retryable = false },
            ["error-500-server-error.json"] = { category = "transport", kind = "server_error",
                status = 500, retryable = true },
            ["error-400-content-filter-azure.json"] = { category = "filtered", kind = "content_filter",
                status = 400, retryable = false },
        },
        anthropic = {
            ["output-config-json-schema.ok.json"] = { ok = true, finish = "stop", finish_reason = "end_turn",
                text = '{"product_name": "Green Tea", "price": 5.50, "quantity": 2}',
                usage = { input_tokens = 249, output_tokens = 26 }, model = "claude-sonnet-4-5-20250929",
                id = "msg_01Egs18hRzhru3uGon3qesbA" },
            ["output-format-beta.ok.json"] = { ok = true, finish = "stop", text = "from_fixture",
                usage = { input_tokens = 414, output_tokens = 43 } },
            ["tool-use.forced.json"] = { ok = true, finish = "tool_use", finish_reason = "tool_use",
                tool_input = true, usage = { input_tokens = 880, output_tokens = 81 } },
            -- soft refusal: the envelope is fine; only rules can see it (manifest agrees)
            ["soft-refusal-in-tool-input.json"] = { ok = true, finish = "tool_use", tool_input = true,
                usage = { input_tokens = 416, output_tokens = 141 } },
            ["fenced-json.prompt-only.json"] = { ok = true, finish = "stop", text = "from_fixture",
                usage = { input_tokens = 328, output_tokens = 63 } },
            ["max-tokens.json"] = { category = "truncated", kind = "max_tokens",
                usage = { input_tokens = 15, output_tokens = 50 } },
            ["refusal.json"] = { category = "refused", kind = "refusal", refusal_category = "cyber",
                refusal = "This request triggered restrictions on violative cyber content and was "
                    .. "blocked under Anthropic's Usage Policy.",
                usage = { input_tokens = 18, output_tokens = 5 } },
            ["refusal.no-details.json"] = { category = "refused", kind = "refusal", refusal = nil,
                usage = { input_tokens = 18, output_tokens = 5 } },
            ["error-500-api-error.json"] = { category = "transport", kind = "server_error",
                status = 500, retryable = true },
            -- documented headers: retry-after "16"
            ["error-429-rate-limit.json"] = { category = "transport", kind = "rate_limited",
                status = 429, retryable = true, retry_after = 16 },
            ["error-529-overloaded.json"] = { category = "transport", kind = "overloaded",
                status = 529, retryable = true },
        },
    }
    local MODULES = { ["openai-chat"] = openai, anthropic = anthropic }

    -- The content the fixture carries, read with the provider's documented path.
    local function fixture_text(folder, doc)
        if folder == "openai-chat" then
            return doc.choices[1].message.content
        end
        return doc.content[1].text
    end

    for _, folder in ipairs({ "openai-chat", "anthropic" }) do
        describe("read_response() over fixtures/" .. folder, function()
            local manifest_text = read(FIXTURES .. "/" .. folder .. "/manifest.json")
            if not manifest_text then
                it("has fixtures", function()
                    pending("fixtures not found at " .. FIXTURES .. "/" .. folder)
                end)
                return
            end
            local manifest = assert(core.decode(manifest_text))
            local provider = MODULES[folder]
            for _, fx in ipairs(manifest.fixtures) do
                local file = fx.file
                local expect_word = fx.expect
                -- streams and the evidence record: spec/providers_fixtures_spec.lua reads them
                local elsewhere = fx.stream or file:match("%.sse$") or file:match("%.stream")
                    or file:match("%.evidence%.json$")
                if elsewhere then -- luacheck: ignore 542
                elseif not DECISIONS[folder][file] then
                    it(file, function()
                        pending("no decision recorded in this spec for a new fixture (manifest expects "
                            .. tostring(expect_word) .. ")")
                    end)
                else
                    local d = DECISIONS[folder][file]
                    it(file .. " -> " .. (d.ok and "accepted" or d.category .. "/" .. d.kind)
                        .. " (manifest: " .. tostring(expect_word) .. ")", function()
                        local body = assert(read(FIXTURES .. "/" .. folder .. "/" .. file))
                        local headers = fx.response_headers or fx.response_headers_documented or {}
                        -- our decision agrees with the manifest's word for every fixture
                        -- ("format" fixtures pass the envelope gate; the format gate rejects them)
                        if d.ok then
                            assert.is_true(expect_word == "ok" or expect_word == "format")
                        else
                            assert.equal(expect_word, d.category)
                        end
                        local reply, err, partial = provider.read_response(fx.http_status, headers, body)
                        if d.ok then
                            assert.is_nil(err)
                            assert.equal(d.finish, reply.finish)
                            if d.finish_reason then assert.equal(d.finish_reason, reply.finish_reason) end
                            local doc = assert(core.decode(body))
                            if d.text == "from_fixture" then
                                assert.equal(fixture_text(folder, doc), reply.text)
                            elseif d.tool_input then
                                local got = assert(core.decode(reply.text))
                                assert.is_true(deep_equal(doc.content[1].input, got))
                            else
                                assert.equal(d.text, reply.text)
                            end
                            assert.is_nil(reply.refusal)
                            if d.model then assert.equal(d.model, reply.model) end
                            if d.id then assert.equal(d.id, reply.id) end
                        else
                            assert.is_nil(reply)
                            assert.equal(d.category, err.category)
                            assert.equal(d.kind, err.kind)
                            assert.equal(core.error_mt, getmetatable(getmetatable(err)))
                            assert.equal(fx.http_status, err.status)
                            assert.equal(d.category .. "/" .. d.kind .. ": " .. err.message, tostring(err))
                            if d.retryable ~= nil then assert.equal(d.retryable, err.retryable) end
                            if d.retry_after then
                                assert.is_true(math.abs(err.retry_after - d.retry_after) < 1e-9)
                            elseif d.category == "transport" and d.kind ~= "rate_limited" then
                                assert.is_nil(err.retry_after)
                            end
                            if d.category == "refused" then
                                assert.equal(d.refusal, err.refusal)
                                assert.equal(d.refusal_category, err.refusal_category)
                            end
                            if d.reply_text then assert.equal(d.reply_text, partial.text) end
                            if d.category == "transport" then
                                assert.is_nil(partial)
                                assert.is_string(err.provider_type)
                            end
                        end
                        if d.usage then
                            local r = reply or partial
                            assert.equal(d.usage.input_tokens, r.usage.input_tokens)
                            assert.equal(d.usage.output_tokens, r.usage.output_tokens)
                        end
                    end)
                end
            end
        end)
    end
end)
