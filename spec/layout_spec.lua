-- The house's rooms (docs/design.md "Layout"): no require cycle among the Lua modules, and each room
-- imports only what the map allows.
local util = require "support.util"

-- module name -> the jsoncontract modules it requires at load time (top-level `local x = require`)
local function module_deps()
    local deps = {}
    for _, f in ipairs(util.lines("find lua -name '*.lua' | sort")) do
        local m = f:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
        deps[m] = {}
        for line in util.slurp(f):gmatch("[^\n]+") do
            local r = line:match('^local [%w_]+ = require[%s%(]*"(jsoncontract[%w%._]*)"')
            if r then deps[m][#deps[m] + 1] = r end
        end
    end
    return deps
end

-- A room (module prefix) and the prefixes it may import (the C core always).
local RULES = {
    { "jsoncontract.secrets", { "jsoncontract.utf8" } },
    { "jsoncontract.errors", { "jsoncontract.json", "jsoncontract.utf8", "jsoncontract.secrets" } },
    { "jsoncontract.json", { "jsoncontract.utf8" } },
    { "jsoncontract.utf8", {} },
    { "jsoncontract.util", {} },
    { "jsoncontract.compat", {} },
    { "jsoncontract.transport.", { "jsoncontract.errors", "jsoncontract.json", "jsoncontract.compat",
        "jsoncontract.secrets" } },
    { "jsoncontract.providers.", { "jsoncontract.errors", "jsoncontract.json", "jsoncontract.transport.http_status",
        "jsoncontract.providers.", "jsoncontract.secrets" } },
    { "jsoncontract.standin.", { "jsoncontract.standin.", "jsoncontract.utf8" } },
    { "jsoncontract.contract.lint", { "jsoncontract.errors", "jsoncontract.json", "jsoncontract.feedback",
        "jsoncontract.contract.", "jsoncontract.providers", "jsoncontract.secrets" } },
    { "jsoncontract.contract", { "jsoncontract.errors", "jsoncontract.json", "jsoncontract.feedback",
        "jsoncontract.contract.", "jsoncontract.secrets" } },
    { "jsoncontract.run", { "jsoncontract.errors", "jsoncontract.feedback", "jsoncontract.providers",
        "jsoncontract.compat", "jsoncontract.run.", "jsoncontract.secrets" } },
    { "jsoncontract.jobs.", { "jsoncontract.errors", "jsoncontract.evidence", "jsoncontract.compat",
        "jsoncontract.run", "jsoncontract.providers", "jsoncontract.jobs.", "jsoncontract.secrets",
        "jsoncontract.setup", "jsoncontract.standin.process", "jsoncontract.utf8", "jsoncontract.util" } },
    -- What cli/ and jobs/ share (the contract file, the provider, the interpreter): the registry,
    -- lazily, and the stand-in's starter (which knows the interpreter).
    { "jsoncontract.setup", { "jsoncontract.providers", "jsoncontract.standin.process" } },
    -- The review desk: nothing at the desk reaches a model (no run, providers, transport).
    { "jsoncontract.review.", { "jsoncontract.json", "jsoncontract.compat", "jsoncontract.contract",
        "jsoncontract.jobs.store", "jsoncontract.jobs.review_queries", "jsoncontract.review.",
        "jsoncontract.secrets", "jsoncontract.util" } },
}

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

describe("the Lua layout", function()
    local deps = module_deps()

    it("has no require cycle", function()
        local state, cycles = {}, {}
        local function visit(m, stack)
            if state[m] == 1 then cycles[#cycles + 1] = table.concat(stack, " -> ") .. " -> " .. m return end
            if state[m] == 2 or not deps[m] then return end
            state[m] = 1
            stack[#stack + 1] = m
            for _, d in ipairs(deps[m]) do visit(d, stack) end
            stack[#stack] = nil
            state[m] = 2
        end
        for m in pairs(deps) do visit(m, {}) end
        assert.same({}, cycles)
    end)

    it("keeps each room's imports to what the map allows", function()
        local bad = {}
        for m, list in pairs(deps) do
            for _, rule in ipairs(RULES) do
                if m == rule[1] or starts(m, rule[1]) or (rule[1]:sub(-1) ~= "." and starts(m, rule[1] .. ".")) then
                    for _, d in ipairs(list) do
                        local ok = d == "jsoncontract.core" and not starts(m, "jsoncontract.standin.")
                            and m ~= "jsoncontract.utf8"
                        for _, allowed in ipairs(rule[2]) do ok = ok or d == allowed or starts(d, allowed) end
                        if not ok then bad[#bad + 1] = m .. " requires " .. d end
                    end
                    break
                end
            end
        end
        table.sort(bad)
        assert.same({}, bad)
    end)

    it("writes strings every Lua reads alike: no \\u{...} escape (Lua 5.1 reads it as u{...})", function()
        local bad = {}
        local esc = "\\" .. "u{"   -- spelled apart, so this line is not a hit
        for _, f in ipairs(util.lines("find lua spec bin examples bench tools -name '*.lua' | sort")) do
            local n = 0
            for line in util.slurp(f):gmatch("[^\n]*") do
                n = n + 1
                -- an escape: the backslash is not itself escaped (an even run before it)
                local at = 1
                while true do
                    local s = line:find(esc, at, true)
                    if not s then break end
                    local b = s - 1
                    while b > 0 and line:sub(b, b) == "\\" do b = b - 1 end
                    if (s - 1 - b) % 2 == 0 then bad[#bad + 1] = f .. ":" .. n break end
                    at = s + 1
                end
            end
        end
        assert.same({}, bad)
    end)

    it("has no provider module requiring the registry", function()
        for m, list in pairs(deps) do
            if starts(m, "jsoncontract.providers.") then
                for _, d in ipairs(list) do assert.not_equal("jsoncontract.providers", d, m) end
            end
        end
    end)
end)
