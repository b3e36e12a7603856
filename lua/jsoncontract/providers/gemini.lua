--- Google Gemini `generateContent` (`POST /v1beta/models/{model}:generateContent`, streamed as
-- `:streamGenerateContent?alt=sse`): the schema goes in
-- `generationConfig.responseJsonSchema` with `responseMimeType: "application/json"`; the key
-- goes in the `x-goog-api-key` header, never in the URL.
-- @module jsoncontract.providers.gemini
local core = require "jsoncontract.core"
local C = require "jsoncontract.providers.envelope"
local streaming = require "jsoncontract.providers.streaming"
local subset = require "jsoncontract.providers.schema_subset"
local RULES = require "jsoncontract.providers.rules.gemini"

local type, ipairs, error = type, ipairs, error
local concat = table.concat
local format = string.format

local _M = { _VERSION = core._VERSION, name = "gemini" }

--- Default base URL.
_M.DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

--- Facts about the Gemini API (fields as `jsoncontract.providers.openai.FACTS`), each with its
-- source: `key_env` is the variable Google's Gemini libraries read (ai.google.dev/gemini-api/
-- docs/api-key, "Setting the API key as an environment variable"); `model_env` is this project's;
-- `default_model` this project's choice (ai.google.dev/gemini-api/docs/models); `rate_limit`
-- tier 1 of gemini-2.5-flash (ai.google.dev/gemini-api/docs/rate-limits), on `base_url` only;
-- `key_required`: every request carries `x-goog-api-key` (ai.google.dev/api, "Authentication").
_M.FACTS = {
    key_env = "GEMINI_API_KEY", model_env = "GEMINI_MODEL",
    default_model = "gemini-2.5-flash", base_url = _M.DEFAULT_BASE_URL,
    rate_limit = { rpm = 1000, tpm = 1000000, source = "Gemini API tier 1, gemini-2.5-flash "
        .. "(ai.google.dev/gemini-api/docs/rate-limits)" },
    detect = 3, key_required = true,
}

local MODES = { native = true, json = true, prompt = true }

--- The copy of a schema sent in `generationConfig.responseJsonSchema` (`schema_sent, dropped =
-- provider_schema(schema)`), and what a native request sends for the schema alone
-- (`schema_sent, dropped, enforced, mode, plan = native_schema(schema)`), both from `rules.native`
-- (see jsoncontract.providers.schema_subset.provider_functions): `definitions` moved to `$defs`,
-- a `$ref` with siblings inlined, `const` as a one-value enum, null taken out of enums,
-- `propertyOrdering` set where the author stated an order.
local contract_plan = subset.provider_fields(_M, RULES)
-- Models that keep the schema's key order get no propertyOrdering (see `keeps_order`).
local _, _, ordered_plan = subset.provider_functions(RULES.native_ordered)

--- Does `model` keep the order of the schema's keys without `propertyOrdering` (Gemini 2.5 and
-- later, `rules.keeps_order`)? An id the rule's pattern does not read (an alias such as
-- "gemini-flash-latest") counts as not keeping it: `propertyOrdering` is then sent, which every
-- model takes.
-- @tparam string model without "models/"
-- @treturn boolean
function _M.keeps_order(model)
    local k = RULES.keeps_order
    local major, minor = model:match(k.pattern)
    major, minor = tonumber(major), tonumber(minor ~= "" and minor or "0")
    if not major then return false end
    return major > k.since[1] or (major == k.since[1] and minor >= k.since[2])
end

--- Build the HTTP request.
-- @tparam table contract a contract from `jsoncontract.contract` (its schema is planned once, see
--   jsoncontract.providers.schema_subset.provider_functions), or { name, version, schema, prompt =
--   string } (sent as `systemInstruction`)
-- @tparam table messages array of { role = "user"|"assistant" (sent as role "model"), content }
-- @tparam table opts { model = string (required, e.g. "gemini-2.5-flash"; a "models/" prefix
--   is removed; letters, digits, ".", "-", "_" only), api_key = string|nil (header
--   `x-goog-api-key`), base_url (default "https://generativelanguage.googleapis.com"),
--   max_tokens (sent as `maxOutputTokens`), temperature, mode = "native" (responseJsonSchema
--   + responseMimeType; `propertyOrdering` where the author stated an order, except on models
--   that keep the schema's key order, see `keeps_order`) | "json" (responseMimeType only) |
--   "prompt", stream = boolean|nil (`:streamGenerateContent?alt=sse`) }
-- @treturn table req { url, method = "POST", headers, body, mode (the mode sent: a schema
--   Gemini would reject, e.g. a cycle through required properties, goes out in mode "json"),
--   schema_sent, dropped, findings, fallback (see jsoncontract.providers.schema_subset.plan) }
-- @raise on misuse, a model name with other characters
function _M.build_request(contract, messages, opts)
    local o, msgs, prompt = C.check_request_args(contract, messages, opts, MODES, _M.name)
    local model = o.model:gsub("^models/", "")
    if not model:match("^[%w%.%-_]+$") then
        error("opts.model must hold only letters, digits, '.', '-' and '_' for gemini", 2)
    end
    local contents = C.new_array()
    for i, m in ipairs(msgs) do
        contents[i] = { role = m.role == "assistant" and "model" or "user", parts = { { text = m.content } } }
    end
    local gen = { maxOutputTokens = o.max_tokens, temperature = o.temperature }
    local schema_sent, plan
    local mode = o.mode
    if o.mode == "native" then
        plan = (_M.keeps_order(model) and ordered_plan or contract_plan)(contract)
        schema_sent, mode = plan.schema, plan.mode
    end
    if schema_sent then
        gen.responseMimeType, gen.responseJsonSchema = "application/json", schema_sent
    elseif mode == "json" then
        gen.responseMimeType = "application/json"
    end
    local body = { systemInstruction = { parts = { { text = prompt } } },
        contents = contents, generationConfig = gen }
    local base = (o.base_url or _M.DEFAULT_BASE_URL):gsub("/+$", "")
    local path = o.stream and (":streamGenerateContent?alt=sse") or ":generateContent"
    return C.post { opts = o, url = base .. "/v1beta/models/" .. model .. path, auth = "x-goog-api-key",
        body = body, mode = mode, plan = plan }
end

-- google.rpc status names, by what they mean here.
local STATUS_KINDS = { UNAVAILABLE = "overloaded", INTERNAL = "server_error",
    RESOURCE_EXHAUSTED = "rate_limited", DEADLINE_EXCEEDED = "server_error" }

-- Seconds from a google.rpc.RetryInfo detail ("26s", "34.4s").
local function retry_delay(perr)
    for _, d in ipairs(C.is_array(perr.details) and perr.details or {}) do
        if C.is_object(d) and C.str(d["@type"]) and d["@type"]:find("RetryInfo", 1, true) then
            local s = C.str(d.retryDelay)
            local n = s and s:match("^(%d+%.?%d*)s$")
            if n then return tonumber(n) end
        end
    end
    return nil
end

-- A Gemini error object (HTTP error body, or an error inside a 2xx body or stream).
local function gemini_error(status, h, perr, body)
    local e
    if body then
        e = C.http_error(_M.name, status, h, body)
    else
        e = C.error_object(_M.name, { message = C.str(perr.message), type = C.str(perr.status) }, status)
    end
    local st = C.is_object(perr) and C.str(perr.status) or nil
    e.provider_type = st or e.provider_type
    local kind = STATUS_KINDS[st or ""]
    if e.category == "transport" and kind and (status >= 500 or status == 429 or not body) then
        e.kind, e.retryable = kind, true
    end
    if e.kind == "rate_limited" then
        e.retry_after = e.retry_after or retry_delay(perr)
    end
    return e
end

-- The text and name of a functionCall part: its `args` object, encoded.
local function function_args(call)
    if type(call.args) ~= "table" then return nil end
    return core.encode(call.args), C.str(call.name)
end

local TOOLS = {
    many = "gemini candidate has %d functionCall parts; exactly one was expected",
    both = "gemini candidate has a text part and a functionCall part; exactly one answer was expected",
    no_args = "gemini functionCall has no args object",
    no_text = "gemini candidate has no text",
}

local FILTER = { SAFETY = true, BLOCKLIST = true, PROHIBITED_CONTENT = true, SPII = true,
    IMAGE_SAFETY = true, IMAGE_PROHIBITED_CONTENT = true }

-- The finishReason values the gate may accept: in a stream, any other one seen sticks (see
-- jsoncontract.providers.streaming.finish_reason).
local CLEAN = { STOP = true }

--- The protocol gate over a decoded GenerateContentResponse (also a rebuilt stream).
-- Order: `promptFeedback.blockReason` (filtered/prompt_blocked); exactly one candidate
-- (protocol/no_message, protocol/ambiguous_content); finishReason MAX_TOKENS
-- (truncated/max_tokens), SAFETY/BLOCKLIST/PROHIBITED_CONTENT/SPII (filtered/content_filter),
-- RECITATION (filtered/recitation), anything but STOP (protocol/unknown_finish_reason); one
-- functionCall part (its `args`, encoded, are the text; finish "tool_use"); the text parts
-- (thought parts left out), concatenated (protocol/no_content when empty).
-- Usage: input = promptTokenCount, output = candidatesTokenCount + thoughtsTokenCount (both
-- billed as output).
function _M.read_doc(status, doc)
    local usage = C.is_object(doc.usageMetadata) and doc.usageMetadata or {}
    local reply = C.new_reply(C.tokens(usage.promptTokenCount),
        C.tokens(usage.candidatesTokenCount, usage.thoughtsTokenCount), doc.modelVersion, doc.responseId)
    local fb = C.is_object(doc.promptFeedback) and doc.promptFeedback or {}
    if C.str(fb.blockReason) then
        reply.finish_reason = fb.blockReason
        return nil, C.err("filtered", "prompt_blocked", "the prompt was blocked (blockReason "
            .. C.snippet(fb.blockReason, 40) .. ")", { status = status, reply = reply })
    end
    local cands = doc.candidates
    if not C.is_array(cands) or #cands == 0 then
        return nil, C.err("protocol", "no_message", "gemini response has no candidates",
            { status = status, reply = reply })
    end
    if #cands > 1 then
        return nil, C.err("protocol", "ambiguous_content", format(
            "gemini response has %d candidates; exactly one was expected", #cands),
            { status = status, reply = reply })
    end
    local cand = C.is_object(cands[1]) and cands[1] or {}
    local raw = C.str(cand.finishReason)
    reply.finish_reason = raw
    local texts, calls = {}, {}
    local content = C.is_object(cand.content) and cand.content or {}
    for _, part in ipairs(C.is_array(content.parts) and content.parts or {}) do
        if C.is_object(part) then
            if C.str(part.text) and part.thought ~= true then
                texts[#texts + 1] = part.text
            elseif C.is_object(part.functionCall) then
                calls[#calls + 1] = part.functionCall
            end
        end
    end
    if #texts > 0 then reply.text = concat(texts) end
    if raw == "MAX_TOKENS" then
        return nil, C.truncated(status, reply, "finishReason MAX_TOKENS")
    end
    if raw == "RECITATION" then
        return nil, C.err("filtered", "recitation",
            "the reply was withheld as recitation of a source (finishReason RECITATION)",
            { status = status, reply = reply })
    end
    if FILTER[raw or ""] then
        return nil, C.filtered(status, reply, "finishReason " .. raw)
    end
    if raw ~= "STOP" then
        return nil, C.unknown_finish(status, reply, "gemini finishReason", raw, "STOP")
    end
    reply.finish = "stop"
    return C.tool_or_text(status, reply, calls, function_args, TOOLS)
end

local ENVELOPE = {
    name = _M.name, stream = "text/event-stream", provider = _M,
    http_error = function(status, h, body)
        local doc = core.decode(body)
        local perr = C.is_object(doc) and C.is_object(doc.error) and doc.error or {}
        return gemini_error(status, h, perr, body)
    end,
    doc = function(status, h, _, doc)
        if C.is_object(doc.error) then
            return nil, gemini_error(status, h, doc.error, nil)
        end
        return _M.read_doc(status, doc)
    end,
}

--- Read an HTTP response of generateContent into one normalised reply (protocol gate).
-- Errors: HTTP status first (429 RESOURCE_EXHAUSTED -> transport/rate_limited with
-- retry_after from RetryInfo.retryDelay; 503 UNAVAILABLE -> transport/overloaded; 500
-- INTERNAL -> transport/server_error; other 4xx -> transport/client_error); then read_doc.
-- A 2xx text/event-stream body is read as a stream.
-- @tparam integer status
-- @tparam table headers
-- @tparam string body
-- @treturn[1] table reply { text, finish = "stop"|"tool_use", finish_reason (raw), refusal =
--   nil, usage, model (modelVersion), id (responseId), tool_name }
-- @return[2] nil
-- @treturn[2] table err
-- @raise on misuse
function _M.read_response(status, headers, body)
    return C.read_envelope(ENVELOPE, status, headers, body)
end

--- A stream accumulator for `streamGenerateContent?alt=sse` (CRLF-framed SSE, one
-- GenerateContentResponse per event, no terminal marker): text parts are joined,
-- functionCall parts kept, usage and ids taken from the latest chunk; the finish signal is a
-- chunk with `finishReason` (or a blocked prompt). An `error` chunk ends the stream. A
-- SAFETY, MAX_TOKENS, RECITATION (any finishReason but STOP) stays whatever follows it.
-- @treturn table accumulator (see jsoncontract.providers.streaming)
function _M.stream_reader(status)
    status = status or 200
    return streaming.objects({
        provider = _M.name, framing = "sse", what = "stream event",
        -- after the finishReason chunk, only a chunk without candidates (usage) is taken
        after_done = function(doc)
            return C.is_object(doc) and doc.candidates == nil and doc.error == nil
        end,
        event = function(st, _, doc)
            if C.is_object(doc.error) then
                return gemini_error(status, {}, doc.error, nil)
            end
            st.parts = st.parts or C.new_array()
            st.text = st.text or {}
            if C.is_object(doc.usageMetadata) then st.usage = doc.usageMetadata end
            st.model = C.str(doc.modelVersion) or st.model
            st.id = C.str(doc.responseId) or st.id
            if C.is_object(doc.promptFeedback) then
                st.feedback = doc.promptFeedback
                if C.str(doc.promptFeedback.blockReason) then st.done = true end
            end
            if C.is_array(doc.candidates) then
                st.ncand = (st.ncand and st.ncand > #doc.candidates) and st.ncand or #doc.candidates
                local cand = doc.candidates[1]
                -- a chunk may carry a later candidate alone: its index still counts one more
                local index = C.is_object(cand) and C.int(cand.index)
                if index and index >= st.ncand then st.ncand = index + 1 end
                if C.is_object(cand) then
                    local content = C.is_object(cand.content) and cand.content or {}
                    for _, part in ipairs(C.is_array(content.parts) and content.parts or {}) do
                        if C.is_object(part) then
                            if C.str(part.text) and part.thought ~= true then
                                st.text[#st.text + 1] = part.text
                            elseif C.is_object(part.functionCall) then
                                st.parts[#st.parts + 1] = { functionCall = part.functionCall }
                            end
                        end
                    end
                    if C.str(cand.finishReason) then
                        local e = streaming.finish_reason(st, st, _M.name, "finishReason",
                            cand.finishReason, CLEAN)
                        if e then return e end
                        st.done = true
                    end
                end
            end
            return nil
        end,
        preview = function(st)
            return st.text and concat(st.text) or nil
        end,
        finish = function(st)
            local doc = { usageMetadata = st.usage, modelVersion = st.model, responseId = st.id,
                promptFeedback = st.feedback }
            if st.ncand then
                local parts = C.new_array()
                if #st.text > 0 then parts[1] = { text = concat(st.text) } end
                for _, p in ipairs(st.parts) do parts[#parts + 1] = p end
                local cands = C.new_array()
                cands[1] = { content = { parts = parts, role = "model" }, finishReason = st.finishReason }
                for i = 2, st.ncand do cands[i] = {} end
                doc.candidates = cands
            end
            return _M.read_doc(status, doc)
        end,
    })
end

return _M
