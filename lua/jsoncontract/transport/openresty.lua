--- The non-blocking HTTP transport of jsoncontract for OpenResty / nginx + lua-nginx-module:
-- HTTP/1.1 over cosockets (`ngx.socket.tcp`), the same shapes as
-- `jsoncontract.transport.curl`, so `jc.ask(contract, input, { transport = openresty.request })`
-- runs inside a request handler without blocking the worker (under nginx `jc.ask` picks it
-- by itself, see `jsoncontract.transport.default`).
--
-- Only what an LLM API call needs: keep-alive connections kept in nginx's per-worker cosocket
-- pool (one pool per scheme://host:port, `pool_size` idle connections at most, closed after
-- `keepalive_timeout_ms` idle; `backlog` also bounds the open connections and queues the
-- rest), TLS sessions reused on new connections, `Content-Length`, chunked and
-- read-until-close response bodies, TLS verified for `https://` (the CA store is nginx's
-- `lua_ssl_trusted_certificate`, with `lua_ssl_verify_depth`), redirects never followed (a 3xx
-- is a response), no compression asked for (a compressed body is a `protocol` error), the body
-- cap enforced while reading. A connection goes back to the pool only after an HTTP/1.1
-- response that was read completely by its framing (Content-Length or chunked up to the last
-- trailer, or a status without a body), did not say `Connection: close` and sent nothing past
-- its end; everything else, every error included, closes it. A reused connection that the server closed while idle
-- (nothing read back, nothing but a failed send) is retried once on a new connection.
-- Every line is read with a bound: the status line and headers (1xx heads included) at most
-- 64 KiB together (else `too_large`), a chunk-size line at most 1 KiB (else `protocol`),
-- trailers counted in `max_response_bytes`. Framing is strict, anything else is `protocol`:
-- status exactly three digits 100..599, no CR inside a header line, one Content-Length value
-- (repeats must be equal), Transfer-Encoding exactly `chunked`, a chunk size followed by
-- nothing or `;` extensions. A reply whose first bytes are not `HTTP/1.x` is `protocol`
-- ("not an HTTP response"); IPv6 literals are written `http://[::1]:8080/`.
-- Host names are resolved by nginx: a `resolver` directive is needed for names other than IPs.
-- Usable where cosockets are (rewrite/access/content/timer phases), not in init_by_lua.
--
-- A request `req` (any other field raises): `url` (`http://` or `https://`, required),
-- `method` (default `"POST"` with a body, else `"GET"`), `headers` `{ [name] = value }`
-- (values never appear in messages; `Host` may be given, `Connection`, `Content-Length` and
-- `Transfer-Encoding` are the transport's), `body` string or nil, `connect_timeout_ms`
-- (>= 1, default 10000; also the longest wait in the backlog queue), `timeout_ms` (>= 0, whole
-- exchange, 0 = none, default 90000: one deadline for connect, TLS, send, head and body; every
-- read waits at most for what is left and returns whatever bytes came, so a peer dripping bytes
-- is cut off at the deadline as `timeout`), `read_timeout_ms` (>= 1 or nil: fail when no byte arrives
-- for that long), `max_response_bytes` (>= 1, default 8 MiB), `keepalive` (boolean, default
-- true; false sends `Connection: close`), `pool_size` (>= 1, default 32: idle connections kept
-- per pool), `keepalive_timeout_ms` (>= 1, default 60000: idle time before nginx closes a
-- pooled connection), `backlog` (>= 0 or nil: when set, nginx keeps the open connections of the
-- pool near `pool_size` (measured here: up to about 1.5 x `pool_size` in a burst) and up to
-- `backlog` exchanges wait for one; more fail as `overloaded`), `pool` (string, default
-- `"<scheme>://<host>:<port>"`), `ca_file` (raises: cosockets take the CA store from nginx's
-- `lua_ssl_trusted_certificate` only).
--
-- A response `res`: `status` integer, `headers` (lower-case names, last value wins), `body`
-- string, `elapsed_ms` number, `reused` integer (how often the connection had been used
-- before: 0 for a new one), `pooled` boolean (the connection went back to the pool).
-- An error `err` (shared error metatable): `category = "transport"`, `kind` one of
-- `"timeout"`, `"connect"`, `"tls"`, `"too_large"`, `"reset"`, `"protocol"`, `"overloaded"`
-- (this worker's pool and its `backlog` are full); `message` names
-- host:port, never headers or the URL path; `detail` the cosocket's own words; `elapsed_ms`
-- number.
-- @module jsoncontract.transport.openresty
-- luacheck: read globals ngx
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"

local type, tostring, tonumber, pairs, error = type, tostring, tonumber, pairs, error
local floor, min, max = math.floor, math.min, math.max
local concat = table.concat
local format, lower, find, byte, sub, match = string.format, string.lower, string.find, string.byte, string.sub,
    string.match

local _M = { _VERSION = core._VERSION }

local DEFAULT_CONNECT_MS = 10000
local DEFAULT_TIMEOUT_MS = 90000
local DEFAULT_MAX_BYTES = 8 * 1024 * 1024
local MAX_HEADER_BYTES = 64 * 1024     -- status line + all response header lines
local MAX_CHUNK_LINE = 1024            -- one chunk-size line, extensions included
local LINE_STEP = 4096                 -- read size while looking for the end of a line
local CHUNK = 16 * 1024                -- largest body read
local SEND_STEP = 64 * 1024            -- largest piece of the request sent at once
local NO_TIMEOUT_MS = 2 ^ 31 - 1       -- what `timeout_ms = 0` means to a cosocket
local DEFAULT_POOL_SIZE = 32           -- idle keep-alive connections per pool
local DEFAULT_IDLE_MS = 60000          -- a pooled connection is closed after this long idle

-- TLS sessions by pool name, per worker: a new connection to the same host resumes the
-- last session instead of a full handshake (a pooled connection needs no handshake at all).
local SESSIONS = {}

local CONNECT_OPTS = {} -- (see exchange)

local FIELDS = {
    url = "string", method = "string", headers = "table", body = "string",
    connect_timeout_ms = "number", timeout_ms = "number", read_timeout_ms = "number",
    max_response_bytes = "number", ca_file = "string", keepalive = "boolean", pool_size = "number",
    keepalive_timeout_ms = "number", backlog = "number", pool = "string",
}
local OWN_HEADERS = { connection = true, ["content-length"] = true, ["transfer-encoding"] = true }

-- Milliseconds on nginx's monotonic clock where lua-resty-core has it (a wall-clock step
-- must neither stretch nor cut an exchange's deadline), else on the wall clock, refreshed:
-- ngx.now() alone is the time the event loop last woke up. Resolved on first use, inside nginx.
local clock
local function now_ms()
    if not clock then
        local ok, time = pcall(require, "resty.core.time")
        if ok and type(time) == "table" and type(time.monotonic_msec) == "function"
            and pcall(time.monotonic_msec) then
            clock = time.monotonic_msec
        else
            clock = function()
                ngx.update_time()
                return ngx.now() * 1000
            end
        end
    end
    return clock()
end

local function check_int(req, name, lo, level)
    local v = req[name]
    if v ~= nil and (v ~= floor(v) or v < lo) then
        error(format("openresty transport: %s must be an integer >= %d", name, lo), level)
    end
end

-- A URL's parts `{scheme, host, port, path, hostport}`; raises on a URL this transport cannot
-- take (blaming `level`). Parsed once per URL string (URLS): a gateway asks the same one each time.
local URLS, n_urls, MAX_URLS = {}, 0, 64
local function parse_url(s, level)
    local scheme, authority, path = s:match("^(%a+)://([^/?#]+)(.*)$")
    scheme = scheme and lower(scheme)
    if scheme ~= "http" and scheme ~= "https" then
        error("openresty transport: url must start with http:// or https://", level)
    end
    if find(authority, "@", 1, true) then error("openresty transport: url must not carry user info", level) end
    local host, port = authority:match("^%[([%x:%.]+)%]:?(%d*)$")
    if not host then host, port = authority:match("^([^:]+):?(%d*)$") end
    if not host then error("openresty transport: url has a bad host:port", level) end
    port = port ~= "" and tonumber(port) or (scheme == "https" and 443 or 80)
    if port < 1 or port > 65535 then error("openresty transport: url has a bad port", level) end
    path = path:gsub("#.*$", "")
    if path == "" then path = "/" elseif path:sub(1, 1) == "?" then path = "/" .. path end
    if find(path, "[%c ]") then error("openresty transport: url path must not hold spaces or controls", level) end
    local hostport = (find(host, ":", 1, true) and "[" .. host .. "]" or host) .. ":" .. port
    return { scheme = scheme, host = host, port = port, path = path, hostport = hostport,
        pool = scheme .. "://" .. hostport }
end

-- Does `s` hold a CR, LF or NUL? (Plain finds: a pattern's character class costs a step per
-- byte, and a header value may be a long key.)
local function breaks_line(s)
    return find(s, "\r", 1, true) or find(s, "\n", 1, true) or find(s, "\0", 1, true)
end

-- Request methods and header names seen, and whether each matched its pattern (a gateway sends
-- the same few every time); at most MAX_NAMES of each kept. RESPONSE_NAMES: a response header
-- name -> its lower case, or false when it holds a space.
local METHODS, HEADER_NAMES, RESPONSE_NAMES = { map = {}, n = 0 }, { map = {}, n = 0 }, {}
local n_response_names, MAX_NAMES = 0, 256
local function known(seen, s, pattern)
    local ok = seen.map[s]
    if ok == nil then
        ok = match(s, pattern) ~= nil
        if seen.n >= MAX_NAMES then seen.map, seen.n = {}, 0 end
        seen.map[s], seen.n = ok, seen.n + 1
    end
    return ok
end

-- Check a request; returns the parsed URL parts. Raises on misuse (blaming `level`).
local function check(req, level)
    if type(req) ~= "table" then
        error("openresty transport: request must be a table, got " .. type(req), level)
    end
    for k, v in pairs(req) do
        local want = FIELDS[k]
        if not want then error("openresty transport: unknown request field " .. tostring(k), level) end
        if type(v) ~= want then
            error(format("openresty transport: %s must be a %s, got %s", k, want, type(v)), level)
        end
    end
    if req.ca_file then
        error("openresty transport: ca_file is not supported, set lua_ssl_trusted_certificate in nginx", level)
    end
    check_int(req, "connect_timeout_ms", 1, level + 1)
    check_int(req, "timeout_ms", 0, level + 1)
    check_int(req, "read_timeout_ms", 1, level + 1)
    check_int(req, "max_response_bytes", 1, level + 1)
    check_int(req, "pool_size", 1, level + 1)
    check_int(req, "keepalive_timeout_ms", 1, level + 1)
    check_int(req, "backlog", 0, level + 1)
    if not req.url then error("openresty transport: url is required", level) end
    local url = URLS[req.url]
    if not url then
        url = parse_url(req.url, level + 1)
        if n_urls >= MAX_URLS then URLS, n_urls = {}, 0 end
        URLS[req.url], n_urls = url, n_urls + 1
    end
    local scheme, host, port, path, hostport = url.scheme, url.host, url.port, url.path, url.hostport
    local method = req.method or (req.body and "POST" or "GET")
    if not known(METHODS, method, "^%u+$") then
        error("openresty transport: method must be upper-case letters", level)
    end
    if req.headers then
        for name, value in pairs(req.headers) do
            if type(name) ~= "string" or type(value) ~= "string" then
                error("openresty transport: headers must map strings to strings", level)
            end
            if not known(HEADER_NAMES, name, "^[%w!#$%%&'*+%-.^_`|~]+$") or breaks_line(value) then
                error("openresty transport: bad header " .. (name:match("^[%w%-]+$") or "name"), level)
            end
            if OWN_HEADERS[lower(name)] then
                error("openresty transport: header " .. name .. " is set by the transport", level)
            end
        end
    end
    return { scheme = scheme, host = host, port = port, path = path, method = method, hostport = hostport,
        pool = req.pool or url.pool, keepalive = req.keepalive ~= false }
end

-- The reading and failing steps of one exchange, as functions of its state `x` (the `st` of
-- `exchange`: `sock`, `req`, `deadline` (ms on now_ms's clock, or nil), `t0`, `hp`
-- ("host:port" for messages) and `buf`), not closures made anew for every exchange (LuaJIT
-- cannot compile a function that makes closures).

-- The cosocket timeout for the next step: what is left of the whole exchange, and no more
-- than read_timeout_ms for a read. Returns nil when the exchange is out of time.
local function arm(x, step_ms)
    local deadline = x.deadline
    local left = deadline and floor(deadline - now_ms()) or NO_TIMEOUT_MS
    if left < 1 then return nil end
    local ms = min(left, step_ms or NO_TIMEOUT_MS)
    -- (the same value as the last armed, within the same millisecond: nothing to change)
    if ms ~= x.armed then
        x.sock:settimeout(ms)
        x.armed = ms
    end
    return true
end

-- `reading`: the step was a read, so read_timeout_ms may be what ran out.
local function timed_out(x, reading)
    local rt, deadline = x.req.read_timeout_ms, x.deadline
    if reading and rt and (not deadline or deadline - now_ms() > 1) then
        return nil, "timeout", format("no data from %s for %d ms", x.hp, rt)
    end
    return nil, "timeout", format("timed out talking to %s after %d ms", x.hp, floor(now_ms() - x.t0))
end

-- A failed send or read: a timeout, or the peer closed or reset the connection.
local function failed(x, err, what, reading)
    if err == "timeout" then return timed_out(x, reading) end
    return nil, "reset", format("connection to %s closed early (%s)", x.hp, what), err
end

local function bad(x, what)
    return nil, "protocol", format("HTTP exchange with %s failed (%s)", x.hp, what)
end

-- `x.buf`, `x.pos`: bytes read off the socket, of which those from `pos` on are not consumed
-- by the framing yet (a position, not a new remainder string per line: a head and a small
-- body usually arrive in one read, and cutting the rest off after each line copied the body
-- once per header). Every read is a
-- `receiveany`, which returns as soon as some bytes arrive: `receive(n)` and the
-- `receiveuntil` reader wait for all `n` bytes and restart their timer whenever one
-- arrives, so a peer dripping a byte at a time would hold them past the deadline.

-- Read what arrives next, at most `n` bytes, waiting no longer than the exchange has left
-- (and read_timeout_ms). Returns the bytes, or nil and the cosocket's error ("timeout",
-- "closed"...) or "deadline".
local function read_some(x, n)
    if not arm(x, x.req.read_timeout_ms) then return nil, "deadline" end
    local data, rerr = x.sock:receiveany(n)
    if not data then return nil, rerr end
    return data
end

-- One line, never more than `limit` bytes (the "\n" not counted), read `LINE_STEP` bytes
-- at a time, so a peer that never ends its line cannot grow the worker. Returns the line
-- without its "\r\n" or "\n"; or nil, "long", what was read; or nil, the cosocket's
-- error ("timeout", "closed"...) or "deadline", what was read.
local function read_line(x, limit)
    local buf, pos = x.buf, x.pos
    local from = pos
    while true do
        local nl = find(buf, "\n", from, true)
        if nl then
            if nl - pos > limit then return nil, "long", sub(buf, pos) end
            local last = nl - 1
            if last >= pos and byte(buf, last) == 13 then last = last - 1 end
            x.pos = nl + 1
            return sub(buf, pos, last)
        end
        if #buf - pos + 1 > limit then return nil, "long", sub(buf, pos) end
        if pos > 1 then -- the consumed bytes go before more are appended
            buf, pos = sub(buf, pos), 1
            x.buf, x.pos = buf, 1
        end
        from = #buf + 1
        local data, rerr = read_some(x, min(LINE_STEP, max(limit - #buf + 1, 1)))
        if not data then
            x.buf, x.pos = "", 1
            return nil, rerr, buf
        end
        buf = buf .. data
        x.buf = buf
    end
end

-- Are there bytes read but not consumed? (A connection with some cannot go back to the pool.)
local function leftover(x)
    return x.pos <= #x.buf
end

-- Exactly `n` body bytes into `parts`: what `x.buf` holds first, then from the socket, never
-- reading past them. Returns true, or nil and the cosocket's error or "deadline".
local function read_exact(x, n, parts)
    local buf, pos = x.buf, x.pos
    local have = #buf - pos + 1
    if have > 0 then
        local take = min(n, have)
        parts[#parts + 1] = sub(buf, pos, pos + take - 1)
        x.pos = pos + take
        n = n - take
    end
    while n > 0 do
        local data, rerr = read_some(x, min(n, CHUNK))
        if not data then return nil, rerr end
        parts[#parts + 1] = data
        n = n - #data
    end
    return true
end

-- A failed body or line read (not about a line's length): out of time, or the cosocket's error.
local function read_failed(x, rerr, what)
    if rerr == "deadline" then return timed_out(x) end
    return failed(x, rerr, what, true)
end

local function too_large(x, cap)
    return nil, "too_large", format("response from %s is over %d bytes", x.hp, cap)
end

-- A response header line: its name (lower-case) and value (without the spaces and tabs around
-- it), or nil when it is not `name: value` with a name of no spaces or colons and a value of no
-- CR, LF or NUL. Plain finds and byte looks: no pattern that backtracks over the value.
local function header_line(line)
    local colon = find(line, ":", 1, true)
    if not colon or colon == 1 then return nil end
    local name = sub(line, 1, colon - 1)
    local lname = RESPONSE_NAMES[name]
    if lname == nil then
        lname = not find(name, "%s") and lower(name)
        if n_response_names >= MAX_NAMES then RESPONSE_NAMES, n_response_names = {}, 0 end
        RESPONSE_NAMES[name], n_response_names = lname, n_response_names + 1
    end
    if not lname then return nil end
    local i, j = colon + 1, #line
    local b = byte(line, i)
    while b == 32 or b == 9 do
        i = i + 1
        b = byte(line, i)
    end
    b = byte(line, j)
    while j >= i and (b == 32 or b == 9) do
        j = j - 1
        b = byte(line, j)
    end
    local value = sub(line, i, j)
    if breaks_line(value) then return nil end
    return lname, value
end

-- One exchange on one socket. Returns res, or nil + kind + message + detail. Fills `st`
-- (the exchange's state, see above): `reused` (times the connection was used before), `stale`
-- (a reused connection failed before any byte came back: the server closed it while it was
-- idle), `poolable` (the response was framed completely and the connection may carry the next
-- exchange).
local function exchange(sock, req, u, t0, st)
    local total = req.timeout_ms or DEFAULT_TIMEOUT_MS
    local deadline = total > 0 and t0 + total or nil
    local cap = req.max_response_bytes or DEFAULT_MAX_BYTES
    local hp = u.hostport
    st.sock, st.req, st.deadline, st.t0, st.hp, st.buf, st.pos = sock, req, deadline, t0, hp, "", 1
    local x = st

    st.armed = min(req.connect_timeout_ms or DEFAULT_CONNECT_MS, deadline and total or NO_TIMEOUT_MS)
    sock:settimeout(st.armed)
    -- nginx parses "host:port" out of the host string, so an IPv6 literal keeps its brackets.
    local host = find(u.host, ":", 1, true) and "[" .. u.host .. "]" or u.host
    local ok, err
    if u.keepalive then
        -- (one options table for every connect: nginx reads it before connect yields)
        local o = CONNECT_OPTS
        o.pool, o.pool_size, o.backlog = u.pool, req.pool_size or DEFAULT_POOL_SIZE, req.backlog
        ok, err = sock:connect(host, u.port, o)
    else
        ok, err = sock:connect(host, u.port)
    end
    if not ok then
        if err == "timeout" then return timed_out(x) end
        if err == "too many waiting connect operations" then
            -- this worker's own pool is saturated (pool_size open, backlog waiting): busy, not
            -- a provider that cannot be reached
            return nil, "overloaded", format("too many exchanges waiting for a connection to %s (the pool "
                .. "and its backlog are full)", hp), err
        end
        return nil, "connect", format("cannot connect to %s", hp), err
    end
    st.reused = sock:getreusedtimes() or 0
    -- A pooled connection is already past its handshake (the pool name holds the scheme).
    if u.scheme == "https" and st.reused == 0 then
        if not arm(x) then return timed_out(x) end
        local session
        session, err = sock:sslhandshake(SESSIONS[u.pool], u.host, true)
        if not session then
            if err == "timeout" then return timed_out(x) end
            return nil, "tls", format("TLS failure with %s", hp), err
        end
        if type(session) ~= "boolean" then SESSIONS[u.pool] = session end
    end

    -- The request's pieces, joined once (a cosocket sends an array of strings too, but walking
    -- it cost more than the join: 8,000 more instructions per exchange, measured).
    local out, k = { u.method, " ", u.path, " HTTP/1.1\r\n" }, 4
    local has_host = false
    for name, value in pairs(req.headers or {}) do
        if lower(name) == "host" then has_host = true end
        out[k + 1], out[k + 2], out[k + 3], out[k + 4] = name, ": ", value, "\r\n"
        k = k + 4
    end
    if not has_host then
        local default = (u.scheme == "https" and u.port == 443) or (u.scheme == "http" and u.port == 80)
        out[k + 1], out[k + 2], out[k + 3] = "Host: ", default and hp:gsub(":%d+$", "") or hp, "\r\n"
        k = k + 3
    end
    out[k + 1] = u.keepalive and "Connection: keep-alive\r\n" or "Connection: close\r\n"
    k = k + 1
    local body = req.body
    if body or u.method == "POST" or u.method == "PUT" or u.method == "PATCH" then
        out[k + 1], out[k + 2], out[k + 3] = "Content-Length: ", #(body or ""), "\r\n"
        k = k + 3
    end
    out[k + 1], out[k + 2] = "\r\n", body
    local whole = concat(out)
    -- Sent in pieces of SEND_STEP, each armed with the time left: one send of a long request
    -- restarts its timer whenever the peer takes a few bytes, so a peer reading slowly could
    -- hold it. A request within one piece goes as it is (no copy cut from it).
    local one = #whole <= SEND_STEP
    for i = 1, #whole, SEND_STEP do
        if not arm(x) then return timed_out(x) end
        ok, err = sock:send(one and whole or sub(whole, i, i + SEND_STEP - 1))
        if not ok then
            st.stale = st.reused > 0 and err ~= "timeout"
            return failed(x, err, "send failed")
        end
    end

    -- Status line and headers; 1xx interim responses are skipped.
    -- One budget of MAX_HEADER_BYTES for every head, interim ones included.
    local status, headers, content_length, te, http11
    local header_bytes = 0
    repeat
        local line, rerr, got = read_line(x, MAX_HEADER_BYTES - header_bytes)
        if not line then
            st.stale = st.reused > 0 and not status and got == "" and rerr ~= "timeout" and rerr ~= "deadline"
            local head = got:sub(1, 7)
            if got ~= "" and ("HTTP/1."):sub(1, #head) ~= head then
                return bad(x, "not an HTTP response")
            end
            if rerr == "long" then
                return nil, "too_large", format("response headers from %s are over %d bytes", hp, MAX_HEADER_BYTES)
            end
            if rerr == "closed" and not status and got == "" then
                return nil, "reset", format("connection to %s closed early (empty reply)", hp), rerr
            end
            return read_failed(x, rerr, "no status line")
        end
        -- "HTTP/1.x NNN", then the end of the line or a space and the reason phrase
        local minor, code, after = match(line, "^HTTP/1%.([01]) (%d%d%d)(.?)")
        status = (after == "" or after == " ") and tonumber(code) or nil
        http11 = minor == "1"
        if not status then
            return bad(x, line:match("^HTTP/") and "bad status line" or "not an HTTP response")
        end
        if status < 100 or status > 599 or find(line, "[\r%z]") then return bad(x, "bad status line") end
        headers, content_length, te = {}, nil, nil
        header_bytes = header_bytes + #line + 2
        while true do
            line, rerr = read_line(x, MAX_HEADER_BYTES - header_bytes)
            if not line then
                if rerr == "long" then
                    return nil, "too_large", format("response headers from %s are over %d bytes", hp, MAX_HEADER_BYTES)
                end
                return read_failed(x, rerr, "in the headers")
            end
            if line == "" then break end
            header_bytes = header_bytes + #line + 2
            local name, value = header_line(line)
            if not name then return bad(x, "bad header line") end
            if name == "content-length" then
                if content_length and content_length ~= value then return bad(x, "conflicting Content-Length") end
                content_length = value
            elseif name == "transfer-encoding" then
                te = te and te .. ", " .. value or value
                value = te
            end
            headers[name] = value
        end
    until status >= 200 or status == 101

    local coding = headers["content-encoding"]
    if coding and lower(coding) ~= "identity" then
        return nil, "protocol", format("HTTP exchange with %s failed (unasked content-encoding)", hp)
    end
    local parts, size = {}, 0
    -- Keep-alive only when HTTP/1.1 says so and the server did not say `close`; the framing
    -- below must then also end exactly where the response does.
    local persistent = u.keepalive and http11 and status ~= 101
        and not find(lower(headers["connection"] or ""), "close", 1, true)
    if u.method == "HEAD" or status == 204 or status == 304 then
        st.poolable = persistent and not leftover(x)
        return { status = status, headers = headers, body = "", elapsed_ms = now_ms() - t0 }
    end
    -- Exactly "chunked" or nothing: any other transfer coding is one this client cannot undo.
    if te and lower(te) ~= "chunked" then return bad(x, "unsupported Transfer-Encoding") end
    if te then
        while true do
            local line, rerr = read_line(x, MAX_CHUNK_LINE)
            if not line then
                if rerr == "long" then return bad(x, "bad chunk size") end
                return read_failed(x, rerr, "in a chunk header")
            end
            -- chunk-size [ ";" chunk-ext ], nothing else
            local hex, rest = line:match("^(%x+)[ \t]*(.*)$")
            local n = hex and #hex <= 12 and (rest == "" or rest:sub(1, 1) == ";") and tonumber(hex, 16)
            if not n then return bad(x, "bad chunk size") end
            if n == 0 then
                repeat  -- trailers, up to the empty line; they count against max_response_bytes
                    line, rerr = read_line(x, cap - size + 1)
                    if not line then
                        if rerr == "long" then return too_large(x, cap) end
                        return read_failed(x, rerr, "in the trailers")
                    end
                    size = size + #line
                    if size > cap then return too_large(x, cap) end
                until line == ""
                st.poolable = persistent and not leftover(x)
                break
            end
            size = size + n
            if size > cap then return too_large(x, cap) end
            ok, err = read_exact(x, n, parts)
            if not ok then return read_failed(x, err, "in a chunk") end
            local crlf
            if #x.buf - x.pos + 1 >= 2 then
                crlf = sub(x.buf, x.pos, x.pos + 1)
                x.pos = x.pos + 2
            else
                local two = {}
                ok, err = read_exact(x, 2, two)
                if not ok then return read_failed(x, err, "after a chunk") end
                crlf = concat(two)
            end
            if crlf ~= "\r\n" then
                return nil, "protocol", format("HTTP exchange with %s failed (bad chunk end)", hp)
            end
        end
    elseif content_length then
        local n = #content_length <= 15 and tonumber(content_length:match("^%d+$"))
        if not n then return bad(x, "bad Content-Length") end
        if n > cap then return too_large(x, cap) end
        ok, err = read_exact(x, n, parts)
        if not ok then return read_failed(x, err, "in the body") end
        st.poolable = persistent and not leftover(x)
    else
        local data = sub(x.buf, x.pos)
        x.buf, x.pos = "", 1
        while true do  -- the body runs until the server closes
            if #data > 0 then
                size = size + #data
                if size > cap then return too_large(x, cap) end
                parts[#parts + 1] = data
            end
            data, err = read_some(x, CHUNK)
            if err == "closed" then break end
            if not data then return read_failed(x, err, "in the body") end
        end
    end
    return { status = status, headers = headers, body = #parts == 1 and parts[1] or concat(parts),
        elapsed_ms = now_ms() - t0 }
end

-- `level` is the caller to blame for misuse, counted from `check`.
local function request(req, level)
    local u = check(req, level)
    local t0 = now_ms()
    local res, kind, message, detail
    -- A second try only when a pooled connection turned out to be closed by the server.
    for _ = 1, 2 do
        local sock = ngx.socket.tcp()
        local st = { reused = 0 }
        res, kind, message, detail = exchange(sock, req, u, t0, st)
        if res then
            res.reused, res.pooled = st.reused, false
            -- TLS 1.3 tickets arrive after the handshake, with the first read: the session worth
            -- keeping is the one the connection holds now (on a handshaken connection
            -- sslhandshake only returns it).
            if u.scheme == "https" and st.reused == 0 then
                local session = sock:sslhandshake(nil, u.host, true)
                if session and type(session) ~= "boolean" then SESSIONS[u.pool] = session end
            end
            if st.poolable then
                res.pooled = sock:setkeepalive(req.keepalive_timeout_ms or DEFAULT_IDLE_MS,
                    req.pool_size or DEFAULT_POOL_SIZE) == 1
            end
            if not res.pooled then sock:close() end
            return res
        end
        sock:close()
        if not st.stale then break end
    end
    return nil, errors.new("transport", kind, message, { detail = detail, elapsed_ms = now_ms() - t0 })
end

--- Run one HTTP exchange on a cosocket; yields to nginx while it waits.
-- @tparam table req the request (see the module description)
-- @treturn[1] table res `{ status, headers, body, elapsed_ms }`
-- @return[2] nil
-- @treturn[2] table err `{ category = "transport", kind, message, detail, elapsed_ms }`
-- @raise on misuse: not a table, unknown field, wrong type, URL not http(s), `ca_file`
-- @usage local res, err = openresty.request{ url = "http://127.0.0.1:8080/ok", timeout_ms = 5000 }
function _M.request(req)
    local res, err = request(req, 4)
    return res, err
end

--- Run many HTTP exchanges concurrently (light threads, `ngx.thread.spawn`) and wait for all.
-- Every request is checked before any is sent.
-- @tparam {table,...} reqs array of requests
-- @tparam[opt] table opts `{ max_parallel = 16 }` (integer 1..1024)
-- @treturn {table,...} results, same length and order as `reqs`; `results[i]` is a res
--   table or an err (`core.error_fields(results[i]) ~= nil`)
-- @raise on misuse in any request or in `opts`
-- @usage local results = openresty.request_many({ { url = a }, { url = b } }, { max_parallel = 4 })
function _M.request_many(reqs, opts)
    if type(reqs) ~= "table" then error("openresty transport: reqs must be an array of requests", 2) end
    local par = 16
    if opts ~= nil then
        if type(opts) ~= "table" then error("openresty transport: opts must be a table", 2) end
        for k in pairs(opts) do
            if k ~= "max_parallel" then error("openresty transport: unknown option " .. tostring(k), 2) end
        end
        par = opts.max_parallel or par
        if type(par) ~= "number" or par ~= floor(par) or par < 1 or par > 1024 then
            error("openresty transport: max_parallel must be an integer in 1..1024", 2)
        end
    end
    local n = #reqs
    for i = 1, n do check(reqs[i], 3) end
    local results, next_i = {}, 1
    local function worker()
        while next_i <= n do
            local i = next_i
            next_i = i + 1
            local res, err = request(reqs[i], 3)
            results[i] = res or err
        end
    end
    local threads = {}
    for t = 1, min(par, n) do threads[t] = ngx.thread.spawn(worker) end
    for t = 1, #threads do
        local ok, err = ngx.thread.wait(threads[t])
        if not ok then error(err, 0) end
    end
    return results
end

return _M
