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

--- Wall-clock seconds (sub-second where luasocket is available).
-- @treturn number
function _M.now()
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
