-- README.md's Lua example runs as written (against the stand-in model) and prints what
-- its comments say.
local util = require "support.util"

local LUA = util.LUA
local CPATH = os.getenv("JC_TEST_CPATH") or "build/lua5.4/?.so"

describe("README.md", function()
    it("has a Lua example that runs and prints what its comments say", function()
        local f = assert(io.open("README.md", "rb"))
        local readme = f:read("*a")
        f:close()
        local code = assert(readme:match("## A contract in Lua.-```lua\n(.-)```"), "no Lua example")
        -- same interpreter and build as this run (the example names build/lua5.4)
        code = code:gsub('"build/lua5%.4/%?%.so;"', '"' .. CPATH .. ';"')
        local script = os.tmpname()
        f = assert(io.open(script, "wb"))
        f:write(code)
        f:close()
        local server, port = util.start_standin()
        finally(function()
            util.stop_standin(server)
            os.remove(script)
        end)
        local p = io.popen(("OPENAI_API_KEY=x OPENAI_MODEL=standin OPENAI_BASE_URL=http://127.0.0.1:%s %s %s 2>&1")
            :format(port, LUA, script))
        local out = p:read("*a")
        p:close()
        assert.truthy(out:find('schema/schema_mismatch: /intent "Lieferung" is not one of', 1, true), out)
        assert.truthy(out:find("/urgent\ttype\t/properties/urgent/type\t/urgent is string, expected boolean", 1, true), out)
        assert.truthy(out:find('ticket\t{"intent":"delivery","order_id":"1042"', 1, true), out)
    end)
end)
