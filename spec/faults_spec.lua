-- Transport and protocol gates under fault, through the attempt loop (jsoncontract.run.ask):
-- the fault server (jsoncontract.standin.faults, /f/<id>/<scenario>+...) on 127.0.0.1
-- answers as a misbehaving provider; sleeps are injected and recorded, never slept. Each case
-- ends in its category and kind, with the number of HTTP tries the policy allows.
local core = require "jsoncontract.core"
local jc = require "jsoncontract"
local evidence = require "jsoncontract.evidence"
local providers = require "jsoncontract.providers"
local util = require "support.util"

local LUA = util.LUA
local SENTINEL = "sk-jcSENTINEL-faults-0a1b2c3d4e5f60718293"

local CONTRACT = jc.contract {
    name = "label", version = "1.0.0", instructions = "Label the mail.",
    schema = { type = "object", properties = { label = { type = "string", enum = { "bug", "billing" } } },
        required = { "label" }, additionalProperties = false },
}

local closed_port = util.closed_port

describe("faults through the attempt loop", function()
    local pipe, port, base
    local counter = 0

    setup(function()
        pipe, port = util.start_fault_server(120)
        base = "http://127.0.0.1:" .. port
    end)

    teardown(function()
        if port then core.http_request { url = base .. "/quit", timeout_ms = 5000 } end
        if pipe then pipe:close() end
    end)

    after_each(function() collectgarbage("collect") end)

    local function hits(id)
        local res = assert(core.http_request { url = base .. "/hits/" .. id, timeout_ms = 5000 })
        return assert(core.decode(res.body)).hits
    end

    -- ask through the fault server; returns outcome, sleeps, the fault id
    local function ask(scenario, o)
        o = o or {}
        counter = counter + 1
        local id = "c" .. counter
        local sleeps = {}
        local opts = {
            provider = o.provider or "openai", model = "fault-model", api_key = o.api_key,
            base_url = o.base_url or (base .. "/f/" .. id .. "/" .. scenario),
            sleep = function(s) sleeps[#sleeps + 1] = s end,
            policy = o.policy, timeout_ms = o.timeout_ms or 10000, connect_timeout_ms = 2000,
            max_response_bytes = o.max_response_bytes, evidence = o.evidence,
        }
        return jc.ask(CONTRACT, "My app crashes.", opts), sleeps, id
    end

    local function assert_review(outcome, category, kind)
        assert.equal("human_review", outcome.status)
        assert.equal(category, outcome.reason.category)
        assert.equal(kind, outcome.reason.kind)
        assert.equal(core.error_mt, getmetatable(getmetatable(outcome.reason)))
        assert.is_nil(outcome.value)
    end

    it("429 with Retry-After: waits what the server says, then succeeds within the budget", function()
        local outcome, sleeps, id = ask("r429+ok")
        assert.equal("accepted", outcome.status)
        assert.equal("bug", outcome.value.label)
        assert.same({ 1 }, sleeps)
        assert.equal(2, outcome.attempts[1].tries)
        assert.equal(2, hits(id))
        assert.equal(5, outcome.usage.input_tokens)
    end)

    it("429 with Retry-After forever: tries 1 + transport_retries times, then review", function()
        local outcome, sleeps, id = ask("r429")
        assert_review(outcome, "transport", "rate_limited")
        assert.same({ 1, 1 }, sleeps)
        assert.equal(3, hits(id))
        assert.equal(429, outcome.reason.status)
    end)

    it("429 whose Retry-After exceeds policy.retry_after_max_ms: no wait, straight to review", function()
        local outcome, sleeps, id = ask("r429", { policy = { retry_after_max_ms = 500 } })
        assert_review(outcome, "transport", "rate_limited")
        assert.same({}, sleeps)
        assert.equal(1, hits(id))
    end)

    it("429 insufficient_quota: never retried", function()
        local outcome, sleeps, id = ask("quota")
        assert_review(outcome, "transport", "quota_exceeded")
        assert.same({}, sleeps)
        assert.equal(1, hits(id))
        assert.is_false(outcome.reason.retryable)
    end)

    for _, c in ipairs({ { "s500", "openai", "server_error" }, { "s502", "openai", "server_error" },
        { "s503", "openai", "overloaded" }, { "s529", "anthropic", "overloaded" } }) do
        it(c[1] .. ": bounded backoff with jitter, then review as transport/" .. c[3], function()
            local outcome, sleeps, id = ask(c[1], { provider = c[2],
                policy = { transport_retries = 3, backoff_base_ms = 100, backoff_max_ms = 250 } })
            assert_review(outcome, "transport", c[3])
            assert.equal(4, hits(id))
            assert.equal(3, #sleeps)
            -- full jitter: each wait in [0, min(max, base * 2^(try-1))]
            local caps = { 0.1, 0.2, 0.25 }
            for i, s in ipairs(sleeps) do
                assert.is_true(s >= 0 and s <= caps[i], "wait " .. i .. " = " .. s)
            end
        end)
    end

    it("5xx twice, then a good answer: accepted, every try counted", function()
        local outcome, sleeps = ask("s503+s500+ok", { policy = { backoff_base_ms = 10 } })
        assert.equal("accepted", outcome.status)
        assert.equal(3, outcome.attempts[1].tries)
        assert.equal(2, #sleeps)
    end)

    it("connection refused: transport/connect, retried as transient", function()
        local outcome, sleeps = ask("ok", { base_url = "http://127.0.0.1:" .. closed_port(),
            policy = { transport_retries = 1, backoff_base_ms = 10 } })
        assert_review(outcome, "transport", "connect")
        assert.equal(1, #sleeps)
        assert.equal(2, outcome.attempts[1].tries)
    end)

    for _, c in ipairs({ { "reset", "closed after half the body" }, { "rst", "TCP reset mid-body" } }) do
        it(c[1] .. " (" .. c[2] .. "): transport/reset, retried, then review", function()
            local outcome, sleeps, id = ask(c[1], { policy = { transport_retries = 1, backoff_base_ms = 10 } })
            assert_review(outcome, "transport", "reset")
            assert.equal(2, hits(id))
            assert.equal(1, #sleeps)
        end)
    end

    it("a slow drip past the total timeout: transport/timeout", function()
        local outcome, _, id = ask("slow", { timeout_ms = 700, policy = { transport_retries = 0 } })
        assert_review(outcome, "transport", "timeout")
        assert.equal(1, hits(id))
    end)

    it("a body over the size cap: transport/too_large, not retried", function()
        local outcome, sleeps, id = ask("big", { max_response_bytes = 64 * 1024 })
        assert_review(outcome, "transport", "too_large")
        assert.same({}, sleeps)
        assert.equal(1, hits(id))
    end)

    it("a redirect is not followed and the key never reaches the other host", function()
        local outcome, sleeps = ask("redirect", { api_key = SENTINEL })
        assert_review(outcome, "transport", "redirect")
        assert.equal(302, outcome.reason.status)
        assert.same({}, sleeps)
        local res = assert(core.http_request { url = base .. "/stats", timeout_ms = 5000 })
        assert.equal(0, assert(core.decode(res.body)).steal)
        assert.is_nil(tostring(outcome.reason):find(SENTINEL, 1, true))
    end)

    it("HTTP 200 with an HTML body: protocol/invalid_envelope, never handed to the parser", function()
        local outcome, sleeps = ask("html")
        assert_review(outcome, "protocol", "invalid_envelope")
        assert.equal("protocol", outcome.attempts[1].gate)
        assert.same({}, sleeps)
    end)

    it("a gzip-encoded body is decoded, then read as usual", function()
        local outcome = ask("gzip")
        assert.equal("accepted", outcome.status)
        assert.equal("bug", outcome.value.label)
    end)

    it("a streamed (text/event-stream) body is read through the stream gate", function()
        local outcome = ask("sse")
        assert.equal("accepted", outcome.status)
        assert.equal("bug", outcome.value.label)
        assert.equal(3, outcome.usage.output_tokens)
        local cut = ask("ssecut")
        assert_review(cut, "protocol", "stream_incomplete")
    end)

    it("a 401 echoing the key: the key reaches neither the reason, the attempts nor the evidence", function()
        for _, name in ipairs(providers.names) do
            local ev = evidence.memory()
            local outcome = ask("auth401", { provider = name, api_key = SENTINEL, evidence = ev })
            assert_review(outcome, "transport", "client_error")
            assert.is_nil(tostring(outcome.reason):find(SENTINEL, 1, true), name)
            assert.is_nil(core.encode(outcome.attempts):find(SENTINEL, 1, true), name)
            assert.is_true(#ev.lines > 0)
            for _, l in ipairs(ev.lines) do
                assert.is_nil(l:find(SENTINEL, 1, true), name)
                assert.is_nil(l:find("sk-jcSENTINEL", 1, true), name)
            end
        end
    end)

    it("tools/live_check.lua with sentinel keys against a 401 that echoes them prints no key", function()
        counter = counter + 1
        local url = base .. "/f/live" .. counter .. "/auth401"
        local google = "AIzaSyJC-SENTINEL-0123456789abcdefghijk"
        local cmd = string.format("env OPENAI_API_KEY=%s ANTHROPIC_API_KEY=%s GEMINI_API_KEY=%s "
            .. "LLAMACPP_API_KEY=%s OPENAI_BASE_URL=%s ANTHROPIC_BASE_URL=%s GEMINI_BASE_URL=%s "
            .. "OLLAMA_HOST=%s LLAMACPP_URL=%s JC_CPATH='%s' %s tools/live_check.lua 2>&1",
            SENTINEL, SENTINEL, google, SENTINEL, url, url, url, url, url,
            os.getenv("JC_TEST_CPATH") or package.cpath:match("^[^;]+"), LUA)
        local p = assert(io.popen(cmd, "r"))
        local out = p:read("*a")
        p:close()
        local lines = 0
        for line in out:gmatch("[^\n]+") do
            local name = line:match("^(%S+)%s")
            local known = false
            for _, n in ipairs(providers.names) do known = known or n == name end
            if known then -- other lines (a sanitizer's report) are not the script's
                lines = lines + 1
                assert.truthy(line:find("human_review", 1, true), line)
                assert.truthy(line:find("transport/client_error", 1, true), line)
            end
        end
        assert.equal(6, lines)
        assert.is_nil(out:find(SENTINEL, 1, true))
        assert.is_nil(out:find("sk-jcSENTINEL", 1, true))
        assert.is_nil(out:find("SENTINEL-0123", 1, true))
    end)

    describe("a bad TLS certificate", function()
        local have_openssl = os.execute("command -v openssl >/dev/null 2>&1")
        have_openssl = have_openssl == true or have_openssl == 0
        it("is refused: transport/tls, and the key is never sent in clear", function()
            if not have_openssl then return pending("openssl not found") end
            local dir = os.tmpname()
            os.remove(dir)
            assert(os.execute("mkdir -m 700 " .. dir))
            local key, cert = dir .. "/k.pem", dir .. "/c.pem"
            local ok = os.execute(string.format("env -u LD_PRELOAD openssl req -x509 -newkey ec "
                .. "-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %s -out %s -days 1 "
                .. "-subj /CN=jc-test -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1", key, cert))
            assert(ok == true or ok == 0, "openssl req failed")
            local tport = closed_port()
            local tls = assert(io.popen(string.format("echo $$; exec env -u LD_PRELOAD openssl s_server "
                .. "-accept 127.0.0.1:%d -cert %s -key %s -www 2>/dev/null", tport, cert, key), "r"))
            local pid = tonumber(tls:read("*l"))
            finally(function()
                if pid then os.execute("kill " .. pid) end
                tls:close()
                os.remove(key)
                os.remove(cert)
                os.remove(dir)
            end)
            local line
            for _ = 1, 5 do
                line = tls:read("*l")
                if line == nil or line == "ACCEPT" then break end
            end
            assert.equal("ACCEPT", line)
            local outcome, sleeps = ask("ok", { base_url = "https://127.0.0.1:" .. tport, api_key = SENTINEL })
            assert_review(outcome, "transport", "tls")
            assert.same({}, sleeps)
            assert.is_nil(tostring(outcome.reason):find(SENTINEL, 1, true))
        end)
    end)
end)

-- Provider mode honesty: the mode each request asked for is the mode in the evidence.
describe("mode in evidence", function()
    local OK = {
        openai = '{"choices":[{"index":0,"message":{"role":"assistant","content":"{\\"label\\":\\"bug\\"}"},'
            .. '"finish_reason":"stop"}]}',
        llamacpp = '{"choices":[{"index":0,"message":{"role":"assistant","content":"{\\"label\\":\\"bug\\"}"},'
            .. '"finish_reason":"stop"}]}',
        openai_responses = '{"status":"completed","output":[{"type":"message","content":[{"type":"output_text",'
            .. '"text":"{\\"label\\":\\"bug\\"}"}]}]}',
        anthropic = '{"type":"message","role":"assistant","content":[{"type":"text","text":"{\\"label\\":\\"bug\\"}"}],'
            .. '"stop_reason":"end_turn"}',
        gemini = '{"candidates":[{"content":{"parts":[{"text":"{\\"label\\":\\"bug\\"}"}]},"finishReason":"STOP"}]}',
        ollama = '{"message":{"role":"assistant","content":"{\\"label\\":\\"bug\\"}"},"done":true,"done_reason":"stop"}',
    }
    local OPTIONAL = jc.contract {
        name = "label2", version = "1", instructions = "Label it.",
        schema = { type = "object", properties = { label = { type = "string" }, note = { type = "string" } },
            required = { "label" }, additionalProperties = false },
    }
    for _, name in ipairs(providers.names) do
        it(name .. ": records the mode sent, for native, json and prompt", function()
            local modes = name == "anthropic" and { "native", "prompt" } or { "native", "json", "prompt" }
            for _, mode in ipairs(modes) do
                for _, c in ipairs({ CONTRACT, OPTIONAL }) do
                    local ev = evidence.memory()
                    local sent_mode
                    local outcome = jc.ask(c, "text", { provider = name, model = "m", mode = mode, evidence = ev,
                        transport = function(req)
                            local body = assert(core.decode(req.body))
                            sent_mode = body
                            return { status = 200, headers = { ["content-type"] = "application/json" }, body = OK[name] }
                        end })
                    assert.equal("accepted", outcome.status)
                    local rec = assert(core.decode(ev.lines[#ev.lines]))
                    local want = mode
                    if mode == "native" and c == OPTIONAL and (name == "openai" or name == "openai_responses") then
                        want = "native-nonstrict"
                    end
                    assert.equal(want, rec.mode)
                    -- and the body asked for exactly that: the schema only in native mode,
                    -- a JSON switch only in json mode
                    local sent = core.encode(sent_mode)
                    assert.equal(mode == "native", sent:find('"additionalProperties":false', 1, true) ~= nil)
                    local json_switch = sent:find('"json_object"', 1, true) or sent:find('"format":"json"', 1, true)
                        or (sent:find('"application/json"', 1, true) and not sent:find("responseJsonSchema", 1, true))
                    assert.equal(mode == "json", json_switch and true or false)
                end
            end
        end)
    end
end)
