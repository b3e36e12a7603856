--- `jsoncontract triage`: every message of a mailbox (JSONL, one `{id, text}` per line)
-- through the support-ticket contract and a model, into accepted tickets or the review queue,
-- as a job in a store (SQLite in the output folder by default; see README "Batch jobs").
-- `--resume DIR` continues a stopped job. The job itself: `jsoncontract.jobs.commands`.
-- Exit 0 when every item ended in exactly one of accepted or review, whatever the split;
-- 1 on a store or export failure, or when another triage runs on the folder; 2 on bad options or
-- input; 130 / 143 after SIGINT / SIGTERM.
-- @module jsoncontract.cli.triage
local util = require "jsoncontract.cli.util"
local commands = require "jsoncontract.jobs.commands"

local function run_triage(args, env)
    if args.parallel and (args.parallel < 1 or args.parallel > 256) then
        return util.fail(env, "option --parallel must be from 1 to 256")
    end
    if args.max_attempts and args.max_attempts < 1 then
        return util.fail(env, "option --max-attempts must be at least 1")
    end
    if args.token_budget == 0 then return util.fail(env, "option --token-budget must be at least 1") end
    local o = commands.options(args)
    if not args.resume then
        -- What the user named is checked here, with the command line's words; the job runs it.
        local p, perr = util.choose_provider(args)
        if not p then return util.fail(env, perr) end
        local path = args.contract or (env.root .. "/examples/support_ticket.lua")
        local mod, err = util.load_contract(path)
        if not mod then return util.fail(env, err) end
        o.chosen_provider, o.contract_module, o.contract = p, mod, path
    end
    return commands.triage(o, env)
end

return {
    name = "triage",
    summary = "Triage a mailbox with the support-ticket contract into tickets and a review queue.",
    configure = function(parser)
        commands.configure_job(parser, util)
        parser:option("--out", "Output folder, must be new or empty (default: out/triage-<UTC time>).")
        parser:option("--resume", "Continue the job in this folder: committed items are never asked again; "
            .. "the mailbox must be the one it started with (ids and digests); a job read from stdin "
            .. "needs none.")
        parser:flag("--retry-review", "With --resume: send the review items to the model again, as a new pass.")
        parser:option("--store", "Job store (default: <out>/job.sqlite; or postgresql://...).")
        commands.configure_run(parser, util)
    end,
    run = run_triage,
}
