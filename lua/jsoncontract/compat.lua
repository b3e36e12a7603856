--- What differs between the hosts we run on, detected once (Penlight `pl/compat` does the
-- same): the clock, waiting, `unpack`, and whether we run under OpenResty.
-- @module jsoncontract.compat
local core = require "jsoncontract.core"

local type, pcall, require = type, pcall, require
local format = string.format

local _M = { _VERSION = core._VERSION }

local has_socket, socket = pcall(require, "socket")
-- Under nginx, waiting must yield to the event loop, never block the worker.
local ngx_sleep = type(ngx) == "table" and ngx.sleep or nil

--- `table.unpack` on 5.2+, `unpack` on 5.1/LuaJIT.
_M.unpack = table.unpack or unpack -- luacheck: ignore 113 143

--- True under OpenResty (an `ngx` table with `ngx.sleep`).
_M.openresty = ngx_sleep ~= nil

--- True when luasocket is available (sub-second clock and sleep).
_M.has_socket = has_socket

--- True on PUC Lua 5.1, which cannot yield across `pcall` (LuaJIT and 5.2+ can).
_M.lua51 = _VERSION == "Lua 5.1" and type(jit) ~= "table"

local co_create, co_resume, co_status, co_yield = coroutine.create, coroutine.resume, coroutine.status,
    coroutine.yield
local select = select

-- pcall for PUC 5.1 that lets `f` yield: `f` runs in a coroutine of its own and every yield is
-- passed on to the caller's coroutine and resumed with what that one got (as coxpcall does).
local function pack(...) return { n = select("#", ...), ... } end
local function yieldable_pcall(f, ...)
    local co = co_create(f)
    local r = pack(co_resume(co, ...))
    while true do
        if not r[1] then return false, r[2] end
        if co_status(co) == "dead" then return _M.unpack(r, 1, r.n) end
        r = pack(co_resume(co, co_yield(_M.unpack(r, 2, r.n))))
    end
end

--- `pcall` through which the called function may yield (a batch item's I/O); Lua's own
-- `pcall` where it already allows that.
-- @tparam function f
-- @return true and f's results, or false and the error
_M.pcall = _M.lua51 and yieldable_pcall or pcall

-- On LuaJIT under Linux, clock_gettime through the FFI: a call the JIT compiles, where
-- luasocket's gettime is a C function every compiled trace must leave for (an ask reads the
-- clock four times). Nil when the FFI or the declaration is not there.
-- The function goes by a name of our own, redirected to the symbol: LuaJIT keeps the first
-- declaration of a name, so another library's earlier clock_gettime (with its own struct
-- timespec) would refuse our struct, and the clock fell back to luasocket's, or without it to
-- os.time()'s whole seconds. Declared once per VM (a second load of this module finds them).
local ffi_now
do
    local has_ffi, ffi = pcall(require, "ffi")
    if has_ffi and ffi.os == "Linux" then
        if not pcall(ffi.typeof, "jc_compat_timespec") then
            pcall(ffi.cdef, [[
                typedef struct { long tv_sec; long tv_nsec; } jc_compat_timespec;
                int jc_compat_clock_gettime(int clock_id, jc_compat_timespec *tp) __asm__("clock_gettime");
            ]])
        end
        local made, ts = pcall(ffi.new, "jc_compat_timespec")
        if made then
            local C, tonumber = ffi.C, tonumber
            local function now()
                C.jc_compat_clock_gettime(0, ts) -- CLOCK_REALTIME
                return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
            end
            if pcall(now) then ffi_now = now end
        end
    end
end

--- Wall-clock seconds (sub-second where luasocket or LuaJIT's FFI is available).
-- @treturn number
function _M.now()
    if ffi_now then return ffi_now() end
    if has_socket then return socket.gettime() end
    return os.time()
end

--- Wait `seconds`: `ngx.sleep` under OpenResty (yields), else luasocket's sleep, else the
-- `sleep` command as a last resort.
-- @tparam number seconds
function _M.sleep(seconds)
    if seconds <= 0 then return end
    if ngx_sleep then return ngx_sleep(seconds) end
    if has_socket then return socket.sleep(seconds) end
    os.execute(format("sleep %.3f", seconds))
end

--- Wait `seconds` blocking the process (never yields; for the batch scheduler, which runs
-- outside nginx and owns its own event loop).
-- @tparam number seconds
function _M.block(seconds)
    if seconds <= 0 then return end
    if has_socket then return socket.sleep(seconds) end
    os.execute(format("sleep %.3f", seconds))
end

return _M
