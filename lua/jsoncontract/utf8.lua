--- UTF-8 byte cuts shared by every room, with no dependency (the stand-in loads it without
-- the C core): never end a cut inside a character.
-- @module jsoncontract.utf8
local byte, sub = string.byte, string.sub

local _M = { _VERSION = "0.1.0" }

--- The longest prefix of `s` of at most `n` bytes that ends at a character boundary.
-- @tparam string s UTF-8 text
-- @tparam integer n bytes
-- @treturn string
function _M.cut(s, n)
    if #s <= n then return s end
    local i = n + 1
    -- back up over continuation bytes (10xxxxxx): the cut falls before the character
    while i > 1 do
        local c = byte(s, i)
        if not c or c < 128 or c >= 192 then break end
        i = i - 1
    end
    return sub(s, 1, i - 1)
end

--- Code points in a UTF-8 string (continuation bytes not counted).
-- @tparam string s
-- @treturn integer
function _M.len(s)
    local n = 0
    for i = 1, #s do
        local c = byte(s, i)
        if c < 128 or c >= 192 then n = n + 1 end
    end
    return n
end

--- The first `n` code points of `s`.
-- @tparam string s
-- @tparam integer n
-- @treturn string
function _M.prefix(s, n)
    local count, i = 0, 1
    while i <= #s do
        local c = byte(s, i)
        if c < 128 or c >= 192 then
            if count == n then return sub(s, 1, i - 1) end
            count = count + 1
        end
        i = i + 1
    end
    return s
end

--- The length of the well-formed UTF-8 sequence that starts at byte `i` of `s` (RFC 3629
-- §4: no overlong forms, no surrogates, nothing above U+10FFFF), or nil when none does.
-- @tparam string s
-- @tparam integer i 1-based byte index, within `s`
-- @treturn integer|nil 1 to 4
function _M.seq_len(s, i)
    local c = byte(s, i)
    if c < 0x80 then return 1 end
    local len, lo, hi
    if c >= 0xC2 and c <= 0xDF then len = 2
    elseif c >= 0xE0 and c <= 0xEF then len = 3
    elseif c >= 0xF0 and c <= 0xF4 then len = 4
    else return nil end
    lo, hi = 0x80, 0xBF
    -- the second byte's narrower range rules out overlongs, surrogates and > U+10FFFF
    if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F
    elseif c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
    local c2 = byte(s, i + 1)
    if not c2 or c2 < lo or c2 > hi then return nil end
    for k = i + 2, i + len - 1 do
        local ck = byte(s, k)
        if not ck or ck < 0x80 or ck > 0xBF then return nil end
    end
    return len
end

return _M
