-- The attempt loop, driven through the real OpenAI provider and every gate by a recorded
-- fake model (support-mail runs), plus refusal, truncation, transport retries,
-- budgets and evidence.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local fake = require "support.fake_model"
local util = require "support.util"
local now = require("jsoncontract.compat").now

local ticket = dofile("examples/support_ticket.lua")
local KEY = "sk-SENTINEL-never-in-output-0123456789"
-- what its rules read (the shipped orders table, in memory), as a job opens it
local CTX = assert(ticket.context {})

local function ask(mail, fake_opts, opts, contract)
    local send, calls = fake.transport(fake_opts)
    opts = opts or {}
    opts.provider = opts.provider or "openai"
    opts.model = opts.model or "fake-1"
    opts.api_key = opts.api_key or KEY
    opts.base_url = "http://127.0.0.1:9"
    opts.transport = send
    opts.sleep = opts.sleep or function() end
    if opts.context == nil then opts.context = CTX end
    local log = opts.evidence or evidence.memory()
    opts.evidence = log
    return jc.ask(contract or ticket.contract, mail, opts), calls, log
end

describe("jsoncontract.run", function()
    describe("ask() on the seed mails", function()
        it("rejects order 1042's first answer with both errors named and accepts attempt 2", function()
            local out, calls = ask("the courier did not come for order 1042, urgent, I leave tomorrow")
            assert.equal("accepted", out.status)
            assert.equal(2, #out.attempts)
            local a1 = out.attempts[1]
            assert.equal("schema", a1.gate)
            assert.equal(2, #a1.errors)
            assert.same({ "/intent", "enum" }, { a1.errors[1].pointer, a1.errors[1].keyword })
            assert.same({ "/urgent", "type" }, { a1.errors[2].pointer, a1.errors[2].keyword })
            assert.equal("delivery", out.value.intent)
            assert.equal("1042", out.value.order_id)
            assert.is_true(out.value.urgent)
            -- attempt 2 resends the history: the model's answer, then one feedback message
            local msgs = calls[2].body.messages
            assert.equal(4, #msgs)
            assert.equal("assistant", msgs[3].role)
            assert.equal(fake.ANSWERS["1042"][1], msgs[3].content)
            assert.equal("user", msgs[4].role)
            assert.truthy(msgs[4].content:find('/intent "Lieferung" is not one of', 1, true))
            assert.truthy(msgs[4].content:find("/urgent is string, expected boolean", 1, true))
            assert.equal(200, out.usage.input_tokens)
            assert.equal(40, out.usage.output_tokens)
        end)

        it("with as_json gives the accepted JSON text as outcome.json, after the same re-ask", function()
            local out = ask("the courier did not come for order 1042, urgent, I leave tomorrow", nil,
                { as_json = true })
            assert.equal("accepted", out.status)
            assert.equal(2, #out.attempts)
            assert.equal("schema", out.attempts[1].gate)
            assert.is_nil(out.value)
            assert.equal(fake.ANSWERS["1042"][2], out.json)
            local plain = ask("the courier did not come for order 1042, urgent, I leave tomorrow")
            assert.same(plain.value, jc.decode(out.json))
            assert.is_nil(plain.json)
        end)

        it("raises when as_json is not a boolean", function()
            assert.has_error(function() ask("order 1187", nil, { as_json = "yes" }) end,
                "ask: opts.as_json must be a boolean, got string")
        end)

        it("accepts order 1187 at attempt 1", function()
            local out = ask("I want to return the jacket from order 1187, too big")
            assert.equal("accepted", out.status)
            assert.equal(1, #out.attempts)
            assert.equal("return", out.value.intent)
            assert.equal("1187", out.value.order_id)
            assert.is_false(out.value.urgent)
        end)

        it("sends 'hallo, irgendwas stimmt nicht' to a person after three prose answers", function()
            local out, calls = ask("hallo, irgendwas stimmt nicht")
            assert.equal("human_review", out.status)
            assert.equal(3, #out.attempts)
            assert.equal(3, #calls)
            assert.equal("format", out.reason.category)
            assert.is_true(out.reason.attempts_exhausted)
            assert.is_nil(out.value)
            for _, a in ipairs(out.attempts) do assert.equal("format", a.gate) end
        end)

        it("stops before three attempts when the history exceeds the token budget", function()
            local out = ask("hello, something is wrong", nil, { policy = { token_budget = 100 } },
                ticket.contract_all_history)
            assert.equal("human_review", out.status)
            assert.equal("budget", out.reason.category)
            assert.equal("token_budget", out.reason.kind)
            assert.equal(2, #out.attempts)
        end)
    end)

    describe("ask() on protocol failures", function()
        it("never retries a refusal", function()
            local out, calls = ask("order 5555 please", { script = { ["5555"] = { { nil, "stop", "I can't help with that." } } } })
            assert.equal("human_review", out.status)
            assert.equal(1, #calls)
            assert.equal("refused", out.reason.category)
            assert.equal("protocol", out.attempts[1].gate)
        end)

        it("never accepts a reply cut at max tokens, even when its JSON looks whole", function()
            local whole = '{"intent":"other","order_id":null,"urgent":false,"summary":"x"}'
            local out, calls = ask("order 5556", { script = { ["5556"] = { { whole, "length" } } } })
            assert.equal("human_review", out.status)
            assert.equal(1, #calls)
            assert.equal("truncated", out.reason.category)
            assert.equal(20, out.usage.output_tokens)
        end)
    end)

    describe("ask() with reask_on_truncation", function()
        it("asks once more with twice the output budget, never reusing the cut reply", function()
            local cut = '{"intent":"other","order_id":null,"urg'
            local whole = '{"intent":"other","order_id":null,"urgent":false,"summary":"x"}'
            local out, calls = ask("order 5557", { by_call = true, script = { ["5557"] = { { cut, "length" }, { whole } } } },
                { max_tokens = 100, policy = { reask_on_truncation = true } })
            assert.equal("accepted", out.status)
            assert.equal(2, #calls)
            assert.equal(100, calls[1].body.max_completion_tokens)
            assert.equal(200, calls[2].body.max_completion_tokens)
            -- the same conversation: no assistant message, no repair prompt
            assert.equal(#calls[1].body.messages, #calls[2].body.messages)
            assert.equal("truncated", out.attempts[1].category)
        end)

        it("re-asks at most once", function()
            local cut = '{"intent":"other"'
            local out, calls = ask("order 5558", { script = { ["5558"] = { { cut, "length" } } } },
                { policy = { reask_on_truncation = true } })
            assert.equal("human_review", out.status)
            assert.equal(2, #calls)
            assert.equal("truncated", out.reason.category)
        end)
    end)

    describe("ask() on transport failures", function()
        it("retries a 429 after its Retry-After and then accepts", function()
            local waits = {}
            local out, calls = ask("order 1187 return", {
                fail_first = { { status = 429, headers = { ["retry-after"] = "2" },
                    body = '{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}' } },
            }, { sleep = function(s) waits[#waits + 1] = s end })
            assert.equal("accepted", out.status)
            assert.equal(2, #calls)
            assert.same({ 2 }, waits)
            assert.equal(1, #out.attempts)
            assert.equal(2, out.attempts[1].tries)
        end)

        it("sends a connection failure to review after the retries, never crashing", function()
            local refused = core.error { category = "transport", kind = "connect", message = "connection refused" }
            local out, calls = ask("order 1187", { fail_first = { { err = refused }, { err = refused }, { err = refused } } })
            assert.equal("human_review", out.status)
            assert.equal(3, #calls)
            assert.equal("transport", out.reason.category)
            assert.equal("connect", out.reason.kind)
        end)

        it("does not retry 429 insufficient_quota", function()
            local out, calls = ask("order 1187", { fail_first = { { status = 429,
                body = '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}' } } })
            assert.equal("human_review", out.status)
            assert.equal(1, #calls)
            assert.equal("quota_exceeded", out.reason.kind)
        end)
    end)

    describe("ask() with policy.time_budget_ms bounds the try in flight", function()
        -- A transport that records the timeout_ms each try was given (the request table is
        -- reused across tries, so it is read at call time) and answers with `reply(try)`.
        local function recording(reply)
            local seen = {}
            return function(req)
                seen[#seen + 1] = req.timeout_ms == nil and "none" or req.timeout_ms
                return reply(#seen)
            end, seen
        end
        local timeout = core.error { category = "transport", kind = "timeout", message = "timed out" }
        local function run(send, opts)
            opts.provider, opts.model, opts.base_url, opts.transport = "openai", "fake-1", "http://127.0.0.1:9", send
            opts.sleep = opts.sleep or function() end
            return jc.ask(ticket.contract, "order 1187", opts)
        end

        it("gives the transport what the budget leaves when that is less than timeout_ms", function()
            -- (a budget of a minute: what it leaves at the first try is near all of it, however
            -- busy the machine; the fake transport answers at once)
            local send, seen = recording(function() return nil, timeout end)
            local out = run(send, { timeout_ms = 90000, policy = { time_budget_ms = 60000 } })
            assert.equal(1, #seen)
            assert.is_true(seen[1] <= 60000 and seen[1] > 30000, tostring(seen[1]))
            -- cut by the budget: the budget is the reason, and no try is retried
            assert.equal("human_review", out.status)
            assert.same({ "budget", "time_budget" }, { out.reason.category, out.reason.kind })
            assert.truthy(out.reason.message:find("budget 60000 ms; last: timed out", 1, true), out.reason.message)
            assert.same({ "transport", "timeout" }, { out.attempts[1].gate, out.attempts[1].kind })
        end)

        it("keeps the caller's timeout_ms, or the transport's default, when the budget leaves more", function()
            local ok = function() return nil, timeout end
            local send, seen = recording(ok)
            local out = run(send, { timeout_ms = 500, policy = { time_budget_ms = 60000, transport_retries = 0 } })
            assert.same({ 500 }, seen)
            assert.same({ "transport", "timeout" }, { out.reason.category, out.reason.kind })
            send, seen = recording(ok)
            run(send, { policy = { time_budget_ms = 200000, transport_retries = 0 } })
            assert.same({ "none" }, seen)
            send, seen = recording(ok)
            run(send, { timeout_ms = 0, policy = { time_budget_ms = 200000, transport_retries = 0 } })
            assert.is_true(seen[1] <= 200000 and seen[1] > 190000, tostring(seen[1]))
        end)

        it("gives a retry only what is left after the first try and the wait", function()
            local s503 = { status = 503, headers = {}, body = '{"error":{"message":"busy"}}' }
            local send, seen = recording(function(try)
                if try == 1 then return s503 end
                return nil, timeout
            end)
            -- (20 s: room for the 0.3 s wait and a busy machine's pauses, so a second try is due)
            local out = run(send, { policy = { time_budget_ms = 20000, backoff_base_ms = 300, backoff_max_ms = 300 },
                sleep = function() require("jsoncontract.compat").block(0.3) end })
            assert.equal(2, #seen)
            assert.is_true(seen[2] < seen[1] and seen[2] <= 19700, seen[1] .. " then " .. seen[2])
            assert.same({ "budget", "time_budget" }, { out.reason.category, out.reason.kind })
        end)

        it("cuts a real reply dripping from the fault server at the budget (libcurl)", function()
            local pipe, port = util.start_fault_server(60)
            local t0 = now()
            local out = jc.ask(ticket.contract, "order 1187", { provider = "openai", model = "fake-1",
                base_url = "http://127.0.0.1:" .. port .. "/f/budget/slow", timeout_ms = 30000,
                transport = require("jsoncontract.transport.curl").request,
                policy = { time_budget_ms = 1000 } })
            local took = now() - t0
            util.stop_fault_server(pipe, port)
            assert.same({ "budget", "time_budget" }, { out.reason.category, out.reason.kind })
            -- the drip takes a minute (and timeout_ms is 30 s): the item ends at the budget, not
            -- there (20 s: room for a busy machine)
            assert.is_true(took < 20, "took " .. took .. " s")
        end)
    end)

    describe("ask() keeps the key and the feedback in bounds", function()
        it("never returns the key when the provider echoes it in an error body", function()
            -- a key of no well-known shape, so only ask()'s own scrubbing can catch it
            local key = "plain_gateway_key"
            local body = '{"error":{"message":"Incorrect API key provided: ' .. key .. '","type":"invalid_request_error"}}'
            local out = ask("order 1187", { fail_first = { { status = 401, body = body } } }, { api_key = key })
            assert.equal("human_review", out.status)
            assert.equal("client_error", out.reason.kind)
            assert.truthy(out.reason.message:find("Incorrect API key provided: [redacted]", 1, true))
            assert.falsy(out.reason.message:find(key, 1, true))
            assert.falsy(out.attempts[1].message:find(key, 1, true))
        end)

        it("lists at most 20 errors in the feedback, then how many more", function()
            local list = {}
            for i = 1, 1000 do list[i] = { message = ("/items/%d is wrong"):format(i - 1) } end
            local fb = require("jsoncontract.run").feedback_message({ category = "schema", errors = list })
            assert.truthy(fb:find("/items/19 is wrong", 1, true))
            assert.falsy(fb:find("/items/20 is wrong", 1, true))
            assert.truthy(fb:find("and 980 more errors", 1, true))
            assert.is_true(#fb < 2000)
        end)

        it("clips one very long message at a character boundary", function()
            local fb = require("jsoncontract.run").feedback_message({ category = "format",
                message = string.rep("\195\164", 1000) })
            assert.truthy(fb:find("...", 1, true))
            assert.is_true(#fb < 500)
            assert.truthy(jc.decode(jc.encode(fb))) -- still valid UTF-8
        end)
    end)

    describe("ask() with a misbehaving transport or policy", function()
        local function with_transport(fn)
            return function()
                jc.ask(ticket.contract, "x", { provider = "openai", model = "m", transport = fn,
                    sleep = function() end })
            end
        end
        local odd = {
            { "nil", function() return nil end, "the transport returned nil and nil where an err table" },
            { "nil and a string", function() return nil, "boom" end, "the transport returned nil and string" },
            { "a number", function() return 42 end, "the transport returned number where a response" },
            { "a table without status", function() return { body = "" } end, "the transport returned table" },
            { "an err that is not a transport err", function() return nil, { category = "accepted", kind = "x" } end,
              "the transport returned nil and table" },
        }
        for _, c in ipairs(odd) do
            it("raises clearly when the transport returns " .. c[1], function()
                local ok, msg = pcall(with_transport(c[2]))
                assert.is_false(ok)
                assert.truthy(tostring(msg):find("ask: " .. c[3], 1, true), msg)
            end)
        end
        it("raises when a response header is not a string", function()
            local ok, msg = pcall(with_transport(function()
                return { status = 200, headers = { ["content-type"] = 5 }, body = "{}" }
            end))
            assert.is_false(ok)
            assert.truthy(tostring(msg):find("headers must map names to strings", 1, true), msg)
        end)
        local policies = {
            { { transport_retries = -1 }, "policy.transport_retries must be a whole number >= 0" },
            { { transport_retries = math.huge }, "policy.transport_retries must be a whole number >= 0" },
            { { token_budget = 0 }, "policy.token_budget must be a whole number >= 1 or nil" },
            { { time_budget_ms = 0 / 0 }, "policy.time_budget_ms must be a whole number >= 1 or nil" },
            { { reask_on_truncation = "yes" }, "policy.reask_on_truncation must be a boolean" },
        }
        for _, c in ipairs(policies) do
            it("raises on " .. c[2], function()
                assert.has_error(function()
                    jc.ask(ticket.contract, "x", { provider = "openai", model = "m", policy = c[1] })
                end, "ask: " .. c[2])
            end)
        end
        it("sends a reply whose validation ran out of its work budget to a person, not back to the model", function()
            local c = jc.contract { name = "budget", version = "1", instructions = "x", work_budget = 1,
                schema = { type = "object", required = { "a" }, additionalProperties = false,
                    properties = { a = { type = "string", pattern = "^(a|b)*c$" } } } }
            local send, calls = fake.transport({ answers = { prose = { '{"a":"ababababab"}' } } })
            local out = jc.ask(c, "hi", { provider = "openai", model = "m", transport = send,
                sleep = function() end, evidence = evidence.memory() })
            assert.equal("human_review", out.status)
            assert.equal("schema/budget_exceeded", out.reason.category .. "/" .. out.reason.kind)
            assert.equal(1, #calls)
            assert.equal(1, #out.attempts)
        end)
        it("keeps a short key out of a reason even when the provider's snippet cuts it", function()
            local key = "mylocalllamakey"
            local body = jc.encode { error = { message = ("a"):rep(274) .. " x-api-key: " .. key } }
            local out = ask("order 1187", { fail_first = { { status = 401, body = body } } }, { api_key = key })
            assert.equal("human_review", out.status)
            assert.falsy(out.reason.message:find("mylocalllama", 1, true), out.reason.message)
        end)
        it("keeps the key out of a redirect's location", function()
            local key = "mylocalllamakey"
            local out = ask("order 1187", { fail_first = { { status = 302,
                headers = { location = "http://evil.example/?k=" .. key } } } }, { api_key = key })
            assert.equal("redirect", out.reason.kind)
            assert.falsy(tostring(out.reason.location):find(key, 1, true))
        end)
    end)

    describe("secrets.redact()", function()
        local redact = require("jsoncontract.secrets").redact
        it("replaces every occurrence, as plain bytes, not a pattern", function()
            assert.equal("a [redacted] b [redacted][redacted]", redact("a k%y. b k%y.k%y.", "k%y."))
        end)
        it("leaves non-strings, short secrets and texts without the secret as they are", function()
            assert.equal(5, redact(5, "secret"))
            assert.equal("abc", redact("abc", "abc")) -- under 4 bytes: not a key
            assert.equal("abc", redact("abc", nil))
            assert.equal("nothing here", redact("nothing here", "secret"))
        end)
    end)

    describe("evidence", function()
        it("writes one record per exchange, never the key, text only on opt-in", function()
            local out, _, log = ask("the courier did not come for order 1042, urgent")
            assert.equal("accepted", out.status)
            assert.equal(2, #log.lines)
            for _, line in ipairs(log.lines) do
                assert.falsy(line:find(KEY, 1, true))
                assert.falsy(line:find("Lieferung", 1, true))
            end
            local r1 = core.decode(log.lines[1])
            assert.equal("support_ticket", r1.contract.name)
            assert.equal("1.0.0", r1.contract.version)
            assert.equal(64, #r1.contract.schema_hash)
            assert.equal(1, r1.attempt)
            assert.equal(200, r1.http_status)
            assert.equal("schema", r1.gate)
            assert.equal("/intent", r1.errors[1].pointer)
            assert.equal("openai", r1.provider)
            assert.equal("fake-1", r1.model)
            assert.equal(out.request_id, r1.request_id)
            assert.equal("accepted", core.decode(log.lines[2]).gate)
        end)

        it("keeps the model's text when the writer records text", function()
            local _, _, log = ask("order 1042 courier", nil, { evidence = evidence.memory { record_text = true } })
            assert.truthy(log.lines[1]:find("Lieferung", 1, true))
            -- the input once, on the item's first exchange
            assert.equal("order 1042 courier", core.decode(log.lines[1]).input)
            assert.is_nil(core.decode(log.lines[2]).input)
            -- the gate's words, for the review desk: each error item with its message
            local r1 = core.decode(log.lines[1])
            assert.equal("/intent", r1.error_items[1].pointer)
            assert.equal("enum", r1.error_items[1].keyword)
            assert.equal("string", type(r1.error_items[1].message))
            assert.equal("string", type(r1.error_message))
        end)

        it("keeps the gate's messages out unless the writer records text", function()
            local _, _, log = ask("order 1042 courier")
            local r1 = core.decode(log.lines[1])
            assert.equal("/intent", r1.errors[1].pointer)
            assert.is_nil(r1.error_items)
            assert.is_nil(r1.error_message)
            assert.is_nil(r1.errors[1].message)
        end)

        it("keeps the input out unless the writer records text", function()
            local _, _, log = ask("order 1042 courier")
            assert.is_nil(core.decode(log.lines[1]).input)
            assert.falsy(log.lines[1]:find("courier", 1, true))
        end)

        it("makes a new log file readable by its owner and group only (0640)", function()
            -- (io.open would make it 0666 less the umask: rw-r--r-- here, rw-rw-rw- under nginx,
            -- which the gateway spec checks)
            local path = os.tmpname()
            os.remove(path)
            assert(evidence.open(path)).file:close()
            assert.equal("rw-r-----", require("lfs").attributes(path, "permissions"))
            -- an existing file is left as it is
            assert(evidence.open(path)).file:close()
            assert.equal("rw-r-----", require("lfs").attributes(path, "permissions"))
            os.remove(path)
            local _, why = evidence.open("/nonexistent-dir/evidence.jsonl")
            assert.equal("/nonexistent-dir/evidence.jsonl: No such file or directory", why)
        end)
    end)

    describe("ask() misuse", function()
        it("raises on an unknown option", function()
            assert.has_error(function() jc.ask(ticket.contract, "x", { provider = "openai", model = "m", retries = 3 }) end,
                "ask: unknown option 'retries'")
        end)
        it("raises when input is not a string", function()
            assert.has_error(function() jc.ask(ticket.contract, 42, {}) end, "ask: input must be a string, got number")
        end)
        it("raises on an evidence that is not a writer and on adapters that are not a list, before sending", function()
            local sent = false
            local function send() sent = true end
            for _, bad in ipairs { {}, "evidence.jsonl" } do
                assert.has_error(function()
                    jc.ask(ticket.contract, "x", { provider = "openai", model = "m", transport = send, evidence = bad })
                end, "ask: opts.evidence must be a writer from jsoncontract.evidence (open or memory)")
            end
            assert.has_error(function()
                jc.ask(ticket.contract, "x", { provider = "openai", model = "m", transport = send,
                    adapters = "unwrap-one-json-fence" })
            end, "ask: opts.adapters must be a list of adapter names, got string")
            assert.is_false(sent)
        end)
        it("raises, sending nothing, when a provider's own API would refuse the request for want of a key", function()
            for _, case in ipairs {
                { "openai", "api.openai.com", "OPENAI_API_KEY" },
                { "openai_responses", "api.openai.com", "OPENAI_API_KEY" },
                { "anthropic", "api.anthropic.com", "ANTHROPIC_API_KEY" },
                { "gemini", "generativelanguage.googleapis.com", "GEMINI_API_KEY" },
            } do
                local want = "ask: " .. case[1] .. "'s API (" .. case[2] .. ") refuses every request without an API "
                    .. "key: give api_key (it is usually in " .. case[3] .. "), or a base_url for a server that needs none"
                local log = evidence.memory()
                for _, opts in ipairs {
                    { provider = case[1], model = "m" },
                    { provider = case[1], model = "m", api_key = "" },
                    -- its own host named, in another spelling
                    { provider = case[1], model = "m", base_url = "https://" .. case[2]:upper() .. "/v1" },
                    -- the provider as a module
                    { provider = require("jsoncontract.providers").get(case[1]), model = "m" },
                } do
                    opts.evidence = log
                    assert.has_error(function() jc.ask(ticket.contract, "x", opts) end, want)
                end
                assert.same({}, log.lines) -- no exchange began
            end
        end)
        it("raises on an api_key that is not a string, sending nothing", function()
            for _, key in ipairs { false, 123, true, {} } do
                local sent = false
                assert.has_error(function()
                    jc.ask(ticket.contract, "x", { provider = "openai", model = "m", api_key = key,
                        transport = function() sent = true end })
                end, "opts.api_key must be a string or nil")
                assert.is_false(sent)
            end
        end)
        it("sends without a key where the server decides: another host, a local model, a transport of the "
            .. "caller's own", function()
            -- (the default transport, to a port where nobody listens: the request is made and refused)
            local closed = "http://127.0.0.1:" .. util.closed_port()
            for _, opts in ipairs {
                { provider = "openai", base_url = closed .. "/v1" },
                { provider = "anthropic", base_url = closed }, -- a proxy that holds the key, say
                { provider = "ollama", base_url = closed },
                { provider = "llamacpp", base_url = closed },
            } do
                local log = evidence.memory()
                opts.model, opts.evidence = "m", log
                opts.policy = { max_attempts = 1, transport_retries = 0 }
                local out = jc.ask(ticket.contract, "x", opts)
                assert.same({ "transport", "connect" }, { out.reason.category, out.reason.kind }, opts.provider)
                assert.equal(1, #log.lines, opts.provider) -- one exchange was made
            end
            -- the provider's own host with no key, through a transport of the caller's own
            local sent = 0
            local out = jc.ask(ticket.contract, "x", { provider = "openai", model = "m",
                policy = { max_attempts = 1, transport_retries = 0 },
                transport = function()
                    sent = sent + 1
                    return nil, { category = "transport", kind = "connect", message = "not here" }
                end })
            assert.same({ 1, "transport" }, { sent, out.reason.category })
        end)
    end)
end)
