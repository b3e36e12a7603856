--- `jsoncontract status [DIR] [--store URL] [--job ID] [--json]`: progress and per-gate counts
-- of a job, also while it runs. See docs/jobs.md.
-- Exit 0; 1 when the store cannot be reached or read; 2 on a usage error (no store named, a
-- database that holds no job store, no such job).
-- @module jsoncontract.cli.status
local commands = require "jsoncontract.cli.job_commands"

return commands.store_command("status", "Progress and per-gate counts of a job (a run's folder or a shared store).",
    "A run's output folder (its job.sqlite).",
    function(parser) parser:flag("--json", "The counts as JSON.") end)
