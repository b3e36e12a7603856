--- Gateway hand-overs into a job store, so that a person sees them at the review desk
-- (`jsoncontract review STORE`). Each request the gateway hands over (its 202: a refusal, a
-- content filter, a business rule, an input a person must look at) becomes an item of the
-- contract's gateway job, with the same rows a batch job's review item has: the item (the
-- request's text as `{"id", "text", "request_id"}`), its outcome (`human_review`, decided by
-- the model, the reason and the attempts as a review line carries them) and its evidence (one
-- record per attempt, with the model's text: the store is local, and the desk pre-fills its
-- form from it; the API key is redacted from every record).
--
-- One gateway job per contract name and version, id `gateway-<name>-<version>`: found, or
-- created; when several nginx workers or nodes sharing one PostgreSQL store create it at once,
-- the database's primary key lets one win and the others find it. Every write goes through
-- `jsoncontract.jobs.store`'s public methods (`create_job`, `add_items`, `record_outcome`),
-- so the store's schema and driver stay its own.
--
-- The connection is opened per nginx worker on first use (never across a fork) and reopened
-- after a failure. Its calls block the worker while they run (SQLite, or LuaSQL's PostgreSQL
-- client); hand-overs are the rare answer, and a hand-over is recorded before its 202 is sent,
-- so a client is told "a person will get back to you" only once that is true.
--
-- Between the item's insert and its outcome's commit the item is `pending`: a crash there
-- leaves it pending in the gateway job (never run a `worker` on a gateway job). Items are
-- numbered in the order they arrive (`seq` = the job's item count + 1); two nodes recording at
-- the same moment may give the same number, which only the desk's paging notices.
-- @module jsoncontract.nginx.handover
-- luacheck: globals ngx
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"
local store_mod = require "jsoncontract.jobs.store"

local type, tostring, ipairs, setmetatable, pcall, error = type, tostring, ipairs, setmetatable, pcall, error

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

--- Open the store at `url` and create its schema when missing, once, at start (the master, in
-- `init_by_lua`; the workers then open it without touching the schema). Two nodes starting on
-- one empty PostgreSQL database may race on its DDL: the loser tries again once.
-- @tparam string url as for `new`
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string why it cannot be opened
function _M.prepare(url)
    local st, err = store_mod.open(url)
    if not st then st, err = store_mod.open(url) end
    if not st then return nil, tostring(type(err) == "table" and err.message or err) end
    st:close()
    return true
end

--- A hand-over recorder over the store at `url`.
-- @tparam string url a SQLite file path, `sqlite:PATH` or `postgresql://...` (see
--   `jsoncontract.jobs.store.parse_url`)
-- @treturn table recorder
-- @raise when `url` is not a non-empty string
function _M.new(url)
    if type(url) ~= "string" or url == "" then error("nginx gateway: store must be a store URL string", 2) end
    store_mod.parse_url(url)
    return setmetatable({ url = url, jobs = {} }, mt)
end

--- The gateway job's id of a contract: `gateway-<name>-<version>`, characters outside
-- letters, digits, `.`, `_` and `-` as `_`.
-- @tparam table identity `{name =, version =}` (a contract's `identity()`)
-- @treturn string
function _M.job_id(identity)
    local function clean(s) return (tostring(s):gsub("[^%w%._%-]", "_")) end
    return "gateway-" .. clean(identity.name) .. "-" .. clean(identity.version)
end

local function connection(self)
    if self.st then return self.st end
    -- The schema exists (`jsoncontract.nginx.configure` created it at start): creating it here
    -- would take table locks that deadlock with another node's hand-over on PostgreSQL.
    local st, err = store_mod.open(self.url, { create = false })
    if not st then return nil, err end
    self.st = st
    return st
end

local function drop(self)
    if self.st then pcall(self.st.close, self.st) end
    self.st = nil
    self.jobs = {}
end

-- The gateway job of `identity`, found or created (race-free: see the module description).
local function gateway_job(self, st, identity, ask)
    local id = _M.job_id(identity)
    if self.jobs[id] then return id end
    if not st:job(id) then
        local made, err = st:create_job { id = id, contract_name = identity.name,
            contract_version = identity.version, schema_hash = identity.schema_hash,
            provider = type(ask.provider) == "string" and ask.provider or tostring(ask.provider and ask.provider.name),
            model = ask.model, input_path = "gateway", options_json = core.encode({ gateway = true }) }
        -- another worker or node created it first: that one is ours too
        if not made and not st:job(id) then return nil, err end
    end
    self.jobs[id] = true
    return id
end

-- The review line of a handed-over outcome, as a batch job's review item carries it.
local function review_row(outcome, item_id, request_id, identity, key)
    local attempts = setmetatable({}, core.array_mt)
    for k, a in ipairs(outcome.attempts or {}) do
        attempts[k] = { gate = a.gate, kind = a.kind, finish = a.finish, http_status = a.http_status }
    end
    local reason = outcome.reason or {}
    local errs = setmetatable({}, core.array_mt)
    for k, e in ipairs(reason.errors or {}) do
        errs[k] = { pointer = e.pointer, keyword = e.keyword, message = secrets.clean(e.message, key, 1000) }
    end
    local line = secrets.redact_value({ id = item_id, request_id = request_id, contract = identity,
        attempts = attempts, usage = outcome.usage, elapsed_ms = outcome.elapsed_ms,
        reason = { category = reason.category, kind = reason.kind,
            message = secrets.clean(reason.message, key, 2000), errors = errs } }, key)
    return line
end

--- Record one handed-over request: the item, its outcome and its evidence, in the contract's
-- gateway job.
-- @tparam table h `item_id` (string, unique: nginx's `$request_id`), `request_id` (string),
--   `input` (the request's text), `outcome` (what `jsoncontract.run.ask` returned), `identity`
--   (the contract's `{name, version, schema_hash}`), `ask` (`{provider, model}`), `evidence`
--   ({string,...} the run's encoded evidence records, key already redacted), `key` (the API
--   key: redacted from what this writes), `worker` (string: who recorded it)
-- @treturn[1] string the gateway job's id
-- @return[2] nil
-- @treturn[2] table|string err (the store's; the connection is dropped and reopened next time)
function _M.record(self, h)
    local st, err = connection(self)
    if not st then return nil, err end
    local job_id
    job_id, err = gateway_job(self, st, h.identity, h.ask or {})
    if not job_id then
        drop(self)
        return nil, err
    end
    -- The next place in the job's order (`seq` is a 32-bit INTEGER on PostgreSQL: no clock fits).
    local job
    job, err = st:job(job_id)
    if not job then
        drop(self)
        return nil, err
    end
    local input_json = core.encode(secrets.redact_value({ id = h.item_id, text = h.input, request_id = h.request_id },
        h.key))
    local ok
    ok, err = st:add_items(job_id, { { item_id = h.item_id, seq = (tonumber(job.items) or 0) + 1,
        input_json = input_json, input_digest = core.sha256(h.input) } })
    if not ok then
        if type(err) ~= "table" or err.kind ~= "duplicate" then drop(self) end
        return nil, err
    end
    local item
    item, err = st:item(job_id, h.item_id)
    if not item then
        drop(self)
        return nil, err
    end
    local line = review_row(h.outcome, h.item_id, h.request_id, h.identity, h.key)
    ok, err = st:record_outcome(job_id, h.item_id, { pass = item.item_pass, status = "human_review",
        reason_json = core.encode(line.reason), reason_category = line.reason.category,
        reason_kind = line.reason.kind, record_json = core.encode(line), decided_by = "model",
        worker = h.worker, evidence = h.evidence })
    if not ok then
        if type(err) ~= "table" or err.kind ~= "duplicate" then drop(self) end
        return nil, err
    end
    return job_id
end

--- Close the worker's connection (idempotent).
function _M.close(self)
    drop(self)
end

return _M
