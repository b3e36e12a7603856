-- What a server sends comes in once: run/exchange.lua reads the response through
-- the provider and redacts the key from everything the protocol gate passes on, in one place,
-- before any gate, record or outcome sees it; evidence records carry no request header, and of
-- a response's headers only those secrets.recorded_headers names. Against the hostile provider
-- of lua/jsoncontract/standin/faults.lua (/keyecho: the key from the Authorization header,
-- echoed in a header and in bodies, in every spelling), over the real curl transport.
local core = require "jsoncontract.core"
local jc = require "jsoncontract"
local evidence = require "jsoncontract.evidence"
local exchange = require "jsoncontract.run.exchange"
local policy = require "jsoncontract.run.policy"
local openai = require "jsoncontract.providers.openai"
local secrets = require "jsoncontract.secrets"
local errors = require "jsoncontract.errors"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"

local KEY = "sk-INBOUND-echo-0123456789abcdefXYZ"
local FORMS = 13 -- the /keyecho forms, served in turn

-- The key in any spelling a layered decoding (JSON escapes, percent, JSON Pointer; three
-- layers) of `s` gives.
local function leaks(s)
    local decoders = {
        function(t) return (t:gsub("\\u(%x%x%x%x)", function(h)
            local n = tonumber(h, 16)
            return n < 128 and string.char(n) or nil
        end)) end,
        function(t) return (t:gsub("\\([\\/\"])", "%1")) end,
        function(t) return (t:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end,
        function(t) return (t:gsub("~1", "/"):gsub("~0", "~")) end,
    }
    local seen, todo = { [s] = true }, { { s, 0 } }
    while #todo > 0 do
        local item = table.remove(todo)
        if item[1]:find(KEY, 1, true) then return true end
        if item[2] < 3 then
            for _, d in ipairs(decoders) do
                local n = d(item[1])
                if not seen[n] then
                    seen[n] = true
                    todo[#todo + 1] = { n, item[2] + 1 }
                end
            end
        end
    end
    return false
end

describe("what a server sends, as it comes in", function()
    local pipe, port
    setup(function() pipe, port = util.start_fault_server(120) end)
    teardown(function() if port then util.stop_fault_server(pipe, port) end end)

    local ticket = dofile("examples/support_ticket.lua").contract

    it("keeps the key out of the reply, the err and the partial reply the exchange returns", function()
        local seen_reply, seen_err = 0, 0
        for _ = 1, FORMS do
            local req = openai.build_request({ name = "t", version = "1", schema = ticket.schema,
                prompt = ticket:prompt() }, { { role = "user", content = "hello" } },
                { model = "echo-model", api_key = KEY, base_url = "http://127.0.0.1:" .. port .. "/keyecho/exchange" })
            assert.truthy(req.headers.authorization:find(KEY, 1, true)) -- the key went out
            local x = exchange.exchange {
                send = curl.request, request = req, provider = openai, sleep = function() end,
                policy = policy.merge({ transport_retries = 0 }), secret = KEY,
                time_left_ms = function() return nil end, on_transport_failure = function() end,
            }
            for _, v in ipairs { x.reply or false, x.partial or false } do
                if v then
                    seen_reply = seen_reply + 1
                    assert.is_false(leaks(core.encode(v)), core.encode(v))
                end
            end
            if x.err then
                seen_err = seen_err + 1
                assert.is_true(errors.is(x.err))
                assert.is_false(leaks(core.encode(x.err)), core.encode(x.err))
                assert.is_false(leaks(tostring(x.err)), tostring(x.err))
            end
        end
        assert.truthy(seen_reply >= 8)
        assert.truthy(seen_err >= 4)
        -- the server saw every form
        local res = assert(core.http_request { url = "http://127.0.0.1:" .. port .. "/hits/exchange", timeout_ms = 5000 })
        assert.equal(FORMS, core.decode(res.body).hits)
    end)

    it("keeps the key out of the outcome and the evidence of jc.ask, headers and bodies alike", function()
        local log = evidence.memory { record_text = true }
        local kinds = {}
        for _ = 1, FORMS do
            local out = jc.ask(ticket, "Where is my order 1187?", {
                provider = "openai", model = "echo-model", api_key = KEY, transport = curl.request,
                base_url = "http://127.0.0.1:" .. port .. "/keyecho/ask", evidence = log,
                policy = { max_attempts = 1, transport_retries = 0 },
            })
            local text = core.encode { value = out.value == nil and core.null or out.value,
                reason = out.reason or core.null, attempts = out.attempts }
            assert.is_false(leaks(text), text)
            if out.reason then
                kinds[out.reason.kind] = true
                assert.is_false(leaks(tostring(out.reason)), tostring(out.reason))
            end
        end
        assert.truthy(kinds.rate_limited, "the 429 that echoes the key in a header was seen")
        assert.truthy(kinds.redirect, "the redirect that echoes the key in Location was seen")
        assert.truthy(#log.lines >= FORMS)
        local retry_after
        for _, line in ipairs(log.lines) do
            assert.is_false(leaks(line), line)
            assert.falsy(line:lower():find("authorization", 1, true), line)
            assert.falsy(line:lower():find("x-echo", 1, true), line)
            local rec = core.decode(line)
            assert.is_nil(rec.headers)
            assert.is_nil(rec.request_headers)
            for name in pairs(rec.response_headers or {}) do
                assert.truthy(secrets.RECORDED_HEADERS[name], name)
            end
            if rec.kind == "rate_limited" then retry_after = rec.response_headers["retry-after"] end
        end
        -- the 429 that echoed the key in X-Echo left its Retry-After, and nothing else
        assert.equal("86400", retry_after)
    end)
end)

describe("secrets.recorded_headers()", function()
    it("keeps only the response headers on its list, the key redacted from their values", function()
        local h = secrets.recorded_headers({
            ["Authorization"] = "Bearer " .. KEY, ["x-api-key"] = KEY, ["x-goog-api-key"] = KEY,
            ["Cookie"] = "a=b", ["set-cookie"] = "s=1", ["X-Echo"] = KEY,
            ["X-Request-Id"] = "req_" .. KEY, ["retry-after"] = "2", ["content-type"] = "application/json",
        }, KEY)
        assert.same({ ["x-request-id"] = "req_[redacted]", ["retry-after"] = "2" }, h)
    end)
    it("gives nil for nothing to record", function()
        assert.is_nil(secrets.recorded_headers(nil))
        assert.is_nil(secrets.recorded_headers({ authorization = "Bearer x" }))
    end)
end)

describe("secrets.redact_credentials()", function()
    it("removes the known key in any spelling and a foreign credential from a provider's error text", function()
        local foreign = "sk-proj-OTHERtenant0123456789abcdef"
        local text = 'Incorrect API key provided: \\u0073k-INBOUND-echo-0123456789abcdefXYZ; also seen: '
            .. foreign .. ', Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig, google AIzaSyA-1234567890abcdefgh'
        local out = secrets.redact_credentials(text, KEY)
        assert.is_false(leaks(out), out)
        assert.falsy(out:find("OTHERtenant", 1, true), out)
        assert.falsy(out:find("eyJhbGci", 1, true), out)
        assert.falsy(out:find("AIzaSyA", 1, true), out)
        assert.equal("Incorrect API key provided: [redacted]; also seen: sk-[redacted], Authorization: Bearer "
            .. "[redacted] google AIza[redacted]", out)
    end)
    it("leaves ordinary words and numbers", function()
        assert.equal("order 1187 is late (HTTP 401)", secrets.redact_credentials("order 1187 is late (HTTP 401)"))
    end)
end)
