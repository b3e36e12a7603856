--- Small helpers every room may use, each defined once; imports nothing.
-- @module jsoncontract.util
local byte, type = string.byte, type

local _M = { _VERSION = "0.1.0" }

--- `s` as one POSIX shell word: single-quoted, each `'` written as `'\''` (POSIX.1-2017
-- Shell Command Language §2.2.2: nothing inside single quotes is special).
-- @param s any value (converted with tostring)
-- @treturn string
function _M.shell_quote(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local DEFAULT_PORT = { http = "80", https = "443" }

--- The server an http(s) URL names, as one string to compare: the host in lower case, without
-- the userinfo and the root's trailing dot, and with the port only when it is not the scheme's
-- own (`https://x@API.openai.com.:443/v1` is "api.openai.com", `http://127.0.0.1:8080/` is
-- "127.0.0.1:8080", an IPv6 host keeps its brackets). RFC 3986 §3.2: authority = [ userinfo "@" ]
-- host [ ":" port ]; RFC 1034 §3.1: a name ending in "." is the same absolute name.
-- @param url any value
-- @treturn string|nil nil when `url` is not an http(s) URL with a host
function _M.url_host(url)
    if type(url) ~= "string" then return nil end
    local scheme, authority = url:lower():match("^(https?)://([^/?#]*)")
    if not authority then return nil end
    authority = authority:match("^.*@(.*)$") or authority
    local host, rest = authority:match("^(%[[^%]]*%])(.*)$")
    if not host then host, rest = authority:match("^([^:]*)(.*)$") end
    host = host:gsub("%.$", "")
    if host == "" then return nil end
    local port = rest:match("^:(%d+)$")
    if port and port ~= DEFAULT_PORT[scheme] then return host .. ":" .. port end
    return host
end

--- Are `a` and `b` the same string? The time taken depends on their length only, not on
-- where they first differ, so a token or a session cookie cannot be guessed byte by byte.
-- @param a any value (false unless a string)
-- @param b any value (false unless a string)
-- @treturn boolean
function _M.constant_time_equal(a, b)
    if type(a) ~= "string" or type(b) ~= "string" or #a ~= #b then return false end
    local diff = 0
    for i = 1, #a do
        if byte(a, i) ~= byte(b, i) then diff = diff + 1 end
    end
    return diff == 0
end

--- `t[k]`, made an empty table first when absent: the next level of a memo keyed by several
-- values (per plan and mode, per contract and caller, down a label list).
-- @tparam table t
-- @param k any key but nil and NaN
-- @return `t[k]` as it is when present (whatever the caller stored there: the last level of a
--   memo holds its values), else the new empty table
function _M.child(t, k)
    local c = t[k]
    if c == nil then
        c = {}
        t[k] = c
    end
    return c
end

--- `fn` remembered: a function of one argument that answers `fn(k)`, computed once per `k` while
-- at most `limit` answers are kept; past that the memory starts afresh (a process asks with a few
-- keys, the same every request: a base URL, a prompt, a key; bounded so that varying keys cannot
-- grow it). `fn` must answer the same for the same `k`; a nil answer is not kept.
-- @tparam number limit answers kept at most
-- @tparam function fn `function(k) -> v`
-- @treturn function `function(k) -> v`
function _M.memo(limit, fn)
    local kept, n = {}, 0
    return function(k)
        local v = kept[k]
        if v == nil then
            v = fn(k)
            if v == nil then return nil end
            if n >= limit then kept, n = {}, 0 end
            kept[k], n = v, n + 1
        end
        return v
    end
end

return _M
