--- The transport gate's reading of an HTTP answer: a non-2xx status (or an error object a
-- provider sends inside a 2xx body or a stream) becomes a transport, filtered or quota err
-- with `status`, `retryable` and `retry_after` (seconds). Shared by every provider and by
-- both transports; it knows no provider by name (the name only appears in messages).
-- @module jsoncontract.transport.http_status
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local json = require "jsoncontract.json"
local secrets = require "jsoncontract.secrets"

local type, ipairs, tonumber = type, ipairs, tonumber
local concat = table.concat
local format = string.format

local _M = { _VERSION = core._VERSION }
local C = _M

local is_object = json.is_object
local snippet = errors.snippet

local function str(v)
    if type(v) == "string" then return v end
    return nil
end

local function new_err(category, kind, message, fields)
    return errors.new(category, kind, secrets.redact_credentials(message), fields)
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
    if is_object(doc) and is_object(doc.error) then
        perr = doc.error
        ptype, pcode, pmsg = str(perr.type), str(perr.code), str(perr.message)
    elseif is_object(doc) and str(doc.error) then
        pmsg = doc.error -- some OpenAI-compatible servers: {"error": "text"}
    end
    local inner = perr and is_object(perr.innererror) and perr.innererror or nil
    local detail
    if ptype or pcode or pmsg then
        local names = {}
        if ptype then names[#names + 1] = ptype end
        if pcode and pcode ~= ptype then names[#names + 1] = pcode end
        detail = concat(names, "/")
        if pmsg then
            detail = (detail ~= "" and detail .. ": " or "") .. snippet(pmsg)
        end
    elseif status >= 300 and status < 400 then
        -- Name the target (never followed), without credentials in it.
        local location = headers["location"]
        detail = type(location) == "string" and location ~= ""
            and ("redirect to " .. secrets.scrub_url(location) .. " (not followed)")
            or "redirect without a Location (not followed)"
    elseif type(body) == "string" and body ~= "" then
        detail = "non-JSON error body: " .. snippet(body, 120)
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
             or (inner and FILTER_CODES[str(inner.code) or ""])) then
        return new_err("filtered", "content_filter", message, fields)
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
    elseif status == 503 or status == 529 or ptype == "overloaded_error" then
        -- 503: "temporarily unable ... due to a temporary overload" (RFC 9110 §15.6.4), with a
        -- Retry-After when the server knows (OpenAI, Gemini UNAVAILABLE); 529: Anthropic's
        kind, fields.retryable = "overloaded", true
        fields.retry_after = C.retry_after(headers, nil)
    elseif status >= 500 and status < 600 then
        kind, fields.retryable = "server_error", true
        fields.retry_after = C.retry_after(headers, nil)
    elseif status >= 400 and status < 500 then
        kind = "client_error"
    elseif status >= 300 and status < 400 then
        kind = "redirect"
        fields.location = headers["location"] and secrets.scrub_url(headers["location"])
    else
        kind = "bad_status"
    end
    return new_err("transport", kind, message, fields)
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
    if is_object(perr) then
        ptype, pcode, pmsg = str(perr.type), str(perr.code), str(perr.message)
    else
        pmsg = str(perr)
    end
    local names = {}
    if ptype then names[#names + 1] = ptype end
    if pcode and pcode ~= ptype then names[#names + 1] = pcode end
    local detail = concat(names, "/")
    if pmsg then detail = (detail ~= "" and detail .. ": " or "") .. snippet(pmsg) end
    if detail == "" then detail = "error without a message" end
    local fields = { status = status, retryable = false, provider = provider,
        provider_type = ptype, provider_code = pcode }
    local message = format("%s error in the response: %s", provider, detail)
    if FILTER_CODES[pcode or ""] or FILTER_CODES[ptype or ""] then
        return new_err("filtered", "content_filter", message, fields)
    end
    local kind = EVENT_KINDS[pcode or ""] or EVENT_KINDS[ptype or ""]
    if not kind then
        kind = (ptype or pcode) and "client_error" or "server_error"
    end
    fields.retryable = RETRYABLE[kind] or false
    return new_err("transport", kind, message, fields)
end

return _M
