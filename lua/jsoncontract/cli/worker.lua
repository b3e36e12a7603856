--- `jsoncontract worker --store URL [--job ID]`: work on a shared job with other workers (leases
-- with FOR UPDATE SKIP LOCKED on PostgreSQL) until no item is left. See docs/jobs.md.
-- @module jsoncontract.cli.worker
local util = require "jsoncontract.cli.util"
local commands = require "jsoncontract.cli.job_commands"

return {
    name = "worker",
    summary = "Work on a job in a shared store (PostgreSQL) together with workers on other hosts.",
    configure = function(parser)
        parser:option("--store", "Job store: postgresql://... (or a SQLite file).")
        parser:option("--job", "Job id (default: the newest job in the store).")
        parser:option("--base-url", "Provider base URL for this host (default: the job's).")
        commands.configure_run(parser, util)
    end,
    run = function(args, env) return commands.worker(commands.options(args), env) end,
}
