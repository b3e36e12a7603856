-- The nginx side of spec/openresty_spec.lua (not part of the library): handlers for two
-- locations, loaded by init_by_lua in the master, so the contract is compiled once, at module
-- level, and every worker inherits it. Runs on nginx's LuaJIT with build/luajit's core.
-- luacheck: globals ngx
local jc = require "jsoncontract"
local openresty = require "jsoncontract.transport.openresty"

local M = {}

local ticket

--- Load the support-ticket contract from the repo at `root` (once, at init_by_lua time).
function M.init(root)
    ticket = dofile(root .. "/examples/support_ticket.lua")
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
    local v, err = ticket.contract:check(ngx.req.get_body_data() or "")
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
        policy = { transport_retries = 0 },
    })
    local attempts = {}
    for i, a in ipairs(out.attempts) do
        attempts[i] = { gate = a.gate, kind = a.kind, category = a.category }
    end
    setmetatable(attempts, jc.array_mt)
    return reply(200, { status = out.status, value = out.value, attempts = attempts,
        reason = out.reason and show_err(out.reason) })
end

--- GET /raw?url=<url>&max=<bytes>: one openresty.request; answers {status, body} or the err.
function M.raw()
    local args = ngx.req.get_uri_args()
    local res, err = openresty.request { url = args.url, max_response_bytes = tonumber(args.max),
        timeout_ms = 5000 }
    if res then return reply(200, { status = res.status, body = res.body,
        te = res.headers["transfer-encoding"] }) end
    return reply(200, { err = show_err(err) })
end

return M
