--- The envelope helpers every provider module shares: argument checks for
-- `build_request`/`read_response`, the request table (`post`), the normalised reply and the
-- protocol gate's err values. A gate that fails on a reply read so far returns
-- `nil, err, reply`: the reply (its text, finish reason and token usage) travels beside the
-- error, never inside it.
--
-- Every provider module `jsoncontract.providers.<name>` has the same shape:
--
--    req = provider.build_request(contract, messages, opts)
--    reply, err, partial = provider.read_response(status, headers, body)
--    schema_sent, dropped, enforced, mode, plan = provider.native_schema(schema)
--
-- These helpers are internal and may change.
-- @module jsoncontract.providers.envelope
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local json = require "jsoncontract.json"
local http_status = require "jsoncontract.transport.http_status"
local secrets = require "jsoncontract.secrets"
local util = require "jsoncontract.util"

local type, pairs, ipairs, tostring, error, setmetatable = type, pairs, ipairs, tostring, error, setmetatable
local concat, sort = table.concat, table.sort
local floor, huge = math.floor, math.huge
local format, lower = string.format, string.lower

local C = { _VERSION = core._VERSION }

--- Output token budget sent when the caller gives no `max_tokens`.
C.DEFAULT_MAX_TOKENS = 1024

--- Longest provider message copied into an err message, in bytes.
C.MAX_DETAIL = errors.MAX_DETAIL

--- Make an err (`errors.new`); the message has credentials masked (`secrets.redact_credentials`).
-- A `reply` among `fields` does not go into the err: it is returned beside it, so
-- `return nil, C.err(..., {reply = reply})` gives read_response's `nil, err, reply`.
-- @treturn table err
-- @treturn table|nil reply
function C.err(category, kind, message, fields)
    local reply = fields and fields.reply
    if reply ~= nil then
        local f = {}
        for k, v in pairs(fields) do
            if k ~= "reply" then f[k] = v end
        end
        fields = f
    end
    return errors.new(category, kind, secrets.redact_credentials(message), fields), reply
end

-- JSON helpers, under the names the provider modules use.
C.is_array, C.is_object, C.new_array, C.deepcopy = json.is_array, json.is_object, json.new_array, json.deepcopy
C.snippet = errors.snippet
-- The transport gate's classification of an HTTP status or an error object (see
-- `jsoncontract.transport.http_status`).
C.http_error, C.error_object, C.retry_after, C.parse_duration =
    http_status.http_error, http_status.error_object, http_status.retry_after, http_status.parse_duration

--- `v` if it is a string, else nil (JSON null and other types give nil).
function C.str(v)
    if type(v) == "string" then return v end
    return nil
end

--- `v` when it is a whole, finite, non-negative number (a token count), else nil.
-- @param v any value
-- @treturn integer|nil
function C.int(v)
    if type(v) == "number" and v == v and v >= 0 and v < huge and floor(v) == v then
        return v
    end
    return nil
end

-- Joined URLs per base and path (a gateway asks with the same pair every request); at most
-- 64 bases kept.
local JOINED, n_joined = {}, 0

--- Join a base URL (with or without a trailing /v1 and slash) and an API path that
-- starts with "/v1/".
function C.join_url(base, path)
    local by_path = JOINED[base]
    local url = by_path and by_path[path]
    if url then return url end
    local b = base:gsub("/+$", "")
    if b:sub(-3) == "/v1" then
        url = b .. path:sub(4)
    else
        url = b .. path
    end
    if not by_path then
        if n_joined >= 64 then JOINED, n_joined = {}, 0 end
        by_path, n_joined = {}, n_joined + 1
        JOINED[base] = by_path
    end
    by_path[path] = url
    return url
end

--- Check the arguments of read_response (raises at the caller's caller).
function C.check_response_args(status, headers, body)
    if type(status) ~= "number" or floor(status) ~= status then
        error("status must be an integer, got " .. type(status), 3)
    end
    if headers ~= nil and type(headers) ~= "table" then
        error("headers must be a table or nil, got " .. type(headers), 3)
    end
    if type(body) ~= "string" then
        error("body must be a string, got " .. type(body), 3)
    end
    -- normalise header names to lower case (callers should already have done so)
    local h = {}
    if headers then
        for k, v in pairs(headers) do
            if type(k) ~= "string" or type(v) ~= "string" then
                error("headers must map names to strings, got " .. type(k) .. " -> " .. type(v), 3)
            end
            h[lower(k)] = v
        end
    end
    return h
end

-- Is a base URL an http(s) one? Per URL (a gateway sends to one every request); at most 64 kept.
local is_http_base = util.memo(64, function(u) return type(u) == "string" and u:match("^https?://") ~= nil end)

--- Check the arguments of build_request; returns the checked options with defaults, the
-- messages as the wire takes them (`{role, content}` only) and the system prompt.
-- `contract` is a contract from `jsoncontract.contract` (taken as it is: its `prompt` method gives
-- the text rendered when it was made) or a table `{name, schema, prompt = string}`.
-- `modes` is the set of modes the provider supports. Raises at the caller's caller.
function C.check_request_args(contract, messages, opts, modes, provider)
    if type(contract) ~= "table" then
        error("contract must be a table, got " .. type(contract), 3)
    end
    if type(contract.name) ~= "string" or contract.name == "" then
        error("contract.name must be a non-empty string", 3)
    end
    -- A contract from jsoncontract.contract rendered its prompt when it was made (`prompt` is
    -- then its method); a plain table brings the string.
    local prompt, full_prompt = contract.prompt, nil
    if type(prompt) == "function" then
        -- a native request gets the short prompt (the schema sent carries the rest) and keeps
        -- the full one for a fallback (see C.post)
        full_prompt = prompt(contract)
        local native = type(opts) == "table" and (opts.mode == nil or opts.mode == "native")
        prompt = native and prompt(contract, "native", provider) or full_prompt
    end
    if type(prompt) ~= "string" then
        error("contract.prompt must be a string (the rendered instructions)", 3)
    end
    if type(messages) ~= "table" then
        error("messages must be an array of {role=, content=}, got " .. type(messages), 3)
    end
    local msgs = C.new_array()
    for i = 1, #messages do
        local m = messages[i]
        if type(m) ~= "table" or (m.role ~= "user" and m.role ~= "assistant") then
            error(format("messages[%d].role must be \"user\" or \"assistant\"", i), 3)
        end
        if type(m.content) ~= "string" then
            error(format("messages[%d].content must be a string", i), 3)
        end
        msgs[i] = { role = m.role, content = m.content }
    end
    if #msgs == 0 then
        error("messages must hold at least one message", 3)
    end
    if type(opts) ~= "table" then
        error("opts must be a table with at least 'model', got " .. type(opts), 3)
    end
    if type(opts.model) ~= "string" or opts.model == "" then
        error("opts.model must be a non-empty string", 3)
    end
    if opts.api_key ~= nil and type(opts.api_key) ~= "string" then
        error("opts.api_key must be a string or nil", 3)
    end
    local base_url = opts.base_url
    if base_url ~= nil and not is_http_base(base_url) then
        error("opts.base_url must be an http(s) URL", 3)
    end
    local max_tokens = opts.max_tokens
    if max_tokens == nil then
        max_tokens = C.DEFAULT_MAX_TOKENS
    elseif type(max_tokens) ~= "number" or floor(max_tokens) ~= max_tokens or max_tokens < 1 then
        error("opts.max_tokens must be a positive integer", 3)
    end
    if opts.temperature ~= nil and type(opts.temperature) ~= "number" then
        error("opts.temperature must be a number or nil", 3)
    end
    local mode = opts.mode
    if mode == nil then mode = "native" end
    if not modes[mode] then
        local known = {}
        for k in pairs(modes) do known[#known + 1] = k end
        sort(known)
        error(format("opts.mode %s is not supported by %s (supported: %s)",
            type(mode) == "string" and format("%q", mode) or tostring(mode), provider,
            concat(known, ", ")), 3)
    end
    if mode == "native" and type(contract.schema) ~= "table" then
        error("contract.schema must be a table in mode \"native\"", 3)
    end
    if opts.stream ~= nil and type(opts.stream) ~= "boolean" then
        error("opts.stream must be a boolean or nil", 3)
    end
    return {
        model = opts.model, api_key = opts.api_key, base_url = opts.base_url,
        max_tokens = max_tokens, temperature = opts.temperature, mode = mode,
        stream = opts.stream or nil,
        full_prompt = full_prompt ~= prompt and full_prompt or nil, prompt = prompt,
    }, msgs, prompt
end

--- The conversation with the contract's prompt as a leading system message.
function C.with_system(prompt, msgs)
    local all = C.new_array()
    all[1] = { role = "system", content = prompt }
    for i, m in ipairs(msgs) do all[i + 1] = m end
    return all
end

local NO_PLAN = {} -- read only: a request that is not native

-- A native request that went out in a weaker mode sends no schema: its body gets the full
-- prompt back where the short one was put (the system message, `system`, `instructions` or
-- Gemini's `systemInstruction`).
local function full_prompt_back(body, short, full)
    local m = type(body.messages) == "table" and body.messages[1]
    if type(m) == "table" and m.role == "system" and m.content == short then m.content = full end
    if body.system == short then body.system = full end
    if body.instructions == short then body.instructions = full end
    local si = type(body.systemInstruction) == "table" and type(body.systemInstruction.parts) == "table"
        and body.systemInstruction.parts[1]
    if type(si) == "table" and si.text == short then si.text = full end
end

-- The metatable of a request (what it means, read through `__index`), per plan and mode sent:
-- the same for every request of a contract. Weak: a reloaded contract's plan goes with it.
local MEANING = setmetatable({}, { __mode = "k" })

local function meaning(plan, mode)
    local by_mode = util.child(MEANING, plan)
    local mt = by_mode[mode]
    if not mt then
        mt = { __index = { mode = mode, schema_sent = plan.schema, dropped = plan.dropped, findings = plan.findings,
            fallback = plan.fallback } }
        by_mode[mode] = mt
    end
    return mt
end

-- "Bearer <key>" per key (the same key every request); at most 16 kept.
local bearer = util.memo(16, function(key) return "Bearer " .. key end)

--- The request table build_request returns: a JSON POST of `r.body` to `r.url`, ready for a
-- transport as it is. Its own fields are the transport's (`url`, `method`, `headers`, `body`;
-- the caller may add timeouts); what the request means (`mode`, `schema_sent`, `dropped`,
-- `findings`, `fallback`) is readable as `req.mode` ... through its metatable, so a transport
-- never sees it and nobody copies the request to drop it.
-- @tparam table r `opts` (the checked options; `opts.api_key` when given goes in header
--   `auth`: "authorization" sends "Bearer <key>", any other name the key as it is), `url`,
--   `auth` (header name), `body` (table, encoded here, or its JSON text), `mode` (the mode sent), `plan` (nil, or
--   the native plan: its `schema`, `dropped`, `findings`, `fallback`, see
--   jsoncontract.providers.schema_subset.plan), `headers` (table of further headers, optional)
-- @treturn table `{url, method = "POST", headers, body}` with `mode`, `schema_sent`, `dropped`,
--   `findings`, `fallback`
function C.post(r)
    local headers = { ["content-type"] = "application/json" }
    if r.headers then
        for k, v in pairs(r.headers) do headers[k] = v end
    end
    local key = r.opts.api_key
    if key then
        headers[r.auth] = r.auth == "authorization" and bearer(key) or key
    end
    local plan = r.plan or NO_PLAN
    if r.opts.full_prompt and r.mode ~= "native" and r.mode ~= "native-nonstrict" then
        -- (a body given as JSON text is a native one's)
        if type(r.body) ~= "table" then error("envelope.post: a " .. r.mode .. " request needs its body as a table") end
        full_prompt_back(r.body, r.opts.prompt, r.opts.full_prompt)
    end
    local body = r.body
    if type(body) ~= "string" then body = core.encode(body) end
    return setmetatable({ url = r.url, method = "POST", headers = headers, body = body }, meaning(plan, r.mode))
end

--- The sum of the token counts given (each a non-negative integer, or counted as 0).
function C.tokens(a, b, c)
    return (C.int(a) or 0) + (C.int(b) or 0) + (C.int(c) or 0)
end

--- A new reply with its usage, model and id (strings, or nil).
function C.new_reply(input_tokens, output_tokens, model, id)
    return {
        usage = { input_tokens = input_tokens, output_tokens = output_tokens },
        model = C.str(model), id = C.str(id),
    }
end

--- The err of a gate that failed on a reply read so far, and that reply: callers write
-- `return nil, C.reply_err(...)`, so read_response returns `nil, err, reply`.
-- @treturn table err
-- @treturn table reply (text, finish, usage, ... as read so far)
function C.reply_err(category, kind, message, status, reply, fields)
    local f = { status = status }
    if fields then
        for k, v in pairs(fields) do f[k] = v end
    end
    f.reply = reply
    return C.err(category, kind, message, f)
end

--- truncated/max_tokens; `why` names the field that said so, e.g. "finish_reason length".
function C.truncated(status, reply, why)
    return C.reply_err("truncated", "max_tokens", "the reply was cut at the output token limit ("
        .. why .. ")", status, reply)
end

--- filtered/content_filter; `why` as for `truncated`.
function C.filtered(status, reply, why)
    return C.reply_err("filtered", "content_filter", "the reply was withheld by a content filter ("
        .. why .. ")", status, reply)
end

--- protocol/unknown_finish_reason: "<what> <raw, quoted, or missing> is not <expected>".
function C.unknown_finish(status, reply, what, raw, expected)
    return C.reply_err("protocol", "unknown_finish_reason", what .. " "
        .. (raw and format("%q", C.snippet(raw, 40)) or "missing") .. " is not " .. expected,
        status, reply)
end

--- The last gate steps, shared by every provider: more than one tool call
-- (protocol/ambiguous_content); one tool call beside text that is not only whitespace
-- (protocol/ambiguous_content); one tool call (`args(call)` -> text|nil, name|nil gives the
-- text; nil is protocol/no_content; finish becomes "tool_use"); otherwise the text already in
-- `reply` (protocol/no_content when nil or ""), and protocol/no_content when the finish
-- reason said tool_use without a call. `w` = { many = format with one %d for the count,
-- both = message (text and a call), no_args = message, no_text = message, no_call = message|nil }.
function C.tool_or_text(status, reply, calls, args, w)
    if #calls > 1 then
        return nil, C.reply_err("protocol", "ambiguous_content", format(w.many, #calls), status, reply)
    end
    if #calls == 1 then
        -- no request asks for tools: a text answer beside a call is two answers, and
        -- neither may be dropped silently (whitespace alone is no text)
        if reply.text and reply.text:find("[^ \t\r\n]") then
            return nil, C.reply_err("protocol", "ambiguous_content", w.both, status, reply)
        end
        local text, name = args(calls[1])
        if text == nil then
            return nil, C.reply_err("protocol", "no_content", w.no_args, status, reply)
        end
        reply.text, reply.finish, reply.tool_name = text, "tool_use", name
        return reply
    end
    if not reply.text or reply.text == "" then
        return nil, C.reply_err("protocol", "no_content", w.no_text, status, reply)
    end
    if w.no_call and reply.finish == "tool_use" then
        return nil, C.reply_err("protocol", "no_content", w.no_call, status, reply)
    end
    return reply
end

--- The shape of read_response, shared by every provider: check the arguments (raises at
-- the caller of read_response, so call this as a tail call), a non-2xx status (transport,
-- see `http_error`), a 2xx stream body (content-type containing `p.stream`) read through
-- the provider module's `stream_reader(status)` (or `p.reader(status)`), an envelope that is not
-- a JSON object (protocol/invalid_envelope), then the provider's gate: `p.doc(status, h, body,
-- doc)`, or the module's `read_doc(status, doc)`. `p` = { name = string, stream = string,
-- provider = the provider module, reader = function|nil, doc = function|nil, http_error =
-- function(status, h, body)|nil }.
function C.read_envelope(p, status, headers, body)
    local h = C.check_response_args(status, headers, body)
    if status < 200 or status > 299 then
        if p.http_error then return nil, p.http_error(status, h, body) end
        return nil, C.http_error(p.name, status, h, body)
    end
    if (h["content-type"] or ""):find(p.stream, 1, true) then
        local acc = p.reader and p.reader(status) or p.provider.stream_reader(status)
        local ok, err = acc:feed(body)
        if not ok then return nil, err end
        return acc:finish()
    end
    local doc = core.decode(body)
    if not C.is_object(doc) then
        return nil, C.err("protocol", "invalid_envelope",
            p.name .. " response body is not a JSON object (content-type "
            .. C.snippet(h["content-type"] or "unknown", 60) .. ")", { status = status })
    end
    if p.doc then return p.doc(status, h, body, doc) end
    return p.provider.read_doc(status, doc)
end

--- protocol/invalid_event for a stream event whose data is not a JSON object; `what` names it,
-- e.g. "stream chunk".
function C.not_object_event(pname, what)
    return C.err("protocol", "invalid_event", pname .. " " .. what .. " is not a JSON object")
end

return C
