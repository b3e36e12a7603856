--- One HTTP exchange of the attempt loop, with its retries: send the request, check what the
-- transport returned, read it through the provider's protocol gate, and retry a transient
-- transport failure with backoff and `Retry-After` within the policy. Nothing here decides
-- about the reply's content (that is the contract's gates).
--
-- This is where what a server sent comes in, and the one place the key is taken out of it
-- (every spelling, `jsoncontract.secrets`): from the body and every header before the
-- provider's protocol gate reads them (so a quote it clips never keeps half a key), and from
-- what the envelope decoded (one layer of escapes fewer can spell the key anew); the headers
-- are cut to what may be recorded (`secrets.recorded_headers`). Gates, records and the
-- outcome get only that; nothing downstream redacts the response again.
-- @module jsoncontract.run.exchange
local core = require "jsoncontract.core"
local policy_mod = require "jsoncontract.run.policy"
local compat = require "jsoncontract.compat"
local secrets = require "jsoncontract.secrets"

local type, tonumber, error = type, tonumber, error
local redact, redact_value, recorded_headers = secrets.redact, secrets.redact_value, secrets.recorded_headers
local floor, max = math.floor, math.max
local format = string.format
local now = compat.now

local _M = { _VERSION = core._VERSION }

-- The `timeout_ms` both shipped transports use when a request gives none.
local TRANSPORT_DEFAULT_TIMEOUT_MS = 90000

-- Set `req.timeout_ms` for the next try: the caller's `timeout_ms`, or what the time budget
-- leaves when that is less, so a try in flight cannot outlive the budget. Returns true when
-- the budget set it.
local function arm_timeout(req, own, left)
    if left then
        local cap = max(1, floor(left))
        local limit = own == nil and TRANSPORT_DEFAULT_TIMEOUT_MS or own
        if limit == 0 or cap < limit then
            req.timeout_ms = cap
            return true
        end
    end
    req.timeout_ms = own
    return false
end

local function ms_since(t0) return floor((now() - t0) * 1000 + 0.5) end

-- A response must be {status = integer, headers = table|nil, body = string}: anything else is a
-- transport written wrong, which raises (misuse), never a gate failure.
local function check_response(res)
    if type(res) ~= "table" or type(res.status) ~= "number" or type(res.body) ~= "string"
        or (res.headers ~= nil and type(res.headers) ~= "table") then
        error("ask: the transport returned " .. type(res) .. " where a response "
            .. "{status = integer, headers = table, body = string} was expected", 0)
    end
end

local function check_transport_err(terr)
    if type(terr) ~= "table" or terr.category ~= "transport" or type(terr.kind) ~= "string" then
        error("ask: the transport returned nil and " .. type(terr) .. " where an err table "
            .. "{category = \"transport\", kind, message} was expected", 0)
    end
end

--- Send one request, retrying transient transport failures.
-- @tparam table x fields:
--   `send` (function(req) -> res | nil, err: the transport),
--   `request` (the transport request: url, method, headers, body, timeouts; its `timeout_ms`
--   is set before every try, see `timeout_ms`),
--   `timeout_ms` (number|nil: the caller's timeout per try, nil the transport's default 90000,
--   0 none; a try gets the smaller of it and what `time_left_ms` leaves),
--   `provider` (the provider module: its `read_response` is the protocol gate),
--   `policy` (from `jsoncontract.run.policy.merge`), `sleep` (function(seconds)),
--   `secret` (string|nil: the API key, redacted from everything the server sent),
--   `time_left_ms` (function(x) -> number|nil: what the time budget leaves, nil when none),
--   `on_transport_failure` (function(result, retry, x): called for every try that failed at the
--   transport gate, with that try's result (as returned, below) and whether it is retried);
--   both get `x` itself, so a caller keeps its state in `x` and makes no closure per exchange
-- @treturn table result `{tries = integer, status = integer|nil (HTTP: the err's, else the
--   response's), reply = table|nil (the reply read: whole, or as far as a failed gate read it,
--   beside `err`), err = table|nil, elapsed_ms = integer (the last try), usage =
--   {input_tokens, output_tokens} (every try), headers = table|nil (the last response's headers
--   that may be recorded: `secrets.recorded_headers`), out_of_time = true|nil (the last try
--   timed out at the limit the time budget set: the budget is spent, nothing is retried)}`;
--   the key is in none of it
-- @raise when the transport returns something that is not a response or a transport err
function _M.exchange(x)
    local policy = x.policy
    local usage = { input_tokens = 0, output_tokens = 0 }
    local try = 0
    while true do
        try = try + 1
        local capped = arm_timeout(x.request, x.timeout_ms, x.time_left_ms(x))
        local t0 = now()
        local res, terr = x.send(x.request)
        local reply, err, partial, headers
        if res ~= nil then
            check_response(res)
            -- A server may echo the key (in a body, a header, a Location, in any spelling): it
            -- goes no further than here. Redacted before the provider reads, so a quote the
            -- provider clips never keeps half a key ...
            local inbound = redact_value(res.headers, x.secret)
            reply, err, partial = x.provider.read_response(res.status, inbound, redact(res.body, x.secret))
            -- ... and in what the envelope decoded (the content, a refusal, an error's message),
            -- where one layer of escapes fewer may spell it anew.
            if x.secret ~= nil then
                reply, err, partial = redact_value(reply, x.secret), redact_value(err, x.secret),
                    redact_value(partial, x.secret)
            end
            headers = recorded_headers(inbound)
        else
            check_transport_err(terr)
            err = terr
        end
        -- A gate that failed on a reply read so far returned it beside its err: it travels on
        -- as `reply`, beside `err`.
        reply = reply or partial
        if reply and reply.usage then
            usage.input_tokens = usage.input_tokens + (tonumber(reply.usage.input_tokens) or 0)
            usage.output_tokens = usage.output_tokens + (tonumber(reply.usage.output_tokens) or 0)
        end
        local result = { tries = try, status = err and err.status or res and res.status, reply = reply,
            err = err, headers = headers, elapsed_ms = ms_since(t0), usage = usage }
        if not (err and err.category == "transport") then return result end
        -- Cut by the budget, not by the provider: no time is left for another try.
        result.out_of_time = capped and err.kind == "timeout" or nil

        local retry = not result.out_of_time and policy_mod.transient(err) and try <= policy.transport_retries
        local wait = retry and policy_mod.backoff(policy, try, err.retry_after)
        if policy_mod.transient(err) and err.retry_after and err.retry_after * 1000 > policy.retry_after_max_ms then
            -- Say why this retryable failure is not retried, and how long the server asked for.
            retry = false
            err.message = format("%s; Retry-After asks for %g s, over the cap of %g s " ..
                "(policy.retry_after_max_ms), so it was not waited for", err.message,
                err.retry_after, policy.retry_after_max_ms / 1000)
            err.retry_after_over_cap = true
        end
        local left = x.time_left_ms(x)
        -- the wait and at least a millisecond of the next try must fit in the budget
        if retry and left and wait * 1000 >= left then retry = false end
        x.on_transport_failure(result, retry, x)
        if not retry then return result end
        x.sleep(wait)
    end
end

return _M
