--- The attempt loop (docs/design.md, the pipeline).
-- One call of `ask` sends the contract and the input to a provider, runs every gate on the
-- reply, and on a format, schema or (retryable) rules failure sends the input, the model's last
-- answer and one user message listing its errors (every earlier attempt too when the contract's
-- `reask_history` is "all"), then asks again, up to `policy.max_attempts`. Refusals,
-- content filters and truncated replies are never repaired and never accepted. Transient
-- transport failures (429, 5xx, 529, timeout, reset, connect) are retried unchanged with backoff
-- and `Retry-After`, within `policy.transport_retries`. Whatever cannot be accepted goes to
-- `human_review` with the reason. Every HTTP exchange writes one evidence record.
--
-- Data flows one way: build (provider.build_request) -> send and read (`jsoncontract.run.exchange`:
-- transport and protocol gates, with retries) -> the contract's gates (format, schema, rules) ->
-- record (the attempt record, which is what the evidence log gets). The retry and budget policy is
-- `jsoncontract.run.policy`; the feedback wording is `jsoncontract.feedback`.
-- @module jsoncontract.run
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local providers = require "jsoncontract.providers"
local feedback = require "jsoncontract.feedback"
local policy_mod = require "jsoncontract.run.policy"
local exchange = require "jsoncontract.run.exchange"
local compat = require "jsoncontract.compat"

local type, pairs, ipairs, tostring, error, setmetatable = type, pairs, ipairs, tostring, error, setmetatable
local floor, random = math.floor, math.random
local format = string.format
local now = compat.now

local _M = { _VERSION = core._VERSION }

--- The default policy (see `jsoncontract.run.policy.DEFAULT`); `opts.policy` fields override it.
_M.DEFAULT_POLICY = policy_mod.DEFAULT

--- Estimate tokens as words x 1.3, rounded up (see `jsoncontract.run.policy.estimate_tokens`).
-- @function estimate_tokens
_M.estimate_tokens = policy_mod.estimate_tokens

--- The feedback message sent to the model (see `jsoncontract.feedback.for_model`).
-- @function feedback_message
_M.feedback_message = feedback.for_model

local ASK_OPTS = {
    provider = true, model = true, api_key = true, base_url = true, max_tokens = true, temperature = true,
    mode = true, transport = true, sleep = true, evidence = true, context = true, adapters = true,
    request_id = true, item_id = true, policy = true, timeout_ms = true, connect_timeout_ms = true,
    max_response_bytes = true, allow_blocking = true, as_json = true,
}

-- Kinds and pointers only: messages may quote the model's text, which stays out of
-- evidence unless the caller opted in (the writer drops `text`/`feedback`).
local function error_summary(list)
    if not list then return nil end
    local out = setmetatable({}, core.array_mt)
    for i, e in ipairs(list) do
        out[i] = { pointer = e.pointer, keyword = e.keyword, schema_pointer = e.schema_pointer }
    end
    return out
end

-- The gate's errors as a person reads them (`property` and `message` may quote the model):
-- kept only where the writer keeps text (the job store always does; the desk shows them).
local function error_items(list)
    if not list then return nil end
    local out = setmetatable({}, core.array_mt)
    for i, e in ipairs(list) do
        out[i] = { pointer = e.pointer, keyword = e.keyword, property = e.property, message = e.message }
    end
    return out
end

local NO_REPLY = {} -- read only: an exchange that read no reply

local request_counter = 0
local function new_request_id()
    request_counter = request_counter + 1
    return format("jc-%x-%d-%04d", floor(now() * 1000), request_counter, random(0, 9999))
end

-- The misuse checks of `ask`; returns the provider module.
local function check_args(contract, input, opts)
    if type(contract) ~= "table" or type(contract.check) ~= "function" then
        error("ask: contract expected (from jsoncontract.contract)", 3)
    end
    if type(input) ~= "string" then error("ask: input must be a string, got " .. type(input), 3) end
    if type(opts) ~= "table" then error("ask: opts must be a table", 3) end
    for k in pairs(opts) do
        if not ASK_OPTS[k] then error("ask: unknown option '" .. tostring(k) .. "'", 3) end
    end
    local provider = opts.provider
    if type(provider) == "string" then provider = providers.get(provider) end
    if type(provider) ~= "table" or type(provider.build_request) ~= "function" then
        error("ask: opts.provider must be a provider name or module", 3)
    end
    if type(opts.model) ~= "string" then error("ask: opts.model must be a string", 3) end
    local ev = opts.evidence
    if ev ~= nil and (type(ev) ~= "table" or type(ev.write) ~= "function") then
        error("ask: opts.evidence must be a writer from jsoncontract.evidence (open or memory)", 3)
    end
    if opts.adapters ~= nil and type(opts.adapters) ~= "table" then
        error("ask: opts.adapters must be a list of adapter names, got " .. type(opts.adapters), 3)
    end
    if opts.as_json ~= nil and type(opts.as_json) ~= "boolean" then
        error("ask: opts.as_json must be a boolean, got " .. type(opts.as_json), 3)
    end
    if opts.as_json and type(contract.check_json) ~= "function" then
        error("ask: opts.as_json needs a contract with check_json (from jsoncontract.contract)", 3)
    end
    return provider
end

-- The state of one `ask` is a table `s` (contract, input, opts, policy, evidence, started,
-- item, usage, attempts, as_json) handed to the functions below: no closure is made per ask
-- (LuaJIT does not compile a function that makes one, FNEW, nor one that closes upvalues).

local function elapsed_ms(s) return floor((now() - s.started) * 1000 + 0.5) end

-- The attempt record: what one HTTP exchange of an attempt did (`x` from run.exchange: its
-- tries, status, the reply read so far and the gate's err). It goes into the outcome's
-- `attempts` and, through `record`, into the evidence log: one shape for both.
local function attempt_record(att, x, req)
    local reply = x.reply or NO_REPLY
    local a = { attempt = att, tries = x.tries, mode = req.mode, http_status = x.status,
        finish = reply.finish, finish_reason = reply.finish_reason, usage = reply.usage,
        elapsed_ms = x.elapsed_ms,
        -- A native request the provider would have rejected went out weaker: say why.
        mode_fallback = req.fallback }
    local err = x.err
    if err then
        -- transport, protocol, refused, filtered or truncated
        a.gate = (err.category == "transport") and "transport" or "protocol"
        a.category, a.kind, a.message = err.category, err.kind, err.message
    end
    return a
end

-- One evidence line per HTTP exchange: the item's identity and the attempt record, less what
-- may quote the model (`message`; kinds and pointers say what failed). `private` (model text,
-- feedback), the input (on the item's first line) and the gate's words (`error_message`,
-- `error_items`) are kept by the writer only on opt-in (`jsoncontract.evidence.TEXT_FIELDS`).
-- Nothing is built when the ask has no evidence writer.
-- The record's `ts`, UTC to the second, formatted once per second.
local ts_second, ts_text
local function timestamp()
    local t = os.time()
    if t ~= ts_second then ts_second, ts_text = t, os.date("!%Y-%m-%dT%H:%M:%SZ", t) end
    return ts_text
end

local function record(s, a, text, feedback_text, response_headers)
    local evidence = s.evidence
    if not evidence then return end
    local rec = { ts = timestamp(), try = a.tries }
    for k, v in pairs(s.item) do rec[k] = v end
    for k, v in pairs(a) do rec[k] = v end
    rec.text, rec.feedback, rec.response_headers = text, feedback_text, response_headers
    rec.message, rec.tries = nil, nil
    rec.errors = error_summary(a.errors)
    rec.error_message, rec.error_items = a.message, error_items(a.errors)
    if a.attempt == 1 and a.tries == 1 then rec.input = s.input end
    evidence:write(rec)
end

local function finish(s, status, value, reason, applied)
    local as_json = s.as_json
    return {
        status = status, value = not as_json and value or nil, json = as_json and value or nil,
        reason = reason, attempts = s.attempts, usage = s.usage,
        elapsed_ms = elapsed_ms(s), request_id = s.item.request_id, contract = s.item.contract,
        adapters = applied, item_id = s.opts.item_id,
    }
end

-- The item's time budget, spent: what the outcome's reason says then.
local function out_of_time(s, last)
    return errors.new("budget", "time_budget", format("%d ms spent, budget %d ms", elapsed_ms(s),
        s.policy.time_budget_ms) .. (last and "; last: " .. last.message or ""))
end

-- The exchange's callbacks (see run.exchange): `x.ask` is the ask's state, `x.attempt` the
-- attempt number.
local function time_left_ms(x)
    local s = x.ask
    local budget = s.policy.time_budget_ms
    return budget and budget - elapsed_ms(s) or nil
end

-- every try that failed at the transport gate is one evidence line
local function on_transport_failure(try_result, retry, x)
    local a = attempt_record(x.attempt, try_result, x.request)
    a.retry = retry
    record(x.ask, a, nil, nil, try_result.headers)
end

local default_transport -- jsoncontract.transport.default, loaded on the first ask

--- Ask a model for a value by `contract`, check it, and retry with feedback within the policy.
-- @tparam table contract from `jsoncontract.contract.new`
-- @tparam string input the user input (e.g. the mail text), sent as the first user message
-- @tparam table opts
--   `provider` (a name from `jsoncontract.providers.names`: "openai", "openai_responses", "anthropic",
--   "gemini", "ollama", "llamacpp"; or a provider module; required), `model` (string, required),
--   `api_key`, `base_url`, `max_tokens`, `temperature`, `mode` ("native"|"json"|"prompt", and for
--   "llamacpp" "grammar": the schema compiled to GBNF by jsoncontract.providers.gbnf),
--   `transport` (function(req) -> res | nil, err; default `jsoncontract.transport.curl`.request, and under
--   nginx the cosocket transport where cosockets work, see `jsoncontract.transport.default`),
--   `allow_blocking` (boolean: accept the blocking curl transport inside an nginx worker),
--   `timeout_ms`, `connect_timeout_ms`, `max_response_bytes` (passed to the transport; with
--   `policy.time_budget_ms` every try's `timeout_ms` is at most what the budget leaves, and a try
--   cut there ends the item as budget/time_budget),
--   `sleep` (function(seconds), default `ngx.sleep` where nginx allows it, else luasocket's),
--   `evidence` (a writer from `jsoncontract.evidence`),
--   `context` (passed to rules), `adapters` (list of adapter names; default the contract's),
--   `request_id`, `item_id` (strings for evidence), `policy` (table overriding `DEFAULT_POLICY`),
--   `as_json` (boolean, default false: check with `contract:check_json` and give the accepted JSON
--   text as `outcome.json` instead of the Lua value as `outcome.value`, for a caller that sends
--   it on as JSON; the same gates and verdicts)
-- @treturn table outcome: `status` ("accepted"|"human_review"), `value` (when accepted; `json`
--   instead with `as_json`),
--   `reason` (err table when not accepted: category, kind, message, errors), `attempts` (list of
--   `{attempt, tries, mode, mode_fallback, gate, category, kind, message, errors, http_status, finish,
--   finish_reason, usage, elapsed_ms, adapters}`: each attempt's record, which is also its evidence
--   line less `message`), `usage` (`{input_tokens, output_tokens}` summed over every HTTP exchange),
--   `elapsed_ms`, `request_id`, `contract` (`{name, version, schema_hash}`), `adapters` (applied to the
--   accepted reply)
-- @raise on misuse: a missing contract, input that is not a string, unknown options, an
--   evidence that is not a writer, adapters that are not a list, no `api_key` for a provider
--   whose own API refuses every request without one, sent by the default transport
--   (`jsoncontract.providers.missing_key`: OpenAI, Anthropic, Gemini at their own hosts; nothing
--   is sent); under nginx in a phase without
--   cosockets when no transport is given, or the curl transport without `allow_blocking`
function _M.ask(contract, input, opts)
    local provider = check_args(contract, input, opts)
    local policy = policy_mod.merge(opts.policy, 2)
    -- Under nginx: cosockets and ngx.sleep where they work, never a silent blocking default.
    default_transport = default_transport or require("jsoncontract.transport.default")
    local send, sleep = default_transport.choose(opts.transport, opts.sleep, opts.allow_blocking, 2)
    -- (a transport of the caller's own, a proxy that adds the key or a replay, decides for itself)
    local no_key = opts.transport == nil and providers.missing_key(provider, opts.base_url, opts.api_key)
    if no_key then error("ask: " .. no_key, 2) end
    local evidence = opts.evidence
    if evidence and opts.api_key then evidence:add_secret(opts.api_key) end

    local item = {
        request_id = opts.request_id or new_request_id(), item_id = opts.item_id,
        contract = contract:identity(), provider = provider.name or tostring(opts.provider), model = opts.model,
    }
    local as_json = opts.as_json
    local s = { contract = contract, input = input, opts = opts, policy = policy, evidence = evidence,
        started = now(), item = item, usage = { input_tokens = 0, output_tokens = 0 },
        attempts = {}, as_json = as_json }
    local usage, attempts = s.usage, s.attempts
    local messages = { { role = "user", content = input } }
    local reasked = false
    -- The provider takes the contract and the caller's options as they are (the prompt was
    -- rendered when the contract was made, the schema copy is planned once per contract and
    -- provider); only a re-ask after a truncated reply asks with more room, over the caller's opts.
    local popts = opts
    local check = as_json and contract.check_json or contract.check
    -- what the contract's gates get (the same every attempt)
    local check_opts = { adapters = opts.adapters, context = opts.context, transport = send }

    for att = 1, policy.max_attempts do
        -- no attempt starts on a spent budget (a re-ask after a truncated reply comes here unchecked)
        if policy.time_budget_ms and elapsed_ms(s) >= policy.time_budget_ms then
            return finish(s, "human_review", nil, out_of_time(s))
        end
        -- build (the request's own fields are the transport's; `req.mode` and `req.fallback` are
        -- read through its metatable)
        local req = provider.build_request(contract, messages, popts)
        req.timeout_ms, req.connect_timeout_ms, req.max_response_bytes =
            opts.timeout_ms, opts.connect_timeout_ms, opts.max_response_bytes

        -- send and read (transport and protocol gates); every try that failed at the transport
        -- gate is one evidence line
        local x = exchange.exchange {
            send = send, request = req, provider = provider, policy = policy, sleep = sleep,
            -- A provider may echo the key (real 401s do), in any spelling: the exchange redacts
            -- it from all it returns. See jsoncontract.secrets.
            secret = opts.api_key,
            -- every try's timeout is the smaller of this and what the time budget leaves
            timeout_ms = opts.timeout_ms,
            time_left_ms = time_left_ms, on_transport_failure = on_transport_failure,
            ask = s, attempt = att,
        }
        usage.input_tokens = usage.input_tokens + x.usage.input_tokens
        usage.output_tokens = usage.output_tokens + x.usage.output_tokens
        local reply = x.reply or NO_REPLY

        -- record: what this attempt did, in the outcome and in the evidence log
        local a = attempt_record(att, x, req)
        attempts[#attempts + 1] = a

        local err = x.err
        -- the try in flight was cut at the end of the time budget: the budget is the reason
        if x.out_of_time then return finish(s, "human_review", nil, out_of_time(s, err)) end
        if err then
            -- transport, protocol, refused, filtered or truncated: never repaired.
            -- (a transport failure was recorded try by try by the exchange)
            if err.category ~= "transport" then record(s, a, reply.text, nil, x.headers) end
            if err.category ~= "truncated" or not policy.reask_on_truncation or reasked
                or att == policy.max_attempts then
                return finish(s, "human_review", nil, err)
            end
            reasked = true
            popts = setmetatable({ max_tokens = (opts.max_tokens or providers.DEFAULT_MAX_TOKENS) * 2 },
                { __index = opts })
        else
            -- the contract's gates: format, schema, rules
            local value, cerr = check(contract, reply.text, check_opts)
            if value ~= nil then
                a.gate, a.adapters = "accepted", cerr.adapters
                record(s, a, reply.text, nil, x.headers)
                return finish(s, "accepted", value, nil, cerr.adapters)
            end
            a.gate, a.category, a.kind, a.message = cerr.category, cerr.category, cerr.kind, cerr.message
            a.errors, a.offset, a.adapters = cerr.errors, cerr.offset, cerr.adapters
            local fb = feedback.for_model(cerr)
            record(s, a, reply.text, fb, x.headers)

            -- not the model's to mend: a rule that says so, a rule that failed to run, and a
            -- validation that ran out of its work budget (a hostile pair, for a person)
            if cerr.retry == false or (cerr.category == "schema" and cerr.kind == "budget_exceeded") then
                return finish(s, "human_review", nil, cerr)
            end
            if att == policy.max_attempts then
                return finish(s, "human_review", nil, errors.new(cerr.category, cerr.kind,
                    format("no valid answer after %d attempts; last: %s", att, cerr.message),
                    { errors = cerr.errors, attempts_exhausted = true, offset = cerr.offset }))
            end
            -- A re-ask carries the input, the last reply and its errors; the earlier attempts
            -- too only when the contract asks for them (`reask_history = "all"`): each resent
            -- attempt is paid for again as input tokens, and the errors of the last reply are
            -- what the model must mend.
            if contract.reask_history ~= "all" then messages = { messages[1] } end
            messages[#messages + 1] = { role = "assistant", content = reply.text }
            messages[#messages + 1] = { role = "user", content = fb }
            local over = policy_mod.over_budget(policy,
                { messages = messages, usage = usage, elapsed_ms = elapsed_ms(s) }, cerr)
            if over then return finish(s, "human_review", nil, over) end
        end
    end
    -- not reached: the last attempt always returns
end

return _M
