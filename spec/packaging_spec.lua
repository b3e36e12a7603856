-- The rockspec, the Makefile and the tree agree: every Lua module is mapped, the C
-- sources are the same list, and the version is written once (the rockspec's name).
local util = require "support.util"

local read, lines = util.slurp, util.lines

-- The release rockspec (a numbered version; beside it the scm one).
local function release_rockspec()
    for _, f in ipairs(lines("ls rockspecs/jsoncontract-*.rockspec")) do
        if f:match("jsoncontract%-%d[^-]*%-%d+%.rockspec$") then return f end
    end
    error("no release rockspec in rockspecs/")
end

describe("packaging", function()
    local rockspec_path = release_rockspec()
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

    it("has an scm rockspec that is the release one but for its version and source", function()
        local scm = read("rockspecs/jsoncontract-scm-1.rockspec")
        local function body(text)
            return (text:gsub('\nversion = "[^"]*"', ""):gsub("\n%-%-[^\n]*", ""):gsub("\nsource = %b{}", ""))
        end
        assert.equal(body(rockspec), body(scm))
        assert.truthy(scm:find('version = "scm-1"', 1, true))
        -- each source is something `luarocks build` can fetch: a tarball `make dist` writes, not a
        -- `git+file://.` (which LuaRocks clones from inside its temporary folder)
        for _, text in ipairs { rockspec, scm } do
            local url = text:match("source = {%s*url = \"([^\"]+)\"")
            assert.is_string(url)
            assert.falsy(url:find("git+file://", 1, true), url)
            assert.truthy(url:match("^jsoncontract%-[%w.]+%.tar%.gz$"), url)
            assert.truthy(makefile:find("-o " .. url:gsub("%-[%w.]+%.tar%.gz$", "-$(VERSION).tar.gz"), 1, true)
                or makefile:find("-o " .. url, 1, true), url .. " is not what make dist writes")
        end
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

    it("documents every function the C module registers in docs/api.md", function()
        local api = read("docs/api.md")
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
            -- as a word: "create" inside "created" documents nothing
            assert.truthy(api:find("%f[%w_]" .. name .. "%f[^%w_]"), name .. " is not in docs/api.md")
        end
    end)

    it("reports the rockspec's version from the C module", function()
        local version = rockspec_path:match("jsoncontract%-(.-)%-%d+%.rockspec$")
        assert.equal(version, require("jsoncontract.core")._VERSION)
        assert.truthy(rockspec:find('JC_VERSION=\\"' .. version .. '\\"', 1, true))
    end)
end)

-- The rock as a new user gets it: `luarocks make` into an empty tree, `luarocks pack` of what was
-- installed, `luarocks install` of that rock into a second empty tree, and the installed command
-- run from a folder outside the repository. No network: the dependencies are the
-- Debian Lua packages on the default paths (--deps-mode=none).
describe("the rock", function()
    local sh = util.sh
    local LUA = util.LUA
    local CPATH = os.getenv("JC_TEST_CPATH") or ""
    local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
    local rockspec_path = release_rockspec()

    -- make, pack, install, run: for interpreter `lua` (a LuaRocks tree of Lua `version`).
    local function install_and_run(lua)
        -- LuaJIT: LuaRocks' 5.1 tree with LuaJIT's headers, run by luajit.
        local version = lua == "luajit" and "5.1" or lua:match("^lua(%d%.%d)$")
        assert.is_string(version, "unknown interpreter " .. lua)
        local extra = lua == "luajit" and " LUA_INCDIR=/usr/include/luajit-2.1" or ""
        local base = os.tmpname()
        os.remove(base)
        local tree1, tree2, away = base .. "-make", base .. "-install", base .. "-away"
        finally(function() sh("rm -rf " .. q(tree1) .. " " .. q(tree2) .. " " .. q(away)) end)
        local lr = "luarocks --lua-version " .. version .. " "

        local out, code = sh(lr .. "--tree " .. q(tree1) .. " make --deps-mode=none " .. rockspec_path .. extra)
        assert.equal(0, code, out)
        out, code = sh("mkdir -p " .. q(away) .. " && cd " .. q(away) .. " && " .. lr .. "--tree " .. q(tree1)
            .. " pack jsoncontract")
        assert.equal(0, code, out)
        local rock = assert(lines("ls " .. q(away) .. "/jsoncontract-*.rock")[1], out)
        out, code = sh(lr .. "--tree " .. q(tree2) .. " install --deps-mode=none " .. q(rock))
        assert.equal(0, code, out)

        -- The installed command, run from a folder that is not the repository, with the tree's
        -- paths as `luarocks path` gives them.
        local script = lines("ls " .. q(tree2) .. "/lib/luarocks/rocks-" .. version .. "/jsoncontract/*/bin/jsoncontract")[1]
        assert.is_string(script, "the rock installed no bin/jsoncontract")
        local run = "cd " .. q(away) .. " && eval \"$(" .. lr .. "--tree " .. q(tree2) .. " path)\" && "
            .. "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u LD_PRELOAD " .. lua .. " " .. q(script) .. " "
        out, code = sh(run .. "--version")
        assert.equal(0, code, out)
        assert.equal("jsoncontract " .. require("jsoncontract.core")._VERSION, out:match("^[^\n]*"))
        out, code = sh(run .. "selftest")
        assert.equal(0, code, out)
        assert.truthy(out:find("checks: %d+ ok, 0 failed"), out)
        out, code = sh(run .. "triage --limit 2 --delay-ms 0 --out " .. q(away .. "/triage"))
        assert.equal(0, code, out)
        assert.truthy(out:find("2 messages: ", 1, true), out)
        -- the examples are the rock's data, beside its bin/
        local examples = script:match("^(.*)/bin/jsoncontract$") .. "/examples"
        out, code = sh(run .. "check --job=" .. q(examples .. "/blog_category.lua") .. " < /dev/null")
        assert.equal(1, code, out)
        -- and without `luarocks path`: the script finds its tree's modules itself
        local v_ = (version:gsub("%.", "_"))
        out, code = sh("cd " .. q(away) .. " && env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_" .. v_ .. " -u LUA_CPATH_"
            .. v_ .. " -u LD_PRELOAD " .. lua .. " " .. q(script) .. " check < /dev/null")
        assert.equal(1, code, out)
        assert.truthy(out:find('"verdict": "rejected"', 1, true), out)
    end

    local function skip_reason()
        if not sh("command -v luarocks"):match("%S") then return "packaging skipped: luarocks not found" end
        if CPATH:find("asan", 1, true) then return "packaging skipped under ASan: the lua5.4 run installs the rock" end
        return nil
    end

    it("installs with luarocks make and from a packed rock, and its command works from any folder", function()
        local why = skip_reason()
        if why then
            pending(why)
            return
        end
        install_and_run(LUA)
    end)

    it("builds with luarocks build from its source tarball (the checkout, as make dist writes it)", function()
        local why = skip_reason() or (LUA ~= "lua5.4" and "luarocks build skipped: checked in the lua5.4 run")
        if why then
            pending(why)
            return
        end
        local version = rockspec_path:match("jsoncontract%-(.-)%-%d+%.rockspec$")
        local base = os.tmpname()
        os.remove(base)
        local away, tree = base .. "-dist", base .. "-tree"
        finally(function() sh("rm -rf " .. q(away) .. " " .. q(tree)) end)
        -- the files of the checkout as they are now (make dist archives the last commit)
        local prefix = "jsoncontract-" .. version
        local out, code = sh("mkdir -p " .. q(away) .. " && git ls-files -co --exclude-standard | while read -r f; do "
            .. "[ -f \"$f\" ] && printf '%s\\n' \"$f\"; done > " .. q(away .. "/files") .. " && tar -czf "
            .. q(away .. "/" .. prefix .. ".tar.gz") .. " --transform " .. q("s,^," .. prefix .. "/,")
            .. " -T " .. q(away .. "/files"))
        assert.equal(0, code, out)
        out, code = sh("cd " .. q(away) .. " && luarocks --lua-version 5.4 --tree " .. q(tree)
            .. " build --deps-mode=none " .. q(os.getenv("PWD") .. "/" .. rockspec_path))
        assert.equal(0, code, out)
        assert.truthy(util.read(tree .. "/share/lua/5.4/jsoncontract/nginx/init.lua"), out)
        assert.is_string(lines("ls " .. q(tree) .. "/lib/lua/5.4/jsoncontract/core.so")[1], out)
    end)

    it("builds one 5.1 module: the core built against LuaJIT's headers loads in PUC lua5.1 too", function()
        -- (a LuaRocks 5.1 tree given LuaJIT's headers writes a lua5.1 wrapper for the command)
        if not CPATH:find("luajit", 1, true) then
            pending("LuaJIT core in lua5.1 skipped: checked in the luajit run")
            return
        end
        if not sh("command -v lua5.1"):match("%S") then
            pending("LuaJIT core in lua5.1 skipped: lua5.1 not found")
            return
        end
        local out, code = sh("lua5.1 -e " .. q("package.cpath = " .. string.format("%q", CPATH)
            .. " local core = require 'jsoncontract.core' io.write(core.decode('[1,2]')[2], ' ', "
            .. "core.sha256('x'):sub(1, 8))"))
        assert.equal(0, code, out)
        assert.equal("2 2d711642", out)
    end)

    it("works on PUC Lua 5.1 too (the compat shim), checked from the lua5.4 run", function()
        local why = skip_reason()
            or (LUA ~= "lua5.4" and "Lua 5.1 rock skipped: checked in the lua5.4 run")
            or (not sh("command -v lua5.1"):match("%S") and "Lua 5.1 rock skipped: lua5.1 not found")
        if why then
            pending(why)
            return
        end
        install_and_run("lua5.1")
    end)
end)
