--- The retry and budget policy of the attempt loop, as a table: the defaults, the check of a
-- caller's overrides, the backoff, which transport failures are transient, and the budgets
-- (each one row of `BUDGETS`, checked by the one function `over_budget`).
-- @module jsoncontract.run.policy
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"

local type, pairs, ipairs, tostring, error = type, pairs, ipairs, tostring, error
local ceil, min, random, huge = math.ceil, math.min, math.random, math.huge
local format, gmatch = string.format, string.gmatch

local _M = { _VERSION = core._VERSION }

--- The default policy; `opts.policy` fields override these one by one.
-- @table DEFAULT
-- @field max_attempts model answers checked per item (3)
-- @field transport_retries extra HTTP tries per attempt for transient failures (2)
-- @field backoff_base_ms first backoff, doubled per try, with full jitter (500)
-- @field backoff_max_ms cap of one backoff wait (8000)
-- @field retry_after_max_ms longest `Retry-After` honoured; longer goes to review (30000)
-- @field token_budget estimated tokens (words x 1.3) of the conversation a retry would resend,
--   system prompt excluded; exceeding it stops retrying (nil: none)
-- @field usage_budget provider-reported tokens (input + output) summed over attempts (nil: none)
-- @field time_budget_ms wall time for the whole item (nil: none)
-- @field reask_on_truncation after a reply cut at the output limit, ask once more with the same
--   conversation and twice the output budget, as a new attempt (false: a truncated reply goes to
--   review). The cut reply is never repaired, reused or accepted.
_M.DEFAULT = {
    max_attempts = 3,
    transport_retries = 2,
    backoff_base_ms = 500,
    backoff_max_ms = 8000,
    retry_after_max_ms = 30000,
    token_budget = nil,
    usage_budget = nil,
    time_budget_ms = nil,
    reask_on_truncation = false,
}

-- Each field: the least value, and whether nil is allowed (a budget that is off).
local FIELDS = {
    max_attempts = { least = 1 }, transport_retries = { least = 0 }, backoff_base_ms = { least = 0 },
    backoff_max_ms = { least = 0 }, retry_after_max_ms = { least = 0 },
    token_budget = { least = 1, optional = true }, usage_budget = { least = 1, optional = true },
    time_budget_ms = { least = 1, optional = true }, reask_on_truncation = { boolean = true },
}
local FIELD_ORDER = { "max_attempts", "transport_retries", "backoff_base_ms", "backoff_max_ms",
    "retry_after_max_ms", "token_budget", "usage_budget", "time_budget_ms", "reask_on_truncation" }

--- The policy for one `ask`: the defaults with the caller's fields over them, every field checked.
-- @tparam table|nil p the caller's `opts.policy`
-- @tparam[opt=1] integer level added to the error level, so the caller of `ask` is blamed
-- @treturn table policy
-- @raise on an unknown field, or a value that is not a whole number in range (or a boolean)
function _M.merge(p, level)
    level = (level or 1) + 1
    local out = {}
    for k, v in pairs(_M.DEFAULT) do out[k] = v end
    if p ~= nil then
        if type(p) ~= "table" then error("ask: opts.policy must be a table", level) end
        for k, v in pairs(p) do
            if FIELDS[k] == nil then error("ask: unknown policy field '" .. tostring(k) .. "'", level) end
            out[k] = v
        end
    end
    -- Every field is checked: a NaN, a negative or an infinite count is a mistake, not a policy.
    for _, name in ipairs(FIELD_ORDER) do
        local f, v = FIELDS[name], out[name]
        if f.boolean then
            if type(v) ~= "boolean" then error("ask: policy." .. name .. " must be a boolean", level) end
        elseif not (f.optional and v == nil) then
            if type(v) ~= "number" or v ~= v or v < f.least or v % 1 ~= 0 or v == huge then
                error(format("ask: policy.%s must be a whole number >= %d%s", name, f.least,
                    f.optional and " or nil" or ""), level)
            end
        end
    end
    return out
end

-- Transport kinds that are worth the same request again.
local TRANSIENT = { timeout = true, connect = true, reset = true, rate_limited = true,
    server_error = true, overloaded = true }

--- May this err be retried unchanged (a transient transport failure)?
-- The err's own `retryable` wins when set (providers know e.g. insufficient_quota is not).
-- @tparam table|nil err
-- @treturn boolean
function _M.transient(err)
    if not err or err.category ~= "transport" then return false end
    if err.retryable ~= nil then return err.retryable and true or false end
    return TRANSIENT[err.kind] or false
end

-- HTTP statuses every request gets alike, whatever its item: the key, the access, the model
-- or the path is wrong (RFC 9110 §15.5.2, §15.5.4, §15.5.5).
local SYSTEMIC_STATUS = { [401] = "unauthorized", [403] = "forbidden", [404] = "not_found" }

--- Is this failure one that no item can fix: the model cannot be reached (connection refused,
-- host not resolved, no route, TLS failure), or it refuses every request alike (HTTP 401, 403,
-- 404 for the model or the path, a spent quota)? Such a failure is the job's, never one item's:
-- a batch stops on a run of them (`jsoncontract.jobs.breaker`) rather than sending every item
-- to review.
-- @tparam table|nil err an outcome's reason, or any err
-- @treturn string|nil the cause: "refused", "dns", "unreachable", "tls", "unauthorized",
--   "forbidden", "not_found" or "quota"; nil for any other failure
function _M.systemic(err)
    if type(err) ~= "table" or err.category ~= "transport" then return nil end
    local kind = err.kind
    if kind == "connect" then
        local code = err.curl_code
        if code == "CURLE_COULDNT_RESOLVE_HOST" or code == "CURLE_COULDNT_RESOLVE_PROXY" then return "dns" end
        local words = tostring(err.detail or "") .. " " .. tostring(err.message or "")
        if words:lower():find("refused", 1, true) then return "refused" end
        return "unreachable"
    elseif kind == "tls" then
        return "tls"
    elseif kind == "quota_exceeded" then
        return "quota"
    elseif kind == "client_error" then
        return SYSTEMIC_STATUS[err.status]
    end
    return nil
end

--- Seconds to wait before HTTP try `try + 1`: `retry_after` when the server said so, else
-- full jitter over `backoff_base_ms * 2^(try-1)`, capped at `backoff_max_ms`.
-- @tparam table policy
-- @tparam integer try the try that failed (1-based)
-- @tparam number|nil retry_after seconds
-- @treturn number seconds
function _M.backoff(policy, try, retry_after)
    if retry_after then return retry_after end
    local cap = min(policy.backoff_max_ms, policy.backoff_base_ms * 2 ^ (try - 1))
    return random() * cap / 1000
end

--- Estimate tokens as words x 1.3, rounded up (a common rule of thumb for English text; a budget guard, not a bill).
-- @tparam string text
-- @treturn integer
function _M.estimate_tokens(text)
    local words = 0
    for _ in gmatch(text, "%S+") do words = words + 1 end
    return ceil(words * 1.3)
end

--- The budgets, in the order they are checked. `spent(state)` reads what was spent from
-- `state` = `{messages = conversation, usage = {input_tokens, output_tokens}, elapsed_ms}`;
-- `over(spent, limit)` says whether another attempt is out of budget.
_M.BUDGETS = {
    { field = "token_budget", kind = "token_budget",
      spent = function(s)
          local n = 0
          for _, m in ipairs(s.messages) do n = n + _M.estimate_tokens(m.content) end
          return n
      end,
      over = function(spent, limit) return spent > limit end,
      words = "the conversation would resend %d estimated tokens, over the budget of %d" },
    { field = "usage_budget", kind = "usage_budget",
      spent = function(s) return s.usage.input_tokens + s.usage.output_tokens end,
      over = function(spent, limit) return spent >= limit end,
      words = "%d tokens used, budget %d" },
    { field = "time_budget_ms", kind = "time_budget",
      spent = function(s) return s.elapsed_ms end,
      over = function(spent, limit) return spent >= limit end,
      words = "%d ms spent, budget %d ms" },
}

--- The one budget check before another attempt.
-- @tparam table policy
-- @tparam table state see `BUDGETS`
-- @tparam table last the err of the last attempt (its message and errors are kept)
-- @treturn table|nil err, category "budget" with the budget's kind, when one is spent
function _M.over_budget(policy, state, last)
    for _, b in ipairs(_M.BUDGETS) do
        local limit = policy[b.field]
        if limit then
            local spent = b.spent(state)
            if b.over(spent, limit) then
                return errors.new("budget", b.kind, format(b.words, spent, limit) .. "; last: " .. last.message,
                    { errors = last.errors })
            end
        end
    end
    return nil
end

return _M
