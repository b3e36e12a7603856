--- Ollama `POST /api/chat` (also reads `/api/generate` envelopes): the schema goes in
-- `format`, `stream: false` unless a stream is asked for (NDJSON then).
-- @module jsoncontract.providers.ollama
local core = require "jsoncontract.core"
local C = require "jsoncontract.providers.envelope"
local streaming = require "jsoncontract.providers.streaming"
local subset = require "jsoncontract.providers.schema_subset"
local RULES = require "jsoncontract.providers.rules.ollama"

local type, ipairs = type, ipairs
local concat = table.concat

local _M = { _VERSION = core._VERSION, name = "ollama" }

--- Default base URL (the local server); `OLLAMA_HOST` is the caller's business.
_M.DEFAULT_BASE_URL = "http://127.0.0.1:11434"

--- Facts about Ollama (fields as `jsoncontract.providers.openai.FACTS`): a local server, so no
-- model is assumed (name the one pulled) and no rate limit; `key_env` is the variable Ollama's
-- hosted API documents for its key (docs.ollama.com/cloud), sent as a Bearer token; never chosen
-- by its key alone.
_M.FACTS = { key_env = "OLLAMA_API_KEY", base_url = _M.DEFAULT_BASE_URL }

local MODES = { native = true, json = true, prompt = true }

--- The copy of a schema sent in `format` (`schema_sent, dropped = provider_schema(schema)`), and
-- what a native request sends for the schema alone (`schema_sent, dropped, enforced, mode, plan =
-- native_schema(schema)`), both from `rules.native` (see
-- jsoncontract.providers.schema_subset.provider_functions): what llama.cpp's converter turns into
-- grammar (a `$ref` with siblings inlined, keywords next to `anyOf` moved into its branches,
-- `\d`/`\w`/`\s` in patterns written as classes, an `allOf` merged), the rest left out and reported.
local contract_plan = subset.provider_fields(_M, RULES)

--- Does `model` (at `base_url`) run on Ollama's cloud, which ignores `format`? Cloud models
-- are named "<name>-cloud" or "<name>:cloud" (e.g. "gpt-oss:120b-cloud"); the host ollama.com
-- serves only those.
-- @tparam string model
-- @tparam[opt] string base_url
-- @treturn boolean
function _M.is_cloud(model, base_url)
    if type(model) == "string" and (model:match("[%-:]cloud$") ~= nil) then return true end
    return type(base_url) == "string" and base_url:match("^https?://[^/]*ollama%.com") ~= nil
end

--- Build the HTTP request.
-- @tparam table contract a contract from `jsoncontract.contract` (its schema is planned once, see
--   jsoncontract.providers.schema_subset.provider_functions), or { name, version, schema, prompt =
--   string } (sent as the system message)
-- @tparam table messages array of { role, content }
-- @tparam table opts { model = string (required), api_key = string|nil (Bearer, for a proxy
--   or Ollama's hosted API), base_url (default "http://127.0.0.1:11434"), max_tokens (sent as
--   `options.num_predict`), temperature (`options.temperature`), mode = "native" (`format` =
--   the schema) | "json" (`format` = "json") | "prompt", stream = boolean|nil (default false) }
-- @treturn table req { url, method = "POST", headers, body, mode (the mode sent: a cloud model,
--   which ignores `format`, gets mode "prompt"; a schema the converter would fail on, mode
--   "json"), schema_sent, dropped, findings, fallback (see jsoncontract.providers.schema_subset.plan) }
-- @raise on misuse
function _M.build_request(contract, messages, opts)
    local o, msgs, prompt = C.check_request_args(contract, messages, opts, MODES, _M.name)
    local body = { model = o.model, messages = C.with_system(prompt, msgs),
        stream = o.stream and true or false, options = { num_predict = o.max_tokens, temperature = o.temperature } }
    local schema_sent, plan
    local mode = o.mode
    local base = (o.base_url or _M.DEFAULT_BASE_URL):gsub("/+$", "")
    if o.mode == "native" then
        local forced
        if _M.is_cloud(o.model, base) then
            local c = RULES.cloud
            forced = { schema_pointer = "", keyword = "format", reason = "model " .. o.model
                .. " runs on Ollama's cloud: " .. c.why, source = c.source, url = c.url, fallback = c.fallback }
        end
        plan = contract_plan(contract, forced)
        schema_sent, mode = plan.schema, plan.mode
    end
    if schema_sent then
        body.format = schema_sent
    elseif mode == "json" then
        body.format = "json"
    end
    return C.post { opts = o, url = base .. "/api/chat", auth = "authorization", body = body,
        mode = mode, plan = plan }
end

-- The text and name of an Ollama tool call: `function.arguments`, a string as it is or an
-- object encoded.
local function tool_args(call)
    local fn = C.is_object(call) and call["function"] or nil
    local args = C.is_object(fn) and fn.arguments or nil
    if type(args) == "string" then return args, C.str(fn.name) end
    if type(args) == "table" then return core.encode(args), C.str(fn.name) end
    return nil
end

local TOOLS = {
    many = "ollama message has %d tool calls; exactly one was expected",
    both = "ollama message has text content and a tool call; exactly one answer was expected",
    no_args = "ollama tool call has no arguments",
    no_text = "ollama reply has no text content",
}

-- The done_reason values the gate may accept: in a stream, any other one seen sticks (see
-- jsoncontract.providers.streaming.finish_reason).
local CLEAN = { stop = true }

--- The protocol gate over a decoded /api/chat (or /api/generate) reply.
-- Order: `error` (transport, see jsoncontract.providers.envelope.error_object); `done` not true
-- (protocol/stream_incomplete); done_reason "length" (truncated/max_tokens), a done_reason
-- other than "stop" such as "load" (protocol/unknown_finish_reason; a missing done_reason
-- with done true, as older servers send, counts as "stop"); one tool call (its `arguments`
-- object, encoded, is the text; finish "tool_use"); `message.content` or `response`
-- (protocol/no_content when empty). Usage: prompt_eval_count, eval_count.
function _M.read_doc(status, doc)
    if doc.error ~= nil then
        return nil, C.error_object(_M.name, doc.error, status)
    end
    local reply = C.new_reply(C.tokens(doc.prompt_eval_count), C.tokens(doc.eval_count), doc.model, nil)
    local msg = C.is_object(doc.message) and doc.message or nil
    reply.text = msg and C.str(msg.content) or C.str(doc.response)
    if doc.done ~= true then
        return nil, C.err("protocol", "stream_incomplete", "ollama reply is not done (done is not true)",
            { status = status, reply = reply })
    end
    local raw = C.str(doc.done_reason)
    reply.finish_reason = raw
    if raw == "length" then
        return nil, C.truncated(status, reply, "done_reason length")
    end
    if raw ~= nil and raw ~= "stop" then
        return nil, C.unknown_finish(status, reply, "ollama done_reason", raw, "stop")
    end
    reply.finish = "stop"
    local calls = msg and msg.tool_calls
    return C.tool_or_text(status, reply, C.is_array(calls) and calls or {}, tool_args, TOOLS)
end

local ENVELOPE = { name = _M.name, stream = "ndjson", provider = _M }

--- Read an HTTP response of /api/chat into one normalised reply (protocol gate).
-- Non-2xx: transport (Ollama errors are `{"error": "text"}`: 404 -> client_error, 5xx ->
-- server_error). A 2xx `application/x-ndjson` body is read as a stream.
-- @tparam integer status
-- @tparam table headers
-- @tparam string body
-- @treturn[1] table reply { text, finish = "stop"|"tool_use", finish_reason, refusal = nil,
--   usage, model, id = nil, tool_name }
-- @return[2] nil
-- @treturn[2] table err
-- @raise on misuse
function _M.read_response(status, headers, body)
    return C.read_envelope(ENVELOPE, status, headers, body)
end

--- A stream accumulator for an NDJSON stream (`stream: true`): each line's
-- `message.content` (or `response`) is appended, tool calls kept; the finish signal is a
-- line with `done: true`; an `{"error": ...}` line ends the stream (transport/server_error).
-- A done_reason "length" stays whatever a later line says.
-- @treturn table accumulator (see jsoncontract.providers.streaming)
function _M.stream_reader(status)
    status = status or 200
    return streaming.objects({
        provider = _M.name, framing = "ndjson", what = "stream line",
        event = function(st, _, doc)
            if doc.error ~= nil then
                return C.error_object(_M.name, doc.error, status)
            end
            st.text = st.text or {}
            st.calls = st.calls or C.new_array()
            local msg = C.is_object(doc.message) and doc.message or {}
            local piece = C.str(msg.content) or C.str(doc.response)
            if piece then st.text[#st.text + 1] = piece end
            if C.is_array(msg.tool_calls) then
                for _, tc in ipairs(msg.tool_calls) do st.calls[#st.calls + 1] = tc end
            end
            st.model = C.str(doc.model) or st.model
            -- a done_reason counts wherever it comes: a "length" stays (see streaming.finish_reason)
            local e = streaming.finish_reason(st, st, _M.name, "done_reason", doc.done_reason, CLEAN)
            if e then return e end
            if doc.done == true then
                st.done, st.last = true, doc
            end
            return nil
        end,
        preview = function(st)
            return st.text and concat(st.text) or nil
        end,
        finish = function(st)
            local last = st.last
            local doc = { model = st.model, done = true, done_reason = st.done_reason,
                prompt_eval_count = last.prompt_eval_count, eval_count = last.eval_count,
                message = { role = "assistant", content = concat(st.text),
                    tool_calls = #st.calls > 0 and st.calls or nil } }
            return _M.read_doc(status, doc)
        end,
    })
end

return _M
