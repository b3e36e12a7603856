-- core.decode: the format gate (strict RFC 8259).
local core = require "jsoncontract.core"
local util = require "support.util"

local HAVE_INTEGER = math.type ~= nil   -- Lua 5.3+: exact 64-bit integers

-- Every kind with the smallest input that triggers it:
-- { name, input, kind, offset, line, column }
local FAILURES = {
    { "empty text", "", "empty", 0, 1, 1 },
    { "whitespace only", " \n\t", "empty", 3, 2, 2 },
    { "prose before the JSON", "Sure", "unexpected_character", 0, 1, 1 },
    { "single quotes", "'a'", "unexpected_character", 0, 1, 1 },
    { "a comment", "/**/1", "unexpected_character", 0, 1, 1 },
    { "an unquoted key", '{a:1}', "unexpected_character", 1, 1, 2 },
    { "a trailing comma in an array", "[1,]", "unexpected_character", 3, 1, 4 },
    { "a trailing comma in an object", '{"a":1,}', "unexpected_character", 7, 1, 8 },
    { "a missing comma", "[1 2]", "unexpected_character", 3, 1, 4 },
    { "a missing colon", '{"a" 1}', "unexpected_character", 5, 1, 6 },
    { "a byte order mark", "\239\187\191{}", "unexpected_character", 0, 1, 1 },
    { "a NUL byte outside strings", "[\0]", "unexpected_character", 1, 1, 2 },
    { "True in capitals", "True", "unexpected_character", 0, 1, 1 },
    { "a smart quote", "\226\128\156a\226\128\157", "unexpected_character", 0, 1, 1 },
    { "an unclosed array", "[1", "unexpected_end", 2, 1, 3 },
    { "an unclosed object", '{"a":1', "unexpected_end", 6, 1, 7 },
    { "an unclosed string", '"ab', "unexpected_end", 3, 1, 4 },
    { "a cut literal", "tru", "unexpected_end", 3, 1, 4 },
    { "a cut escape", '"\\u00', "unexpected_end", 5, 1, 6 },
    { "a second value", "{} {}", "trailing_content", 3, 1, 4 },
    { "text after the value on line 2", "1\n x", "trailing_content", 3, 2, 2 },
    { "a raw newline in a string", '"a\nb"', "control_character", 2, 1, 3 },
    { "a raw tab in a string", '"\t"', "control_character", 1, 1, 2 },
    { "a NUL byte in a string", '"\0"', "control_character", 1, 1, 2 },
    { "a lone continuation byte", '"\128"', "invalid_utf8", 1, 1, 2 },
    { "a truncated sequence", '"\195"', "invalid_utf8", 1, 1, 2 },
    { "an overlong encoding", '"\192\175"', "invalid_utf8", 1, 1, 2 },
    { "an overlong 3-byte encoding", '"\224\128\175"', "invalid_utf8", 1, 1, 2 },
    { "a UTF-8 encoded surrogate", '"\237\160\128"', "invalid_utf8", 1, 1, 2 },
    { "a code point above U+10FFFF", '"\244\144\128\128"', "invalid_utf8", 1, 1, 2 },
    { "Latin-1 text", '"caf\233"', "invalid_utf8", 4, 1, 5 },
    { "invalid UTF-8 after valid characters", '"\195\169\255"', "invalid_utf8", 3, 1, 3 },
    { "an unknown escape", '"\\x"', "invalid_escape", 1, 1, 2 },
    { "an escaped single quote", [["\'"]], "invalid_escape", 1, 1, 2 },
    { "a short \\u escape", '"\\u12x4"', "invalid_escape", 5, 1, 6 },
    { "a lone high surrogate", '"\\uD800"', "invalid_surrogate", 1, 1, 2 },
    { "a lone low surrogate", '"\\uDC00"', "invalid_surrogate", 1, 1, 2 },
    { "a high surrogate then a non-surrogate", '"\\uD800\\u0041"', "invalid_surrogate", 1, 1, 2 },
    { "inverted surrogates", '"\\uDD1E\\uD834"', "invalid_surrogate", 1, 1, 2 },
    { "a leading zero", "01", "invalid_number", 1, 1, 2 },
    { "a negative leading zero", "-01", "invalid_number", 2, 1, 3 },
    { "a dot without digits", "1.", "invalid_number", 2, 1, 3 },
    { "a leading dot", ".5", "invalid_number", 0, 1, 1 },
    { "a plus sign", "+1", "invalid_number", 0, 1, 1 },
    { "a lone minus", "-", "invalid_number", 1, 1, 2 },
    { "an empty exponent", "1e", "invalid_number", 2, 1, 3 },
    { "an exponent sign without digits", "1e+", "invalid_number", 3, 1, 4 },
    { "NaN", "NaN", "invalid_number", 0, 1, 1 },
    { "Infinity", "[Infinity]", "invalid_number", 1, 1, 2 },
    { "-Infinity", "-Infinity", "invalid_number", 0, 1, 1 },
    { "a hex number", "0x1", "invalid_number", 1, 1, 2 },
    { "two dots", "1.2.3", "invalid_number", 3, 1, 4 },
    { "a number above the double range", "1e400", "number_out_of_range", 0, 1, 1 },
    { "a negative number above the double range", "[-1e400]", "number_out_of_range", 1, 1, 2 },
    { "columns count characters", '{"\195\169":x}', "unexpected_character", 6, 1, 6 },
}

describe("jsoncontract.core", function()
    describe("decode()", function()
        for _, case in ipairs(FAILURES) do
            local name, input, kind, offset, line, column = case[1], case[2], case[3], case[4], case[5], case[6]
            it("rejects " .. name .. " as " .. kind, function()
                local v, err = core.decode(input)
                assert.is_nil(v)
                assert.equal("table", type(err))
                assert.equal("format", err.category)
                assert.equal(kind, err.kind)
                assert.equal(offset, err.offset)
                assert.equal(line, err.line)
                assert.equal(column, err.column)
                assert.equal("string", type(err.message))
                assert.truthy(err.message:find(("line %d, column %d"):format(line, column), 1, true))
                assert.equal(core.error_mt, getmetatable(getmetatable(err)))
            end)
        end

        it("reports a duplicate key with its JSON Pointer and name", function()
            local v, err = core.decode('{"a":1,"a":2}')
            assert.is_nil(v)
            assert.equal("format", err.category)
            assert.equal("duplicate_key", err.kind)
            assert.equal("a", err.key)
            assert.equal("/a", err.pointer)
            assert.equal(7, err.offset)
            assert.equal(1, err.line)
            assert.equal(8, err.column)
            assert.equal('duplicate key "a" at /a (line 1, column 8)', err.message)
        end)

        it("gives the pointer of a nested duplicate, escaping ~ and /", function()
            local _, err = core.decode('[0,{"x":{"a/b~":1,"a/b~":2}}]')
            assert.equal("duplicate_key", err.kind)
            assert.equal("/1/x/a~1b~0", err.pointer)
            assert.equal("a/b~", err.key)
            assert.equal(18, err.offset)
        end)

        it("names the member or element whose value holds a format error", function()
            local CASES = {
                { '{"id":1,"note":"a\\qb"}', "invalid_escape", "/note", 17 },
                { '{"note":"a\1b"}', "control_character", "/note", 10 },
                { '{"note":"a\255b"}', "invalid_utf8", "/note", 10 },
                { '{"items":[1,2,3,"\\u12"]}', "invalid_escape", "/items/3", 21 },
                { '{"a":{"n":01}}', "invalid_number", "/a/n", 11 },
                { '{"a":[0,-]}', "invalid_number", "/a/1", 9 },
                { '{"a":1e400}', "number_out_of_range", "/a", 5 },
                { '{"ok":tru}', "unexpected_character", "/ok", 9 },
                { '{"a":1,"b":[nul]}', "unexpected_character", "/b/0", 15 },
                { '{"a/b~":x}', "unexpected_character", "/a~1b~0", 8 },
                { '{"a":+1}', "invalid_number", "/a", 5 },
            }
            for _, case in ipairs(CASES) do
                local v, err = core.decode(case[1])
                assert.is_nil(v)
                assert.equal(case[2], err.kind, case[1])
                assert.equal(case[3], err.pointer, case[1])
                assert.equal(case[4], err.offset, case[1])
                assert.equal(1, err.line, case[1])
            end
        end)

        it("keeps the container's pointer for errors outside a value", function()
            local CASES = {
                { '{"a\\q":1}', "" },         -- inside a member name: no member yet
                { '{"a":[1,]}', "/a" },         -- a trailing comma: no element
                { '{"a":{"b" 1}}', "/a" },      -- between name and value
                { '"\\x"', "" },              -- the top-level value
            }
            for _, case in ipairs(CASES) do
                local _, err = core.decode(case[1])
                assert.equal(case[2], err.pointer, case[1])
            end
        end)

        it("treats keys that differ only after escapes as duplicates", function()
            local _, err = core.decode('{"\\u0061":1,"a":2}')
            assert.equal("duplicate_key", err.kind)
            assert.equal("/a", err.pointer)
        end)

        it("rejects nesting deeper than max_depth as too_deep", function()
            local _, err = core.decode("[[[1]]]", { max_depth = 2 })
            assert.equal("format", err.category)
            assert.equal("too_deep", err.kind)
            assert.equal(2, err.offset)
            assert.equal(1, err.line)
            assert.equal(3, err.column)
            assert.is_not_nil(core.decode("[[1]]", { max_depth = 2 }))
        end)

        it("stops a million nested brackets at the default depth of 1000", function()
            local _, err = core.decode(string.rep("[", 1000000))
            assert.equal("too_deep", err.kind)
            assert.equal(1000, err.offset)
            local ok = core.decode(string.rep("[", 1000) .. string.rep("]", 1000))
            assert.equal(core.array_mt, getmetatable(ok))
        end)

        it("accepts max_depth up to 3000 with objects and arrays interleaved", function()
            local text = string.rep('[{"a":', 1500) .. "1" .. string.rep("}]", 1500)
            local v = core.decode(text, { max_depth = 3000 })
            for _ = 1, 1500 do
                assert.equal(core.array_mt, getmetatable(v))
                v = v[1].a
            end
            assert.equal(1, v)
            local _, err = core.decode(text, { max_depth = 2999 })
            assert.equal("too_deep", err.kind)
        end)

        it("rejects text longer than max_bytes as too_big before parsing", function()
            local _, err = core.decode("[1, 2]  x", { max_bytes = 4 })
            assert.equal("format", err.category)
            assert.equal("too_big", err.kind)
            assert.equal(4, err.offset)
            assert.is_not_nil(core.decode("[1]", { max_bytes = 3 }))
        end)

        it("writes messages that can go back to the model", function()
            local _, err = core.decode('{\n  "category": "billing",\n  "urgent": true x\n}')
            assert.equal("unexpected_character", err.kind)
            assert.equal('expected \',\' or \'}\' after member "urgent" at line 3, column 18', err.message)
            _, err = core.decode("Sure! {}")
            assert.equal("unexpected character 'S' at line 1, column 1: expected a JSON value", err.message)
            _, err = core.decode("[1]  2")
            assert.equal("trailing content after the JSON value at line 1, column 6:"
                .. " the text must hold exactly one JSON value", err.message)
            assert.equal("format/trailing_content: " .. err.message, tostring(err))
        end)

        it("returns null as the core.null sentinel", function()
            assert.equal(core.null, core.decode("null"))
            assert.equal(core.null, core.decode('{"a":null}').a)
            assert.equal(core.null, core.decode("[null]")[1])
        end)

        it("marks arrays with core.array_mt, also when empty", function()
            assert.equal(core.array_mt, getmetatable(core.decode("[]")))
            assert.equal(core.array_mt, getmetatable(core.decode("[1,[2]]")[2]))
        end)

        it("returns objects as plain tables without a metatable", function()
            local v = core.decode('{}')
            assert.equal("table", type(v))
            assert.is_nil(getmetatable(v))
            assert.is_nil(next(v))
        end)

        it("decodes scalars and whitespace around them", function()
            assert.equal(true, core.decode(" \t\r\ntrue \n"))
            assert.equal(false, core.decode("false"))
            assert.equal("x", core.decode('"x"'))
            assert.equal(1.5, core.decode("1.5"))
            assert.equal(-2.5e-3, core.decode("-25E-4"))
            assert.equal(0, core.decode("-0"))
        end)

        it("keeps \\u0000 inside a string", function()
            local s = core.decode('"a\\u0000b"')
            assert.equal(3, #s)
            assert.equal("a\0b", s)
        end)

        it("decodes escapes and surrogate pairs to UTF-8", function()
            assert.equal('"\\/\b\f\n\r\t', core.decode([["\"\\\/\b\f\n\r\t"]]))
            assert.equal("\195\169", core.decode('"\\u00e9"'))
            assert.equal("\226\130\172", core.decode('"\\u20AC"'))
            assert.equal("\240\157\132\158", core.decode('"\\uD834\\uDD1E"'))
            assert.equal("\244\143\191\191", core.decode('"\\uDBFF\\uDFFF"'))
            assert.equal("caf\195\169 \226\128\148 ok", core.decode('"caf\195\169 \226\128\148 ok"'))
        end)

        it("decodes a long string with an escape near its end", function()
            local body = string.rep("abc\195\169", 2000)
            assert.equal(body .. "\n", core.decode('"' .. body .. '\\n"'))
        end)

        it("decodes strings mixing plain runs of every length with escapes and UTF-8", function()
            -- plain runs are copied a word (or sixteen bytes) at a time: runs of 0..40 bytes
            -- around each kind of escape and multi-byte character, at every alignment
            local pieces = {
                { '\\n', "\n" }, { '\\"', '"' }, { '\\\\', "\\" }, { '\\u00e9', "\195\169" },
                { '\\uD834\\uDD1E', "\240\157\132\158" }, { "\226\130\172", "\226\130\172" }, { "\\/", "/" },
            }
            local seed = 7
            local function rand(n)
                seed = (seed * 1103515245 + 12345) % 2147483648
                return seed % n
            end
            for _ = 1, 300 do
                local text, want = {}, {}
                for _ = 1, 1 + rand(6) do
                    local run = string.rep("x", rand(41)):gsub("x", function()
                        return string.char(32 + rand(95)):gsub('["\\]', "a")
                    end)
                    local p = pieces[rand(#pieces) + 1]
                    text[#text + 1], want[#want + 1] = run .. p[1], run .. p[2]
                end
                local tail = string.rep("y", rand(20))
                local json = '{"k":"' .. table.concat(text) .. tail .. '" ,\n    "z":  1}'
                local value = assert(core.decode(json))
                assert.equal(table.concat(want) .. tail, value.k)
                assert.equal(1, value.z)
            end
        end)

        it("accepts an exponent that underflows, as zero", function()
            assert.equal(0, core.decode("1e-400"))
        end)

        it("keeps integers exact on Lua 5.3+", function()
            if not HAVE_INTEGER then
                assert.equal(2 ^ 53, core.decode("9007199254740993"))  -- doubles on LuaJIT
                return
            end
            local v = core.decode("9007199254740993")
            assert.equal("integer", math.type(v))
            assert.equal(9007199254740993, v)
            assert.equal(math.mininteger, core.decode("-9223372036854775808"))
            assert.equal(math.maxinteger, core.decode("9223372036854775807"))
            assert.equal("float", math.type(core.decode("9223372036854775808")))
            assert.equal("float", math.type(core.decode("-9223372036854775809")))
            assert.equal("float", math.type(core.decode("1.0")))
            assert.equal("float", math.type(core.decode("1e2")))
            assert.equal("integer", math.type(core.decode("123456789012345678")))
        end)

        it("reads numbers the same under a comma-decimal locale", function()
            local old = os.setlocale(nil, "numeric")
            local set = os.setlocale("de_DE.UTF-8", "numeric") or os.setlocale("fr_FR.UTF-8", "numeric")
            finally(function() os.setlocale(old, "numeric") end)
            if not set then
                pending("no comma-decimal locale installed")
                return
            end
            assert.equal(1.5, core.decode("1.5"))
            assert.equal("[1.5]", core.encode(core.decode("[1.5]")))
        end)

        -- The plain-ASCII scan reads 8 bytes at a time: put each kind of stop
        -- byte at every position of strings 0..24 bytes long, so a stop in any
        -- lane, at a word edge and in the byte-wise tail is seen.
        it("finds the first special byte at every position of a string", function()
            local STOPS = {
                { "\\n", "\n", nil },                    -- escape
                { "\226\130\172", "\226\130\172", nil },   -- U+20AC
                { "\1", nil, "control_character" },
                { "\127", "\127", nil },                  -- DEL is plain
                { "\255", nil, "invalid_utf8" },
                { "\192\128", nil, "invalid_utf8" },      -- overlong NUL
            }
            for len = 0, 24 do
                for at = 0, len do
                    for _, stop in ipairs(STOPS) do
                        local before, after = ("a"):rep(at), ("b"):rep(len - at)
                        local text = '"' .. before .. stop[1] .. after .. '"'
                        local v, err = core.decode(text)
                        if stop[2] then
                            assert.equal(before .. stop[2] .. after, v)
                        else
                            assert.is_nil(v)
                            assert.equal(stop[3], err.kind)
                            assert.equal(1 + at, err.offset)
                        end
                    end
                    local v, err = core.decode('"' .. ("x"):rep(at))
                    assert.is_nil(v)
                    assert.equal("unexpected_end", err.kind)
                    assert.equal(1 + at, err.offset)
                end
            end
        end)

        it("raises on misuse", function()
            local raises = util.raises
            raises("(string expected, got number)", core.decode, 1)
            raises("(string expected, got no value)", core.decode)
            raises("(unknown option 'foo')", core.decode, "1", { foo = 1 })
            raises("(option 'max_depth' must be an integer from 1 to 3000)", core.decode, "1", { max_depth = 0 })
            raises("(option 'max_depth' must be an integer from 1 to 3000)", core.decode, "1", { max_depth = 3001 })
            raises("(option 'max_depth' must be an integer from 1 to 3000)", core.decode, "1", { max_depth = 1.5 })
            raises("(option 'max_bytes' must be an integer >= 0)", core.decode, "1", { max_bytes = "x" })
            raises("(table expected, got number)", core.decode, "1", 5)
            raises("(no more than 2 arguments expected)", core.decode, "1", nil, 3)
        end)
    end)
end)
