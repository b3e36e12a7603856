--- Providers: turn a contract and a conversation into an HTTP request for a model
-- provider's API, and read the provider's HTTP response (the envelope) into one
-- normalised reply, running the protocol gate of DESIGN.md (gates 1 and 2 as far as an
-- HTTP status and an envelope can tell).
--
-- Every provider module `jsoncontract.providers.<name>` has the same shape:
--
--    req = provider.build_request(contract, messages, opts)
--    reply, err = provider.read_response(status, headers, body)
--    schema_sent, dropped = provider.provider_schema(schema)
--
-- This module also holds the helpers the provider modules share (`_M.common`); they are
-- internal and may change.
-- @module jsoncontract.providers
local core = require "jsoncontract.core"

local type, pairs, ipairs, tostring, tonumber, setmetatable, getmetatable, error, require =
    type, pairs, ipairs, tostring, tonumber, setmetatable, getmetatable, error, require
local concat, sort = table.concat, table.sort
local floor, huge = math.floor, math.huge
local format, lower = string.format, string.lower

local _M = { _VERSION = core._VERSION }

--- Output token budget sent when the caller gives no `max_tokens`.
_M.DEFAULT_MAX_TOKENS = 1024

--- Names accepted by `get`, sorted.
_M.names = { "anthropic", "gemini", "llamacpp", "ollama", "openai", "openai_responses" }

local KNOWN = {}
for _, n in ipairs(_M.names) do KNOWN[n] = true end

--- The provider module for a name.
-- @tparam string name one of `names`: "anthropic", "gemini", "llamacpp", "ollama", "openai",
--   "openai_responses"
-- @treturn table the module `jsoncontract.providers.<name>`
-- @raise on a name that is not in `names` (the message lists the known names)
-- @usage local openai = require("jsoncontract.providers").get("openai")
function _M.get(name)
    if type(name) ~= "string" then
        error("provider name must be a string, got " .. type(name), 2)
    end
    if not KNOWN[name] then
        error(format("unknown provider %q (known: %s)", name, concat(_M.names, ", ")), 2)
    end
    return require("jsoncontract.providers." .. name)
end

------------------------------------------------------------------------------
-- Shared helpers (internal)
------------------------------------------------------------------------------
local C = {}
_M.common = C

--- Longest provider message copied into an err message, in bytes.
C.MAX_DETAIL = 300

--- Make an err table with the shared metatable; the message has credentials masked.
function C.err(category, kind, message, fields)
    local e = { category = category, kind = kind, message = C.scrub(message) }
    if fields then
        for k, v in pairs(fields) do e[k] = v end
    end
    return setmetatable(e, core.error_mt)
end

--- Is `v` a JSON array as decoded or built in Lua: a table with `core.array_mt`, or with
-- keys exactly 1..n (n >= 1)? The same rule as the C encoder's.
-- @param v any value
-- @treturn boolean
function C.is_array(v)
    if type(v) ~= "table" then return false end
    if getmetatable(v) == core.array_mt then return true end
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    return n > 0 and n == #v
end

--- Is `v` a JSON object: a table that is not an array (an empty unmarked table is `{}`)?
-- @param v any value
-- @treturn boolean
function C.is_object(v)
    return type(v) == "table" and getmetatable(v) ~= core.array_mt and (next(v) == nil or not C.is_array(v))
end

--- A new empty table marked as a JSON array, so it encodes as `[]`.
-- @treturn table
function C.new_array()
    return setmetatable({}, core.array_mt)
end

--- Deep copy of a decoded JSON value; keeps the array marker, shares nothing.
function C.deepcopy(v)
    if type(v) ~= "table" then return v end
    local out = {}
    for k, x in pairs(v) do out[k] = C.deepcopy(x) end
    if getmetatable(v) == core.array_mt then setmetatable(out, core.array_mt) end
    return out
end

--- A string with control characters replaced, credentials masked (see `scrub`) and cut to
-- `max` bytes (for messages).
function C.snippet(s, max)
    max = max or C.MAX_DETAIL
    s = C.scrub(tostring(s):gsub("[%c]+", " "))
    if #s > max then
        -- do not cut inside a UTF-8 sequence
        local cut = max
        while cut > 0 and s:byte(cut + 1) and s:byte(cut + 1) >= 0x80 and s:byte(cut + 1) < 0xC0 do
            cut = cut - 1
        end
        s = s:sub(1, cut) .. "..."
    end
    return s
end

--- Mask what looks like a credential in text a provider sent back (error messages may echo
-- the key or the Authorization header, e.g. "Incorrect API key provided: sk-abc...").
-- Masked: "Bearer <token>", "sk-..." (OpenAI, Anthropic "sk-ant-..."), "AIza..." (Google), and
-- any run of 24 or more letters, digits, "-" and "_" that mixes letters and digits.
-- @tparam string s
-- @treturn string
function C.scrub(s)
    s = s:gsub("([Bb]earer)%s+%S+", "%1 [redacted]")
    s = s:gsub("sk%-[%w%-_%*%.]+", "sk-[redacted]")
    s = s:gsub("AIza[%w%-_]+", "AIza[redacted]")
    s = s:gsub("[%w%-_]+", function(w)
        if #w >= 24 and w:find("%d") and w:find("%a") then return "[redacted]" end
        return nil
    end)
    return s
end

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

--- Join a base URL (with or without a trailing /v1 and slash) and an API path that
-- starts with "/v1/".
function C.join_url(base, path)
    base = base:gsub("/+$", "")
    if base:sub(-3) == "/v1" then
        return base .. path:sub(4)
    end
    return base .. path
end

--- Parse a duration as OpenAI's x-ratelimit-reset-* headers and messages write it:
-- "6ms", "1s", "1.5s", "1m30s", "2h0m0s", "0s". Returns seconds or nil.
function C.parse_duration(s)
    if type(s) ~= "string" or s == "" then return nil end
    local total, pos, any = 0, 1, false
    while pos <= #s do
        local num, unit, e = s:match("^(%d+%.?%d*)(%a+)()", pos)
        if not num then return nil end
        local n = tonumber(num)
        if unit == "ms" then n = n / 1000
        elseif unit == "s" then n = n * 1
        elseif unit == "m" then n = n * 60
        elseif unit == "h" then n = n * 3600
        else return nil end
        total, pos, any = total + n, e, true
    end
    if not any then return nil end
    return total
end

--- Seconds to wait before retrying, from the response headers (lowercased names) and, as
-- a last resort, a hint in the provider's error message ("try again in 6ms").
-- Order: retry-after-ms, retry-after (delta-seconds; an HTTP-date is ignored), the
-- x-ratelimit-reset-* header of the exhausted limit (OpenAI), the message hint.
function C.retry_after(headers, message)
    local ms = tonumber(headers["retry-after-ms"] or "")
    if ms and ms >= 0 then return ms / 1000 end
    local s = headers["retry-after"]
    if type(s) == "string" and s:match("^%s*%d+%.?%d*%s*$") then
        return tonumber(s)
    end
    -- OpenAI: pick the reset time of a limit whose remaining count is 0; else the longest.
    local best, exhausted
    for _, what in ipairs({ "requests", "tokens" }) do
        local reset = C.parse_duration(headers["x-ratelimit-reset-" .. what])
        if reset then
            if tonumber(headers["x-ratelimit-remaining-" .. what] or "") == 0 then
                exhausted = (exhausted and exhausted > reset) and exhausted or reset
            end
            best = (best and best > reset) and best or reset
        end
    end
    if exhausted or best then return exhausted or best end
    if type(message) == "string" then
        local hint = message:match("[Tt]ry again in (%d+%.?%d*%a+)")
        local d = C.parse_duration(hint)
        if d then return d end
    end
    return nil
end

-- Error types/codes that mean a content filter, in a 4xx body or a 2xx error body.
local FILTER_CODES = { content_filter = true, ResponsibleAIPolicyViolation = true }

--- Classify a non-2xx HTTP response (or a 2xx whose body is a provider error object) into
-- an err table. `status` integer; `headers` lowercased names; `body` string.
-- `provider` names the provider in messages. Returns the err table.
function C.http_error(provider, status, headers, body)
    local perr, ptype, pcode, pmsg
    local doc = type(body) == "string" and body ~= "" and core.decode(body) or nil
    if C.is_object(doc) and C.is_object(doc.error) then
        perr = doc.error
        ptype, pcode, pmsg = C.str(perr.type), C.str(perr.code), C.str(perr.message)
    elseif C.is_object(doc) and C.str(doc.error) then
        pmsg = doc.error -- some OpenAI-compatible servers: {"error": "text"}
    end
    local inner = perr and C.is_object(perr.innererror) and perr.innererror or nil
    local detail
    if ptype or pcode or pmsg then
        local names = {}
        if ptype then names[#names + 1] = ptype end
        if pcode and pcode ~= ptype then names[#names + 1] = pcode end
        detail = concat(names, "/")
        if pmsg then
            detail = (detail ~= "" and detail .. ": " or "") .. C.snippet(pmsg)
        end
    elseif status >= 300 and status < 400 then
        -- Name the target (never followed), without credentials in it.
        local location = headers["location"]
        detail = type(location) == "string" and location ~= ""
            and ("redirect to " .. require("jsoncontract.secrets").scrub_url(location) .. " (not followed)")
            or "redirect without a Location (not followed)"
    elseif type(body) == "string" and body ~= "" then
        detail = "non-JSON error body: " .. C.snippet(body, 120)
    else
        detail = "empty error body"
    end
    local fields = {
        status = status, retryable = false, provider = provider,
        provider_type = ptype, provider_code = pcode,
    }
    local message = format("%s HTTP %d: %s", provider, status, detail)

    if status >= 400 and status < 500
        and (FILTER_CODES[pcode or ""] or FILTER_CODES[ptype or ""]
             or (inner and FILTER_CODES[C.str(inner.code) or ""])) then
        return C.err("filtered", "content_filter", message, fields)
    end
    local kind
    if status == 429 then
        if pcode == "insufficient_quota" or ptype == "insufficient_quota" then
            kind = "quota_exceeded"
        else
            kind = "rate_limited"
            fields.retryable = true
            fields.retry_after = C.retry_after(headers, pmsg)
        end
    elseif status == 529 or ptype == "overloaded_error" then
        kind, fields.retryable = "overloaded", true
        fields.retry_after = C.retry_after(headers, nil)
    elseif status >= 500 and status < 600 then
        kind, fields.retryable = "server_error", true
        fields.retry_after = C.retry_after(headers, nil)
    elseif status >= 400 and status < 500 then
        kind = "client_error"
    elseif status >= 300 and status < 400 then
        kind = "redirect"
        fields.location = headers["location"] and require("jsoncontract.secrets").scrub_url(headers["location"])
    else
        kind = "bad_status"
    end
    return C.err("transport", kind, message, fields)
end

-- Error types/codes found inside a 2xx body or a stream, by what they mean.
local EVENT_KINDS = {
    overloaded_error = "overloaded", rate_limit_error = "rate_limited",
    rate_limit_exceeded = "rate_limited", api_error = "server_error", server_error = "server_error",
    internal_error = "server_error", insufficient_quota = "quota_exceeded",
}
local RETRYABLE = { overloaded = true, rate_limited = true, server_error = true }

--- Classify an error object met inside a 2xx body or a stream (an Anthropic `error` event, an
-- OpenAI Responses `error` / `response.failed`, an Ollama `{"error": "..."}` line).
-- `perr` is the decoded `error` value (object with type/code/message, or a string).
-- Types naming a content filter give filtered/content_filter; overloaded, rate limit and server
-- errors give retryable transport errors; insufficient_quota gives transport/quota_exceeded; an
-- untyped error (a bare string) is a server-side failure (transport/server_error, retryable);
-- any other type is transport/client_error. Returns the err table (status = `status`).
function C.error_object(provider, perr, status)
    local ptype, pcode, pmsg
    if C.is_object(perr) then
        ptype, pcode, pmsg = C.str(perr.type), C.str(perr.code), C.str(perr.message)
    else
        pmsg = C.str(perr)
    end
    local names = {}
    if ptype then names[#names + 1] = ptype end
    if pcode and pcode ~= ptype then names[#names + 1] = pcode end
    local detail = concat(names, "/")
    if pmsg then detail = (detail ~= "" and detail .. ": " or "") .. C.snippet(pmsg) end
    if detail == "" then detail = "error without a message" end
    local fields = { status = status, retryable = false, provider = provider,
        provider_type = ptype, provider_code = pcode }
    local message = format("%s error in the response: %s", provider, detail)
    if FILTER_CODES[pcode or ""] or FILTER_CODES[ptype or ""] then
        return C.err("filtered", "content_filter", message, fields)
    end
    local kind = EVENT_KINDS[pcode or ""] or EVENT_KINDS[ptype or ""]
    if not kind then
        kind = (ptype or pcode) and "client_error" or "server_error"
    end
    fields.retryable = RETRYABLE[kind] or false
    return C.err("transport", kind, message, fields)
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

--- Check the arguments of build_request; returns the checked options with defaults.
-- `modes` is the set of modes the provider supports. Raises at the caller's caller.
function C.check_request_args(contract, messages, opts, modes, provider)
    if type(contract) ~= "table" then
        error("contract must be a table, got " .. type(contract), 3)
    end
    if type(contract.name) ~= "string" or contract.name == "" then
        error("contract.name must be a non-empty string", 3)
    end
    if type(contract.prompt) ~= "string" then
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
    if opts.base_url ~= nil and (type(opts.base_url) ~= "string" or not opts.base_url:match("^https?://")) then
        error("opts.base_url must be an http(s) URL", 3)
    end
    local max_tokens = opts.max_tokens
    if max_tokens == nil then
        max_tokens = _M.DEFAULT_MAX_TOKENS
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
    }, msgs
end

--- A `provider_schema(schema)` function for a subset profile (see `subset`): raises when
-- `schema` is not a table, else returns the copy and the dropped list.
function C.schema_fn(profile)
    return function(schema)
        if type(schema) ~= "table" then
            error("schema must be a table, got " .. type(schema), 2)
        end
        return C.subset(schema, profile)
    end
end

--- Raise (at the caller of build_request) unless the schema root has type "object", as
-- OpenAI strict mode needs.
function C.check_object_root(schema)
    if schema.type ~= "object" then
        error("mode \"native\" needs a schema whose root has type \"object\" (OpenAI strict "
            .. "mode); use mode \"json\" or \"prompt\"", 3)
    end
end

--- The conversation with the contract's prompt as a leading system message.
function C.with_system(prompt, msgs)
    local all = C.new_array()
    all[1] = { role = "system", content = prompt }
    for i, m in ipairs(msgs) do all[i + 1] = m end
    return all
end

--- The request table build_request returns: a JSON POST of `body` to `url`. The key (`o.api_key`,
-- when given) goes in header `auth`: "authorization" sends "Bearer <key>", any other name the
-- key as it is. `extra` holds further headers.
function C.post(o, url, auth, body, mode, schema_sent, dropped, extra)
    local headers = { ["content-type"] = "application/json" }
    if extra then
        for k, v in pairs(extra) do headers[k] = v end
    end
    if o.api_key then
        headers[auth] = auth == "authorization" and "Bearer " .. o.api_key or o.api_key
    end
    return {
        url = url, method = "POST", headers = headers, body = core.encode(body), mode = mode,
        schema_sent = schema_sent, dropped = dropped,
    }
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

--- The err of a gate that failed on a reply read so far.
function C.reply_err(category, kind, message, status, reply, fields)
    local f = { status = status, reply = reply }
    if fields then
        for k, v in pairs(fields) do f[k] = v end
    end
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
-- (protocol/ambiguous_content); one tool call (`args(call)` -> text|nil, name|nil gives the
-- text; nil is protocol/no_content; finish becomes "tool_use"); otherwise the text already in
-- `reply` (protocol/no_content when nil or ""), and protocol/no_content when the finish
-- reason said tool_use without a call. `w` = { many = format with one %d for the count,
-- no_args = message, no_text = message, no_call = message|nil }.
function C.tool_or_text(status, reply, calls, args, w)
    if #calls > 1 then
        return nil, C.reply_err("protocol", "ambiguous_content", format(w.many, #calls), status, reply)
    end
    if #calls == 1 then
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
-- `p.reader(status)`, an envelope that is not a JSON object (protocol/invalid_envelope), then
-- `p.doc(status, h, body, doc)`, the provider's gate. `p` = { name = string, stream = string,
-- reader = function, doc = function, http_error = function(status, h, body)|nil }.
function C.read_envelope(p, status, headers, body)
    local h = C.check_response_args(status, headers, body)
    if status < 200 or status > 299 then
        if p.http_error then return nil, p.http_error(status, h, body) end
        return nil, C.http_error(p.name, status, h, body)
    end
    if (h["content-type"] or ""):find(p.stream, 1, true) then
        local acc = p.reader(status)
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
    return p.doc(status, h, body, doc)
end

--- protocol/invalid_event for a stream event whose data is not a JSON object; `what` names it,
-- e.g. "stream chunk".
function C.not_object_event(pname, what)
    return C.err("protocol", "invalid_event", pname .. " " .. what .. " is not a JSON object")
end

------------------------------------------------------------------------------
-- Schema subsets
------------------------------------------------------------------------------

-- Keywords whose value is one subschema, a map of subschemas, or a list of subschemas.
local ONE = { items = true, additionalProperties = true, ["not"] = true,
    contains = true, propertyNames = true, ["if"] = true, ["then"] = true, ["else"] = true,
    unevaluatedItems = true, unevaluatedProperties = true }
local MAP = { properties = true, ["$defs"] = true, definitions = true,
    patternProperties = true, dependentSchemas = true }
local LIST = { anyOf = true, allOf = true, oneOf = true, prefixItems = true }

local function escape_pointer(s)
    return (tostring(s):gsub("~", "~0"):gsub("/", "~1"))
end

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    return keys
end

-- A regex the providers' constrained decoders are documented not to take: lookaround,
-- backreferences, named groups and other "(?" constructs.
local function unsupported_pattern(p)
    return p:find("(?", 1, true) ~= nil or p:find("\\[1-9]") ~= nil or p:find("\\k<", 1, true) ~= nil
end

local function nullable(sub)
    if type(sub) ~= "table" then
        return sub
    end
    if sub.enum == nil and sub.const == nil and sub["$ref"] == nil and sub.anyOf == nil then
        local t = sub.type
        if type(t) == "string" then
            if t ~= "null" then
                local arr = C.new_array()
                arr[1], arr[2] = t, "null"
                sub.type = arr
            end
            return sub
        elseif C.is_array(t) then
            for _, x in ipairs(t) do
                if x == "null" then return sub end
            end
            t[#t + 1] = "null"
            return sub
        end
    end
    local any = C.new_array()
    any[1], any[2] = sub, { type = "null" }
    return { anyOf = any }
end

--- The JSON Schema subset llama.cpp's schema-to-grammar converter enforces (llama.cpp
-- `grammars/README.md`, "JSON Schemas -> GBNF"; Ollama's `format` goes through the same
-- converter): types, properties/required/additionalProperties, items/prefixItems,
-- minItems/maxItems, enum/const, anyOf/oneOf/allOf, local $ref, minLength/maxLength, a
-- `pattern` anchored with ^...$, formats date/time/date-time/uuid, and numeric bounds on
-- integers only. Everything else is skipped silently by the converter, so it is reported.
C.LLAMA_KEYWORDS = {
    type = true, enum = true, const = true, properties = true, required = true,
    additionalProperties = true, items = true, prefixItems = true, anyOf = true, oneOf = true,
    allOf = true, ["$defs"] = true, definitions = true, ["$ref"] = true, title = true,
    description = true, minItems = true, maxItems = true, minLength = true, maxLength = true,
    pattern = true, format = true, minimum = true, maximum = true, exclusiveMinimum = true,
    exclusiveMaximum = true,
}
C.LLAMA_FORMATS = { date = true, time = true, ["date-time"] = true, uuid = true }
local NUMERIC = { minimum = true, maximum = true, exclusiveMinimum = true, exclusiveMaximum = true }
--- Why llama.cpp's grammar does not enforce keyword `kw` (value `v`) in schema `node`,
-- or nil when it does (source: llama.cpp `json-schema-to-grammar`, as read for this project).
-- @tparam string kw keyword name
-- @param v the keyword's value
-- @tparam table node the subschema holding it
-- @treturn string|nil reason
function C.llama_reject(kw, v, node)
    if NUMERIC[kw] and node.type ~= "integer" then
        return "numeric bounds are enforced on integers only by the llama.cpp grammar"
    end
    if kw == "pattern" and type(v) == "string" and not (v:sub(1, 1) == "^" and v:sub(-1) == "$") then
        return "only patterns anchored with ^...$ are enforced by the llama.cpp grammar"
    end
    return nil
end

--- Copy `schema` into the subset a provider enforces.
-- `profile` = { name = string (for reasons), keep = set of keywords kept as they are,
--   close_objects = boolean (default true: every object gets additionalProperties false;
--   false: additionalProperties is kept or dropped like any other keyword),
--   formats = set of format values kept, reject = function(keyword, value, node) -> reason|nil
--   (drops a kept keyword in a given place), force_required = boolean (every property listed
--   in required; optional ones made nullable), max_min_items = number|nil }.
-- Returns the copy and the dropped list { {schema_pointer, keyword, reason}, ... }.
function C.subset(schema, profile)
    local dropped = C.new_array()
    local function drop(ptr, kw, reason)
        dropped[#dropped + 1] = { schema_pointer = ptr, keyword = kw, reason = reason }
    end
    local walk
    local function walk_value(kw, v, ptr)
        if ONE[kw] then
            return walk(v, ptr)
        elseif MAP[kw] then
            local out = {}
            for _, k in ipairs(sorted_keys(v)) do
                out[k] = walk(v[k], ptr .. "/" .. escape_pointer(k))
            end
            return out
        elseif LIST[kw] then
            local out = C.new_array()
            for i, s in ipairs(v) do
                out[i] = walk(s, ptr .. "/" .. (i - 1))
            end
            return out
        end
        return C.deepcopy(v)
    end
    walk = function(node, ptr)
        if type(node) ~= "table" then
            return node -- boolean schema
        end
        local out = {}
        for _, kw in ipairs(sorted_keys(node)) do
            local v, kptr = node[kw], ptr .. "/" .. escape_pointer(kw)
            if kw == "oneOf" and profile.keep.anyOf and node.anyOf == nil then
                out.anyOf = walk_value("oneOf", v, kptr)
                drop(kptr, kw, "sent as anyOf: " .. profile.name .. " does not support oneOf")
            elseif kw == "required" or (kw == "additionalProperties" and profile.close_objects ~= false) then
                -- handled below with the object rules
                out[kw] = kw == "required" and C.deepcopy(v) or nil
            elseif not profile.keep[kw] then
                drop(kptr, kw, "not supported by " .. profile.name)
            elseif profile.reject and profile.reject(kw, v, node) then
                drop(kptr, kw, profile.reject(kw, v, node))
            elseif kw == "format" and not profile.formats[v] then
                drop(kptr, kw, "format " .. tostring(v) .. " not supported by " .. profile.name)
            elseif kw == "pattern" and type(v) == "string" and unsupported_pattern(v) then
                drop(kptr, kw, "pattern uses a construct " .. profile.name .. " does not support")
            elseif kw == "items" and C.is_array(v) then
                drop(kptr, kw, "tuple form of items not supported by " .. profile.name)
            elseif kw == "minItems" and profile.max_min_items and type(v) == "number"
                and v > profile.max_min_items then
                drop(kptr, kw, "minItems above " .. profile.max_min_items .. " not supported by " .. profile.name)
            else
                out[kw] = walk_value(kw, v, kptr)
            end
        end
        local t = node.type
        local is_obj = t == "object"
            or (t == nil and (node.properties ~= nil or node.additionalProperties ~= nil
                              or node.required ~= nil))
        if C.is_array(t) then
            for _, x in ipairs(t) do
                if x == "object" then is_obj = true end
            end
        end
        if is_obj and profile.close_objects == false then
            -- the provider takes objects as they are: nothing to force
            if node.required ~= nil and not C.is_array(node.required) then out.required = nil end
        elseif is_obj then
            if node.additionalProperties ~= false then
                drop(ptr .. "/additionalProperties", "additionalProperties",
                    "set to false: " .. profile.name .. " needs closed objects")
            end
            out.additionalProperties = false
            local props = C.is_object(node.properties) and node.properties or {}
            local req, listed = C.new_array(), {}
            if C.is_array(node.required) then
                for _, name in ipairs(node.required) do
                    if props[name] ~= nil and not listed[name] then
                        listed[name] = true
                        req[#req + 1] = name
                    elseif props[name] == nil then
                        drop(ptr .. "/required", "required", "required name " .. tostring(name)
                            .. " has no entry in properties; not sent")
                    end
                end
            end
            if profile.force_required then
                for _, name in ipairs(sorted_keys(props)) do
                    if not listed[name] then
                        req[#req + 1] = name
                        out.properties[name] = nullable(out.properties[name])
                        drop(ptr .. "/properties/" .. escape_pointer(name), "required",
                            "optional property sent as required and nullable (" .. profile.name
                            .. " needs every property required); null there stands for absent")
                        dropped[#dropped].optional = true
                    end
                end
            end
            if #req > 0 or profile.force_required then
                out.required = req
            else
                out.required = nil
            end
        elseif node.required ~= nil then
            out.required = nil
            drop(ptr .. "/required", "required", "required outside an object schema; not sent")
        end
        return out
    end
    return walk(C.deepcopy(schema), ""), dropped
end

return _M
