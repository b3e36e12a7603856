-- The rockspec, the Makefile and the tree agree: every Lua module is mapped, the C
-- sources are the same list, and the version is written once (the rockspec's name).
local util = require "support.util"

local read, lines = util.slurp, util.lines

describe("packaging", function()
    local rockspec_path = lines("ls rockspecs/jsoncontract-*.rockspec")[1]
    local rockspec = read(rockspec_path)
    local makefile = read("Makefile")

    it("maps every Lua module in the rockspec, and nothing else", function()
        local mapped = {}
        for name, file in rockspec:gmatch('%["(jsoncontract[%w%._]*)"%] = "(lua/[^"]+)"') do
            mapped[file] = name
        end
        local files = lines("find lua -name '*.lua' | sort")
        assert.is_true(#files > 10)
        for _, f in ipairs(files) do
            local want = f:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/", "."):gsub("%.init$", "")
            assert.equal(want, mapped[f], f .. " is not mapped in " .. rockspec_path)
            mapped[f] = nil
        end
        assert.same({}, mapped)
    end)

    it("lists the same C sources as the Makefile", function()
        local srcs = {}
        for f in makefile:match("SRCS%s*:=%s*([^\n]+)"):gmatch("%S+") do srcs[#srcs + 1] = f end
        local rs = {}
        for f in rockspec:match("sources = (%b{})"):gmatch('"([^"]+)"') do rs[#rs + 1] = f end
        table.sort(srcs)
        table.sort(rs)
        assert.same(srcs, rs)
        for _, f in ipairs(lines("ls csrc/*.c")) do
            local found = false
            for _, s in ipairs(srcs) do found = found or s == f end
            assert.is_true(found, f .. " is not built")
        end
    end)

    it("documents every function the C module registers in README.md", function()
        local readme = read("README.md")
        local names = {}
        for _, f in ipairs(lines("ls csrc/*.c")) do
            local src = read(f)
            for block in src:gmatch("static const luaL_Reg [%w_]+%[%] = (%b{})") do
                for name in block:gmatch('{%s*"([%w_]+)"') do
                    if not name:match("^__") then names[#names + 1] = name end
                end
            end
            for name in src:gmatch('lua_setfield%(L, %-2, "([%w_]+)"%)') do
                if not name:match("^__")
                    and src:find("lua_pushcfunction%(L, [%w_]+%);%s*lua_setfield%(L, %-2, \"" .. name .. "\"%)") then
                    names[#names + 1] = name
                end
            end
        end
        assert.is_true(#names >= 8)
        for _, name in ipairs(names) do
            assert.truthy(readme:find(name, 1, true), name .. " is not in README.md")
        end
    end)

    it("reports the rockspec's version from the C module", function()
        local version = rockspec_path:match("jsoncontract%-(.-)%-%d+%.rockspec$")
        assert.equal(version, require("jsoncontract.core")._VERSION)
        assert.truthy(rockspec:find('JC_VERSION=\\"' .. version .. '\\"', 1, true))
    end)
end)
