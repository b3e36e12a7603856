--- The attempt loop (DESIGN.md "The chain of gates").
-- One call of `ask` sends the contract and the input to a provider, runs every gate on the
-- reply, and on a format, schema or (retryable) rules failure appends the model's answer and
-- one user message listing the errors, then asks again, up to `policy.max_attempts`. Refusals,
-- content filters and truncated replies are never repaired and never accepted. Transient
-- transport failures (429, 5xx, 529, timeout, reset, connect) are retried unchanged with backoff
-- and `Retry-After`, within `policy.transport_retries`. Whatever cannot be accepted goes to
-- `human_review` with the reason. Every HTTP exchange writes one evidence record.
-- @module jsoncontract.run
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local secrets = require "jsoncontract.secrets"
local providers = require "jsoncontract.providers"

local type, pairs, ipairs, tostring, tonumber, error = type, pairs, ipairs, tostring, tonumber, error
local floor, ceil, min, random = math.floor, math.ceil, math.min, math.random
local concat = table.concat
local format, gmatch = string.format, string.gmatch

local _M = { _VERSION = core._VERSION }

local has_socket, socket = pcall(require, "socket")

--- Wall-clock seconds (sub-second where luasocket is available).
local function now()
    if has_socket then return socket.gettime() end
    return os.time()
end

-- Under nginx, waiting must yield to the event loop, never block the worker.
local ngx_sleep = type(ngx) == "table" and ngx.sleep or nil

local function default_sleep(seconds)
    if seconds <= 0 then return end
    if ngx_sleep then return ngx_sleep(seconds) end
    if has_socket then return socket.sleep(seconds) end
    os.execute(format("sleep %.3f", seconds))
end

--- The default policy; `opts.policy` fields override these one by one.
-- @table DEFAULT_POLICY
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
_M.DEFAULT_POLICY = {
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

local TRANSIENT_TRANSPORT = { timeout = true, connect = true, reset = true, rate_limited = true,
    server_error = true, overloaded = true }

local ASK_OPTS = {
    provider = true, model = true, api_key = true, base_url = true, max_tokens = true, temperature = true,
    mode = true, transport = true, sleep = true, evidence = true, context = true, adapters = true,
    request_id = true, item_id = true, policy = true, timeout_ms = true, connect_timeout_ms = true,
    max_response_bytes = true,
}

--- Estimate tokens as words x 1.3, rounded up (the estimate SEEDS.md's lesson uses).
-- @tparam string text
-- @treturn integer
function _M.estimate_tokens(text)
    local words = 0
    for _ in gmatch(text, "%S+") do words = words + 1 end
    return ceil(words * 1.3)
end

local function history_tokens(messages)
    local n = 0
    for _, m in ipairs(messages) do n = n + _M.estimate_tokens(m.content) end
    return n
end

-- Feedback stays bounded whatever the reply: a reply with 10,000 wrong items must not
-- become a 100 MB prompt.
local FEEDBACK_MAX_ERRORS = 20
local FEEDBACK_MAX_MESSAGE = 300

local function clip(text)
    text = tostring(text)
    if #text <= FEEDBACK_MAX_MESSAGE then return text end
    -- cut at a UTF-8 character boundary
    local cut = FEEDBACK_MAX_MESSAGE
    while cut > 0 and text:byte(cut + 1) and text:byte(cut + 1) >= 0x80 and text:byte(cut + 1) < 0xC0 do
        cut = cut - 1
    end
    return text:sub(1, cut) .. "..."
end

-- The one feedback message sent after a format, schema or rules failure: at most
-- FEEDBACK_MAX_ERRORS errors, each clipped, then how many more there are.
local function feedback_message(err)
    local items = {}
    local list = err.errors
    if list and #list > 0 then
        for i = 1, min(#list, FEEDBACK_MAX_ERRORS) do items[i] = clip(list[i].message) end
        if #list > FEEDBACK_MAX_ERRORS then
            items[#items + 1] = format("and %d more errors", #list - FEEDBACK_MAX_ERRORS)
        end
    else
        items[1] = clip(err.message)
    end
    local what
    if err.category == "format" then
        what = "The answer is not exactly one valid JSON value: "
    elseif err.category == "rules" then
        what = "The answer breaks the contract's rules: "
    else
        what = "The answer does not match the schema: "
    end
    return what .. concat(items, "; ") .. ". Return only JSON by the schema, nothing else."
end
_M.feedback_message = feedback_message

-- Kinds and pointers only: messages may quote the model's text, which stays out of
-- evidence unless the caller opted in (the writer drops `text`/`feedback`).
local function error_summary(err)
    if not err or not err.errors then return nil end
    local out = setmetatable({}, core.array_mt)
    for i, e in ipairs(err.errors) do
        out[i] = { pointer = e.pointer, keyword = e.keyword, schema_pointer = e.schema_pointer }
    end
    return out
end

local function merge_policy(p)
    local out = {}
    for k, v in pairs(_M.DEFAULT_POLICY) do out[k] = v end
    if p ~= nil then
        if type(p) ~= "table" then error("ask: opts.policy must be a table", 3) end
        for k, v in pairs(p) do
            if _M.DEFAULT_POLICY[k] == nil and k ~= "token_budget" and k ~= "usage_budget"
                and k ~= "time_budget_ms" then
                error("ask: unknown policy field '" .. tostring(k) .. "'", 3)
            end
            out[k] = v
        end
    end
    -- Every field is checked: a NaN, a negative or an infinite count is a mistake, not a policy.
    local function count(name, least, optional)
        local v = out[name]
        if optional and v == nil then return end
        if type(v) ~= "number" or v ~= v or v < least or v % 1 ~= 0 or v == math.huge then
            error(format("ask: policy.%s must be a whole number >= %d%s", name, least,
                optional and " or nil" or ""), 4)
        end
    end
    count("max_attempts", 1)
    count("transport_retries", 0)
    count("backoff_base_ms", 0)
    count("backoff_max_ms", 0)
    count("retry_after_max_ms", 0)
    count("token_budget", 1, true)
    count("usage_budget", 1, true)
    count("time_budget_ms", 1, true)
    if type(out.reask_on_truncation) ~= "boolean" then
        error("ask: policy.reask_on_truncation must be a boolean", 4)
    end
    return out
end

local request_counter = 0
local function new_request_id()
    request_counter = request_counter + 1
    return format("jc-%x-%d-%04d", floor(now() * 1000), request_counter, random(0, 9999))
end

local function add_usage(total, usage)
    if not usage then return end
    total.input_tokens = total.input_tokens + (tonumber(usage.input_tokens) or 0)
    total.output_tokens = total.output_tokens + (tonumber(usage.output_tokens) or 0)
end

-- Backoff before HTTP try `try` (1-based), honouring a Retry-After in seconds.
local function backoff_seconds(policy, try, retry_after)
    if retry_after then return retry_after end
    local cap = min(policy.backoff_max_ms, policy.backoff_base_ms * 2 ^ (try - 1))
    return random() * cap / 1000
end

--- Ask a model for a value by `contract`, check it, and retry with feedback within the policy.
-- @tparam table contract from `jsoncontract.contract.new`
-- @tparam string input the user input (e.g. the mail text), sent as the first user message
-- @tparam table opts
--   `provider` (a name from `jsoncontract.providers.names`: "openai", "openai_responses", "anthropic",
--   "gemini", "ollama", "llamacpp"; or a provider module; required), `model` (string, required),
--   `api_key`, `base_url`, `max_tokens`, `temperature`, `mode` ("native"|"json"|"prompt"),
--   `transport` (function(req) -> res | nil, err; default `jsoncontract.transport.curl`.request),
--   `timeout_ms`, `connect_timeout_ms`, `max_response_bytes` (passed to the transport),
--   `sleep` (function(seconds), default `ngx.sleep` under OpenResty, else luasocket's),
--   `evidence` (a writer from `jsoncontract.evidence`),
--   `context` (passed to rules), `adapters` (list of adapter names; default the contract's),
--   `request_id`, `item_id` (strings for evidence), `policy` (table overriding `DEFAULT_POLICY`)
-- @treturn table outcome: `status` ("accepted"|"human_review"), `value` (when accepted),
--   `reason` (err table when not accepted: category, kind, message, errors), `attempts` (list of
--   `{attempt, tries, gate, category, kind, message, errors, http_status, finish, usage, elapsed_ms,
--   adapters}`), `usage` (`{input_tokens, output_tokens}` summed over every HTTP exchange),
--   `elapsed_ms`, `request_id`, `contract` (`{name, version, schema_hash}`), `adapters` (applied to the
--   accepted reply)
-- @raise on misuse: a missing contract, input that is not a string, unknown options
function _M.ask(contract, input, opts)
    if type(contract) ~= "table" or type(contract.check) ~= "function" then
        error("ask: contract expected (from jsoncontract.contract)", 2)
    end
    if type(input) ~= "string" then error("ask: input must be a string, got " .. type(input), 2) end
    if type(opts) ~= "table" then error("ask: opts must be a table", 2) end
    for k in pairs(opts) do
        if not ASK_OPTS[k] then error("ask: unknown option '" .. tostring(k) .. "'", 2) end
    end
    local provider = opts.provider
    if type(provider) == "string" then provider = providers.get(provider) end
    if type(provider) ~= "table" or type(provider.build_request) ~= "function" then
        error("ask: opts.provider must be a provider name or module", 2)
    end
    if type(opts.model) ~= "string" then error("ask: opts.model must be a string", 2) end
    local policy = merge_policy(opts.policy)
    local send = opts.transport or require("jsoncontract.transport.curl").request
    local sleep = opts.sleep or default_sleep
    local evidence = opts.evidence
    if evidence and opts.api_key then evidence:add_secret(opts.api_key) end

    local started = now()
    local request_id = opts.request_id or new_request_id()
    local identity = contract:identity()
    local provider_name = provider.name or tostring(opts.provider)
    local usage = { input_tokens = 0, output_tokens = 0 }
    local attempts = {}
    local messages = { { role = "user", content = input } }
    local reasked = false
    local contract_view = { name = contract.name, version = contract.version, schema = contract.schema,
        prompt = contract:prompt() }
    local popts = { model = opts.model, api_key = opts.api_key, base_url = opts.base_url,
        max_tokens = opts.max_tokens, temperature = opts.temperature, mode = opts.mode }

    local function elapsed_ms() return floor((now() - started) * 1000 + 0.5) end

    local function record(att, try, fields)
        if not evidence then return end
        local rec = {
            ts = os.date("!%Y-%m-%dT%H:%M:%SZ"), request_id = request_id, item_id = opts.item_id,
            contract = identity, provider = provider_name, model = opts.model, mode = fields.mode,
            attempt = att, try = try,
        }
        for k, v in pairs(fields) do rec[k] = v end
        -- The input once per item, on its first exchange (the writer keeps it only on opt-in).
        if att == 1 and try == 1 then rec.input = input end
        evidence:write(rec)
    end

    -- A provider may echo the key in an error body (real 401s do): it never leaves ask().
    -- The key in any spelling (escaped, percent-encoded, in keys and values): see jsoncontract.secrets.
    local function scrub(text) return secrets.redact(text, opts.api_key) end

    local function finish(status, value, reason, applied)
        if reason then
            reason.reply = nil -- usage is summed; raw envelopes stay out of outcomes
            -- every string of the reason (messages, pointers, details, locations) and of the attempts
            reason = secrets.redact_value(reason, opts.api_key)
        end
        attempts = secrets.redact_value(attempts, opts.api_key)
        return {
            status = status, value = value, reason = reason, attempts = attempts, usage = usage,
            elapsed_ms = elapsed_ms(), request_id = request_id, contract = identity, adapters = applied,
            item_id = opts.item_id,
        }
    end

    for att = 1, policy.max_attempts do
        local req = provider.build_request(contract_view, messages, popts)
        req.timeout_ms = req.timeout_ms or opts.timeout_ms
        req.connect_timeout_ms = req.connect_timeout_ms or opts.connect_timeout_ms
        req.max_response_bytes = req.max_response_bytes or opts.max_response_bytes
        local mode = req.mode
        -- The transport sees only what it knows; `mode`/`schema_sent` are ours.
        local sent = { url = req.url, method = req.method, headers = req.headers, body = req.body,
            timeout_ms = req.timeout_ms, connect_timeout_ms = req.connect_timeout_ms,
            max_response_bytes = req.max_response_bytes }

        local reply, err, res
        local try = 0
        local t0
        while true do
            try = try + 1
            t0 = now()
            local terr
            res, terr = send(sent)
            if res ~= nil then
                if type(res) ~= "table" or type(res.status) ~= "number" or type(res.body) ~= "string"
                    or (res.headers ~= nil and type(res.headers) ~= "table") then
                    error("ask: the transport returned " .. type(res) .. " where a response "
                        .. "{status = integer, headers = table, body = string} was expected", 0)
                end
                -- A server may echo the key (in a body, a Location header): it goes no further.
                local headers = {}
                for k, v in pairs(res.headers or {}) do headers[k] = scrub(v) end
                reply, err = provider.read_response(res.status, headers, scrub(res.body))
                -- What the envelope decoded (the content, a refusal) may spell the key anew.
                if opts.api_key then
                    reply = secrets.redact_value(reply, opts.api_key)
                    err = secrets.redact_value(err, opts.api_key)
                end
            elseif type(terr) ~= "table" or terr.category ~= "transport" or type(terr.kind) ~= "string" then
                error("ask: the transport returned nil and " .. type(terr) .. " where an err table "
                    .. "{category = \"transport\", kind, message} was expected", 0)
            else
                reply, err = nil, terr
            end
            local r = reply or (err and err.reply)
            if r then add_usage(usage, r.usage) end
            local retryable = err and err.category == "transport"
                and (err.retryable or (err.retryable == nil and TRANSIENT_TRANSPORT[err.kind]))
            local wait = retryable and backoff_seconds(policy, try, err.retry_after)
            local over_time = policy.time_budget_ms and (elapsed_ms() + (wait or 0) * 1000 > policy.time_budget_ms)
            local over_cap = retryable and err.retry_after and err.retry_after * 1000 > policy.retry_after_max_ms
            local give_up = not retryable or try > policy.transport_retries or over_time or over_cap
            if over_cap then
                -- Say why this retryable failure was not retried, and how long the server asked for.
                err.message = format("%s; Retry-After asks for %g s, over the cap of %g s " ..
                    "(policy.retry_after_max_ms), so it was not waited for", err.message,
                    err.retry_after, policy.retry_after_max_ms / 1000)
                err.retry_after_over_cap = true
            end
            if err and err.category == "transport" then
                record(att, try, { mode = mode, gate = "transport", category = err.category, kind = err.kind,
                    http_status = err.status or (res and res.status), elapsed_ms = floor((now() - t0) * 1000 + 0.5),
                    usage = r and r.usage, retry = not give_up })
            end
            if not retryable or give_up then break end
            sleep(wait)
        end

        local elapsed = floor((now() - t0) * 1000 + 0.5)
        local r = reply or (err and err.reply) or {}
        local a = { attempt = att, tries = try, http_status = res and res.status, finish = r.finish,
            usage = r.usage, elapsed_ms = elapsed }
        attempts[#attempts + 1] = a

        if err then
            -- transport, protocol, refused, filtered or truncated: never repaired.
            a.gate = (err.category == "transport") and "transport" or "protocol"
            a.category, a.kind, a.message = err.category, err.kind, err.message
            if err.category ~= "transport" then
                record(att, try, { mode = mode, gate = a.gate, category = err.category, kind = err.kind,
                    http_status = res and res.status, finish = r.finish, finish_reason = r.finish_reason,
                    usage = r.usage, elapsed_ms = elapsed, text = r.text })
            end
            if err.category ~= "truncated" or not policy.reask_on_truncation or reasked
                or att == policy.max_attempts then
                return finish("human_review", nil, err)
            end
            reasked = true
            popts.max_tokens = (popts.max_tokens or providers.DEFAULT_MAX_TOKENS) * 2
        else
            local value, cerr = contract:check(reply.text, { adapters = opts.adapters, context = opts.context })
            if value ~= nil then
                a.gate = "accepted"
                a.adapters = cerr.adapters
                record(att, try, { mode = mode, gate = "accepted", http_status = res.status, finish = reply.finish,
                    finish_reason = reply.finish_reason, usage = reply.usage, elapsed_ms = elapsed,
                    adapters = cerr.adapters, text = reply.text })
                return finish("accepted", value, nil, cerr.adapters)
            end

            a.gate = cerr.category
            a.category, a.kind, a.message, a.errors = cerr.category, cerr.kind, cerr.message, cerr.errors
            a.adapters = cerr.adapters
            local fb = feedback_message(cerr)
            record(att, try, { mode = mode, gate = cerr.category, category = cerr.category, kind = cerr.kind,
                errors = error_summary(cerr), offset = cerr.offset, http_status = res.status, finish = reply.finish,
                finish_reason = reply.finish_reason, usage = reply.usage, elapsed_ms = elapsed,
                adapters = cerr.adapters, text = reply.text, feedback = fb })

            if cerr.category == "rules" and cerr.retry == false then
                return finish("human_review", nil, cerr)
            end
            if att == policy.max_attempts then
                return finish("human_review", nil, errors.new(cerr.category, cerr.kind,
                    format("no valid answer after %d attempts; last: %s", att, cerr.message),
                    { errors = cerr.errors, attempts_exhausted = true, offset = cerr.offset }))
            end
            messages[#messages + 1] = { role = "assistant", content = reply.text }
            messages[#messages + 1] = { role = "user", content = fb }
            if policy.token_budget and history_tokens(messages) > policy.token_budget then
                return finish("human_review", nil, errors.new("budget", "token_budget",
                    format("the conversation would resend %d estimated tokens, over the budget of %d; last: %s",
                        history_tokens(messages), policy.token_budget, cerr.message), { errors = cerr.errors }))
            end
            if policy.usage_budget and usage.input_tokens + usage.output_tokens >= policy.usage_budget then
                return finish("human_review", nil, errors.new("budget", "usage_budget",
                    format("%d tokens used, budget %d; last: %s", usage.input_tokens + usage.output_tokens,
                        policy.usage_budget, cerr.message), { errors = cerr.errors }))
            end
            if policy.time_budget_ms and elapsed_ms() >= policy.time_budget_ms then
                return finish("human_review", nil, errors.new("budget", "time_budget",
                    format("%d ms spent, budget %d ms; last: %s", elapsed_ms(), policy.time_budget_ms, cerr.message),
                    { errors = cerr.errors }))
            end
        end
    end
    -- not reached: the last attempt always returns
end

return _M
