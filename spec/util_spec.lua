-- jsoncontract.util: the small helpers every room may use.
local util = require "jsoncontract.util"

describe("jsoncontract.util", function()
    it("memo computes once per key, keeps false, does not keep nil, and starts afresh past its limit", function()
        local calls = {}
        local f = util.memo(2, function(k)
            calls[k] = (calls[k] or 0) + 1
            if k == "none" then return nil end
            return k ~= "no" and k .. "!" or false
        end)
        assert.equal("a!", f("a"))
        assert.equal("a!", f("a"))
        assert.equal(1, calls.a)
        assert.is_false(f("no"))
        assert.is_false(f("no"))
        assert.equal(1, calls.no)
        assert.is_nil(f("none"))
        assert.is_nil(f("none"))
        assert.equal(2, calls.none)
        -- two kept ("a", "no") and nil answers not counted: the next new key starts afresh
        assert.equal("b!", f("b"))
        assert.equal("a!", f("a"))
        assert.equal(2, calls.a)
    end)

    it("child gives t[k], made an empty table the first time", function()
        local t = {}
        local c = util.child(t, "a")
        assert.same({}, c)
        assert.equal(c, t.a)
        assert.equal(c, util.child(t, "a"))
        t.b = false
        assert.is_false(util.child(t, "b")) -- (only an absent key makes a table)
    end)

    it("shell_quote makes one POSIX shell word of any string", function()
        assert.equal("'it'\\''s'", util.shell_quote("it's"))
        local p = assert(io.popen("printf %s " .. util.shell_quote("a b'c$HOME\"")))
        assert.equal("a b'c$HOME\"", p:read("*a"))
        p:close()
    end)

    it("constant_time_equal compares strings only", function()
        assert.is_true(util.constant_time_equal("abc", "abc"))
        assert.is_false(util.constant_time_equal("abc", "abd"))
        assert.is_false(util.constant_time_equal("abc", "ab"))
        assert.is_false(util.constant_time_equal(1, 1))
    end)
    describe("url_host", function()
        it("names one server however a URL spells it: case, userinfo, the root's dot, the scheme's own port", function()
            for _, url in ipairs { "https://api.openai.com", "https://API.OpenAI.com/v1", "https://api.openai.com./v1",
                "https://x@api.openai.com", "https://user:pw@api.openai.com.:443/v1?x=1#f", "HTTPS://api.openai.com:443" } do
                assert.equal("api.openai.com", util.url_host(url), url)
            end
            assert.equal("127.0.0.1:8080", util.url_host("http://127.0.0.1:8080/v1"))
            assert.equal("127.0.0.1", util.url_host("http://127.0.0.1:80/"))
            assert.equal("api.openai.com:8443", util.url_host("https://api.openai.com:8443"))
            assert.equal("[::1]:8443", util.url_host("https://[::1]:8443/v1"))
            assert.equal("[::1]", util.url_host("http://[::1]/"))
            -- look-alikes stay other servers
            assert.equal("api.openai.com.example.com", util.url_host("https://api.openai.com.example.com/v1"))
            assert.equal("example.com", util.url_host("https://api.openai.com@example.com/v1"))
        end)
        it("gives nil for what is not an http(s) URL with a host", function()
            for _, v in ipairs { "api.openai.com", "ftp://api.openai.com", "https://", "https:///v1", "/v1", 42 } do
                assert.is_nil(util.url_host(v), tostring(v))
            end
            assert.is_nil(util.url_host(nil))
        end)
    end)
end)
