-- jsoncontract.secrets: the one redaction (the key in every spelling that decodes back to
-- it) and the text hygiene applied to whatever leaves a run.
local secrets = require "jsoncontract.secrets"
local core = require "jsoncontract.core"

local KEY = "sk-SENTINEL-0123/abcdef"

local function u(s, fmt) return (s:gsub(".", function(c) return (fmt or "\\u%04x"):format(c:byte()) end)) end
local function pct(s) return (s:gsub(".", function(c) return ("%%%02X"):format(c:byte()) end)) end
local function json_string(s) return core.encode(s):sub(2, -2) end

-- Every spelling: name, text.
local SPELLINGS = {
    { "plain", KEY },
    { "\\u escapes, lower-case hex", u(KEY) },
    { "\\u escapes, upper-case hex", u(KEY, "\\u%04X") },
    { "mixed plain and \\u", "s\\u006b-SENT" .. u("INEL") .. "-0123\\/abc" .. u("def") },
    { "every other character escaped", (KEY:gsub("(.)(.?)", function(a, b) return u(a) .. b end)) },
    { "\\u escapes inside a JSON string (escapes of escapes)", json_string(u(KEY)) },
    { "\\u escape of the backslash", (u(KEY):gsub("\\", "\\u005c")) },
    { "percent-encoded", pct(KEY) },
    { "percent-encoded, lower-case", pct(KEY):lower() },
    { "percent over \\u", pct(u(KEY)) },
    { "percent-encoded \\ before u", (u(KEY):gsub("\\", "%%5C")) },
    { "JSON Pointer escape of /", (KEY:gsub("/", "~1")) },
    { "\\/ short escape", (KEY:gsub("/", "\\/")) },
    { "HTML decimal character references", u(KEY, "&#%d;") },
    { "HTML hex character references, some without ';'", (KEY:gsub("(.)(.?)", function(a, b)
        return ("&#x%X;"):format(a:byte()) .. (b ~= "" and ("&#X%02x"):format(b:byte()) or "") end)) },
    { "HTML references in a JSON string", json_string(u(KEY, "&#%04d;")) },
}

describe("jsoncontract.secrets", function()
    describe("redact()", function()
        for _, case in ipairs(SPELLINGS) do
            it("finds the key spelled " .. case[1], function()
                local text = '{"summary":"before ' .. case[2] .. ' after","' .. case[2] .. '":1} ' .. case[2]
                local out = secrets.redact(text, KEY)
                assert.equal('{"summary":"before [redacted] after","[redacted]":1} [redacted]', out)
            end)
        end

        it("leaves text without the key byte for byte, escapes and all", function()
            local text = 'a \\u0073k- %73k ~1 \\\\ \\n %zz \\u12 ' .. KEY:sub(1, -2)
            assert.equal(text, secrets.redact(text, KEY))
        end)

        it("takes a list of secrets and ignores short or missing ones", function()
            assert.equal("[redacted] [redacted]", secrets.redact(KEY .. " other-key-1", { KEY, "other-key-1" }))
            assert.equal("abc", secrets.redact("abc", "abc"))
            assert.equal("x", secrets.redact("x", nil))
            assert.equal(42, secrets.redact(42, KEY))
        end)

        it("finds the key in base64 and base64url at each alignment, padded or not, and as Basic auth", function()
            local mime = require "mime"
            for _, pre in ipairs { "", "x", "xy", "user:", ":", "reviewer@example.com:" } do
                for _, post in ipairs { "", "z", "zz" } do
                    local std = mime.b64(pre .. KEY .. post)
                    for _, enc in ipairs { std, (std:gsub("=", "")), (std:gsub("%+", "-"):gsub("/", "_")),
                        (std:gsub("%+", "-"):gsub("/", "_"):gsub("=", "")) } do
                        local out = secrets.redact("Authorization: Basic " .. enc .. "\n", KEY)
                        -- what is left: the bytes of `pre` and `post` alone (and the character
                        -- they share with the key), never a run that only the key determines
                        local head, tail = out:match("^Authorization: Basic ([%w+/_-]*)%[redacted%]([%w+/_=-]*)\n$")
                        assert.truthy(head, out)
                        assert.is_true(#head <= math.ceil(#pre * 4 / 3), out)
                        assert.is_true(#tail:gsub("=", "") <= math.ceil(#post * 4 / 3), out)
                        if #post == 0 then assert.equal("", tail, out) end
                    end
                end
            end
            -- the encoder it uses is RFC 4648's
            assert.same({ "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "-_8", "+/8=" },
                { secrets.base64(""), secrets.base64("f"), secrets.base64("fo"), secrets.base64("foo"),
                  secrets.base64("foob"), secrets.base64("\251\255", true), secrets.base64("\251\255") })
        end)

        it("looks for no base64 of a key under 8 bytes (too few characters to be sure of)", function()
            local mime = require "mime"
            assert.equal("Basic " .. mime.b64("u:sk-1234"), secrets.redact("Basic " .. mime.b64("u:sk-1234"), "sk-1234"))
        end)

        it("finds the key split across two adjacent string literals", function()
            local a, b = KEY:sub(1, 5), KEY:sub(6)
            for _, text in ipairs {
                '"' .. a .. '" "' .. b .. '"', '["' .. a .. '","' .. b .. '"]', '"' .. a .. '" + "' .. b .. '"',
                "'" .. a .. "'+'" .. b .. "'", '"' .. a .. '",\n\t "' .. b .. '"',
                -- as a JSON string carries them
                json_string('"' .. a .. '" "' .. b .. '"'), '"' .. u(a) .. '" "' .. b .. '"',
                -- split after the first byte and before the last
                '"' .. KEY:sub(1, 1) .. '" "' .. KEY:sub(2) .. '"', '"' .. KEY:sub(1, -2) .. '" "' .. KEY:sub(-1) .. '"',
            } do
                local out = secrets.redact("x " .. text .. " y", KEY)
                assert.truthy(out:match('^x [%[\\"\']*%[redacted%][%]\\"\']* y$'), text .. " -> " .. out)
            end
        end)

        it("finds a key in a text whose only escapes are short ones (a model's JSON in an envelope)", function()
            -- no byte of this key is one a short escape spells: only plain spellings can hold it
            local key = "sk-SENTINEL-0123-abcdef"
            local mime = require "mime"
            for _, text in ipairs {
                '{"content":"{\\"a\\":\\"' .. key .. '\\"}\\n"}',
                '{"content":"[\\"' .. key:sub(1, 5) .. '\\", \\"' .. key:sub(6) .. '\\"]\\t"}',
                '{"content":"\\"' .. key:sub(1, 1) .. '\\" \\"' .. key:sub(2) .. '\\""}',
                '{"content":"\\"' .. mime.b64("u:" .. key) .. '\\""}',
            } do
                local out = secrets.redact(text, key)
                assert.truthy(out:find("[redacted]", 1, true), text .. " -> " .. out)
                assert.falsy(out:find(key:sub(4, 12), 1, true), text .. " -> " .. out)
            end
            -- and a key with such a byte is still found through it, as is its base64 with "\/"
            assert.equal('"[redacted]"', secrets.redact('"sk-ab\\/cdef"', "sk-ab/cdef"))
            local b64 = mime.b64("u:sk-??SENTINEL-0123-abcdef") -- (holds a "/")
            assert.truthy(b64:find("/", 1, true))
            local out = secrets.redact('{"c":"\\"Basic ' .. b64:gsub("/", "\\/") .. '\\""}', "sk-??SENTINEL-0123-abcdef")
            assert.falsy(out:find("NFTlRJTkVMLTAxMjMtYWJjZGVm", 1, true), out)
            local clean = '{"content":"{\\"a\\":\\"sk-SENTINEL\\"}"}'
            assert.equal(clean, secrets.redact(clean, key))
            -- a text shorter than the key cannot spell it; one as long can
            assert.equal(key:sub(2), secrets.redact(key:sub(2), key))
            assert.equal("[redacted]", secrets.redact(key, key))
            assert.equal("[redacted]", secrets.redact("abcd", "abcd"))
        end)

        it("does not join strings that are not adjacent literals (a key, a value, two separators)", function()
            local a, b = KEY:sub(1, 5), KEY:sub(6)
            for _, text in ipairs {
                '{"x":"' .. a .. '","y":"' .. b .. '"}', '"' .. a .. '", , "' .. b .. '"',
                '"' .. a .. "\" '" .. b .. "'", '"' .. a .. '" "x" "' .. b .. '"',
            } do
                assert.equal(text, secrets.redact(text, KEY))
            end
        end)
    end)

    describe("redact_value()", function()
        it("redacts keys and values at every depth and keeps metatables", function()
            local v = { summary = u(KEY), [KEY] = { core.decode('["' .. u(KEY) .. '"]') } }
            local out = secrets.redact_value(v, KEY)
            assert.equal("[redacted]", out.summary)
            assert.equal("[redacted]", out["[redacted]"][1][1])
            assert.equal(core.array_mt, getmetatable(out["[redacted]"][1]))
            assert.equal(u(KEY), v.summary) -- the original is left alone
        end)
        it("gives the value itself when no string in it spells the key (nothing copied)", function()
            local v = { summary = "fine", list = core.decode('["a", {"b": "c"}]') }
            assert.equal(v, secrets.redact_value(v, KEY))
            local err = require("jsoncontract.errors").new("schema", "type", "fine")
            assert.equal(err, secrets.redact_value(err, KEY))
            local dirty = { a = { b = { c = "x " .. KEY } }, clean = { "y" } }
            local out = secrets.redact_value(dirty, KEY)
            assert.not_equal(dirty, out)
            assert.equal("x [redacted]", out.a.b.c)
            assert.equal("y", out.clean[1])
        end)
        it("copies a cycle once", function()
            local v = { s = KEY }
            v.self = v
            local out = secrets.redact_value(v, KEY)
            assert.equal(out, out.self)
            assert.equal("[redacted]", out.s)
        end)
    end)

    describe("utf8()", function()
        local CASES = {
            { "Latin-1", "M\252ller", "M\239\191\189ller" },
            { "a lone continuation byte", "a\128b", "a\239\191\189b" },
            { "an overlong encoding", "\192\175", "\239\191\189\239\191\189" },
            { "a surrogate", "\237\160\128", "\239\191\189\239\191\189\239\191\189" },
            { "a cut sequence at the end", "ab\226\130", "ab\239\191\189\239\191\189" },
            { "valid text", "Olá € 😀", "Olá € 😀" },
        }
        for _, case in ipairs(CASES) do
            it("replaces " .. case[1], function()
                assert.equal(case[3], secrets.utf8(case[2]))
                assert.truthy(core.decode(core.encode(secrets.utf8(case[2]))))
            end)
        end
    end)

    describe("elide()", function()
        it("cuts the middle of a long text and says how long it was", function()
            local p = "/" .. string.rep("0/", 1000)
            local out = secrets.elide(p, 60)
            assert.equal(p:sub(1, 40) .. "\226\128\166(2,001 bytes)\226\128\166" .. p:sub(-20), out)
            assert.equal("short", secrets.elide("short", 60))
        end)

        it("never cuts a UTF-8 character", function()
            local out = secrets.elide(string.rep("€", 100), 40)
            assert.truthy(core.decode(core.encode(out)))
        end)
    end)

    describe("scrub_url()", function()
        it("removes user, password and credential parameters", function()
            assert.equal("https://[redacted]@x.example/v1?key=[redacted]&model=m&access_token=[redacted]",
                secrets.scrub_url("https://u:pw@x.example/v1?key=k1&model=m&access_token=t", nil))
            assert.equal("http://h/steal?q=[redacted]", secrets.scrub_url("http://h/steal?q=" .. pct(KEY), KEY))
        end)
    end)

    describe("describe()", function()
        it("shows a raised table's fields, or its __tostring", function()
            assert.equal('{code = 42, message = "db down"}', secrets.describe({ code = 42, message = "db down" }))
            assert.equal("E1", secrets.describe(setmetatable({}, { __tostring = function() return "E1" end })))
            assert.equal("a table whose __tostring raised",
                secrets.describe(setmetatable({}, { __tostring = function() error("x") end })))
            assert.equal("an empty table", secrets.describe({}))
            assert.equal("nil", secrets.describe(nil))
        end)
    end)
end)

describe("jsoncontract.evidence with secrets", function()
    local evidence = require "jsoncontract.evidence"

    it("redacts every spelling of a registered key from each line", function()
        local log = evidence.memory { record_text = true }
        log:add_secret(KEY)
        log:write { item_id = "m-1", text = u(KEY), errors = { { pointer = "/" .. pct(KEY) } } }
        assert.falsy(log.lines[1]:find("SENTINEL", 1, true), log.lines[1])
        assert.truthy(log.lines[1]:find("[redacted]", 1, true))
    end)

    it("writes a record no JSON can hold as a trace of what failed, and goes on", function()
        local log = evidence.memory()
        assert.is_true(log:write { item_id = "m-2", attempt = 1, gate = "rules", usage = { n = 0 / 0 } })
        local rec = assert(core.decode(log.lines[1]))
        assert.equal("m-2", rec.item_id)
        assert.truthy(rec.evidence_error:find("cannot encode NaN at /usage/n", 1, true), rec.evidence_error)
    end)
end)
