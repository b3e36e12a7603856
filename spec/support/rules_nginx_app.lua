-- The nginx side of spec/rules_nginx_spec.lua (not part of the library): a contract whose
-- rule loops, sleeps (ngx.sleep) or waits on a slow cosocket read, and a /ping that shows
-- the worker is free while such a rule waits. Runs on nginx's LuaJIT with build/luajit's core.
-- luacheck: globals ngx
local jc = require "jsoncontract"

local M = {}

local TEXT = '{"order_id":"1042"}'
local SCHEMA = { type = "object", properties = { order_id = { type = "string" } } }
local contracts = {}

-- The rule body for each kind; `arg` is the fault server's port for the cosocket one.
local RULES = {
    ok = function() end,
    -- waits briefly and then fails: the rule's answer wins the race with its timer
    nap = function(value)
        ngx.sleep(0.02)
        return { pointer = "/order_id", message = "order " .. value.order_id .. " checked after a wait" }
    end,
    loop = function() while true do end end,
    spin = function() local x = 0 while true do x = x + 1 end end,
    sleep = function()
        ngx.shared.rules:set("waiting", true)
        ngx.sleep(30) -- a slow lookup that yields the worker
    end,
    cosocket = function(_, ctx)
        ngx.shared.rules:set("waiting", true)
        local sock = ngx.socket.tcp()
        sock:settimeout(30000)
        assert(sock:connect("127.0.0.1", ctx.port))
        sock:send("GET /slow?n=100 HTTP/1.1\r\nHost: x\r\n\r\n")
        return sock:receive("*a") and nil -- 100 bytes at 200 ms each: a slow database
    end,
}

--- Compile one contract per rule kind (at init_by_lua time).
function M.init()
    for kind, f in pairs(RULES) do
        local budget, item = { ms = 1000 }, nil
        if kind == "spin" then budget, item = { ms = 300, steps = 1e15 }, { item_steps = 1e15 } end
        contracts[kind] = jc.contract { name = kind, version = "1", instructions = "x", schema = SCHEMA,
            rules = { { name = kind, check = f, budget = budget } }, rules_budget = item }
    end
end

local function reply(value)
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode(value))
end

--- GET /rule?kind=K[&port=P]: contract:check with that rule; {ok} or {kind, limit, rule}.
function M.rule()
    local args = ngx.req.get_uri_args()
    local c = contracts[args.kind]
    local v, err = c:check(TEXT, { context = { port = tonumber(args.port) } })
    ngx.shared.rules:set("waiting", false)
    if v then return reply({ ok = true }) end
    return reply({ ok = false, category = err.category, kind = err.kind, limit = err.limit or jc.null,
        rule = err.rule or jc.null, message = err.message })
end

--- GET /ping?wait=1: with wait, answers once a rule is waiting (at most 10 s), saying whether
-- one was; without, at once.
function M.ping()
    local waited = false
    if ngx.var.arg_wait then
        for _ = 1, 1000 do
            if ngx.shared.rules:get("waiting") then
                waited = true
                break
            end
            ngx.sleep(0.01)
        end
    end
    return reply({ pong = true, served_while_rule_waited = waited })
end

return M
