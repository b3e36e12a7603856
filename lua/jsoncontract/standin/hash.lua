--- The stand-in's deterministic hash: every choice the stand-in makes is a draw from a hash of
-- (seed, text, attempt, ...), so the same seed gives the same answers on Lua 5.1-5.4 and LuaJIT.
-- @module jsoncontract.standin.hash
local floor = math.floor
local byte, format = string.byte, string.format
local tostring, tonumber, select = tostring, tonumber, select

local _M = { _VERSION = "0.1.0" }

-- Deterministic hashing (arithmetic only: exact in doubles and in 5.4 integers)

local TWO32 = 4294967296

local function bxor8(a, b)
    local r, p = 0, 1
    for _ = 1, 8 do
        local x, y = a % 2, b % 2
        if x ~= y then r = r + p end
        a, b, p = (a - x) / 2, (b - y) / 2, p * 2
    end
    return r
end

local function bxor32(a, b)
    local r, p = 0, 1
    for _ = 1, 4 do
        local x, y = a % 256, b % 256
        r = r + bxor8(x, y) * p
        a, b, p = (a - x) / 256, (b - y) / 256, p * 256
    end
    return r
end

-- (a * b) mod 2^32 for a, b < 2^32 without leaving the exact range of a double.
local function mul32(a, b)
    local bl = b % 65536
    local bh = (b - bl) / 65536
    return ((a * bh) % 65536 * 65536 + a * bl) % TWO32
end

-- FNV-1a 32 over s, continuing from h.
local function fnv(h, s)
    for i = 1, #s do
        local c = byte(s, i)
        local lo = h % 256
        h = h - lo + bxor8(lo, c)
        h = mul32(h, 16777619)
    end
    return h
end

-- murmur3 finaliser: spreads FNV's weak high bits.
local function fmix(h)
    h = bxor32(h, floor(h / 65536))
    h = mul32(h, 2246822507)
    h = bxor32(h, floor(h / 8192))
    h = mul32(h, 3266489909)
    h = bxor32(h, floor(h / 65536))
    return h
end

--- A number in [0, 1) from the seed and any strings.
-- @tparam number seed integer seed
-- @tparam string ... parts to hash
-- @treturn number uniform draw in [0, 1)
function _M.draw(seed, ...)
    local h = fnv(2166136261, format("%d", floor(tonumber(seed) or 0)))
    for i = 1, select("#", ...) do
        h = fnv(h, "\0" .. tostring((select(i, ...))))
    end
    return fmix(h) / TWO32
end

return _M
