--- `jsoncontract check`: one reply through the format, schema and rules gates of a job module
-- (`jsoncontract.jobs.definition`). The rules get their context as a run does, from the module's
-- `context`, or from `--context DIR` (a run's folder) through its `replay_context`, as `replay` and
-- the review desk do. A contract with rules and no context is refused (fail closed), unless the
-- module says `context = false` (the verdict then says `rules_context: "none"`).
-- Exit 0 accepted, 1 rejected, 2 usage error (also: rules without a context, a context that
-- cannot open, a --context the contract cannot use).
-- @module jsoncontract.cli.check
local core = require "jsoncontract.core"
local adapters = require "jsoncontract.contract.adapters"
local util = require "jsoncontract.cli.util"
local definition = require "jsoncontract.jobs.definition"

-- The rules' context from DIR (the contract module's `replay_context`); nil and a message when
-- the module has none or finds nothing there: a context asked for and not had is never skipped.
local function context_of(mod, file, dir, env)
    if util.kind(dir) ~= "directory" then return nil, "option --context needs a folder; " .. dir .. " is not one" end
    if type(mod.replay_context) ~= "function" then
        if type(mod.context) == "function" then
            return nil, "the job module " .. file .. " opens its context itself (its `context`), and has no "
                .. "replay_context to read a run's data from a folder: leave out --context"
        end
        return nil, "the contract " .. file .. " takes no context (its module has no replay_context)"
    end
    local ctx = mod.replay_context { evidence_dir = dir, root = env.root }
    if ctx == nil then
        return nil, "the contract " .. file .. " found no context in " .. dir .. " (its replay_context names "
            .. "what it reads; support_ticket: orders.sqlite, as a triage run leaves in its output folder)"
    end
    return ctx
end

return {
    name = "check",
    summary = "Run the format, schema and rules gates on one reply (a file or stdin).",
    configure = function(parser)
        parser:argument("reply", "File holding the reply's content string (- or none: stdin)."):args("?")
        parser:option("--job", "Job module: a Lua file returning {contract =, context =, ...} "
            .. "(default: examples/support_ticket.lua).")
        parser:option("--adapter", "Allow one adapter."):choices(adapters.names)
        parser:option("--context", "Folder the contract's rules read the run's data from (its module's "
            .. "replay_context; support_ticket: a triage output folder, with orders.sqlite).")
    end,
    run = function(args, env)
        local file = args.job or (env.root .. "/examples/support_ticket.lua")
        local def, err = definition.load(file)
        if not def then return util.fail(env, err) end
        local mod = def.module
        local ctx, close
        if args.context then
            ctx, err = context_of(mod, file, args.context, env)
            if not ctx then return util.fail(env, err) end
        else
            ctx, close = definition.open_context(def, { module = file })
            if ctx == nil then return util.fail(env, close) end
            ctx = ctx or nil
        end
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
        local value, report = mod.contract:check(text, { adapters = args.adapter and { args.adapter } or nil,
            context = ctx })
        if close then close() end
        -- With rules, the verdict says whether they had their context; none: no rules to say it of.
        local has_rules = #(mod.contract.rules or {}) > 0
        local rules_context = has_rules and (ctx and "given" or "none") or nil
        if value ~= nil then
            env.stdout:write(core.encode({ verdict = "accepted", value = value, adapters = report.adapters,
                rules_context = rules_context }, { indent = 2 }), "\n")
            if rules_context == "none" then
                env.stderr:write("jsoncontract: note: the rules ran without a context (the job module says "
                    .. "context = false)\n")
            end
            return 0
        end
        env.stdout:write(core.encode({ verdict = "rejected", category = report.category, kind = report.kind,
            message = report.message, errors = report.errors, rules_context = rules_context },
            { indent = 2 }), "\n")
        return 1
    end,
}
