-- The nginx side of spec/nginx_gateway_spec.lua (not part of the library): gateways built in
-- init_by_lua (so every worker inherits compiled contracts) and a few handlers that look at
-- how jc.ask picks its transport in each nginx phase.
-- luacheck: globals ngx
local jc = require "jsoncontract"
local gateway = require "jsoncontract.nginx"
local default = require "jsoncontract.transport.default"
local openresty = require "jsoncontract.transport.openresty"
local curl = require "jsoncontract.transport.curl"

local M = {}

local cfg
M.gw = {}

-- What default.choose gave in init_by_lua (the master, before forking).
local init_choice

local function transport_name(send)
    if send == openresty.request then return "openresty" end
    if send == curl.request then return "curl" end
    return "other"
end

--- Build the gateways. `c` = { root, dir, standin, slow, pool, echo, key_env }.
function M.init(c)
    cfg = c
    init_choice = transport_name((default.choose()))
    local ticket = c.root .. "/examples/support_ticket.lua"
    -- the job module's own context (the shop's orders), opened once per worker on first use
    local orders
    M.ticket_context = function()
        orders = orders or assert(dofile(ticket).context {})
        return orders
    end
    local common = {
        context = M.ticket_context,
        provider = "openai", model = "standin-1", api_key_env = c.key_env, contract_check_ms = 0,
        metrics_dict = "jc_metrics", max_body_bytes = 8192, timeout_ms = 15000,
        evidence = { path = c.dir .. "/evidence.jsonl", flush_ms = 50 },
        policy = { transport_retries = 0 },
    }
    local function make(extra)
        local o = {}
        for k, v in pairs(common) do o[k] = v end
        for k, v in pairs(extra) do o[k] = v end
        return gateway.new(o)
    end
    -- The default gateway (gateway.serve / gateway.metrics), contracts compiled here.
    M.default = gateway.configure((function()
        local o = {}
        for k, v in pairs(common) do o[k] = v end
        o.base_url = "http://127.0.0.1:" .. c.standin
        o.contracts = { support_ticket = ticket, bumped = c.dir .. "/bumped.lua" }
        o.contract_check_ms = 1
        return o
    end)())
    -- A shop whose orders table knows no order: the business rule hands the mail to a person.
    local no_orders = { exists = function() return false end, customer = function() return nil end }
    -- Its evidence goes to the error log (ngx.log, NOTICE) instead of a file.
    M.gw.rules = make { base_url = "http://127.0.0.1:" .. c.standin, contracts = { support_ticket = ticket },
        context = function() return { orders = no_orders } end, evidence = { path = "log" },
        on_handover = function(item)
            ngx.shared.jc_spec:set("handover", jc.encode({ item_id = item.item_id, request_id = item.request_id,
                contract = item.contract.name, category = item.reason.category, kind = item.reason.kind,
                input = item.input }))
        end }
    M.gw.slow = make { base_url = "http://127.0.0.1:" .. c.slow, contracts = { slow_ticket = ticket } }
    M.gw.pool = make { base_url = "http://127.0.0.1:" .. c.pool, contracts = { pooled_ticket = ticket } }
    -- A provider that answers 401 and echoes the Authorization header, as real ones have.
    M.gw.echo = make { base_url = "http://127.0.0.1:" .. c.port .. "/echo401", contracts = { echo_ticket = ticket } }
    -- No context for a contract with rules, from new (configure would refuse it at start): each
    -- request for it is refused, never served with rules that cannot look.
    M.gw.nocontext = (function()
        local o = {}
        for k, v in pairs(common) do o[k] = v end
        o.context = nil
        o.base_url = "http://127.0.0.1:" .. c.standin
        o.contracts = { support_ticket = ticket }
        return gateway.new(o)
    end)()
    -- Looks at its contract file never: only a HUP (new workers) brings a new version.
    M.gw.hup = make { base_url = "http://127.0.0.1:" .. c.standin, contracts = { hup = c.dir .. "/hup.lua" } }
    -- A model that answers one fixed reply, fenced, with an integer beyond 2^53 (exact_model
    -- below), and a contract that unwraps the fence: the 200 body is the JSON inside, as written.
    M.gw.exact = make { base_url = "http://127.0.0.1:" .. c.port .. "/exact_model", contracts = {
        exact = { name = "exact", version = "1.0.0", instructions = "Copy the order.",
            adapters = { "unwrap-one-json-fence" }, schema = { type = "object", required = { "id", "big" },
                additionalProperties = false, properties = { id = { type = "string" }, big = { type = "integer" },
                    price = { type = "number" } } } } } }
    assert(M.gw.rules.cache:preload())
    assert(M.gw.hup.cache:preload())
end

local function say_json(v)
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode(v))
end

local MAIL = "I want to return order 1187, the shoes do not fit."

--- The reply exact_model's envelope carries: fenced, an integer beyond 2^53, spacing and
-- number spellings a re-encoding would change.
M.EXACT_JSON = '{ "id": "A-1",\n  "big": 123456789012345678901234567890, "price": 1.50e1 }'
M.EXACT_REPLY = "```json\n" .. M.EXACT_JSON .. "\n```"

--- POST /exact_model/v1/chat/completions: an OpenAI chat envelope whose content is EXACT_REPLY.
function M.exact_model()
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode({ id = "exact-1", object = "chat.completion", model = "standin-1",
        choices = setmetatable({ { index = 0, finish_reason = "stop",
            message = { role = "assistant", content = M.EXACT_REPLY } } }, jc.array_mt),
        usage = { prompt_tokens = 10, completion_tokens = 20, total_tokens = 30 } }))
end

--- GET /handover: the last item on_handover got (as JSON), or null.
function M.handover()
    ngx.header["Content-Type"] = "application/json"
    ngx.say(ngx.shared.jc_spec:get("handover") or "null")
end

--- GET /loads: how often this worker's default gateway loaded (compiled) a contract.
function M.loads()
    say_json({ loads = M.default.cache.loads, pid = ngx.worker.pid() })
end

--- GET /phases: which transport jc.ask would use in init, content, a timer, and what the log
-- phase of an earlier request said (stored in the shared dict by log()).
function M.phases()
    local content = transport_name((default.choose()))
    local timer_choice
    ngx.timer.at(0, function() timer_choice = transport_name((default.choose())) end)
    for _ = 1, 100 do
        if timer_choice then break end
        ngx.sleep(0.01)
    end
    say_json({ init = init_choice, content = content, timer = timer_choice,
        log = ngx.shared.jc_spec:get("log_phase") or jc.null })
end

--- log_by_lua: what ask says without a transport in the log phase.
function M.log()
    local ok, err = pcall(jc.ask, M.gw.rules.cache:get("support_ticket"), MAIL,
        { provider = "openai", model = "standin-1" })
    ngx.shared.jc_spec:set("log_phase", ok and "no error" or tostring(err))
end

--- POST /ask_default: jc.ask with no transport named (the cosocket transport is picked).
--- POST /ask_curl[?allow=1]: jc.ask with the curl transport named, with or without allow_blocking.
function M.ask(which)
    local args = ngx.req.get_uri_args()
    local opts = { provider = "openai", model = "standin-1", base_url = "http://127.0.0.1:" .. cfg.standin,
        policy = { transport_retries = 0 }, context = M.ticket_context() }
    if which == "curl" then
        opts.transport = curl.request
        opts.allow_blocking = args.allow == "1" or nil
    end
    local ok, out = pcall(jc.ask, (M.gw.rules.cache:get("support_ticket")), MAIL, opts)
    if not ok then return say_json({ error = tostring(out) }) end
    say_json({ status = out.status, value = out.value })
end

--- GET /tls?url=<https url>&keepalive=0|1: two exchanges; their bodies and reuse counts.
function M.tls()
    local args = ngx.req.get_uri_args()
    local out = {}
    for i = 1, 2 do
        local res, err = openresty.request { url = args.url, keepalive = args.keepalive == "1", timeout_ms = 5000 }
        out[i] = res and { body = res.body, reused = res.reused, pooled = res.pooled } or { err = tostring(err) }
    end
    say_json(setmetatable(out, jc.array_mt))
end

return M
