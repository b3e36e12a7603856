--- Evidence: one JSON line per attempt, and metrics per gate (docs/design.md "Evidence").
-- A record never holds an API key or a request header (of a response's headers only what
-- `jsoncontract.secrets.recorded_headers` keeps: its request id, Retry-After, rate-limit
-- counters); raw model text and user input only when the writer was opened with
-- `record_text = true`. As a last line of defence, any registered secret found in an encoded
-- line is replaced by "[redacted]".
-- @module jsoncontract.evidence
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"

local type, setmetatable, pairs, ipairs, error, pcall = type, setmetatable, pairs, ipairs, error, pcall
local io_open, format = io.open, string.format
local concat = table.concat

local _M = { _VERSION = core._VERSION }

--- Permission bits of a new evidence log: owner reads and writes, group reads (0640).
_M.EVIDENCE_MODE = 416
local EVIDENCE_MODE = _M.EVIDENCE_MODE
local writer_mt = { __index = {} }
local W = writer_mt.__index

--- Open an evidence log for appending.
-- @tparam string path file to append JSON lines to
-- @tparam[opt] table opts `record_text` (boolean, default false: keep raw model text and input)
-- @treturn[1] table writer
-- @return[2] nil
-- @treturn[2] string message from io.open
-- @raise when path is not a string
function _M.open(path, opts)
    if type(path) ~= "string" then error("evidence.open: path must be a string", 2) end
    opts = opts or {}
    -- made 0640 (less the umask) before io.open would make it 0666 less the umask
    local made, why = core.create(path, EVIDENCE_MODE)
    if not made then return nil, why end
    local f, msg = io_open(path, "a")
    if not f then return nil, msg end
    return setmetatable({ file = f, path = path, record_text = opts.record_text == true,
        secrets = {}, records = 0 }, writer_mt)
end

--- A writer that keeps records in memory (for tests and for `jc.ask` without a log).
-- @tparam[opt] table opts as for `open`
-- @treturn table writer whose `lines` field holds the encoded records
function _M.memory(opts)
    opts = opts or {}
    return setmetatable({ lines = {}, record_text = opts.record_text == true, secrets = {}, records = 0 },
        writer_mt)
end

--- Register a secret (an API key) that must never reach the log.
-- @tparam string secret
function W.add_secret(self, secret)
    if type(secret) == "string" and #secret >= 4 then
        self.secrets[#self.secrets + 1] = secret
    end
end


--- The fields of an evidence record that hold text of any length or words that may quote the
-- model or the user (the model's text, the input, the re-ask's feedback, the gate's message and
-- error items): on a line only when the writer records text. The batch writer, the nginx
-- writer and the job store's export all drop these and no others.
_M.TEXT_FIELDS = { "text", "input", "feedback", "error_message", "error_items" }
local TEXT_FIELDS = _M.TEXT_FIELDS

--- The one rule from a record to the line that may leave (the batch writer here and
-- `jsoncontract.nginx.evidence` both use it): the text fields (`TEXT_FIELDS`) dropped unless
-- `record_text`; never a request's headers, of a response's only what
-- `jsoncontract.secrets.recorded_headers` keeps; encoded, and every spelling of each secret
-- replaced (`jsoncontract.secrets.redact`). A record that cannot be encoded (a value no JSON
-- can hold) becomes its identity and gate with `evidence_error`, so it still leaves a trace.
-- Changes `record` in place (the dropped fields, the headers).
-- @tparam table record a JSON-encodable table
-- @tparam boolean record_text keep the text fields
-- @tparam table secrets_list strings never to appear on the line
-- @treturn string the line (no newline)
function _M.line(record, record_text, secrets_list)
    if not record_text then
        for _, k in ipairs(TEXT_FIELDS) do record[k] = nil end
    end
    record.headers, record.request_headers = nil, nil
    record.response_headers = secrets.recorded_headers(record.response_headers, secrets_list)
    local encoded, line = pcall(core.encode, record)
    if not encoded then
        line = core.encode { ts = record.ts, request_id = record.request_id, item_id = record.item_id,
            attempt = record.attempt, gate = record.gate, kind = record.kind,
            evidence_error = secrets.clean(line, secrets_list, 300) }
    end
    return (secrets.redact(line, secrets_list))
end

--- Write one record (`_M.line`: text fields dropped unless the writer records text).
-- @tparam table record a JSON-encodable table
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string io error message, or "closed"
function W.write(self, record)
    local line = _M.line(record, self.record_text, self.secrets)
    self.records = self.records + 1
    if self.lines then
        self.lines[#self.lines + 1] = line
        return true
    end
    if not self.file then return nil, "closed" end
    local ok, msg = self.file:write(line, "\n")
    if not ok then return nil, msg end
    self.file:flush()
    return true
end

--- Close the log (idempotent).
function W.close(self)
    if self.file then
        self.file:close()
        self.file = nil
    end
end

----------------------------------------------------------------------------
-- Metrics per gate
----------------------------------------------------------------------------

local metrics_mt = { __index = {} }
local M = metrics_mt.__index

-- Attempt-level counters, in gate order, then item-level outcomes.
local ATTEMPT_KEYS = { "attempts", "transport_ok", "protocol_ok", "parseable", "schema_valid", "rules_pass" }
local ITEM_KEYS = { "items", "accepted", "accepted_first_try", "accepted_after_retry", "refused", "truncated",
    "filtered", "transport_failed", "needs_clarification", "human_review" }

--- New metrics counters.
-- @treturn table metrics
function _M.metrics()
    local m = { counts = {} }
    for _, k in ipairs(ATTEMPT_KEYS) do m.counts[k] = 0 end
    for _, k in ipairs(ITEM_KEYS) do m.counts[k] = 0 end
    return setmetatable(m, metrics_mt)
end

local GATE_RANK = { transport = 0, protocol = 1, format = 2, schema = 3, rules = 4, accepted = 5 }

--- Count one attempt by the last gate it reached.
-- @tparam string gate "transport"|"protocol"|"format"|"schema"|"rules" (where it failed) or "accepted"
function M.observe_attempt(self, gate)
    local c, r = self.counts, GATE_RANK[gate] or 0
    c.attempts = c.attempts + 1
    if r >= 1 then c.transport_ok = c.transport_ok + 1 end
    if r >= 2 then c.protocol_ok = c.protocol_ok + 1 end
    if r >= 3 then c.parseable = c.parseable + 1 end
    if r >= 4 then c.schema_valid = c.schema_valid + 1 end
    if r >= 5 then c.rules_pass = c.rules_pass + 1 end
end

--- Count one finished item from its outcome (see `jsoncontract.run`).
-- @tparam table outcome
function M.observe_outcome(self, outcome)
    local c = self.counts
    c.items = c.items + 1
    for _, a in ipairs(outcome.attempts) do self:observe_attempt(a.gate) end
    if outcome.status == "accepted" then
        c.accepted = c.accepted + 1
        if #outcome.attempts == 1 then
            c.accepted_first_try = c.accepted_first_try + 1
        else
            c.accepted_after_retry = c.accepted_after_retry + 1
        end
        if outcome.needs_clarification then c.needs_clarification = c.needs_clarification + 1 end
    else
        c.human_review = c.human_review + 1
        local cat = outcome.reason and outcome.reason.category
        if cat == "refused" then c.refused = c.refused + 1
        elseif cat == "truncated" then c.truncated = c.truncated + 1
        elseif cat == "filtered" then c.filtered = c.filtered + 1
        elseif cat == "transport" then c.transport_failed = c.transport_failed + 1
        end
    end
end

--- The counters as a table (`counts[name] = integer`).
function M.summary(self)
    local out = {}
    for k, v in pairs(self.counts) do out[k] = v end
    return out
end

--- A human-readable table of the counters, one line each, in gate order.
-- @treturn string
function M.format(self)
    local c, lines = self.counts, {}
    local function pct(n, d) return d > 0 and format("%5.1f%%", 100 * n / d) or "     -" end
    lines[#lines + 1] = "per attempt (gate reached):"
    for _, k in ipairs(ATTEMPT_KEYS) do
        lines[#lines + 1] = format("  %-22s %6d  %s", k, c[k], k == "attempts" and "" or pct(c[k], c.attempts))
    end
    lines[#lines + 1] = "per item (outcome):"
    for _, k in ipairs(ITEM_KEYS) do
        lines[#lines + 1] = format("  %-22s %6d  %s", k, c[k], k == "items" and "" or pct(c[k], c.items))
    end
    return concat(lines, "\n")
end

return _M
