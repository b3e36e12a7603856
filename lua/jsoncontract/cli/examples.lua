--- `jsoncontract examples [NAME...]`: run each example over its own small input file
-- (examples/<name>.jsonl: `{id, text, replies}` per line) and print its per-gate metrics.
-- By default the model is the recorded one (each line's `replies`, one per attempt, served as real
-- OpenAI envelopes); with `--standin` the embedded stand-in answers over HTTP instead.
-- @module jsoncontract.cli.examples
local core = require "jsoncontract.core"
local run = require "jsoncontract.run"
local evidence = require "jsoncontract.evidence"
local util = require "jsoncontract.cli.util"
local definition = require "jsoncontract.jobs.definition"

local format = string.format
local min = math.min

--- The examples, in the order they are run by default.
local EXAMPLES = { "support_ticket", "ticket_priority", "leave_request", "blog_category" }

-- A transport serving an input line's recorded replies, one per attempt (the last repeats).
local function recorded(replies)
    local i = 0
    return function()
        i = i + 1
        local a = replies[min(i, #replies)] or ""
        if type(a) ~= "table" then a = { content = a } end
        return { status = 200, headers = {}, body = util.openai_envelope(a.content, a.finish, a.refusal) }
    end
end

local function describe(outcome, typed)
    if outcome.status ~= "accepted" then
        return format("to a person after %d attempt(s): %s/%s", #outcome.attempts,
            tostring(outcome.reason.category), tostring(outcome.reason.kind))
    end
    local what = format("accepted after %d attempt(s)", #outcome.attempts)
    if typed and typed.kind ~= "valid" then what = what .. ", " .. typed.kind:gsub("_", " ") end
    if outcome.adapters and #outcome.adapters > 0 then
        what = what .. ", adapter " .. table.concat(outcome.adapters, ", ")
    end
    return what
end

local function run_one(name, args, env, standin)
    local out = env.stdout
    local def, err = definition.load(env.root .. "/examples/" .. name .. ".lua")
    if not def then return nil, err end
    local mod = def.module
    -- the rules read what the job module's context opens, as in a run
    local ctx, close = definition.open_context(def, {})
    if ctx == nil then return nil, close end
    local input = env.root .. "/examples/" .. name .. ".jsonl"
    local items
    items, err = util.read_mailbox(input)
    if not items then return nil, "cannot read " .. input .. ": " .. tostring(err) end
    local metrics = evidence.metrics()
    out:write(format("== %s %s: %d inputs from %s, %s\n", mod.contract.name, mod.contract.version, #items,
        input, standin and "stand-in model over HTTP" or "recorded model"))
    for _, item in ipairs(items) do
        if item.input_error then -- a line that is not an input: said, and nothing asked
            out:write(format("  %-14s not read: %s\n", item.id, item.input_error))
        else
            local opts = { provider = "openai", model = "recorded-1", base_url = "http://127.0.0.1:9",
                sleep = function() end, policy = mod.policy, adapters = mod.adapters, item_id = item.id,
                context = ctx or nil }
            if standin then
                opts.model, opts.base_url = "standin-1", standin
            else
                opts.transport = recorded(type(item.replies) == "table" and item.replies or {})
            end
            local outcome = run.ask(mod.contract, item.text, opts)
            -- the example's own reading of the outcome (it may mark needs_clarification) comes first
            local typed = mod.result and mod.result(outcome)
            metrics:observe_outcome(outcome)
            out:write(format("  %-14s %s\n", item.id, describe(outcome, typed)))
            if args.verbose and outcome.status == "accepted" then
                out:write("                 ", core.encode(outcome.value), "\n")
            end
        end
    end
    close()
    local c = metrics:summary()
    out:write(format("  parseable %d/%d, schema-valid %d/%d, rules passed %d/%d attempts; " ..
        "accepted %d/%d items, needing clarification or review %d, to a person %d\n",
        c.parseable, c.attempts, c.schema_valid, c.attempts, c.rules_pass, c.attempts,
        c.accepted, c.items, c.needs_clarification, c.human_review))
    return true
end

return {
    name = "examples",
    summary = "Run each example over examples/<name>.jsonl and print its per-gate metrics.",
    EXAMPLES = EXAMPLES,
    configure = function(parser)
        parser:argument("names", "Examples to run (default: " .. table.concat(EXAMPLES, ", ") .. ")."):args("*")
            :choices(EXAMPLES)
        parser:flag("--standin", "The stand-in model over HTTP instead of the recorded replies.")
        parser:flag("--verbose", "Also print each accepted value.")
    end,
    run = function(args, env)
        local names = #args.names > 0 and args.names or EXAMPLES
        local base, stop
        if args.standin then
            local standin, serr = util.start_standin(env)
            if not standin then return util.fail(env, serr) end
            base, stop = standin.base_url, standin.stop
        end
        for _, name in ipairs(names) do
            local ok, err = run_one(name, args, env, base)
            if not ok then
                if stop then stop() end
                return util.fail(env, err)
            end
        end
        if stop then stop() end
        return 0
    end,
}
