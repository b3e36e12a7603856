--- `jsoncontract selftest`: offline checks of the whole chain, one line each, then a count.
-- Needs no network and no busted; starts the fault server (`jsoncontract.standin.faults`) on
-- 127.0.0.1 for the transport faults. Exit 0 when every check passes.
-- @module jsoncontract.cli.selftest
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local util = require "jsoncontract.cli.util"

local format = string.format

-- A transport answering from a list of contents, one per call (the last repeats); an entry is
-- a content string or `{content, finish_reason, refusal}`.
local function scripted(list)
    local i = 0
    return function()
        i = i + 1
        local a = list[math.min(i, #list)]
        if type(a) == "string" then a = { a } end
        return { status = 200, headers = { ["content-type"] = "application/json" },
            body = util.openai_envelope(a[1], a[2], a[3]) }
    end
end

-- The checks, as a list of {name, function}; `env.root` holds examples/.
local function offline_checks(env, check)
    local root = env.root
    local jc = require "jsoncontract"
    local diff = require "jsoncontract.contract.diff"
    local feedback = require "jsoncontract.feedback"
    local openai = require "jsoncontract.providers.openai"
    local function ex(name) return dofile(root .. "/examples/" .. name .. ".lua") end
    local function expect(cond, detail) if not cond then error(detail or "expectation failed", 0) end end
    local function fails_as(category, kind, v, err)
        expect(v == nil, "accepted")
        expect(err.category == category and (kind == nil or err.kind == kind),
            "got " .. tostring(err.category) .. "/" .. tostring(err.kind))
    end
    local ticket = ex("support_ticket")
    -- the support ticket's rules read its job context (the shop's orders), opened when first needed
    local ticket_ctx
    local function ask(contract, input, transport, extra)
        local opts = { provider = "openai", model = "selftest-1", base_url = "http://127.0.0.1:9",
            transport = transport, sleep = function() end }
        if contract == ticket.contract then
            ticket_ctx = ticket_ctx or ticket.context {}
            opts.context = ticket_ctx
        end
        for k, v in pairs(extra or {}) do opts[k] = v end
        return jc.ask(contract, input, opts)
    end
    local GOOD = '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"Courier did not come."}'

    -- format gate
    check("decode: one JSON object", function()
        local v = jc.decode('{"a":[1,2.5,"x",true,null]}')
        expect(type(v) == "table" and v.a[5] == jc.null)
    end)
    check("decode: a second value after the first is trailing_content", function()
        fails_as("format", "trailing_content", jc.decode('{"a":1}{"a":2}'))
    end)
    check("decode: a duplicate key is rejected", function()
        fails_as("format", "duplicate_key", jc.decode('{"a":1,"a":2}'))
    end)
    check("decode: invalid UTF-8 is rejected", function()
        fails_as("format", "invalid_utf8", jc.decode('"\255"'))
    end)
    check("decode: prose is not JSON, at offset 0", function()
        local v, err = jc.decode("Sure! Here is the data:")
        fails_as("format", "unexpected_character", v, err)
        expect(err.offset == 0, "offset " .. tostring(err.offset))
    end)
    check("decode: an unescaped control character in a string is rejected", function()
        fails_as("format", "control_character", jc.decode('"a\1b"'))
    end)
    check("decode: 12 stays a number and \"12\" a string", function()
        local v = jc.decode('[12,"12"]')
        expect(type(v[1]) == "number" and type(v[2]) == "string")
    end)
    -- schema gate
    check("examples: all four load, each with a name and a version", function()
        for _, name in ipairs { "support_ticket", "ticket_priority", "leave_request", "blog_category" } do
            local c = ex(name).contract
            expect(c.name == name and c.version:match("^%d+%.%d+%.%d+$"), name)
        end
    end)
    check("schema: a valid SEEDS §1 answer is accepted (rules with the job's orders table)", function()
        ticket_ctx = ticket_ctx or ticket.context {}
        expect(ticket.contract:check(GOOD, { context = ticket_ctx }) ~= nil)
    end)
    check("schema: 'Lieferung' and 'ja' give enum then type", function()
        local _, err = ticket.contract:check('{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"x"}')
        expect(err and err.errors[1].keyword == "enum" and err.errors[2].keyword == "type")
    end)
    check("schema: a missing field and an extra field", function()
        local _, err = ticket.contract:check('{"intent":"return","urgent":false,"summary":"x","mood":"ruhig"}')
        expect(err and err.errors[1].keyword == "required" and err.errors[2].pointer == "/mood")
    end)
    check("schema: 12 is not \"12\"", function()
        local _, err = ex("blog_category").contract:check('{"category":"llm","tags":[12]}')
        expect(err and err.errors[1].keyword == "type")
    end)
    check("schema: an impossible calendar date", function()
        local _, err = ex("leave_request").contract:check(
            '{"status":"complete","start_date":"2027-02-30","end_date":"2027-03-01","clarification_question":null}')
        expect(err and err.errors[1].keyword == "format")
    end)
    check("contract: a custom message ('does not have 4 digits')", function()
        local _, err = ticket.contract_4digits:check(
            '{"intent":"other","order_id":"10420","urgent":false,"summary":"x"}')
        expect(err and err.errors[1].message == '/order_id "10420" does not have 4 digits')
    end)
    -- rules gate
    check("rules: a reversed date range goes to a person", function()
        local v, err = ex("leave_request").contract:check(
            '{"status":"complete","start_date":"2027-06-12","end_date":"2027-06-10","clarification_question":null}')
        fails_as("rules", "rule_failed", v, err)
        expect(err.retry == false)
    end)
    -- adapters
    local FENCED = '\n\n```json\n{"category":"ai-apps","tags":["LLM應用","API集成","多輪對話"]}\n```'
    check("adapter: the fenced reply is rejected strictly", function()
        fails_as("format", "unexpected_character", ex("blog_category").contract:check(FENCED))
    end)
    check("adapter: unwrap-one-json-fence accepts it and is recorded", function()
        local v, report = ex("blog_category").contract:check(FENCED, { adapters = { "unwrap-one-json-fence" } })
        expect(v and report.adapters[1] == "unwrap-one-json-fence")
    end)
    check("adapter: text before the fence is still rejected", function()
        fails_as("format", "adapter_rejected",
            ex("blog_category").contract:check("Here:" .. FENCED, { adapters = { "unwrap-one-json-fence" } }))
    end)
    -- protocol gate
    check("protocol: a refusal is refused, not a format error", function()
        fails_as("refused", nil, openai.read_response(200, {}, util.openai_envelope(nil, "stop", "I can't help.")))
    end)
    check("protocol: finish_reason length is truncated even with whole JSON", function()
        fails_as("truncated", nil, openai.read_response(200, {}, util.openai_envelope(GOOD, "length")))
    end)
    -- the attempt loop
    check("ask: a bad answer is repaired at attempt 2", function()
        local out = ask(ticket.contract, "order 1042", scripted {
            '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"x"}', GOOD })
        expect(out.status == "accepted" and #out.attempts == 2, out.status .. " after " .. #out.attempts)
    end)
    check("ask: prose three times goes to a person", function()
        local out = ask(ticket.contract, "hello, something is wrong", scripted { "Could you tell me more?" })
        expect(out.status == "human_review" and #out.attempts == 3)
    end)
    check("ask: the 100-token budget stops retrying early", function()
        local out = ask(ticket.contract_all_history, "hello, something is wrong",
            scripted { "Sure! I am happy to help. Could you tell me more about the problem?" },
            { policy = ticket.policy })
        expect(out.reason.kind == "token_budget" and #out.attempts == 2, tostring(out.reason.kind) .. " after " ..
            #out.attempts)
    end)
    check("ask: a refusal is never retried", function()
        local n = 0
        local send = scripted { { nil, "stop", "No." } }
        local out = ask(ticket.contract, "x", function(r) n = n + 1 return send(r) end)
        expect(out.reason.category == "refused" and n == 1)
    end)
    check("ask: a reply cut at max tokens is never retried nor accepted", function()
        local n = 0
        local send = scripted { { GOOD, "length" } }
        local out = ask(ticket.contract, "x", function(r) n = n + 1 return send(r) end)
        expect(out.status == "human_review" and out.reason.category == "truncated" and n == 1)
    end)
    check("metrics: needing clarification is counted apart", function()
        local lr = ex("leave_request")
        local out = ask(lr.contract, "Ich brauche am Freitag frei.", scripted {
            '{"status":"needs_clarification","start_date":null,"end_date":null,"clarification_question":"Welcher?"}' })
        local typed = lr.result(out)
        local m = evidence.metrics()
        m:observe_outcome(out)
        expect(typed.kind == "needs_clarification" and m:summary().needs_clarification == 1)
    end)
    check("evidence: the key never reaches a record, text only on opt-in", function()
        local log = evidence.memory()
        local key = "sk-selftest-0123456789abcdef"
        ask(ticket.contract, "order 1042", scripted { GOOD }, { evidence = log, api_key = key })
        expect(#log.lines == 1 and not log.lines[1]:find(key, 1, true) and not log.lines[1]:find("Courier", 1, true))
    end)
    check("evidence: the contract version is in every record and outcome", function()
        local log = evidence.memory()
        local out = ask(ticket.contract, "order 1042", scripted { GOOD }, { evidence = log })
        expect(core.decode(log.lines[1]).contract.version == "1.0.0" and out.contract.version == "1.0.0")
    end)
    check("messages: the user sees a plain message without internals", function()
        local out = ask(ticket.contract, "hello", scripted { "prose" })
        local m = feedback.user_message(out)
        expect(m == "The answer could not be processed right now. Please try again.", m)
    end)
    check("diff: a tightened order_id pattern is breaking", function()
        local _, breaking = diff.diff(ticket.contract.schema, ticket.contract_4digits.schema)
        expect(breaking == true)
    end)
    check("diff: a new optional field is compatible", function()
        local new = jc.decode(jc.encode(ticket.schema))
        new.properties.lang = { type = "string" }
        local _, breaking = diff.diff(ticket.schema, new)
        expect(breaking == false)
    end)

    return ask
end

-- The transport checks against the fault server at `base` (nil when it did not start).
local function http_checks(check, ask, get_base)
    local jc = require "jsoncontract"
    local curl = require "jsoncontract.transport.curl"
    -- The fault server's /f/<id>/ok answers an OpenAI envelope whose content is {"label":"bug"}.
    local label = jc.contract { name = "label", version = "1.0.0", instructions = "Label the report.",
        schema = { type = "object", properties = { label = { enum = { "bug", "feature" } } },
            required = { "label" }, additionalProperties = false } }
    local function http_check(name, fn)
        check(name, function()
            local base = get_base()
            if not base then error("the local fault server did not start", 0) end
            fn(base)
        end)
    end
    local function expect(cond, detail) if not cond then error(detail or "expectation failed", 0) end end
    local function http_ask(url)
        return ask(label, "the app crashes", nil, { base_url = url, policy = { transport_retries = 0 },
            transport = curl.request, timeout_ms = 5000 })
    end
    http_check("http: a 200 reply runs the whole chain to accepted", function(base)
        local out = http_ask(base .. "/f/selftest-ok/ok")
        expect(out.status == "accepted" and out.value.label == "bug", out.status)
    end)
    http_check("http: the API key stays out of the evidence of a real exchange", function(base)
        local log = evidence.memory()
        local key = "sk-selftest-http-0123456789"
        local out = ask(label, "the app crashes", nil, { base_url = base .. "/f/selftest-key/ok", api_key = key,
            evidence = log, transport = curl.request, timeout_ms = 5000 })
        expect(out.status == "accepted" and #log.lines == 1 and not log.lines[1]:find(key, 1, true))
    end)
    http_check("http: HTTP 500 is a transport server_error, no crash", function(base)
        local out = http_ask(base .. "/f/selftest-500/s500")
        expect(out.reason.category == "transport" and out.reason.kind == "server_error", tostring(out.reason))
    end)
    http_check("http: a redirect is not followed", function(base)
        local out = http_ask(base .. "/f/selftest-redirect/redirect")
        expect(out.reason.category == "transport" and out.reason.kind == "redirect", tostring(out.reason))
    end)
    http_check("http: an invalid (HTML) body is a protocol error", function(base)
        local out = http_ask(base .. "/f/selftest-html/html")
        expect(out.reason.category == "protocol" and out.reason.kind == "invalid_envelope", tostring(out.reason))
    end)
    http_check("http: a read timeout (no byte for 300 ms) is a transport timeout", function(base)
        local res, err = curl.request { url = base .. "/delay?ms=1500", method = "GET",
            read_timeout_ms = 300, timeout_ms = 10000 }
        expect(res == nil and err.category == "transport" and err.kind == "timeout", tostring(err))
    end)
end

local function run_selftest(_, env)
    local out = env.stdout
    local checks = {}
    local function check(name, fn) checks[#checks + 1] = { name, fn } end
    local ask = offline_checks(env, check)
    local base
    http_checks(check, ask, function() return base end)

    -- start the fault server, run every check, stop the server
    local server, port = util.start_helper(env.bindir .. "/jsoncontract", "_fault-server 60", "^PORT (%d+)")
    if server then base = "http://127.0.0.1:" .. port end
    local passed, failed = 0, 0
    for i, c in ipairs(checks) do
        local ok, msg = pcall(c[2])
        if ok then
            passed = passed + 1
            out:write(format("ok %d - %s\n", i, c[1]))
        else
            failed = failed + 1
            out:write(format("FAIL %d - %s: %s\n", i, c[1], tostring(msg)))
        end
    end
    if server then
        require("jsoncontract.transport.curl").request { url = base .. "/quit", method = "GET", timeout_ms = 5000 }
        server:close()
    end
    out:write(format("%d checks: %d ok, %d failed\n", #checks, passed, failed))
    return failed == 0 and 0 or 1
end

return {
    name = "selftest",
    summary = "Offline checks of the whole chain, HTTP faults included (a local server); exit 0 when all pass.",
    configure = function() end,
    run = run_selftest,
}
