-- The parser's string scan, byte by byte: every byte value at every position of a string
-- value and of a member name, across the sixteen-byte blocks the scan reads and up to the
-- text's last bytes (where it reads one at a time). A byte 0x20..0x7F other than '"' and '\'
-- is kept as it is; a control byte stops the string as control_character, a byte 0x80..0xFF
-- on its own as invalid_utf8, each at its offset and with the member's pointer. The same on
-- the FFI path (LuaJIT), which must accept exactly what core.decode accepts.
local core = require "jsoncontract.core"

local ok_ffi, jffi = pcall(require, "jsoncontract.ffi")
local ffi_parse = ok_ffi and jffi.available and jffi.parse_only or nil

local char, rep = string.char, string.rep

-- What the byte 'b' inside a string must give: nil (kept) or the err kind.
local function expected_kind(b)
    if b < 0x20 then return "control_character" end
    if b >= 0x80 then return "invalid_utf8" end
    return nil
end

-- A string of 'len' bytes, 'a' but the byte 'b' at 'k' (0-based).
local function body(len, k, b)
    return rep("a", k) .. char(b) .. rep("a", len - k - 1)
end

-- The text in the three places a string takes: a value at the top, a member's value near the
-- end of the text (the scan's last bytes), a member name.
local function cases(str)
    return {
        { text = '"' .. str .. '"', prefix = 1, pointer = "", value = function(v) return v end },
        { text = '{"k":"' .. str .. '"}', prefix = 6, pointer = "/k",
            value = function(v) return v.k end },
        { text = '{"' .. str .. '":1}', prefix = 2, pointer = "", key = true,
            value = function(v) return next(v) end },
    }
end

describe("the parser's string scan", function()
    it("keeps every plain byte and stops at every other one, at every position", function()
        local checked = 0
        for _, len in ipairs { 1, 16, 17, 33 } do
            for k = 0, len - 1 do
                for b = 0, 255 do
                    if b ~= 0x22 and b ~= 0x5C then
                        local str = body(len, k, b)
                        for _, c in ipairs(cases(str)) do
                            local v, err = core.decode(c.text)
                            local kind = expected_kind(b)
                            if kind == nil then
                                assert.is_nil(err, c.text)
                                assert.are.equal(str, c.value(v))
                            else
                                assert.is_nil(v, c.text)
                                assert.are.equal(kind, err.kind)
                                assert.are.equal(c.prefix + k, err.offset)
                                -- a member name's bad byte is the object's error, a value's
                                -- the member's
                                assert.are.equal(c.pointer, err.pointer)
                            end
                            if ffi_parse then
                                assert.are.equal(kind == nil, ffi_parse(c.text), c.text)
                            end
                            checked = checked + 1
                        end
                    end
                end
            end
        end
        assert.are.equal((1 + 16 + 17 + 33) * 254 * 3, checked)
    end)

    it("finds the closing quote and a backslash at every position", function()
        for len = 0, 40 do
            local str = rep("x", len)
            local v = assert(core.decode('{"' .. str .. '":"' .. str .. '"}'))
            assert.are.equal(str, v[str])
            if len > 0 then
                for k = 0, len - 1 do
                    local esc = str:sub(1, k) .. '\\"' .. str:sub(k + 2)
                    local want = str:sub(1, k) .. '"' .. str:sub(k + 2)
                    local w = assert(core.decode('["' .. esc .. '"]'))
                    assert.are.equal(want, w[1])
                    if ffi_parse then assert.is_true(ffi_parse('["' .. esc .. '"]')) end
                end
            end
        end
    end)

    it("tells equal member names from names that share length, first and last byte", function()
        -- names with the same length, first and last byte share their bit in the parser's
        -- quick check: they must still be told apart, and a repeat among them found
        local names = {}
        for i = 0, 19 do names[#names + 1] = '"a' .. char(0x41 + i) .. 'z":' .. i end
        local v = assert(core.decode("{" .. table.concat(names, ",") .. "}"))
        assert.are.equal(19, v.aTz)
        local _, err = core.decode('{"abz":1,"acz":2,"abz":3}')
        assert.are.equal("duplicate_key", err.kind)
        assert.are.equal("/abz", err.pointer)
        assert.are.equal(17, err.offset)   -- its opening quote
        -- an escaped name equal to a plain one is a repeat
        _, err = core.decode('{"ab":1,"a\\u0062":2}')
        assert.are.equal("duplicate_key", err.kind)
        assert.are.equal("ab", err.key)
        -- so is a repeat in an object past the pairwise size (the set's path)
        local many = {}
        for i = 1, 40 do many[#many + 1] = '"k' .. i .. '":' .. i end
        many[#many + 1] = '"k7":0'
        _, err = core.decode("{" .. table.concat(many, ",") .. "}")
        assert.are.equal("duplicate_key", err.kind)
        assert.are.equal("k7", err.key)
        -- the empty name
        _, err = core.decode('{"":1,"":2}')
        assert.are.equal("duplicate_key", err.kind)
        assert.are.equal("", err.key)
    end)
end)
