--- `jsoncontract enqueue --store URL --job MODULE --input FILE`: create a job and its items in a
-- shared store; prints the job id. Workers (`jsoncontract worker`) then run it. See
-- docs/jobs.md.
-- @module jsoncontract.cli.enqueue
local util = require "jsoncontract.cli.util"
local commands = require "jsoncontract.cli.job_commands"

return {
    name = "enqueue",
    summary = "Create a job of a job module in a shared store (PostgreSQL) for workers to run.",
    configure = function(parser)
        parser:option("--store", "Job store: postgresql://... (or a SQLite file).")
        commands.configure_job(parser, util)
    end,
    run = function(args, env)
        return commands.enqueue(commands.options(args), env)
    end,
}
