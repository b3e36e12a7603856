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
        util.sh("rm -rf '" .. root .. "/csrc'")
        util.sh("rm -rf '" .. root .. "/build'")
        assert.is_nil(serve.missing_core(root, {}))
    end)
end)
