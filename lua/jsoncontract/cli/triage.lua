--- `jsoncontract triage`: the support mail example's short form of `jsoncontract run`: the job
-- module examples/support_ticket.lua over a mailbox (JSONL, one `{id, text}` per line; default
-- the shared corpus's support mail when present, else examples/mailbox.jsonl). Every option of
-- `run` works here; `--resume DIR` continues a stopped job.
-- Exit status: as `jsoncontract run`.
-- @module jsoncontract.cli.triage
local util = require "jsoncontract.cli.util"
local commands = require "jsoncontract.cli.job_commands"
local run = require "jsoncontract.cli.run"

-- The mailbox when --input is not given: the shared corpus's support mail when it is there,
-- else examples/mailbox.jsonl.
local function default_input(root)
    local shared = os.getenv("JC_SHARED") or (root == "." and "../shared" or (root .. "/../shared"))
    local input = shared .. "/corpora/support-emails/emails.jsonl"
    if util.kind(input) ~= "file" then input = root .. "/examples/mailbox.jsonl" end
    return input
end

return {
    name = "triage",
    summary = "Triage a mailbox with the support-ticket example (short for run --job examples/support_ticket.lua).",
    configure = function(parser)
        commands.configure_job(parser, util, {
            input = "JSONL mailbox, - for stdin (default: $JC_SHARED/corpora/support-emails/emails.jsonl when "
                .. "present, else examples/mailbox.jsonl).",
            job = "Job module (default: examples/support_ticket.lua).",
        })
        run.configure_rest(parser)
    end,
    run = function(args, env)
        if not args.resume then
            if not args.job then args.job = env.root .. "/examples/support_ticket.lua" end
            args.input = args.input or default_input(env.root)
        end
        return run.start(args, env, "triage")
    end,
}
