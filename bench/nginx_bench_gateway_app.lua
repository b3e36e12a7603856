-- The nginx side of bench/nginx_gateway_bench.lua (not part of the library): a gateway whose
-- provider is a location of the same nginx that answers an OpenAI chat envelope at once.
-- luacheck: globals ngx
local gateway = require "jsoncontract.nginx"

local M = {}

-- What the model "answers": a valid support ticket for an order the shop has (examples/orders.csv),
-- so every request passes every gate (the rules included) and is answered 200, in an OpenAI chat
-- completion envelope.
M.ENVELOPE = '{"id":"chatcmpl-bench","object":"chat.completion","created":1732950123,'
    .. '"model":"bench-1","choices":[{"index":0,"message":{"role":"assistant","content":'
    .. '"{\\"intent\\":\\"delivery\\",\\"order_id\\":\\"1042\\",\\"urgent\\":true,\\"summary\\":'
    .. '\\"The parcel for order 1042 has not arrived after two weeks.\\"}","refusal":null},'
    .. '"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":412,'
    .. '"completion_tokens":61,"total_tokens":473}}'

--- Build the gateway (init_by_lua). `c` = { root, port, key_env, evidence (a file path) }.
function M.init(c)
    M.port, M.key_env = c.port, c.key_env
    local ticket = c.root .. "/examples/support_ticket.lua"
    local orders -- what its rules read (the job module's context), opened per worker on first use
    M.gw = gateway.new {
        provider = "openai", model = "bench-1", api_key_env = c.key_env,
        base_url = "http://127.0.0.1:" .. c.port .. "/up",
        -- support_ticket: the example's contract, whose rules look the order up in SQLite;
        -- ticket_schema_only: its schema and prompt without rules (what the gateway costs
        -- without the contract's business rules)
        contracts = { support_ticket = ticket, ticket_schema_only = {
            name = "ticket_schema_only", version = "1.0.0", schema = dofile(ticket).schema,
            instructions = "You sort customer support mail into queues. Read the mail and fill in the ticket.",
        },
        -- one rule that looks at nothing: what the rules' machinery costs without the lookup
        ticket_rule_nothing = {
            name = "ticket_rule_nothing", version = "1.0.0", schema = dofile(ticket).schema,
            instructions = "You sort customer support mail into queues. Read the mail and fill in the ticket.",
            rules = { { name = "nothing", check = function() return nil end } },
        } },
        context = function()
            orders = orders or assert(dofile(ticket).context {})
            return orders
        end,
        contract_check_ms = 0, max_body_bytes = 8192, timeout_ms = 5000,
        -- as many idle connections kept as proxy_pass keeps (keepalive 64): with the default 32,
        -- wrk's 50 connections made the gateway open a new upstream connection for 7% of requests
        pool_size = 64,
        policy = { transport_retries = 0 },
    }
    assert(M.gw.cache:preload())
    -- The same gateway whose provider call is replaced by its answer (no exchange): what
    -- serve() and jc.ask cost on their own.
    M.gw_stub = gateway.new {
        provider = "openai", model = "bench-1", api_key_env = c.key_env,
        base_url = "http://127.0.0.1:" .. c.port .. "/up",
        contracts = { ticket_schema_only = {
            name = "ticket_schema_only", version = "1.0.0", schema = dofile(ticket).schema,
            instructions = "You sort customer support mail into queues. Read the mail and fill in the ticket.",
        } },
        context = false, contract_check_ms = 0, max_body_bytes = 8192, timeout_ms = 5000,
        policy = { transport_retries = 0 },
    }
    local answer_headers = { ["content-type"] = "application/json", ["content-length"] = tostring(#M.ENVELOPE) }
    M.gw_stub.transport = function()
        return { status = 200, headers = answer_headers, body = M.ENVELOPE, elapsed_ms = 0, reused = 1,
            pooled = true }
    end
    assert(M.gw_stub.cache:preload())
    -- The contract without rules as a deployment runs it: metrics in the shared dict, evidence
    -- to a file; with the exchange and with the provider call replaced by its answer.
    local function full()
        return gateway.new {
            provider = "openai", model = "bench-1", api_key_env = c.key_env,
            base_url = "http://127.0.0.1:" .. c.port .. "/up",
            contracts = { ticket_schema_only = {
                name = "ticket_schema_only", version = "1.0.0", schema = dofile(ticket).schema,
                instructions = "You sort customer support mail into queues. Read the mail and fill in the ticket.",
            } },
            context = false, contract_check_ms = 0, max_body_bytes = 8192, timeout_ms = 5000, pool_size = 64,
            policy = { transport_retries = 0 }, metrics_dict = "jc_metrics", evidence = { path = c.evidence },
        }
    end
    M.gw_full, M.gw_full_stub = full(), full()
    M.gw_full_stub.transport = M.gw_stub.transport
    assert(M.gw_full.cache:preload())
    assert(M.gw_full_stub.cache:preload())
end

--- The upstream: reads the request body (as a provider does) and answers the envelope, with a
-- Content-Length (nginx otherwise chunks Lua output and sends the last chunk in a write of its
-- own: every client, proxy_pass included, would wait for a second packet per response).
function M.upstream()
    ngx.req.read_body()
    ngx.header["Content-Type"] = "application/json"
    ngx.header["Content-Length"] = #M.ENVELOPE
    ngx.print(M.ENVELOPE)
end

-- The exchange alone, three ways, each answering the upstream's body (what the gateway's
-- transport costs before any gateway work): the smallest cosocket client (connect from the
-- pool, send, one read, keep-alive; no framing checks) and nginx's own upstream module reached
-- through a subrequest (ngx.location.capture to an internal location doing proxy_pass).
local function posted_body()
    ngx.req.read_body()
    return ngx.req.get_body_data() or ""
end

local REQUEST_HEAD
function M.cosocket_min()
    local body = posted_body()
    REQUEST_HEAD = REQUEST_HEAD or ("POST /up/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" .. M.port
        .. "\r\nContent-Type: application/json\r\nAuthorization: Bearer " .. os.getenv(M.key_env)
        .. "\r\nConnection: keep-alive\r\nContent-Length: ")
    local sock = ngx.socket.tcp()
    sock:settimeout(5000)
    assert(sock:connect("127.0.0.1", M.port, { pool = "bench_min", pool_size = 64 }))
    assert(sock:send({ REQUEST_HEAD, #body, "\r\n\r\n", body }))
    local data = assert(sock:receiveany(65536))
    sock:setkeepalive(60000, 64)
    ngx.print(data:match("\r\n\r\n(.*)$"))
end

local CAPTURE = {}
function M.capture_min()
    local body = posted_body()
    CAPTURE.method, CAPTURE.body = ngx.HTTP_POST, body
    CAPTURE.vars = CAPTURE.vars or { jc_upstream_auth = "Bearer " .. os.getenv(M.key_env) }
    local res = ngx.location.capture("/_jc_upstream", CAPTURE)
    if res.status ~= 200 then return ngx.exit(502) end
    ngx.print(res.body)
end

-- The project's cosocket transport alone, with the gateway's settings (keep-alive pool, timeouts).
local TRANSPORT_REQ
function M.transport_only()
    local body = posted_body()
    TRANSPORT_REQ = TRANSPORT_REQ or { url = "http://127.0.0.1:" .. M.port .. "/up/v1/chat/completions",
        headers = { ["Content-Type"] = "application/json", Authorization = "Bearer " .. os.getenv(M.key_env) },
        timeout_ms = 5000, keepalive = true, pool_size = 64, keepalive_timeout_ms = 60000 }
    TRANSPORT_REQ.body = body
    local res = assert(require("jsoncontract.transport.openresty").request(TRANSPORT_REQ))
    ngx.print(res.body)
end

-- Folded stacks (flame graph input: "state;caller;...;callee count" lines) from LuaJIT's
-- profiler (jit.profile), the VM state first: N compiled, I interpreted, C in a C function
-- (or in nginx between two resumes of a request: the profiler's timer runs on CPU time and
-- its sample lands on the next Lua frame, so C samples say little about their stack), G
-- garbage collector, J the JIT compiler.
local folded
local function fold_start(path, interval)
    local profile = require "jit.profile"
    local count = {}
    folded = { path = path, count = count }
    profile.start("i" .. (interval or 1), function(th, samples, vmmode)
        local stack = profile.dumpstack(th, "FZ;", -100)
        local key = vmmode .. ";" .. stack
        count[key] = (count[key] or 0) + samples
    end)
end

local function fold_stop()
    require("jit.profile").stop()
    local f = assert(io.open(folded.path, "w"))
    for k, n in pairs(folded.count) do f:write(k, " ", n, "\n") end
    f:close()
    folded = nil
end

--- Start LuaJIT's sampling profiler in this worker (jit.p, mode e.g. "Fi1": functions with
-- their files, 1 ms samples; "vi1": VM states), writing to 'path' at profile_stop.
-- Mode "jitv": the JIT compiler's trace log (jit.v) instead: which traces abort, and why.
-- Mode "fold": folded stacks with the VM state (see fold_start).
function M.profile_start()
    local args = ngx.req.get_uri_args()
    if args.mode == "jitv" then
        require("jit.v").on(args.path)
    elseif args.mode == "fold" then
        fold_start(args.path)
    else
        require("jit.p").start(args.mode or "Fi1", args.path)
    end
    ngx.say("ok")
end

function M.profile_stop()
    local args = ngx.req.get_uri_args()
    if args.mode == "jitv" then
        require("jit.v").off()
    elseif args.mode == "fold" then
        fold_stop()
    else
        require("jit.p").stop()
    end
    ngx.say("ok")
end

return M
