-- jsoncontract.nginx.contracts outside nginx: the per-worker contract cache, its key, and what
-- a changed file does (a new version replaces, the same key keeps the compiled one, a broken
-- edit keeps serving). The nginx side runs in spec/nginx_gateway_spec.lua.
local jc = require "jsoncontract"
local contracts = require "jsoncontract.nginx.contracts"
local util = require "support.util"

local SCHEMA = { type = "object", properties = { a = { type = "integer" } }, required = { "a" } }

local function def(version, schema)
    return { name = "t", version = version, schema = schema or SCHEMA, instructions = "Fill in a." }
end

local function write(path, text)
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
end

local function file_text(version, max)
    return string.format([[return { name = "t", version = %q, instructions = "Fill in a.",
    schema = { type = "object", properties = { a = { type = "integer", maximum = %d } }, required = { "a" } } }
]], version, max or 10)
end

describe("jsoncontract.nginx.contracts", function()
    describe("key()", function()
        it("is name@version#schema_hash", function()
            local c = jc.contract(def("1.0.0"))
            assert.equal("t@1.0.0#" .. c.schema_hash, contracts.key(c))
        end)
    end)

    describe("get()", function()
        it("compiles a definition table once and returns the same contract after", function()
            local cache = contracts.new({ t = def("1.0.0") })
            local c1, k1 = cache:get("t")
            local c2, k2 = cache:get("t")
            assert.equal(c1, c2)
            assert.equal(k1, k2)
            assert.equal(1, cache.loads)
            assert.truthy(c1:check('{"a":1}'))
        end)

        it("takes a compiled contract and a module with a contract field", function()
            local c = jc.contract(def("2.0.0"))
            local cache = contracts.new({ x = c, y = { contract = c } })
            assert.equal(c, (cache:get("x")))
            assert.equal(c, (cache:get("y")))
        end)

        it("returns nil and a reason for an unknown name, a missing file, a file without a contract", function()
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            write(path, "return 42\n")
            local cache = contracts.new({ missing = path .. ".none", bad = path })
            local c, err = cache:get("nope")
            assert.same({ nil, "no contract named 'nope'" }, { c, err })
            c, err = cache:get("missing")
            assert.is_nil(c)
            assert.truthy(err:find("No such file", 1, true), err)
            c, err = cache:get("bad")
            assert.is_nil(c)
            assert.truthy(err:find("gave no contract", 1, true), err)
        end)

        it("loads a file again when its version changes, keeps the compiled one under the same key", function()
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            write(path, file_text("1.0.0"))
            local cache = contracts.new({ t = path }, { check_ms = 0.001 })
            local c1, k1 = cache:get("t")
            assert.equal("1.0.0", c1.version)
            -- same name, version and schema, other text: the compiled contract stays
            write(path, file_text("1.0.0") .. "-- a comment\n")
            util.sh("sleep 0.01")
            local c2 = cache:get("t")
            assert.equal(c1, c2)
            -- a version bump replaces it
            write(path, file_text("1.1.0", 5))
            util.sh("sleep 0.01")
            local c3, k3 = cache:get("t")
            assert.equal("1.1.0", c3.version)
            assert.are_not.equal(k1, k3)
            local v, err = c3:check('{"a":7}')
            assert.is_nil(v)
            assert.same({ "schema", "schema_mismatch" }, { err.category, err.kind })
            -- a broken edit keeps serving the last good contract
            write(path, "return {")
            util.sh("sleep 0.01")
            assert.equal(c3, (cache:get("t")))
        end)

        it("never looks at a file again with check_ms = 0", function()
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            write(path, file_text("1.0.0"))
            local cache = contracts.new({ t = path }, { check_ms = 0 })
            assert.equal("1.0.0", cache:get("t").version)
            write(path, file_text("2.0.0"))
            assert.equal("1.0.0", cache:get("t").version)
        end)
    end)

    describe("get() in a worker that cannot read the file", function()
        local saved = rawget(_G, "ngx")
        after_each(function() _G.ngx = saved end)

        it("keeps serving the compiled contract and logs one ERR per distinct error, naming file and user", function()
            local clock, logged = 0, {}
            _G.ngx = { ERR = 4, WARN = 5, now = function() return clock end,
                log = function(level, ...) logged[#logged + 1] = { level, table.concat({ ... }) } end }
            local dir = util.sh("mktemp -d"):match("^(%S+)")
            finally(function() util.sh("rm -rf '" .. dir .. "'") end)
            local path = dir .. "/t.lua"
            write(path, file_text("1.0.0"))
            local cache = contracts.new({ t = path }, { check_ms = 1 })
            local c1, k1 = cache:get("t")
            local function look()
                clock = clock + 1
                local c, k = cache:get("t")
                assert.same({ c1, k1 }, { c, k })
            end
            -- the path turns into something the worker cannot read (root reads any mode: a directory)
            os.remove(path)
            util.sh("mkdir '" .. path .. "'")
            look(); look(); look()
            assert.equal(1, #logged)
            assert.equal(4, logged[1][1])
            local msg = logged[1][2]
            assert.truthy(msg:find("cannot read contract file " .. path .. " as ", 1, true), msg)
            assert.truthy(msg:find(require("jsoncontract.nginx.evidence").whoami(), 1, true), msg)
            assert.truthy(msg:find("Is a directory", 1, true), msg)
            assert.truthy(msg:find("keeping " .. k1, 1, true), msg)
            -- another error is said once more
            util.sh("rmdir '" .. path .. "'")
            look(); look()
            assert.equal(2, #logged)
            assert.truthy(logged[2][2]:find("No such file", 1, true), logged[2][2])
            -- readable again: a version bump is taken up
            write(path, file_text("1.1.0"))
            clock = clock + 1
            assert.equal("1.1.0", cache:get("t").version)
            assert.equal(2, #logged)
        end)
    end)

    describe("misuse", function()
        it("raises on sources that are not a table, names that are not strings, a bad source", function()
            util.raises("sources must be a table", contracts.new, "x")
            util.raises("names must be strings", contracts.new, { [1] = "x" })
            util.raises("'t' must be a contract, a definition table or a file path", contracts.new, { t = 1 })
            util.raises("check_ms must be a number >= 0", contracts.new, {}, { check_ms = -1 })
        end)
    end)
end)
