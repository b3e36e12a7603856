--- `jsoncontract run --job MODULE --input FILE.jsonl [--out DIR] [--store URL]`: every record
-- of the input through the job module's contract and a model, into accepted items or the review
-- queue, as a job in a store (SQLite in the output folder by default). `--resume DIR` continues a
-- stopped job. A job module: `jsoncontract.jobs.definition`; the job itself:
-- `jsoncontract.cli.job_commands`.
-- Exit 0 when every item ended in exactly one of accepted or review, whatever the split;
-- 1 on a context that cannot open, a store or export failure, or when another run holds the
-- folder; 2 on bad options or input (a contract with rules and no context too); 130 / 143 after
-- SIGINT / SIGTERM.
-- @module jsoncontract.cli.run
local util = require "jsoncontract.cli.util"
local commands = require "jsoncontract.cli.job_commands"

local _M = {}

--- The options `run` and `triage` share after the job's: output, resume, store, the run's own.
-- @tparam table parser
function _M.configure_rest(parser)
    parser:option("--out", "Output folder, must be new or empty (default: out/<command>-<UTC time>).")
    parser:option("--resume", "Continue the job in this folder: committed items are never asked again; "
        .. "the input must be the one it started with (ids and digests); a job read from stdin "
        .. "needs none.")
    parser:flag("--retry-review", "With --resume: send the review items to the model again, as a new pass.")
    parser:option("--store", "Job store (default: <out>/job.sqlite; or postgresql://...).")
    commands.configure_run(parser, util)
end

--- Check what the command line names, in its words, then run the job (`commands.run`).
-- @tparam table args parsed
-- @tparam table env
-- @tparam string command "run" or "triage"
-- @treturn integer exit status
function _M.start(args, env, command)
    -- --parallel, --max-attempts, --lease-seconds: checked by commands.run (runner.OPTIONS)
    if args.token_budget == 0 then return util.fail(env, "option --token-budget must be at least 1") end
    local o = commands.options(args)
    o.command = command
    if not args.resume then
        local p, perr = util.choose_provider(args)
        if not p then return util.fail(env, perr) end
        o.chosen_provider = p
    end
    return commands.run(o, env)
end

return {
    name = "run",
    summary = "Run any job module over a JSONL input into accepted items and a review queue.",
    configure = function(parser)
        commands.configure_job(parser, util)
        _M.configure_rest(parser)
    end,
    run = function(args, env) return _M.start(args, env, "run") end,
    configure_rest = _M.configure_rest,
    start = _M.start,
}
