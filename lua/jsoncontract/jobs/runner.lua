--- One worker's run over a job in the store: lease waiting items, ask the model for each
-- through the event loop (`jsoncontract.jobs.scheduler`), and record every outcome with its
-- evidence and state change in one transaction. Used by `triage` (one process, SQLite) and by
-- `worker` (many processes on many hosts, PostgreSQL) alike.
-- @module jsoncontract.jobs.runner
local core = require "jsoncontract.core"
local run = require "jsoncontract.run"
local errors = require "jsoncontract.errors"
local secrets = require "jsoncontract.secrets"
local evidence = require "jsoncontract.evidence"
local scheduler = require "jsoncontract.jobs.scheduler"
local breaker_mod = require "jsoncontract.jobs.breaker"
local compat = require "jsoncontract.compat"

local type, ipairs, pairs, tostring, pcall, error, setmetatable = type, ipairs, pairs, tostring, pcall, error,
    setmetatable
local format, find, gsub, gmatch, sub = string.format, string.find, string.gsub, string.gmatch, string.sub
local concat = table.concat

local _M = { _VERSION = core._VERSION }

--- The run's options with their defaults and bounds, defined here once; the commands
-- (`triage`, `run`, `worker`) check and fill their options from this table and nowhere else.
-- `parallel` (items in flight, 1..256), `lease_seconds` (a lease's length, >= 1), `grace`
-- (seconds in-flight items get after a signal), `max_tokens` (the reply's token limit asked of
-- the provider), `timeout_ms` (one HTTP exchange), `max_attempts` (per item, >= 1, unless the
-- job module's policy says otherwise).
_M.OPTIONS = {
    parallel = { default = 8, min = 1, max = 256 },
    lease_seconds = { default = 120, min = 1 },
    grace = { default = 30, min = 0 },
    max_tokens = { default = 300, min = 1 },
    timeout_ms = { default = 120000, min = 1 },
    -- the attempt loop's own default (jsoncontract.run.policy), not a copy
    max_attempts = { default = require("jsoncontract.run.policy").DEFAULT.max_attempts, min = 1 },
}
local OPTIONS = _M.OPTIONS

--- The value of a run option: `value` when given, else its default (`OPTIONS`).
-- @tparam string name a key of `OPTIONS`
-- @param value the caller's value or nil
-- @return the value
function _M.option(name, value)
    if value ~= nil then return value end
    return OPTIONS[name].default
end

--- Check a given run option against its bounds (`OPTIONS`); nil passes (the default applies).
-- @tparam string name a key of `OPTIONS`
-- @tparam string flag the option as the user spelt it ("--parallel")
-- @param value
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string "option --parallel must be from 1 to 256"
function _M.check_option(name, flag, value)
    if value == nil then return true end
    local o = OPTIONS[name]
    if o.max and (value < o.min or value > o.max) then
        return nil, format("option %s must be from %d to %d", flag, o.min, o.max)
    elseif value < o.min then
        return nil, format("option %s must be at least %d", flag, o.min)
    end
    return true
end

--- A worker name unique across hosts: host:pid:random.
-- @treturn string
function _M.owner_name()
    local host = os.getenv("HOSTNAME")
    if not host or host == "" then
        local f = io.open("/etc/hostname", "rb")
        host = f and f:read("*l") or "host"
        if f then f:close() end
    end
    local pid = core.process_ids()
    return format("%s:%d:%04d", host, pid, math.random(0, 9999))
end

--- The item's input as asked: the mailbox line, decoded; a bad line becomes an input error.
-- Also how `jsoncontract.cli.util.read_mailbox` reads a mailbox, so a line means the same there.
-- @tparam table leased `{item_id, seq, input_json}` (a leased row or a `commands.read_mailbox` item)
-- @treturn table `{id, text, ...}` (the line's fields, `id` the item's) or `{id, input_error}`
function _M.item_of(leased)
    local v, derr = core.decode(leased.input_json or "")
    if v == nil then
        return { id = leased.item_id, input_error = "line " .. tostring(leased.seq) .. " is not JSON: "
            .. tostring(derr and derr.message) }
    end
    if type(v) ~= "table" or type(v.text) ~= "string" then
        return { id = leased.item_id, input_error = "line " .. tostring(leased.seq) .. " has no string field 'text'" }
    end
    v.id = leased.item_id
    return v
end

--- Accepted JSON text (valid: the format gate passed it) without the whitespace between its
-- tokens, so it fits on one line of a JSON Lines file; strings and numbers stay as the model
-- spelt them (`1.0` stays `1.0`, an integer beyond 2^53 stays exact).
-- @tparam string text valid JSON text
-- @treturn string the same JSON on one line
-- @treturn integer how deep its arrays and objects nest (0 for a scalar)
function _M.one_line(text)
    local out, i, n = {}, 1, #text
    local depth, deepest = 0, 0
    while i <= n do
        local q = find(text, '"', i, true)
        local between = sub(text, i, (q or n + 1) - 1)
        for b in gmatch(between, "[%[%]{}]") do
            if b == "[" or b == "{" then
                depth = depth + 1
                if depth > deepest then deepest = depth end
            else
                depth = depth - 1
            end
        end
        out[#out + 1] = (gsub(between, "[ \t\r\n]+", ""))
        if not q then break end
        local e = q + 1
        while true do  -- the string's closing quote: the first '"' not escaped
            e = find(text, '["\\]', e)
            if sub(text, e, e) == '"' then break end
            e = e + 2
        end
        out[#out + 1] = sub(text, q, e)
        i = e + 1
    end
    return concat(out), deepest
end

-- The deepest a value may nest so that its line (the value inside the line's object) still
-- reads back with the decoder's default max_depth.
local MAX_VALUE_DEPTH = core.DEFAULT_MAX_DEPTH - 1

local function no_attempt(item, category, kind, message)
    return { status = "human_review", attempts = setmetatable({}, core.array_mt),
        usage = { input_tokens = 0, output_tokens = 0 }, item_id = item.id,
        reason = errors.new(category, kind, message) }
end

-- The exported line of an outcome (accepted.jsonl / review.jsonl) and the store's columns.
-- The outcome holds no key (run.exchange took it out as each response came in); messages are
-- cleaned (control characters, length) for a person, and a line that cannot be encoded (a
-- value no JSON can hold, nested too deep) becomes that item's review line with the reason (the
-- pointer elided in the middle), so the run goes on.
local function outcome_row(contract, item, outcome, pass, owner)
    local attempts = setmetatable({}, core.array_mt)
    for k, a in ipairs(outcome.attempts or {}) do
        attempts[k] = { gate = a.gate, kind = a.kind, finish = a.finish, http_status = a.http_status }
    end
    local base = { id = item.id, request_id = outcome.request_id, contract = contract:identity(),
        attempts = attempts, usage = outcome.usage, elapsed_ms = outcome.elapsed_ms }
    if pass > 1 then base.pass = pass end
    local row = { pass = pass, status = outcome.status, decided_by = "model", worker = owner }
    local reason = outcome.reason
    if outcome.status == "accepted" then
        -- The accepted text as the gates passed it (asked with as_json: never decoded and
        -- encoded again here), put on one line. "value" sorts after every other key of the
        -- line, so it goes last, as the encoder would put it.
        base.adapters = outcome.adapters
        local value_json, depth = _M.one_line(outcome.json)
        local ok, record_json = pcall(core.encode, base)
        if ok and depth > MAX_VALUE_DEPTH then
            ok, record_json = false, format("the value nests %d levels deep, and its line of accepted.jsonl "
                .. "would be deeper than a JSON reader takes by default (%d levels)", depth, core.DEFAULT_MAX_DEPTH)
        end
        if ok then
            row.value_json = value_json
            row.record_json = sub(record_json, 1, -2) .. ',"value":' .. value_json .. "}"
            return row
        end
        base.adapters = nil
        row.status = "human_review"
        reason = errors.new("internal", "item_error", "this item's line could not be written: "
            .. secrets.clean(record_json, nil, 300))
    end
    local errs = setmetatable({}, core.array_mt)
    -- Messages a person reads: long pointers and values in them elided in the middle.
    for k, e in ipairs(reason.errors or {}) do
        errs[k] = { pointer = e.pointer, keyword = e.keyword, message = secrets.clean(e.message, nil, 1000) }
    end
    base.reason = { category = reason.category, kind = reason.kind, message = secrets.clean(reason.message, nil, 2000),
        errors = errs }
    local ok1, reason_json = pcall(core.encode, base.reason)
    local ok2, record_json = pcall(core.encode, base)
    if not (ok1 and ok2) then
        base.reason = { category = "internal", kind = "item_error", errors = setmetatable({}, core.array_mt),
            message = "this item's review line could not be written: "
                .. secrets.clean(ok1 and record_json or reason_json, nil, 300) }
        reason_json, record_json = core.encode(base.reason), core.encode(base)
    end
    row.reason_json, row.record_json = reason_json, record_json
    row.reason_category, row.reason_kind = base.reason.category, base.reason.kind
    return row
end

--- Run this worker over `job_id` until no item is left, or a signal or a store failure stops it.
-- @tparam table store from `jsoncontract.jobs.store`
-- @tparam string job_id
-- @tparam table ctx `contract` (compiled contract), `ask` (table of `jsoncontract.run.ask` options:
--   provider, model, api_key, base_url, policy, max_tokens, timeout_ms, context),
--   `record_text` (boolean: the exports keep the text; the store always does), `owner` (string,
--   default `owner_name()`), `parallel`, `lease_seconds`, `grace` (defaults in `OPTIONS`),
--   `lane` (ratelimit lane or nil), `on_done` (function(counts) after each item:
--   `{done, accepted, human_review, duplicates}` of this run), `signals` (boolean: SIGINT/SIGTERM
--   drain the run; default true), `fail_after` (integer >= 1: failures no item can fix in a row
--   that stop the run, default `jsoncontract.jobs.breaker.DEFAULT_LIMIT`; see below)
-- @treturn table result `stats` (scheduler stats), `done`, `accepted`, `human_review`, `duplicates`
--   (outcomes another worker had recorded first: the attempt's rows recorded after them), `taken_over`
--   (items whose lease ran out while this worker stalled and another worker took: not asked again, no
--   outcome recorded here, only the rows of the exchanges made, `store:record_attempts`),
--   `signal` ("SIGINT"|"SIGTERM"|nil),
--   `store_error` (err table when recording failed: the run stopped there), `released` (leases
--   given back), `owner`, `started_at`, `held_back` (outcomes no item could fix, not recorded: the
--   items went back to waiting with their attempts' evidence rows, `store:hold_back`), `breaker`
--   (nil, or `{cause, count, message}` when a run of `fail_after` such failures stopped the run:
--   `jsoncontract.jobs.breaker`; the items not settled stay waiting, none goes to review for
--   it), `rule_faults` (nil, or `{count, message}`
--   when the rules could not run on some items and the breaker did not trip: those items wait,
--   none went to review)
function _M.run(store, job_id, ctx)
    local contract = ctx.contract
    local owner = ctx.owner or _M.owner_name()
    local lease_s = _M.option("lease_seconds", ctx.lease_seconds)
    local res = { done = 0, accepted = 0, human_review = 0, duplicates = 0, taken_over = 0, owner = owner,
        started_at = scheduler.now() }
    local held = {}          -- item_id -> true while leased by us and in flight
    -- item_id -> true: our lease ran out and another worker took the item (or recorded it): no
    -- further model call for it, and what we got is not recorded
    local lost = {}
    local last_renew = scheduler.now()
    local take_error
    local breaker = breaker_mod.new { limit = ctx.fail_after, provider = type(ctx.ask.provider) == "string"
        and ctx.ask.provider or nil, base_url = ctx.ask.base_url, model = ctx.ask.model, secret = ctx.ask.api_key }
    res.held_back = 0
    -- Items whose rules could not run: given back, and not taken again by this run (the same
    -- rule on the same item fails again); they wait for a fixed rule and --resume.
    local parked = {}

    local caught, stop_at -- a signal the rules gate took before `tick` read it; the grace's end
    local function take(n)
        -- (the scheduler takes before it ticks: a signal a stuck rule's interrupt took must stop
        -- the taking already, or the slot that rule freed asks a new item, or the same one again)
        if breaker:tripped() or caught then return {} end
        local rows, err = store:lease(job_id, owner, n, lease_s, parked)
        if not rows then
            take_error = err
            return {}
        end
        for _, r in ipairs(rows) do held[r.item_id] = true end
        return rows
    end

    local function exhausted()
        if take_error then return true end
        local c = store:counts(job_id)
        -- Items leased by others may come back when their leases expire: keep looking (the
        -- parked ones are not ours to take again).
        return c == nil or c.pending + c.leased <= #parked
    end

    local function work(leased)
        local item = _M.item_of(leased)
        -- The store keeps the model's text and the input (the desk pre-fills from it, `replay DIR`
        -- re-checks it; keys are redacted before); the exported evidence.jsonl drops them unless
        -- the job records text (`store:each_evidence`).
        local log = evidence.memory({ record_text = true })
        if ctx.ask.api_key then log:add_secret(ctx.ask.api_key) end
        if item.input_error then
            return { item = item, leased = leased, outcome = no_attempt(item, "input", "invalid_input",
                item.input_error), evidence = log.lines }
        end
        local opts = {}
        for k, v in pairs(ctx.ask) do opts[k] = v end
        opts.sleep, opts.evidence, opts.item_id = scheduler.sleep, log, item.id
        opts.as_json = true -- the accepted text is stored as it is
        local made -- records of the exchanges made, when the lease was found lost (then no more are)
        opts.transport = function(req)
            if lost[item.id] then
                made = made or #log.lines
                return nil, errors.new("transport", "lease_lost", "this worker's lease on the item ran out and "
                    .. "another worker took it: not asked again here", { retryable = false })
            end
            return scheduler.send(req)
        end
        -- One item's failure (a bug in a rule, say) is that item's review reason, never the run's end.
        local asked, outcome = compat.pcall(run.ask, contract, item.text, opts)
        if not asked then
            -- a raised table shows its fields or __tostring; the key never shows
            outcome = no_attempt(item, "internal", "item_error", "this item could not be processed: "
                .. secrets.clean(secrets.describe(outcome), ctx.ask.api_key, 500))
        end
        return { item = item, leased = leased, outcome = outcome, evidence = log.lines, made = made }
    end

    -- HTTP exchanges of the items finished here (one evidence record each): what the run's
    -- line and `runs` row say when a store error ends the scheduler before its own count returns.
    local finished_exchanges = 0

    -- An item whose attempt settled nothing goes back to waiting with that attempt's evidence
    -- rows, in one transaction (`store:hold_back`). When that write fails nothing was written:
    -- the lease is still ours and goes back with the others at the end, and the run stops.
    local function hold_back(w, result)
        local given, err = store:hold_back(job_id, owner, w.item_id, w.pass, result.evidence or {})
        if given == nil then
            held[w.item_id] = true
            take_error = take_error or err
        end
    end

    -- The rows of an attempt that decides nothing here (the item another worker's, or decided by
    -- another): recorded, the item left alone. (Not `hold_back`: this worker may hold the item
    -- again under a new lease by now, which a give-back would undo.)
    local function record_attempts(w, result)
        local lines = result.evidence or {}
        if result.made then lines = { compat.unpack(lines, 1, result.made) } end -- (not the refusal to send)
        local ok, err = store:record_attempts(job_id, w.item_id, w.pass, lines)
        if not ok then take_error = take_error or err end
    end

    local function on_done(w, result, ok)
        local reason = ok and type(result) == "table" and type(result.outcome) == "table" and result.outcome.reason
        held[w.item_id] = nil
        finished_exchanges = finished_exchanges + (ok and type(result) == "table" and #(result.evidence or {}) or 0)
        if lost[w.item_id] then
            lost[w.item_id] = nil
            res.taken_over = res.taken_over + 1
            if ok and type(result) == "table" then return record_attempts(w, result) end
            return
        end
        if type(reason) == "table" and reason.kind == "rule_interrupted" then
            return hold_back(w, result) -- stopped by the run's signal, not decided: it waits for --resume
        end
        if not ok then
            result = { item = { id = w.item_id }, outcome = no_attempt({ id = w.item_id }, "internal", "item_error",
                "this item could not be processed: " .. secrets.clean(secrets.describe(result), ctx.ask.api_key, 500)),
                evidence = {} }
        end
        -- A failure no item can fix settles nothing: the item waits again (this run takes it
        -- again, unless a run of them trips the breaker), and never goes to review for it. Its
        -- attempts were made all the same (exchanges, tokens, the rule's fault): their evidence
        -- rows go in with the give-back, in one transaction.
        local cause = ok and breaker:observe(result.outcome)
        if cause then
            res.held_back = res.held_back + 1
            if cause == "rule" then parked[#parked + 1] = w.item_id end
            return hold_back(w, result)
        end
        local row = outcome_row(contract, result.item, result.outcome, w.pass, owner)
        row.evidence = result.evidence
        local recorded, err = store:record_outcome(job_id, w.item_id, row)
        if not recorded then
            if err.kind == "duplicate" then
                res.duplicates = res.duplicates + 1
                return record_attempts(w, result)
            end
            error(err, 0)  -- nothing after this counts: the run stops here
        end
        res.done = res.done + 1
        if row.status == "accepted" then res.accepted = res.accepted + 1
        else res.human_review = res.human_review + 1 end
        if ctx.on_done then ctx.on_done(res) end
    end

    -- A signal taken by the rules gate, which stops a rule stuck in a loop when one comes (the
    -- loop would never give the scheduler a turn to read it); the next tick reads it. A rule
    -- still running when the grace after the first signal is over is stopped too. An item
    -- whose rule was stopped is not decided: it goes back for --resume.
    local rules_gate = require "jsoncontract.contract.rules" -- (loaded by the contract already)
    if ctx.signals ~= false then
        rules_gate.set_interrupt(function()
            caught = caught or core.signal_take()
            if caught then return caught end
            if stop_at and core.monotonic() >= stop_at then return res.signal end
        end)
    end

    local function tick(t)
        if take_error or breaker:tripped() then return "abort" end
        if ctx.signals ~= false then
            local sig = caught or core.signal_take()
            caught = nil
            if sig then
                if res.signal then return "abort" end   -- a second signal: stop now
                res.signal = sig
                stop_at = core.monotonic() + _M.option("grace", ctx.grace)
                if ctx.on_signal then ctx.on_signal(sig) end
                return "drain"
            end
        end
        if t - last_renew >= lease_s / 3 then
            last_renew = t
            local ids = {}
            for id in pairs(held) do ids[#ids + 1] = id end
            if #ids > 0 then
                local n, err = store:renew(job_id, owner, ids, lease_s)
                if not n then take_error = err return "abort" end
                if n < #ids then
                    local still, herr = store:held(job_id, owner, ids)
                    if not still then take_error = herr return "abort" end
                    for _, id in ipairs(ids) do
                        if not still[id] then lost[id] = true end
                    end
                end
            end
        end
    end

    local okrun, stats = pcall(scheduler.run, {
        parallel = _M.option("parallel", ctx.parallel), take = take, exhausted = exhausted, work = work,
        on_done = on_done,
        tick = tick, grace = _M.option("grace", ctx.grace), lane = ctx.lane, idle_seconds = ctx.idle_seconds,
        -- the lane waits no longer on a Retry-After than each item's attempt loop would
        retry_after_max_ms = type(ctx.ask.policy) == "table" and ctx.ask.policy.retry_after_max_ms or nil,
    })
    if ctx.signals ~= false then rules_gate.set_interrupt(nil) end
    if not okrun then
        res.store_error = errors.is(stats) and stats or errors.new("internal", "run_failed", tostring(stats))
        stats = { exchanges = finished_exchanges, limit_wait_s = 0, unfinished = {} }
    end
    res.store_error = res.store_error or take_error
    if breaker:tripped() then
        res.breaker = { cause = breaker.cause, count = breaker.tripped_at, message = breaker:message() }
    elseif #parked > 0 then
        res.rule_faults = { count = #parked, message = breaker:rule_message() }
    end
    res.stats = stats
    -- Leases of items still in flight go back now, so a resume or another worker takes them at once.
    local ids = {}
    for id in pairs(held) do ids[#ids + 1] = id end
    if #ids > 0 then res.released = store:release(job_id, owner, ids) end
    return res
end

return _M
