--- A small HTTP/1.1 server that misbehaves on purpose: the one fault server of the transport
-- specs and of `jsoncontract selftest`.
--
-- Usage: `require("jsoncontract.standin.faults").serve(lifetime_seconds)`, or from a shell
-- `jsoncontract _fault-server [lifetime_seconds]` (what the specs and selftest start).
--
-- Binds 127.0.0.1 on a free port, prints "PORT <n>" as its first stdout line,
-- then serves connections concurrently (one coroutine each, driven by
-- socket.select) until GET /quit or until the lifetime (default 120 s) ends.
-- Every response closes its connection. Runs on Lua 5.1-5.4 and LuaJIT
-- with luasocket.
--
-- Paths:
--   /ok               200 application/json {"ok":true}
--   /status/<n>       status n with a small JSON body; 429 adds Retry-After: 2
--   /redirect         302 to http://127.0.0.1:<this port>/steal
--   /steal            counts a hit (it must never get one), 200
--   /stats            {"steal":<hits>}
--   /slow?n=N         Content-Length N (default 50), then one byte every 200 ms
--   /big              20 MB body with Content-Length
--   /bigstream        20 MB body without Content-Length (ends at close)
--   /reset            Content-Length 100, sends 50 bytes, closes
--   /rst              headers and half the body, then a TCP RST (linger 0)
--   /html             200 text/html
--   /hugeheader       200 with one 200 KB header line (over libcurl's 100 KB limit)
--   /gzip             Content-Encoding: gzip of {"ok":true}
--   /delay?ms=N       waits N ms, then 200 {"delayed":N}
--   /echo             the request method, path, headers and body as JSON
--   /quit             200, then the server stops
--   /f/<id>/<s1>+<s2>+.../<anything>
--                     provider-shaped faults for the attempt loop (spec/faults_spec.lua):
--                     the n-th request for <id> gets scenario s_n (the last one repeats);
--                     scenarios: ok (an OpenAI chat envelope with {"label":"bug"}), gzip (the
--                     same, gzip-encoded), r429 (Retry-After: 1), quota (429
--                     insufficient_quota), s500, s502, s503, s529 (Anthropic overloaded),
--                     html (200 text/html), redirect (302 to http://localhost:<port>/steal),
--                     auth401 (401 whose message echoes the auth headers), reset (half the
--                     body, then close), rst (TCP reset mid-body), slow (drip, 200 ms a byte),
--                     big (20 MB), deep (content nested 1000 levels), sse (an OpenAI chat stream),
--                     ssecut (the same without its
--                     finish chunk and [DONE])
--   /hits/<id>        {"hits":<requests seen for /f/<id>/...>}
--   /keyecho/<id>/... a hostile provider (spec/secrets_hostile_spec.lua): reads the key from
--                     the Authorization header and echoes it in every spelling it can, one
--                     form per request for <id>, in turn: in an accepted ticket's summary
--                     (plain, \u escapes, mixed, escapes inside the envelope's string,
--                     percent-encoded, escapes of escapes), as an object key, as an enum
--                     value, in a refusal, in a 401 message, in a redirect's Location (user
--                     info, query), in a header and a 429 whose Retry-After is over the cap,
--                     and in a 500 body
--   /keyecho64/<id>/... the same for the spellings a decoder of base64 or of two string
--                     literals gives back (spec/secrets_encoded_spec.lua): in turn, the key in
--                     base64 at each of the 3 alignments, standard and URL-safe alphabets, with
--                     and without padding; `user:key` as Basic auth carries it (three users);
--                     the key split across two adjacent string literals (`"a" "b"`, `"a" + "b"`,
--                     an array `["a","b"]` under an extra key, a refusal); and a 401 that
--                     quotes the request's Basic auth
-- A connection whose first byte is 0x16 (a TLS ClientHello) gets a plain
-- "400 Bad Request", as real HTTP servers answer TLS on a plain port.
-- @module jsoncontract.standin.faults
local socket = require "socket"
local mime = require "mime"

local _M = {}
local GZIP_OK = mime.unb64("H4sIAAAAAAAAA6tWys9WsiopKk2tBQCQX9SnCwAAAA==")
local STATUS_TEXT = {
    [200] = "OK", [302] = "Found", [400] = "Bad Request", [404] = "Not Found",
    [429] = "Too Many Requests", [500] = "Internal Server Error", [401] = "Unauthorized",
    [502] = "Bad Gateway", [503] = "Service Unavailable", [529] = "Overloaded",
}
-- An OpenAI chat envelope whose content is {"label":"bug"}, plain and gzip-encoded.
local OK_ENVELOPE = '{"id":"chatcmpl-ok","object":"chat.completion","model":"fault-model","choices":'
    .. '[{"index":0,"message":{"role":"assistant","content":"{\\"label\\":\\"bug\\"}","refusal":null},'
    .. '"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}'
local GZIP_ENVELOPE = mime.unb64("H4sIAAAAAAACAz2O0QrCMAxF/+U+TxHEl/6KE+m6bKvWZiwpCKP/bobOp5CcG+5ZEXs4"
    .. "hMlreM3pwE804O5BQX/nY2"
    .. "ADpJGzoRf3lIwMviQ9fLfGchwDCdx1Rcw9veFOliURPxLcioWTTXiRKOqzbj+clfLWsrZIvqPUwrXoytiiGl9oKOKt"
    .. "K5eUaoMh5ijTfSEvZuIgyjPqrUHZS+bFTPWu/KRsLpetY1f/X8+1fgCgRP4B9AAAAA==")
local SSE_CHUNKS = {
    '{"id":"c1","model":"fault-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},'
        .. '"finish_reason":null}]}',
    '{"id":"c1","model":"fault-model","choices":[{"index":0,"delta":{"content":"{\\"label\\":"},'
        .. '"finish_reason":null}]}',
    '{"id":"c1","model":"fault-model","choices":[{"index":0,"delta":{"content":"\\"bug\\"}"},'
        .. '"finish_reason":null}]}',
    '{"id":"c1","model":"fault-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
        .. '"usage":{"prompt_tokens":5,"completion_tokens":3}}',
    '[DONE]',
}
--- Serve until GET /quit or until `lifetime` seconds have passed.
-- @tparam[opt=120] number lifetime seconds
-- @treturn integer 0 (an exit status)
function _M.serve(lifetime)
    lifetime = tonumber(lifetime) or 120
    local fault_hits = {}

    local server = assert(socket.bind("127.0.0.1", 0))
    server:settimeout(0)
    local _, port = server:getsockname()
    io.stdout:write("PORT ", port, "\n")
    io.stdout:flush()

    local deadline = socket.gettime() + lifetime
    local stopping = false
    local steal_hits = 0

    -- Scheduler state: coroutines waiting to read, to write, or sleeping.
    local want_read, want_write, sleepers = {}, {}, {}

    local function wait_read(sock) want_read[sock] = coroutine.running(); coroutine.yield() end
    local function wait_write(sock) want_write[sock] = coroutine.running(); coroutine.yield() end
    local function sleep(seconds)
        sleepers[coroutine.running()] = socket.gettime() + seconds
        coroutine.yield()
    end

    -- Send all of 'data'; returns false when the peer went away.
    local function send_all(sock, data)
        local i = 1
        while i <= #data do
            local last, err, partial = sock:send(data, i)
            if last then
                i = last + 1
            elseif err == "timeout" then
                i = (partial or (i - 1)) + 1
                wait_write(sock)
            else
                return false
            end
        end
        return true
    end

    -- A buffered reader over a non-blocking socket.
    local function reader(sock)
        local buf, closed = "", false
        local r = {}
        local function fill()
            local data, err, partial = sock:receive(8192)
            local chunk = data or partial or ""
            if chunk ~= "" then buf = buf .. chunk return true end
            if err == "closed" then closed = true return false end
            wait_read(sock)
            return true
        end
        function r.peek_byte()
            while buf == "" do if not fill() then return nil end end
            return buf:byte(1)
        end
        function r.line()
            while true do
                local i = buf:find("\n", 1, true)
                if i then
                    local l = buf:sub(1, i - 1):gsub("\r$", "")
                    buf = buf:sub(i + 1)
                    return l
                end
                if closed or not fill() then return nil end
            end
        end
        function r.bytes(n)
            while #buf < n do if closed or not fill() then return nil end end
            local s = buf:sub(1, n)
            buf = buf:sub(n + 1)
            return s
        end
        return r
    end

    local function json_string(s)
        return '"' .. s:gsub('[%c"\\]', function(c)
            if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
            return string.format("\\u%04x", c:byte())
        end) .. '"'
    end

    local function response(status, headers, body)
        local out = { string.format("HTTP/1.1 %d %s\r\n", status, STATUS_TEXT[status] or "Status") }
        for _, h in ipairs(headers) do out[#out + 1] = h[1] .. ": " .. h[2] .. "\r\n" end
        if body then out[#out + 1] = "Content-Length: " .. #body .. "\r\n" end
        out[#out + 1] = "Connection: close\r\n\r\n"
        out[#out + 1] = body or ""
        return table.concat(out)
    end

    local JSON = { { "Content-Type", "application/json" } }

    -- The hostile provider's forms (see /keyecho): each returns status, headers, body.
    local function u_all(s) return (s:gsub(".", function(c) return string.format("\\u%04x", c:byte()) end)) end
    local function u_mixed(s)
        local i = 0
        return (s:gsub(".", function(c)
            i = i + 1
            if i % 2 == 0 then return string.format("\\u%04X", c:byte()) end
            return c
        end))
    end
    local function pct(s) return (s:gsub(".", function(c) return string.format("%%%02X", c:byte()) end)) end
    local function envelope(content_json_string, refusal)
        return '{"id":"chatcmpl-echo","object":"chat.completion","model":"echo-model","choices":[{"index":0,'
            .. '"message":{"role":"assistant","content":' .. content_json_string .. ',"refusal":'
            .. (refusal or "null") .. '},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}'
    end
    local function ticket(summary_inner, intent_inner, extra_key_inner)
        return '{"intent":"' .. (intent_inner or "other") .. '","order_id":null,"urgent":false,"summary":"Echo '
            .. summary_inner .. '"' .. (extra_key_inner and (',"' .. extra_key_inner .. '":1') or "") .. '}'
    end
    local KEYECHO_FORMS = {
        function(key) return 200, JSON, envelope(json_string(ticket(key))) end,
        function(key) return 200, JSON, envelope(json_string(ticket(u_all(key)))) end,
        function(key) return 200, JSON, envelope(json_string(ticket(u_mixed(key)))) end,
        -- escapes at the envelope level: the content decodes to the plain key
        function(key) return 200, JSON, envelope('"' .. u_all(ticket(key)) .. '"') end,
        function(key) return 200, JSON, envelope(json_string(ticket(pct(key)))) end,
        function(key) return 200, JSON, envelope(json_string(ticket(json_string(u_all(key)):sub(2, -2)))) end,
        function(key) return 200, JSON, envelope(json_string(ticket("x", nil, u_all(key)))) end,
        function(key) return 200, JSON, envelope(json_string(ticket("x", u_mixed(key)))) end,
        function(key) return 200, JSON, envelope("null", json_string("I will not answer " .. key)) end,
        function(key)
            return 401, JSON, '{"error":{"message":"Incorrect API key provided: ' .. u_all(key)
                .. '","type":"invalid_request_error","code":"invalid_api_key"}}'
        end,
        function(key)
            return 302, { { "Location", "http://user:" .. pct(key) .. "@127.0.0.1:" .. port .. "/steal?api_key="
                .. pct(key) .. "&note=" .. pct(u_all(key)) } }, ""
        end,
        function(key)
            return 429, { { "Content-Type", "application/json" }, { "Retry-After", "86400" }, { "X-Echo", key } },
                '{"error":{"message":"Rate limit for key ' .. u_mixed(key) .. '","type":"requests"}}'
        end,
        function(key)
            return 500, JSON, '{"error":{"message":"server failure for ' .. pct(u_all(key))
                .. '","type":"server_error"}}'
        end,
    }

    -- /keyecho64: base64 (luasocket's mime, an encoder independent of the one that redacts) at
    -- alignment `a` (the key after `a` other bytes), URL-safe and unpadded on request.
    local function b64(s, url, pad)
        local e = mime.b64(s)
        if url then e = e:gsub("%+", "-"):gsub("/", "_") end
        if not pad then e = e:gsub("=", "") end
        return e
    end
    local function split(key, at) return key:sub(1, at), key:sub(at + 1) end
    local KEYECHO64_FORMS = {}
    for a = 0, 2 do
        for _, url in ipairs { false, true } do
            for _, pad in ipairs { true, false } do
                KEYECHO64_FORMS[#KEYECHO64_FORMS + 1] = function(key)
                    return 200, JSON, envelope(json_string(ticket(b64(("x"):rep(a) .. key .. "yz", url, pad))))
                end
            end
        end
    end
    for _, user in ipairs { "echo-user", "", "reviewer@example.com" } do
        KEYECHO64_FORMS[#KEYECHO64_FORMS + 1] = function(key)
            return 200, JSON, envelope(json_string(ticket("Authorization: Basic " .. b64(user .. ":" .. key, false,
                true))))
        end
    end
    local SPLIT_FORMS = {
        function(p1, p2) return 200, JSON, envelope(json_string(ticket('\\"' .. p1 .. '\\" \\"' .. p2 .. '\\"'))) end,
        function(p1, p2) return 200, JSON, envelope(json_string(ticket("'" .. p1 .. "' + '" .. p2 .. "'"))) end,
        function(p1, p2)
            return 200, JSON, envelope(json_string(ticket("x", nil, 'tags":["' .. p1 .. '", "' .. p2 .. '"],"more')))
        end,
        function(p1, p2) return 200, JSON, envelope("null", json_string('I will not answer "' .. p1 .. '"\n "' .. p2
            .. '"')) end,
    }
    for _, f in ipairs(SPLIT_FORMS) do
        KEYECHO64_FORMS[#KEYECHO64_FORMS + 1] = function(key) return f(split(key, 11)) end
    end
    KEYECHO64_FORMS[#KEYECHO64_FORMS + 1] = function(key)
        return 401, JSON, '{"error":{"message":"Incorrect credentials: Basic ' .. b64("api:" .. key, false, true)
            .. '","type":"invalid_request_error","code":"invalid_api_key"}}'
    end

    local function stream_big(sock, with_length)
        local total = 20 * 1024 * 1024
        local head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
        if with_length then head = head .. "Content-Length: " .. total .. "\r\n" end
        if not send_all(sock, head .. "Connection: close\r\n\r\n") then return end
        local chunk = string.rep("x", 65536)
        local sent = 0
        while sent < total do
            if not send_all(sock, chunk) then return end
            sent = sent + #chunk
        end
    end

    local function handle(sock)
        local r = reader(sock)
        local first = r.peek_byte()
        if first == 0x16 then
            send_all(sock, response(400, {}, "plain HTTP here\n"))
            return
        end
        local request_line = r.line()
        if not request_line then return end
        local method, target = request_line:match("^(%S+) (%S+) HTTP/%d%.%d$")
        if not method then
            send_all(sock, response(400, {}, "bad request line\n"))
            return
        end
        local headers, order = {}, {}
        while true do
            local l = r.line()
            if not l then return end
            if l == "" then break end
            local name, value = l:match("^([^:]+):%s*(.-)%s*$")
            if name then
                name = name:lower()
                if not headers[name] then order[#order + 1] = name end
                headers[name] = value
            end
        end
        local body = ""
        local n = tonumber(headers["content-length"] or "0")
        if n and n > 0 then body = r.bytes(n) or "" end
        local path, query = target:match("^([^?]*)%??(.*)$")

        if path == "/ok" then
            send_all(sock, response(200, JSON, '{"ok":true}'))
        elseif path:match("^/status/%d+$") then
            local status = tonumber(path:match("%d+"))
            local extra = { { "Content-Type", "application/json" } }
            if status == 429 then extra[#extra + 1] = { "Retry-After", "2" } end
            send_all(sock, response(status, extra, '{"error":"status ' .. status .. '"}'))
        elseif path == "/redirect" then
            send_all(sock, response(302, { { "Location", "http://127.0.0.1:" .. port .. "/steal" } }, ""))
        elseif path == "/steal" then
            steal_hits = steal_hits + 1
            send_all(sock, response(200, JSON, '{"stolen":true}'))
        elseif path == "/stats" then
            send_all(sock, response(200, JSON, '{"steal":' .. steal_hits .. '}'))
        elseif path == "/slow" then
            local drips = tonumber(query:match("n=(%d+)") or "50")
            local head = "HTTP/1.1 200 OK\r\nContent-Length: " .. drips .. "\r\nConnection: close\r\n\r\n"
            if not send_all(sock, head) then
                return
            end
            for _ = 1, drips do
                sleep(0.2)
                if not send_all(sock, "x") then return end
            end
        elseif path == "/big" then
            stream_big(sock, true)
        elseif path == "/bigstream" then
            stream_big(sock, false)
        elseif path == "/reset" then
            send_all(sock, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
                .. "Connection: close\r\n\r\n" .. string.rep("y", 50))
        elseif path == "/rst" then
            send_all(sock, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
                .. "Connection: close\r\n\r\n" .. string.rep("y", 50))
            sleep(0.05)
            sock:setoption("linger", { on = true, timeout = 0 })
        elseif path == "/hugeheader" then
            send_all(sock, response(200, { { "X-Huge", string.rep("a", 200 * 1024) } }, "{}"))
        elseif path == "/html" then
            send_all(sock, response(200, { { "Content-Type", "text/html; charset=utf-8" } },
                "<html><body>Service Unavailable</body></html>"))
        elseif path == "/gzip" then
            send_all(sock, response(200, { { "Content-Type", "application/json" },
                { "Content-Encoding", "gzip" } }, GZIP_OK))
        elseif path == "/delay" then
            local ms = tonumber(query:match("ms=(%d+)") or "0")
            sleep(ms / 1000)
            send_all(sock, response(200, JSON, '{"delayed":' .. ms .. '}'))
        elseif path == "/echo" then
            local parts = {}
            for _, name in ipairs(order) do
                parts[#parts + 1] = json_string(name) .. ":" .. json_string(headers[name])
            end
            send_all(sock, response(200, JSON, '{"method":' .. json_string(method)
                .. ',"path":' .. json_string(target)
                .. ',"headers":{' .. table.concat(parts, ",") .. '}'
                .. ',"body":' .. json_string(body) .. '}'))
        elseif path:match("^/f/") then
            local id, list = path:match("^/f/([%w_%-]+)/([%w_%+]+)")
            if not id then
                send_all(sock, response(400, JSON, '{"error":"bad fault path"}'))
                return
            end
            fault_hits[id] = (fault_hits[id] or 0) + 1
            local steps = {}
            for step in list:gmatch("[^+]+") do steps[#steps + 1] = step end
            local f = steps[math.min(fault_hits[id], #steps)]
            local st = tonumber(f:match("^s(%d+)$") or "")
            if f == "ok" then
                send_all(sock, response(200, JSON, OK_ENVELOPE))
            elseif f == "gzip" then
                send_all(sock, response(200, { { "Content-Type", "application/json" },
                    { "Content-Encoding", "gzip" } }, GZIP_ENVELOPE))
            elseif f == "r429" then
                send_all(sock, response(429, { { "Content-Type", "application/json" }, { "Retry-After", "1" } },
                    '{"error":{"message":"Rate limit reached for requests","type":"requests",'
                    .. '"code":"rate_limit_exceeded"}}'))
            elseif f == "quota" then
                send_all(sock, response(429, { { "Content-Type", "application/json" }, { "Retry-After", "1" } },
                    '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota",'
                    .. '"code":"insufficient_quota"}}'))
            elseif st == 529 then
                send_all(sock, response(529, JSON,
                    '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'))
            elseif st then
                send_all(sock, response(st, JSON, '{"error":{"message":"server failure","type":"server_error"}}'))
            elseif f == "html" then
                send_all(sock, response(200, { { "Content-Type", "text/html; charset=utf-8" } },
                    "<html><body>Bad gateway</body></html>"))
            elseif f == "redirect" then
                send_all(sock, response(302, { { "Location", "http://localhost:" .. port .. "/steal" } }, ""))
            elseif f == "auth401" then
                local echo = (headers["authorization"] or "") .. " " .. (headers["x-api-key"] or "")
                    .. " " .. (headers["x-goog-api-key"] or "")
                send_all(sock, response(401, JSON, '{"error":{"message":' .. json_string("Incorrect API key provided: "
                    .. echo) .. ',"type":"invalid_request_error","code":"invalid_api_key"}}'))
            elseif f == "reset" or f == "rst" then
                send_all(sock, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    .. (#OK_ENVELOPE + 100) .. "\r\nConnection: close\r\n\r\n" .. OK_ENVELOPE:sub(1, 60))
                if f == "rst" then
                    sleep(0.05)
                    sock:setoption("linger", { on = true, timeout = 0 })
                end
            elseif f == "slow" then
                if not send_all(sock, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    .. #OK_ENVELOPE .. "\r\nConnection: close\r\n\r\n") then
                    return
                end
                for i = 1, #OK_ENVELOPE do
                    sleep(0.2)
                    if not send_all(sock, OK_ENVELOPE:sub(i, i)) then return end
                end
            elseif f == "big" then
                stream_big(sock, true)
            elseif f == "deep" then
                -- a reply nested 1000 levels deep: within the decoder's limit, too deep to be written
                -- inside a ticket line
                send_all(sock, response(200, JSON, OK_ENVELOPE:gsub('{\\"label\\":\\"bug\\"}',
                    '{\\"a\\":' .. string.rep("[", 999) .. string.rep("]", 999) .. "}", 1)))
            elseif f == "sse" or f == "ssecut" then
                local parts = {}
                local events = f == "sse" and #SSE_CHUNKS or #SSE_CHUNKS - 2
                for i = 1, events do parts[#parts + 1] = "data: " .. SSE_CHUNKS[i] .. "\n\n" end
                send_all(sock, response(200, { { "Content-Type", "text/event-stream" } }, table.concat(parts)))
            else
                send_all(sock, response(400, JSON, '{"error":"unknown fault"}'))
            end
        elseif path:match("^/keyecho/") then
            local id = path:match("^/keyecho/([%w_%-]+)") or "-"
            fault_hits[id] = (fault_hits[id] or 0) + 1
            local key = (headers["authorization"] or ""):match("^Bearer%s+(.+)$") or headers["x-api-key"] or ""
            local status, hs, b = KEYECHO_FORMS[(fault_hits[id] - 1) % #KEYECHO_FORMS + 1](key)
            send_all(sock, response(status, hs, b))
        elseif path:match("^/keyecho64/") then
            local id = "64-" .. (path:match("^/keyecho64/([%w_%-]+)") or "-")
            fault_hits[id] = (fault_hits[id] or 0) + 1
            local key = (headers["authorization"] or ""):match("^Bearer%s+(.+)$") or headers["x-api-key"] or ""
            local status, hs, b = KEYECHO64_FORMS[(fault_hits[id] - 1) % #KEYECHO64_FORMS + 1](key)
            send_all(sock, response(status, hs, b))
        elseif path:match("^/hits/") then
            send_all(sock, response(200, JSON, '{"hits":' .. (fault_hits[path:match("^/hits/(.*)$")] or 0) .. '}'))
        elseif path == "/quit" then
            send_all(sock, response(200, JSON, '{"bye":true}'))
            stopping = true
        else
            send_all(sock, response(404, JSON, '{"error":"no such path"}'))
        end
    end

    local function spawn(sock)
        sock:settimeout(0)
        local co = coroutine.create(function()
            handle(sock)
            sock:close()
        end)
        local ok, err = coroutine.resume(co)
        if not ok then io.stderr:write("fault server: ", tostring(err), "\n") sock:close() end
    end

    local function resume(co)
        local ok, err = coroutine.resume(co)
        if not ok then io.stderr:write("fault server: ", tostring(err), "\n") end
    end

    while not stopping and socket.gettime() < deadline do
        local reads, writes = { server }, {}
        for s in pairs(want_read) do reads[#reads + 1] = s end
        for s in pairs(want_write) do writes[#writes + 1] = s end
        local timeout = 0.5
        local now = socket.gettime()
        for _, t in pairs(sleepers) do
            if t - now < timeout then timeout = math.max(0, t - now) end
        end
        local readable, writable = socket.select(reads, writes, timeout)
        for _, s in ipairs(readable) do
            if s == server then
                local client = server:accept()
                if client then spawn(client) end
            elseif want_read[s] then
                local co = want_read[s]
                want_read[s] = nil
                resume(co)
            end
        end
        for _, s in ipairs(writable) do
            local co = want_write[s]
            if co then
                want_write[s] = nil
                resume(co)
            end
        end
        now = socket.gettime()
        local due = {}
        for co, t in pairs(sleepers) do
            if t <= now then due[#due + 1] = co end
        end
        for _, co in ipairs(due) do
            sleepers[co] = nil
            resume(co)
        end
    end
    server:close()
    return 0
end

return _M
