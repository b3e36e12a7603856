--- OpenAI Chat Completions (`POST /v1/chat/completions`) and OpenAI-compatible servers:
-- build the request for a contract, read the response envelope through the protocol gate.
-- @module jsoncontract.providers.openai
local core = require "jsoncontract.core"
local util = require "jsoncontract.util"
local C = require "jsoncontract.providers.envelope"
local streaming = require "jsoncontract.providers.streaming"
local subset = require "jsoncontract.providers.schema_subset"
local RULES = require "jsoncontract.providers.rules.openai"

local ipairs, type, error = ipairs, type, error
local format = string.format
local concat = table.concat

local _M = { _VERSION = core._VERSION, name = "openai" }

--- Default base URL (a base may end with or without "/v1").
_M.DEFAULT_BASE_URL = "https://api.openai.com"

--- Facts about OpenAI's service that the commands use, each with its source. `key_env`: the
-- variable holding the API key (the one OpenAI's SDKs read: github.com/openai/openai-python,
-- README "Usage"); `base_url_env`: the variable naming another base URL (read by the same SDK);
-- `model_env`: the variable naming the model (this project's); `default_model`: the model when
-- none is named (this project's choice: OpenAI's small model with strict structured outputs,
-- platform.openai.com/docs/models); `base_url`: the API host (`DEFAULT_BASE_URL`); `rate_limit`:
-- requests and estimated tokens per minute assumed on that host only (usage tier 1 of
-- gpt-4o-mini, platform.openai.com/docs/guides/rate-limits; `--rpm`/`--tpm` override);
-- `detect`: the rank in which a set key chooses the provider when none is named (lowest first,
-- nil: only by name); `standin`: the stand-in model speaks its wire format; `key_required`: the
-- service's own host answers every request without a key with 401 (platform.openai.com/docs/
-- api-reference/authentication), so none is sent there without one.
_M.FACTS = {
    key_env = "OPENAI_API_KEY", base_url_env = "OPENAI_BASE_URL", model_env = "OPENAI_MODEL",
    default_model = "gpt-4o-mini", base_url = _M.DEFAULT_BASE_URL,
    rate_limit = { rpm = 500, tpm = 200000, source = "OpenAI usage tier 1, gpt-4o-mini "
        .. "(platform.openai.com/docs/guides/rate-limits)" },
    detect = 1, standin = true, key_required = true,
}

local MODES = { native = true, json = true, prompt = true }

--- The schema fields from OpenAI's rules (jsoncontract.providers.rules.openai; see
-- jsoncontract.providers.schema_subset.provider_fields): `rules`, `SUBSET` (strict mode's rules),
-- `KEYWORDS`/`FORMATS` (what strict mode enforces; every other keyword is left out of the copy
-- sent, the full schema is still checked locally) and `provider_schema(schema)` -> schema_sent,
-- dropped: the copy sent in `response_format.json_schema.schema` in strict mode. Never mutates
-- `schema`. Every object gets `additionalProperties: false` and lists all its properties in
-- `required`; a property that was optional becomes nullable (its type gains "null", or it is
-- wrapped as `anyOf: [<it>, {type: "null"}]`) and is reported, so the caller knows a null there
-- stands for "absent". Unsupported keywords are left out; a `$ref` with siblings is inlined and
-- an `allOf` merged where that keeps the meaning. `dropped` is an array of { schema_pointer =
-- string (JSON Pointer into the caller's schema), keyword = string, action =
-- "dropped"|"weakened"|"narrowed"|"fails", reason = string, source = string|nil } for every
-- keyword not sent as written (all but "rewritten"). `native_schema` is OpenAI's own (below):
-- strict mode has a non-strict fallback.
subset.provider_fields(_M, RULES)

--- A contract name as OpenAI accepts it in `json_schema.name`: characters outside
-- [a-zA-Z0-9_-] become "_", at most 64 characters.
-- @tparam string name
-- @treturn string
function _M.schema_name(name)
    local s = name:gsub("[^%w_%-]", "_"):sub(1, 64)
    if s == "" then s = "contract" end
    return s
end

-- `native_schema`'s plan: `schema_subset.plan`'s fields (`schema`, `dropped`, `mode`, `findings`,
-- `fallback`) and `strict` (what `schema_subset.cached` keeps per contract).
local function plan_with(strict_rules, schema, contract)
    local res = subset.plan(schema, strict_rules, nil, subset.instances(schema, contract))
    if res.mode == "native" and #res.optional == 0 then
        res.strict = true
        return res
    end
    if res.mode == "json" or res.mode == "prompt" then
        res.strict = false
        return res
    end
    local res2 = subset.adapt(schema, RULES.nonstrict)
    local reason
    if res.fallback then
        reason = "sent with strict false, which OpenAI does not enforce: strict mode would reject the "
            .. "schema: " .. res.fallback.schema_pointer .. " " .. res.fallback.reason
    else
        local n = #res.optional
        reason = format("sent with strict false: %d optional propert%s (%s) cannot be sent in strict mode "
            .. "without making them nullable, which the local schema rejects; OpenAI does not enforce any "
            .. "keyword", n, n == 1 and "y" or "ies", table.concat(res.optional, ", "))
    end
    local first = { schema_pointer = "", keyword = "strict", action = "weakened", reason = reason,
        source = RULES.nonstrict.strict_false.source, url = RULES.nonstrict.strict_false.url }
    local all, findings = C.new_array(), C.new_array()
    all[1], findings[1] = first, first
    for _, f in ipairs(res.fails) do
        all[#all + 1], findings[#findings + 1] = f, f
    end
    for _, d in ipairs(subset.changed(res2.findings)) do all[#all + 1] = d end
    for _, d in ipairs(res2.findings) do findings[#findings + 1] = d end
    local fallback = res.fallback or { from = "native", to = "native-nonstrict", schema_pointer = "",
        keyword = "strict", reason = reason, source = first.source, url = first.url }
    fallback.to = "native-nonstrict"
    return { schema = res2.schema, dropped = all, strict = false, mode = "native-nonstrict",
        findings = findings, fallback = fallback }
end

local function native_plan(schema, contract) return plan_with(RULES.native, schema, contract) end
local function compatible_plan(schema, contract) return plan_with(RULES.compatible, schema, contract) end

-- per base URL (the same every request); at most 64 kept
local openai_host = util.memo(64, function(base_url) return util.url_host(base_url) == "api.openai.com" end)

--- Is `base_url` OpenAI's own API (nil: the default)? Other hosts are OpenAI-compatible servers,
-- which get strict mode without string lengths (`rules.compatible`).
-- @tparam string|nil base_url
-- @treturn boolean
function _M.is_openai(base_url)
    if base_url == nil then return true end
    return openai_host(base_url)
end

--- The plan of a native request for a contract, computed once per contract (see
-- jsoncontract.providers.schema_subset.cached); shared with the Responses API.
-- @tparam table contract
-- @tparam[opt] string base_url the server (see `is_openai`; nil: OpenAI)
-- @treturn table plan `{schema = table|nil (the copy sent), dropped, strict = boolean, mode, findings,
--   fallback}` (see `native_schema`)
function _M.contract_plan(contract, base_url)
    return subset.cached(contract, _M.is_openai(base_url) and native_plan or compatible_plan)
end

--- The `response_format`-style schema part for a contract, shared with the Responses API.
-- Strict mode (mode "native") when the strict copy is accepted as it is. Otherwise:
-- * an optional property: strict mode needs every property in `required`; an optional one can
--   only be sent as required-and-nullable, and then the model may answer null where the
--   contract's own schema rejects null. So the schema is sent with `strict: false` (mode
--   "native-nonstrict": shown to the model, not enforced), the dropped list starting with an
--   entry { schema_pointer = "", keyword = "strict", reason };
-- * something strict mode rejects with a 400 (a node left without a type, a limit exceeded,
--   a root union): mode "native-nonstrict" likewise, the first entry naming the cause;
-- * a root that is not an object: mode "prompt" (no schema field can carry it), a root anyOf:
--   mode "json"; `schema_sent` is nil then.
-- @tparam table schema
-- @tparam[opt] table contract whose examples the strict copy must accept (see
--   jsoncontract.providers.schema_subset.instances)
-- @treturn table|nil schema_sent
-- @treturn table dropped
-- @treturn boolean strict
-- @treturn string mode "native" | "native-nonstrict" | "json" | "prompt"
-- @treturn table plan { findings = every finding (rewritten and narrowed ones too), fallback =
--   nil | { from, to, schema_pointer, keyword, reason, source } }
function _M.native_schema(schema, contract)
    if type(schema) ~= "table" then error("schema must be a table, got " .. type(schema), 2) end
    local p = native_plan(schema, contract)
    return p.schema, p.dropped, p.strict, p.mode, p
end

-- The encoded `response_format` of a native request, per plan (cached per contract and server,
-- see `contract_plan`) and contract name: `{"json_schema":{"name":..,"schema":..,"strict":..},
-- "type":"json_schema"}`. Weak: a reloaded contract's plan goes with it.
local FORMATS = setmetatable({}, { __mode = "k" })

local function response_format_json(p, name)
    local by_name = util.child(FORMATS, p)
    local json = by_name[name]
    if not json then
        json = core.encode { type = "json_schema",
            json_schema = { name = _M.schema_name(name), strict = p.strict, schema = p.schema } }
        by_name[name] = json
    end
    return json
end

-- The request body as `core.encode(body)` writes it with `response_format` (its JSON text
-- `rf`) among the fields: keys in byte order, which `core.encode` keeps (BODY_KEYS).
local BODY_KEYS = { "max_completion_tokens", "messages", "model", "response_format", "stream", "stream_options",
    "temperature" }
-- The system message `{"content":<prompt>,"role":"system"}` as JSON, per prompt (a contract's
-- prompt is the same string every request); at most 64 kept.
local system_json = util.memo(64, function(prompt) return core.encode { role = "system", content = prompt } end)

-- The body's text around `messages`, as `core.encode` writes those fields (BODY_KEYS order):
-- what comes before (`{"max_completion_tokens":N,"messages":`) and after (`,"model":..,
-- "response_format":<rf>,...}`). A gateway sends the same model, limits and format every
-- request, so the last pair made is kept and reused while every other field is the same (a
-- table-valued one, `stream_options`, compared by its JSON).
local last = {}
local function field_key(body, k, rf)
    if k == "response_format" then return rf end
    local v = body[k]
    if type(v) == "table" then return core.encode(v) end
    return v
end
local function around_messages(body, rf)
    local l = last
    -- (BODY_KEYS but messages, written out: compared every request)
    if l.before and l.max_completion_tokens == body.max_completion_tokens and l.model == body.model
        and l.response_format == rf and l.stream == body.stream and l.temperature == body.temperature
        and (body.stream_options == nil and l.stream_options == nil
            or l.stream_options == field_key(body, "stream_options", rf)) then
        return l.before, l.after
    end
    local fields, before = {}, nil
    l = {}
    for _, k in ipairs(BODY_KEYS) do
        if k == "messages" then
            fields[#fields + 1] = '"messages":'
            before = "{" .. table.concat(fields, ",")
            fields = {}
        else
            l[k] = field_key(body, k, rf)
            local v = body[k]
            if k == "response_format" then
                v = rf
            elseif v ~= nil then
                v = core.encode(v)
            end
            if v ~= nil then fields[#fields + 1] = '"' .. k .. '":' .. v end
        end
    end
    l.before, l.after = before, (#fields > 0 and "," .. table.concat(fields, ",") or "") .. "}"
    last = l
    return l.before, l.after
end

-- The request body as `core.encode(body)` writes it, with `response_format` (its JSON text
-- `rf`) among the fields and the system message's JSON kept per prompt (system_json).
local function encoded_body(body, rf)
    local before, after = around_messages(body, rf)
    local messages = body.messages
    local n = #messages
    if n == 2 then
        -- the first ask (the system message and the input): no loop, which LuaJIT would leave
        -- to the interpreter for the C call in it
        local m = messages[2]
        return concat { before, "[", system_json(messages[1].content), ',{"content":', core.encode(m.content),
            m.role == "user" and ',"role":"user"}]' or ',"role":"assistant"}]', after }
    end
    local out = { before, "[", system_json(messages[1].content) }
    for i = 2, n do
        -- `core.encode{content = .., role = ..}` (keys in byte order), with only the content
        -- encoded: the role is "user" or "assistant" (build_request's check)
        local m = messages[i]
        out[#out + 1] = ',{"content":'
        out[#out + 1] = core.encode(m.content)
        out[#out + 1] = m.role == "user" and ',"role":"user"}' or ',"role":"assistant"}'
    end
    out[#out + 1] = "]"
    out[#out + 1] = after
    return table.concat(out)
end

--- Build the HTTP request for a contract and a conversation.
-- @tparam table contract a contract from `jsoncontract.contract` (its schema is planned once, see
--   `contract_plan`), or { name = string, version = string, schema = table (the full JSON
--   Schema), prompt = string (system instructions rendered from the schema) }
-- @tparam table messages array of { role = "user"|"assistant", content = string }
-- @tparam table opts { model = string (required), api_key = string|nil, base_url =
--   string|nil (default "https://api.openai.com", with or without "/v1"), max_tokens =
--   integer (tokens, default 1024, sent as `max_completion_tokens`), temperature =
--   number|nil, mode = "native" (default: json_schema, strict unless the schema has
--   optional properties, see `native_schema`) | "json" (`json_object`; schema only in the
--   prompt) | "prompt" (no response_format), stream = boolean|nil (sets `stream` and
--   `stream_options.include_usage`) }
-- @treturn table req { url = string, method = "POST", headers = { ["content-type"] =
--   "application/json", authorization = "Bearer <key>" (only with api_key) }, body =
--   string (JSON), mode = "native"|"native-nonstrict"|"json"|"prompt" (the mode sent: a
--   native request strict mode would reject goes out weaker, see `native_schema`),
--   schema_sent = table|nil, dropped = table|nil (see provider_schema), findings =
--   table|nil (every finding, see jsoncontract.providers.schema_subset), fallback = nil | { from =
--   "native", to = mode, schema_pointer, keyword, reason, source } (recorded in the evidence) }
-- @raise on misuse: a missing model, an unknown mode, wrong types
-- @usage local req = openai.build_request(contract, {{role="user", content=text}},
--   { model = "gpt-4o-mini", api_key = key })
function _M.build_request(contract, messages, opts)
    local o, msgs, prompt = C.check_request_args(contract, messages, opts, MODES, _M.name)
    local body = {
        model = o.model,
        messages = C.with_system(prompt, msgs),
        max_completion_tokens = o.max_tokens,
        temperature = o.temperature,
    }
    if o.stream then
        body.stream, body.stream_options = true, { include_usage = true }
    end
    local p = o.mode == "native" and _M.contract_plan(contract, o.base_url) or nil
    local mode = p and p.mode or o.mode
    local url = C.join_url(o.base_url or _M.DEFAULT_BASE_URL, "/v1/chat/completions")
    if p and p.schema then
        -- The schema part is the same for every request of the contract: encoded once (see
        -- response_format_json), the rest around it as `core.encode` writes the whole body.
        return C.post { opts = o, url = url, auth = "authorization", mode = mode, plan = p,
            body = encoded_body(body, response_format_json(p, contract.name)) }
    elseif mode == "json" then
        body.response_format = { type = "json_object" }
    end
    return C.post { opts = o, url = url, auth = "authorization", body = body, mode = mode, plan = p }
end

-- The text and name of a Chat Completions tool call (its `function.arguments` string).
local function tool_args(call)
    local fn = C.is_object(call) and call["function"] or nil
    local args = C.is_object(fn) and C.str(fn.arguments) or nil
    if not args or args == "" then return nil end
    return args, C.str(fn.name)
end

local FINISH = { stop = "stop", length = "length", content_filter = "content_filter",
    tool_calls = "tool_use", function_call = "tool_use" }

-- The finish_reason values the gate may accept: in a stream, any other one seen sticks (see
-- jsoncontract.providers.streaming.finish_reason).
local CLEAN = { stop = true, tool_calls = true, function_call = true }

--- Read an HTTP response of Chat Completions into one normalised reply (protocol gate).
-- Gate order: HTTP status (transport, or filtered for a 4xx naming a content filter);
-- envelope JSON (protocol/invalid_envelope); an `error` in a 2xx envelope, choices or not
-- (its classification, else protocol/no_message); one choice with a message whose role, when
-- given, is "assistant" (protocol/no_message, protocol/ambiguous_content for more than one
-- choice or tool call, or text beside a tool call); `message.refusal` (refused/refusal: a
-- non-empty string, or anything but a string or null); finish_reason "length" (truncated/max_tokens, even if
-- the text looks whole); "content_filter" (filtered/content_filter); an unknown
-- finish_reason (protocol/unknown_finish_reason); tool_calls (their `arguments` string is
-- the text, finish "tool_use", accepted whatever finish_reason "stop"/"tool_calls" says);
-- text content (protocol/no_content when null or "").
-- @tparam integer status HTTP status
-- @tparam table headers response headers, names lowercased
-- @tparam string body response body
-- @treturn[1] table reply { text = string (the content holding the inner JSON), finish =
--   "stop"|"tool_use", finish_reason = string (raw), refusal = nil, usage = { input_tokens
--   = integer, output_tokens = integer (0 when the envelope has no usage) }, model =
--   string|nil, id = string|nil }
-- @return[2] nil
-- @treturn[2] table err { category, kind, message, status = integer (transport), retryable =
--   boolean (transport), retry_after = number|nil (seconds), refusal = string|nil }
-- @treturn[2] table|nil the reply read so far (text, finish, usage, ...), when an envelope was
--   read: it travels beside the err, never inside it
-- @raise when status is not an integer, headers not a table or body not a string
function _M.read_response(status, headers, body)
    return _M.read_chat(_M.name, status, headers, body)
end

-- What C.read_envelope needs per speaker, made once per name (no closures per response).
local READERS = {}

-- (made apart from read_chat: a function that makes closures is not compiled by LuaJIT)
local function readers_for(pname)
    local p = { name = pname, stream = "text/event-stream",
        reader = function(st) return _M.chat_stream_reader(pname, st) end,
        doc = function(st, h, b, doc) return _M.read_doc(pname, st, h, b, doc) end }
    READERS[pname] = p
    return p
end

--- read_response for any Chat Completions speaker, naming `pname` in messages (llamacpp uses
-- it). A 2xx body whose content-type is text/event-stream is read as a stream (see
-- `stream_reader`).
function _M.read_chat(pname, status, headers, body)
    return C.read_envelope(READERS[pname] or readers_for(pname), status, headers, body)
end

local NO_CALLS = {} -- read only: a message without tool calls

-- The gate's wording per speaker (`C.tool_or_text`'s `w`), made once per name.
local WORDS = {}
local function words_for(pname)
    local w = {
        many = pname .. " message has %d tool calls; exactly one was expected",
        both = pname .. " message has text content and a tool call; exactly one answer was expected",
        no_args = pname .. " tool call has no arguments",
        no_text = pname .. " message has no text content",
        -- finish_reason tool_calls without a tool call: the text is whatever else came
        no_call = pname .. " finish_reason tool_calls but the message has no tool call",
    }
    WORDS[pname] = w
    return w
end

--- The protocol gate over a decoded Chat Completions envelope (also a rebuilt stream).
function _M.read_doc(pname, status, h, body, doc)
    if doc.error ~= nil and doc.error ~= core.null then
        -- an OpenAI-compatible server reporting an error with a 2xx status (choices beside
        -- it are not an answer to take)
        local e = body and C.http_error(pname, status, h, body) or C.error_object(pname, doc.error, status)
        if e.category == "filtered" then return nil, e end
        return nil, C.err("protocol", "no_message", e.message, { status = status })
    end
    local usage = C.is_object(doc.usage) and doc.usage or {}
    local reply = C.new_reply(C.tokens(usage.prompt_tokens), C.tokens(usage.completion_tokens),
        doc.model, doc.id)
    local choices = doc.choices
    if not C.is_array(choices) or #choices == 0 then
        return nil, C.err("protocol", "no_message", pname .. " response has no choices",
            { status = status, reply = reply })
    end
    if #choices > 1 then
        return nil, C.err("protocol", "ambiguous_content", format(
            "%s response has %d choices; exactly one was expected", pname, #choices),
            { status = status, reply = reply })
    end
    local choice = choices[1]
    local message = C.is_object(choice) and choice.message or nil
    if not C.is_object(message) then
        return nil, C.err("protocol", "no_message", pname .. " choice has no message",
            { status = status, reply = reply })
    end
    if type(message.role) == "string" and message.role ~= "assistant" then
        return nil, C.err("protocol", "no_message", format("%s choice's message has role %q, "
            .. "not \"assistant\"", pname, C.snippet(message.role, 40)), { status = status, reply = reply })
    end
    local raw = C.str(choice.finish_reason)
    reply.finish_reason = raw
    reply.finish = FINISH[raw or ""]
    reply.text = C.str(message.content)

    local refusal = message.refusal
    if refusal ~= nil and refusal ~= core.null and type(refusal) ~= "string" then
        -- the API documents a string or null; anything else is no answer to accept
        refusal = "(message.refusal is set, but not to text)"
    end
    if type(refusal) == "string" and refusal ~= "" then
        reply.finish, reply.refusal = "refusal", refusal
        return nil, C.err("refused", "refusal", "the model refused: " .. C.snippet(refusal),
            { status = status, refusal = refusal, reply = reply })
    end
    if raw == "length" then
        return nil, C.truncated(status, reply, "finish_reason length")
    end
    if raw == "content_filter" then
        return nil, C.filtered(status, reply, "finish_reason content_filter")
    end
    if not reply.finish then
        return nil, C.unknown_finish(status, reply, pname .. " finish_reason", raw,
            "one of stop, length, content_filter, tool_calls")
    end
    local calls = message.tool_calls
    return C.tool_or_text(status, reply, C.is_array(calls) and calls or NO_CALLS, tool_args,
        WORDS[pname] or words_for(pname))
end

--- A stream accumulator for a Chat Completions stream (`stream: true`): SSE `data:` chunks
-- whose `choices[].delta` carry content, refusal and tool-call argument fragments (joined per
-- `tool_calls[].index`), a chunk with `finish_reason`, an optional usage chunk, then
-- `data: [DONE]`, the finish signal. `{"error": ...}` data ends the stream with its category.
-- A choice has one finish_reason: a "length" or "content_filter" stays whatever a later chunk
-- says; "stop" then "tool_calls" is protocol/invalid_event (see streaming.finish_reason), and
-- so is content after a clean finish_reason.
-- @treturn table accumulator: `feed(chunk)` -> true | nil, err; `preview()` -> string|nil;
--   `finish()` -> reply | nil, err (see jsoncontract.providers.streaming)
function _M.stream_reader()
    return _M.chat_stream_reader(_M.name, 200)
end

--- A stream accumulator for an OpenAI-compatible chat completions SSE body (`[DONE]` ends it);
-- shared with llama.cpp's server.
-- @tparam string pname provider name used in err messages
-- @tparam integer status the HTTP status of the streamed response
-- @treturn table accumulator with `feed(chunk)`, `preview()`, `finish()` (see providers.streaming)
function _M.chat_stream_reader(pname, status)
    return streaming.objects({
        provider = pname, framing = "sse", what = "stream chunk", done_marker = "[DONE]",
        event = function(st, _, doc)
            if doc.error ~= nil and doc.error ~= core.null then
                -- an error chunk ends the stream, whatever choices it also carries
                return C.error_object(pname, doc.error, status)
            end
            st.id = st.id or C.str(doc.id)
            st.model = st.model or C.str(doc.model)
            if C.is_object(doc.usage) then st.usage = doc.usage end
            st.choices = st.choices or {}
            if C.is_array(doc.choices) then
                for _, ch in ipairs(doc.choices) do
                    if C.is_object(ch) then
                        local idx = C.int(ch.index) or 0
                        local c = st.choices[idx]
                        if not c then
                            c = { text = {}, refusal = {}, tools = {} }
                            st.choices[idx] = c
                            st.order = st.order or {}
                            st.order[#st.order + 1] = idx
                        end
                        local d = C.is_object(ch.delta) and ch.delta or {}
                        if c.finish_reason ~= nil and ((C.str(d.content) or "") ~= ""
                            or (C.str(d.refusal) or "") ~= ""
                            or (C.is_array(d.tool_calls) and #d.tool_calls > 0)) then
                            -- the answer grew after its choice said how it ended: neither the
                            -- text nor the reason can be trusted (a refusal, truncation or
                            -- filter already met stays: nothing after it is read)
                            if CLEAN[c.finish_reason] then
                                return C.err("protocol", "invalid_event", format("%s stream sent "
                                    .. "content after finish_reason %q", pname,
                                    C.snippet(c.finish_reason, 40)))
                            end
                            d = {}
                        end
                        if C.str(d.content) then c.text[#c.text + 1] = d.content end
                        if C.str(d.refusal) then c.refusal[#c.refusal + 1] = d.refusal end
                        if C.is_array(d.tool_calls) then
                            for _, tc in ipairs(d.tool_calls) do
                                local ti = C.int(tc.index) or 0
                                local t = c.tools[ti]
                                if not t then
                                    t = { args = {} }
                                    c.tools[ti] = t
                                    c.tool_order = c.tool_order or {}
                                    c.tool_order[#c.tool_order + 1] = ti
                                end
                                local fn = C.is_object(tc["function"]) and tc["function"] or {}
                                t.name = t.name or C.str(fn.name)
                                if C.str(fn.arguments) then t.args[#t.args + 1] = fn.arguments end
                            end
                        end
                        local e = streaming.finish_reason(st, c, pname, "finish_reason",
                            ch.finish_reason, CLEAN)
                        if e then return e end
                    end
                end
            end
            return nil
        end,
        preview = function(st)
            local first = st.order and st.choices[st.order[1]]
            if not first then return nil end
            if first.tool_order then
                return table.concat(first.tools[first.tool_order[1]].args)
            end
            return table.concat(first.text)
        end,
        finish = function(st)
            local choices = C.new_array()
            for i, idx in ipairs(st.order or {}) do
                local c = st.choices[idx]
                local msg = { role = "assistant" }
                if #c.text > 0 then msg.content = table.concat(c.text) end
                if #c.refusal > 0 then msg.refusal = table.concat(c.refusal) end
                if c.tool_order then
                    msg.tool_calls = C.new_array()
                    for j, ti in ipairs(c.tool_order) do
                        local t = c.tools[ti]
                        msg.tool_calls[j] = { type = "function",
                            ["function"] = { name = t.name, arguments = table.concat(t.args) } }
                    end
                end
                choices[i] = { index = idx, message = msg, finish_reason = c.finish_reason }
            end
            return _M.read_doc(pname, status, {}, nil,
                { id = st.id, model = st.model, usage = st.usage, choices = choices })
        end,
    })
end

return _M
