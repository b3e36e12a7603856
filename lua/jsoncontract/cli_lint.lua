--- `jsoncontract lint`: print, per provider, the schema keywords the provider will not
-- enforce (see jsoncontract.lint). Wired into `jsoncontract.cli` by its owner.
--
--     jsoncontract lint --contract FILE [--provider NAME] [--json]
--
-- FILE is a Lua file returning `{contract = ...}` (as for `check`) or a `.json` file holding
-- a JSON Schema. Exit status: 0 when every provider enforces the whole schema, 1 when some
-- keyword is not enforced or a native request would fail as written (and is sent in a weaker
-- mode; the findings are printed), 2 on a usage error.
-- @module jsoncontract.cli_lint
local core = require "jsoncontract.core"
local lint = require "jsoncontract.lint"
local providers = require "jsoncontract.providers"

local _M = { _VERSION = core._VERSION }

-- JSON text keeps its property order when the decoder knows keep_order (see contract.lua).
local KEEP_ORDER = pcall(core.decode, "{}", { keep_order = true }) and { keep_order = true } or nil

_M.USAGE = [[
usage: jsoncontract lint --contract FILE [--provider NAME] [--json]
  --contract FILE   Lua file returning {contract=...}, or a .json file with a JSON Schema
  --provider NAME   one of: ]] .. table.concat(providers.names, ", ") .. [[ (default: all)
  --json            print the report as JSON
exit status: 0 every keyword enforced, 1 some keyword not enforced or the native request
would fail (it is then sent in the weaker mode shown), 2 usage error
]]

local function load_schema(path)
    if path:match("%.json$") then
        local f, msg = io.open(path, "rb")
        if not f then return nil, "cannot read " .. path .. ": " .. tostring(msg) end
        local text, rerr = f:read("*a")
        f:close()
        if not text then return nil, "cannot read " .. path .. ": " .. tostring(rerr) end
        local v, err = core.decode(text, KEEP_ORDER)
        if v == nil then return nil, path .. " is not JSON: " .. tostring(err) end
        -- Only what the validator accepts as a schema is linted.
        local ok, cerr = pcall(core.compile, v)
        if not ok then return nil, path .. ": " .. tostring(cerr) end
        return v
    end
    local ok, mod = pcall(dofile, path)
    if not ok then return nil, "cannot load contract " .. path .. ": " .. tostring(mod) end
    if type(mod) == "table" and type(mod.contract) == "table" and type(mod.contract.schema) == "table" then
        return mod.contract.schema
    end
    return nil, path .. " must return a table with a 'contract' field"
end

--- Run the lint command.
-- @tparam table argv the arguments (strings), with or without the leading "lint"
-- @tparam[opt] table env { stdout = file-like with :write (default io.stdout), stderr = the
--   same (default io.stderr) }
-- @treturn integer exit status (0, 1 or 2, see the module description)
function _M.run(argv, env)
    env = env or {}
    local out, errout = env.stdout or io.stdout, env.stderr or io.stderr
    local path, name, as_json
    local i = 1
    if argv[1] == "lint" then i = 2 end -- the whole command line, as cli.main passes it
    while i <= #argv do
        local a = argv[i]
        if a == "--contract" and argv[i + 1] then
            path, i = argv[i + 1], i + 2
        elseif a == "--provider" and argv[i + 1] then
            name, i = argv[i + 1], i + 2
        elseif a == "--json" then
            as_json, i = true, i + 1
        elseif a == "--help" or a == "-h" then
            out:write(_M.USAGE)
            return 0
        else
            errout:write("jsoncontract lint: unexpected argument ", a, "\n", _M.USAGE)
            return 2
        end
    end
    if not path then
        errout:write("jsoncontract lint: --contract FILE is required\n", _M.USAGE)
        return 2
    end
    if name then
        local known = false
        for _, n in ipairs(providers.names) do known = known or n == name end
        if not known then
            errout:write("jsoncontract lint: unknown provider ", name, " (known: ",
                table.concat(providers.names, ", "), ")\n")
            return 2
        end
    end
    local schema, msg = load_schema(path)
    if not schema then
        errout:write("jsoncontract lint: ", msg, "\n")
        return 2
    end
    local ok, report = pcall(lint.lint, schema, name)
    if not ok then
        errout:write("jsoncontract lint: ", tostring(report), "\n")
        return 2
    end
    local any = false
    for _, r in ipairs(report) do any = any or #r.not_enforced > 0 or r.fails end
    if as_json then
        out:write(core.encode(report), "\n")
    else
        for _, r in ipairs(report) do
            local rewritten = 0
            for _, f in ipairs(r.findings) do
                if f.action == "rewritten" then rewritten = rewritten + 1 end
            end
            out:write(string.format("%s (mode %s): %d keyword%s not enforced%s\n", r.provider, r.mode,
                #r.not_enforced, #r.not_enforced == 1 and "" or "s",
                rewritten > 0 and string.format(", %d rewritten", rewritten) or ""))
            if r.fallback then
                out:write(string.format("  would fail in mode native, sent in mode %s: %s %s\n", r.fallback.to,
                    r.fallback.schema_pointer == "" and "/" or r.fallback.schema_pointer, r.fallback.reason))
            end
            for _, f in ipairs(r.not_enforced) do
                out:write(string.format("  %s %s: %s\n", f.schema_pointer == "" and "/" or f.schema_pointer,
                    f.keyword, f.reason))
            end
            for _, f in ipairs(r.findings) do
                if f.action == "rewritten" then
                    out:write(string.format("  %s %s: rewritten: %s\n",
                        f.schema_pointer == "" and "/" or f.schema_pointer, f.keyword, f.reason))
                end
            end
        end
    end
    return any and 1 or 0
end

return _M
