-- What a request costs: the short prompt of a native request, what a re-ask resends, the
-- stand-in billing the native schema, and llama-server's grammar mode.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local cjson = require "cjson"
local wire = require "jsoncontract.standin.wire"
local stext = require "jsoncontract.standin.text"
local lint = require "jsoncontract.contract.lint"

local function contract(extra)
    local def = {
        name = "tags", version = "2.0.0",
        instructions = "Tag the post.",
        schema = { type = "object", additionalProperties = false, required = { "topic", "tags" },
            properties = {
                topic = { type = "string", enum = { "ai", "web" }, description = "the post's main topic" },
                tags = { type = "array", items = { type = "string", pattern = "^[a-z]+$" }, uniqueItems = true,
                    maxItems = 3 },
            } },
        examples = { { input = "A post on neural nets.", output = { topic = "ai", tags = { "nets" } } } },
    }
    for k, v in pairs(extra or {}) do def[k] = v end
    return jc.contract(def)
end

local function system_of(req)
    local body = cjson.decode(req.body)
    return body.messages[1].role == "system" and body.messages[1].content or nil, body
end

describe("the prompt of a native request", function()
    local c = contract()
    it("keeps the instructions and the examples and leaves types, patterns and bounds to the schema", function()
        local short = c:prompt("native", "openai")
        assert.truthy(short:find("Tag the post.", 1, true))
        assert.truthy(short:find('Example answer: {"tags":["nets"],"topic":"ai"}', 1, true))
        assert.falsy(short:find("regular expression", 1, true))
        assert.falsy(short:find('one of "ai"', 1, true))
        assert.truthy(#short < #c:prompt())
    end)
    it("says in words what the provider will not enforce", function()
        -- OpenAI strict mode takes no uniqueItems (see jsoncontract.providers.rules.openai)
        local short = c:prompt("native", "openai")
        assert.truthy(short:find("- tags: uniqueItems true", 1, true), short)
    end)
    it("is the full prompt in modes json and prompt, and without a provider", function()
        assert.equal(c:prompt(), c:prompt("json", "openai"))
        assert.equal(c:prompt(), c:prompt("prompt", "openai"))
        assert.equal(c:prompt(), c:prompt("native"))
        assert.truthy(c:prompt():find('one of "ai", "web"', 1, true))
    end)
    it("goes out with a native request, and the full prompt with the other modes", function()
        local p = require "jsoncontract.providers.openai"
        local msgs = { { role = "user", content = "A post." } }
        local native = system_of(p.build_request(c, msgs, { model = "m" }))
        assert.equal(c:prompt("native", "openai"), native)
        local prompt_mode = system_of(p.build_request(c, msgs, { model = "m", mode = "prompt" }))
        assert.equal(c:prompt(), prompt_mode)
    end)
    it("is the full prompt when a native request falls back and sends no schema", function()
        -- OpenAI: a root that is not an object has no native field; the request goes out as "prompt"
        local scalar = jc.contract { name = "n", version = "1", instructions = "Count.",
            schema = { type = "integer", minimum = 0 } }
        local p = require "jsoncontract.providers.openai"
        local req = p.build_request(scalar, { { role = "user", content = "x" } }, { model = "m" })
        assert.are_not.equal("native", req.mode)
        local sys, body = system_of(req)
        assert.is_nil(body.response_format and body.response_format.json_schema)
        assert.equal(scalar:prompt(), sys)
    end)
end)

describe("the prompt of a native request that falls back (Anthropic, Ollama)", function()
    local c = contract()
    it("Anthropic: an assistant prefill last (a model that takes one) sends no schema, and the full prompt "
        .. "in `system`", function()
        local p = require "jsoncontract.providers.anthropic"
        local req = p.build_request(c, { { role = "user", content = "A post." }, { role = "assistant", content = "{" } },
            { model = "claude-sonnet-4-5" })
        assert.equal("prompt", req.mode)
        assert.equal(c:prompt(), cjson.decode(req.body).system)
        local native = p.build_request(c, { { role = "user", content = "A post." } }, { model = "claude-x" })
        assert.equal("native", native.mode)
        assert.equal(c:prompt("native", "anthropic"), cjson.decode(native.body).system)
    end)
    it("Ollama: a cloud model ignores `format`: the full prompt goes as the system message", function()
        local p = require "jsoncontract.providers.ollama"
        local req = p.build_request(c, { { role = "user", content = "A post." } }, { model = "gpt-oss:120b-cloud" })
        assert.equal("prompt", req.mode)
        assert.equal(c:prompt(), (system_of(req)))
    end)
end)

describe("reask_history", function()
    it("is \"last\" by default, \"all\" when asked, and nothing else", function()
        assert.equal("last", contract().reask_history)
        assert.equal("all", contract { reask_history = "all" }.reask_history)
        assert.has_error(function() contract { reask_history = "some" } end,
            "contract field 'reask_history' must be \"last\" or \"all\"")
    end)
    local function asked(c)
        local sent = {}
        local replies = { '{"topic":"sports","tags":[]}', '{"topic":"ai","tags":["A"]}', '{"topic":"ai","tags":["a"]}' }
        local out = jc.ask(c, "A post.", { provider = "openai", model = "m", base_url = "http://127.0.0.1:9",
            sleep = function() end, transport = function(req)
                sent[#sent + 1] = cjson.decode(req.body)
                return { status = 200, headers = {}, body = core.encode {
                    choices = setmetatable({ { index = 0, finish_reason = "stop",
                        message = { role = "assistant", content = replies[#sent] } } }, core.array_mt),
                    usage = { prompt_tokens = 10, completion_tokens = 5 } } }
            end })
        return out, sent
    end
    it("\"last\": the third request carries the input, the second reply and its errors only", function()
        local out, sent = asked(contract())
        assert.equal("accepted", out.status)
        assert.equal(3, #sent)
        local m = sent[3].messages
        assert.equal(4, #m)
        assert.same({ "system", "user", "assistant", "user" }, { m[1].role, m[2].role, m[3].role, m[4].role })
        assert.equal('{"topic":"ai","tags":["A"]}', m[3].content)
        assert.truthy(m[4].content:find("/tags/0", 1, true))
        assert.falsy(m[4].content:find("sports", 1, true))
    end)
    it("\"all\": the third request carries both earlier attempts and their errors", function()
        local out, sent = asked(contract { reask_history = "all" })
        assert.equal("accepted", out.status)
        local m = sent[3].messages
        assert.equal(6, #m)
        assert.equal('{"topic":"sports","tags":[]}', m[3].content)
        assert.equal('{"topic":"ai","tags":["A"]}', m[5].content)
    end)
end)

describe("the stand-in's input tokens", function()
    local schema = contract().schema
    it("count the schema sent natively, where a real model meets it", function()
        local req = wire.from_openai { messages = { { role = "system", content = "Tag it." },
            { role = "user", content = "A post." } },
            response_format = { type = "json_schema", json_schema = { name = "t", schema = schema } } }
        local text_only = stext.tokens("Tag it. A post.")
        assert.equal(text_only + stext.cutoff_tokens(cjson.encode(schema)), wire.input_tokens(req))
    end)
    it("count the prompt alone when no schema is sent", function()
        local req = wire.from_openai { messages = { { role = "system", content = "Tag it." },
            { role = "user", content = "A post." } } }
        assert.equal(stext.tokens("Tag it. A post."), wire.input_tokens(req))
    end)
end)

describe("llama-server's grammar mode", function()
    local p = require "jsoncontract.providers.llamacpp"
    local c = contract()
    it("sends the contract compiled to GBNF in `grammar`, no response_format, and the full prompt", function()
        local req = p.build_request(c, { { role = "user", content = "A post." } }, { model = "m", mode = "grammar" })
        assert.equal("grammar", req.mode)
        local sys, body = system_of(req)
        assert.equal(c:prompt(), sys)
        assert.is_nil(body.response_format)
        assert.equal(require("jsoncontract.providers.gbnf").compile(c.schema), body.grammar)
        assert.truthy(body.grammar:find("^root ::= "))
    end)
    it("goes out in mode native when no grammar can be made", function()
        local none = jc.contract { name = "n", version = "1", instructions = "x.",
            schema = { type = "string", minLength = 5, maxLength = 2 } }
        local req = p.build_request(none, { { role = "user", content = "x" } }, { model = "m", mode = "grammar" })
        assert.are_not.equal("grammar", req.mode)
        assert.is_nil(cjson.decode(req.body).grammar)
    end)
    it("lint lists what the grammar leaves to the schema gate", function()
        local report = lint.lint(c, "llamacpp")
        local g = report[1].grammar
        assert.equal("grammar", g.mode)
        assert.is_true(g.bytes > 0)
        assert.same({ { "/properties/tags/uniqueItems", "uniqueItems", "wider" } },
            { { g.unexpressed[1].schema_pointer, g.unexpressed[1].keyword, g.unexpressed[1].action } })
        assert.equal(1, #g.unexpressed)
        assert.is_nil(lint.lint(c, "openai")[1].grammar)
    end)
end)

describe("the stand-in given only the last reply", function()
    local conversation = require "jsoncontract.standin.conversation"
    if #conversation.registered() == 0 then conversation.load_examples("examples") end
    it("answers as it would with the whole history, where its earlier replies differ", function()
        local compared = 0
        for line in io.lines("examples/mailbox.jsonl") do
            local mail = core.decode(line).text
            for seed = 1, 12 do
                local function ans(messages)
                    return conversation.answer({ messages = messages, system = "intent order_id urgent summary" },
                        { seed = seed })
                end
                local a1 = ans { { role = "user", content = mail } }
                local a2 = ans { { role = "user", content = mail }, { role = "assistant", content = a1.text or "" },
                    { role = "user", content = "fix it" } }
                if a1.text and a2.text and a1.text ~= a2.text then
                    local full = ans { { role = "user", content = mail }, { role = "assistant", content = a1.text },
                        { role = "user", content = "fix it" }, { role = "assistant", content = a2.text },
                        { role = "user", content = "fix it" } }
                    local last = ans { { role = "user", content = mail }, { role = "assistant", content = a2.text },
                        { role = "user", content = "fix it" } }
                    assert.equal(3, last.attempt)
                    assert.equal(full.text, last.text)
                    compared = compared + 1
                end
            end
        end
        assert.is_true(compared >= 5, "compared " .. compared)
    end)
end)
