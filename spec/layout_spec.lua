-- The house's rooms: tools/layout.lua is the map (which files form each room, which rooms each may
-- require); every `require` in lua/ keeps to it, every file of lua/ is in a room, docs/design.md
-- shows it as generated, no require cycle among the Lua modules and no include circle in csrc/.
local util = require "support.util"
local check = require "support.layout_check"
local layout = dofile("tools/layout.lua")

local function exists(path)
    local f = io.open(path, "r")
    if f then f:close() end
    return f ~= nil
end

-- every jsoncontract require of every file of lua/: {file=, line=, name=}
local function lua_edges()
    local edges, files = {}, util.lines("find lua -name '*.lua' | LC_ALL=C sort")
    for _, f in ipairs(files) do
        for _, r in ipairs(check.requires(util.slurp(f))) do
            edges[#edges + 1] = { file = f, line = r.line, name = r.name }
        end
    end
    return edges, files
end

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

    it("keeps every require in lua/ (top level and inside functions) to what tools/layout.lua allows", function()
        local edges, files = lua_edges()
        assert.is_true(#files > 50 and #edges > 200, "too few files or requires read: " .. #files .. ", " .. #edges)
        assert.same({}, check.unroomed(layout, files))
        assert.same({}, check.check(layout, edges, exists))
    end)

    it("reports a forbidden edge with file, line and edge, a file in no room and an unknown module", function()
        local bad = check.check(layout, {
            { file = "lua/jsoncontract/contract/rules.lua", line = 7, name = "jsoncontract.transport.curl" },
            { file = "lua/jsoncontract/jobs/runner.lua", line = 9, name = "jsoncontract.cli.job_commands" },
            { file = "lua/jsoncontract/jobs/runner.lua", line = 10, name = "jsoncontract.standin.server" },
            { file = "lua/jsoncontract/review/desk.lua", line = 3, name = "jsoncontract.providers." },
            { file = "lua/jsoncontract/attic.lua", line = 1, name = "jsoncontract.json" },
            { file = "lua/jsoncontract/run/init.lua", line = 2, name = "jsoncontract.nowhere" },
            -- allowed: the same room, a room the map lists, a single module the map lists
            { file = "lua/jsoncontract/run/init.lua", line = 3, name = "jsoncontract.run.policy" },
            { file = "lua/jsoncontract/run/init.lua", line = 4, name = "jsoncontract.providers" },
            { file = "lua/jsoncontract/run/init.lua", line = 5, name = "jsoncontract.transport.default" },
            { file = "lua/jsoncontract/nginx/init.lua", line = 6, name = "jsoncontract.core" },
        }, exists)
        assert.same({
            "lua/jsoncontract/attic.lua: in no room of tools/layout.lua",
            "lua/jsoncontract/contract/rules.lua:7: room contract requires jsoncontract.transport.curl (room "
                .. "transport), which tools/layout.lua does not allow",
            "lua/jsoncontract/jobs/runner.lua:10: room jobs requires jsoncontract.standin.server (room standin), "
                .. "which tools/layout.lua does not allow",
            "lua/jsoncontract/jobs/runner.lua:9: room jobs requires jsoncontract.cli.job_commands (room cli), "
                .. "which tools/layout.lua does not allow",
            "lua/jsoncontract/review/desk.lua:3: room review requires jsoncontract.providers. (room providers), "
                .. "which tools/layout.lua does not allow",
            "lua/jsoncontract/run/init.lua:2: requires jsoncontract.nowhere, which is no module of lua/ and no room's",
        }, bad)
    end)

    it("reads require in each spelling, inside functions too, and not in comments", function()
        local got = check.requires(table.concat({
            'local a = require "jsoncontract.json"',
            "local function f() return require('jsoncontract.errors').new end",
            'local p = require("jsoncontract.providers." .. name) -- require "jsoncontract.run" here is a comment',
            '-- require("jsoncontract.cli")',
            'local s = "-- not a comment" local t = require ( "jsoncontract.secrets" )',
            'local lfs = require "lfs"',
        }, "\n"))
        local flat = {}
        for _, r in ipairs(got) do flat[#flat + 1] = r.line .. " " .. r.name end
        assert.same({ "1 jsoncontract.json", "2 jsoncontract.errors", "3 jsoncontract.providers.",
            "5 jsoncontract.secrets" }, flat)
    end)

    it("puts jobs/ above cli/ and the stand-in's server: the batch layer requires neither", function()
        for _, e in ipairs((lua_edges())) do
            if e.file:match("^lua/jsoncontract/jobs/") then
                assert.falsy(e.name:match("^jsoncontract%.cli"), e.file .. ":" .. e.line .. " requires " .. e.name)
                assert.not_equal("jsoncontract.standin.server", e.name, e.file .. ":" .. e.line)
            end
        end
    end)

    it("has no include circle among csrc/ files", function()
        local graph = {}
        for _, f in ipairs(util.lines("ls csrc/*.c csrc/*.h | LC_ALL=C sort")) do
            local name = f:match("[^/]+$")
            graph[name] = check.includes(util.slurp(f))
        end
        assert.is_true(#(graph["parse.c"] or {}) > 0, "no include read from csrc/parse.c")
        assert.same({}, check.cycles(graph))
        -- and a circle is found when there is one
        assert.same({ "a.h -> b.h -> a.h" }, check.cycles({ ["a.h"] = { "b.h" }, ["b.h"] = { "a.h", "c.h" },
            ["c.c"] = { "a.h" } }))
        assert.same({ "x.h", "y.h" }, check.includes('#include <stdio.h>\n#include "x.h"\n  #  include "y.h"\n'))
    end)

    it("is shown in docs/design.md as tools/layout.lua prints it", function()
        local doc = util.slurp("docs/design.md")
        local shown = check.section(doc)
        assert.is_string(shown, "docs/design.md has no <!-- layout:begin --> ... <!-- layout:end --> section")
        assert.equal(layout.markdown(), shown, "docs/design.md's Layout map differs from tools/layout.lua: "
            .. "regenerate it with `lua tools/layout.lua --write docs/design.md`")
        for _, r in ipairs(layout.rooms) do
            assert.truthy(shown:find("| **" .. r.name .. "**", 1, true), r.name)
        end
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
