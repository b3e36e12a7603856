-- jsoncontract.errors: one constructor, errs that behave like Lua values.
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local util = require "support.util"

describe("jsoncontract.errors", function()
    describe("new()", function()
        it("makes an err whose metatable carries the shared one, with extra fields", function()
            local err = errors.new("budget", "time_budget", "30 ms spent", { limit = 30 })
            assert.equal(core.error_mt, getmetatable(getmetatable(err)))
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

    describe("the shape ngx.say reads", function()
        -- lua-nginx-module's ngx.say/ngx.print walk a table raw (lua_next) and take only
        -- keys 1..n with string or number values; any other key is "non-array table found".
        local function raw_array(t)
            local n = 0
            for k, v in next, t do
                if type(k) ~= "number" or k < 1 or k % 1 ~= 0 then return nil, "key " .. tostring(k) end
                if type(v) ~= "string" and type(v) ~= "number" then return nil, "value " .. type(v) end
                n = math.max(n, k)
            end
            local parts = {}
            for i = 1, n do parts[i] = rawget(t, i) end
            return table.concat(parts)
        end
        local cases = {
            { "errors.new", function() return errors.new("budget", "time_budget", "30 ms spent", { limit = 30 }) end },
            { "a format err of decode", function() return select(2, core.decode("[1,")) end },
            { "a schema err of validate", function()
                return select(2, core.compile({ type = "object", required = { "a" } }):validate({}))
            end },
            { "core.error", function() return core.error { category = "x", kind = "y", message = "z" } end },
        }
        for _, case in ipairs(cases) do
            it("holds only its text as an array: " .. case[1], function()
                local err = case[2]()
                assert.is_true(errors.is(err))
                assert.equal(tostring(err), raw_array(err))
                assert.equal(err.category .. "/" .. err.kind .. ": " .. err.message, tostring(err))
            end)
        end
        it("stays an array after fields are assigned, and follows a new message", function()
            local err = errors.new("schema", "type", "/x must be integer")
            err.foo = 1
            err.pointer = "/x"
            assert.equal(1, err.foo)
            assert.is_nil(rawget(err, "foo"))
            assert.equal("schema/type: /x must be integer", raw_array(err))
            err.message = "/x must be a number"
            assert.equal("schema/type: /x must be a number", raw_array(err))
            assert.equal("schema/type: /x must be a number", tostring(err))
            err.kind = "minimum"
            assert.equal("schema/minimum: /x must be a number", tostring(err))
        end)
        it("reads its named fields, the errors list among them", function()
            local _, err = core.compile({ type = "object", properties = { n = { type = "integer" } } })
                :validate({ n = "1" })
            assert.equal("schema", err.category)
            assert.equal("schema_mismatch", err.kind)
            assert.equal(1, #err.errors)
            assert.equal("/n", err.errors[1].pointer)
            assert.equal("type", err.errors[1].keyword)
        end)
        it("gives its fields as a plain table (errors.fields, core.error_fields)", function()
            local err = errors.new("budget", "time_budget", "30 ms spent", { limit = 30 })
            local f = errors.fields(err)
            assert.same({ category = "budget", kind = "time_budget", message = "30 ms spent", limit = 30 }, f)
            assert.is_nil(getmetatable(f))
            assert.equal(f, core.error_fields(err))
            assert.is_nil(errors.fields({ category = "budget" }))
            assert.is_nil(core.error_fields("budget"))
        end)
        it("lists its fields with pairs where the Lua honours __pairs", function()
            local err = errors.new("budget", "time_budget", "30 ms spent")
            local seen = {}
            for k, v in pairs(err) do seen[k] = v end
            if jit or _VERSION == "Lua 5.1" then
                -- LuaJIT and 5.1 ignore __pairs: pairs sees the raw array; errors.fields is the way.
                assert.same({ "budget/time_budget: 30 ms spent" }, seen)
            else
                assert.same({ category = "budget", kind = "time_budget", message = "30 ms spent" }, seen)
            end
        end)
        it("is recognised by errors.is and nothing else is", function()
            assert.is_true(errors.is(errors.new("a", "b", "c")))
            assert.is_true(errors.is(select(2, core.decode("x"))))
            assert.is_false(errors.is({ "a/b: c" }))
            assert.is_false(errors.is(setmetatable({}, { __index = { category = "a" } })))
            assert.is_false(errors.is(getmetatable(errors.new("a", "b", "c"))))
            assert.is_false(errors.is(nil))
        end)
        it("makes a new err from an err's fields", function()
            local a = errors.new("schema", "type", "m", { pointer = "/x" })
            local b = errors.new("rules", "rule_failed", "n", a)
            assert.equal("/x", b.pointer)
            assert.equal("rules/rule_failed: n", tostring(b))
            assert.equal("schema", a.category)
        end)
    end)

    describe("an err in JSON", function()
        it("encodes as the object of its fields", function()
            local err = errors.new("schema", "schema_mismatch", "/n must be integer",
                { errors = { { pointer = "/n", keyword = "type", schema_pointer = "/properties/n/type",
                    message = "/n must be integer" } } })
            assert.same({ category = "schema", kind = "schema_mismatch", message = "/n must be integer",
                errors = { { pointer = "/n", keyword = "type", schema_pointer = "/properties/n/type",
                    message = "/n must be integer" } } }, core.decode(core.encode(err)))
            assert.equal('{"reason":{"category":"a","kind":"b","message":"c"}}',
                core.encode({ reason = errors.new("a", "b", "c") }))
        end)
        it("goes into an evidence record as its fields", function()
            local evidence = require "jsoncontract.evidence"
            local w = evidence.memory()
            local _, err = core.decode("[1,")
            assert(w:write({ attempt = 1, reason = err }))
            local rec = core.decode(w.lines[1])
            assert.equal("format", rec.reason.category)
            assert.equal("unexpected_end", rec.reason.kind)
            assert.equal(err.message, rec.reason.message)
            assert.equal(3, rec.reason.offset)
        end)
        it("keeps its shape when the key is redacted from it", function()
            local secrets = require "jsoncontract.secrets"
            local err = errors.new("transport", "client_error", "HTTP 401: key sk-test-abcdef echoed",
                { detail = "sk-test-abcdef" })
            local red = secrets.redact_value(err, "sk-test-abcdef")
            assert.is_true(errors.is(red))
            assert.equal("transport/client_error: HTTP 401: key [redacted] echoed", tostring(red))
            assert.equal("[redacted]", red.detail)
            assert.equal("sk-test-abcdef", err.detail)
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
