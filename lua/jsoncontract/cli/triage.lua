--- `jsoncontract triage`: every message of a mailbox (JSONL, one `{id, text}` per line)
-- through the support-ticket contract and a model, into accepted tickets or the review queue.
-- Exit 0 when every item ended in exactly one of accepted or review, whatever the split.
-- @module jsoncontract.cli.triage
local core = require "jsoncontract.core"
local run = require "jsoncontract.run"
local batch = require "jsoncontract.batch"
local evidence = require "jsoncontract.evidence"
local errors = require "jsoncontract.errors"
local secrets = require "jsoncontract.secrets"
local util = require "jsoncontract.cli.util"
local compat = require "jsoncontract.compat"

local format = string.format

-- The default mailbox: the shared corpus when present, else the example mailbox.
local function default_input(root)
    local shared = os.getenv("JC_SHARED") or (root == "." and "../shared" or (root .. "/../shared"))
    local input = shared .. "/corpora/support-emails/emails.jsonl"
    if util.kind(input) == "file" then return input end
    return root .. "/examples/mailbox.jsonl"
end

-- A review outcome for an item that never reached the model.
local function no_attempt(item, category, kind, message)
    return { status = "human_review", attempts = setmetatable({}, core.array_mt),
        usage = { input_tokens = 0, output_tokens = 0 }, item_id = item.id,
        reason = errors.new(category, kind, message) }
end

-- The shop's orders: the orders the mailbox refers to, plus the examples' own.
local function open_orders(root, path, items)
    local orders_mod = dofile(root .. "/examples/orders.lua")
    local db, err = orders_mod.open(path)
    if not db then return nil, err end
    for _, id in ipairs { "1042", "1187", "2001", "2002", "2003", "2004", "2005" } do db:add(id, "example") end
    for _, item in ipairs(items) do
        local meta = type(item.meta) == "table" and item.meta or {}
        for _, id in ipairs(type(meta.inserted_order_numbers) == "table" and meta.inserted_order_numbers or {}) do
            if type(id) == "string" then db:add(id, item.id) end
        end
    end
    return db
end

local function run_triage(args, env)
    local stderr, stdout = env.stderr, env.stdout
    local root = env.root
    local input = args.input or default_input(root)
    local parallel, max_attempts = args.parallel or 8, args.max_attempts or 3
    if parallel < 1 or parallel > 256 then return util.fail(env, "option --parallel must be from 1 to 256") end
    if max_attempts < 1 then return util.fail(env, "option --max-attempts must be at least 1") end
    if args.token_budget == 0 then return util.fail(env, "option --token-budget must be at least 1") end
    local p, perr = util.choose_provider(args)
    if not p then return util.fail(env, perr) end
    local mod, err = util.load_contract(args.contract or (root .. "/examples/support_ticket.lua"))
    if not mod then return util.fail(env, err) end
    local contract = mod.contract
    local items
    items, err = util.read_mailbox(input, args.limit)
    if not items then return util.fail(env, "cannot read mailbox: " .. tostring(err)) end

    -- Everything is checked; only now is anything created.
    local out = args.out or util.free_name("out/triage-" .. os.date("!%Y%m%d-%H%M%S"))
    local ok
    ok, err = util.prepare_out_dir(out)
    if not ok then return util.fail(env, err) end
    local db
    db, err = open_orders(root, out .. "/orders.sqlite", items)
    if not db then return util.fail(env, "cannot open orders database: " .. tostring(err)) end

    local stop_standin
    if p.standin then
        p.base_url, stop_standin = util.start_standin(env.bindir, args.seed or 1, args.delay_ms or 20)
        if not p.base_url then db:close() return util.fail(env, stop_standin) end
    end

    local log = assert(evidence.open(out .. "/evidence.jsonl", { record_text = args.record_text }))
    if p.api_key then log:add_secret(p.api_key) end
    local tickets = assert(io.open(out .. "/tickets.jsonl", "w"))
    local review = assert(io.open(out .. "/review.jsonl", "w"))
    local metrics = evidence.metrics()
    local tty = util.isatty(io.stderr) and stderr == io.stderr
    local done, n_accepted, n_review = 0, 0, 0

    stderr:write(format("triage: %d messages from %s, provider %s (%s), model %s, output %s\n", #items, input,
        p.provider, p.standin and ("stand-in at " .. p.base_url) or "live", p.model, out))

    local function work(item)
        if item.input_error then return no_attempt(item, "input", "invalid_input", item.input_error) end
        -- One item's failure (a bug in a rule, say) is that item's review reason, never the
        -- end of the whole run.
        local asked, outcome = compat.pcall(run.ask, contract, item.text, {
            provider = p.provider, model = p.model, api_key = p.api_key, base_url = p.base_url,
            transport = batch.send, sleep = batch.sleep, evidence = log, context = { orders = db },
            item_id = item.id, policy = { max_attempts = max_attempts, token_budget = args.token_budget },
            max_tokens = 300, timeout_ms = 120000,
        })
        if asked then return outcome end
        -- a raised table shows its fields or __tostring; the key never
        local msg = secrets.clean(secrets.describe(outcome), p.api_key, 500)
        return no_attempt(item, "internal", "item_error", "this item could not be processed: " .. msg)
    end

    -- One item's line, checked before anything is written: the key redacted from every
    -- string, and a line that cannot be encoded (a value no JSON can hold, nested too deep)
    -- becomes that item's review line with the reason, so the run goes on.
    local function line_for(base)
        local encoded, line = pcall(core.encode, secrets.redact_value(base, p.api_key))
        if encoded then return line end
        return nil, secrets.clean(line, p.api_key, 300)
    end

    local function on_done(i, outcome)
        local item = items[i]
        done = done + 1
        local attempts = setmetatable({}, core.array_mt)
        for k, a in ipairs(outcome.attempts) do
            attempts[k] = { gate = a.gate, kind = a.kind, finish = a.finish, http_status = a.http_status }
        end
        local base = { id = item.id, request_id = outcome.request_id, contract = contract:identity(),
            attempts = attempts, usage = outcome.usage, elapsed_ms = outcome.elapsed_ms }
        local line, why
        if outcome.status == "accepted" then
            base.ticket = outcome.value
            base.adapters = outcome.adapters
            line, why = line_for(base)
            if line then
                n_accepted = n_accepted + 1
                tickets:write(line, "\n")
            else
                base.ticket, base.adapters = nil, nil
                outcome = { status = "human_review", attempts = outcome.attempts, usage = outcome.usage,
                    reason = errors.new("internal", "item_error", "this item's ticket could not be written: " .. why) }
            end
        end
        if outcome.status ~= "accepted" then
            n_review = n_review + 1
            local r = outcome.reason
            local errs = setmetatable({}, core.array_mt)
            -- Messages a person reads: long pointers and values in them elided in the middle.
            for k, e in ipairs(r.errors or {}) do
                errs[k] = { pointer = e.pointer, keyword = e.keyword,
                    message = secrets.clean(e.message, p.api_key, 1000) }
            end
            base.reason = { category = r.category, kind = r.kind, message = secrets.clean(r.message, p.api_key, 2000),
                errors = errs }
            line, why = line_for(base)
            if not line then
                base.reason = { category = "internal", kind = "item_error", errors = setmetatable({}, core.array_mt),
                    message = "this item's review line could not be written: " .. why }
                line = assert(line_for(base))
            end
            review:write(line, "\n")
        end
        metrics:observe_outcome(outcome)
        if tty then
            stderr:write(format("\r%d/%d done: %d accepted, %d to review", done, #items, n_accepted, n_review))
        end
    end

    local okrun, runerr = pcall(batch.run, items, work, { parallel = parallel, on_done = on_done })
    if tty then stderr:write("\n") end
    tickets:close()
    review:close()
    log:close()
    db:close()
    if stop_standin then stop_standin() end
    if not okrun then return util.fail(env, "triage stopped: " .. tostring(runerr)) end

    local f = assert(io.open(out .. "/summary.json", "w"))
    f:write(core.encode({ input = input, items = #items, accepted = n_accepted, human_review = n_review,
        provider = p.provider, model = p.model, standin = p.standin or false, contract = contract:identity(),
        metrics = metrics:summary() }, { indent = 2 }), "\n")
    f:close()

    stdout:write(metrics:format(), "\n")
    stdout:write(format("%d messages: %d accepted (%s/tickets.jsonl), %d to review (%s/review.jsonl); " ..
        "evidence in %s/evidence.jsonl\n", #items, n_accepted, out, n_review, out, out))
    if n_accepted + n_review ~= #items then
        stderr:write("jsoncontract: counts do not add up\n")
        return 1
    end
    return 0
end

return {
    name = "triage",
    summary = "Triage a mailbox with the support-ticket contract into tickets and a review queue.",
    configure = function(parser)
        parser:option("--input", "JSONL mailbox, - for stdin (default: $JC_SHARED/corpora/support-emails/"
            .. "emails.jsonl when present, else examples/mailbox.jsonl).")
        parser:option("--out", "Output folder, must be new or empty (default: out/triage-<UTC time>).")
        parser:option("--contract", "Lua file returning {contract=...} (default: examples/support_ticket.lua).")
        parser:option("--provider", "Provider: " .. table.concat(require("jsoncontract.providers").names, ", ")
            .. " (default: from the API key set, else the stand-in speaking openai).")
            :convert(util.provider_name)
        parser:option("--model", "Model name (default: OPENAI_MODEL / ANTHROPIC_MODEL or a stand-in name).")
        parser:option("--base-url", "Provider base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL).")
        parser:option("--parallel", "Items in flight at once (default 8)."):convert(util.whole("--parallel"))
        parser:option("--max-attempts", "Model answers per item (default 3)."):convert(util.whole("--max-attempts"))
        parser:option("--token-budget", "Stop retrying when the history would exceed N estimated tokens.")
            :convert(util.whole("--token-budget"))
        parser:option("--limit", "Only the first N messages."):convert(util.whole("--limit"))
        parser:option("--seed", "Stand-in model seed (default 1)."):convert(util.whole("--seed"))
        parser:option("--delay-ms", "Stand-in model delay per answer (default 20)."):convert(util.whole("--delay-ms"))
        parser:flag("--record-text", "Keep raw model text and mail text in the evidence log.")
    end,
    run = run_triage,
}
