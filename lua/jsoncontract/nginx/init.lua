--- A contract gateway for nginx (lua-nginx-module / OpenResty): one `content_by_lua_block`
-- line per location turns a POSTed text into a checked value.
--
--     init_by_lua_block { require("jsoncontract.nginx").configure{ provider = "openai",
--         model = "gpt-4o-mini", api_key_env = "OPENAI_API_KEY",
--         contracts = { support_ticket = "/srv/app/examples/support_ticket.lua" },
--         metrics_dict = "jsoncontract_metrics", evidence = { path = "/var/log/jsoncontract/jc.jsonl" } } }
--     init_worker_by_lua_block { require("jsoncontract.nginx").init_worker() }   -- evidence path writable?
--     exit_worker_by_lua_block { require("jsoncontract.nginx").exit_worker() }   -- evidence on TERM
--     location = /triage  { content_by_lua_block { require("jsoncontract.nginx").serve("support_ticket") } }
--     location = /metrics { content_by_lua_block { require("jsoncontract.nginx").metrics() } }
--
-- Per request: the body (in memory or spooled to a file) is the input; `jc.ask` runs with
-- the named contract over the cosocket transport (keep-alive pool per provider host, TLS
-- sessions reused), `ngx.sleep` between retries, the request id (`X-Request-Id` when the
-- client sent a usable one, else nginx's `$request_id`) in the evidence, the log and the
-- request to the provider. The answer (`Content-Type: application/json`, headers
-- `X-Request-Id`, `X-Contract`, `X-Contract-Version`, and `X-Attempts` once the model was asked):
--
--   * 200: the checked value itself, as the model wrote it (the JSON text the gates accepted, see
--     `contract:check_json`: no Lua value is built for it, and large integers stay exact);
--   * 202: handed over to a person (refusal, content filter, a business rule):
--     `{"status":"handed_over","message":<plain words for the end user>,"item_id":..,"request_id":..}`
--     (with a `store`, recorded there first; 503 `handover_unavailable` when that failed);
--   * 400 `empty_body`, `not_utf8`; 405 `method_not_allowed`; 413 `body_too_large`;
--   * 500 `internal_error`, `contract_unavailable`, `context_missing` (a contract with rules and a
--     gateway without `context`: refused before its rules could pass without their data);
--     502 `model_unavailable` (the provider could not be reached or answered with an HTTP
--     error), `no_valid_answer` (no answer passed the gates: format, schema, truncated, protocol,
--     budget); 503 `model_busy` (rate limited or
--     overloaded; `Retry-After` when the provider gave one); 504 `model_timeout`.
--
-- Errors are `{"error":{"code":..,"message":<plain words>},"request_id":..,"item_id":..}`;
-- the technical reason (category/kind/message, already free of the API key) goes only to the
-- error log (one line per non-200 answer) and to the evidence.
-- @module jsoncontract.nginx
-- luacheck: globals ngx
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"
local run = require "jsoncontract.run"
local messages = require "jsoncontract.feedback"
local openresty = require "jsoncontract.transport.openresty"
local contracts = require "jsoncontract.nginx.contracts"
local metrics = require "jsoncontract.nginx.metrics"
local evidence = require "jsoncontract.nginx.evidence"
local body = require "jsoncontract.nginx.body"
local handover = require "jsoncontract.nginx.handover"
local evidence_mod = require "jsoncontract.evidence"
local util = require "jsoncontract.util"

local type, pairs, ipairs, tostring, tonumber, error, pcall, xpcall, setmetatable, floor =
    type, pairs, ipairs, tostring, tonumber, error, pcall, xpcall, setmetatable, math.floor
local format, match, getenv = string.format, string.match, os.getenv
local encode = core.encode
local traceback = debug.traceback

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

-- Every gateway made in this process (weak), for init_worker's sweep of the metrics dicts.
local GATEWAYS = setmetatable({}, { __mode = "k" })

--- HTTP status and code per outcome that is not a 200.
-- @table STATUS
_M.STATUS = {
    handed_over = 202, handover_unavailable = 503,
    empty_body = 400, not_utf8 = 400, method_not_allowed = 405, body_too_large = 413,
    internal_error = 500, contract_unavailable = 500, body_unreadable = 500, context_missing = 500,
    model_unavailable = 502, no_valid_answer = 502, model_busy = 503, model_timeout = 504,
}

local SORRY = "Something went wrong on our side. Please try again later."

--- Plain words per error code: what the end user (or the client's developer, for 4xx) sees.
-- @table TEXT
_M.TEXT = {
    empty_body = "The request body is empty: send the text to process.",
    not_utf8 = "The request body is not UTF-8 text.",
    method_not_allowed = "Use POST with the text to process as the body.",
    body_too_large = "The request body is too large.",
    internal_error = SORRY, contract_unavailable = SORRY, body_unreadable = SORRY,
    context_missing = "This service is not set up correctly: the contract's rules have no context. "
        .. "The error log names the rule.",
    model_unavailable = messages.TEXT.retry_later, no_valid_answer = messages.TEXT.retry_later,
    model_busy = messages.TEXT.retry_later, model_timeout = messages.TEXT.retry_later,
    handover_unavailable = "Your request could not be passed to a person right now. Please try again.",
}

local BUSY = { rate_limited = true, overloaded = true }

-- The `outcome` label of an error answer: refused before asking, broken inside the gateway,
-- or the model's side failed (everything else).
local OUTCOME_OF = {
    empty_body = "rejected", not_utf8 = "rejected", method_not_allowed = "rejected", body_too_large = "rejected",
    internal_error = "error", contract_unavailable = "error", body_unreadable = "error", context_missing = "error",
}

-- The error code for an outcome that was not accepted.
local function failure_code(outcome)
    local reason = outcome.reason or {}
    if messages.user_message(outcome) == messages.TEXT.person then return "handed_over" end
    if reason.category == "transport" then
        if reason.kind == "timeout" then return "model_timeout" end
        if BUSY[reason.kind] then return "model_busy" end
        return "model_unavailable"
    end
    if reason.category == "budget" and reason.kind == "time_budget" then return "model_timeout" end
    return "no_valid_answer"
end
_M.failure_code = failure_code

local sender -- (below)

local OPTS = {
    provider = true, model = "string", api_key = "string", api_key_env = "string", base_url = "string",
    max_tokens = "number", temperature = "number", mode = "string", policy = "table", timeout_ms = "number",
    connect_timeout_ms = "number", max_response_bytes = "number", contracts = "table",
    contract_check_ms = "number", max_body_bytes = "number", pool_size = "number",
    keepalive_timeout_ms = "number", backlog = "number", metrics_dict = "string", evidence = "table",
    propagate_request_id = "boolean", on_handover = "function", context = true, store = "string",
}

--- A gateway.
-- @tparam table opts
--   `provider` (provider name or module, required), `model` (string, required), `api_key`
--   (string) or `api_key_env` (name of an environment variable, read in the worker: declare it
--   with `env NAME;` in nginx.conf), `base_url`, `max_tokens`, `temperature`, `mode`, `policy`,
--   `timeout_ms`, `connect_timeout_ms`, `max_response_bytes` (as for `jc.ask`);
--   `contracts` (`{ [name] = contract | definition table | Lua file path }`, required; see
--   `jsoncontract.nginx.contracts`), `contract_check_ms` (integer >= 0, default 2000: how often
--   a contract file is looked at for a version bump; 0 never);
--   `max_body_bytes` (integer >= 1, default 65536; keep nginx's `client_max_body_size` above it);
--   `pool_size` (default 32), `keepalive_timeout_ms` (default 60000), `backlog` (default nil:
--   no limit on open connections) for the provider's keep-alive pool (see
--   `jsoncontract.transport.openresty`);
--   `metrics_dict` (name of a `lua_shared_dict`, or nil for no metrics);
--   `evidence` (`{ path = file | "log", record_text, flush_ms, max_lines }`, see
--   `jsoncontract.nginx.evidence`; nil: none);
--   `propagate_request_id` (boolean, default true: send `X-Request-Id` to the provider);
--   `on_handover` (`function(item)` called for a 202 with `{item_id, request_id, contract =
--   {name, version, schema_hash}, reason = {category, kind, message}, input}`; runs in the
--   request, may use cosockets, must not block; errors are logged);
--   `context` (`function(contract_name, input) -> table` for the contracts' rules; `false` says,
--   explicitly, that their rules need none. `configure` refuses a contract with rules when it is
--   not given: the rules would pass without their data; a gateway from `new` loads its contracts
--   when first asked for them and answers each request for such a contract 500 `context_missing`,
--   the rule and the missing context in the error log);
--   `store` (a job store: SQLite file path or `postgresql://` URL; nil: none): each handed-over
--   request is recorded there before its 202, as an item of the contract's gateway job, with its
--   attempts (the model's text included) and reason, so `jsoncontract review STORE` serves it
--   (see `jsoncontract.nginx.handover`); when that fails the answer is 503
--   `handover_unavailable` instead of the 202. `on_handover` runs after it either way.
-- @treturn table gateway
-- @raise on a missing or mistyped option, a metrics dict nginx does not have, a blank `api_key`,
--   an `api_key_env` no variable can be named (empty, blank, holding "="), no `api_key` nor
--   `api_key_env` for a provider whose own API refuses every request without one
--   (`jsoncontract.providers.missing_key`)
-- @usage local gw = require("jsoncontract.nginx").new{ provider = "openai", model = "gpt-4o-mini",
--     api_key_env = "OPENAI_API_KEY", contracts = { ticket = "/srv/ticket.lua" } }
function _M.new(opts)
    if type(opts) ~= "table" then error("nginx gateway: opts must be a table", 2) end
    for k, v in pairs(opts) do
        local want = OPTS[k]
        if not want then error("nginx gateway: unknown option '" .. tostring(k) .. "'", 2) end
        if want ~= true and type(v) ~= want then
            error(format("nginx gateway: %s must be a %s, got %s", k, want, type(v)), 2)
        end
    end
    if type(opts.provider) ~= "string" and type(opts.provider) ~= "table" then
        error("nginx gateway: provider must be a provider name or module", 2)
    end
    if not opts.model then error("nginx gateway: model is required", 2) end
    if not opts.contracts then error("nginx gateway: contracts is required", 2) end
    -- (a blank key would be sent as it is, and api_key_env never read)
    if opts.api_key ~= nil and not opts.api_key:find("%S") then
        error("nginx gateway: api_key is blank: give the key, or api_key_env alone", 2)
    end
    -- (a name no variable can have: every request would answer 500 "is not set in the worker")
    if opts.api_key_env ~= nil and not opts.api_key_env:find("^[^=%s]+$") then
        error(format("nginx gateway: api_key_env must name an environment variable, got %q", opts.api_key_env), 2)
    end
    if not opts.api_key_env then
        local no_key = require("jsoncontract.providers").missing_key(opts.provider, opts.base_url, opts.api_key)
        if no_key then error("nginx gateway: " .. no_key .. " (or api_key_env)", 2) end
    end
    if opts.context ~= nil and opts.context ~= false and type(opts.context) ~= "function" then
        error("nginx gateway: context must be a function(contract_name, input) or false, got " .. type(opts.context), 2)
    end
    for _, k in ipairs { "max_body_bytes", "pool_size", "keepalive_timeout_ms" } do
        local v = opts[k]
        if v ~= nil and (v < 1 or v ~= floor(v)) then error("nginx gateway: " .. k .. " must be an integer >= 1", 2) end
    end
    if opts.backlog ~= nil and (opts.backlog < 0 or opts.backlog ~= floor(opts.backlog)) then
        error("nginx gateway: backlog must be an integer >= 0", 2)
    end
    local self = {
        ask = { provider = opts.provider, model = opts.model, base_url = opts.base_url,
            max_tokens = opts.max_tokens, temperature = opts.temperature, mode = opts.mode, policy = opts.policy,
            timeout_ms = opts.timeout_ms, connect_timeout_ms = opts.connect_timeout_ms,
            max_response_bytes = opts.max_response_bytes },
        api_key = opts.api_key, api_key_env = opts.api_key_env,
        cache = contracts.new(opts.contracts, { check_ms = opts.contract_check_ms }),
        max_body_bytes = opts.max_body_bytes or 65536,
        pool = { keepalive = true, pool_size = opts.pool_size or 32,
            keepalive_timeout_ms = opts.keepalive_timeout_ms or 60000, backlog = opts.backlog },
        meter = opts.metrics_dict and metrics.new(opts.metrics_dict) or nil,
        sink = opts.evidence and evidence.new(opts.evidence) or nil,
        propagate_request_id = opts.propagate_request_id ~= false,
        on_handover = opts.on_handover, context = opts.context or nil, context_given = opts.context ~= nil,
        handover = opts.store and handover.new(opts.store) or nil,
    }
    if self.sink then self.sink.meter = self.meter end
    self.transport = sender(self)
    setmetatable(self, mt)
    GATEWAYS[self] = true
    return self
end

-- Why a contract cannot be served without a context (its rules would pass without their
-- data), per contract object and asker (false when it can), so a request does not work it
-- out again; weak, so a reloaded version is looked at anew.
local NO_CONTEXT = setmetatable({}, { __mode = "k" })

local function missing_context(c, where)
    local seen = util.child(NO_CONTEXT, c)
    local why = seen[where]
    if why == nil then
        why = require("jsoncontract.jobs.definition").missing_context(c, where, "function(contract_name, input)")
            or false
        seen[where] = why
    end
    return why or nil
end

local default

--- Make the gateway that `serve` and `metrics` use, and compile its contracts now (in
-- `init_by_lua` the workers inherit them).
-- @tparam table opts as for `new`
-- @treturn table gateway
-- @raise as `new`, and when a contract cannot be loaded
function _M.configure(opts)
    local gw = _M.new(opts)
    local ok, err = gw.cache:preload()
    if not ok then error("nginx gateway: " .. err, 2) end
    -- Fail closed: a contract with rules and no context would pass them without their data.
    if not gw.context_given then
        local names = {}
        for name in pairs(gw.cache.sources) do names[#names + 1] = name end
        table.sort(names)
        for _, name in ipairs(names) do
            local why = missing_context(gw.cache:get(name), "the gateway (configure{context = ...})")
            if why then error("nginx gateway: contract '" .. name .. "': " .. why, 2) end
        end
    end
    if opts.store then
        -- Fail at start, not at the first hand-over; the workers open their own connections.
        local made, serr = handover.prepare(opts.store)
        if not made then error("nginx gateway: cannot open the hand-over store: " .. serr, 2) end
    end
    default = gw
    return gw
end

local function the_default(what)
    if not default then
        error("jsoncontract.nginx: " .. what .. " before configure{...} (call it in init_by_lua)", 3)
    end
    return default
end

-- The API key for this worker (an env var is read once).
local function api_key(self)
    if self.api_key then return self.api_key end
    if not self.api_key_env then return nil end
    local v = getenv(self.api_key_env)
    if v == nil or v == "" then
        return nil, format("%s is not set in the worker (add `env %s;` to nginx.conf)", self.api_key_env,
            self.api_key_env)
    end
    self.api_key = v
    return v
end

-- The request id: the client's `X-Request-Id` when usable, else `nginx_id` (nginx's
-- `$request_id`, read once per request by the caller: unless the configuration names the
-- variable, each read makes a new one, from OpenSSL's RAND_bytes).
local function request_id(nginx_id)
    local h = ngx.var.http_x_request_id
    if h and #h <= 200 and match(h, "^[%w%-%._:]+$") then return h end
    return nginx_id or ngx.var.request_id
end

local function send_json(status, text)
    ngx.status = status
    ngx.header["Content-Type"] = "application/json"
    ngx.header["Cache-Control"] = "no-store"
    ngx.print(text, "\n")
end

local function observe_request(self, name, status, outcome_name, t0, ctx)
    -- counted: a client abort from here on (on_handover may wait) must not count it again
    ctx = ctx or ngx.ctx
    ctx.jsoncontract_counted = true
    local m = self.meter
    if not m then return end
    m:inc("jsoncontract_requests_total", { "contract", name, "code", status, "outcome", outcome_name })
    ngx.update_time()
    m:observe("jsoncontract_request_duration_seconds", { "contract", name }, ngx.now() - t0)
end

-- The evidence record of an answer the run did not record itself (decided before the model
-- was asked, or the run raised): who, which contract, what was answered and why. Never the key
-- or headers (the writer redacts the key and drops headers); the body only with record_text
-- (the writer drops `input` otherwise) and only when it was read within max_body_bytes as UTF-8.
local function record_failure(self, name, code, status, rid, item_id, t0, detail, ev)
    if not self.sink then return end
    local c = ev.contract
    ngx.update_time()
    self.sink:writer(self.api_key):write({ ts = os.date("!%Y-%m-%dT%H:%M:%SZ"), request_id = rid,
        item_id = item_id, contract = c and c:identity() or (name ~= "-" and { name = name } or nil),
        outcome = OUTCOME_OF[code] or "failed", status = status, code = code, reason = detail,
        input = ev.input, elapsed_ms = floor((ngx.now() - t0) * 1000) })
end

-- An error answer; `detail` goes to the log only, and with `ev` (`{contract, input}`: the
-- run wrote no evidence for this answer) to the evidence too.
local function fail(self, name, code, rid, item_id, t0, detail, level, extra_headers, ev)
    local status = _M.STATUS[code]
    for k, v in pairs(extra_headers or {}) do ngx.header[k] = v end
    send_json(status, encode({ error = { code = code, message = _M.TEXT[code] }, request_id = rid,
        item_id = item_id }))
    ngx.log(level or (status >= 500 and ngx.ERR or ngx.INFO), "jsoncontract: request_id=", rid, " item_id=",
        item_id or "-", " contract=", name, " status=", status, " code=", code, ": ", detail or "")
    if ev then record_failure(self, name, code, status, rid, item_id, t0, detail, ev) end
    observe_request(self, name, status, OUTCOME_OF[code] or "failed", t0)
end

-- The transport of a gateway: the cosocket transport with the gateway's pool, the request's id
-- (`ngx.ctx.jsoncontract_rid`, set by serve) sent along, every exchange counted. Made once per
-- gateway (see `new`): a request makes no closure for it.
function sender(self)
    local pool, m = self.pool, self.meter
    return function(req)
        local rid = ngx.ctx.jsoncontract_rid
        for k, v in pairs(pool) do req[k] = v end
        if self.propagate_request_id then
            -- a copy: a provider module may hand every request the same headers table, and
            -- the connect below yields to other requests
            local h = {}
            if req.headers then
                for k, v in pairs(req.headers) do h[k] = v end
            end
            h["X-Request-Id"] = rid
            req.headers = h
        end
        local res, err = openresty.request(req)
        if m then
            local upstream = match(req.url, "^%a+://([^/?#]+)") or "?"
            m:inc("jsoncontract_upstream_requests_total", { "upstream", upstream,
                "status", res and res.status or err.kind })
            if res then
                m:inc("jsoncontract_upstream_connections_total", { "upstream", upstream,
                    "reused", res.reused > 0 and "true" or "false" })
            end
            local ms = res and res.elapsed_ms or err.elapsed_ms
            if ms then m:observe("jsoncontract_upstream_duration_seconds", { "upstream", upstream }, ms / 1000) end
        end
        return res, err
    end
end

-- What one request spent on the model: attempts by gate, tokens, and the two histograms.
local function observe_spent(m, name, attempts, tin, tout)
    for _, a in ipairs(attempts) do
        m:inc("jsoncontract_attempts_total", { "contract", name, "gate", a.gate or "unknown" })
    end
    if tin > 0 then m:inc("jsoncontract_tokens_total", { "contract", name, "direction", "input" }, tin) end
    if tout > 0 then m:inc("jsoncontract_tokens_total", { "contract", name, "direction", "output" }, tout) end
    m:observe("jsoncontract_request_attempts", { "contract", name }, #attempts)
    m:observe("jsoncontract_request_tokens", { "contract", name }, tin + tout)
end

local function observe_outcome(self, name, out, ctx)
    local m = self.meter
    if not m then return end
    ctx.jsoncontract_spent_counted = true
    local reason = out.reason or {}
    m:inc("jsoncontract_outcomes_total", { "contract", name, "status", out.status,
        "category", reason.category or "none", "kind", reason.kind or "none" })
    local u = out.usage or {}
    observe_spent(m, name, out.attempts, u.input_tokens or 0, u.output_tokens or 0)
end

-- An evidence writer for `jc.ask` that also keeps, in `tally`, the attempts (gate of each
-- attempt's last record) and tokens its records show: a client abort kills the run's thread, so
-- its outcome (with the attempts) never comes back, and this is what is known of the spend then.
-- An attempt still waiting for the model has no record yet, so it is not counted.
local tally_mt = { __index = {} }
local TW = tally_mt.__index

function TW.add_secret(w, secret)
    if w.inner then w.inner:add_secret(secret) end
end

function TW.write(w, rec)
    local tally = w.tally
    local n = rec.attempt
    if n then
        local a = tally.by_number[n]
        if not a then
            a = {}
            tally.by_number[n] = a
            tally.attempts[#tally.attempts + 1] = a
        end
        a.gate = rec.gate or "unknown"
    end
    local u = rec.usage
    if type(u) == "table" then
        tally.input = tally.input + (tonumber(u.input_tokens) or 0)
        tally.output = tally.output + (tonumber(u.output_tokens) or 0)
    end
    if w.inner then return w.inner:write(rec) end
    return true
end

-- (a table with methods, not closures: serve stays compiled)
local function tallying_writer(inner)
    return setmetatable({ inner = inner, tally = { attempts = {}, by_number = {}, input = 0, output = 0 } },
        tally_mt)
end

-- The in_flight gauge of a request, up or down once: the main thread and a client abort
-- (ngx.on_abort) may both try to take it down. Kept in this worker's slot of the dict (see
-- metrics.gauge), so a worker killed mid-request leaves nothing counted behind.
local function in_flight(self, name, up, ctx)
    ctx = ctx or ngx.ctx
    if (ctx.jsoncontract_in_flight == true) == up then return end
    ctx.jsoncontract_in_flight = up
    if self.meter then self.meter:gauge("jsoncontract_in_flight", { "contract", name }, up and 1 or -1) end
end

-- The client closed the connection before the answer (with `lua_check_client_abort on`):
-- nobody gets the answer, so stop the model call, take the gauge down, count it as status 499
-- (what nginx logs) outcome "client_closed", count what was already spent on the model (as far
-- as the evidence records show it, see tallying_writer), and say so in the log and the evidence.
local function client_closed(self, name, c, rid, item_id, t0)
    local ctx = ngx.ctx
    if ctx.jsoncontract_counted then return ngx.exit(499) end
    local tally = ctx.jsoncontract_tally
    if self.meter and tally and not ctx.jsoncontract_spent_counted then
        ctx.jsoncontract_spent_counted = true
        observe_spent(self.meter, name, tally.attempts, tally.input, tally.output)
    end
    observe_request(self, name, 499, "client_closed", t0)
    -- written at once, not with the worker's batch, and before the gauge goes down: a scrape
    -- that sees it down sees why
    if self.meter then self.meter:flush() end
    in_flight(self, name, false)
    ngx.log(ngx.INFO, "jsoncontract: request_id=", rid, " item_id=", item_id, " contract=", name,
        " status=499 code=client_closed: the client closed the connection before the answer")
    if self.sink then
        ngx.update_time()
        self.sink:writer(self.api_key):write({ ts = os.date("!%Y-%m-%dT%H:%M:%SZ"), request_id = rid,
            item_id = item_id, contract = c:identity(), outcome = "client_closed", status = 499,
            elapsed_ms = floor((ngx.now() - t0) * 1000) })
    end
    return ngx.exit(499)
end

-- A writer that writes every record to `kept` (the hand-over's memory writer) first, then to
-- `inner` (the gateway's evidence, or nil). Made here, apart from serve: a function that makes
-- closures is not compiled by LuaJIT.
local function keeping_writer(kept, inner)
    return { add_secret = function(_, s)
        kept:add_secret(s)
        if inner then inner:add_secret(s) end
    end, write = function(_, rec)
        kept:write(rec)
        if inner then return inner:write(rec) end
        return true
    end }
end

-- ngx.on_abort's handler: the request's own arguments are in ngx.ctx (serve makes no closure).
local function on_abort()
    local a = ngx.ctx.jsoncontract_abort
    return client_closed(a[1], a[2], a[3], a[4], a[5], a[6])
end

--- Serve one request with the contract `name` (a `content_by_lua` handler).
-- With `lua_check_client_abort on`, a client that closes the connection first ends the request
-- (and its model call) as status 499, outcome `client_closed`; with it off, nginx notices only
-- when the answer is sent.
-- @tparam string name a contract name from `opts.contracts`
-- @raise when `name` is not a string (misuse in nginx.conf); everything else is an HTTP answer
-- @usage location = /triage { content_by_lua_block { require("jsoncontract.nginx").serve("support_ticket") } }
function _M.serve(self, name)
    if type(self) == "string" and name == nil then self, name = the_default("serve"), self end
    if type(name) ~= "string" then error("nginx gateway: serve needs a contract name", 2) end
    local t0 = ngx.now()
    local item_id = ngx.var.request_id
    local rid = request_id(item_id)
    ngx.header["X-Request-Id"] = rid

    local c, key = self.cache:get(name)
    if not c then return fail(self, name, "contract_unavailable", rid, nil, t0, key, nil, nil, {}) end
    -- Fail closed, as `configure` does at start: a gateway from `new` sees its contracts first here.
    local no_context = not self.context_given and missing_context(c, "the gateway (new{context = ...})")
    if no_context then return fail(self, name, "context_missing", rid, nil, t0, no_context, nil, nil, {}) end
    local ev = { contract = c }
    ngx.header["X-Contract"] = c.name
    ngx.header["X-Contract-Version"] = c.version
    -- Without lua_check_client_abort on_abort refuses (nil, err, or raises on some versions):
    -- then nginx goes on to the end of the request, which is counted as usual.
    local nctx = ngx.ctx
    nctx.jsoncontract_rid = rid
    nctx.jsoncontract_abort = { self, name, c, rid, item_id, t0 }
    pcall(ngx.on_abort, on_abort)
    if ngx.req.get_method() ~= "POST" then
        return fail(self, name, "method_not_allowed", rid, nil, t0, ngx.req.get_method(), nil, { Allow = "POST" },
            ev)
    end
    local text, _, code, detail = body.read(self.max_body_bytes)
    if not text then return fail(self, name, code, rid, nil, t0, detail, nil, nil, ev) end
    if not pcall(encode, text) then
        return fail(self, name, "not_utf8", rid, nil, t0, "body is not UTF-8", nil, nil, ev)
    end
    -- read within max_body_bytes and UTF-8: the evidence may keep it (with record_text)
    ev.input = text
    local key_value, kerr = api_key(self)
    if kerr then return fail(self, name, "internal_error", rid, nil, t0, kerr, nil, nil, ev) end

    -- as_json: the 200 answer is the accepted JSON text, so no Lua value is built for it
    -- (a contract with rules still builds one for them)
    local writer = self.sink and self.sink:writer(key_value) or nil
    local kept
    if self.handover then
        -- The hand-over's evidence for the store: every record, with the model's text (the
        -- store is local; the desk pre-fills its form from it), the key redacted. Written first:
        -- a writer without record_text drops the text from the record it is given.
        kept = evidence_mod.memory({ record_text = true })
        kept:add_secret(key_value)
        writer = keeping_writer(kept, writer)
    end
    if self.meter then
        writer = tallying_writer(writer)
        nctx.jsoncontract_tally = writer.tally
    end
    local opts = { transport = self.transport, sleep = ngx.sleep, request_id = rid, item_id = item_id,
        api_key = key_value, evidence = writer, as_json = true }
    for k, v in pairs(self.ask) do opts[k] = v end
    if self.context then
        local ok, ctx = pcall(self.context, name, text)
        if not ok then
            return fail(self, name, "internal_error", rid, item_id, t0,
                secrets.redact("context: " .. tostring(ctx), key_value), nil, nil, ev)
        end
        opts.context = ctx
    end

    in_flight(self, name, true, nctx)
    local ok, out = xpcall(run.ask, traceback, c, text, opts)
    in_flight(self, name, false, nctx)
    if not ok then
        -- the run raised: its records (if any) do not say so
        return fail(self, name, "internal_error", rid, item_id, t0, secrets.redact(tostring(out), key_value), nil,
            nil, ev)
    end
    observe_outcome(self, name, out, nctx)
    ngx.header["X-Attempts"] = #out.attempts

    if out.status == "accepted" then
        send_json(200, out.json)
        observe_request(self, name, 200, "accepted", t0, nctx)
        return
    end
    local reason = out.reason or {}
    local why = format("%s/%s: %s (attempts %d, contract %s)", tostring(reason.category), tostring(reason.kind),
        secrets.redact(tostring(reason.message), key_value), #out.attempts, key)
    code = failure_code(out)
    if code ~= "handed_over" then
        local headers
        if code == "model_busy" and type(reason.retry_after) == "number" then
            headers = { ["Retry-After"] = tostring(math.ceil(reason.retry_after)) }
        end
        return fail(self, name, code, rid, item_id, t0, why, ngx.WARN, headers)
    end
    if self.handover then
        local job, herr = self.handover:record { item_id = item_id, request_id = rid, input = text, outcome = out,
            identity = out.contract or c:identity(), ask = self.ask, evidence = kept.lines, key = key_value,
            worker = "nginx:" .. tostring(ngx.worker.pid()) }
        if not job then
            return fail(self, name, "handover_unavailable", rid, item_id, t0, why .. "; not recorded: "
                .. secrets.redact(tostring(type(herr) == "table" and herr.message or herr), key_value), ngx.ERR)
        end
    end
    send_json(202, encode({ status = "handed_over", message = messages.user_message(out), item_id = item_id,
        request_id = rid }))
    ngx.log(ngx.WARN, "jsoncontract: request_id=", rid, " item_id=", item_id, " contract=", name,
        " status=202 handed over: ", why)
    observe_request(self, name, 202, "handed_over", t0)
    if self.on_handover then
        local hok, herr = pcall(self.on_handover, { item_id = item_id, request_id = rid, contract = out.contract,
            reason = { category = reason.category, kind = reason.kind, message = reason.message }, input = text })
        if not hok then
            ngx.log(ngx.ERR, "jsoncontract: on_handover failed for item ", item_id, ": ",
                secrets.redact(tostring(herr), key_value))
        end
    end
end

--- Answer a body over nginx's `client_max_body_size` with the gateway's JSON 413
-- (`body_too_large`) instead of nginx's HTML page: the handler of a named location that
-- `error_page 413 = @jsoncontract_too_big;` sends those requests to. With a contract name the
-- answer carries `X-Contract` and `X-Contract-Version` like every other answer, and the
-- evidence record names the contract.
-- @tparam[opt] string name the contract name for the metrics, the log and the headers (default `"-"`)
-- @usage location @jsoncontract_too_big {
--     content_by_lua_block { require("jsoncontract.nginx").too_large("support_ticket") } }
function _M.too_large(self, name)
    if type(self) ~= "table" then self, name = default, self end
    name = name or "-"
    local rid = request_id()
    ngx.header["X-Request-Id"] = rid
    if self then
        local c = name ~= "-" and self.cache:get(name) or nil
        if c then
            ngx.header["X-Contract"] = c.name
            ngx.header["X-Contract-Version"] = c.version
        end
        return fail(self, name, "body_too_large", rid, nil, ngx.now(), "body over client_max_body_size", nil, nil,
            { contract = c })
    end
    send_json(413, encode({ error = { code = "body_too_large", message = _M.TEXT.body_too_large }, request_id = rid }))
end

--- Write the evidence and the batched metrics updates every gateway of this worker still holds
-- (an `exit_worker_by_lua` handler; blocking file I/O, fine at exit). Needed for `nginx -s stop`
-- (TERM): a worker then exits without firing its timers, so buffered lines and counts would be
-- lost; a graceful `-s quit` flushes from the timers as well.
-- @usage exit_worker_by_lua_block { require("jsoncontract.nginx").exit_worker() }
function _M.exit_worker()
    metrics.flush_all()
    evidence.flush_all()
end

--- Check in the worker, once, that every gateway's evidence file can be appended to by the
-- worker's user, and that nginx's error log keeps `path = "log"` evidence (an
-- `init_worker_by_lua_block` handler); logs one ERR naming the path and the user for each file
-- that cannot be written (the master, often root, may write where the workers may not), and one
-- naming the `error_log` directive when the log's level filters out NOTICE. Also clears the
-- metrics gauge slots of workers that no longer run (one killed with -9 kept its requests).
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string the first problem found
-- @usage init_worker_by_lua_block { require("jsoncontract.nginx").init_worker() }
function _M.init_worker()
    local swept = {}
    for gw in pairs(GATEWAYS) do
        local m = gw.meter
        if m and not swept[m.dict] then
            swept[m.dict] = true
            m:sweep()
        end
    end
    local ok, err = evidence.check_all()
    local lok, lerr = evidence.check_log_level()
    if not ok then return nil, err end
    if not lok then return nil, lerr end
    return true
end

--- Serve the metrics as Prometheus text (a `content_by_lua` handler).
-- @usage location = /metrics { content_by_lua_block { require("jsoncontract.nginx").metrics() } }
function _M.metrics(self)
    self = self or the_default("metrics")
    ngx.header["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
    ngx.header["Cache-Control"] = "no-store"
    if not self.meter then
        ngx.status = 404
        ngx.print("# no metrics: configure the gateway with metrics_dict\n")
        return
    end
    ngx.print(self.meter:render())
end

return _M
