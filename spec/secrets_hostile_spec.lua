-- The key cannot leave through any decoding: bin/jsoncontract triage (with --record-text)
-- against a hostile provider (lua/jsoncontract/standin/faults.lua, /keyecho) that echoes the
-- API key in every spelling it can: plain, \u escapes, mixed, escapes inside the envelope,
-- escapes of escapes, percent-encoded, as an object key, as an enum value, in a refusal, a
-- 401 message, a redirect's Location, a header and a 500 body. Then every output file,
-- stdout and stderr are searched for the key in every decoded form.
local core = require "jsoncontract.core"
local util = require "support.util"

local LUA = util.LUA
local KEY = "sk-HOSTILE-echo-0123456789abcdefXYZ"

-- Every text a layered decoding of `s` can give (JSON \u and short escapes, percent,
-- JSON Pointer), up to three layers deep, by a decoder of the spec's own.
local DECODERS = {
    function(s)
        return (s:gsub("\\u(%x%x%x%x)", function(h)
            local n = tonumber(h, 16)
            return n < 128 and string.char(n) or nil
        end))
    end,
    function(s) return (s:gsub("\\([\\/\"])", "%1")) end,
    function(s) return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end,
    function(s) return (s:gsub("~1", "/"):gsub("~0", "~")) end,
}
local function leaks(s)
    local seen, todo = { [s] = true }, { { s, 0 } }
    while #todo > 0 do
        local item = table.remove(todo)
        local t, depth = item[1], item[2]
        if t:find(KEY, 1, true) then return true end
        if depth < 3 then
            for _, d in ipairs(DECODERS) do
                local n = d(t)
                if not seen[n] then
                    seen[n] = true
                    todo[#todo + 1] = { n, depth + 1 }
                end
            end
        end
    end
    return false
end

describe("the API key against a hostile provider", function()
    local pipe, port, dir

    setup(function()
        pipe, port = util.start_fault_server(120)
        dir = os.tmpname()
        os.remove(dir)
    end)

    teardown(function()
        if port then util.stop_fault_server(pipe, port) end
        if dir then os.execute("rm -rf '" .. dir .. "'") end
    end)

    it("the spec's decoder sees the key in each spelling the server uses", function()
        assert.is_true(leaks("\\u0073\\u006B-HOSTILE-echo-0123456789abcdefXYZ"))
        assert.is_true(leaks("%5Cu0073k-HOSTILE-echo-0123456789abcdefXYZ"))
        assert.is_false(leaks("[redacted]"))
    end)

    it("reaches no output file, stdout or stderr in any decoded form", function()
        local out, code = util.sh(("env -u ANTHROPIC_API_KEY OPENAI_API_KEY=%s " ..
            "OPENAI_BASE_URL=http://127.0.0.1:%d/keyecho/triage OPENAI_MODEL=echo-model %s bin/jsoncontract " ..
            "triage --input examples/mailbox.jsonl --out %s --record-text --parallel 4")
            :format(KEY, port, LUA, dir))
        assert.equal(0, code, out)
        -- the server really echoed: every form was served at least once
        local res = assert(core.http_request { url = "http://127.0.0.1:" .. port .. "/hits/triage",
            timeout_ms = 5000 })
        assert.truthy(core.decode(res.body).hits >= 13, res.body)
        assert.is_false(leaks(out), out)
        local files = util.lines("find '" .. dir .. "' -type f")
        assert.truthy(#files >= 4)
        for _, path in ipairs(files) do
            assert.is_false(leaks(util.slurp(path)), path)
        end
        -- and what was redacted says so
        local all = util.slurp(dir .. "/accepted.jsonl") .. util.slurp(dir .. "/review.jsonl")
        assert.truthy(all:find("[redacted]", 1, true))
    end)

    it("names a redirect's target without its credentials, and says a Retry-After was over the cap", function()
        local review = util.slurp(dir .. "/review.jsonl")
        local saw_redirect, saw_cap = false, false
        for line in review:gmatch("[^\n]+") do
            local r = assert(core.decode(line))
            if r.reason.kind == "redirect" then
                saw_redirect = true
                assert.truthy(r.reason.message:find("redirect to http://[redacted]@127.0.0.1:" .. port
                    .. "/steal?api_key=[redacted]&note=[redacted] (not followed)", 1, true), r.reason.message)
            elseif r.reason.kind == "rate_limited" then
                saw_cap = true
                assert.truthy(r.reason.message:find("Retry-After asks for 86400 s, over the cap of 30 s", 1, true),
                    r.reason.message)
            end
        end
        assert.is_true(saw_redirect, "a redirect in review")
        assert.is_true(saw_cap, "a rate limit in review")
    end)
end)
