--- The stand-in model server: OpenAI Chat Completions and Anthropic Messages over HTTP/1.1 on
-- 127.0.0.1, answering with `jsoncontract.standin.conversation`. One process, many connections at once:
-- one coroutine per connection, non-blocking luasocket sockets and `socket.select`; the answer
-- delay is a timer in the scheduler, never a blocking sleep. A test double: it uses lua-cjson for
-- the wire JSON, not the product's parser.
-- @module jsoncontract.standin.server

local socket = require "socket"
local cjson = require "cjson"
local conversation = require "jsoncontract.standin.conversation"
local stext = require "jsoncontract.standin.text"
local wire_in = require "jsoncontract.standin.wire"

local gettime, select_ = socket.gettime, socket.select
local create, resume, yield, status, running =
    coroutine.create, coroutine.resume, coroutine.yield, coroutine.status, coroutine.running
local find, sub, lower, format, match = string.find, string.sub, string.lower, string.format, string.match
local pairs, ipairs, type, tonumber, tostring, pcall = pairs, ipairs, type, tonumber, tostring, pcall

local _M = { _VERSION = "0.1.0" }

_M.MAX_HEADER_BYTES = 64 * 1024      -- request line + headers
_M.MAX_BODY_BYTES = 4 * 1024 * 1024  -- Content-Length above this: 413
_M.IDLE_SECONDS = 30                 -- keep-alive connection closed after this long idle
_M.IO_SECONDS = 30                   -- a started request must arrive within this

local EMPTY_ARRAY = "__standin_empty_array__"

local REASONS = {
    [200] = "OK", [400] = "Bad Request", [404] = "Not Found", [405] = "Method Not Allowed",
    [411] = "Length Required", [413] = "Payload Too Large", [429] = "Too Many Requests",
    [431] = "Request Header Fields Too Large", [500] = "Internal Server Error",
    [503] = "Service Unavailable", [529] = "Overloaded",
}
local ERROR_TYPES = {
    [400] = { "invalid_request_error", "invalid_request_error" },
    [404] = { "not_found_error", "invalid_request_error" },
    [405] = { "invalid_request_error", "invalid_request_error" },
    [411] = { "invalid_request_error", "invalid_request_error" },
    [413] = { "request_too_large", "invalid_request_error" },
    [429] = { "rate_limit_error", "rate_limit_exceeded" },
    [500] = { "api_error", "server_error" },
    [503] = { "api_error", "server_error" },
    [529] = { "overloaded_error", "server_error" },
}

------------------------------------------------------------------------------
-- Scheduler
------------------------------------------------------------------------------

local function new_sched()
    return { readers = {}, writers = {}, rco = {}, wco = {}, timers = {}, stop = false }
end

local function list_remove(list, x)
    for i = #list, 1, -1 do
        if list[i] == x then table.remove(list, i) end
    end
end

-- Park the running coroutine until `sock` is readable/writable or `deadline` passes.
-- Returns "ready" or "timeout".
local function wait_io(sched, sock, mode, deadline)
    local co = running()
    local list, map = sched.readers, sched.rco
    if mode == "w" then list, map = sched.writers, sched.wco end
    list[#list + 1] = sock
    map[sock] = co
    local timer
    if deadline then
        timer = { at = deadline, co = co }
        sched.timers[timer] = true
    end
    local why = yield()
    list_remove(list, sock)
    map[sock] = nil
    if timer then sched.timers[timer] = nil end
    return why
end

local function sleep(sched, seconds)
    local timer = { at = gettime() + seconds, co = running() }
    sched.timers[timer] = true
    yield()
    sched.timers[timer] = nil
end

local function spawn(fn, ...)
    local co = create(fn)
    local ok, err = resume(co, ...)
    if not ok then io.stderr:write("standin: ", tostring(err), "\n") end
    return co
end

local function wake(co, why)
    if co and status(co) == "suspended" then
        local ok, err = resume(co, why)
        if not ok then io.stderr:write("standin: ", tostring(err), "\n") end
    end
end

------------------------------------------------------------------------------
-- Connection I/O
------------------------------------------------------------------------------

-- Reader over a non-blocking socket with its own buffer.
local function new_conn(sched, sock)
    return { sched = sched, sock = sock, buf = "", closed = false }
end

-- Fill the buffer with whatever is available, waiting until `deadline`. Returns true, or nil, err.
local function fill(c, deadline)
    while true do
        local data, err, partial = c.sock:receive(8192)
        local got = data or partial
        if got and got ~= "" then
            c.buf = c.buf .. got
            return true
        end
        if err == "closed" then return nil, "closed" end
        if err ~= "timeout" and err ~= "wantread" then return nil, err or "closed" end
        if wait_io(c.sched, c.sock, "r", deadline) == "timeout" then return nil, "timeout" end
    end
end

local function send_all(c, data)
    local i = 1
    local deadline = gettime() + _M.IO_SECONDS
    while i <= #data do
        local last, err, partial = c.sock:send(data, i)
        if last then
            i = last + 1
        else
            if err ~= "timeout" and err ~= "wantwrite" then return nil, err end
            i = (partial or i - 1) + 1
            if i <= #data and wait_io(c.sched, c.sock, "w", deadline) == "timeout" then
                return nil, "timeout"
            end
        end
    end
    return true
end

------------------------------------------------------------------------------
-- HTTP
------------------------------------------------------------------------------

local function respond(c, code, body, keep, extra)
    local head = {
        format("HTTP/1.1 %d %s", code, REASONS[code] or "Status"),
        "Content-Type: application/json",
        "Content-Length: " .. #body,
        keep and "Connection: keep-alive" or "Connection: close",
    }
    for k, v in pairs(extra or {}) do head[#head + 1] = k .. ": " .. v end
    return send_all(c, table.concat(head, "\r\n") .. "\r\n\r\n" .. body)
end

local function error_body(wire, code, message)
    local t = ERROR_TYPES[code] or ERROR_TYPES[400]
    if wire == "anthropic" then
        return cjson.encode({ type = "error", error = { type = t[1], message = message } })
    end
    return cjson.encode({ error = { message = message, type = t[2], param = cjson.null, code = cjson.null } })
end

-- Read one request. Returns req {method, path, version, headers, body} or nil, status, message
-- (status nil: the peer went away or stayed idle; close silently).
local function read_request(c)
    local deadline = gettime() + _M.IDLE_SECONDS
    local head_end
    while true do
        head_end = find(c.buf, "\r\n\r\n", 1, true)
        if head_end then break end
        if #c.buf > _M.MAX_HEADER_BYTES then return nil, 431, "request headers exceed 65536 bytes" end
        local ok = fill(c, deadline)
        if not ok then return nil end
        deadline = gettime() + _M.IO_SECONDS
    end
    if head_end - 1 > _M.MAX_HEADER_BYTES then return nil, 431, "request headers exceed 65536 bytes" end
    local head = sub(c.buf, 1, head_end - 1)
    c.buf = sub(c.buf, head_end + 4)
    local method, target, version = match(head, "^(%u+) (%S+) HTTP/(%d%.%d)\r?\n?")
    if not method then return nil, 400, "malformed request line" end
    local headers = {}
    local first_line = true
    for line in (head .. "\r\n"):gmatch("(.-)\r\n") do
        if first_line then
            first_line = false
        else
            local k, v = match(line, "^([^:%s]+):%s*(.-)%s*$")
            if not k then return nil, 400, "malformed header line" end
            headers[lower(k)] = v
        end
    end
    local req = { method = method, path = match(target, "^[^?#]*"), version = version, headers = headers }
    if headers["transfer-encoding"] then
        return nil, 411, "chunked request bodies are not supported; send Content-Length"
    end
    local len = 0
    if headers["content-length"] then
        len = tonumber(match(headers["content-length"], "^%d+$") or "")
        if not len then return nil, 400, "bad Content-Length" end
    end
    if len > _M.MAX_BODY_BYTES then return nil, 413, "request body exceeds " .. _M.MAX_BODY_BYTES .. " bytes" end
    while #c.buf < len do
        local ok = fill(c, gettime() + _M.IO_SECONDS)
        if not ok then return nil end
    end
    req.body = sub(c.buf, 1, len)
    c.buf = sub(c.buf, len + 1)
    return req
end

------------------------------------------------------------------------------
-- Answers in each wire format
------------------------------------------------------------------------------

local function openai_reply(st, body, ans, request)
    st.ids = st.ids + 1
    local refused = ans.kind == "refusal"
    local text = ans.text
    local out_tokens = stext.tokens(refused and conversation.REFUSAL_TEXT or text)
    local in_tokens = wire_in.input_tokens(request)
    return {
        id = format("chatcmpl-standin%06d", st.ids), object = "chat.completion", created = os.time(),
        model = type(body.model) == "string" and body.model or "standin-1",
        choices = { {
            index = 0,
            message = {
                role = "assistant",
                content = refused and cjson.null or text,
                refusal = refused and conversation.REFUSAL_TEXT or cjson.null,
            },
            logprobs = cjson.null,
            finish_reason = ans.kind == "truncated" and "length" or "stop",
        } },
        usage = { prompt_tokens = in_tokens, completion_tokens = out_tokens, total_tokens = in_tokens + out_tokens },
    }
end

local function anthropic_reply(st, body, ans, request)
    st.ids = st.ids + 1
    local content, stop
    if ans.kind == "refusal" then
        stop = "refusal"
        content = EMPTY_ARRAY
    else
        content = { { type = "text", text = ans.text or "" } }
        stop = ans.kind == "truncated" and "max_tokens" or "end_turn"
    end
    return {
        id = format("msg_standin%06d", st.ids), type = "message", role = "assistant",
        model = type(body.model) == "string" and body.model or "standin-1",
        content = content, stop_reason = stop, stop_sequence = cjson.null,
        usage = {
            input_tokens = wire_in.input_tokens(request),
            output_tokens = ans.text and stext.tokens(ans.text) or 5,
        },
    }
end

-- Debian's lua-cjson has no array marker: encode an empty list through a placeholder.
local function encode(t)
    local s = cjson.encode(t)
    return (s:gsub('"' .. EMPTY_ARRAY .. '"', "[]"))
end

local ROUTES = {
    ["/v1/chat/completions"] = { wire = "openai", from = wire_in.from_openai, reply = openai_reply },
    ["/chat/completions"] = { wire = "openai", from = wire_in.from_openai, reply = openai_reply },
    ["/v1/messages"] = { wire = "anthropic", from = wire_in.from_anthropic, reply = anthropic_reply },
}

-- Returns status, body, extra headers, shutdown?, seconds to wait before answering. The wait
-- is the caller's, outside its pcall: PUC Lua 5.1 cannot yield across one.
local function handle(st, req)
    if req.path == "/health" and req.method == "GET" then
        return 200, '{"ok":true}'
    end
    -- Connections accepted so far: how a client's keep-alive pool shows from this side.
    if req.path == "/stats" and req.method == "GET" then
        return 200, format('{"accepted":%d,"served":%d,"open":%d}', st.accepted, st.served, st.open)
    end
    if req.path == "/shutdown" and req.method == "POST" then
        return 200, '{"ok":true}', nil, true
    end
    local route = ROUTES[req.path]
    if not route then
        return 404, error_body("openai", 404, "no route for " .. req.method .. " " .. req.path)
    end
    if req.method ~= "POST" then
        return 405, error_body(route.wire, 405, "use POST for " .. req.path)
    end
    local ok, body = pcall(cjson.decode, req.body)
    if not ok or type(body) ~= "table" then
        return 400, error_body(route.wire, 400, "request body is not a JSON object")
    end
    if type(body.messages) ~= "table" then
        return 400, error_body(route.wire, 400, "messages: field required")
    end
    local request = route.from(body)
    local ok2, ans = pcall(conversation.answer, request, { seed = st.seed })
    if not ok2 then
        return 500, error_body(route.wire, 500, "stand-in model failed: " .. tostring(ans))
    end
    -- "[[status NNN]]" in the mail: reply with that HTTP error (transport specs).
    local code = tonumber(match(ans.mail or "", "%[%[status (%d%d%d)%]%]") or "")
    if code and code >= 400 then
        return code, error_body(route.wire, code, "stand-in error " .. code .. " as requested"),
            (code == 429 or code == 503 or code == 529) and { ["Retry-After"] = "1" } or nil
    end
    if st.log then
        st.log:write(cjson.encode({ gettime(), ans.mail or "" }), "\n")
        st.log:flush()
    end
    local delay = st.latency and st.latency() or st.delay
    return 200, encode(route.reply(st, body, ans, request)), nil, nil, delay
end

local function serve_conn(st, sock)
    local c = new_conn(st.sched, sock)
    while not st.sched.stop do
        local req, code, message = read_request(c)
        if not req then
            if code then respond(c, code, error_body("openai", code, message), false) end
            break
        end
        local keep = req.version == "1.1"
        local conn_h = lower(req.headers["connection"] or "")
        if find(conn_h, "close", 1, true) then keep = false end
        if find(conn_h, "keep-alive", 1, true) then keep = true end
        local ok, status_, body, extra, shutdown, delay = pcall(handle, st, req)
        if not ok then
            status_, body, extra = 500, error_body("openai", 500, "internal error: " .. tostring(status_)), nil
        elseif delay and delay > 0 then
            sleep(st.sched, delay)
        end
        st.served = st.served + 1
        local max = st.max_requests and st.served >= st.max_requests
        if shutdown or max then keep = false end
        if not respond(c, status_, body, keep, extra) then break end
        if shutdown or max then st.sched.stop = true end
        if not keep then break end
    end
    sock:close()
    st.open = st.open - 1
end

-- Open connections at most (select's descriptor sets hold 1024).
local MAX_OPEN = 900

--- A latency draw from a spec: `heavy` (= `lognormal:300:0.5:0.05:3000:5000`) or
-- `lognormal:MEDIAN_MS:SIGMA:TAIL_SHARE:TAIL_MIN_MS:TAIL_MAX_MS`: a lognormal with that median
-- and sigma, except a TAIL_SHARE of replies that take uniformly TAIL_MIN..TAIL_MAX ms (as real
-- APIs do now and then).
-- @tparam string spec
-- @tparam[opt] function rand math.random-like, default math.random
-- @treturn[1] function() -> seconds
-- @treturn[1] number the distribution's mean, seconds
-- @return[2] nil
-- @treturn[2] string why the spec is not understood
function _M.latency(spec, rand)
    rand = rand or math.random
    if spec == "heavy" then spec = "lognormal:300:0.5:0.05:3000:5000" end
    local med, sigma, share, tmin, tmax = match(spec or "",
        "^lognormal:([%d.]+):([%d.]+):([%d.]+):([%d.]+):([%d.]+)$")
    med, sigma, share, tmin, tmax = tonumber(med), tonumber(sigma), tonumber(share), tonumber(tmin), tonumber(tmax)
    if not (med and sigma and share and tmin and tmax) or share > 1 or tmin > tmax then
        return nil, "latency must be 'heavy' or lognormal:MEDIAN_MS:SIGMA:TAIL_SHARE:TAIL_MIN_MS:TAIL_MAX_MS"
    end
    local mean = ((1 - share) * med * math.exp(sigma * sigma / 2) + share * (tmin + tmax) / 2) / 1000
    return function()
        if rand() < share then return (tmin + rand() * (tmax - tmin)) / 1000 end
        -- Box-Muller: one standard normal draw
        local u1, u2 = rand(), rand()
        if u1 < 1e-12 then u1 = 1e-12 end
        local z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        return med * math.exp(sigma * z) / 1000
    end, mean
end

-- The parent's pid from /proc (Linux); nil elsewhere.
local function parent_pid()
    local f = io.open("/proc/self/stat", "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return tonumber(match(s or "", "%) %a (%d+)"))
end

--- Run the stand-in server until shutdown (blocks the caller; serves many clients at once).
-- @tparam[opt] table opts
--   `host` (string, default "127.0.0.1"), `port` (integer, 0 = any free port, default 0),
--   `seed` (integer, default 1), `delay_ms` (number, milliseconds added to every model answer,
--   default 0), `max_seconds` (number or nil: stop after this long), `max_requests` (integer
--   or nil: stop after answering this many requests), `idle_seconds` (number or nil: stop after
--   this long with no connection open and none accepted, so a server whose client died
--   does not linger), `on_ready` (function(port) called once
--   the socket listens), `examples_dir` (string or nil: the folder whose <name>_standin.lua
--   files teach the model the example contracts; see
--   `jsoncontract.standin.conversation.load_examples`), `latency` (string spec for `latency`: each answer
--   waits a draw instead of `delay_ms`), `exit_with_parent` (boolean: stop once the parent process is
--   gone, checked twice a second; Linux /proc), `log` (file path: one line per model request, the
--   JSON array `[seconds since the epoch, the mail asked about]`)
-- @treturn[1] table stats {served = integer requests answered}
-- @return[2] nil
-- @treturn[2] string why the socket could not be opened
-- @raise on a bad option type
-- @usage server.run{ port = 0, on_ready = function(port) print("listening 127.0.0.1:" .. port) end }
function _M.run(opts)
    opts = opts or {}
    if type(opts) ~= "table" then error("opts must be a table", 2) end
    for _, k in ipairs({ "port", "seed", "delay_ms", "max_seconds", "max_requests", "idle_seconds" }) do
        if opts[k] ~= nil and type(opts[k]) ~= "number" then error(k .. " must be a number", 2) end
    end
    if opts.on_ready ~= nil and type(opts.on_ready) ~= "function" then error("on_ready must be a function", 2) end
    if opts.examples_dir ~= nil then
        if type(opts.examples_dir) ~= "string" then error("examples_dir must be a string", 2) end
        conversation.load_examples(opts.examples_dir)
    end
    local host = opts.host or "127.0.0.1"
    local server, err = socket.bind(host, opts.port or 0, 128)
    if not server then return nil, err end
    server:settimeout(0)
    local _, port = server:getsockname()
    port = tonumber(port)
    local sched = new_sched()
    local st = {
        sched = sched, seed = opts.seed or 1, delay = (opts.delay_ms or 0) / 1000, ids = 0,
        served = 0, open = 0, accepted = 0, max_requests = opts.max_requests,
    }
    if opts.latency then
        local draw, lerr = _M.latency(opts.latency)
        if not draw then server:close() return nil, lerr end
        st.latency = draw
    end
    if opts.log then
        local lf, lerr = io.open(opts.log, "ab")
        if not lf then server:close() return nil, lerr end
        st.log = lf
    end
    -- --exit-with-parent: leave once the process that started us is gone (even after its kill -9,
    -- when no one says /shutdown): we are re-parented, so our parent pid changes.
    local ppid = opts.exit_with_parent and parent_pid() or nil
    local next_parent_check = 0
    local stop_at = opts.max_seconds and gettime() + opts.max_seconds or nil
    local last_accept = gettime()
    if opts.on_ready then opts.on_ready(port) end

    while not sched.stop do
        local now = gettime()
        if stop_at and now >= stop_at then break end
        if ppid and now >= next_parent_check then
            next_parent_check = now + 0.5
            if parent_pid() ~= ppid then break end
        end
        if opts.idle_seconds and st.open == 0 and now - last_accept >= opts.idle_seconds then break end
        local timeout = ppid and 0.5 or 1
        for t in pairs(sched.timers) do
            if t.at - now < timeout then timeout = t.at - now end
        end
        if stop_at and stop_at - now < timeout then timeout = stop_at - now end
        if timeout < 0 then timeout = 0 end
        -- select() handles at most FD_SETSIZE (1024) descriptors: beyond MAX_OPEN
        -- connections, new ones wait in the listen backlog instead of crashing select.
        local readers = st.open < MAX_OPEN and { server } or {}
        for _, s in ipairs(sched.readers) do readers[#readers + 1] = s end
        local r, w = select_(readers, sched.writers, timeout)
        for _, s in ipairs(r or {}) do
            if s == server then
                for _ = 1, 64 do
                    if st.open >= MAX_OPEN then break end
                    local client = server:accept()
                    if not client then break end
                    last_accept = gettime()
                    client:settimeout(0)
                    client:setoption("tcp-nodelay", true)
                    st.open = st.open + 1
                    st.accepted = st.accepted + 1
                    spawn(serve_conn, st, client)
                end
            else
                wake(sched.rco[s], "ready")
            end
        end
        for _, s in ipairs(w or {}) do wake(sched.wco[s], "ready") end
        now = gettime()
        local due = {}
        for t in pairs(sched.timers) do
            if t.at <= now then due[#due + 1] = t end
        end
        table.sort(due, function(a, b) return a.at < b.at end)
        for _, t in ipairs(due) do
            if sched.timers[t] then
                sched.timers[t] = nil
                wake(t.co, "timeout")
            end
        end
    end
    sched.stop = true
    if st.log then st.log:close() end
    server:close()
    for _, s in ipairs(sched.readers) do pcall(s.close, s) end
    for _, s in ipairs(sched.writers) do pcall(s.close, s) end
    return { served = st.served }
end

return _M
