-- Specs for jsoncontract.providers (openai, anthropic): request building, the strict schema
-- subsets and the protocol gate over the shared provider fixtures.

------------------------------------------------------------------------------
-- Spec-only shim: until csrc/parse.c and csrc/encode.c provide core.decode/core.encode,
-- stand in for them with lua-cjson (arrays marked with core.array_mt on the way in). The
-- shim is a proxy over the real module and is removed again in teardown; lua/ never
-- sees cjson.
------------------------------------------------------------------------------
local real_loaded = package.loaded["jsoncontract.core"]
local ok_core, real_core = pcall(require, "jsoncontract.core")
local core = ok_core and real_core or nil
local shimmed = false
if not core or type(core.decode) ~= "function" or type(core.encode) ~= "function" then
    local cjson = require "cjson"
    local base = core or {
        null = cjson.null, array_mt = { __name = "jsoncontract.array" },
        error_mt = { __tostring = function(e)
            return tostring(e.category) .. "/" .. tostring(e.kind) .. ": " .. tostring(e.message)
        end },
    }
    local function mark(v)
        if type(v) ~= "table" then return v end
        local n = 0
        for k, x in pairs(v) do n = n + 1; v[k] = mark(x) end
        if n > 0 and n == #v then setmetatable(v, base.array_mt) end
        return v
    end
    local proxy = setmetatable({
        decode = function(text)
            local ok, v = pcall(cjson.decode, text)
            if not ok then
                return nil, setmetatable({ category = "format", kind = "syntax", message = v }, base.error_mt)
            end
            return mark(v)
        end,
        encode = function(v) return cjson.encode(v) end,
    }, { __index = base })
    package.loaded["jsoncontract.core"] = proxy
    core, shimmed = proxy, true
end
for _, m in ipairs({ "jsoncontract.providers", "jsoncontract.providers.openai",
    "jsoncontract.providers.anthropic" }) do
    package.loaded[m] = nil
end

local providers = require "jsoncontract.providers"
local openai = require "jsoncontract.providers.openai"
local anthropic = require "jsoncontract.providers.anthropic"

local SHARED = os.getenv("JC_SHARED") or "../shared"
local FIXTURES = SHARED .. "/fixtures"

local function read(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

local function deep_equal(a, b)
    if type(a) ~= "table" or type(b) ~= "table" then return a == b end
    for k, v in pairs(a) do
        if not deep_equal(v, b[k]) then return false end
    end
    for k in pairs(b) do
        if a[k] == nil then return false end
    end
    return true
end

teardown(function()
    if shimmed then
        package.loaded["jsoncontract.core"] = real_loaded
    end
end)

describe("jsoncontract.providers", function()
    describe("get()", function()
        it("returns the provider modules by name", function()
            assert.equal(openai, providers.get("openai"))
            assert.equal(anthropic, providers.get("anthropic"))
            assert.same({ "anthropic", "openai" }, providers.names)
        end)
        it("raises on an unknown name, listing the known ones", function()
            assert.has_error(function() providers.get("gemeni") end,
                'unknown provider "gemeni" (known: anthropic, openai)')
            assert.has_error(function() providers.get(nil) end,
                "provider name must be a string, got nil")
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
                if fx.stream or file:match("%.sse$") or file:match("%.stream") then
                    it(file, function()
                        pending("stream fixture: SSE reading is not part of read_response yet")
                    end)
                elseif file:match("%.evidence%.json$") then
                    it(file, function()
                        pending("evidence record, not a provider envelope")
                    end)
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
                        local reply, err = provider.read_response(fx.http_status, headers, body)
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
                            assert.equal(core.error_mt, getmetatable(err))
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
                            if d.reply_text then assert.equal(d.reply_text, err.reply.text) end
                            if d.category == "transport" then
                                assert.is_nil(err.reply)
                                assert.is_string(err.provider_type)
                            end
                        end
                        if d.usage then
                            local r = reply or err.reply
                            assert.equal(d.usage.input_tokens, r.usage.input_tokens)
                            assert.equal(d.usage.output_tokens, r.usage.output_tokens)
                        end
                    end)
                end
            end
        end)
    end
end)
