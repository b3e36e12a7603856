-- jsoncontract.json: JSON Pointer tokens, the array/object test, the one UTF-8-safe clip.
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

describe("jsoncontract.json", function()
    describe("escape_token() / unescape_token() / join()", function()
        local CASES = {
            { "plain", "a", "a" }, { "tilde", "a~b", "a~0b" }, { "slash", "a/b", "a~1b" },
            { "tilde then 1", "~1", "~01" }, { "number", 0, "0" },
        }
        for _, c in ipairs(CASES) do
            it(c[1], function()
                assert.equal(c[3], json.escape_token(c[2]))
                assert.equal(tostring(c[2]), json.unescape_token(c[3]))
            end)
        end
        it("joins a pointer and a token", function()
            assert.equal("/a~1b/0", json.join(json.join("", "a/b"), 0))
        end)
    end)

    describe("at()", function()
        it("follows object keys and 0-based array indexes", function()
            local v = assert(core.decode('{"a/b":[10,{"~":true}]}'))
            assert.equal(10, json.at(v, "/a~1b/0"))
            assert.is_true(json.at(v, "/a~1b/1/~0"))
            assert.is_nil(json.at(v, "/missing/0"))
            assert.equal(v, json.at(v, ""))
        end)
    end)

    describe("is_array() / is_object()", function()
        it("tells arrays from objects as the encoder does", function()
            assert.is_true(json.is_array(json.new_array()))
            assert.is_true(json.is_array({ 1, 2 }))
            assert.is_false(json.is_array({}))
            assert.is_true(json.is_object({}))
            assert.is_true(json.is_object({ a = 1 }))
            assert.is_false(json.is_object({ 1 }))
            assert.is_false(json.is_object("x"))
        end)
    end)

    describe("clip()", function()
        it("keeps short text", function() assert.equal("abc", json.clip("abc", 3)) end)
        it("cuts long text and marks the cut", function() assert.equal("ab...", json.clip("abcd", 2)) end)
        it("never cuts inside a UTF-8 sequence", function()
            -- "a" then U+20AC (3 bytes): a cut at 2 or 3 bytes backs up to 1
            assert.equal("a...", json.clip("a\226\130\172b", 2))
            assert.equal("a...", json.clip("a\226\130\172b", 3))
            assert.equal("a\226\130\172...", json.clip("a\226\130\172b", 4))
        end)
    end)
    describe("deepcopy()", function()
        it("keeps array markers and an object's __order, shares no value", function()
            local inner = setmetatable({ b = 1, a = 2 }, { __order = { "b", "a" } })
            local v = { list = setmetatable({ inner }, core.array_mt) }
            local c = json.deepcopy(v)
            assert.equal(core.array_mt, getmetatable(c.list))
            assert.same({ "b", "a" }, getmetatable(c.list[1]).__order)
            assert.are_not.equal(inner, c.list[1])
            assert.equal('{"list":[{"b":1,"a":2}]}', core.encode(c))
        end)
    end)
end)
