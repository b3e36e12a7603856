--- `jsoncontract check`: one reply through the format, schema and rules gates.
-- Exit 0 accepted, 1 rejected, 2 usage error.
-- @module jsoncontract.cli.check
local core = require "jsoncontract.core"
local adapters = require "jsoncontract.contract.adapters"
local util = require "jsoncontract.cli.util"

return {
    name = "check",
    summary = "Run the format, schema and rules gates on one reply (a file or stdin).",
    configure = function(parser)
        parser:argument("reply", "File holding the reply's content string (- or none: stdin)."):args("?")
        parser:option("--contract", "Lua file returning {contract=...} (default: examples/support_ticket.lua).")
        parser:option("--adapter", "Allow one adapter."):choices(adapters.names)
    end,
    run = function(args, env)
        local mod, err = util.load_contract(args.contract or (env.root .. "/examples/support_ticket.lua"))
        if not mod then return util.fail(env, err) end
        local text
        if args.reply and args.reply ~= "-" then
            text, err = util.read_file(args.reply)
            if not text then return util.fail(env, err) end
        else
            -- typed at a terminal, the wait would look like a hang: say what it waits for
            if util.isatty(io.stdin) then
                env.stderr:write("jsoncontract: reading the reply from the terminal; end it with Ctrl-D "
                    .. "(or give REPLY, a file)\n")
            end
            text = io.read("*a")
        end
        local value, report = mod.contract:check(text, { adapters = args.adapter and { args.adapter } or nil })
        if value ~= nil then
            env.stdout:write(core.encode({ verdict = "accepted", value = value, adapters = report.adapters },
                { indent = 2 }), "\n")
            return 0
        end
        env.stdout:write(core.encode({ verdict = "rejected", category = report.category, kind = report.kind,
            message = report.message, errors = report.errors }, { indent = 2 }), "\n")
        return 1
    end,
}
