-- Specs for the stand-in model (jsoncontract.standin.model) and its HTTP server
-- (jsoncontract.standin.server via bin/jsoncontract-standin).
local cjson = require "cjson"
local model = require "jsoncontract.standin.model"

local SHARED = os.getenv("JC_SHARED") or "../shared"
local EMAILS = SHARED .. "/corpora/support-emails/emails.jsonl"

local TICKET_SCHEMA = {
    type = "object",
    properties = {
        intent = { type = "string", enum = { "delivery", "return", "payment", "other" } },
        order_id = { type = { "string", "null" } },
        urgent = { type = "boolean" },
        summary = { type = "string" },
    },
    required = { "intent", "order_id", "urgent", "summary" },
    additionalProperties = false,
}

local MAIL_1042 = "Hello, my order 1042: the courier did not come, urgent, I leave tomorrow."
local MAIL_1187 = "Hi, I want to return the jacket from order 1187, it is too big."

-- A conversation: the mail, then (answer, feedback) pairs.
local function convo(mail, ...)
    local messages = { { role = "user", content = mail } }
    for _, text in ipairs({ ... }) do
        messages[#messages + 1] = { role = "assistant", content = text }
        messages[#messages + 1] = { role = "user", content = "the answer does not match the schema: "
            .. "/intent \"Lieferung\" is not one of delivery, return, payment, other; return only JSON by the schema" }
    end
    return { system = "Return JSON with intent, order_id, urgent, summary.", messages = messages,
        schema = TICKET_SCHEMA }
end

local function load_emails()
    local f = io.open(EMAILS, "r")
    if not f then return nil end
    local out = {}
    for line in f:lines() do out[#out + 1] = cjson.decode(line) end
    f:close()
    return out
end

describe("jsoncontract.standin.model", function()
    describe("answer() scripted cases", function()
        it("answers the 1042 mail with Lieferung/ja first, then the valid ticket", function()
            local a1 = model.answer(convo(MAIL_1042), { seed = 1 })
            assert.equal(1, a1.attempt)
            assert.equal("invalid", a1.kind)
            local v1 = cjson.decode(a1.text)
            assert.equal("Lieferung", v1.intent)
            assert.equal("1042", v1.order_id)
            assert.equal("ja", v1.urgent)
            assert.equal("string", type(v1.summary))
            local a2 = model.answer(convo(MAIL_1042, a1.text), { seed = 1 })
            assert.equal(2, a2.attempt)
            assert.equal("json", a2.kind)
            local v2 = cjson.decode(a2.text)
            assert.same({ "delivery", "1042", true }, { v2.intent, v2.order_id, v2.urgent })
        end)

        it("answers the 1187 mail correctly at attempt 1 for every seed", function()
            for seed = 1, 20 do
                local a = model.answer(convo(MAIL_1187), { seed = seed })
                assert.equal("json", a.kind)
                local v = cjson.decode(a.text)
                assert.same({ "return", "1187", false }, { v.intent, v.order_id, v.urgent })
            end
        end)

        it("asks for more about a mail with nothing to classify, every attempt", function()
            for _, mail in ipairs({ "hallo, irgendwas stimmt nicht", "hello, something is wrong" }) do
                local a1 = model.answer(convo(mail), { seed = 5 })
                local a3 = model.answer(convo(mail, a1.text, a1.text), { seed = 5 })
                assert.same({ "prose", model.ASK_MORE_TEXT }, { a1.kind, a1.text })
                assert.same({ "prose", model.ASK_MORE_TEXT, 3 }, { a3.kind, a3.text, a3.attempt })
            end
        end)

        it("refuses on [[refuse]] and cuts the object on [[truncate]]", function()
            local r = model.answer(convo("[[refuse]] order 5555 where is it"), { seed = 1 })
            assert.same({ "refusal" }, { r.kind, r.text })
            local t = model.answer(convo("[[truncate]] order 5555 where is it"), { seed = 1 })
            assert.equal("truncated", t.kind)
            assert.equal("{", t.text:sub(1, 1))
            assert.is_false(pcall(cjson.decode, t.text))
        end)

        it("cuts an answer that exceeds max_tokens and calls it truncated", function()
            local req = convo(MAIL_1187)
            req.max_tokens = 5
            local a = model.answer(req, { seed = 1 })
            assert.equal("truncated", a.kind)
            assert.is_true(model.tokens(a.text) <= 5)
        end)

        it("answers another schema with a minimal valid instance", function()
            local a = model.answer({
                messages = { { role = "user", content = "Extract: 2 Green Tea" } },
                schema = { type = "object", required = { "name", "qty", "tags", "kind" },
                    properties = { name = { type = "string" }, qty = { type = "integer", minimum = 1 },
                        tags = { type = "array" }, kind = { enum = { "a", "b" } } } },
            })
            assert.equal('{"name":"","qty":1,"tags":[],"kind":"a"}', a.text)
        end)
    end)

    describe("extraction", function()
        local cases = {
            { "order word", "Where is my Bestellung 48213? Paket fehlt", "48213", "delivery" },
            { "hash", "I was charged twice, see #55120", "55120", "payment" },
            { "model number skipped", "My Dell XPS 13 9310 screen flickers, order number is 93051.", "93051",
                "other" },
            { "no digits", "Quiero devolver mi pedido, por favor", nil, "return" },
            { "year and amount skipped", "Since 2023 you bill me $1200 each month", nil, "payment" },
        }
        for _, c in ipairs(cases) do
            it("reads " .. c[1], function()
                assert.equal(c[3], model.order_id_of(c[2]))
                assert.equal(c[4], model.intent_of(c[2]))
            end)
        end
        it("estimates tokens as words x 1.3 rounded up", function()
            assert.same({ 0, 2, 4, 13 }, { model.tokens(""), model.tokens("one"), model.tokens("a b c"),
                model.tokens("1 2 3 4 5 6 7 8 9 10") })
        end)
    end)

    describe("answer() over the support-mail corpus", function()
        local emails = load_emails()

        local function run(seed)
            local kinds, texts = {}, {}
            for i, r in ipairs(emails) do
                local a = model.answer(convo(r.text), { seed = seed })
                local k = a.fault or "clean"
                kinds[k] = (kinds[k] or 0) + 1
                texts[i] = a
            end
            return kinds, texts
        end

        it("gives every fault at least once and clean JSON to the majority", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local kinds = run(1)
            for _, f in ipairs(model.FAULTS) do
                assert.is_true((kinds[f] or 0) >= 1, "fault never seen: " .. f)
            end
            assert.is_true(kinds.clean > #emails / 2)
        end)

        it("is deterministic for a seed and differs between seeds", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local _, a = run(1)
            local _, b = run(1)
            local _, c = run(2)
            local differ = 0
            for i = 1, #a do
                assert.equal(a[i].text, b[i].text)
                if a[i].text ~= c[i].text then differ = differ + 1 end
            end
            assert.is_true(differ > 0)
        end)

        it("never invents an order_id for a mail without digits", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local _, answers = run(1)
            local checked = 0
            for i, r in ipairs(emails) do
                if not r.text:find("%d") and answers[i].kind == "json" then
                    assert.equal(cjson.null, cjson.decode(answers[i].text).order_id)
                    checked = checked + 1
                end
            end
            assert.is_true(checked > 100)
        end)

        it("mostly fixes its answer after feedback", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local retried, fixed = 0, 0
            for _, r in ipairs(emails) do
                local a1 = model.answer(convo(r.text), { seed = 1 })
                if a1.kind == "invalid" or a1.kind == "fenced" then
                    retried = retried + 1
                    local a2 = model.answer(convo(r.text, a1.text), { seed = 1 })
                    if a2.kind == "json" then fixed = fixed + 1 end
                end
            end
            assert.is_true(retried > 20)
            assert.is_true(fixed > retried / 2 and fixed < retried)
        end)
    end)
end)

describe("jsoncontract.standin.server", function()
    local http = require "socket.http"
    local ltn12 = require "ltn12"
    local lua = os.getenv("JC_TEST_LUA") or "lua5.4"
    local proc, base

    local function request(method, path, body, headers)
        local chunks = {}
        headers = headers or {}
        if body then headers["content-length"] = tostring(#body) end
        headers["content-type"] = "application/json"
        local _, code = http.request {
            url = base .. path, method = method, headers = headers,
            source = body and ltn12.source.string(body) or nil, sink = ltn12.sink.table(chunks),
        }
        return code, table.concat(chunks)
    end

    setup(function()
        proc = io.popen(lua .. " bin/jsoncontract-standin --port 0 --seed 1 --max-seconds 60", "r")
        local line = proc:read("*l")
        local port = line and line:match("^listening 127%.0%.0%.1:(%d+)$")
        assert(port, "server did not report its port: " .. tostring(line))
        base = "http://127.0.0.1:" .. port
    end)

    teardown(function()
        if base then pcall(request, "POST", "/shutdown", "") end
        if proc then proc:close() end
    end)

    it("answers GET /health", function()
        local code, body = request("GET", "/health")
        assert.same({ 200, { ok = true } }, { code, cjson.decode(body) })
    end)

    it("answers Chat Completions with an OpenAI envelope", function()
        local code, body = request("POST", "/v1/chat/completions", cjson.encode({
            model = "gpt-test", max_completion_tokens = 500,
            messages = { { role = "system", content = "Return the ticket as JSON." },
                { role = "user", content = MAIL_1042 } },
            response_format = { type = "json_schema", json_schema = { name = "ticket", strict = true,
                schema = TICKET_SCHEMA } },
        }), { authorization = "Bearer sk-test" })
        assert.equal(200, code)
        local env = cjson.decode(body)
        assert.same({ "chat.completion", "gpt-test", 0, "assistant", "stop", cjson.null },
            { env.object, env.model, env.choices[1].index, env.choices[1].message.role,
                env.choices[1].finish_reason, env.choices[1].message.refusal })
        assert.equal("Lieferung", cjson.decode(env.choices[1].message.content).intent)
        assert.equal(model.tokens("Return the ticket as JSON. " .. MAIL_1042), env.usage.prompt_tokens)
        assert.equal(env.usage.prompt_tokens + env.usage.completion_tokens, env.usage.total_tokens)
    end)

    it("answers Messages with an Anthropic envelope, and a refusal", function()
        local code, body = request("POST", "/v1/messages", cjson.encode({
            model = "claude-test", max_tokens = 500, system = "Return the ticket as JSON.",
            messages = { { role = "user", content = MAIL_1187 } },
            output_config = { format = { type = "json_schema", schema = TICKET_SCHEMA } },
        }), { ["x-api-key"] = "test" })
        assert.equal(200, code)
        local env = cjson.decode(body)
        assert.same({ "message", "assistant", "end_turn", cjson.null, "text" },
            { env.type, env.role, env.stop_reason, env.stop_sequence, env.content[1].type })
        assert.equal("1187", cjson.decode(env.content[1].text).order_id)
        assert.equal("number", type(env.usage.input_tokens))

        code, body = request("POST", "/v1/messages", cjson.encode({
            model = "claude-test", max_tokens = 500, messages = { { role = "user", content = "[[refuse]] x" } },
        }))
        assert.equal(200, code)
        assert.is_truthy(body:find('"content":[]', 1, true))
        assert.equal("refusal", cjson.decode(body).stop_reason)
    end)

    it("reports truncation as finish_reason length", function()
        local _, body = request("POST", "/v1/chat/completions", cjson.encode({
            messages = { { role = "user", content = "[[truncate]] where is order 5555" } },
            response_format = { type = "json_schema", json_schema = { name = "t", schema = TICKET_SCHEMA } },
        }))
        assert.equal("length", cjson.decode(body).choices[1].finish_reason)
    end)

    it("returns 404 for a wrong path and 400 for a bad JSON body", function()
        local code, body = request("POST", "/v1/nothing", "{}")
        assert.equal(404, code)
        assert.equal("string", type(cjson.decode(body).error.message))
        code, body = request("POST", "/v1/chat/completions", "{not json")
        assert.same({ 400, "invalid_request_error" }, { code, cjson.decode(body).error.type })
        code, body = request("POST", "/v1/messages", "[1,")
        assert.same({ 400, "error", "invalid_request_error" },
            { code, cjson.decode(body).type, cjson.decode(body).error.type })
    end)

    it("serves other clients while one request is half sent, and survives its disconnect", function()
        local socket = require "socket"
        local port = tonumber(base:match(":(%d+)$"))
        local slow = assert(socket.connect("127.0.0.1", port))
        finally(function() slow:close() end)
        assert(slow:send("POST /v1/messages HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"mess"))
        local code, body = request("GET", "/health")
        assert.same({ 200, '{"ok":true}' }, { code, body })
        slow:close()
        assert.equal(200, (request("GET", "/health")))
    end)

    it("answers 431 to headers over 64 KB", function()
        local code = request("GET", "/health", nil, { ["x-big"] = string.rep("a", 70000) })
        assert.equal(431, code)
    end)

    it("rejects a chunked body with 411", function()
        local code = request("POST", "/v1/messages", nil, { ["transfer-encoding"] = "chunked" })
        assert.equal(411, code)
        assert.equal(200, (request("GET", "/health")))
    end)
end)
