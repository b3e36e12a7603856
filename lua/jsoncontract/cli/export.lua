--- `jsoncontract export DIR` or `export --store URL --out DIR [--job ID]`: write accepted.jsonl,
-- review.jsonl, evidence.jsonl and summary.json from the job store (temp file, fsync, rename).
-- Exit 0; 1 when the store cannot be reached or read, or a file cannot be written; 2 on a usage
-- error (no store named, a database that holds no job store, no such job).
-- @module jsoncontract.cli.export
local commands = require "jsoncontract.cli.job_commands"

return commands.store_command("export", "Write a job's accepted items, review queue, evidence and summary.",
    "A run's output folder (its job.sqlite; the files go there).",
    function(parser) parser:option("--out", "Folder to write to (default: DIR).") end)
