--- Which transport and which sleep `jc.ask` uses when the caller names none, by where it runs.
--
-- Outside nginx: `jsoncontract.transport.curl` (blocking libcurl) and luasocket's sleep.
-- Under nginx (`ngx` present) it asks `ngx.get_phase()`:
--
--   * phases that may yield (rewrite, server_rewrite, access, content, timer, ssl_cert,
--     ssl_session_fetch, ssl_client_hello, preread): `jsoncontract.transport.openresty`
--     (cosockets) and `ngx.sleep`, so a slow model never stalls the worker;
--   * `init` (init_by_lua, in the master before any worker serves): curl and a blocking sleep,
--     which nginx allows there and which delays nothing but the start;
--   * every other phase (init_worker, set, header_filter, body_filter, log, balancer,
--     exit_worker, ...): nginx allows neither cosockets nor sleeping, so `ask` raises and
--     says to move the call into `ngx.timer.at(0, fn)`.
--
-- The blocking curl transport passed explicitly in any phase but `init` raises too, unless
-- the caller also says `allow_blocking = true`: one slow answer would hold every request of
-- the worker.
-- @module jsoncontract.transport.default
-- luacheck: read globals ngx
local type, error, format = type, error, string.format

local _M = { _VERSION = require("jsoncontract.core")._VERSION }

--- Phases in which cosockets and `ngx.sleep` work.
-- @table YIELDABLE
_M.YIELDABLE = {
    rewrite = true, server_rewrite = true, access = true, content = true, timer = true,
    ssl_cert = true, ssl_session_fetch = true, ssl_client_hello = true, preread = true,
}

local blocking_sleep = require("jsoncontract.compat").block

local function ngx_sleep(seconds)
    if seconds <= 0 then return end
    return ngx.sleep(seconds)
end

--- The nginx phase we run in, or nil outside nginx.
-- @treturn string|nil e.g. "content", "timer", "init"
function _M.phase()
    if type(ngx) ~= "table" or type(ngx.get_phase) ~= "function" then return nil end
    return ngx.get_phase()
end

--- Pick the transport and the sleep for one `ask`.
-- @tparam function|nil transport the caller's `opts.transport`
-- @tparam function|nil sleep the caller's `opts.sleep`
-- @tparam boolean|nil allow_blocking the caller's `opts.allow_blocking`
-- @tparam[opt=2] integer level the stack level blamed on misuse (as for `error`)
-- @treturn function send `function(req) -> res | nil, err`
-- @treturn function sleep `function(seconds)`
-- @treturn string|nil the nginx phase, nil outside nginx
-- @raise in an nginx phase without cosockets when no transport was given, and for the curl
--   transport in any nginx phase but `init` without `allow_blocking`
-- @usage local send, sleep = default.choose(opts.transport, opts.sleep, opts.allow_blocking, 3)
function _M.choose(transport, sleep, allow_blocking, level)
    level = (level or 2) + 1
    local phase = _M.phase()
    if phase == nil or phase == "init" then
        return transport or require("jsoncontract.transport.curl").request, sleep or blocking_sleep, phase
    end
    local yieldable = _M.YIELDABLE[phase]
    if transport == nil then
        if yieldable then
            return require("jsoncontract.transport.openresty").request, sleep or ngx_sleep, phase
        end
        error(format("ask: nginx allows no cosockets or sleeping in the %s phase; "
            .. "run the ask in ngx.timer.at(0, fn) or in a content/access/rewrite handler", phase), level)
    end
    if not allow_blocking then
        local curl_ok, curl = pcall(require, "jsoncontract.transport.curl")
        if curl_ok and (transport == curl.request or transport == curl.request_many) then
            error(format("ask: the blocking curl transport would stall this nginx worker in the %s phase; "
                .. "leave out opts.transport (the cosocket transport is the default where cosockets work) "
                .. "or pass allow_blocking = true", phase), level)
        end
    end
    if not yieldable then return transport, sleep or blocking_sleep, phase end
    return transport, sleep or ngx_sleep, phase
end

return _M
