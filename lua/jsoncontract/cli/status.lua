--- `jsoncontract status [DIR] [--store URL] [--job ID] [--json]`: progress and per-gate counts
-- of a job, also while it runs. See README "Batch jobs".
-- @module jsoncontract.cli.status
local commands = require "jsoncontract.jobs.commands"

return {
    name = "status",
    summary = "Progress and per-gate counts of a job (a triage folder or a shared store).",
    configure = function(parser)
        parser:argument("dir", "A triage output folder (its job.sqlite)."):args("?")
        parser:option("--store", "Job store: postgresql://... or a SQLite file.")
        parser:option("--job", "Job id (default: the newest job in the store).")
        parser:flag("--json", "The counts as JSON.")
    end,
    run = function(args, env) return commands.status(commands.options(args), env) end,
}
