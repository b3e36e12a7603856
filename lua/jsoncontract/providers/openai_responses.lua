--- OpenAI Responses (`POST /v1/responses`): the schema goes in `text.format` (type
-- "json_schema"); the envelope's `output` items are read through the protocol gate.
-- @module jsoncontract.providers.openai_responses
local core = require "jsoncontract.core"
local C = require "jsoncontract.providers.envelope"
local streaming = require "jsoncontract.providers.streaming"
local openai = require "jsoncontract.providers.openai"

local type, ipairs, pairs = type, ipairs, pairs
local concat = table.concat
local format = string.format

local _M = { _VERSION = core._VERSION, name = "openai_responses" }

--- Default base URL (OpenAI's; a base may end with or without "/v1").
_M.DEFAULT_BASE_URL = openai.DEFAULT_BASE_URL

--- Facts about the service (see `jsoncontract.providers.openai.FACTS`): OpenAI's, the same key,
-- host and limits; never chosen by its key alone (the key chooses `openai`), only by name.
_M.FACTS = {}
for k, v in pairs(openai.FACTS) do
    if k ~= "detect" and k ~= "standin" then _M.FACTS[k] = v end
end

local MODES = { native = true, json = true, prompt = true }

--- The copy of a schema sent in `text.format.schema`: the same strict subset as Chat
-- Completions (see jsoncontract.providers.openai.provider_schema).
-- @tparam table schema
-- @treturn table schema_sent
-- @treturn table dropped
-- @raise when schema is not a table
_M.provider_schema = openai.provider_schema
--- As Chat Completions (see `jsoncontract.providers.openai.native_schema`).
_M.native_schema = openai.native_schema
--- As Chat Completions (see `jsoncontract.providers.openai.SUBSET`).
_M.SUBSET = openai.SUBSET
--- As Chat Completions (see `jsoncontract.providers.openai.rules`).
_M.rules = openai.rules

--- Build the HTTP request.
-- @tparam table contract a contract from `jsoncontract.contract` (planned once, see
--   jsoncontract.providers.openai.contract_plan), or { name, version, schema, prompt = string }
--   (the prompt is sent as `instructions`)
-- @tparam table messages array of { role, content } (sent as `input`)
-- @tparam table opts { model = string (required), api_key, base_url (default
--   "https://api.openai.com"), max_tokens = integer (sent as `max_output_tokens`),
--   temperature, mode = "native" (text.format json_schema; strict false with mode
--   "native-nonstrict" when the schema has optional properties, as for Chat Completions) |
--   "json" (text.format json_object) | "prompt", stream = boolean|nil }
-- @treturn table req { url, method = "POST", headers (authorization only with api_key),
--   body, mode, schema_sent, dropped }
-- @raise on misuse (a native request strict mode would reject goes out in a weaker mode, as
--   for Chat Completions: see jsoncontract.providers.openai.native_schema)
function _M.build_request(contract, messages, opts)
    local o, msgs, prompt = C.check_request_args(contract, messages, opts, MODES, _M.name)
    local body = { model = o.model, instructions = prompt, input = msgs,
        max_output_tokens = o.max_tokens, temperature = o.temperature }
    if o.stream then body.stream = true end
    local p = o.mode == "native" and openai.contract_plan(contract, o.base_url) or nil
    local mode = p and p.mode or o.mode
    if p and p.schema then
        body.text = { format = { type = "json_schema", name = openai.schema_name(contract.name),
            strict = p.strict, schema = p.schema } }
    elseif mode == "json" then
        body.text = { format = { type = "json_object" } }
    end
    return C.post { opts = o, url = C.join_url(o.base_url or _M.DEFAULT_BASE_URL, "/v1/responses"),
        auth = "authorization", body = body, mode = mode, plan = p }
end

-- The text and name of a function_call item: its `arguments` string.
local function function_args(call)
    local args = C.str(call.arguments)
    if not args or args == "" then return nil end
    return args, C.str(call.name)
end

local TOOLS = {
    many = _M.name .. " output has %d function calls; exactly one was expected", -- counted before
    both = _M.name .. " output has a message and a function call; exactly one was expected", -- as well
    no_args = _M.name .. " function call has no arguments",
    no_text = _M.name .. " output has no text",
}

--- The protocol gate over a decoded Response object (also the one a stream ends with).
-- Order: `error` set (status "failed": classified like an in-body error, e.g.
-- insufficient_quota -> transport/quota_exceeded); a `refusal` content part (refused/refusal);
-- status "incomplete" with reason max_output_tokens (truncated/max_tokens) or content_filter
-- (filtered/content_filter), another reason (truncated/incomplete); a status other than
-- "completed" (protocol/unknown_finish_reason); one function_call item (its `arguments` are
-- the text, finish "tool_use"); the output_text parts of one message item (more than one
-- message or call: protocol/ambiguous_content; none: protocol/no_content).
function _M.read_doc(status, doc)
    local pname = _M.name
    if doc.error ~= nil and doc.error ~= core.null then
        return nil, C.error_object(pname, doc.error, status)
    end
    local usage = C.is_object(doc.usage) and doc.usage or {}
    local reply = C.new_reply(C.tokens(usage.input_tokens), C.tokens(usage.output_tokens), doc.model, doc.id)
    local rstatus = C.str(doc.status)
    local details = C.is_object(doc.incomplete_details) and doc.incomplete_details or {}
    local reason = C.str(details.reason)
    reply.finish_reason = reason or rstatus
    local output = doc.output
    if not C.is_array(output) and not (type(output) == "table" and next(output) == nil) then
        return nil, C.err("protocol", "no_message", pname .. " response has no output array",
            { status = status, reply = reply })
    end
    local messages, calls, refusals = 0, {}, {}
    local texts = {}
    for _, item in ipairs(output) do
        if C.is_object(item) and item.type == "message" then
            local had_text = false
            for _, part in ipairs(C.is_array(item.content) and item.content or {}) do
                if C.is_object(part) then
                    if part.type == "output_text" and C.str(part.text) then
                        texts[#texts + 1] = part.text
                        had_text = true
                    elseif part.type == "refusal" then
                        -- a refusal part is a refusal whatever its text (as the stream's
                        -- has_refusal counts it): an empty or missing one is still no answer
                        local why = C.str(part.refusal)
                        refusals[#refusals + 1] = (why and why ~= "") and why or "(a refusal part without text)"
                    end
                end
            end
            if had_text then messages = messages + 1 end
        elseif C.is_object(item) and item.type == "function_call" then
            calls[#calls + 1] = item
        end
    end
    if #texts > 0 then reply.text = concat(texts) end
    if #refusals > 0 then
        local why = concat(refusals)
        reply.finish, reply.refusal = "refusal", why
        return nil, C.err("refused", "refusal", "the model refused: " .. C.snippet(why),
            { status = status, refusal = why, reply = reply })
    end
    if rstatus == "incomplete" then
        if reason == "content_filter" then
            return nil, C.filtered(status, reply, "status incomplete, reason content_filter")
        elseif reason == "max_output_tokens" then
            return nil, C.truncated(status, reply, "status incomplete, reason max_output_tokens")
        end
        return nil, C.err("truncated", "incomplete", "the reply is incomplete (reason "
            .. (reason and format("%q", C.snippet(reason, 40)) or "missing") .. ")",
            { status = status, reply = reply })
    end
    if rstatus ~= "completed" then
        return nil, C.unknown_finish(status, reply, pname .. " status", rstatus, "one of completed, incomplete")
    end
    reply.finish = "stop"
    if #calls + messages > 1 then
        return nil, C.err("protocol", "ambiguous_content", format(
            "%s output has %d messages and %d function calls; exactly one was expected",
            pname, messages, #calls), { status = status, reply = reply })
    end
    return C.tool_or_text(status, reply, calls, function_args, TOOLS)
end

local ENVELOPE = { name = _M.name, stream = "text/event-stream", provider = _M }

--- Read an HTTP response of the Responses API into one normalised reply (protocol gate).
-- @tparam integer status
-- @tparam table headers names lowercased
-- @tparam string body
-- @treturn[1] table reply { text, finish = "stop"|"tool_use", finish_reason = string (status,
--   or the incomplete reason), refusal = nil, usage = { input_tokens, output_tokens }, model,
--   id }
-- @return[2] nil
-- @treturn[2] table err (see read_doc for the kinds)
-- @raise on misuse (types)
function _M.read_response(status, headers, body)
    return C.read_envelope(ENVELOPE, status, headers, body)
end

local TERMINAL = { ["response.completed"] = true, ["response.incomplete"] = true,
    ["response.failed"] = true }

-- The status values the gate may accept: any other one a terminal event carries sticks, so
-- a `response.completed` after a `response.incomplete` cannot undo it (see
-- jsoncontract.providers.streaming.finish_reason).
local CLEAN = { completed = true }

-- Does an output array hold a refusal content part?
local function has_refusal(output)
    for _, item in ipairs(output) do
        for _, part in ipairs(C.is_object(item) and C.is_array(item.content) and item.content or {}) do
            if C.is_object(part) and part.type == "refusal" then return true end
        end
    end
    return false
end

--- A stream accumulator for a Responses stream: named events; `response.output_text.delta`,
-- `response.refusal.delta` and `response.function_call_arguments.delta` build the preview;
-- `response.completed` / `response.incomplete` / `response.failed` carry the final Response
-- object, the finish signal, read by `read_doc` (deltas fill its output when a gateway sends
-- an empty one; refusal deltas are added to an output that lost them, so a refusal seen in
-- the stream stays one). An `error` event ends the stream with its category.
-- @treturn table accumulator (see jsoncontract.providers.streaming)
function _M.stream_reader(status)
    status = status or 200
    return streaming.objects({
        provider = _M.name, framing = "sse", what = "stream event",
        event = function(st, name, doc)
            local t = C.str(doc.type) or name
            st.text, st.refusal, st.args = st.text or {}, st.refusal or {}, st.args or {}
            if t == "error" then
                return C.error_object(_M.name, doc.error ~= nil and doc.error or doc, status)
            elseif t == "response.output_text.delta" and C.str(doc.delta) then
                st.text[#st.text + 1] = doc.delta
            elseif t == "response.refusal.delta" and C.str(doc.delta) then
                st.refusal[#st.refusal + 1] = doc.delta
            elseif t == "response.function_call_arguments.delta" and C.str(doc.delta) then
                st.args[#st.args + 1] = doc.delta
            elseif TERMINAL[t] then
                st.final = C.is_object(doc.response) and doc.response or {}
                st.done = true
                -- only the first terminal event is read (one after it is rejected or, once
                -- settled, dropped), so this status never meets another: no err to return
                streaming.finish_reason(st, st, _M.name, "status", st.final.status, CLEAN)
            end
            return nil
        end,
        preview = function(st)
            if st.args and #st.args > 0 then return concat(st.args) end
            return st.text and concat(st.text) or nil
        end,
        finish = function(st)
            local doc = st.final
            local out = doc.output
            if not (C.is_array(out) and #out > 0) then
                out = C.new_array()
                local content = C.new_array()
                if #st.text > 0 then content[#content + 1] = { type = "output_text", text = concat(st.text) } end
                if #st.refusal > 0 then content[#content + 1] = { type = "refusal", refusal = concat(st.refusal) } end
                if #content > 0 then out[#out + 1] = { type = "message", content = content } end
                if #st.args > 0 then out[#out + 1] = { type = "function_call", arguments = concat(st.args) } end
                doc.output = out
            elseif #st.refusal > 0 and not has_refusal(out) then
                -- the model refused in the deltas: a final output without it cannot undo that
                out[#out + 1] = { type = "message", content = { { type = "refusal", refusal = concat(st.refusal) } } }
            end
            return _M.read_doc(status, doc)
        end,
    })
end

return _M
