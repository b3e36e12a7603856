--- `jsoncontract diff OLD NEW`: classify each schema change between two contract versions.
-- Exit 0 compatible, 1 breaking, 2 usage error.
-- @module jsoncontract.cli.diff
local core = require "jsoncontract.core"
local schema_diff = require "jsoncontract.contract.diff"
local util = require "jsoncontract.cli.util"

local format = string.format

return {
    name = "diff",
    summary = "Classify each schema change between two contract versions (compatible or breaking).",
    configure = function(parser)
        parser:argument("old", "Contract .lua file or JSON Schema file.")
        parser:argument("new", "Contract .lua file or JSON Schema file.")
        parser:flag("--json", "Findings as JSON.")
    end,
    run = function(args, env)
        local out = env.stdout
        local old, oldv = util.load_schema(args.old)
        if old == nil then return util.fail(env, oldv) end
        local new, newv = util.load_schema(args.new)
        if new == nil then return util.fail(env, newv) end
        local ok, findings, breaking = pcall(schema_diff.diff, old, new)
        if not ok then return util.fail(env, "diff failed: " .. tostring(findings)) end
        if args.json then
            out:write(core.encode({ old = args.old, new = args.new, breaking = breaking, findings = findings },
                { indent = 2 }), "\n")
            return breaking and 1 or 0
        end
        out:write(format("diff %s%s -> %s%s\n", args.old, oldv and (" (version " .. oldv .. ")") or "",
            args.new, newv and (" (version " .. newv .. ")") or ""))
        local nb = 0
        for _, f in ipairs(findings) do
            out:write(format("%-10s %s %s: %s\n", f.breaking and "BREAKING" or "compatible", f.pointer, f.change,
                f.reason))
            if f.breaking then nb = nb + 1 end
        end
        out:write(format("%s: %d change(s), %d breaking\n", breaking and "breaking" or "compatible", #findings, nb))
        return breaking and 1 or 0
    end,
}
