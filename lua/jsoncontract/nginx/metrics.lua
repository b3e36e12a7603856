--- Gateway metrics in a `lua_shared_dict`, shared by all workers, served in the Prometheus
-- text exposition format (version 0.0.4).
--
-- Series (labels in braces; `contract` is the contract's name):
--
--   * `jsoncontract_requests_total{contract,code,outcome}` counter: gateway responses by HTTP
--     status and outcome (`accepted`, `handed_over`, `failed`, `rejected` before asking,
--     `error` inside the gateway, `client_closed` with code 499: the client left first)
--   * `jsoncontract_outcomes_total{contract,status,category,kind}` counter: `jc.ask` outcomes
--     (`status` accepted or human_review; `category`/`kind` of the reason, `none` when accepted)
--   * `jsoncontract_attempts_total{contract,gate}` counter: model answers by the gate that
--     decided them (`accepted`, `transport`, `protocol`, `format`, `schema`, `rules`)
--   * `jsoncontract_tokens_total{contract,direction}` counter: provider-reported tokens,
--     `direction` input or output
--   * `jsoncontract_in_flight{contract}` gauge: requests between reading the body and answering
--     (kept per worker process and summed when rendered; see `gauge`)
--   * `jsoncontract_request_duration_seconds{contract}` histogram: whole request, seconds
--   * `jsoncontract_request_attempts{contract}` histogram: model answers per request
--   * `jsoncontract_request_tokens{contract}` histogram: input + output tokens per request
--   * `jsoncontract_upstream_requests_total{upstream,status}` counter: HTTP exchanges with the
--     provider by `host:port` and HTTP status, or the transport error kind
--   * `jsoncontract_upstream_connections_total{upstream,reused}` counter: exchanges on a new
--     (`reused="false"`) or pooled (`reused="true"`) connection
--   * `jsoncontract_upstream_duration_seconds{upstream}` histogram: one HTTP exchange, seconds
--   * `jsoncontract_evidence_dropped_total` counter: evidence lines dropped (buffer full, write
--     failed)
--   * `jsoncontract_metrics_errors_total` counter (per worker, not in the dict): updates the
--     dict refused (full)
--
-- Histograms are stored per bucket (not cumulative) and summed when rendered, so one
-- observation costs two dict updates (its bucket, the sum); `_count` is the `+Inf` bucket, so the
-- two always agree in a scrape (the sum may lag a concurrent observation by one).
--
-- Counter and histogram updates are batched per worker: added up in the worker and written to
-- the dict by a timer at most `FLUSH_MS` later (one dict operation per series, not one per
-- update: a request makes a dozen), by `render` in the worker that renders, and by `flush`
-- (`exit_worker`). A scrape may so miss up to `FLUSH_MS` of another worker's updates; the
-- `in_flight` gauge is written at once.
-- @module jsoncontract.nginx.metrics
-- luacheck: read globals ngx
local type, pairs, ipairs, tostring, tonumber, error, setmetatable, pcall = type, pairs, ipairs, tostring,
    tonumber, error, setmetatable, pcall
local format, gsub, find, sub, match = string.format, string.gsub, string.find, string.sub, string.match
local concat, sort = table.concat, table.sort

local _M = { _VERSION = require("jsoncontract.core")._VERSION }
local child = require("jsoncontract.util").child
local mt = { __index = _M }

--- Bucket upper bounds per histogram (the `+Inf` bucket is implied).
-- @table BUCKETS
_M.BUCKETS = {
    jsoncontract_request_duration_seconds = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 },
    jsoncontract_request_attempts = { 1, 2, 3, 4, 5, 8 },
    jsoncontract_request_tokens = { 250, 500, 1000, 2000, 4000, 8000, 16000, 32000 },
    jsoncontract_upstream_duration_seconds = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 },
}

local HELP = {
    jsoncontract_requests_total = { "counter", "Gateway responses by HTTP status and outcome." },
    jsoncontract_outcomes_total = { "counter", "jc.ask outcomes by status and reason category/kind." },
    jsoncontract_attempts_total = { "counter", "Model answers by the gate that decided them." },
    jsoncontract_tokens_total = { "counter", "Provider-reported tokens by direction." },
    jsoncontract_in_flight = { "gauge", "Gateway requests in progress." },
    jsoncontract_request_duration_seconds = { "histogram", "Gateway request duration in seconds." },
    jsoncontract_request_attempts = { "histogram", "Model answers per gateway request." },
    jsoncontract_request_tokens = { "histogram", "Input plus output tokens per gateway request." },
    jsoncontract_upstream_requests_total = { "counter", "HTTP exchanges with the provider by status or error kind." },
    jsoncontract_upstream_connections_total = { "counter", "Provider exchanges on new or pooled connections." },
    jsoncontract_upstream_duration_seconds = { "histogram", "One HTTP exchange with the provider in seconds." },
    jsoncontract_evidence_dropped_total = { "counter", "Evidence lines dropped (buffer full or write failed)." },
    jsoncontract_metrics_errors_total = { "counter", "Metric updates the shared dict refused, this worker." },
}

-- A label value as the exposition format wants it: backslash, quote and newline escaped.
local function esc(v)
    v = tostring(v)
    if find(v, '[\\"\n]') then v = gsub(gsub(gsub(v, "\\", "\\\\"), '"', '\\"'), "\n", "\\n") end
    return v
end

-- `{a="x",b="y"}` from an array of alternating names and values; "" without labels.
local function labels(list)
    if not list or #list == 0 then return "" end
    local parts = {}
    for i = 1, #list, 2 do parts[#parts + 1] = list[i] .. '="' .. esc(list[i + 1]) .. '"' end
    return "{" .. concat(parts, ",") .. "}"
end
_M.labels = labels

--- Metrics kept in the shared dict `dict_name` (declare it: `lua_shared_dict <name> 1m;`).
-- @tparam string dict_name
-- @treturn table metrics
-- @raise when nginx has no such shared dict
-- @usage local m = metrics.new("jsoncontract_metrics")
function _M.new(dict_name)
    if type(dict_name) ~= "string" then error("metrics: dict name must be a string", 2) end
    local dict = ngx.shared[dict_name]
    if not dict then
        error("metrics: no lua_shared_dict '" .. dict_name .. "' (add: lua_shared_dict " .. dict_name .. " 1m;)", 2)
    end
    return setmetatable({ dict = dict, errors = 0 }, mt)
end

local function incr(self, key, v)
    local ok = self.dict:incr(key, v, 0)
    if not ok then self.errors = self.errors + 1 end
end

--- Longest time, in milliseconds, a counter or histogram update waits in the worker before it
-- is added to the dict.
_M.FLUSH_MS = 1000

-- This worker's batch per dict (every gateway of the worker writing to one dict shares it, so
-- any of them rendering writes all): `pending` (key -> sum), `updates` (key -> updates summed),
-- `n`, `scheduled` (a flush timer is set), `errors` (updates the dict refused).
local BATCHES = {}

local function batch_of(dict)
    local b = BATCHES[dict]
    if not b then
        b = { pending = {}, updates = {}, n = 0, scheduled = false, errors = 0 }
        BATCHES[dict] = b
    end
    return b
end

local function flush_batch(dict, b)
    if b.n == 0 then return end
    local pending, updates = b.pending, b.updates
    b.pending, b.updates, b.n = {}, {}, 0
    for key, v in pairs(pending) do
        if not dict:incr(key, v, 0) then b.errors = b.errors + updates[key] end
    end
end

--- Add this worker's batched updates of this dict to it now (see the module description). A
-- refused update (dict full) counts in `jsoncontract_metrics_errors_total` once per update it
-- held.
function _M.flush(self)
    flush_batch(self.dict, batch_of(self.dict))
end

--- Add this worker's batched updates of every dict to it now: whatever made the metrics (a
-- gateway, or `new` called by the application), for `exit_worker`, where timers no longer fire.
function _M.flush_all()
    for dict, b in pairs(BATCHES) do flush_batch(dict, b) end
end

local function flush_timer(_, dict)
    local b = batch_of(dict)
    b.scheduled = false
    flush_batch(dict, b)
end

-- Add `v` to `key` in this worker's batch; the first update of a batch sets the timer that
-- writes it (no timer, as outside a request or in a stand-in: written at once).
local function add(self, key, v)
    local dict = self.dict
    local b = BATCHES[dict] or batch_of(dict)
    local pending = b.pending
    local cur = pending[key]
    if cur == nil then
        pending[key], b.updates[key], b.n = v, 1, b.n + 1
    else
        pending[key], b.updates[key] = cur + v, b.updates[key] + 1
    end
    if not b.scheduled then
        -- (a phase without timers, init or exit_worker, raises or says no: written at once)
        local timer = ngx.timer
        local called, made = false, nil
        if timer then called, made = pcall(timer.at, _M.FLUSH_MS / 1000, flush_timer, dict) end
        if called and made then
            b.scheduled = true
        else
            flush_batch(dict, b)
        end
    end
end

-- The dict key of a series, per prefix, name and label list, found again by walking nested
-- tables down the list's entries (a request updates the same few series every time: no string
-- is built for them, only looked up). At most MAX_KEYS keys kept; then the memo starts afresh.
local KEYS, n_keys, MAX_KEYS = {}, 0, 4096
local NIL = {} -- a nil label value's place in the memo
local KEY = {} -- where a node keeps its series' key (no label value is this table)

local function series_key(prefix, name, lbl, suffix)
    local node = child(child(KEYS, prefix), name)
    local n = lbl and #lbl or 0
    for i = 1, n do
        local v = lbl[i]
        if v == nil then v = NIL elseif v ~= v then v = "nan" end -- (NaN is no table key)
        node = child(node, v)
    end
    if suffix then node = child(node, suffix) end
    local key = node[KEY]
    if key == nil then
        key = prefix .. name .. labels(lbl) .. (suffix or "")
        if n_keys >= MAX_KEYS then KEYS, n_keys = {}, 0 end
        n_keys = n_keys + 1
        node[KEY] = key
    end
    return key
end

--- Add `v` (default 1) to a counter or gauge.
-- @tparam string name metric name
-- @tparam[opt] table lbl alternating label names and values, e.g. `{"contract", "t", "gate", "schema"}`
-- @tparam[opt=1] number v
function _M.inc(self, name, lbl, v)
    add(self, series_key("v|", name, lbl), v or 1)
end

-- Is process `pid` alive? A worker killed with -9 never takes its gauge slot down, so the
-- slots of dead workers are left out and swept. /proc on Linux; elsewhere every slot counts.
local HAS_PROC = (function()
    local f = io.open("/proc/self/stat", "r")
    if f then f:close() end
    return f ~= nil
end)()
local function alive(pid)
    if not HAS_PROC then return true end
    local f = io.open("/proc/" .. pid .. "/stat", "r")
    if f then f:close() end
    return f ~= nil
end
_M.alive = alive

-- This worker's gauge slot: its pid. Not `ngx.worker.id()` alone: during a reload the old
-- workers still drain under the same ids as the new ones, so a new worker resetting "its" id
-- would wipe a slot an old worker later takes down again (a negative gauge).
local slot_pid, slot_name, slot_prefix
local function slot()
    local pid = ngx.worker and ngx.worker.pid and ngx.worker.pid() or 0
    if pid ~= slot_pid then slot_pid, slot_name, slot_prefix = pid, tostring(pid), "g|" .. pid .. "|" end
    return slot_name, slot_prefix
end

--- Add `v` (default 1) to a gauge, in this worker's own slot (`g|<pid>|series`): `render`
-- sums the slots of live workers, so requests a killed worker held do not stay counted.
-- @tparam string name metric name
-- @tparam[opt] table lbl as for `inc`
-- @tparam[opt=1] number v
function _M.gauge(self, name, lbl, v)
    local _, prefix = slot()
    incr(self, series_key(prefix, name, lbl), v or 1)
end

--- Delete this worker's gauge slot and those of workers that no longer run (for
-- `init_worker_by_lua`: a worker that replaces a killed one clears what it left; its own slot
-- goes too, in case a dead worker's pid came round again).
-- @treturn integer slots deleted
function _M.sweep(self)
    local n, live = 0, { [slot()] = false }
    for _, key in ipairs(self.dict:get_keys(0)) do
        local pid = match(key, "^g|(%d+)|")
        if pid then
            if live[pid] == nil then live[pid] = alive(pid) end
            if not live[pid] then
                self.dict:delete(key)
                n = n + 1
            end
        end
    end
    return n
end

-- "|<bucket index>", the end of a bucket's key (more than any histogram has)
local BUCKET_SUFFIX = {}
for i = 1, 64 do BUCKET_SUFFIX[i] = "|" .. i end

--- Observe one value in a histogram (buckets from `BUCKETS[name]`).
-- @tparam string name metric name
-- @tparam table|nil lbl as for `inc`
-- @tparam number v the value (seconds, count, tokens)
function _M.observe(self, name, lbl, v)
    local bounds = _M.BUCKETS[name]
    local idx = #bounds + 1
    for i = 1, #bounds do
        if v <= bounds[i] then
            idx = i
            break
        end
    end
    add(self, series_key("b|", name, lbl, BUCKET_SUFFIX[idx]), 1)
    add(self, series_key("s|", name, lbl), v)
end

-- `le` as Prometheus writes it.
local function le(bound)
    if bound == nil then return "+Inf" end
    if bound == math.floor(bound) then return format("%d", bound) end
    return format("%g", bound)
end

local function num(v)
    if v == math.floor(v) and v < 2 ^ 53 then return format("%d", v) end
    return format("%.17g", v)
end

-- `name{a="x"}` + `le` -> `name_bucket{a="x",le="..."}`
local function with_le(series, suffix, bound)
    local name, lbl = match(series, "^([^{]+)(.*)$")
    local l = 'le="' .. le(bound) .. '"'
    if lbl == "" then return name .. suffix .. "{" .. l .. "}" end
    return name .. suffix .. sub(lbl, 1, -2) .. "," .. l .. "}"
end

local function with_suffix(series, suffix)
    local name, lbl = match(series, "^([^{]+)(.*)$")
    return name .. suffix .. lbl
end

--- Everything in the dict as Prometheus text (`# HELP`, `# TYPE`, then the samples; metric
-- families sorted by name, histogram buckets cumulative with a `+Inf` bucket).
-- @treturn string text, each line ending in "\n"
function _M.render(self)
    _M.flush(self) -- this worker's own updates are in the scrape
    local families = {}  -- name -> { lines }
    local hist = {}      -- series -> { buckets = {idx = n}, sum, count }
    local gauges, live = {}, {}  -- series -> sum over the slots of live workers; pid -> alive
    local keys = self.dict:get_keys(0)
    for _, key in ipairs(keys) do
        local v = self.dict:get(key)
        if type(v) == "number" then
            local kind, rest = sub(key, 1, 1), sub(key, 3)
            if kind == "g" then
                local pid, series = match(rest, "^(%d+)|(.*)$")
                if pid then
                    if live[pid] == nil then live[pid] = alive(pid) end
                    -- a dead worker's slot counts 0, but its series stays (as 0)
                    gauges[series] = (gauges[series] or 0) + (live[pid] and v or 0)
                end
            elseif kind == "v" then
                local name = match(rest, "^[^{]+")
                local f = families[name] or {}
                families[name] = f
                f[#f + 1] = rest .. " " .. num(v)
            else
                local series, idx = rest, nil
                if kind == "b" then series, idx = match(rest, "^(.*)|(%d+)$") end
                local h = hist[series] or { buckets = {}, sum = 0 }
                hist[series] = h
                if kind == "b" then
                    h.buckets[tonumber(idx)] = v
                elseif kind == "s" then
                    h.sum = v
                end
            end
        end
    end
    for series, v in pairs(gauges) do
        local name = match(series, "^[^{]+")
        local f = families[name] or {}
        families[name] = f
        f[#f + 1] = series .. " " .. num(v)
    end
    for series, h in pairs(hist) do
        local name = match(series, "^[^{]+")
        local bounds = _M.BUCKETS[name]
        if bounds then
            local f = families[name] or {}
            families[name] = f
            local acc, lines = 0, {}
            for i = 1, #bounds + 1 do
                acc = acc + (h.buckets[i] or 0)
                lines[i] = with_le(series, "_bucket", bounds[i]) .. " " .. num(acc)
            end
            lines[#lines + 1] = with_suffix(series, "_sum") .. " " .. num(h.sum)
            -- _count is the +Inf bucket: the bucket, sum and count keys are updated one after
            -- another, so a scrape between them would otherwise show +Inf != _count
            lines[#lines + 1] = with_suffix(series, "_count") .. " " .. num(acc)
            f[#f + 1] = concat(lines, "\n")
        end
    end
    local errors = self.errors + batch_of(self.dict).errors
    if errors > 0 then
        families.jsoncontract_metrics_errors_total = { "jsoncontract_metrics_errors_total " .. num(errors) }
    end
    local names = {}
    for name in pairs(families) do names[#names + 1] = name end
    sort(names)
    local out = {}
    for _, name in ipairs(names) do
        local h = HELP[name] or { "untyped", name }
        out[#out + 1] = "# HELP " .. name .. " " .. h[2]
        out[#out + 1] = "# TYPE " .. name .. " " .. h[1]
        local f = families[name]
        sort(f)
        for _, line in ipairs(f) do out[#out + 1] = line end
    end
    out[#out + 1] = ""
    return concat(out, "\n")
end

return _M
