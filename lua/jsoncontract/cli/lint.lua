--- `jsoncontract lint`: print, per provider, the schema keywords the provider will not
-- enforce (see `jsoncontract.contract.lint`).
--
--     jsoncontract lint --contract FILE [--provider NAME] [--json]
--
-- FILE is a Lua file returning `{contract = ...}` (as for `check`; its examples are checked
-- against each schema sent) or a JSON Schema file.
-- Exit status: 0 when every provider enforces the whole schema, 1 when some keyword is not
-- enforced, is not a JSON Schema keyword at all (a typo: it checks nothing), or a native request
-- would fail as written (and is sent in a weaker mode; the findings are printed), 2 on a usage
-- error.
-- @module jsoncontract.cli.lint
local core = require "jsoncontract.core"
local lint = require "jsoncontract.contract.lint"
local providers = require "jsoncontract.providers"
local util = require "jsoncontract.cli.util"

local format = string.format

return {
    name = "lint",
    summary = "Say, per provider, which schema keywords its constrained decoding will not enforce.",
    configure = function(parser)
        parser:option("--contract", "Lua file returning {contract=...}, or a JSON Schema file (required).")
        parser:option("--provider", "One of: " .. table.concat(providers.names, ", ") .. " (default: all).")
            :convert(util.provider_name)
        parser:flag("--json", "Print the report as JSON.")
        parser:epilog("Exit status: 0 every keyword enforced, 1 some keyword not enforced or unknown to JSON "
            .. "Schema (a typo checks nothing), or the native request would fail (it is then sent in the weaker "
            .. "mode shown), 2 usage error.")
    end,
    run = function(args, env)
        local out = env.stdout
        if not args.contract then return util.fail(env, "lint: --contract FILE is required") end
        local schema, msg = util.load_schema(args.contract)
        if schema == nil then return util.fail(env, "lint: " .. msg) end
        -- a contract file's examples: each copy sent must still accept them
        local target = schema
        if args.contract:match("%.lua$") then
            local loaded, mod = pcall(dofile, args.contract)
            if loaded and type(mod) == "table" and type(mod.contract) == "table"
                and type(mod.contract.examples) == "table" then
                target = { schema = schema, examples = mod.contract.examples }
            end
        end
        local ok, report = pcall(lint.lint, target, args.provider)
        if not ok then return util.fail(env, "lint: " .. tostring(report)) end
        local unknown = lint.unknown_keywords(schema)
        local any = #unknown > 0
        for _, r in ipairs(report) do any = any or #r.not_enforced > 0 or r.fails end
        if args.json then
            for _, r in ipairs(report) do r.unknown_keywords = unknown end
            out:write(core.encode(report), "\n")
        else
            for _, f in ipairs(unknown) do out:write(format("%s %s\n", f.schema_pointer, f.message)) end
            for _, r in ipairs(report) do
                local rewritten = 0
                for _, f in ipairs(r.findings) do
                    if f.action == "rewritten" then rewritten = rewritten + 1 end
                end
                out:write(format("%s (mode %s): %d keyword%s not enforced%s\n", r.provider, r.mode,
                    #r.not_enforced, #r.not_enforced == 1 and "" or "s",
                    rewritten > 0 and format(", %d rewritten", rewritten) or ""))
                if r.fallback then
                    out:write(format("  would fail in mode native, sent in mode %s: %s %s\n", r.fallback.to,
                        r.fallback.schema_pointer == "" and "/" or r.fallback.schema_pointer, r.fallback.reason))
                end
                for _, f in ipairs(r.not_enforced) do
                    out:write(format("  %s %s: %s\n", f.schema_pointer == "" and "/" or f.schema_pointer,
                        f.keyword, f.reason))
                end
                for _, f in ipairs(r.findings) do
                    if f.action == "rewritten" then
                        out:write(format("  %s %s: rewritten: %s\n",
                            f.schema_pointer == "" and "/" or f.schema_pointer, f.keyword, f.reason))
                    end
                end
                local g = r.grammar -- mode "grammar": jsoncontract's own grammar (llamacpp)
                if g then
                    out:write(format("%s (mode grammar): %s\n", r.provider, g.fails and ("no grammar, sent in mode "
                        .. g.mode .. ": " .. g.fails) or format("%d keyword%s not expressed", #g.unexpressed,
                        #g.unexpressed == 1 and "" or "s")))
                    for _, f in ipairs(g.unexpressed) do
                        out:write(format("  %s %s: %s: %s\n", f.schema_pointer == "" and "/" or f.schema_pointer,
                            f.keyword, f.action, f.reason))
                    end
                end
            end
        end
        return any and 1 or 0
    end,
}
