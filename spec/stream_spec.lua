-- core.stream_new: the incremental reader for a streamed answer (preview while
-- it arrives, the strict value only at finish()).
local core = require "jsoncontract.core"
local util = require "support.util"

local encode, decode = core.encode, core.decode

-- A model reply with every kind of value, escapes (\n, \u00e9, a surrogate
-- pair) and raw multi-byte characters (2, 3 and 4 bytes).
local REPLY = '{"intent": "delivery", "order_id": "55310", "urgent": true,\n'
    .. ' "scores": [1, -2.5e3, 0, null, false, {"k": []}],\n'
    .. ' "summary": "Pärcel \\u00e9 \\ud83d\\ude00 😀 “never” arrived\\n€"}'

local function feed_all(chunks, opts)
    local r = core.stream_new(opts)
    for _, c in ipairs(chunks) do assert.is_true(r:feed(c)) end
    return r
end

-- The byte after a string cut at a character boundary is never a UTF-8
-- continuation byte.
local function whole_chars(prefix, full)
    local nxt = full:byte(#prefix + 1)
    return full:sub(1, #prefix) == prefix and not (nxt and nxt >= 0x80 and nxt < 0xC0)
end

describe("jsoncontract.core", function()
    describe("stream_new()", function()
        local FINAL = encode((assert(decode(REPLY))))

        it("gives the one-shot value whatever byte the text is split at", function()
            for at = 0, #REPLY do
                local r = feed_all({ REPLY:sub(1, at), REPLY:sub(at + 1) })
                local v, err = r:finish()
                assert.is_nil(err)
                assert.equal(FINAL, encode(v))
            end
        end)

        it("gives the one-shot value when fed one byte at a time", function()
            local r = core.stream_new()
            for i = 1, #REPLY do r:feed(REPLY:sub(i, i)) end
            assert.equal(FINAL, encode(r:finish()))
        end)

        it("previews only whole characters and never a half escape", function()
            local final = decode(REPLY)
            local r = core.stream_new()
            local last_bytes, seen = 0, {}
            for i = 1, #REPLY do
                r:feed(REPLY:sub(i, i))
                local v, meta = r:preview()
                assert.is_true(meta.preview)
                assert.is_true(meta.bytes >= last_bytes)       -- never shrinks
                assert.is_true(meta.bytes <= i)
                last_bytes = meta.bytes
                if v ~= nil and v.summary ~= nil then
                    assert.is_true(whole_chars(v.summary, final.summary), v.summary)
                    seen[v.summary] = true
                end
                if v ~= nil then
                    -- members shown are final, but for a string still arriving
                    for k, x in pairs(v) do
                        if type(x) == "string" then
                            assert.is_true(whole_chars(x, final[k]), x)
                        elseif type(x) ~= "table" then
                            assert.equal(final[k], x)
                        end
                    end
                end
            end
            -- the escapes appear whole: never "\" or "\u00" or half a pair
            assert.is_true(seen["Pärcel "])
            assert.is_true(seen["Pärcel é"])
            assert.is_true(seen["Pärcel é "])
            assert.is_true(seen["Pärcel é 😀"])
            assert.is_nil(seen["Pärcel é \237\160\189"])
            local v, meta = r:preview()
            assert.is_true(meta.complete)
            assert.equal(#REPLY, meta.bytes)
            assert.equal(FINAL, encode(v))
        end)

        it("closes open containers and leaves out a member with no value yet", function()
            local cases = {
                { '', nil, 0 },
                { '  ', nil, 0 },
                { '{', '{}', 1 },
                { '{"a', '{}', 1 },
                { '{"a": ', '{}', 1 },
                { '{"a": [1, ', '{"a":[1]}', 8 },
                { '{"a": [1, tr', '{"a":[1]}', 8 },
                { '{"a": [1, true', '{"a":[1,true]}', 14 },
                { '{"a": "x\\', '{"a":"x"}', 8 },
                { '{"a": "x\\u00', '{"a":"x"}', 8 },
                { '{"a": "x\\u00e9', '{"a":"xé"}', 14 },
                { '{"a": "\\ud83d', '{"a":""}', 7 },
                { '{"a": "\\ud83d\\ude0', '{"a":""}', 7 },
                { '[12', '[12]', 3 },
                { '[12.', '[12]', 3 },
                { '[-', '[]', 1 },
                { '[-0', '[0]', 3 },
                { '[1e', '[1]', 2 },
                { '[1.5e+', '[1.5]', 4 },
                { '[25e-1', '[2.5]', 6 },
                { '"ab\226\130', '"ab"', 3 },
                { '[[], {"b": {}}', '[[],{"b":{}}]', 14 },
            }
            for _, c in ipairs(cases) do
                local r = feed_all({ c[1] })
                local v, meta = r:preview()
                assert.equal(c[2], v ~= nil and encode(v) or nil, c[1])
                assert.equal(c[3], meta.bytes, c[1])
                assert.is_false(meta.complete, c[1])
                assert.is_nil(meta.invalid, c[1])
            end
        end)

        it("keeps an empty array an array in a preview", function()
            local v = feed_all({ '{"a": [], "b": [' }):preview()
            assert.equal(core.array_mt, getmetatable(v.a))
            assert.equal(core.array_mt, getmetatable(v.b))
        end)

        it("is complete only after a whole top-level value", function()
            local r = feed_all({ '{"a": 1}' })
            local _, meta = r:preview()
            assert.is_true(meta.complete)
            r:feed("  \n")
            _, meta = r:preview()
            assert.is_true(meta.complete)
            r:feed("x")
            local v
            v, meta = r:preview()
            assert.is_false(meta.complete)
            assert.is_true(meta.invalid)
            assert.equal('{"a":1}', encode(v))  -- the last good value, for display
            local nv, err = r:finish()
            assert.is_nil(nv)
            assert.equal("format", err.category)
            assert.equal("trailing_content", err.kind)
            assert.equal(11, err.offset)
        end)

        it("reports at finish() exactly what decode reports", function()
            local BAD = {
                '', '{"a": 1', '{"a": 1,}', '[01]', '"\\x"', '"a\nb"', '"\255"', '{"a":1,"a":2}',
                '[1] [2]', '"\\ud800"', '[1e999]', '{"a" 1}', 'nul', '\239\187\191{}',
            }
            for _, text in ipairs(BAD) do
                local want_v, want = decode(text)
                assert.is_nil(want_v)
                for at = 0, #text do
                    local v, err = feed_all({ text:sub(1, at), text:sub(at + 1) }):finish()
                    assert.is_nil(v)
                    assert.equal(want.kind, err.kind, text)
                    assert.equal(want.offset, err.offset, text)
                    assert.equal(want.message, err.message, text)
                    assert.equal(want.pointer, err.pointer, text)
                end
            end
        end)

        it("never raises and never crashes on garbage, in any chunking", function()
            local rand = util.lcg(42)
            local ALPHABET = { "{", "}", "[", "]", ",", ":", '"', "\\", "u", "d8", "0", "1", "-",
                ".", "e", "t", "r", "n", "l", " ", "\n", "\195", "\169", "\240", "\159", "\255", "\0" }
            for _ = 1, 300 do
                local parts = {}
                for i = 1, rand(60) do parts[i] = ALPHABET[rand(#ALPHABET) + 1] end
                local text = table.concat(parts)
                local r = core.stream_new({ max_depth = 8 })
                local i, seen_invalid = 1, false
                while i <= #text do
                    local n = 1 + rand(5)
                    r:feed(text:sub(i, i + n - 1))
                    local v, meta = r:preview()
                    assert.is_true(meta.preview)
                    seen_invalid = seen_invalid or meta.invalid == true
                    if v ~= nil then assert.is_string(encode(v)) end
                    i = i + n
                end
                local v, err = r:finish()
                local want_v, want = decode(text, { max_depth = 8 })
                if want_v == nil then
                    assert.is_nil(v)
                    assert.equal(want.kind, err.kind)
                    assert.equal(want.offset, err.offset)
                else
                    assert.is_false(seen_invalid, text) -- invalid is a verdict, never a guess
                    assert.equal(encode(want_v), encode(v))
                end
            end
        end)

        it("survives deep nesting: too_deep at finish(), previews stay bounded", function()
            local r = core.stream_new()
            r:feed(("["):rep(100000))
            local v, meta = r:preview()
            assert.is_true(meta.invalid)
            assert.equal(1000, meta.bytes)
            assert.equal("table", type(v))
            local nv, err = r:finish()
            assert.is_nil(nv)
            assert.equal("too_deep", err.kind)
            assert.equal(1000, err.offset)
        end)

        it("fails for good on a chunk past max_bytes: later feeds and finish() give the same too_big", function()
            local r = core.stream_new({ max_bytes = 10 })
            assert.is_true(r:feed('{"a":'))
            local ok, err = r:feed('"xxxxxxxxxxxxxxxxxxxxx",')
            assert.is_nil(ok)
            local _, want = decode('{"a":"xxxxxxxxxxxxxxxxxxxxx",1}', { max_bytes = 10 })
            assert.equal("format", err.category)
            assert.equal("too_big", err.kind)
            assert.equal(10, err.offset)
            assert.equal(want.message, err.message)
            assert.equal(want.line, err.line)
            assert.equal(want.column, err.column)
            local ok2, err2 = r:feed('1}')
            assert.is_nil(ok2)
            assert.equal(err, err2)
            local ok3, err3 = r:feed("")
            assert.is_nil(ok3)
            assert.equal(err, err3)
            local v, meta = r:preview()
            assert.is_nil(v)
            assert.is_true(meta.invalid)
            assert.equal(0, meta.bytes)
            local fv, ferr = r:finish()
            assert.is_nil(fv)
            assert.equal(err, ferr)
            fv, ferr = r:finish()
            assert.is_nil(fv)
            assert.equal(err, ferr)
        end)

        it("reports too_big at finish() after a single oversized feed, with decode's position", function()
            local text = '[1,\n2,3]'
            local _, want = decode(text, { max_bytes = 5 })
            local r = core.stream_new({ max_bytes = 5 })
            local ok, err = r:feed(text)
            assert.is_nil(ok)
            local v, ferr = r:finish()
            assert.is_nil(v)
            assert.equal(err, ferr)
            assert.equal("too_big", ferr.kind)
            assert.equal(5, ferr.offset)
            assert.equal(2, ferr.line)
            assert.equal(want.column, ferr.column)
            assert.equal(want.message, ferr.message)
            -- exactly max_bytes is taken
            local r2 = core.stream_new({ max_bytes = 5 })
            assert.is_true(r2:feed("[1,2]"))
            assert.equal("[1,2]", encode(r2:finish()))
        end)

        it("marks a preview invalid when no later byte can make the text JSON", function()
            local CASES = {
                -- text so far, invalid?
                { '{"a":1,"a":2', true },       -- duplicate member name
                { '{"a":1,"a":', nil },         -- the second member is not shown yet
                { "[1e999", true },             -- more exponent digits only grow it
                { "[-1e999", true },
                { "[1e999,", true },
                { "[1e99", nil },
                { "[" .. ("1"):rep(400), nil },          -- an exponent may still follow
                { "[" .. ("1"):rep(400) .. "e-3", nil },  -- e-300 would bring it back
                { "[" .. ("1"):rep(400) .. "e3", true },
                { "[0e999", nil },
                { "[1,", nil },
            }
            for _, c in ipairs(CASES) do
                local r = core.stream_new()
                assert.is_true(r:feed(c[1]))
                local _, meta = r:preview()
                assert.equal(c[2], meta.invalid, c[1])
                if c[2] then
                    local v, err = r:finish()
                    assert.is_nil(v, c[1])
                    assert.is_string(err.kind, c[1])
                end
            end
        end)

        it("takes no chunk after finish(), and finish() may be repeated", function()
            local r = feed_all({ "[1]" })
            assert.equal("[1]", encode(r:finish()))
            assert.equal("[1]", encode(r:finish()))
            assert.has_error(function() r:feed("2") end, "stream: feed after finish")
        end)

        it("raises on misuse", function()
            local raises = util.raises
            local r = core.stream_new()
            raises("(string expected, got table)", r.feed, r, {})
            raises("(string expected, got no value)", r.feed, r)
            raises("(unknown option 'foo')", core.stream_new, { foo = 1 })
            raises("(option 'max_depth' must be an integer from 1 to 3000)", core.stream_new, { max_depth = 0 })
            raises("jsoncontract.Stream expected", r.preview, {})
        end)
    end)
end)
