-- Every file in ../shared/fixtures, read by the provider modules to the decision its
-- manifest names (table-driven), streams included: fed whole, in random chunk splits (fixed
-- seed), at every split point of two small fixtures, and cut before their finish signal.
--
-- Decisions that differ from a manifest (each says why):
--  * ollama/stream-cut-no-done.ndjson: the manifest says "transport"; we say
--    protocol/stream_incomplete. The bytes we were given end cleanly at a line end; what is
--    missing is the provider's finish signal (`done: true`), which is the protocol gate's
--    business (the same kind every stream cut before its finish signal gets, whatever the
--    provider). The transport gate already reports a connection that breaks mid-body
--    (transport/reset); a body that merely stops is not known to be a network fault.
--  * "format" fixtures (fenced JSON): the envelope gate accepts them (the content is there and
--    whole); the format gate rejects the fence, and the opt-in unwrap-one-json-fence adapter
--    accepts it. Both halves are asserted.

local core = require "jsoncontract.core"
local providers = require "jsoncontract.providers"
local adapters = require "jsoncontract.contract.adapters"

local util = require "support.util"

local FIXTURES = util.shared("fixtures")

local FOLDERS = {
    ["openai-chat"] = "openai", ["openai-responses"] = "openai_responses", anthropic = "anthropic",
    gemini = "gemini", ollama = "ollama", llamacpp = "llamacpp",
}
local FOLDER_ORDER = { "openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "llamacpp" }

local read = util.read

-- What we decide per file: "ok:<finish>" or "<category>/<kind>", plus the text for some.
local DECISIONS = {
    ["openai-chat"] = {
        ["json-schema-strict.ok.json"] = "ok:stop",
        ["json-schema-strict.ok.stream.sse"] = "ok:stop",
        ["json-object-mode.ok.json"] = "ok:stop",
        ["length.truncated-text.json"] = "truncated/max_tokens",
        ["length.truncated-json.json"] = "truncated/max_tokens",
        ["length.truncated-json.stream.sse"] = "truncated/max_tokens",
        ["refusal.json"] = "refused/refusal",
        ["refusal.stream.sse"] = "refused/refusal",
        ["tool-call.forced.finish-stop.json"] = "ok:tool_use",
        ["tool-call.strict.json"] = "ok:tool_use",
        ["tool-call.strict.stream.sse"] = "ok:tool_use",
        ["content-filter.json"] = "filtered/content_filter",
        ["error-429-rate-limit.json"] = "transport/rate_limited",
        ["error-429-insufficient-quota.json"] = "transport/quota_exceeded",
        ["error-500-server-error.json"] = "transport/server_error",
        ["error-400-content-filter-azure.json"] = "filtered/content_filter",
        ["fenced-json.openai-compatible.evidence.json"] = "ok:evidence",
        ["fenced-json.openai-compatible.envelope.json"] = "ok:stop",
    },
    ["openai-responses"] = {
        ["json-schema-strict.ok.json"] = "ok:stop",
        ["json-schema-strict.ok.stream.sse"] = "ok:stop",
        ["refusal.json"] = "refused/refusal",
        ["refusal.stream.sse"] = "refused/refusal",
        ["incomplete-max-output-tokens.json"] = "truncated/max_tokens",
        ["error-insufficient-quota.stream.chunks.jsonl"] = "transport/quota_exceeded",
        ["incomplete-content-filter.json"] = "filtered/content_filter",
    },
    anthropic = {
        ["output-config-json-schema.ok.json"] = "ok:stop",
        ["output-format-beta.ok.json"] = "ok:stop",
        ["output-format-beta.ok.stream.sse"] = "ok:stop",
        ["tool-use.forced.json"] = "ok:tool_use",
        ["tool-use.forced.stream.sse"] = "ok:tool_use",
        ["max-tokens.json"] = "truncated/max_tokens",
        ["max-tokens.tool-json.stream.sse"] = "truncated/max_tokens",
        ["soft-refusal-in-tool-input.json"] = "ok:tool_use",
        ["fenced-json.prompt-only.json"] = "ok:stop",
        ["refusal.json"] = "refused/refusal",
        ["refusal.no-details.json"] = "refused/refusal",
        ["refusal.stream.sse"] = "refused/refusal",
        ["error-500-api-error.json"] = "transport/server_error",
        ["error-429-rate-limit.json"] = "transport/rate_limited",
        ["error-529-overloaded.json"] = "transport/overloaded",
        ["error-overloaded.midstream.sse"] = "transport/overloaded",
    },
    gemini = {
        ["response-schema.ok.json"] = "ok:stop",
        ["response-schema.ok.stream.sse"] = "ok:stop",
        ["json-mode.prompt-schema.ok.json"] = "ok:stop",
        ["max-tokens.json"] = "truncated/max_tokens",
        ["max-tokens.stream.sse"] = "truncated/max_tokens",
        ["soft-refusal-in-json.json"] = "ok:stop",
        ["soft-refusal-in-json.stream.sse"] = "ok:stop",
        ["safety-blocked.json"] = "filtered/content_filter",
        ["recitation.json"] = "filtered/recitation",
        ["prompt-blocked.json"] = "filtered/prompt_blocked",
        ["prompt-blocked.stream.chunks.jsonl"] = "filtered/prompt_blocked",
        ["function-call.json"] = "ok:tool_use",
        ["error-429-resource-exhausted.json"] = "transport/rate_limited",
        ["error-429-retry-info.short.json"] = "transport/rate_limited",
        ["error-503-unavailable.json"] = "transport/overloaded",
        ["error-400-invalid-argument.json"] = "transport/client_error",
        ["error-500-internal.json"] = "transport/server_error",
    },
    ollama = {
        ["format-schema.ok.json"] = "ok:stop",
        ["generate-format-json.ok.json"] = "ok:stop",
        ["tool-calls.json"] = "ok:tool_use",
        ["tool-calls.stream.ndjson"] = "ok:tool_use",
        ["load-only.done-reason-load.json"] = "protocol/unknown_finish_reason",
        ["error-midstream.generate.ndjson"] = "transport/server_error",
        ["error-404-model-not-found.json"] = "transport/client_error",
        ["error-500.json"] = "transport/server_error",
        ["length.truncated.json"] = "truncated/max_tokens",
        ["format-schema.ok.stream.ndjson"] = "ok:stop",
        ["length.truncated.stream.ndjson"] = "truncated/max_tokens",
        ["stream-cut-no-done.ndjson"] = "protocol/stream_incomplete", -- manifest: transport (see top)
    },
    llamacpp = {
        ["error-503-loading-model.json"] = "transport/overloaded", -- 503: busy for now (RFC 9110)
        ["error-400-exceed-context.json"] = "transport/client_error",
        ["json-schema.ok.json"] = "ok:stop",
    },
}

-- Exact values for some replies: text (inner JSON), usage, retry_after.
local DETAILS = {
    ["openai-responses/json-schema-strict.ok.json"] = { text = '{"title":"THE NAME OF THE WIND","author":'
        .. '{"first_name":"Patrick","last_name":"Rothfuss"},"rating":7}' },
    ["openai-responses/refusal.json"] = { refusal = "I'm very sorry, but I can't assist with that." },
    ["gemini/response-schema.ok.json"] = { text = '{"title":"THE NAME OF THE WIND","author":'
        .. '{"first_name":"Patrick","last_name":"Rothfuss"},"rating":7}',
        usage = { 11, 29 + 227 }, model = "gemini-2.5-flash", id = "p5pgaZmuOqHQz7IP0srSwQM" },
    ["gemini/function-call.json"] = { text = '{"location":"San Francisco"}', tool_name = "weather" },
    ["gemini/error-429-resource-exhausted.json"] = { retry_after = 26, retryable = true },
    ["gemini/error-429-retry-info.short.json"] = { retry_after = 34.4, retryable = true },
    ["gemini/error-503-unavailable.json"] = { retryable = true },
    ["gemini/error-400-invalid-argument.json"] = { retryable = false },
    ["ollama/format-schema.ok.json"] = { text = '{"age": 22, "available": false}', usage = { 34, 12 } },
    ["ollama/format-schema.ok.stream.ndjson"] = { text = '{"age": 22, "available": false}' },
    ["ollama/tool-calls.json"] = { text = '{"city":"Tokyo"}', tool_name = "get_weather" },
    ["ollama/tool-calls.stream.ndjson"] = { text = '{"city":"Tokyo"}', tool_name = "get_weather" },
    ["ollama/error-404-model-not-found.json"] = { retryable = false },
    ["llamacpp/json-schema.ok.json"] = { usage = { 44, 22 } },
    ["llamacpp/error-503-loading-model.json"] = { retryable = true },
    ["openai-chat/tool-call.strict.stream.sse"] = { text = '{"city":"San Francisco","state":"CA"}' },
    ["openai-chat/refusal.stream.sse"] = { refusal = "I'm sorry, I can't assist with that request." },
    ["anthropic/error-overloaded.midstream.sse"] = { retryable = true },
    ["openai-responses/error-insufficient-quota.stream.chunks.jsonl"] = { retryable = false },
}

local function is_stream(file)
    return file:match("%.sse$") or file:match("%.ndjson$") or file:match("%.chunks%.jsonl$")
end

-- A .chunks.jsonl file holds one SSE data payload per line: put the framing back.
local function stream_body(file, raw)
    if file:match("%.chunks%.jsonl$") then
        local out = {}
        for line in raw:gmatch("[^\n]+") do out[#out + 1] = "data: " .. line .. "\n\n" end
        return table.concat(out)
    end
    return raw
end

local function read_stream(provider, body, cuts)
    local acc = provider.stream_reader()
    local pos = 1
    for _, c in ipairs(cuts or {}) do
        local ok, err = acc:feed(body:sub(pos, c))
        pos = c + 1
        if not ok then return nil, err end
    end
    local ok, err = acc:feed(body:sub(pos))
    if not ok then return nil, err end
    return acc:finish()
end

-- Deterministic split points (a small LCG, the same on every interpreter).
local function random_cuts(n, seed, count)
    local rand, cuts = util.lcg(seed), {}
    for _ = 1, count do
        cuts[#cuts + 1] = rand(n + 1)
    end
    table.sort(cuts)
    return cuts
end

local function outcome(reply, err)
    if reply then return "ok:" .. tostring(reply.finish) end
    return err.category .. "/" .. err.kind
end

local function check_ok(key, fx, decision, reply)
    local d = DETAILS[key] or {}
    assert.equal("string", type(reply.text))
    assert.is_nil(reply.refusal)
    if d.text then assert.equal(d.text, reply.text) end
    if d.tool_name then assert.equal(d.tool_name, reply.tool_name) end
    if d.model then assert.equal(d.model, reply.model) end
    if d.id then assert.equal(d.id, reply.id) end
    if d.usage then
        assert.same({ d.usage[1], d.usage[2] }, { reply.usage.input_tokens, reply.usage.output_tokens })
    end
    -- the format gate: "ok" fixtures hold exactly one JSON value; "format" ones do not, and
    -- the opt-in fence adapter recovers them
    local v, ferr = core.decode(reply.text)
    if fx.expect == "format" then
        assert.is_nil(v)
        assert.equal("format", ferr.category)
        local unwrapped = assert(adapters.apply(reply.text, { "unwrap-one-json-fence" }))
        assert.is_not_nil(core.decode(unwrapped))
    else
        assert.is_not_nil(v, ferr and tostring(ferr))
    end
    assert.equal(decision, "ok:" .. reply.finish)
end

local function check_err(key, _, decision, err)
    local d = DETAILS[key] or {}
    assert.equal(decision, err.category .. "/" .. err.kind)
    assert.equal(core.error_mt, getmetatable(getmetatable(err)))
    assert.is_string(err.message)
    if d.retryable ~= nil then assert.equal(d.retryable, err.retryable) end
    if d.retry_after then assert.is_true(math.abs(err.retry_after - d.retry_after) < 1e-9) end
    if d.refusal then assert.equal(d.refusal, err.refusal) end
    if err.category == "transport" then
        assert.is_boolean(err.retryable)
        assert.is_nil(rawget(err, "reply")) -- a transport failure carries no partial reply
    end
end

-- The manifest's word for our decision: what we decided agrees, except where noted at the top.
local function manifest_word(decision, fx)
    if decision == "protocol/stream_incomplete" then return "transport" end -- disagreement
    if decision:match("^ok:") then return fx.expect == "format" and "format" or "ok" end
    return decision:match("^([^/]+)")
end

describe("provider fixtures", function()
    local total, present = 0, 0
    for _, folder in ipairs(FOLDER_ORDER) do
        local mtext = read(FIXTURES .. "/" .. folder .. "/manifest.json")
        if mtext then
            present = present + 1
            local manifest = assert(core.decode(mtext))
            total = total + #manifest.fixtures
            local provider = providers.get(FOLDERS[folder])
            describe(folder, function()
                it("every manifest entry has a decision here and its bytes match the manifest's sha256", function()
                    for _, fx in ipairs(manifest.fixtures) do
                        assert.is_string(DECISIONS[folder][fx.file], fx.file)
                        local raw = assert(read(FIXTURES .. "/" .. folder .. "/" .. fx.file), fx.file)
                        assert.equal(fx.sha256, core.sha256(raw), fx.file)
                    end
                end)
                for _, fx in ipairs(manifest.fixtures) do
                    local file, key = fx.file, folder .. "/" .. fx.file
                    local decision = DECISIONS[folder][file] or "?"
                    it(file .. " -> " .. decision .. " (manifest: " .. tostring(fx.expect) .. ")", function()
                        assert.equal(fx.expect, manifest_word(decision, fx))
                        local raw = assert(read(FIXTURES .. "/" .. folder .. "/" .. file))
                        local reply, err
                        if file:match("%.evidence%.json$") then
                            -- an evidence record of an OpenAI-compatible call, not an envelope:
                            -- its content string goes to the format gate
                            local rec = assert(core.decode(raw))
                            reply = { text = rec.response.content, finish = "evidence" }
                        elseif is_stream(file) then
                            reply, err = read_stream(provider, stream_body(file, raw))
                        else
                            local headers = fx.response_headers or fx.response_headers_documented or {}
                            reply, err = provider.read_response(fx.http_status, headers, raw)
                            if err and err.category == "transport" then
                                assert.equal(fx.http_status, err.status)
                            end
                        end
                        if reply then
                            check_ok(key, fx, decision, reply)
                        else
                            check_err(key, fx, decision, err)
                        end
                    end)
                    if is_stream(file) then
                        it(file .. ": the same decision in 40 random chunk splits", function()
                            local body = stream_body(file, assert(read(FIXTURES .. "/" .. folder .. "/" .. file)))
                            local want_r, want_e = read_stream(provider, body)
                            for seed = 1, 40 do
                                local r, e = read_stream(provider, body, random_cuts(#body, seed, 1 + seed % 7))
                                assert.equal(outcome(want_r, want_e), outcome(r, e))
                                if r then assert.equal(want_r.text, r.text) end
                            end
                        end)
                        it(file .. ": a copy cut before its last event is never accepted", function()
                            local body = stream_body(file, assert(read(FIXTURES .. "/" .. folder .. "/" .. file)))
                            local trimmed = body:gsub("[\r\n]+$", "")
                            local last = 0
                            for i = 1, #trimmed do
                                local c = trimmed:byte(i)
                                if c == 10 then
                                    -- start of the last event: after the last blank line (SSE) or line (NDJSON)
                                    if file:match("%.ndjson$") or trimmed:sub(i - 1, i - 1) == "\n"
                                        or trimmed:sub(i - 2, i) == "\n\r\n" then
                                        last = i
                                    end
                                end
                            end
                            local cut = body:sub(1, last)
                            local r, e = read_stream(provider, cut)
                            assert.is_nil(r)
                            local want = decision:match("^transport") and decision or "protocol/stream_incomplete"
                            if decision == "transport/server_error" and file:match("ndjson$") then
                                -- the error line was the last line: without it the stream just stops
                                want = "protocol/stream_incomplete"
                            end
                            if decision == "transport/quota_exceeded" or decision == "transport/overloaded" then
                                -- the error event comes before the last event; it still wins
                                want = outcome(read_stream(provider, body))
                                if not cut:find('"error"', 1, true) then want = "protocol/stream_incomplete" end
                            end
                            assert.equal(want, outcome(r, e))
                        end)
                    end
                end
            end)
        end
    end
    it("covers all 73 fixture files", function()
        if present < #FOLDER_ORDER then
            return pending("fixtures not found at " .. FIXTURES)
        end
        assert.equal(73, total)
    end)

    describe("every split point", function()
        for _, case in ipairs({ { "anthropic", "refusal.stream.sse", "refused/refusal" },
            { "gemini", "max-tokens.stream.sse", "truncated/max_tokens" },
            { "ollama", "tool-calls.stream.ndjson", "ok:tool_use" } }) do
            it(case[1] .. "/" .. case[2] .. " in two pieces at every byte, and every prefix", function()
                local raw = read(FIXTURES .. "/" .. case[1] .. "/" .. case[2])
                if not raw then return pending("fixtures not found at " .. FIXTURES) end
                local provider = providers.get(FOLDERS[case[1]])
                for i = 0, #raw do
                    assert.equal(case[3], outcome(read_stream(provider, raw, { i })))
                end
                -- a prefix is decided only once it holds the whole finish event; before that,
                -- it is stream_incomplete, never accepted
                local first
                for n = 0, #raw do
                    local got = outcome(read_stream(provider, raw:sub(1, n)))
                    if got == case[3] then
                        first = first or n
                    else
                        assert.is_nil(first, "decided at " .. tostring(first) .. " but not at " .. n)
                        assert.equal("protocol/stream_incomplete", got)
                    end
                end
                assert.is_true(first > #raw - 6 and first <= #raw)
            end)
        end
    end)
end)
