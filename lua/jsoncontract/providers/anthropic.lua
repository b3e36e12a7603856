--- Anthropic Messages (`POST /v1/messages`): build the request for a contract, read the
-- response envelope through the protocol gate.
-- @module jsoncontract.providers.anthropic
local core = require "jsoncontract.core"
local C = require "jsoncontract.providers.envelope"
local streaming = require "jsoncontract.providers.streaming"
local subset = require "jsoncontract.providers.schema_subset"
local RULES = require "jsoncontract.providers.rules.anthropic"

local type, ipairs, pairs = type, ipairs, pairs
local concat = table.concat

local _M = { _VERSION = core._VERSION, name = "anthropic" }

--- Default base URL (a base may end with or without "/v1").
_M.DEFAULT_BASE_URL = "https://api.anthropic.com"

--- Facts about Anthropic's service (fields as `jsoncontract.providers.openai.FACTS`), each with
-- its source: `key_env` and `base_url_env` are the variables Anthropic's SDK reads
-- (github.com/anthropics/anthropic-sdk-python, README); `model_env` is this project's;
-- `default_model` this project's choice (docs.anthropic.com/en/docs/about-claude/models);
-- `rate_limit` usage tier 1 (50 requests, 40,000 input tokens per minute for Claude Sonnet,
-- docs.anthropic.com/en/api/rate-limits), on `base_url` only; `key_required`: every request
-- carries `x-api-key` (docs.anthropic.com/en/api/overview, "Authentication").
_M.FACTS = {
    key_env = "ANTHROPIC_API_KEY", base_url_env = "ANTHROPIC_BASE_URL", model_env = "ANTHROPIC_MODEL",
    default_model = "claude-sonnet-4-5", base_url = _M.DEFAULT_BASE_URL,
    rate_limit = { rpm = 50, tpm = 40000, source = "Anthropic usage tier 1, Claude Sonnet "
        .. "(docs.anthropic.com/en/api/rate-limits)" },
    detect = 2, standin = true, key_required = true,
}

--- Value of the `anthropic-version` header.
_M.API_VERSION = "2023-06-01"

-- Anthropic has no JSON mode: "json" raises. "tool": strict tool use.
local MODES = { native = true, prompt = true, tool = true }

--- The copy of a schema sent in `output_config.format.schema` (`schema_sent, dropped =
-- provider_schema(schema)`), and what a native request sends for the schema alone
-- (`schema_sent, dropped, enforced, mode, plan = native_schema(schema)`), both from `rules.native`
-- (see jsoncontract.providers.schema_subset.provider_functions). Every object gets
-- `additionalProperties: false`; optional properties stay optional (Anthropic allows them);
-- unsupported keywords are left out; a `$ref` with siblings is inlined and an `allOf` merged
-- where that keeps the meaning.
local contract_plan = subset.provider_fields(_M, RULES)
-- Mode "tool": the same subset, sent as a strict tool's input_schema (an object).
local _, _, tool_plan = subset.provider_functions(RULES.tool)

--- The rules row that says whether `model` takes an assistant prefill (a last message from the
-- assistant): the first of `rules.prefill_models` whose pattern the model id matches, else
-- `rules.prefill_unknown` (not known to take one: treated as rejecting it).
-- @tparam string model
-- @treturn table row { accepts = boolean, why, source, url, checked }
function _M.prefill_row(model)
    for _, r in ipairs(RULES.prefill_models) do
        if model:find(r.pattern) then return r end
    end
    return RULES.prefill_unknown
end

-- A tool name as the Messages API takes it: [a-zA-Z0-9_-], 1 to 64 characters.
local function tool_name(name)
    local s = name:gsub("[^%w_%-]", "_"):sub(1, 64)
    return s ~= "" and s or "answer"
end

-- `plan` (cached per contract, never changed) with `f` first in its findings and dropped lists.
local function with_finding(plan, f)
    local out = {}
    for k, v in pairs(plan or {}) do out[k] = v end
    local findings, dropped = C.new_array(), C.new_array()
    findings[1], dropped[1] = f, f
    for _, x in ipairs(out.findings or {}) do findings[#findings + 1] = x end
    for _, x in ipairs(out.dropped or {}) do dropped[#dropped + 1] = x end
    out.findings, out.dropped = findings, dropped
    return out
end

--- Build the HTTP request for a contract and a conversation.
-- @tparam table contract a contract from `jsoncontract.contract` (its schema is planned once, see
--   jsoncontract.providers.schema_subset.provider_functions), or { name = string, version = string, schema =
--   table, prompt = string (system instructions rendered from the schema) }
-- @tparam table messages array of { role = "user"|"assistant", content = string }
-- @tparam table opts { model = string (required), api_key = string|nil, base_url =
--   string|nil (default "https://api.anthropic.com", with or without "/v1"), max_tokens =
--   integer (tokens, default 1024), temperature = number|nil, mode = "native" (default:
--   `output_config.format` json_schema; a schema or conversation Anthropic would reject —
--   recursion, too many optional or union properties, an assistant prefill — goes out in
--   mode "prompt", with `req.fallback` saying why) | "tool" (strict tool use: one tool whose
--   `input_schema` is the schema, `strict: true`, `tool_choice` naming it; the answer is its
--   input; falls back like "native", and to "prompt" when the root is not an object) |
--   "prompt" (schema only in the prompt) }. A last message from the assistant (a prefill) is
--   left out for a model that rejects one with HTTP 400 (Claude Opus 4.6/4.7, Sonnet 4.6, and any
--   model `prefill_row` does not know), in every mode, and reported first in `req.dropped`; when
--   that leaves no message, it raises.
-- @treturn table req { url = string, method = "POST", headers = { ["content-type"] =
--   "application/json", ["anthropic-version"] = "2023-06-01", ["x-api-key"] = key (only
--   with api_key) }, body = string (JSON), mode = string (the mode sent), schema_sent =
--   table|nil, dropped = table|nil, findings = table|nil, fallback = table|nil (see
--   jsoncontract.providers.schema_subset.plan) }
-- @raise on misuse: a missing model, mode "json" (Anthropic has no JSON mode), an unknown
--   mode, wrong types
function _M.build_request(contract, messages, opts)
    local o, msgs, prompt = C.check_request_args(contract, messages, opts, MODES, "anthropic")
    local body = {
        model = o.model,
        max_tokens = o.max_tokens,
        system = prompt,
        messages = msgs,
        temperature = o.temperature,
    }
    local schema_sent, plan
    local mode = o.mode
    -- A prefill the model rejects (HTTP 400 whatever the mode) is left out, and said.
    local left_out
    if msgs[#msgs].role == "assistant" then
        local r = _M.prefill_row(o.model)
        if not r.accepts then
            msgs[#msgs] = nil
            if #msgs == 0 then
                error("messages: model " .. o.model .. " rejects an assistant prefill, and no other message is left", 2)
            end
            left_out = { schema_pointer = "", keyword = "messages", action = "dropped", reason = "the last message, "
                .. "an assistant prefill, left out for model " .. o.model .. ": " .. r.why, source = r.source,
                url = r.url }
        end
    end
    if o.mode == "native" or o.mode == "tool" then
        local forced
        if msgs[#msgs].role == "assistant" then
            local p = RULES.prefill
            forced = { schema_pointer = "", keyword = "messages", reason = "the last message is an "
                .. "assistant prefill: " .. p.why, source = p.source, url = p.url, fallback = p.fallback }
        end
        plan = (o.mode == "tool" and tool_plan or contract_plan)(contract, forced)
        schema_sent, mode = plan.schema, plan.mode
        if schema_sent and o.mode == "tool" then
            local name = tool_name(contract.name)
            body.tools = { { name = name, description = "Record the answer, as the instructions describe.",
                input_schema = schema_sent, strict = true } }
            body.tool_choice = { type = "tool", name = name }
            mode = "tool"
        elseif schema_sent then
            body.output_config = { format = { type = "json_schema", schema = schema_sent } }
        end
    end
    if left_out then plan = with_finding(plan, left_out) end
    return C.post { opts = o, url = C.join_url(o.base_url or _M.DEFAULT_BASE_URL, "/v1/messages"),
        auth = "x-api-key", body = body, mode = mode, plan = plan,
        headers = { ["anthropic-version"] = _M.API_VERSION } }
end

-- The text and name of a tool_use block: streamed, the JSON text as the model wrote it (for
-- the format gate to judge); else its `input` object, encoded.
local function tool_input(block)
    if C.str(block.raw_input) and block.raw_input ~= "" then
        return block.raw_input, C.str(block.name)
    end
    if type(block.input) ~= "table" then return nil end
    return core.encode(block.input), C.str(block.name)
end

local TOOLS = {
    many = "anthropic message has %d tool_use blocks; exactly one was expected",
    both = "anthropic message has a text block and a tool_use block; exactly one answer was expected",
    no_args = "anthropic tool_use block has no input object",
    no_text = "anthropic message has no text content",
    no_call = "anthropic stop_reason tool_use but the message has no tool_use block",
}

local FINISH = { end_turn = "stop", stop_sequence = "stop", max_tokens = "length",
    model_context_window_exceeded = "length", refusal = "refusal", tool_use = "tool_use" }

-- The stop_reason values the gate may accept: in a stream, any other one seen sticks (see
-- jsoncontract.providers.streaming.finish_reason).
local CLEAN = { end_turn = true, stop_sequence = true, tool_use = true }

local ENVELOPE = {
    name = "anthropic", stream = "text/event-stream", provider = _M,
    doc = function(status, h, body, doc) return _M.read_doc(status, h, body, doc) end,
}

--- Read an HTTP response of the Messages API into one normalised reply (protocol gate).
-- Gate order: HTTP status (transport; `overloaded_error` -> overloaded); envelope JSON
-- (protocol/invalid_envelope; a 2xx body of type "error" is classified like an HTTP
-- error); a message with a content array (protocol/no_message); stop_reason "refusal"
-- (refused/refusal, with `stop_details.explanation` as the refusal text); "max_tokens"
-- (truncated/max_tokens, even if the text looks whole) or "model_context_window_exceeded"
-- (truncated/context_window); an unknown stop_reason such as "pause_turn"
-- (protocol/unknown_finish_reason); one tool_use block (its `input`, re-encoded with
-- core.encode, is the text; finish "tool_use"; more than one: protocol/ambiguous_content);
-- otherwise the text blocks, concatenated (protocol/no_content when there is none or "").
-- @tparam integer status HTTP status
-- @tparam table headers response headers, names lowercased
-- @tparam string body response body
-- @treturn[1] table reply { text = string, finish = "stop"|"tool_use", finish_reason =
--   string (raw stop_reason), refusal = nil, usage = { input_tokens = integer
--   (input_tokens + cache_creation_input_tokens + cache_read_input_tokens), output_tokens
--   = integer }, model = string|nil, id = string|nil }
-- @return[2] nil
-- @treturn[2] table err as in jsoncontract.providers.openai.read_response, plus
--   `refusal_category` (stop_details.category) for refusals
-- @raise when status is not an integer, headers not a table or body not a string
function _M.read_response(status, headers, body)
    return C.read_envelope(ENVELOPE, status, headers, body)
end

--- The protocol gate over a decoded Messages envelope (also one rebuilt from a stream, where
-- a tool_use block carries its streamed JSON text as `raw_input` and `body` is nil).
function _M.read_doc(status, h, body, doc)
    if doc.type == "error" and not body then
        return nil, C.error_object("anthropic", doc.error, status)
    end
    if doc.type == "error" then
        -- an error object with a 2xx status: classify it by its error type
        local e = C.http_error("anthropic", status, h, body)
        if e.provider_type == "overloaded_error" then return nil, e end
        local kinds = { rate_limit_error = "rate_limited", api_error = "server_error" }
        if kinds[e.provider_type or ""] then
            e.kind, e.retryable = kinds[e.provider_type], true
            return nil, e
        end
        return nil, C.err("protocol", "no_message", e.message, { status = status })
    end
    local usage = C.is_object(doc.usage) and doc.usage or {}
    local reply = C.new_reply(
        C.tokens(usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens),
        C.tokens(usage.output_tokens), doc.model, doc.id)
    local content = doc.content
    if doc.type ~= "message" or doc.role ~= "assistant" or not C.is_array(content)
        and not (type(content) == "table" and next(content) == nil) then
        return nil, C.err("protocol", "no_message",
            "anthropic response is not an assistant message with a content array",
            { status = status, reply = reply })
    end
    local raw = C.str(doc.stop_reason)
    reply.finish_reason = raw
    reply.finish = FINISH[raw or ""]

    local texts, tools = {}, {}
    for _, block in ipairs(content) do
        if C.is_object(block) then
            if block.type == "text" and C.str(block.text) then
                texts[#texts + 1] = block.text
            elseif block.type == "tool_use" then
                tools[#tools + 1] = block
            end
        end
    end
    if #texts > 0 then reply.text = concat(texts) end

    if raw == "refusal" then
        local details = C.is_object(doc.stop_details) and doc.stop_details or {}
        local why = C.str(details.explanation)
        if not why and reply.text and reply.text ~= "" then why = reply.text end
        reply.refusal = why
        return nil, C.err("refused", "refusal",
            "the model refused" .. (why and ": " .. C.snippet(why) or " (stop_reason refusal)"),
            { status = status, refusal = why, refusal_category = C.str(details.category),
              reply = reply })
    end
    if raw == "max_tokens" then
        return nil, C.truncated(status, reply, "stop_reason max_tokens")
    end
    if raw == "model_context_window_exceeded" then
        return nil, C.err("truncated", "context_window",
            "the reply was cut at the model's context window", { status = status, reply = reply })
    end
    if not reply.finish then
        return nil, C.unknown_finish(status, reply, "anthropic stop_reason", raw,
            "one of end_turn, stop_sequence, max_tokens, refusal, tool_use")
    end
    return C.tool_or_text(status, reply, tools, tool_input, TOOLS)
end

--- A stream accumulator for a Messages stream (`stream: true`): `message_start` (id, model,
-- input usage), `content_block_start`/`content_block_delta` (`text_delta` text,
-- `input_json_delta` tool input JSON fragments per block index), `message_delta`
-- (stop_reason, stop_details, output usage), `ping` (ignored), `message_stop`, the finish
-- signal. An `error` event (e.g. `overloaded_error`) ends the stream with its category
-- (transport/overloaded, retryable) and the partial text is discarded. The message has one
-- stop_reason: a "refusal" or "max_tokens" stays whatever a later `message_delta` says, and
-- "end_turn" then "tool_use" is protocol/invalid_event (see streaming.finish_reason).
-- @treturn table accumulator (see jsoncontract.providers.streaming)
function _M.stream_reader(status)
    status = status or 200
    return streaming.objects({
        provider = "anthropic", framing = "sse", what = "stream event",
        event = function(st, name, doc)
            local t = C.str(doc.type) or name
            st.blocks = st.blocks or {}
            st.order = st.order or {}
            if t == "error" then
                return C.error_object("anthropic", doc.error, status)
            elseif t == "message_start" then
                local m = C.is_object(doc.message) and doc.message or {}
                st.id, st.model = C.str(m.id), C.str(m.model)
                st.usage = C.is_object(m.usage) and m.usage or {}
            elseif t == "content_block_start" then
                local idx = C.int(doc.index) or #st.order
                local cb = C.is_object(doc.content_block) and doc.content_block or {}
                st.blocks[idx] = { type = C.str(cb.type), name = C.str(cb.name), input = cb.input,
                    parts = { C.str(cb.text) } }
                st.order[#st.order + 1] = idx
            elseif t == "content_block_delta" then
                local b = st.blocks[C.int(doc.index) or -1]
                local d = C.is_object(doc.delta) and doc.delta or {}
                if not b then
                    return C.err("protocol", "invalid_event", "anthropic content_block_delta for a block never started")
                end
                local piece = C.str(d.text) or C.str(d.partial_json)
                if piece then b.parts[#b.parts + 1] = piece end
            elseif t == "message_delta" then
                local d = C.is_object(doc.delta) and doc.delta or {}
                local e = streaming.finish_reason(st, st, "anthropic", "stop_reason", d.stop_reason, CLEAN)
                if e then return e end
                -- stop_details explain the stop_reason kept, not one that came after it
                if C.is_object(d.stop_details) and (C.str(d.stop_reason) or st.stop_reason) == st.stop_reason then
                    st.stop_details = d.stop_details
                end
                if C.is_object(doc.usage) then
                    st.usage = st.usage or {}
                    for k, v in pairs(doc.usage) do st.usage[k] = v end
                end
            elseif t == "message_stop" then
                st.done = true
            end
            return nil
        end,
        preview = function(st)
            local b = st.order and st.order[1] and st.blocks[st.order[1]]
            return b and concat(b.parts) or nil
        end,
        finish = function(st)
            local content = C.new_array()
            for i, idx in ipairs(st.order) do
                local b = st.blocks[idx]
                if b.type == "tool_use" then
                    content[i] = { type = "tool_use", name = b.name, input = b.input, raw_input = concat(b.parts) }
                else
                    content[i] = { type = b.type, text = concat(b.parts) }
                end
            end
            return _M.read_doc(status, {}, nil, { type = "message", role = "assistant", id = st.id,
                model = st.model, content = content, stop_reason = st.stop_reason,
                stop_details = st.stop_details, usage = st.usage })
        end,
    })
end

return _M
