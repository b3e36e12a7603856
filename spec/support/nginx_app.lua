-- The nginx side of spec/openresty_spec.lua (not part of the library): handlers for two
-- locations, loaded by init_by_lua in the master, so the contract is compiled once, at module
-- level, and every worker inherits it. Runs on nginx's LuaJIT with build/luajit's core.
-- luacheck: globals ngx
local jc = require "jsoncontract"
local openresty = require "jsoncontract.transport.openresty"

local M = {}

local ticket, orders

--- Load the support-ticket contract from the repo at `root` (once, at init_by_lua time).
function M.init(root)
    ticket = dofile(root .. "/examples/support_ticket.lua")
end

-- What its rules read (the job module's context: the shop's orders), opened per worker on first use.
local function context()
    orders = orders or assert(ticket.context {})
    return orders
end

local function reply(status, value)
    ngx.status = status
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode(value))
end

-- The fields of an err table worth showing to the spec.
local function show_err(err)
    local list
    if err.errors then
        list = {}
        for i, e in ipairs(err.errors) do list[i] = { pointer = e.pointer, keyword = e.keyword } end
    end
    return { category = err.category, kind = err.kind, message = err.message, errors = list }
end

--- POST /check: the request body is a model reply; answers {ok, value} or {ok, err}.
function M.check()
    ngx.req.read_body()
    local v, err = ticket.contract:check(ngx.req.get_body_data() or "", { context = context() })
    if v then return reply(200, { ok = true, value = v }) end
    return reply(200, { ok = false, err = show_err(err) })
end

--- POST /ask?base=<url>&max=<bytes>: jc.ask on the request body (a mail) through the
-- openresty transport; answers the outcome's status, attempts' kinds and value or reason.
function M.ask()
    ngx.req.read_body()
    local args = ngx.req.get_uri_args()
    local out = jc.ask(ticket.contract, ngx.req.get_body_data() or "", {
        provider = "openai", model = "standin-1", base_url = args.base,
        transport = openresty.request, sleep = ngx.sleep,
        max_response_bytes = tonumber(args.max), timeout_ms = 10000,
        policy = { transport_retries = 0 }, context = context(),
    })
    local attempts = {}
    for i, a in ipairs(out.attempts) do
        attempts[i] = { gate = a.gate, kind = a.kind, category = a.category }
    end
    setmetatable(attempts, jc.array_mt)
    return reply(200, { status = out.status, value = out.value, attempts = attempts,
        reason = out.reason and show_err(out.reason) })
end

--- GET /raw?url=<url>[&max=<bytes>&read=<ms>&total=<ms>]: one openresty.request; answers {status, body, te,
-- headers} or the err.
function M.raw()
    local args = ngx.req.get_uri_args()
    local res, err = openresty.request { url = args.url, max_response_bytes = tonumber(args.max),
        read_timeout_ms = tonumber(args.read), timeout_ms = tonumber(args.total) or 5000 }
    if res then return reply(200, { status = res.status, body = res.body,
        te = res.headers["transfer-encoding"], headers = res.headers }) end
    return reply(200, { err = show_err(err) })
end

--- GET /pool?a=<url>&b=<url>: two exchanges one after the other (keep-alive on); answers
-- each one's status, body, reuse count and whether it went back to the pool, or its err.
function M.pool()
    local args = ngx.req.get_uri_args()
    local out = {}
    for i, url in ipairs { args.a, args.b } do
        local res, err = openresty.request { url = url, timeout_ms = 5000, pool_size = 4 }
        out[i] = res and { status = res.status, body = res.body, reused = res.reused, pooled = res.pooled }
            or { err = show_err(err) }
    end
    return reply(200, setmetatable(out, jc.array_mt))
end

--- GET /many?a=<url>&b=<url>: openresty.request_many on both, one at a time; answers the
-- statuses and bodies, or the errs' kinds, in order.
function M.many()
    local args = ngx.req.get_uri_args()
    local results = openresty.request_many({ { url = args.a, timeout_ms = 5000 }, { url = args.b, timeout_ms = 5000 } },
        { max_parallel = 1 })
    local out = {}
    for i, r in ipairs(results) do
        out[i] = r.kind and { kind = r.kind } or { status = r.status, body = r.body }
    end
    return reply(200, setmetatable(out, jc.array_mt))
end

-- Raw replies written straight on the client socket, for the transport's error paths.
local RAW = {
    close = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close",
    garbage = "SSH-2.0-OpenSSH\r\n\r\n",
    empty = "",
    short = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this",
    badchunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    gzip = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
    continue = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    -- Lines that never end: 200 KiB without a newline.
    bigheader = "HTTP/1.1 200 OK\r\nX-Big: " .. ("a"):rep(200 * 1024),
    bigstatus = "HTTP/1.1 200 " .. ("a"):rep(200 * 1024),
    hugeline = ("a"):rep(200 * 1024),
    hello = "hello",
    -- 3000 interim heads (75 KiB) before the real one: one 64 KiB budget covers them all.
    manycontinue = ("HTTP/1.1 100 Continue\r\n\r\n"):rep(3000) .. "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    bigchunkline = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" .. ("0"):rep(2000)
        .. "5\r\nhello\r\n0\r\n\r\n",
    trailer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: "
        .. ("t"):rep(2000) .. "\r\n\r\n",
    -- Framing that must not be guessed at.
    twocl = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    samecl = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    gzipchunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    twote = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        .. "5\r\nhello\r\n0\r\n\r\n",
    notchunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: notchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    chunkjunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5zzz\r\nhello\r\n0\r\n\r\n",
    chunkext = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5 ;name=\"v\"\r\nhello\r\n0\r\n\r\n",
    status2000 = "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    status099 = "HTTP/1.1 099 OK\r\nContent-Length: 0\r\n\r\n",
    status600 = "HTTP/1.1 600 OK\r\nContent-Length: 0\r\n\r\n",
    barecr = "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok",
    nocolon = "HTTP/1.1 200 OK\r\nX-A a\r\nContent-Length: 2\r\n\r\nok",
    spacename = "HTTP/1.1 200 OK\r\nX A: a\r\nContent-Length: 2\r\n\r\nok",
    -- no reason phrase, a value padded with spaces and tabs, a header without a space after ':'
    padded = "HTTP/1.1 200\r\nX-Pad: \t v  w \t\r\nX-Empty:\r\nContent-Length:2\r\n\r\nok",
    -- Framed completely, but not to be kept: the server says close, or speaks HTTP/1.0.
    connclose = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    http10 = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    -- Looks keep-alive, then the server closes the connection anyway.
    keepclose = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
}

--- GET /sock?mode=<name>[&sleep=<s>][&drip=<s>][&after=<s>]: after an optional pause, write
-- RAW[mode] (with `drip`, one byte every that many seconds, until the client goes away),
-- optionally wait again (the client may pool the connection meanwhile), and close.
function M.sock()
    local args = ngx.req.get_uri_args()
    local sock = assert(ngx.req.socket(true))
    if args.sleep then ngx.sleep(tonumber(args.sleep)) end
    local raw = RAW[args.mode]
    if args.drip then
        for i = 1, #raw do
            ngx.sleep(tonumber(args.drip))
            if not sock:send(raw:sub(i, i)) then break end
        end
    else
        sock:send(raw)
    end
    if args.after then ngx.sleep(tonumber(args.after)) end
    ngx.exit(444)
end

return M
