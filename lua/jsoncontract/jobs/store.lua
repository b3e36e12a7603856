--- The job store: where a batch job's state lives (docs/jobs.md).
-- One schema and one code path over LuaDBI for SQLite (the default: a file in the output
-- folder, WAL mode) and PostgreSQL (`postgresql://...`, for several workers on several hosts).
-- Every value is a bound parameter of a prepared statement (`?` in the SQL; the PostgreSQL
-- driver numbers them `$1...`): an id or a text holding `?`, quotes or `$$` is data, never SQL.
-- The two engines differ only in the few SQL words of `DIALECTS` (how to take the write lock,
-- how to read the clock, `FOR UPDATE SKIP LOCKED`, how raw bytes are kept).
--
-- An input line that is not UTF-8 text (a Latin-1 byte, a NUL) is kept as the bytes it is
-- (`items.input_bytes`: BLOB / bytea; `input_json` is then NULL) and read back unchanged, so
-- the JSON decoder names the real fault (byte offset, "invalid UTF-8", "control character").
--
-- Tables: `jobs`, `items`, `outcomes` (UNIQUE(job_id, item_id, pass): an outcome is recorded
-- exactly once per pass, by the database, not by luck), `evidence`, `passes`, `runs`.
-- An item's outcome, its evidence rows and its state change commit in ONE transaction
-- (`record_outcome`); nothing counts as done before that commit. An attempt that settles
-- nothing (a failure no item can fix) gives its item back with its evidence rows, also in one
-- transaction (`hold_back`); one whose item is no longer this worker's records its rows alone
-- (`record_attempts`): every attempt leaves its rows, whether or not it decided the item.
-- An item's rows of one pass are numbered 1, 2, ... in the order written (`next_evidence_seq`).
--
-- Errors: methods return `nil, err` with `err.category = "store"` and `kind` one of
-- `"open_failed"` (cannot connect or create the schema), `"write_failed"` (a statement or the
-- commit failed: full disk, lost connection; the transaction was rolled back),
-- `"read_failed"`, `"duplicate"` (the outcome of this item and pass is already recorded),
-- `"not_found"`, `"closed"`. Misuse (wrong argument types) raises.
--
-- Times are seconds since the epoch (floating point), read from the database's clock, so
-- workers on several hosts compare leases against one clock.
-- @module jsoncontract.jobs.store
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"

local seq_len = require("jsoncontract.utf8").seq_len

local type, tostring, tonumber, error, ipairs, setmetatable, pcall =
    type, tostring, tonumber, error, ipairs, setmetatable, pcall
local format, floor = string.format, math.floor
local find, gsub, sub, byte, char = string.find, string.gsub, string.sub, string.byte, string.char
local unpack = table.unpack or unpack -- luacheck: ignore (Lua 5.1 / LuaJIT)

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

-- The only words that differ between the engines.
local DIALECTS = {
    sqlite = {
        begin = "BEGIN IMMEDIATE",  -- take the write lock now: no upgrade deadlock later
        now = "((julianday('now') - 2440587.5) * 86400.0)",
        skip_locked = "",           -- one writer at a time: the write lock is the lease lock
        lock_row = "",              -- (and the row lock: BEGIN IMMEDIATE took it for the whole file)
        -- julianday('now') has millisecond resolution: two jobs made in one millisecond tie, and
        -- the later insert (the larger rowid, one writer at a time) is the newer
        newest = "created_at DESC, rowid DESC",
        bytes = "BLOB", bytes_in = "CAST(? AS BLOB)", bytes_out = "hex(%s)",
    },
    postgresql = {
        begin = "BEGIN",
        newest = "created_at DESC, id DESC", -- clock_timestamp(): microseconds
        now = "extract(epoch from clock_timestamp())::double precision",
        skip_locked = " FOR UPDATE SKIP LOCKED",
        lock_row = " FOR UPDATE",
        -- bytea travels as hex text: the driver's text parameters stop at a NUL
        bytes = "BYTEA", bytes_in = "decode(?, 'hex')", bytes_out = "encode(%s, 'hex')",
    },
}

-- One schema for both engines (TEXT, INTEGER and DOUBLE PRECISION mean the same to both;
-- BYTES is the dialect's word for raw bytes).
local SCHEMA = {
    [[CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, contract_name TEXT, contract_version TEXT, schema_hash TEXT,
        provider TEXT, model TEXT, options_json TEXT, input_digest TEXT, input_path TEXT,
        items INTEGER NOT NULL DEFAULT 0, pass INTEGER NOT NULL DEFAULT 1,
        created_at DOUBLE PRECISION, state TEXT NOT NULL)]],
    [[CREATE TABLE IF NOT EXISTS items (
        job_id TEXT NOT NULL, item_id TEXT NOT NULL, seq INTEGER NOT NULL, input_json TEXT,
        input_digest TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT, lease_expires_at DOUBLE PRECISION, pass INTEGER NOT NULL DEFAULT 1,
        input_bytes BYTES, PRIMARY KEY (job_id, item_id))]],
    "CREATE INDEX IF NOT EXISTS items_by_state ON items (job_id, state, seq)",
    [[CREATE TABLE IF NOT EXISTS outcomes (
        job_id TEXT NOT NULL, item_id TEXT NOT NULL, pass INTEGER NOT NULL, status TEXT NOT NULL,
        value_json TEXT, reason_json TEXT, reason_category TEXT, reason_kind TEXT, record_json TEXT,
        decided_by TEXT NOT NULL, decided_at DOUBLE PRECISION, worker TEXT,
        UNIQUE (job_id, item_id, pass))]],
    [[CREATE TABLE IF NOT EXISTS evidence (
        job_id TEXT NOT NULL, item_id TEXT NOT NULL, pass INTEGER NOT NULL, seq INTEGER NOT NULL,
        record_json TEXT NOT NULL)]],
    "CREATE INDEX IF NOT EXISTS evidence_by_item ON evidence (job_id, item_id, pass, seq)",
    [[CREATE TABLE IF NOT EXISTS passes (
        job_id TEXT NOT NULL, pass INTEGER NOT NULL, reason TEXT, created_at DOUBLE PRECISION,
        UNIQUE (job_id, pass))]],
    [[CREATE TABLE IF NOT EXISTS runs (
        job_id TEXT NOT NULL, worker TEXT NOT NULL, started_at DOUBLE PRECISION,
        ended_at DOUBLE PRECISION, exchanges INTEGER NOT NULL DEFAULT 0,
        limit_wait_ms DOUBLE PRECISION NOT NULL DEFAULT 0, stop_reason TEXT, stats_json TEXT)]],
}

local ITEM_COLUMNS = "item_id, seq, input_json, input_digest, state, attempts, lease_owner, lease_expires_at, pass"
local OUTCOME_COLUMNS = "item_id, pass, status, value_json, reason_json, reason_category, reason_kind, " ..
    "record_json, decided_by, decided_at, worker"

local function store_error(kind, message, fields)
    return errors.new("store", kind, message, fields)
end

--- Parse a store URL.
-- @tparam string url a SQLite file path, `sqlite:PATH`, or `postgresql://...` / `postgres://...`
-- @treturn string engine "sqlite" or "postgresql"
-- @treturn string what to connect to (a path or the URL)
function _M.parse_url(url)
    if type(url) ~= "string" or url == "" then error("store: url must be a non-empty string", 2) end
    if url:match("^postgres[a-z]*://") then return "postgresql", url end
    local path = url:match("^sqlite:(.+)$")
    return "sqlite", path or url
end

-- Redact a password from a URL for messages.
local function safe_url(url)
    return (url:gsub("^(%a+://[^:/@]*):[^@]*@", "%1:***@"))
end

-- Does the database hold the job store's `jobs` table? true; false when it does not; nil and
-- why when the question fails. nil without a why: the file is not a SQLite database at all.
local function has_jobs_table(self)
    local sql = self.engine == "sqlite"
        and "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'jobs'"
        or "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'jobs' "
            .. "AND table_schema = ANY (current_schemas(false))"
    local rows, err = self:query(sql)
    if not rows then
        if self.engine == "sqlite" and tostring(err):find("not a database", 1, true) then return nil end
        return nil, err
    end
    return (tonumber(rows[1] and rows[1].n) or 0) > 0
end

-- Does `tbl` have the column `name`? true/false, or nil and why.
local function has_column(self, tbl, name)
    local sql = self.engine == "sqlite"
        and "SELECT count(*) AS n FROM pragma_table_info(?) WHERE name = ?"
        or "SELECT count(*) AS n FROM information_schema.columns WHERE table_name = ? AND column_name = ? "
            .. "AND table_schema = ANY (current_schemas(false))"
    local rows, err = self:query(sql, { tbl, name })
    if not rows then return nil, err end
    return (tonumber(rows[1] and rows[1].n) or 0) > 0
end

-- Columns added since the first schema, added to a store made before them (inside the
-- schema's transaction).
local function add_missing_columns(self)
    local has, err = has_column(self, "items", "input_bytes")
    if has == nil then return nil, err end
    if not has then
        local r, e = self:exec("ALTER TABLE items ADD COLUMN input_bytes " .. self.d.bytes)
        if not r then return nil, e end
    end
    return true
end

--- Is `s` UTF-8 text (RFC 3629) without a NUL byte: what a text value may hold on both engines
-- (PostgreSQL's text refuses other bytes and its driver cuts a parameter at a NUL; SQLite
-- would keep them, but the driver reads text back only up to a NUL).
-- @tparam string s
-- @treturn boolean
local function is_text(s)
    if find(s, "\0", 1, true) then return false end
    if not find(s, "[\128-\255]") then return true end
    local i, n = 1, #s
    while i <= n do
        local len = seq_len(s, i)
        if not len then return false end
        i = i + len
    end
    return true
end
_M.is_text = is_text

local function hex_encode(s)
    return (gsub(s, ".", function(c) return format("%02x", byte(c)) end))
end
local function hex_decode(h)
    return (gsub(h, "%x%x", function(x) return char(tonumber(x, 16)) end))
end

-- A SQLite URI filename for `path` (RFC 3986 escapes for the characters a URI gives meaning).
local function sqlite_uri(path, query)
    return "file:" .. gsub(path, "[%%?#]", function(c) return format("%%%02X", byte(c)) end) .. "?" .. query
end

-- Does a SQLite message say the file or its folder cannot be written (a WAL store needs its
-- `-shm` index beside it, even to read)?
local function unwritable(msg)
    msg = tostring(msg)
    return find(msg, "unable to open database file", 1, true) or find(msg, "readonly database", 1, true)
        or find(msg, "read-only", 1, true)
end

-- sqlite3_open_v2 flags (sqlite3.h): READONLY, READWRITE, CREATE, URI.
local SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE, SQLITE_OPEN_CREATE, SQLITE_OPEN_URI = 0x01, 0x02, 0x04, 0x40

local function driver_message(msg)
    return (gsub(tostring(msg), "^Failed to connect to database: ", ""))
end

-- Connect through LuaDBI; the connection, or nil and the driver's message.
local function connect(DBI, engine, target, flags)
    local okc, conn, msg
    if engine == "sqlite" then
        okc, conn, msg = pcall(DBI.Connect, "SQLite3", target, flags)
    else
        -- libpq takes a `postgresql://` URL where the database name goes (PQsetdbLogin).
        okc, conn, msg = pcall(DBI.Connect, "PostgreSQL", target)
    end
    if not okc then return nil, conn end
    if not conn then return nil, driver_message(msg) end
    -- Statements run as written: the driver opens no transaction of its own (it would on
    -- every statement), `tx` and `read_tx` say BEGIN and COMMIT themselves.
    conn:autocommit(true)
    return conn
end

-- "?, ?, ?" for n values (an `IN (...)` list binds each id).
local function marks(n)
    return sub(string.rep(", ?", n), 3)
end

-- How many `?` a statement has: every `?` in our SQL is a parameter (values never reach its text).
local function placeholders(sql)
    local _, n = gsub(sql, "%?", "")
    return n
end

-- The values to bind, checked: numbers as text for PostgreSQL (an integral value as an
-- integer, so an INTEGER parameter takes it), booleans as 1/0; a string that is no UTF-8
-- text, or a value of another type, is refused (nil, message).
local function bind_values(self, sql, args)
    local n = placeholders(sql)
    local vals = {}
    for i = 1, n do
        local v = args and args[i]
        local t = type(v)
        if t == "number" then
            if self.engine == "postgresql" then
                v = (v % 1 == 0 and v > -2^53 and v < 2^53) and format("%d", v) or format("%.17g", v)
            end
        elseif t == "boolean" then
            v = v and 1 or 0
        elseif t == "string" then
            if not (args.bytes and args.bytes[i]) and not is_text(v) then
                return nil, "cannot store the text " .. format("%q", sub(v, 1, 60)) .. (#v > 60 and "..." or "")
                    .. ": it holds a NUL byte or bytes that are not UTF-8"
            end
        elseif v ~= nil then
            return nil, "cannot store a " .. t
        end
        vals[i] = v
    end
    return vals, n
end

-- Prepare and run one statement with its values bound; the statement (to fetch from and
-- close) or nil, message. A connection the server dropped raises in the driver: data, not misuse.
local function run_statement(self, sql, args)
    if not self.conn then return nil, "closed" end
    local vals, n = bind_values(self, sql, args)
    if not vals then return nil, n end
    local okp, stmt, perr = pcall(self.conn.prepare, self.conn, sql)
    if not okp then return nil, tostring(stmt) end
    if not stmt then return nil, tostring(perr) end
    local okx, ok, err = pcall(stmt.execute, stmt, unpack(vals, 1, n))
    if not okx or not ok then
        pcall(stmt.close, stmt)
        return nil, tostring(okx and err or ok)
    end
    -- The SQLite driver binds text without copying it: the values stay referenced while the
    -- statement is stepped (until `close`).
    return stmt, vals
end

--- Open a store; with `opts.create` also create the schema when missing.
-- Every value reaches the database as a bound parameter of a prepared statement (LuaDBI:
-- Debian's lua-dbi-sqlite3 / lua-dbi-postgresql), never inside the SQL text.
-- @tparam string url see `parse_url`
-- @tparam[opt] table opts `create` (boolean, default true: create missing tables and put a
--   SQLite file in WAL mode; false opens an existing job store only, changing nothing in the
--   file: workers, so several hosts never race on DDL, and the commands that only read);
--   `read_only` (boolean: open a SQLite file read-only, `mode=ro`; implies `create = false`).
--   A SQLite job store on storage we cannot write (a finished job on a read-only disk) is
--   opened read-only by `create = false` too: reads work, a write says `write_failed`.
--   When even `mode=ro` cannot open it (WAL needs its `-shm` file, which a read-only folder
--   cannot hold) and no `-wal` file is left beside it (so the file alone is the whole store),
--   it is opened `immutable=1`.
-- @treturn[1] table store (`read_only` is true when opened so)
-- @return[2] nil
-- @treturn[2] table err (`store`/`open_failed`; `not_found` with `create = false` when the
--   database holds no job store: no `jobs` table, or not a SQLite database)
-- @raise when url is not a string
-- @usage local st = assert(store.open("out/run-1/job.sqlite"))
function _M.open(url, opts)
    local engine, target = _M.parse_url(url)
    opts = opts or {}
    local create = opts.create ~= false and not opts.read_only
    local okd, DBI = pcall(require, "DBI")
    if not okd then
        return nil, store_error("open_failed", "LuaDBI is not installed (Debian: lua-dbi-"
            .. (engine == "sqlite" and "sqlite3" or "postgresql") .. ")")
    end
    local function opened(conn, read_only)
        return setmetatable({ engine = engine, url = url, conn = conn, d = DIALECTS[engine],
            read_only = read_only or nil }, mt)
    end
    local conn, msg
    local self
    if engine == "sqlite" and opts.read_only then
        conn, msg = connect(DBI, engine, sqlite_uri(target, "mode=ro"), SQLITE_OPEN_READONLY + SQLITE_OPEN_URI)
        if conn then self = opened(conn, true) end
    else
        conn, msg = connect(DBI, engine, target, engine == "sqlite"
            and (create and SQLITE_OPEN_READWRITE + SQLITE_OPEN_CREATE or SQLITE_OPEN_READWRITE) or nil)
        if conn then self = opened(conn) end
    end
    if not conn then
        return nil, store_error("open_failed", "cannot open the job store " .. safe_url(url) .. ": " .. tostring(msg))
    end
    local function fail(m)
        self:close()
        return nil, store_error("open_failed", "cannot prepare the job store " .. safe_url(url) .. ": " .. m)
    end
    if engine == "sqlite" then
        local ok, err = self:exec("PRAGMA busy_timeout = 10000")
        if not ok then return fail(err) end
    else
        local ok, err = self:exec("SET client_min_messages = warning")
        if not ok then return fail(err) end
    end
    if not create then
        -- Only a job store is opened this way (status, export, workers, the review desk): a
        -- database that is not one is named as such before anything is run or changed in it.
        local present, why = has_jobs_table(self)
        if present == nil and why and engine == "sqlite" and not self.read_only and unwritable(why) then
            -- A folder we cannot write (the WAL index cannot be made): read what is there.
            self:close()
            return _M.open(url, { read_only = true })
        end
        if present == nil and why and engine == "sqlite" and self.read_only and unwritable(why) then
            local wal = io.open(target .. "-wal", "rb")
            local wal_size = wal and wal:seek("end") or 0
            if wal then wal:close() end
            self:close()
            if wal_size > 0 then
                return nil, store_error("open_failed", "cannot read the job store " .. safe_url(url) .. " on "
                    .. "read-only storage: its write-ahead log " .. target .. "-wal holds commits the file "
                    .. "does not, and reading them needs a folder we can write (copy the folder elsewhere)")
            end
            conn, msg = connect(DBI, engine, sqlite_uri(target, "mode=ro&immutable=1"),
                SQLITE_OPEN_READONLY + SQLITE_OPEN_URI)
            if not conn then
                return nil, store_error("open_failed", "cannot open the job store " .. safe_url(url) .. ": " .. msg)
            end
            self = opened(conn, true)
            self.immutable = true
            present, why = has_jobs_table(self)
        end
        if not present then
            self:close()
            return nil, store_error(why and "open_failed" or "not_found", why
                and ("cannot read the job store " .. safe_url(url) .. ": " .. why)
                or format("no job store at %s (%s): create one with `jsoncontract enqueue --store URL` or "
                    .. "`jsoncontract triage`", safe_url(url), present == false and "no jobs table"
                    or "not a SQLite database"))
        end
    end
    if engine == "sqlite" and not self.read_only then
        -- WAL: readers (status, export) never block the writer; FULL: a commit survives a crash
        -- of the machine, not only of the process. WAL is a property of the file, set once when
        -- we create the store: opening one (create = false) changes nothing in the file, even
        -- when it is some other database.
        if create then
            local ok, err = self:exec("PRAGMA journal_mode = WAL")
            if not ok then return fail(err) end
        end
        local ok, err = self:exec("PRAGMA synchronous = FULL")
        if not ok then return fail(err) end
    end
    if create then
        local ok, err = self:tx(function()
            for _, ddl in ipairs(SCHEMA) do
                local r, e = self:exec((gsub(ddl, "BYTES", self.d.bytes)))
                if not r then return nil, e end
            end
            return add_missing_columns(self)
        end)
        if not ok then return fail(tostring(err.message)) end
    end
    local has, herr = has_column(self, "items", "input_bytes")
    if has == nil then return fail(tostring(herr)) end
    self.has_input_bytes = has
    return self
end

--- Close the store (idempotent).
function _M.close(self)
    if self.conn then pcall(self.conn.close, self.conn) end
    self.conn = nil
end

-- Run a statement; returns rows-affected (number) or nil, message.
-- @tparam string sql with `?` for each value
-- @tparam[opt] table args the values, `args[i]` for the i-th `?` (nil: NULL); `args.bytes[i]`
--   true lets the i-th value hold any bytes (a BLOB/bytea parameter)
function _M.exec(self, sql, args)
    local stmt, vals = run_statement(self, sql, args)
    if not stmt then return nil, vals end
    local okn, n = pcall(stmt.affected, stmt)
    pcall(stmt.close, stmt)
    vals = nil -- luacheck: ignore (kept referenced until the statement is closed)
    return okn and floor(tonumber(n) or 0) or 0
end

-- Run a query; returns an array of rows (tables by column name) or nil, message.
function _M.query(self, sql, args)
    local stmt, vals = run_statement(self, sql, args)
    if not stmt then return nil, vals end
    local rows = {}
    local okf, ferr = pcall(function()
        local row = stmt:fetch(true)
        while row do
            rows[#rows + 1] = row
            row = stmt:fetch(true)
        end
    end)
    pcall(stmt.close, stmt)
    vals = nil -- luacheck: ignore (kept referenced until the statement is closed)
    if not okf then return nil, tostring(ferr) end
    return rows
end

-- The SQL expression that reads an item's kept bytes as hex (`input_hex`), or NULL on a store
-- made before items could keep bytes.
function _M.input_hex_sql(self, alias)
    if not self.has_input_bytes then return "NULL AS input_hex" end
    return format(self.d.bytes_out, (alias and alias .. "." or "") .. "input_bytes") .. " AS input_hex"
end

--- An item row's input as the line was written: `input_json`, or the bytes kept for a line
-- that is not UTF-8 text (`input_hex`, see `input_hex_sql`). Sets `row.input_json`.
-- @tparam table row
-- @treturn table row
function _M.input_of(row)
    -- (SQLite's hex(NULL) is '': the text column, when set, is the input)
    if row.input_json == nil and row.input_hex then
        row.input_json = hex_decode(row.input_hex)
    end
    row.input_hex = nil
    return row
end

--- Run `fn()` in one transaction: committed when it returns true, rolled back when it
-- returns nil, message or raises.
-- @tparam function fn returns true or nil, message (or nil, err table)
-- @treturn[1] any what fn returned
-- @return[2] nil
-- @treturn[2] table err (`store`/`write_failed`, or the err table fn returned)
function _M.tx(self, fn)
    if not self.conn then return nil, store_error("closed", "the job store is closed") end
    if self.read_only then
        return nil, store_error("write_failed", "the job store " .. safe_url(self.url) .. " is open read-only "
            .. "(it is on storage this process cannot write): nothing can be recorded in it")
    end
    local ok, err = self:exec(self.d.begin)
    if not ok then return nil, store_error("write_failed", "cannot begin a transaction: " .. err) end
    local okc, r, e = pcall(fn)
    if not okc or not r then
        self:exec("ROLLBACK")
        -- The driver deallocates a PostgreSQL statement only after it ran well: the ones that
        -- failed would stay prepared for the session's life. None is kept across calls.
        if self.engine == "postgresql" then self:exec("DEALLOCATE ALL") end
        if okc and errors.is(e) then return nil, e end
        local why = okc and e or r
        if not okc and errors.is(r) then return nil, r end
        return nil, store_error("write_failed", tostring(why))
    end
    ok, err = self:exec("COMMIT")
    if not ok then
        self:exec("ROLLBACK")
        return nil, store_error("write_failed", "commit failed: " .. err)
    end
    return r, e
end

--- Run `fn()` in one read transaction: every query it makes sees the same snapshot of the
-- store, whatever workers commit meanwhile (PostgreSQL: REPEATABLE READ, READ ONLY; SQLite in
-- WAL mode: a deferred transaction reads from the snapshot its first read took). Nothing is
-- written; the transaction is ended however `fn` returns or raises.
-- @tparam function fn returns up to two values
-- @return what fn returned
-- @return[2] nil
-- @treturn[2] table err (`read_failed` when the transaction cannot begin)
-- @raise what fn raised
function _M.read_tx(self, fn)
    if not self.conn then return nil, store_error("closed", "the job store is closed") end
    local ok, err = self:exec(self.engine == "postgresql" and "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        or "BEGIN DEFERRED")
    if not ok then return nil, store_error("read_failed", "cannot begin a read transaction: " .. err) end
    local okf, r, e = pcall(fn)
    -- Nothing was written: COMMIT and ROLLBACK end it alike; ROLLBACK cannot fail on a full disk.
    self:exec("ROLLBACK")
    if not okf then error(r, 0) end
    return r, e
end

local function is_unique_violation(msg)
    msg = tostring(msg)
    return msg:find("UNIQUE constraint failed", 1, true) or msg:find("duplicate key value", 1, true)
        or msg:find("unique constraint", 1, true)
end

local function new_job_id()
    local pid = core.process_ids and core.process_ids() or 0
    return format("job-%s-%d-%04d", os.date("!%Y%m%dT%H%M%S"), pid, math.random(0, 9999))
end

-- Insert items into a job (inside the caller's transaction) and keep `jobs.items` counted.
local function insert_items(self, job_id, items)
    for _, it in ipairs(items) do
        local r, e
        local input = it.input_json
        if input == nil or type(input) ~= "string" or is_text(input) or not self.has_input_bytes then
            r, e = self:exec("INSERT INTO items (job_id, item_id, seq, input_json, input_digest, state, "
                .. "attempts, pass) VALUES (?, ?, ?, ?, ?, 'pending', 0, "
                .. "(SELECT pass FROM jobs WHERE id = ?))",
                { job_id, it.item_id, it.seq, input, it.input_digest, job_id })
        else
            -- Bytes no text column holds: kept as they are, read back by `input_of`.
            r, e = self:exec("INSERT INTO items (job_id, item_id, seq, input_bytes, input_digest, state, "
                .. "attempts, pass) VALUES (?, ?, ?, " .. self.d.bytes_in .. ", ?, 'pending', 0, "
                .. "(SELECT pass FROM jobs WHERE id = ?))",
                { job_id, it.item_id, it.seq, self.engine == "postgresql" and hex_encode(input) or input,
                  it.input_digest, job_id, bytes = { [4] = true } })
        end
        if not r then
            if is_unique_violation(e) then
                return nil, store_error("duplicate", format("item id %q (line %s) is already in job %s",
                    tostring(it.item_id), tostring(it.seq), job_id))
            end
            -- Name the line: a raw driver message alone does not say which mail it was.
            return nil, store_error("write_failed", format("cannot store item %q (line %s): %s",
                tostring(it.item_id):sub(1, 60), tostring(it.seq), tostring(e)))
        end
    end
    local r, e = self:exec("UPDATE jobs SET items = (SELECT count(*) FROM items WHERE job_id = ?) WHERE id = ?",
        { job_id, job_id })
    if not r then return nil, e end
    return #items
end

--- Create a job, with its items when given, in ONE transaction: when an item cannot be stored
-- (or the disk is full) nothing is left behind, no empty job that would become the newest.
-- @tparam table job fields: `contract_name`, `contract_version`, `schema_hash`, `provider`, `model`
--   (strings), `options_json` (string, JSON), `input_digest` (hex SHA-256 of the input file),
--   `input_path` (string), `id` (string, optional; generated when absent)
-- @tparam[opt] {table,...} items as for `add_items`
-- @treturn[1] string job id
-- @return[2] nil
-- @treturn[2] table err (`duplicate`, `write_failed`: rolled back, no job was created)
function _M.create_job(self, job, items)
    if type(job) ~= "table" then error("store:create_job: job must be a table", 2) end
    if items ~= nil and type(items) ~= "table" then error("store:create_job: items must be an array", 2) end
    local id = job.id or new_job_id()
    local ok, err = self:tx(function()
        local r, e = self:exec("INSERT INTO jobs (id, contract_name, contract_version, schema_hash, provider, "
            .. "model, options_json, input_digest, input_path, created_at, state, pass) VALUES "
            .. "(?, ?, ?, ?, ?, ?, ?, ?, ?, " .. self.d.now .. ", 'open', 1)",
            { id, job.contract_name, job.contract_version, job.schema_hash, job.provider, job.model,
              job.options_json, job.input_digest, job.input_path })
        if not r then return nil, e end
        r, e = self:exec("INSERT INTO passes (job_id, pass, reason, created_at) VALUES (?, 1, ?, "
            .. self.d.now .. ")", { id, "first pass" })
        if not r then return nil, e end
        if items then return insert_items(self, id, items) end
        return true
    end)
    if not ok then return nil, err end
    return id
end

local function num_fields(row, names)
    for _, n in ipairs(names) do
        if row[n] ~= nil then row[n] = tonumber(row[n]) end
    end
    return row
end
local JOB_NUMS = { "items", "pass", "created_at" }
local ITEM_NUMS = { "seq", "attempts", "lease_expires_at", "pass" }
local OUTCOME_NUMS = { "pass", "decided_at" }

--- One job by id.
-- @tparam string job_id
-- @treturn[1] table job: the `jobs` row (`id`, `contract_name`, `contract_version`, `schema_hash`,
--   `provider`, `model`, `options_json`, `input_digest`, `input_path`, `items`, `pass`, `created_at`, `state`)
-- @return[2] nil
-- @treturn[2] table err (`not_found`, `read_failed`)
function _M.job(self, job_id)
    local rows, err = self:query("SELECT * FROM jobs WHERE id = ?", { job_id })
    if not rows then return nil, store_error("read_failed", err) end
    if not rows[1] then return nil, store_error("not_found", "no job " .. tostring(job_id) .. " in the store") end
    return num_fields(rows[1], JOB_NUMS)
end

--- The most recently created job.
-- @treturn[1] table job (as `job`)
-- @return[2] nil
-- @treturn[2] table err (`not_found` when the store has no job)
function _M.latest_job(self)
    local rows, err = self:query("SELECT * FROM jobs ORDER BY " .. self.d.newest .. " LIMIT 1")
    if not rows then return nil, store_error("read_failed", err) end
    if not rows[1] then return nil, store_error("not_found", "the store holds no job") end
    return num_fields(rows[1], JOB_NUMS)
end

--- Add items to a job, all in one transaction.
-- @tparam string job_id
-- @tparam {table,...} items each `{item_id = string, seq = integer, input_json = string,
--   input_digest = string}`
-- @treturn[1] integer how many were added
-- @return[2] nil
-- @treturn[2] table err (`duplicate` when an item id is already in the job, `write_failed`)
function _M.add_items(self, job_id, items)
    if type(items) ~= "table" then error("store:add_items: items must be an array", 2) end
    return self:tx(function() return insert_items(self, job_id, items) end)
end

--- Lease up to `n` items that are waiting (or whose lease expired) to `owner`.
-- On PostgreSQL the rows are taken with `SELECT ... FOR UPDATE SKIP LOCKED`, so workers never
-- wait on each other and never take the same row; on SQLite the write lock does the same.
-- Each lease counts one in the item's `attempts`.
-- @tparam string job_id
-- @tparam string owner the worker's name (host:pid:random)
-- @tparam integer n most items to take (>= 1)
-- @tparam number lease_seconds how long the lease lasts unless renewed
-- @tparam[opt] {string,...} exclude item ids not to take (items this run gave back for good)
-- @treturn[1] {table,...} leased items (`item_id`, `seq`, `input_json`, `input_digest`, `pass`, `attempts`),
--   in `seq` order; empty when nothing is waiting
-- @return[2] nil
-- @treturn[2] table err (`write_failed`)
function _M.lease(self, job_id, owner, n, lease_seconds, exclude)
    if type(owner) ~= "string" or type(n) ~= "number" or type(lease_seconds) ~= "number" then
        error("store:lease: owner (string), n and lease_seconds (numbers) expected", 2)
    end
    local select_args, skip = { job_id }, ""
    if exclude and #exclude > 0 then
        for i, id in ipairs(exclude) do select_args[1 + i] = id end
        skip = " AND item_id NOT IN (" .. marks(#exclude) .. ")"
    end
    select_args[#select_args + 1] = floor(n)
    local got
    local ok, err = self:tx(function()
        local rows, e = self:query("SELECT " .. ITEM_COLUMNS .. ", " .. self:input_hex_sql() .. " FROM items "
            .. "WHERE job_id = ? AND (state = 'pending' OR (state = 'leased' AND lease_expires_at < " .. self.d.now
            .. "))" .. skip .. " ORDER BY seq LIMIT ?" .. self.d.skip_locked, select_args)
        if not rows then return nil, e end
        if #rows == 0 then got = {} return true end
        local args = { owner, lease_seconds, job_id }
        for i, row in ipairs(rows) do args[3 + i] = row.item_id end
        local r
        r, e = self:exec("UPDATE items SET state = 'leased', lease_owner = ?, lease_expires_at = " .. self.d.now
            .. " + ?, attempts = attempts + 1 WHERE job_id = ? AND item_id IN (" .. marks(#rows) .. ")", args)
        if not r then return nil, e end
        if r ~= #rows then
            -- Every row read must be marked: a lease that marks fewer would hand out items
            -- another worker may take too.
            return nil, store_error("write_failed", format("leased %d of %d items read", r, #rows))
        end
        for _, row in ipairs(rows) do
            _M.input_of(row)
            num_fields(row, ITEM_NUMS)
            row.attempts = row.attempts + 1
            row.state, row.lease_owner = "leased", owner
        end
        got = rows
        return true
    end)
    if not ok then return nil, err end
    return got
end

--- Extend the leases `owner` holds on `item_ids` (a heartbeat for long exchanges).
-- @tparam string job_id
-- @tparam string owner
-- @tparam {string,...} item_ids
-- @tparam number lease_seconds
-- @treturn[1] integer leases extended
-- @return[2] nil
-- @treturn[2] table err
function _M.renew(self, job_id, owner, item_ids, lease_seconds)
    if #item_ids == 0 then return 0 end
    local args = { lease_seconds, job_id, owner }
    for i, id in ipairs(item_ids) do args[3 + i] = id end
    return self:tx(function()
        return self:exec("UPDATE items SET lease_expires_at = " .. self.d.now .. " + ? WHERE job_id = ? AND "
            .. "lease_owner = ? AND state = 'leased' AND item_id IN (" .. marks(#item_ids) .. ")", args)
    end)
end

--- Which of `item_ids` are still leased to `owner`: after a renewal that extended fewer leases
-- than it was given (the worker stalled past a lease, and another worker took the item or
-- recorded it), the ones missing here are no longer this worker's to ask the model about.
-- @tparam string job_id
-- @tparam string owner
-- @tparam {string,...} item_ids
-- @treturn[1] table set: item_id -> true
-- @return[2] nil
-- @treturn[2] table err (`read_failed`)
function _M.held(self, job_id, owner, item_ids)
    local set = {}
    if #item_ids == 0 then return set end
    local args = { job_id, owner }
    for i, id in ipairs(item_ids) do args[2 + i] = id end
    local rows, err = self:query("SELECT item_id FROM items WHERE job_id = ? AND lease_owner = ? AND state = "
        .. "'leased' AND item_id IN (" .. marks(#item_ids) .. ")", args)
    if not rows then return nil, store_error("read_failed", tostring(err)) end
    for _, r in ipairs(rows) do set[r.item_id] = true end
    return set
end

--- Give leases back at once (a worker stopping, or `--resume` after a crash of the only
-- process): the items become waiting again. `owner` nil releases every lease of the job.
-- @tparam string job_id
-- @tparam string|nil owner
-- @tparam[opt] {string,...} item_ids only these items
-- @treturn[1] integer items released
-- @return[2] nil
-- @treturn[2] table err
function _M.release(self, job_id, owner, item_ids)
    local where = "job_id = ? AND state = 'leased'"
    local args = { job_id }
    if owner then where = where .. " AND lease_owner = ?" args[2] = owner end
    if item_ids then
        if #item_ids == 0 then return 0 end
        for _, id in ipairs(item_ids) do args[#args + 1] = id end
        where = where .. " AND item_id IN (" .. marks(#item_ids) .. ")"
    end
    return self:tx(function()
        return self:exec("UPDATE items SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL WHERE "
            .. where, args)
    end)
end

--- The evidence `seq` that comes next in an item's pass: one more than the highest recorded
-- (1 when none), so the attempts given back while the item waited (`hold_back`), the outcome's
-- (`record_outcome`) and a person's records read in the order they were written. Call it inside
-- `tx`, before the transaction writes anything else: on PostgreSQL it locks the item's row (FOR
-- UPDATE) until the commit, so two writers of one item's evidence number one after the other
-- (on SQLite the write lock `tx` took does that), and every writer takes that lock first.
-- @tparam string job_id
-- @tparam string item_id
-- @tparam integer pass
-- @treturn[1] integer seq (>= 1)
-- @return[2] nil
-- @treturn[2] table|string err `not_found` (the job has no such item: nothing may be recorded
--   for it), or the driver's message (the caller's transaction rolls back on either)
function _M.next_evidence_seq(self, job_id, item_id, pass)
    local item, e = self:query("SELECT 1 AS x FROM items WHERE job_id = ? AND item_id = ?" .. self.d.lock_row,
        { job_id, item_id })
    if not item then return nil, e end
    if not item[1] then
        return nil, store_error("not_found", "no item " .. tostring(item_id) .. " in job " .. tostring(job_id))
    end
    local rows
    rows, e = self:query("SELECT max(seq) AS s FROM evidence WHERE job_id = ? AND item_id = ? AND pass = ?",
        { job_id, item_id, pass })
    if not rows then return nil, e end
    return (tonumber(rows[1] and rows[1].s) or 0) + 1
end

-- Insert an item's evidence lines under `pass` from `seq` on (inside the caller's transaction).
local function insert_evidence(self, job_id, item_id, pass, seq, lines)
    for i, line in ipairs(lines) do
        local r, e = self:exec("INSERT INTO evidence (job_id, item_id, pass, seq, record_json) VALUES (?, ?, ?, ?, ?)",
            { job_id, item_id, pass, seq + i - 1, line })
        if not r then return nil, e end
    end
    return true
end

-- Insert an item's evidence lines under `pass` after its existing rows (`next_evidence_seq`,
-- which must come first in the caller's transaction).
local function append_evidence(self, job_id, item_id, pass, lines)
    local seq, e = self:next_evidence_seq(job_id, item_id, pass)
    if not seq then return nil, e end
    return insert_evidence(self, job_id, item_id, pass, seq, lines)
end

--- Record the evidence rows of an attempt that decides nothing here, leaving the item as it is:
-- the attempt of a worker whose lease ran out and another took the item, or whose outcome
-- another recorded first (`duplicate`). Its exchanges were made and its tokens spent; the rows
-- continue the item's pass (`next_evidence_seq`), in one transaction.
-- @tparam string job_id
-- @tparam string item_id
-- @tparam integer pass the pass the attempt was made under
-- @tparam {string,...} evidence the attempt's JSON lines (may be empty: then nothing is written)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err (`not_found`: the job has no such item; `write_failed`: rolled back, no row)
-- @raise when pass is not a number or evidence not a table
function _M.record_attempts(self, job_id, item_id, pass, evidence)
    if type(pass) ~= "number" or type(evidence) ~= "table" then
        error("store:record_attempts: pass (integer) and evidence (array of lines) expected", 2)
    end
    if #evidence == 0 then return true end
    return self:tx(function() return append_evidence(self, job_id, item_id, pass, evidence) end)
end

--- Give an item back to waiting WITH the evidence rows of the attempt that settled nothing (a
-- failure no item can fix, `jsoncontract.jobs.breaker`: the model unreachable, a 401, a rule
-- that could not run; or a rule the run's signal stopped), in ONE transaction: the rows and the
-- state change commit together or not at all. The rows continue the item's pass after its
-- existing ones (`next_evidence_seq`), so the outcome recorded later comes after them.
-- Only an item still leased to `owner` under `pass` is given back. When the lease is no longer
-- ours (it ran out and another worker took the item, or the pass was decided meanwhile) the
-- item is left as it is, and the rows are recorded all the same, under `pass`: they are
-- exchanges that were made and tokens that were spent.
-- @tparam string job_id
-- @tparam string owner the worker that leased the item
-- @tparam string item_id
-- @tparam integer pass the pass the item was leased under
-- @tparam {string,...} evidence the attempt's JSON lines (may be empty: then only the give-back)
-- @treturn[1] boolean true when the item was given back, false when its lease was no longer
--   `owner`'s (the rows were recorded, the item left as it was)
-- @return[2] nil
-- @treturn[2] table err (`not_found`: the job has no such item; `write_failed`: rolled back, the
--   item still leased and no row written)
-- @raise when owner is not a string, pass not a number or evidence not a table
function _M.hold_back(self, job_id, owner, item_id, pass, evidence)
    if type(owner) ~= "string" or type(pass) ~= "number" or type(evidence) ~= "table" then
        error("store:hold_back: owner (string), pass (integer) and evidence (array of lines) expected", 2)
    end
    local given_back
    local ok, err = self:tx(function()
        local r, e = append_evidence(self, job_id, item_id, pass, evidence)
        if not r then return nil, e end
        r, e = self:exec("UPDATE items SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL WHERE "
            .. "job_id = ? AND item_id = ? AND state = 'leased' AND lease_owner = ? AND pass = ?",
            { job_id, item_id, owner, pass })
        if not r then return nil, e end
        given_back = r == 1
        return true
    end)
    if not ok then return nil, err end
    return given_back
end

--- Record an item's outcome, its evidence rows and its new state in ONE transaction. The
-- evidence rows continue the pass after the item's existing ones (`next_evidence_seq`: the
-- attempts given back while the item waited come first).
-- @tparam string job_id
-- @tparam string item_id
-- @tparam table outcome `pass` (integer), `status` ("accepted"|"human_review"), `value_json`
--   (string|nil), `reason_json` (string|nil), `reason_category`, `reason_kind` (strings|nil),
--   `record_json` (string: the exported line), `decided_by` ("model"|"human"), `worker` (string),
--   `evidence` ({string,...} JSON lines, optional)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err: `duplicate` (this item and pass already has an outcome: another worker
--   whose lease expired recorded it first; nothing was changed), `not_found` (the job has no
--   such item: nothing recorded), `write_failed` (rolled back)
function _M.record_outcome(self, job_id, item_id, outcome)
    if type(outcome) ~= "table" or type(outcome.pass) ~= "number" or type(outcome.status) ~= "string" then
        error("store:record_outcome: outcome {pass = integer, status = string, ...} expected", 2)
    end
    local ok, err = self:tx(function()
        local seq, e = self:next_evidence_seq(job_id, item_id, outcome.pass)
        if not seq then return nil, e end
        local r
        r, e = self:exec("INSERT INTO outcomes (job_id, " .. OUTCOME_COLUMNS .. ") VALUES "
            .. "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " .. self.d.now .. ", ?)",
            { job_id, item_id, outcome.pass, outcome.status, outcome.value_json, outcome.reason_json,
              outcome.reason_category, outcome.reason_kind, outcome.record_json, outcome.decided_by or "model",
              outcome.worker })
        if not r then
            if is_unique_violation(e) then
                return nil, store_error("duplicate", format("item %s pass %d already has an outcome",
                    tostring(item_id), outcome.pass))
            end
            return nil, e
        end
        r, e = insert_evidence(self, job_id, item_id, outcome.pass, seq, outcome.evidence or {})
        if not r then return nil, e end
        r, e = self:exec("UPDATE items SET state = 'done', lease_owner = NULL, lease_expires_at = NULL "
            .. "WHERE job_id = ? AND item_id = ? AND pass = ?", { job_id, item_id, outcome.pass })
        if not r then return nil, e end
        return true
    end)
    if not ok and err.kind == "duplicate" then
        -- The pass is decided (an outcome exists): the item is done, whoever recorded it. A
        -- store written before a decision marked its item done would otherwise keep it leased,
        -- and workers would take it again and again.
        self:tx(function()
            return self:exec("UPDATE items SET state = 'done', lease_owner = NULL, lease_expires_at = NULL "
                .. "WHERE job_id = ? AND item_id = ? AND pass = ? AND state <> 'done'",
                { job_id, item_id, outcome.pass })
        end)
    end
    return ok, err
end

--- Start a new pass over the items whose latest outcome is `human_review` (after a contract
-- fix, say): they become waiting again under pass+1; earlier outcomes stay recorded.
-- @tparam string job_id
-- @tparam string reason why (recorded in `passes`)
-- @treturn[1] integer the new pass number
-- @treturn[1] integer how many items it holds
-- @return[2] nil
-- @treturn[2] table err
function _M.new_review_pass(self, job_id, reason)
    local pass, count
    local ok, err = self:tx(function()
        local rows, e = self:query("SELECT pass FROM jobs WHERE id = ?", { job_id })
        if not rows then return nil, e end
        if not rows[1] then return nil, store_error("not_found", "no job " .. tostring(job_id)) end
        pass = tonumber(rows[1].pass) + 1
        local r
        r, e = self:exec("UPDATE items SET state = 'pending', pass = ?, lease_owner = NULL, lease_expires_at = NULL "
            .. "WHERE job_id = ? AND state = 'done' AND EXISTS (SELECT 1 FROM outcomes o WHERE o.job_id = items.job_id "
            .. "AND o.item_id = items.item_id AND o.pass = items.pass AND o.status = 'human_review' "
            .. "AND o.decided_by = 'model')", { pass, job_id })
        if not r then return nil, e end
        count = r
        r, e = self:exec("UPDATE jobs SET pass = ? WHERE id = ?", { pass, job_id })
        if not r then return nil, e end
        r, e = self:exec("INSERT INTO passes (job_id, pass, reason, created_at) VALUES (?, ?, ?, " .. self.d.now
            .. ")", { job_id, pass, reason })
        if not r then return nil, e end
        return true
    end)
    if not ok then return nil, err end
    return pass, count
end

-- The latest outcome of each item: the outcome whose pass is the item's highest recorded one.
local LATEST = "SELECT i.item_id, i.seq, i.state, i.attempts, i.pass AS item_pass, i.lease_owner, "
    .. "i.lease_expires_at, o.pass, o.status, o.value_json, o.reason_json, o.reason_category, o.reason_kind, "
    .. "o.record_json, o.decided_by, o.decided_at, o.worker FROM items i LEFT JOIN outcomes o "
    .. "ON o.job_id = i.job_id AND o.item_id = i.item_id AND o.pass = (SELECT max(pass) FROM outcomes o2 "
    .. "WHERE o2.job_id = i.job_id AND o2.item_id = i.item_id) WHERE i.job_id = ?"

--- Items of a job with their latest outcome, in input order.
-- @tparam string job_id
-- @tparam[opt] table filter `state` ("pending"|"leased"|"done"), `status` ("accepted"|"human_review":
--   latest outcome), `reason` (a reason kind, e.g. "order_exists" rule kinds or "schema"),
--   `offset`, `limit` (integers)
-- @treturn[1] {table,...} rows: `item_id`, `seq`, `state`, `attempts`, `item_pass`, `lease_owner`,
--   `lease_expires_at`, and the latest outcome's `pass`, `status`, `value_json`, `reason_json`,
--   `reason_category`, `reason_kind`, `record_json`, `decided_by`, `decided_at`, `worker` (nil when none)
-- @return[2] nil
-- @treturn[2] table err (`read_failed`)
function _M.items(self, job_id, filter)
    filter = filter or {}
    local sql, args = LATEST, { job_id }
    if filter.state then sql = sql .. " AND i.state = ?" args[#args + 1] = filter.state end
    if filter.status then sql = sql .. " AND o.status = ?" args[#args + 1] = filter.status end
    if filter.reason then
        sql = sql .. " AND (o.reason_kind = ? OR o.reason_category = ?)"
        args[#args + 1] = filter.reason
        args[#args + 1] = filter.reason
    end
    sql = sql .. " ORDER BY i.seq"
    if filter.limit or filter.offset then
        -- SQLite takes OFFSET only after a LIMIT; -1 / NULL mean none
        sql = sql .. " LIMIT ? OFFSET ?"
        args[#args + 1] = filter.limit and floor(filter.limit) or (self.engine == "sqlite" and -1 or nil)
        args[#args + 1] = floor(filter.offset or 0)
    end
    local rows, err = self:query(sql, args)
    if not rows then return nil, store_error("read_failed", err) end
    for _, row in ipairs(rows) do
        num_fields(row, ITEM_NUMS)
        num_fields(row, OUTCOME_NUMS)
        row.item_pass = tonumber(row.item_pass)
    end
    return rows
end

--- Ids and input digests of a job's items, in input order (to match a mailbox on resume).
-- @tparam string job_id
-- @treturn[1] {table,...} `{item_id, seq, input_digest}`
-- @return[2] nil
-- @treturn[2] table err
function _M.item_digests(self, job_id)
    local rows, err = self:query("SELECT item_id, seq, input_digest FROM items WHERE job_id = ? ORDER BY seq",
        { job_id })
    if not rows then return nil, store_error("read_failed", err) end
    for _, r in ipairs(rows) do r.seq = tonumber(r.seq) end
    return rows
end

--- One item with every recorded outcome.
-- @tparam string job_id
-- @tparam string item_id
-- @treturn[1] table the row as in `items`, plus `input_json`, `input_digest` and `outcomes` (every
--   pass's outcome, oldest first)
-- @return[2] nil
-- @treturn[2] table err (`not_found`, `read_failed`)
function _M.item(self, job_id, item_id)
    local rows, err = self:query(LATEST .. " AND i.item_id = ?", { job_id, item_id })
    if not rows then return nil, store_error("read_failed", err) end
    local row = rows[1]
    if not row then return nil, store_error("not_found", "no item " .. tostring(item_id) .. " in job " .. job_id) end
    num_fields(row, ITEM_NUMS)
    num_fields(row, OUTCOME_NUMS)
    row.item_pass = tonumber(row.item_pass)
    local more
    more, err = self:query("SELECT input_json, input_digest, " .. self:input_hex_sql() .. " FROM items "
        .. "WHERE job_id = ? AND item_id = ?", { job_id, item_id })
    if not more then return nil, store_error("read_failed", err) end
    _M.input_of(more[1])
    row.input_json, row.input_digest = more[1].input_json, more[1].input_digest
    local outs
    outs, err = self:query("SELECT " .. OUTCOME_COLUMNS .. " FROM outcomes WHERE job_id = ? AND item_id = ? "
        .. "ORDER BY pass", { job_id, item_id })
    if not outs then return nil, store_error("read_failed", err) end
    for _, o in ipairs(outs) do num_fields(o, OUTCOME_NUMS) end
    row.outcomes = outs
    return row
end

--- The evidence records of one item (every pass), decoded, in the order written.
-- @tparam string job_id
-- @tparam string item_id
-- @treturn[1] {table,...} records (see `jsoncontract.evidence`), each with `pass` set
-- @return[2] nil
-- @treturn[2] table err (`read_failed`)
function _M.evidence_for(self, job_id, item_id)
    local rows, err = self:query("SELECT pass, record_json FROM evidence WHERE job_id = ? AND item_id = ? "
        .. "ORDER BY pass, seq", { job_id, item_id })
    if not rows then return nil, store_error("read_failed", err) end
    local out = {}
    for i, row in ipairs(rows) do
        local rec = core.decode(row.record_json) or { undecodable = row.record_json }
        rec.pass = rec.pass or tonumber(row.pass)
        out[i] = rec
    end
    return out
end

-- The fields of an evidence record that hold text or the model's words (the model's text, the
-- input, the re-ask's feedback, the gate's messages): kept in the store, in an export only
-- with `--record-text`; the evidence writers' list (`jsoncontract.evidence.TEXT_FIELDS`).
local TEXT_FIELDS = require("jsoncontract.evidence").TEXT_FIELDS

--- Call `fn(record_json)` for every evidence line of a job, item by item in input order.
-- The store keeps each attempt's text; the lines given to `fn` carry it only when `opts.text`
-- says so, or, without `opts.text`, when the job records text (its `record-text` option): an
-- exported evidence.jsonl stays text-free unless asked.
-- @tparam string job_id
-- @tparam function fn
-- @tparam[opt] table opts `text` (boolean)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err
function _M.each_evidence(self, job_id, fn, opts)
    if not self.conn then return nil, store_error("closed", "the job store is closed") end
    local keep = opts and opts.text
    if keep == nil then
        local job = self:job(job_id)
        local jo = job and job.options_json and core.decode(job.options_json)
        keep = type(jo) == "table" and jo["record-text"] == true
    end
    local stmt, vals = run_statement(self, "SELECT e.record_json FROM evidence e JOIN items i ON "
        .. "i.job_id = e.job_id AND i.item_id = e.item_id WHERE e.job_id = ? ORDER BY i.seq, e.pass, e.seq",
        { job_id })
    if not stmt then return nil, store_error("read_failed", vals) end
    -- A row at a time: a job's evidence may not fit in memory at once.
    local okf, ferr = pcall(function()
        local row = stmt:fetch(false)
        while row do
            local line = row[1]
            local has_text = false
            if not keep then
                for _, k in ipairs(TEXT_FIELDS) do
                    if find(line, '"' .. k .. '":', 1, true) then has_text = true break end
                end
            end
            if has_text then
                local rec = core.decode(line)
                if type(rec) == "table" then
                    for _, k in ipairs(TEXT_FIELDS) do rec[k] = nil end
                    line = core.encode(rec)
                end
            end
            fn(line)
            row = stmt:fetch(false)
        end
    end)
    pcall(stmt.close, stmt)
    vals = nil -- luacheck: ignore (kept referenced until the statement is closed)
    if not okf then return nil, store_error("read_failed", tostring(ferr)) end
    return true
end

--- Progress and per-gate counts of a job.
-- @tparam string job_id
-- @treturn[1] table `items`, `pending`, `leased`, `done` (integers: item states), `accepted`,
--   `human_review` (latest outcomes of the items that are done: they add up to `done`),
--   `by_reason` ({["category/kind"] = integer}), `pass` (the job's current pass),
--   `limit_wait_ms` (summed over runs), `exchanges` (HTTP exchanges recorded, every pass: one per
--   evidence row but a person's, those of committed outcomes and those of attempts held back,
--   `hold_back`),
--   `workers` (distinct workers that ran)
-- @return[2] nil
-- @treturn[2] table err
function _M.counts(self, job_id)
    local c = { items = 0, pending = 0, leased = 0, done = 0, accepted = 0, human_review = 0, by_reason = {} }
    local rows, err = self:query("SELECT state, count(*) AS n FROM items WHERE job_id = ? GROUP BY state",
        { job_id })
    if not rows then return nil, store_error("read_failed", err) end
    for _, r in ipairs(rows) do
        c[r.state] = tonumber(r.n)
        c.items = c.items + tonumber(r.n)
    end
    -- Only items that are done: one waiting or leased in a new pass is not decided, whatever an
    -- earlier pass said, so accepted + human_review = done always.
    rows, err = self:query("SELECT o.status, o.reason_category, o.reason_kind, count(*) AS n FROM ("
        .. LATEST .. " AND i.state = 'done') o GROUP BY o.status, o.reason_category, o.reason_kind", { job_id })
    if not rows then return nil, store_error("read_failed", err) end
    for _, r in ipairs(rows) do
        if r.status then
            c[r.status] = (c[r.status] or 0) + tonumber(r.n)
            if r.status == "human_review" then
                local key = tostring(r.reason_category) .. "/" .. tostring(r.reason_kind)
                c.by_reason[key] = (c.by_reason[key] or 0) + tonumber(r.n)
            end
        end
    end
    rows, err = self:query("SELECT sum(limit_wait_ms) AS w, count(DISTINCT worker) AS n "
        .. "FROM runs WHERE job_id = ?", { job_id })
    if not rows then return nil, store_error("read_failed", err) end
    c.limit_wait_ms = tonumber(rows[1] and rows[1].w) or 0
    c.workers = tonumber(rows[1] and rows[1].n) or 0
    -- The exchanges are counted where they are recorded, one evidence row each, committed with
    -- their outcome or with their item's give-back (`hold_back`: the model unreachable, a rule
    -- that could not run): a run row is written only when a run ends, so a run killed (kill -9)
    -- never adds its count, and a run stopped by a signal counts exchanges of items it gave back.
    -- A person's records (the desk's refused submissions and decisions) are evidence rows too, but
    -- no exchange: only theirs carry "decided_by":"human" (a model's record has no such member,
    -- and a quote inside a JSON string is escaped).
    rows, err = self:query("SELECT count(*) AS x FROM evidence WHERE job_id = ? AND record_json NOT LIKE ? "
        .. "ESCAPE '!'", { job_id, '%"decided!_by":"human"%' })
    if not rows then return nil, store_error("read_failed", err) end
    c.exchanges = tonumber(rows[1] and rows[1].x) or 0
    local job = self:job(job_id)
    c.pass = job and job.pass
    return c
end

--- Record one worker run of a job (for the summary: exchanges, time waiting on rate limits).
-- @tparam string job_id
-- @tparam table run `worker` (string), `started_at` (seconds), `exchanges` (integer),
--   `limit_wait_ms` (number), `stop_reason` (string), `stats_json` (string)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err
function _M.record_run(self, job_id, run)
    local function insert()
        return self:tx(function()
            return self:exec("INSERT INTO runs (job_id, worker, started_at, ended_at, exchanges, limit_wait_ms, "
                .. "stop_reason, stats_json) VALUES (?, ?, ?, " .. self.d.now .. ", ?, ?, ?, ?)",
                { job_id, run.worker, run.started_at, floor(run.exchanges or 0), run.limit_wait_ms or 0,
                  run.stop_reason, run.stats_json })
        end)
    end
    local ok, err = insert()
    -- A run often ends because the store failed (a terminated backend, a server restart): the
    -- run's row is still owed, on a new connection.
    if not ok and not self.read_only and self:reconnect() then ok, err = insert() end
    return ok, err
end

--- Replace the connection with a new one to the same store (after the server dropped it).
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err (`open_failed`)
function _M.reconnect(self)
    if self.read_only then return nil, store_error("open_failed", "a read-only store is not reopened") end
    local fresh, err = _M.open(self.url, { create = false })
    if not fresh then return nil, err end
    if self.conn then pcall(self.conn.close, self.conn) end
    self.conn, fresh.conn = fresh.conn, nil
    self.has_input_bytes = fresh.has_input_bytes
    return true
end

--- The database clock, in seconds since the epoch.
-- @treturn number|nil
function _M.now(self)
    local rows = self:query("SELECT " .. self.d.now .. " AS t")
    return rows and rows[1] and tonumber(rows[1].t)
end

--- Make a `store` err table (for modules that add queries over this store's connection).
-- @tparam string kind
-- @tparam string message
-- @treturn table err
_M.error = store_error

return _M
