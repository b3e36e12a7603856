--- `jsoncontract export DIR` or `export --store URL --out DIR [--job ID]`: write tickets.jsonl,
-- review.jsonl, evidence.jsonl and summary.json from the job store (temp file + rename).
-- @module jsoncontract.cli.export
local commands = require "jsoncontract.jobs.commands"

return {
    name = "export",
    summary = "Write a job's tickets, review queue, evidence and summary from its store.",
    configure = function(parser)
        parser:argument("dir", "A triage output folder (its job.sqlite; the files go there)."):args("?")
        parser:option("--store", "Job store: postgresql://... or a SQLite file.")
        parser:option("--out", "Folder to write to (default: DIR).")
        parser:option("--job", "Job id (default: the newest job in the store).")
    end,
    run = function(args, env) return commands.export(commands.options(args), env) end,
}
