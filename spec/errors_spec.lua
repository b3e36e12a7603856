-- jsoncontract.errors: one constructor, errs that behave like Lua values (issue 9 §5).
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local util = require "support.util"

describe("jsoncontract.errors", function()
    describe("new()", function()
        it("makes an err with the shared metatable and extra fields", function()
            local err = errors.new("budget", "time_budget", "30 ms spent", { limit = 30 })
            assert.equal(core.error_mt, getmetatable(err))
            assert.equal("budget", err.category)
            assert.equal("time_budget", err.kind)
            assert.equal(30, err.limit)
            assert.is_true(errors.is(err))
            assert.is_false(errors.is({ category = "budget" }))
        end)
    end)

    describe("an err as a Lua value", function()
        local err = errors.new("schema", "type", "/x must be integer")
        it("renders with tostring as category/kind: message", function()
            assert.equal("schema/type: /x must be integer", tostring(err))
        end)
        it("concatenates on either side of ..", function()
            assert.equal("failed: schema/type: /x must be integer", "failed: " .. err)
            assert.equal("schema/type: /x must be integer\n", err .. "\n")
            assert.equal("n=1 schema/type: /x must be integer", "n=" .. 1 .. " " .. err)
        end)
        it("concatenates errs made by the C core", function()
            local _, derr = core.decode("[1,")
            assert.equal("format/" .. derr.kind .. ": " .. derr.message, "" .. derr)
        end)
        it("concatenates errs where only the C core is loaded (no jsoncontract.errors)", function()
            local code = 'package.cpath = ' .. string.format("%q", package.cpath) .. ' '
                .. 'local core = require "jsoncontract.core" '
                .. 'local _, e = core.decode("[1,") local r = core.stream_new() r:feed("{") '
                .. 'local _, e2 = r:finish() '
                .. 'io.write("failed: " .. e, "|", e2 .. "!", "|", tostring(package.loaded["jsoncontract.errors"]))'
            local out, status = util.sh(util.LUA .. " -e '" .. code:gsub("'", "'\\''") .. "'")
            assert.equal(0, status, out)
            assert.matches("^failed: format/unexpected_end: [^|]+|format/unexpected_end: [^|]+!|nil$", out)
        end)
        it("concatenates two errs", function()
            assert.equal(tostring(err) .. tostring(err), err .. err)
        end)
    end)

    describe("snippet()", function()
        it("replaces control characters, masks credentials, clips at a UTF-8 boundary", function()
            assert.equal("a b", errors.snippet("a\n\tb"))
            assert.equal("key sk-[redacted]", errors.snippet("key sk-abcdef123"))
            assert.equal("ab...", errors.snippet("ab\195\169", 3))
        end)
    end)
end)
