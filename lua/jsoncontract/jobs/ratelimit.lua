--- Rate limits per provider lane: a requests-per-minute and a tokens-per-minute token bucket,
-- and a pause of the whole lane when the provider says 429 with `Retry-After`.
-- A lane is one provider + base URL + API key: the unit a provider counts limits against.
-- Pure arithmetic on a clock passed in (seconds), so the scheduler owns time and waiting.
-- @module jsoncontract.jobs.ratelimit
local core = require "jsoncontract.core"

local type, error, tonumber, tostring, ipairs = type, error, tonumber, tostring, ipairs
local max, min, huge = math.max, math.min, math.huge
local match, format = string.match, string.format

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

local url_host = require("jsoncontract.util").url_host

--- The limits a job's lane runs with, and the words that say so. The provider's defaults
-- (its facts' `rate_limit`, see `jsoncontract.providers.facts`) count against its own API
-- host only: a run on another base URL (a local server, a proxy) has no limit unless `rpm` or
-- `tpm` is given, and neither has the stand-in. A limit given wins over the default; 0 is none.
-- @tparam string provider a provider name
-- @tparam string|nil base_url the base URL asked (nil: the provider's own)
-- @tparam number|nil rpm requests per minute given (`--rpm`), nil when not given
-- @tparam number|nil tpm estimated tokens per minute given (`--tpm`), nil when not given
-- @tparam[opt] boolean standin the stand-in answers
-- @treturn table|nil `{rpm, tpm, name}` for `new`, nil when no limit is on
-- @treturn string what is on and why, e.g. "rate limits: 500 requests and 200000 tokens a minute
--   (openai's defaults for api.openai.com; --rpm/--tpm change them)"
function _M.limits(provider, base_url, rpm, tpm, standin)
    local f = require("jsoncontract.providers").facts(provider)
    local d = f.rate_limit
    local own = d and (base_url == nil or url_host(base_url) == url_host(f.base_url))
    local why
    if rpm ~= nil or tpm ~= nil then
        why = "--rpm/--tpm"
        if own and not standin then
            rpm, tpm = rpm or d.rpm, tpm or d.tpm
            why = why .. format(", else %s's defaults for %s", provider, url_host(f.base_url))
        end
    elseif standin then
        return nil, "rate limits: none (the stand-in; --rpm/--tpm set them)"
    elseif own then
        rpm, tpm = d.rpm, d.tpm
        why = format("%s's defaults for %s, %s; --rpm/--tpm change them", provider, url_host(f.base_url), d.source)
    else
        return nil, format("rate limits: none (%s is not %s's API host%s; --rpm/--tpm set them)",
            url_host(base_url) or tostring(base_url), provider, d and "" or ", and it has no default")
    end
    rpm, tpm = (rpm or 0) > 0 and rpm or nil, (tpm or 0) > 0 and tpm or nil
    if not rpm and not tpm then return nil, "rate limits: none (" .. why .. ")" end
    local on = {}
    if rpm then on[#on + 1] = format("%d requests", rpm) end
    if tpm then on[#on + 1] = format("%d tokens", tpm) end
    return { rpm = rpm, tpm = tpm, name = provider }, format("rate limits: %s a minute (%s)",
        table.concat(on, " and "), why)
end

--- A new lane.
-- @tparam[opt] table opts `rpm` (requests per minute, nil or 0 = no limit), `tpm` (estimated
--   tokens per minute, nil or 0 = no limit), `burst_seconds` (how many seconds of quota may go
--   out at once, default 10), `name` (string, for messages)
-- @treturn table lane
-- @raise on a negative or non-numeric limit
function _M.new(opts)
    opts = opts or {}
    for _, k in ipairs { "rpm", "tpm", "burst_seconds" } do
        local v = opts[k]
        if v ~= nil and (type(v) ~= "number" or v < 0 or v ~= v) then
            error("ratelimit.new: " .. k .. " must be a number >= 0", 2)
        end
    end
    local burst = opts.burst_seconds or 10
    local self = { name = opts.name or "lane", paused_until = 0, wait_s = 0, pauses = 0, requests = 0 }
    if opts.rpm and opts.rpm > 0 then
        self.r_rate = opts.rpm / 60
        self.r_cap = max(1, self.r_rate * burst)
        self.r_tokens = self.r_cap
    end
    if opts.tpm and opts.tpm > 0 then
        self.t_rate = opts.tpm / 60
        self.t_cap = max(1, self.t_rate * burst)
        self.t_tokens = self.t_cap
    end
    self.last = nil
    return setmetatable(self, mt)
end

local function refill(self, now)
    local last = self.last or now
    local dt = max(0, now - last)
    self.last = now
    if self.r_rate then self.r_tokens = min(self.r_cap, self.r_tokens + dt * self.r_rate) end
    if self.t_rate then self.t_tokens = min(self.t_cap, self.t_tokens + dt * self.t_rate) end
end

--- Estimated tokens of a request: body bytes / 4 (input) plus the output budget it asks for.
-- @tparam table req a transport request (`body` string)
-- @treturn integer
function _M.estimate(req)
    local body = type(req) == "table" and type(req.body) == "string" and req.body or ""
    local out = tonumber(match(body, '"max_tokens"%s*:%s*(%d+)') or match(body, '"max_output_tokens"%s*:%s*(%d+)')
        or match(body, '"maxOutputTokens"%s*:%s*(%d+)')) or 0
    return math.floor(#body / 4) + out
end

--- May a request of `cost` tokens go now? Takes the tokens when it may.
-- @tparam number now seconds (any monotonic origin, the same on every call)
-- @tparam[opt] number cost estimated tokens (default 0)
-- @treturn number 0 when sent now, else seconds to wait before asking again
function _M.admit(self, now, cost)
    cost = cost or 0
    refill(self, now)
    if now < self.paused_until then return self.paused_until - now end
    local wait = 0
    if self.r_rate and self.r_tokens < 1 then wait = max(wait, (1 - self.r_tokens) / self.r_rate) end
    if self.t_rate then
        -- A request larger than the whole bucket waits for a full bucket, never forever.
        local need = min(cost, self.t_cap)
        if self.t_tokens < need then wait = max(wait, (need - self.t_tokens) / self.t_rate) end
    end
    if wait > 0 then return wait end
    if self.r_rate then self.r_tokens = self.r_tokens - 1 end
    if self.t_rate then self.t_tokens = self.t_tokens - min(cost, self.t_cap) end
    self.requests = self.requests + 1
    return 0
end

--- Pause the whole lane (a 429 with `Retry-After`): no request of this lane goes out before
-- `now + seconds`.
-- @tparam number now seconds
-- @tparam number seconds
function _M.pause(self, now, seconds)
    if type(seconds) ~= "number" or seconds ~= seconds or seconds <= 0 then return end
    seconds = min(seconds, 3600)
    if now + seconds > self.paused_until then
        self.paused_until = now + seconds
        self.pauses = self.pauses + 1
    end
end

--- Count time a request spent waiting on this lane (for the summary).
-- @tparam number seconds
function _M.waited(self, seconds)
    if seconds > 0 then self.wait_s = self.wait_s + seconds end
end

--- Parse a `Retry-After` header value: delta-seconds (RFC 9110 §10.2.3); an HTTP date is
-- read as 1 second (clocks differ; the provider's backoff still applies).
-- @tparam string|nil value
-- @treturn number|nil seconds
function _M.retry_after(value)
    if type(value) ~= "string" then return nil end
    local n = tonumber(match(value, "^%s*(%d+%.?%d*)%s*$"))
    if n then return n end
    if value:match("%a") then return 1 end
    return nil
end

_M.unlimited = huge

return _M
