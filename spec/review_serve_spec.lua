-- jsoncontract.review.serve before nginx starts: a source checkout without the LuaJIT build of
-- the core is named with the command that makes it (nginx would only print a traceback).
local serve = require "jsoncontract.review.serve"
local util = require "support.util"

describe("jsoncontract.review.serve.missing_core", function()
    local root
    before_each(function()
        root = os.tmpname()
        os.remove(root)
        util.sh("mkdir -p '" .. root .. "/csrc' && touch '" .. root .. "/csrc/core.c'")
    end)
    after_each(function() util.sh("rm -rf '" .. root .. "'") end)

    it("asks for `make LUA=luajit` in a checkout that has only the Lua 5.4 build", function()
        local why = serve.missing_core(root, {})
        assert.matches("make LUA=luajit", why, 1, true)
        assert.matches(root, why, 1, true)
    end)

    it("is satisfied by the LuaJIT build, by --cpath, or by an installed tree", function()
        assert.is_nil(serve.missing_core(root, { cpath = "/elsewhere/?.so" }))
        util.sh("mkdir -p '" .. root .. "/build/luajit/jsoncontract' && touch '" .. root
            .. "/build/luajit/jsoncontract/core.so'")
        assert.is_nil(serve.missing_core(root, {}))
    end)

    it("finds an installed tree's LuaJIT core, and says what to install when there is none", function()
        -- a tree as luarocks --tree makes it: the Lua files under share/lua/5.4, the cores under lib/lua/*
        local tree = root .. "/tree"
        util.sh("rm -rf '" .. root .. "/csrc' '" .. root .. "/build' && mkdir -p '" .. tree
            .. "/share/lua/5.4/jsoncontract/review' && touch '" .. tree .. "/share/lua/5.4/jsoncontract/review/desk.lua'")
        local saved = package.path
        finally(function() package.path = saved end)
        package.path = tree .. "/share/lua/5.4/?.lua;" .. saved
        local why = serve.missing_core(tree, {})
        local system_core = false -- (a LuaJIT core installed system-wide would be found)
        for _, d in ipairs { "/usr/local/lib/lua/5.1", "/usr/lib/x86_64-linux-gnu/lua/5.1", "/usr/lib/lua/5.1" } do
            if io.open(d .. "/jsoncontract/core.so", "rb") then system_core = true end
        end
        if rawget(_G, "jit") or _VERSION == "Lua 5.1" or system_core then
            assert.is_nil(why) -- the core this process runs on (or the system's) is one LuaJIT loads
        else
            assert.matches("install the rock for LuaJIT too", why, 1, true)
            assert.matches(tree .. "/lib/lua/5.1", why, 1, true)
        end
        util.sh("mkdir -p '" .. tree .. "/lib/lua/5.1/jsoncontract' && touch '" .. tree
            .. "/lib/lua/5.1/jsoncontract/core.so'")
        assert.is_nil(serve.missing_core(tree, {}))
    end)
end)
