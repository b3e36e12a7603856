-- The nginx side of spec/nginx_operator_spec.lua (not part of the library): gateways that
-- differ only in their evidence, in front of a model served by the same nginx (a fixed
-- reply at once, or the same reply after `slow_s` seconds).
-- luacheck: globals ngx
local jc = require "jsoncontract"
local gateway = require "jsoncontract.nginx"
local evidence = require "jsoncontract.nginx.evidence"

local M = { gw = {} }

local CONTRACT = { name = "t", version = "1.0.0", instructions = "Say ok.",
    schema = { type = "object", required = { "ok" }, properties = { ok = { type = "boolean" } } } }

--- Build the gateways. `c` = { dir, port }.
function M.init(c)
    M.dir = c.dir
    local function opts(extra)
        local o = { provider = "openai", model = "m", api_key = "jcOperatorKey-77", contract_check_ms = 0,
            metrics_dict = "jc_metrics", max_body_bytes = 16384, timeout_ms = 15000,
            base_url = "http://127.0.0.1:" .. c.port .. "/model", contracts = { t = CONTRACT },
            policy = { transport_retries = 0 } }
        for k, v in pairs(extra) do o[k] = v end
        return o
    end
    -- the default gateway and two more: several workers append to one file, each gateway's
    -- buffer at the worker's exit
    local shared = { path = c.dir .. "/shared.jsonl", record_text = true, flush_ms = 600000 }
    gateway.configure(opts { evidence = shared })
    M.gw.shared2 = gateway.new(opts { evidence = shared })
    M.gw.shared3 = gateway.new(opts { evidence = shared })
    -- lines that wait for a flush much longer than a spec: only the worker's exit writes them
    M.gw.term = gateway.new(opts { evidence = { path = c.dir .. "/term.jsonl", flush_ms = 600000 } })
    M.gw.slow = gateway.new(opts { base_url = "http://127.0.0.1:" .. c.port .. "/slow_model",
        evidence = { path = c.dir .. "/slow.jsonl", flush_ms = 50 } })
    M.gw.log = gateway.new(opts { evidence = { path = "log", record_text = true } })
    M.gw.unwritable = gateway.new(opts { evidence = { path = c.dir .. "/no-such-dir/evidence.jsonl" } })
    -- answers decided before the model is asked, and a worker without its key: their records
    M.gw.early = gateway.new(opts { evidence = { path = c.dir .. "/early.jsonl", flush_ms = 50, record_text = true } })
    local nokey = opts { evidence = { path = c.dir .. "/early.jsonl", flush_ms = 50, record_text = true } }
    nokey.api_key, nokey.api_key_env = nil, "JC_OPERATOR_NO_SUCH_KEY"
    M.gw.nokey = gateway.new(nokey)
    -- a model that fails the schema at once and is slow on the re-ask: a client that leaves
    -- during the re-ask has spent one attempt and its tokens. It serves the contract by a name
    -- of its own, so its metrics series count its requests only (another worker may still hold
    -- an earlier spec's counts of "t" in its batch when the spec reads them first)
    M.gw.reask = gateway.new(opts { base_url = "http://127.0.0.1:" .. c.port .. "/reask_model",
        contracts = { reask = CONTRACT }, evidence = { path = c.dir .. "/reask.jsonl", flush_ms = 50 } })
    for _, gw in pairs(M.gw) do assert(gw.cache:preload()) end
end

local function syscw()
    local f = assert(io.open("/proc/self/io", "r"))
    local n = tonumber(f:read("*a"):match("syscw: (%d+)"))
    f:close()
    return n
end

--- GET /flush_probe?lines=N&bytes=B: this worker buffers N lines of about B bytes in a sink of
-- its own (dir/probe.jsonl), flushes it, and answers how many write syscalls that took
-- (`syscw` of /proc/self/io: nothing else in this handler writes).
function M.flush_probe()
    local args = ngx.req.get_uri_args()
    local sink = evidence.new { path = M.dir .. "/probe.jsonl", flush_ms = 600000 }
    local pad = ("x"):rep(tonumber(args.bytes))
    for i = 1, tonumber(args.lines) do sink:push(jc.encode({ i = i, pad = pad })) end
    local before = syscw()
    sink:flush_now()
    local writes = syscw() - before
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode({ writes = writes }))
end

--- GET /slots: the in_flight gauge slots in the metrics dict, `{ [pid] = n }` summed over contracts.
function M.slots()
    local d, out = ngx.shared.jc_metrics, {}
    for _, k in ipairs(d:get_keys(0)) do
        local pid = k:match("^g|(%d+)|jsoncontract_in_flight")
        if pid then out[pid] = (out[pid] or 0) + d:get(k) end
    end
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode(out))
end

--- POST /model/v1/chat/completions (and /slow_model/..., which waits 4 s first): an OpenAI
-- chat envelope answering {"ok":true}. With "reask" (/reask_model/...): a first attempt gets
-- {"ok":"no"} at once (schema), a re-ask the slow answer.
function M.model(slow)
    if slow == "reask" then
        ngx.req.read_body()
        local req = jc.decode(ngx.req.get_body_data() or "{}") or {}
        if #(req.messages or {}) <= 2 then
            ngx.header["Content-Type"] = "application/json"
            ngx.say(jc.encode({ id = "op-2", object = "chat.completion", model = "m",
                choices = setmetatable({ { index = 0, finish_reason = "stop",
                    message = { role = "assistant", content = '{"ok":"no"}' } } }, jc.array_mt),
                usage = { prompt_tokens = 10, completion_tokens = 5, total_tokens = 15 } }))
            return
        end
        slow = true
    end
    if slow then ngx.sleep(4) end
    ngx.header["Content-Type"] = "application/json"
    ngx.say(jc.encode({ id = "op-1", object = "chat.completion", model = "m",
        choices = setmetatable({ { index = 0, finish_reason = "stop",
            message = { role = "assistant", content = '{"ok":true}' } } }, jc.array_mt),
        usage = { prompt_tokens = 10, completion_tokens = 5, total_tokens = 15 } }))
end

return M
