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

return _M
