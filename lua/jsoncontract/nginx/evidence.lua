--- Evidence records for the nginx gateway, written without blocking a request.
--
-- The same records as `jsoncontract.evidence` (one JSON line per HTTP exchange; never an
-- API key or request/response headers; model text and input only with `record_text`), but a
-- request only encodes its line and appends it to a per-worker buffer. The buffer goes to the
-- file from an `ngx.timer` (at most every `flush_ms`, and when the worker exits gracefully), so the
-- disk write never happens inside a request; `nginx -s stop` (TERM) fires no timer, so the gateway's
-- `exit_worker` writes what is left. Each flush appends whole lines, one write(2) per up to 1 MB,
-- so several workers can share one file. With `path = "log"` every line goes to nginx's error
-- log instead (`ngx.log` at NOTICE level, prefixed "jsoncontract evidence: "). A full buffer
-- (`max_lines`) drops new lines and counts them (`dropped`).
-- @module jsoncontract.nginx.evidence
-- luacheck: read globals ngx
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"

local type, setmetatable, error, ipairs, pairs, tostring = type, setmetatable, error, ipairs, pairs, tostring
local io_open, concat = io.open, table.concat
local evidence = require "jsoncontract.evidence"
local EVIDENCE_MODE = evidence.EVIDENCE_MODE

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

-- Every sink made in this process (weak: a dropped gateway takes its sink along), for
-- flush_all and check_all.
local SINKS = setmetatable({}, { __mode = "k" })

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
    local sink = setmetatable({
        path = opts.path, to_log = opts.path == "log", record_text = opts.record_text == true,
        flush_ms = opts.flush_ms or 1000, max_lines = opts.max_lines or 10000,
        buf = {}, n = 0, pending = false, dropped = 0, records = 0, last_error = nil,
    }, mt)
    SINKS[sink] = true
    return sink
end

-- Biggest single write(2) of a flush: whole lines up to about this many bytes (a longer line
-- goes alone), so a large buffer is not one huge string on top of its lines.
local CHUNK = 1024 * 1024

-- The user this process runs as ("www-data", or "uid 33"), for messages about file access.
local function whoami()
    local f = io_open("/proc/self/status", "r")
    local st = f and f:read("*a") or ""
    if f then f:close() end
    local uid = st:match("\nUid:%s+%d+%s+(%d+)")
    if not uid then return "?" end
    local pw = io_open("/etc/passwd", "r")
    if pw then
        for line in pw:lines() do
            local name, id = line:match("^([^:]*):[^:]*:(%d+):")
            if id == uid then
                pw:close()
                return name .. " (uid " .. uid .. ")"
            end
        end
        pw:close()
    end
    return "uid " .. uid
end
_M.whoami = whoami

-- Open the file for appending, made 0640 when new (nginx workers run with umask 0: io.open
-- alone would make it writable by all). Unbuffered: each f:write is one fwrite, which glibc
-- turns into one write(2), and an O_APPEND write(2) to a regular file lands whole, so lines from
-- several workers appending to one file never interleave (a buffered FILE splits a long string
-- into a block-sized write and a tail, and another worker's append could land between them).
local function open_append(path)
    local f, msg = core.create(path, EVIDENCE_MODE)
    if f then f, msg = io_open(path, "a") end
    if not f then return nil, msg end
    f:setvbuf("no")
    return f
end

-- Say once per worker and per distinct error, clearly, why lines are lost (a flush every
-- flush_ms would otherwise repeat the same ERR line).
local function report(self, what, msg, n)
    if self.last_error == msg then return end
    self.last_error = msg
    ngx.log(ngx.ERR, "jsoncontract evidence: cannot ", what, " ", self.path, " as ", whoami(), ": ", msg,
        n > 0 and " (" .. n .. " lines dropped)" or "", "; evidence lines are dropped until that user may ",
        "append to it (create its directory for the worker user, see docs/openresty.md)")
end

-- Write the buffer to the file (runs in a timer; `premature` at worker exit, when it must
-- still write).
local function flush(_, self)
    self.pending = false
    if self.n == 0 then return end
    local lines, n = self.buf, self.n
    self.buf, self.n = {}, 0
    local f, msg = open_append(self.path)
    if not f then
        self:drop(n)
        return report(self, "open", msg, n)
    end
    -- Whole lines per write: a chunk never ends inside a line.
    local i = 1
    while i <= n do
        local j, size = i, #lines[i] + 1
        while j < n and size + #lines[j + 1] + 1 <= CHUNK do
            j = j + 1
            size = size + #lines[j] + 1
        end
        -- one string, one fwrite (f:write(a, b) would be two writes)
        local ok, werr = f:write(concat(lines, "\n", i, j) .. "\n")
        if not ok then
            f:close()
            self:drop(n - i + 1)
            return report(self, "write", werr, n - i + 1)
        end
        i = j + 1
    end
    f:close()
    self.last_error = nil
end

--- Check, in this worker, that the evidence file can be appended to (it is created, 0640, when
-- missing); logs one ERR naming the path and the worker's user when it cannot. A no-op for
-- `path = "log"`.
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string why not (the open error)
function _M.check(self)
    if self.to_log then return true end
    local f, msg = open_append(self.path)
    if not f then
        report(self, "open", msg, 0)
        return nil, msg
    end
    f:close()
    return true
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

--- Write what every sink of this process has buffered (for `exit_worker_by_lua`: a TERM,
-- `nginx -s stop`, ends a worker without firing its timers).
function _M.flush_all()
    for sink in pairs(SINKS) do flush(false, sink) end
end

--- `check` each sink's file once per path (for `init_worker_by_lua`).
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string the first path that cannot be written, and why
function _M.check_all()
    local done, first = {}, nil
    for sink in pairs(SINKS) do
        if not sink.to_log and not done[sink.path] then
            done[sink.path] = true
            local ok, msg = sink:check()
            if not ok and not first then first = sink.path .. ": " .. msg end
        end
    end
    if first then return nil, first end
    return true
end

--- Check, in this worker, that nginx's error log keeps the NOTICE lines of `path = "log"`
-- sinks; when its level is above NOTICE (Debian's default `error_log ... error;`), log one ERR
-- naming the directive to set (for `init_worker_by_lua`). Without lua-resty-core's
-- `ngx.errlog` the level cannot be read, and nothing is said.
-- @treturn[1] true (or no `path = "log"` sink, or the level cannot be read)
-- @return[2] nil
-- @treturn[2] string why the lines are lost
function _M.check_log_level()
    local any = false
    for sink in pairs(SINKS) do
        if sink.to_log then any = true; break end
    end
    if not any then return true end
    local ok, errlog = pcall(require, "ngx.errlog")
    if not ok or type(errlog) ~= "table" or type(errlog.get_sys_filter_level) ~= "function" then return true end
    local lok, level = pcall(errlog.get_sys_filter_level)
    if not lok or type(level) ~= "number" or level >= ngx.NOTICE then return true end
    local names = { [ngx.STDERR] = "stderr", [ngx.EMERG] = "emerg", [ngx.ALERT] = "alert", [ngx.CRIT] = "crit",
        [ngx.ERR] = "error", [ngx.WARN] = "warn" }
    local msg = "the error log's level is " .. (names[level] or tostring(level)) .. ", so evidence with "
        .. 'path = "log" (written at NOTICE) is filtered out and lost, as are the gateway\'s INFO/WARN lines '
        .. "for non-200 answers; set `error_log <file> notice;` in nginx.conf, or give evidence a file path"
    ngx.log(ngx.ERR, "jsoncontract evidence: ", msg)
    return nil, msg
end

-- The reasons this worker already logged for having no flush timer.
local NO_TIMER_SAID = {}

local function schedule(self)
    if self.pending then return end
    local ok, err = ngx.timer.at(self.flush_ms / 1000, flush, self)
    if ok then
        self.pending = true
    else
        -- No timer (worker exiting, or lua_max_pending_timers reached): write now rather than lose it.
        -- Said once per worker and reason: a draining worker gets here for every record it writes.
        if not NO_TIMER_SAID[err] then
            NO_TIMER_SAID[err] = true
            ngx.log(ngx.WARN, "jsoncontract evidence: no flush timer (", err, "), writing now",
                " (said once per worker; later records are written the same way)")
        end
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

-- Longest evidence line sent to the error log, bytes. nginx cuts a whole error-log entry at
-- 2048 bytes (NGX_MAX_ERROR_STR), its time/level/pid/connection prefix, ngx_lua's
-- "[lua] file:line: fn(): " and the "jsoncontract evidence: " prefix included; what is left
-- must still leave room for a few hundred bytes of prefix.
_M.LOG_LINE_MAX = 1500

-- The record fields that hold text of any length (kept only with record_text).
local TEXT_FIELDS = evidence.TEXT_FIELDS

local cut = require("jsoncontract.utf8").cut

local function encode_redacted(record, list)
    return secrets.redact(core.encode(record), list)
end

-- A line for the error log that fits LOG_LINE_MAX and is still one JSON object: the text
-- fields cut (a table `feedback` dropped) and named in `truncated`; when that is not enough,
-- the record's identity and gate only, with `truncated = true`.
local function fit_log(record, line, list)
    local max = _M.LOG_LINE_MAX
    local names, seen = setmetatable({}, core.array_mt), {}
    local function mark(k)
        if not seen[k] then seen[k] = true; names[#names + 1] = k end
    end
    for _ = 1, 6 do
        local total = 0
        for _, k in ipairs(TEXT_FIELDS) do
            local v = record[k]
            if type(v) == "string" then total = total + #v elseif v ~= nil then total = total + 1 end
        end
        if total == 0 then break end
        -- escaping can make a byte up to six in JSON: cut more than the excess, then look
        -- again. The bytes left are shared out evenly; a field under its share stays whole.
        local left = total - (#line - max + 64)
        local order = {}
        for _, k in ipairs(TEXT_FIELDS) do
            local v = record[k]
            if type(v) == "string" then
                if #v > 0 then order[#order + 1] = k end
            elseif v ~= nil then
                record[k] = nil
                mark(k)
            end
        end
        table.sort(order, function(a, b) return #record[a] < #record[b] end)
        for i, k in ipairs(order) do
            local v = record[k]
            local share = math.max(0, math.floor(left / (#order - i + 1)))
            if #v > share then
                record[k] = cut(v, share)
                mark(k)
            end
            left = left - #record[k]
        end
        record.truncated = names
        line = encode_redacted(record, list)
        if #line <= max then return line end
    end
    return encode_redacted({ ts = record.ts, request_id = record.request_id, item_id = record.item_id,
        attempt = record.attempt, gate = record.gate, kind = record.kind, http_status = record.http_status,
        truncated = true }, list)
end

--- Encode, redact and buffer one record (`text`, `input`, `feedback` dropped unless the sink
-- records text). A line for the error log (`path = "log"`) longer than `LOG_LINE_MAX` bytes has
-- its text fields shortened and named in `truncated` (an array), so it stays one JSON object.
-- @tparam table record
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string "buffer full"
function W.write(self, record)
    -- the batch writer's rule: text fields, headers, the key (jsoncontract.evidence.line)
    local line = evidence.line(record, self.sink.record_text, self.secrets)
    if self.sink.to_log and #line > _M.LOG_LINE_MAX then line = fit_log(record, line, self.secrets) end
    self.records = self.records + 1
    return self.sink:push(line)
end

return _M
