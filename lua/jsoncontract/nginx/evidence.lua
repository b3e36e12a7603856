--- Evidence records for the nginx gateway, written without blocking a request.
--
-- The same records as `jsoncontract.evidence` (one JSON line per HTTP exchange; never an
-- API key or request/response headers; model text and input only with `record_text`), but a
-- request only encodes its line and appends it to a per-worker buffer. The buffer goes to the
-- file from an `ngx.timer` (at most every `flush_ms`, and when the worker exits), so the disk
-- write never happens inside a request. With `path = "log"` every line goes to nginx's error
-- log instead (`ngx.log` at NOTICE level, prefixed "jsoncontract evidence: "). A full buffer
-- (`max_lines`) drops new lines and counts them (`dropped`).
-- @module jsoncontract.nginx.evidence
-- luacheck: read globals ngx
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"

local type, setmetatable, error, ipairs, pairs, tostring = type, setmetatable, error, ipairs, pairs, tostring
local io_open, concat = io.open, table.concat
local EVIDENCE_MODE = require("jsoncontract.evidence").EVIDENCE_MODE

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

local OPTS = { path = "string", record_text = "boolean", flush_ms = "number", max_lines = "number" }

--- A per-worker evidence sink.
-- @tparam table opts `path` (string, a file appended to, or `"log"` for nginx's error log;
--   required), `record_text` (boolean, default false: keep model text and the input),
--   `flush_ms` (integer >= 1, default 1000: longest time a line waits in the buffer),
--   `max_lines` (integer >= 1, default 10000: buffered lines at most; more are dropped)
-- @treturn table sink
-- @raise on a missing path or a mistyped option
-- @usage local sink = evidence.new{ path = "/var/log/nginx/jsoncontract.jsonl" }
function _M.new(opts)
    if type(opts) ~= "table" then error("evidence: opts must be a table", 2) end
    for k, v in pairs(opts) do
        if not OPTS[k] then error("evidence: unknown option '" .. tostring(k) .. "'", 2) end
        if type(v) ~= OPTS[k] then error("evidence: " .. k .. " must be a " .. OPTS[k], 2) end
    end
    if not opts.path or opts.path == "" then error("evidence: path is required", 2) end
    for _, k in ipairs { "flush_ms", "max_lines" } do
        local v = opts[k]
        if v ~= nil and (v < 1 or v ~= math.floor(v)) then error("evidence: " .. k .. " must be an integer >= 1", 2) end
    end
    return setmetatable({
        path = opts.path, to_log = opts.path == "log", record_text = opts.record_text == true,
        flush_ms = opts.flush_ms or 1000, max_lines = opts.max_lines or 10000,
        buf = {}, n = 0, pending = false, dropped = 0, records = 0, last_error = nil,
    }, mt)
end

-- Write the buffer to the file (runs in a timer; `premature` at worker exit, when it must
-- still write).
local function flush(_, self)
    self.pending = false
    if self.n == 0 then return end
    local lines, n = self.buf, self.n
    self.buf, self.n = {}, 0
    -- nginx workers run with umask 0: io.open alone would make the log writable by all
    local f, msg = core.create(self.path, EVIDENCE_MODE)
    if f then f, msg = io_open(self.path, "a") end
    if not f then
        self:drop(n)
        self.last_error = msg
        ngx.log(ngx.ERR, "jsoncontract evidence: cannot open ", self.path, ": ", msg)
        return
    end
    lines[n + 1] = ""
    local ok, werr = f:write(concat(lines, "\n", 1, n + 1))
    f:close()
    if not ok then
        self:drop(n)
        self.last_error = werr
        ngx.log(ngx.ERR, "jsoncontract evidence: cannot write ", self.path, ": ", werr)
    end
end

--- Count `n` dropped lines (and in the gateway's metrics when a `meter` is set).
-- @tparam integer n
function _M.drop(self, n)
    self.dropped = self.dropped + n
    if self.meter then self.meter:inc("jsoncontract_evidence_dropped_total", nil, n) end
end

--- Write what is buffered now (blocking file I/O: for the worker's exit, or tests).
function _M.flush_now(self)
    flush(false, self)
end

local function schedule(self)
    if self.pending then return end
    local ok, err = ngx.timer.at(self.flush_ms / 1000, flush, self)
    if ok then
        self.pending = true
    else
        -- No timer (worker exiting, or lua_max_pending_timers reached): write now rather than lose it.
        ngx.log(ngx.WARN, "jsoncontract evidence: no flush timer (", err, "), writing now")
        flush(false, self)
    end
end

--- Append one encoded line (already redacted).
-- @tparam string line
function _M.push(self, line)
    self.records = self.records + 1
    if self.to_log then
        ngx.log(ngx.NOTICE, "jsoncontract evidence: ", line)
        return true
    end
    if self.n >= self.max_lines then
        self:drop(1)
        return nil, "buffer full"
    end
    self.n = self.n + 1
    self.buf[self.n] = line
    schedule(self)
    return true
end

local writer_mt = { __index = {} }
local W = writer_mt.__index

--- A writer for one request, shaped like `jsoncontract.evidence`'s (`add_secret`, `write`), for
-- `jc.ask`'s `evidence` option.
-- @tparam[opt] string secret the API key used by this request (redacted from every line)
-- @treturn table writer
function _M.writer(self, secret)
    local w = setmetatable({ sink = self, secrets = {}, records = 0 }, writer_mt)
    W.add_secret(w, secret)
    return w
end

--- Register a secret that must never reach the evidence.
-- @tparam string secret
function W.add_secret(self, secret)
    if type(secret) ~= "string" or #secret < 4 then return end
    for _, s in ipairs(self.secrets) do
        if s == secret then return end
    end
    self.secrets[#self.secrets + 1] = secret
end

--- Encode, redact and buffer one record (`text`, `input`, `feedback` dropped unless the sink
-- records text).
-- @tparam table record
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string "buffer full"
function W.write(self, record)
    if not self.sink.record_text then
        record.text, record.input, record.feedback = nil, nil, nil
    end
    -- Headers: never a request's, whoever built the record; of a response's only what
    -- secrets.recorded_headers keeps.
    record.headers, record.request_headers = nil, nil
    record.response_headers = secrets.recorded_headers(record.response_headers, self.secrets)
    local line = core.encode(record)
    line = secrets.redact(line, self.secrets)
    self.records = self.records + 1
    return self.sink:push(line)
end

return _M
