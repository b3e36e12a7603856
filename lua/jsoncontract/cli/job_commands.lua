--- The batch commands behind bin/jsoncontract, for any job module (`jsoncontract.jobs.definition`):
-- `run` (one machine, SQLite store in the output folder, `--resume DIR`; `triage` is the support
-- mail example's short form of it), `enqueue`, `worker`, `status` and `export` (one job in a
-- shared store, PostgreSQL for many hosts). The Lua API (`jsoncontract.job`) calls them too.
-- Each takes a plain table of options (names as on the command line, e.g. `o["base-url"]`) and
-- an `env` `{root = repository or install root, bindir = folder of bin/jsoncontract}`, and
-- returns the exit status.
-- Exit status: 0 done; 1 the job stopped on a context that cannot open, a store or export
-- failure (nothing after it counts), or on failures no item can fix (`--fail-after`,
-- `jsoncontract.jobs.breaker`: the items not settled wait);
-- 2 bad options or input (nothing created); 130 / 143 stopped by SIGINT / SIGTERM after
-- committing and exporting what was finished.
-- @module jsoncontract.cli.job_commands
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"
local setup = require "jsoncontract.setup"
local definition = require "jsoncontract.jobs.definition"
local standin_process = require "jsoncontract.standin.process"
local store_mod = require "jsoncontract.jobs.store"
local export = require "jsoncontract.jobs.export"
local runner = require "jsoncontract.jobs.runner"
local ratelimit = require "jsoncontract.jobs.ratelimit"

local type, ipairs, pairs, tostring, pcall = type, ipairs, pairs, tostring, pcall
local format, concat = string.format, table.concat
local stderr, stdout = io.stderr, io.stdout

-- Commands write through `env.stdout` / `env.stderr` when given (specs call them in-process).
local function use_env(env)
    stdout, stderr = env.stdout or io.stdout, env.stderr or io.stderr
end

local _M = { _VERSION = core._VERSION }

local SIGNAL_EXIT = { SIGINT = 130, SIGTERM = 143 }

--- The options of a parsed command line (argparse: `args.base_url`) as this module names them
-- (`o["base-url"]`).
-- @tparam table args
-- @treturn table o
function _M.options(args)
    local o = {}
    for k, v in pairs(args) do
        if type(k) == "string" then o[(k:gsub("_", "-"))] = v end
    end
    return o
end

--- Add the options that define a job (the job module, its input, provider, model and the
-- stand-in's) to an argparse parser.
-- @tparam table parser
-- @tparam table util `jsoncontract.cli.util` (its `whole` and `provider_name` converters)
-- @tparam[opt] table help `{input =, job =}`: the command's own help for those options (its defaults)
function _M.configure_job(parser, util, help)
    help = help or {}
    parser:option("--input", help.input or "JSONL input, one record per line; - for stdin.")
    parser:option("--job", help.job or "Job module: a Lua file returning {contract =, item =, context =}.")
    parser:option("--provider", "Provider: " .. concat(require("jsoncontract.providers").names, ", ")
        .. " (default: from the API key set, else the stand-in speaking openai).")
        :convert(util.provider_name)
    parser:option("--model", "Model name (default: the provider's model variable, e.g. OPENAI_MODEL, else its "
        .. "default model; the stand-in's without a key).")
    parser:option("--base-url", "Provider base URL (default: the provider's base URL variable, e.g. OPENAI_BASE_URL, "
        .. "else its API host).")
    parser:option("--max-attempts", "Model answers per item (default " .. runner.option("max_attempts") .. ").")
        :convert(util.whole("--max-attempts"))
    parser:option("--token-budget", "Stop retrying when the history would exceed N estimated tokens.")
        :convert(util.whole("--token-budget"))
    parser:option("--limit", "Only the first N records."):convert(util.whole("--limit"))
    parser:option("--seed", "Stand-in model seed (default 1)."):convert(util.whole("--seed"))
    parser:option("--delay-ms", "Stand-in model delay per answer (default 20)."):convert(util.whole("--delay-ms"))
    parser:option("--latency", "Stand-in answer latency instead of --delay-ms: heavy, or "
        .. "lognormal:MED_MS:SIGMA:TAIL_SHARE:TAIL_MIN_MS:TAIL_MAX_MS (with --resume: replaces the job's).")
        :convert(util.latency)
    parser:flag("--record-text", "Keep raw model text and input text in the evidence log.")
end

--- Add the options of one run (parallelism, limits, signals, leases) to an argparse parser.
-- @tparam table parser
-- @tparam table util `jsoncontract.cli.util`
function _M.configure_run(parser, util)
    parser:option("--parallel", "Items in flight at once (default " .. runner.option("parallel") .. ", at most "
        .. runner.OPTIONS.parallel.max .. ")."):convert(util.whole("--parallel"))
    parser:option("--rpm", "Requests per minute for the provider lane (default: the provider's on its own "
        .. "API host, none on another --base-url; 0 = none)."):convert(util.whole("--rpm"))
    parser:option("--tpm", "Estimated tokens per minute for the provider lane (default: the provider's on its "
        .. "own API host, none on another --base-url; 0 = none)."):convert(util.whole("--tpm"))
    parser:option("--grace", "Seconds in-flight items get after SIGINT/SIGTERM (default "
        .. runner.option("grace") .. ").")
        :convert(util.whole("--grace"))
    parser:option("--lease-seconds", "How long a leased item stays ours without renewal (default "
        .. runner.option("lease_seconds") .. ").")
        :convert(util.whole("--lease-seconds"))
    parser:option("--fail-after", "Stop the job after N failures in a row that no item can fix (connection "
        .. "refused, DNS, TLS, HTTP 401/403/404, spent quota), or after N items whose rules could not run (a rule "
        .. "raised or ran out of its budget); those items stay waiting for --resume (default "
        .. require("jsoncontract.jobs.breaker").DEFAULT_LIMIT .. ")."):convert(util.whole("--fail-after"))
end

--- A command over one job of a store, as `status` and `export` are: `[DIR] [--store URL]
-- [--job ID]`, the command's own options after them, run by `commands[name]`.
-- @tparam string name the command, also the function of this module that runs it
-- @tparam string summary its line in the usage list
-- @tparam string dir_help what DIR is for this command
-- @tparam[opt] function more function(parser): the command's own options
-- @treturn table a command module (see `jsoncontract.cli`)
function _M.store_command(name, summary, dir_help, more)
    return {
        name = name,
        summary = summary,
        configure = function(parser)
            parser:argument("dir", dir_help):args("?")
            parser:option("--store", "Job store: postgresql://... or a SQLite file.")
            parser:option("--job", "Job id (default: the newest job in the store).")
            if more then more(parser) end
        end,
        run = function(args, env) return _M[name](_M.options(args), env) end,
    }
end

-- The keys a run may hold never reach the terminal, in any spelling.
local function clean(msg)
    return secrets.clean(msg, setup.key_values(), 4000)
end

local function die(msg)
    stderr:write("jsoncontract: ", clean(msg), "\n")
    return 2
end

local function fail(msg)
    stderr:write("jsoncontract: ", clean(msg), "\n")
    return 1
end

local shell_quote = require("jsoncontract.util").shell_quote

local function file_exists(path)
    local f = io.open(path, "rb")
    if f then f:close() return true end
    return false
end


-- The job module a command names (`--job`), loaded and checked;
-- `o.job_def` when a caller (the Lua API, a command that checked it already) loaded it.
local function load_job(o, path)
    if o.job_def and not path then return o.job_def end
    path = path or o.job
    if not path then
        return nil, "say which job: --job MODULE (a Lua file returning {contract =, item =, context =})"
    end
    return definition.load(_M.absolute(path))
end

--- A path as a job stores it: absolute (against the folder we run in), so `--resume` and
-- workers find the contract and the mailbox from any folder. "-" (stdin) stays "-".
-- @tparam string path
-- @treturn string
function _M.absolute(path)
    if type(path) ~= "string" or path == "-" or path:sub(1, 1) == "/" then return path end
    local here = require("lfs").currentdir()
    if not here then return path end
    path = path:gsub("^%./", "")
    while path:sub(1, 2) == "./" do path = path:sub(3) end
    return here .. "/" .. path
end

-- A path a job stored. Jobs made before paths were stored absolute hold them as given,
-- relative to a folder no one recorded: such a path is tried from here, as before; else, when
-- it names a file of an examples/ folder (the defaults ./examples/support_ticket.lua and
-- examples/mailbox.jsonl), that file of our examples/. A wrong guess is refused, never used:
-- the contract's identity and the mailbox's digests are checked against the job's after.
local function stored_path(path, env)
    if type(path) ~= "string" or path == "-" or path:sub(1, 1) == "/" or file_exists(path) then return path end
    local name = ("/" .. path):match("/examples/([^/]+)$")
    if name and file_exists(env.root .. "/examples/" .. name) then
        return _M.absolute(env.root .. "/examples/" .. name)
    end
    return path
end

-- What to do about a relative path a job stored that is not found from here.
local function relative_hint(path, option)
    if type(path) ~= "string" or path == "-" or path:sub(1, 1) == "/" then return "" end
    return format(" (the job stored the relative path %s, as jobs made before paths were stored absolute did: "
        .. "run from the folder the job was made in, or give %s)", path, option)
end

--- The longest item id a mailbox line may give, in bytes (PostgreSQL refuses index keys of a
-- few kilobytes; an id is a name, never a message).
_M.MAX_ID_BYTES = 512

-- Why an id a line gives cannot be an item's id, or nil. The decoder already refused lines
-- that are not UTF-8; a control character (a NUL cuts the id in SQLite, a newline or escape
-- garbles every message naming it) or a huge id is refused here, before anything is created.
local function bad_id(id)
    local c = id:match("[%c]")
    if c then return format("holds the control character U+%04X", c:byte()) end
    if #id > _M.MAX_ID_BYTES then return format("is %d bytes long (at most %d)", #id, _M.MAX_ID_BYTES) end
    return nil
end

-- At most 20 lines of a per-line complaint, then how many more: a bad input of a million lines
-- is one screen, not a million.
local function listed(lines)
    if #lines <= 20 then return concat(lines, "\n  ") end
    return concat(lines, "\n  ", 1, 20) .. format("\n  ... and %d more", #lines - 20)
end

--- Read a JSONL input into store items. Each non-blank line is an item, its digest the line's
-- SHA-256. Without `job` (or with a job that has no `item` function) its id is the line's `id`
-- (else "line-N") and its input the line as written (bytes and all: the store keeps a line that
-- is not UTF-8 text as bytes, and the decoder then names its fault); a line that is not a JSON
-- object with a string `text` stays an item (it ends in review as `input/invalid_input`, nothing
-- is lost). With the job's `item(record)`, its input is the item that function makes
-- (`{id, text, ...}`, stored as JSON: what the model and the desk read) and its id the item's;
-- a record it cannot map is an input error, named per line, as is a
-- line that is not JSON. Duplicate ids, and ids longer than `MAX_ID_BYTES` or holding a control
-- character, are an input error, named per line.
-- @tparam string path a file, or "-" for stdin
-- @tparam[opt] integer limit only the first `limit` items
-- @tparam[opt] table job from `jsoncontract.jobs.definition.load`
-- @treturn[1] {table,...} items `{item_id, seq (line number), input_json, input_digest}`
-- @treturn[1] string digest of the whole input (SHA-256 over the items' digests, in order)
-- @return[2] nil
-- @treturn[2] string message
function _M.read_mailbox(path, limit, job)
    local f, msg
    if path == "-" then f = io.stdin else f, msg = io.open(path, "rb") end
    if not f then return nil, msg end
    local items, first_line, dups, bad, lineno = {}, {}, {}, {}, 0
    local named_by_us = {} -- line number -> true when its id is "line-N" because it had none
    if limit == 0 then
        if f ~= io.stdin then f:close() end
        return items, core.sha256("")
    end
    local ok, err = pcall(function()
        -- Read whole, then cut at "\n": LuaJIT's file:lines() ends a line at a NUL byte, which
        -- would store a cut line as if it were the mail.
        local data = assert(f:read("*a"))
        local pos, size = 1, #data
        while pos <= size do
            local nl = data:find("\n", pos, true) or size + 1
            local line = data:sub(pos, nl - 1)
            pos = nl + 1
            lineno = lineno + 1
            line = line:gsub("\r$", "")
            if line:match("%S") then
                local v, derr = core.decode(line)
                local stored = nil
                if job and job.item then
                    local it, why
                    if v == nil then why = "is not JSON: " .. tostring(derr and derr.message)
                    else it, why = definition.item(job, v) end
                    if it then
                        v = it
                        local okj, j = pcall(core.encode, it)
                        if okj then stored = j else why = "item(record) made an item no JSON holds: " .. tostring(j) end
                    end
                    if not stored then
                        bad[#bad + 1] = format("line %d: %s", lineno, secrets.clean(tostring(why), nil, 300))
                        v = nil
                    end
                end
                local own = type(v) == "table" and type(v.id) == "string" and v.id or nil
                local id = own or ("line-" .. lineno)
                named_by_us[lineno] = own == nil
                local first = first_line[id]
                local why = own and bad_id(own)
                if type(v) == "table" and v.id ~= nil and not own then
                    -- (never coerced, never silently replaced by a line number)
                    bad[#bad + 1] = format("line %d: id %s is a %s; an id is a string (or give the job an "
                        .. "item(record) that maps it, e.g. id = tostring(record.id))", lineno,
                        secrets.clean(tostring(core.encode(v.id)), nil, 60), core.null == v.id and "null"
                        or type(v.id))
                end
                if why then
                    -- %q shows a control character as an escape, never raw on the terminal
                    bad[#bad + 1] = format("line %d: id %s %s", lineno,
                        format("%q", own:sub(1, 60)):gsub("\\\n", "\\n") .. (#own > 60 and "..." or ""), why)
                elseif first then
                    -- Say which side's id is one we gave, so the message is true of both lines.
                    dups[#dups + 1] = format("line %d: id %q%s is already used on line %d%s", lineno, id,
                        own and "" or " (given to it because it has no id of its own)", first,
                        named_by_us[first] and " (given to it because it has no id of its own)" or "")
                else
                    first_line[id] = lineno
                end
                if stored and not own then
                    -- the id the item gets is stored with it, so the desk and the exports agree
                    v.id = id
                    stored = core.encode(v)
                end
                items[#items + 1] = { item_id = id, seq = lineno, input_json = stored or line,
                    input_digest = core.sha256(line) }
                if limit and #items >= limit then break end
            end
        end
    end)
    if f ~= io.stdin then f:close() end
    if not ok then return nil, path .. ": " .. tostring(err):gsub("^.-: ", "") end
    if #bad > 0 then
        return nil, "the input " .. path .. " has records no job can keep (an id is UTF-8 text of at most "
            .. _M.MAX_ID_BYTES .. " bytes without control characters; the job's item(record) must map each "
            .. "record):\n  " .. listed(bad)
    end
    if #dups > 0 then
        return nil, "the input " .. path .. " has duplicate ids (each record needs its own):\n  "
            .. listed(dups)
    end
    local all = {}
    for i, it in ipairs(items) do all[i] = it.input_digest end
    return items, core.sha256(concat(all, "\n"))
end

-- The input's items and digest for a new job, or nil and the exit status of a refusal (a usage
-- error: nothing is created for an input that cannot be read or holds no records).
local function input_items(o, input, mod)
    local items, digest = _M.read_mailbox(input, o.limit, mod)
    if not items then return nil, die("cannot read the input: " .. tostring(digest)) end
    if #items == 0 and o.limit ~= 0 then
        return nil, die("the input " .. (input == "-" and "on stdin" or input) .. " holds no records (nothing "
            .. "but blank lines): there is nothing to run")
    end
    return items, digest
end

local function is_empty_dir(dir)
    local p = io.popen("ls -A " .. shell_quote(dir) .. " 2>/dev/null")
    local listing = p:read("*a")
    p:close()
    return listing == ""
end

local function prepare_out_dir(dir)
    local r = os.execute("test -e " .. shell_quote(dir) .. " -a ! -d " .. shell_quote(dir))
    if r == true or r == 0 then
        return nil, "output path " .. dir .. " exists and is not a folder (nothing was overwritten)"
    end
    if not is_empty_dir(dir) then
        return nil, "output folder " .. dir .. " is not empty; choose a new one, or continue its job with "
            .. "--resume " .. dir .. " (nothing was overwritten)"
    end
    r = os.execute("mkdir -p " .. shell_quote(dir))
    if r ~= true and r ~= 0 then return nil, "cannot create output folder " .. dir end
    return true
end

--- The name of the lock file `triage` holds in its job folder while it runs.
_M.LOCK_FILE = "triage.lock"

--- Take the job folder for this process: an exclusive lock on `dir/triage.lock`, held until
-- `lock:release()` (or the process ends). A second `triage` on the folder would give back
-- the leases of the first (a resume on SQLite releases every lease, as only a crashed run can
-- have left them) and ask its items again, so it is refused. The lock is SQLite's own (an
-- `fcntl` lock on an empty database file, through the LuaSQL driver the store already needs):
-- the kernel drops it when the process dies, even by kill -9, so a stale lock never blocks a
-- later resume, and it is not inherited by the children we fork (the stand-in).
-- @tparam string dir an existing folder (anything else: a lock that holds nothing, the caller
--   reports the missing folder in its own words)
-- @treturn[1] table lock with `release()`
-- @return[2] nil
-- @treturn[2] string message (another triage holds the folder, or the lock cannot be taken)
function _M.lock_folder(dir)
    local none = { release = function() end }
    if require("lfs").attributes(dir, "mode") ~= "directory" then return none end
    local okd, driver = pcall(require, "luasql.sqlite3")
    if not okd then return nil, "cannot lock the job folder " .. dir .. ": lua-sql-sqlite3 is not installed" end
    local path = dir .. "/" .. _M.LOCK_FILE
    local env = driver.sqlite3()
    local conn, msg = env:connect(path)
    if not conn then
        env:close()
        return nil, "cannot lock the job folder " .. dir .. ": " .. tostring(msg):gsub("^LuaSQL: ", "")
    end
    local function close()
        pcall(conn.close, conn)
        pcall(env.close, env)
    end
    -- No waiting (busy_timeout 0): a held lock is a running triage, refused at once. EXCLUSIVE
    -- locking mode keeps the lock for the connection's life; nothing is ever written.
    for _, sql in ipairs { "PRAGMA busy_timeout = 0", "PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE" } do
        local cur, err = conn:execute(sql)
        if not cur then
            close()
            err = tostring(err):gsub("^LuaSQL: ", "")
            if err:find("locked", 1, true) or err:find("busy", 1, true) then
                return nil, "another triage is running on the job in " .. dir .. " (it holds " .. path
                    .. "); nothing was done. Wait for it to end, or stop it (Ctrl-C, or kill) and then resume"
            end
            return nil, "cannot lock the job folder " .. dir .. ": " .. err
        end
        if type(cur) == "userdata" then cur:close() end
    end
    local held = true
    return { path = path, release = function()
        if not held then return end
        held = false
        pcall(conn.execute, conn, "ROLLBACK")
        close()
    end }
end

local function default_out_dir(command)
    local base = "out/" .. (command or "run") .. "-" .. os.date("!%Y%m%d-%H%M%S")
    local dir, n = base, 1
    while file_exists(dir) or not is_empty_dir(dir) do
        n = n + 1
        dir = base .. "-" .. n
    end
    return dir
end

-- The stand-in model server as our child (jsoncontract.standin.process): it leaves when we do,
-- even after kill -9 (exit_with_parent). JC_STANDIN_LOG: it logs every request it answers there
-- (the crash specs use it to prove that nothing committed is asked again).
local function start_standin(env, jo)
    local log = os.getenv("JC_STANDIN_LOG")
    return standin_process.start { examples_dir = env.root .. "/examples", seed = jo.seed or 1,
        delay_ms = jo["delay-ms"] or 20, latency = jo.latency, max_seconds = 86400, idle_seconds = 600,
        log = log ~= "" and log or nil }
end

local choose_provider = setup.choose_provider

local function isatty(fd)
    local r = os.execute("test -t " .. fd)
    return r == true or r == 0
end

-- The options a job keeps, so `--resume` and workers ask exactly as the first run did (`job`:
-- the job module's path).
local JOB_OPTIONS = { "max-attempts", "token-budget", "limit", "seed", "delay-ms", "record-text",
    "base-url", "rpm", "tpm", "latency" }

local LATENCY_VALUES = "heavy, or lognormal:MED_MS:SIGMA:TAIL_SHARE:TAIL_MIN_MS:TAIL_MAX_MS"

--- Is `spec` a `--latency` the stand-in understands? Checked before a job is created: the
-- stand-in only reads it once the job is stored, and a job holding a value it refuses could
-- never run.
-- @tparam string spec
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string message naming the option and its values
function _M.check_latency(spec)
    local draw = type(spec) == "string" and require("jsoncontract.standin.server").latency(spec)
    if draw then return true end
    return nil, format("option --latency takes %s; not %q", LATENCY_VALUES, tostring(spec))
end

-- The environment variables whose values are keys: never stored, whatever option spells them.
local KEY_VARS = require("jsoncontract.providers").key_variables()
local KEY_NAMES = {}
for _, name in ipairs(KEY_VARS) do KEY_NAMES[name] = true end

--- The `--base-url` as a job stores it: the value of a key variable (OPENAI_API_KEY,
-- ANTHROPIC_API_KEY, GEMINI_API_KEY) replaced by `${NAME}`, which `--resume` and workers fill
-- from their environment (`filled_base_url`). A URL that would still store a credential is
-- refused: a user and password (`user:password@host`), or a credential-like query parameter
-- (`key=`, `token=`, ..., see `jsoncontract.secrets.credential_param`) holding anything but a key
-- variable's value.
-- @tparam string url
-- @treturn[1] string the URL to store
-- @return[2] nil
-- @treturn[2] string message saying where the credential goes instead
function _M.stored_base_url(url)
    if url:match("^%a[%w+.-]*://[^/?#]*@") then
        return nil, "option --base-url must not hold a user or password (user:password@host): the job stores "
            .. "its base URL; give the key in OPENAI_API_KEY or ANTHROPIC_API_KEY instead (sent as a header, "
            .. "never stored)"
    end
    local stored, keys = url, {}
    for _, name in ipairs(KEY_VARS) do
        local key = os.getenv(name)
        if key and #key >= 4 then
            keys[#keys + 1] = key
            local start = stored:find(key, 1, true)
            while start do
                stored = stored:sub(1, start - 1) .. "${" .. name .. "}" .. stored:sub(start + #key)
                start = stored:find(key, start + #name + 3, true)
            end
        end
    end
    local why
    stored:gsub("[?&;]([^=&;#]*)=([^&;#]*)", function(name, value)
        if not why and value ~= "" and secrets.credential_param(name) and not value:match("^%${[%w_]+}$") then
            why = name
        end
    end)
    -- A key in another spelling (percent-encoded, say) is still the key.
    if not why and secrets.redact(stored, keys) ~= stored then why = "an encoded key" end
    if why then
        return nil, format("option --base-url holds a credential (%s): the job stores its base URL; put the "
            .. "value in OPENAI_API_KEY (or ANTHROPIC_API_KEY, GEMINI_API_KEY) and write it as "
            .. "\"$OPENAI_API_KEY\" in the URL: the job stores the variable's name, and --resume takes the "
            .. "value from the environment again", why)
    end
    return stored
end

-- A stored base URL with its `${NAME}` filled from this host's environment; nil and a message
-- when a variable it names is not set.
local function filled_base_url(url)
    local missing
    local filled = url:gsub("%${([%w_]+)}", function(name)
        if not KEY_NAMES[name] then return nil end -- not one we put there
        local v = os.getenv(name)
        if not v or v == "" then missing = missing or name return nil end
        return v
    end)
    if missing then
        return nil, format("the job's base URL takes a key from %s, which is not set here (keys are never "
            .. "stored); set it, or give --base-url", missing)
    end
    return filled
end

-- The options a new job keeps (JOB_OPTIONS), its base URL as `stored_base_url` makes it; nil
-- and a message when that URL is refused.
local function job_options(o, p, job_path)
    local jo = { standin = p.standin or nil, job = job_path }
    for _, k in ipairs(JOB_OPTIONS) do if o[k] ~= nil and jo[k] == nil then jo[k] = o[k] end end
    if jo["base-url"] then
        local err
        jo["base-url"], err = _M.stored_base_url(jo["base-url"])
        if not jo["base-url"] then return nil, err end
    end
    return jo
end

-- The options a command checks before it creates or asks anything.
local function check_options(o)
    if o.latency ~= nil then
        local ok, err = _M.check_latency(o.latency)
        if not ok then return nil, err end
    end
    -- bounds and defaults: runner.OPTIONS (one place for every command)
    for name, flag in pairs { parallel = "--parallel", max_attempts = "--max-attempts",
        lease_seconds = "--lease-seconds" } do
        local ok, err = runner.check_option(name, flag, o[flag:sub(3)])
        if not ok then return nil, err end
    end
    if o["fail-after"] and o["fail-after"] < 1 then return nil, "option --fail-after must be at least 1" end
    return true
end

-- Everything a worker needs to ask, from a job row (plus this host's environment).
local function job_context(job, env, o)
    local jo = core.decode(job.options_json or "{}") or {}
    -- --retry-review may bring a fixed job module (--job FILE): that is what a new pass is for.
    local new_pass = o["retry-review"] == true
    -- Without --retry-review, --job may name the job's own module elsewhere (checked just
    -- below): the way on for a job that stored a relative path.
    -- (`contract`: where jobs made before job modules kept the path; those modules are job modules now)
    local given = o.job
    local contract_path = _M.absolute(given) or stored_path(jo.job or jo.contract, env)
    local mod, err
    if o.job_def and not given then
        -- a job of a module table (the Lua API): the table given again, checked below as a file would be
        mod, contract_path = o.job_def, o.job_def.path
    elseif not contract_path then
        return nil, format("job %s does not say which job module it runs (it was made from a Lua table); "
            .. "give --job MODULE", job.id)
    else
        mod, err = definition.load(contract_path)
        if not mod then return nil, err .. (given and "" or relative_hint(jo.job or jo.contract, "--job MODULE")) end
    end
    local ident = mod.contract:identity()
    local changed = ident.schema_hash ~= job.schema_hash or ident.name ~= job.contract_name
        or ident.version ~= job.contract_version
    if changed and not new_pass then
        return nil, format("the contract %s is %s %s (schema %s), the job was started with %s %s (schema %s); "
            .. "run the job with the contract it started with, or send its review items through the new one "
            .. "with --retry-review --job MODULE", tostring(contract_path or "the job table"), ident.name,
            tostring(ident.version),
            tostring(ident.schema_hash):sub(1, 12), tostring(job.contract_name), tostring(job.contract_version),
            tostring(job.schema_hash):sub(1, 12))
    end
    -- (a new pass runs the module it was given, and the job records it even when the contract
    -- kept its name and version: a fixed context or item mapping is a fix too)
    local module_changed = new_pass and given and jo.job ~= contract_path
    if changed or module_changed or (contract_path and not jo.job) then jo.job, jo.contract = contract_path, nil end
    -- --latency on resume replaces the job's: it sets how long the stand-in takes, never what it
    -- answers, and it is the way out for a job stored (before this check existed) with a value
    -- the stand-in refuses.
    local options_changed = module_changed and not changed
    if o.latency ~= nil then -- (checked with the other options: check_options)
        options_changed = options_changed or jo.latency ~= o.latency
        jo.latency = o.latency
    elseif jo.standin == true and jo.latency ~= nil and not _M.check_latency(jo.latency) then
        return nil, format("job %s was stored with --latency %q, which the stand-in does not take; continue it "
            .. "with `jsoncontract triage --resume DIR --latency VALUE` (%s), which replaces the stored value",
            job.id, tostring(jo.latency), LATENCY_VALUES)
    end
    local base_url = o["base-url"]
    if not base_url and jo["base-url"] then
        local ferr
        base_url, ferr = filled_base_url(jo["base-url"])
        if not base_url then return nil, ferr end
    end
    local p = { provider = job.provider, model = job.model, base_url = base_url, standin = jo.standin == true }
    if not p.standin then
        -- the job's own provider's key and base URL variables (its facts), never another's
        local pe = setup.provider_env(job.provider)
        p.api_key, p.base_url = pe.api_key, p.base_url or pe.base_url
        if not p.api_key and not p.base_url then
            if not pe.key_env then return nil, format("job %s asks %s at no stored base URL: give --base-url", job.id,
                job.provider) end
            return nil, format("job %s asks %s, whose key is read from %s, which is not set here (keys are never "
                .. "stored); set it, or give --base-url", job.id, job.provider, pe.key_env)
        end
        local no_key = require("jsoncontract.providers").missing_key(job.provider, p.base_url, p.api_key)
        if no_key then return nil, format("job %s: %s", job.id, no_key) end
    end
    return { mod = mod, contract = mod.contract, p = p, jo = jo, changed = changed and ident or nil,
        options_changed = options_changed, module_changed = module_changed and not changed }
end


-- The lane's limits (`jsoncontract.jobs.ratelimit.limits`: the provider's defaults on its own API
-- host only) and the words the start line says them with.
local function limits_of(p, o, jo)
    return ratelimit.limits(p.provider, p.base_url, o.rpm or jo.rpm, o.tpm or jo.tpm, p.standin)
end

local function lane_for(p, o, jo)
    local l = limits_of(p, o, jo)
    return l and ratelimit.new(l) or nil
end

-- Run this process as a worker over a job, then record the run. Returns the runner's result.
-- The job's context opens first: a context that cannot open stops the run before any model call.
local function work_on(st, job, c, o, env, progress)
    local ctx, close = definition.open_context(c.mod, { id = job.id, dir = o.job_dir, module = c.mod.path })
    if ctx == nil then
        return nil, close .. "; nothing was asked, no item was decided"
            .. (o.job_dir and ("; once it opens, continue with: jsoncontract " .. (o.command or "run")
                .. " --resume " .. o.job_dir) or "")
    end
    local stop_standin
    local p = c.p
    if p.standin then
        local standin, serr = start_standin(env, c.jo)
        if not standin then close() return nil, serr end
        p.base_url, stop_standin = standin.base_url, standin.stop
    end
    local policy = type(c.mod.module.policy) == "table" and c.mod.module.policy or {}
    core.signal_catch(true)
    local res = runner.run(st, job.id, {
        contract = c.contract, record_text = c.jo["record-text"] == true,
        ask = { provider = p.provider, model = p.model, api_key = p.api_key, base_url = p.base_url,
            context = ctx or nil, adapters = c.mod.module.adapters,
            max_tokens = runner.option("max_tokens"), timeout_ms = runner.option("timeout_ms"),
            -- the module's own attempts per item unless --max-attempts says otherwise; a token
            -- budget only from --token-budget (an example's lesson budget is not a batch default)
            policy = { max_attempts = c.jo["max-attempts"] or runner.option("max_attempts", policy.max_attempts),
                token_budget = c.jo["token-budget"] } },
        parallel = o.parallel, lease_seconds = o["lease-seconds"], grace = o.grace,
        fail_after = o["fail-after"],
        lane = lane_for(p, o, c.jo), on_done = progress,
        on_signal = function(sig)
            stderr:write(format("\njsoncontract: %s: taking no new items; finishing those in flight "
                .. "(up to %d s; again to stop now)\n", sig, runner.option("grace", o.grace)))
        end,
    })
    if stop_standin then stop_standin() end
    close()
    local stats = res.stats
    local recorded, rerr = st:record_run(job.id, { worker = res.owner, started_at = res.started_at,
        exchanges = stats.exchanges,
        limit_wait_ms = (stats.limit_wait_s or 0) * 1000,
        stop_reason = res.store_error and "store_error" or res.breaker and "breaker" or res.signal
            or res.rule_faults and "rule_faults" or "done",
        stats_json = core.encode({ max_in_flight = stats.max_in_flight, duplicates = res.duplicates,
            taken_over = res.taken_over,
            lane_pauses = stats.lane_pauses }) })
    if not recorded then
        stderr:write("jsoncontract: this run's row (exchanges, time waiting) is not in the job store: "
            .. tostring(rerr and rerr.message), "\n")
    end
    core.signal_catch(false)
    return res
end

local function print_summary(summary, out, n, what)
    stdout:write(summary.metrics_text, "\n")
    local caught = {}
    for name, k in pairs(summary.rules_caught or {}) do caught[#caught + 1] = format("%s %d", name, k) end
    table.sort(caught)
    if #caught > 0 then stdout:write("rules caught (items handed to a person): ", concat(caught, ", "), "\n") end
    if (summary.limit_wait_s or 0) > 0 then
        stdout:write(format("waited %.1f s on rate limits\n", summary.limit_wait_s))
    end
    stdout:write(format("%d %s: %d accepted (%s/accepted.jsonl), %d to review (%s/review.jsonl)%s; "
        .. "evidence in %s/evidence.jsonl\n", n, what, summary.accepted, out, summary.human_review, out,
        summary.pending > 0 and format(", %d not done yet", summary.pending) or "", out))
end

-- Finish a run: export, summary, exit status.
local function finish(st, job, res, out, o)
    local extra = { stopped_by = res.signal }
    if res.store_error then
        export.write(st, job.id, out, extra) -- best effort: what was committed, never more
        st:close()
        return fail("the job stopped: cannot record an outcome in the job store (" .. tostring(res.store_error.message)
            .. "); everything committed before is kept, continue with --resume " .. out)
    end
    if res.breaker then
        extra.stopped_by = "breaker" -- (summary.json: why items wait)
        export.write(st, job.id, out, extra) -- what was settled, never more
        local c = st:counts(job.id)
        st:close()
        return fail(format("the job stopped: %s. Nothing was sent to review for it; %s items are not settled "
            .. "and wait: fix the cause and continue with --resume %s", res.breaker.message,
            c and tostring(c.pending + c.leased) or "the", out))
    end
    extra.stopped_by = res.signal or (res.rule_faults and "rule_faults")
    local summary, err = export.write(st, job.id, out, extra)
    st:close()
    if not summary then
        return fail("the job's results are in the store, but the export failed: " .. tostring(err.message)
            .. "; run `jsoncontract export " .. out .. "` once there is room")
    end
    print_summary(summary, out, summary.items, o.command == "triage" and "messages" or "items")
    if res.rule_faults and not res.signal then
        return fail(format("the job did not finish: %s. Nothing was sent to review for it; those %d items wait: "
            .. "fix the rule and continue with --resume %s", res.rule_faults.message, res.rule_faults.count, out))
    end
    if res.signal then
        stderr:write(format("jsoncontract: stopped by %s; continue with: jsoncontract %s --resume %s\n",
            res.signal, o.command or "run", out))
        return SIGNAL_EXIT[res.signal]
    end
    if summary.pending > 0 then
        return fail(format("%d items are not decided (leased by another worker?); see jsoncontract status %s",
            summary.pending, out))
    end
    return 0
end

local function progress_printer(total, already)
    if not isatty(2) then return nil end
    return function(r)
        stderr:write(format("\r%d/%d done: %d accepted, %d to review", already + r.done, total, r.accepted,
            r.human_review))
    end
end

local resume_job -- (defined after `resume`, which calls it)

-- The rest of `triage` for a new job, once its folder is ours and its store open.
-- What a new job needs before anything is created: its input's items, the provider and the
-- job's options; nil and the exit status of a refusal (a usage error) otherwise.
local function new_job_parts(o, mod)
    local input = o.input
    if not input then return nil, die("say which input: --input FILE.jsonl (one record per line; - for stdin)") end
    local p, perr = o.chosen_provider, nil
    if not p then p, perr = choose_provider(o) end
    if not p then return nil, die(perr) end
    local items, digest = input_items(o, input, mod)
    if not items then return nil, digest end
    local jo, err = job_options(o, p, mod.path)
    if not jo then return nil, die(err) end
    return { input = input, p = p, items = items, digest = digest, jo = jo }
end

local function new_job(st, o, env, n)
    local mod, p, jo, items, digest, input, out = n.mod, n.p, n.jo, n.items, n.digest, n.input, n.out
    local err
    local ident = mod.contract:identity()
    local job_id
    -- The job and its items in one transaction: a failure leaves no empty job behind.
    job_id, err = st:create_job({ contract_name = ident.name, contract_version = ident.version,
        schema_hash = ident.schema_hash, provider = p.provider, model = p.model, options_json = core.encode(jo),
        input_digest = digest, input_path = _M.absolute(input) }, items)
    if not job_id then st:close() return fail(err.message) end
    local job = st:job(job_id)
    stderr:write(format("%s: %d %s from %s, job %s, provider %s (%s), model %s, output %s; %s\n", o.command or "run",
        #items, o.command == "triage" and "messages" or "items", input, mod.path or mod.contract.name, p.provider,
        p.standin and "stand-in" or "live", p.model, out, select(2, limits_of(p, o, jo))))
    -- A misspelt keyword checks nothing: say so before the first answer is judged by it.
    local unknown = require("jsoncontract.contract.lint").unknown_keywords(mod.contract.schema)
    for i = 1, math.min(#unknown, 5) do
        stderr:write(format("jsoncontract: warning: the schema's %s %s\n", unknown[i].schema_pointer,
            unknown[i].message))
    end
    local c = { mod = mod, contract = mod.contract, p = p, jo = jo }
    if p.api_key then c.p.api_key = p.api_key end
    o.job_dir = out
    local res
    res, err = work_on(st, job, c, o, env, progress_printer(#items, 0))
    if isatty(2) then stderr:write("\n") end
    if not res then st:close() return fail(err) end
    return finish(st, job, res, out, o)
end

--- `jsoncontract run` (and `triage`, its short form for the support mail example): a new job in
-- a new folder, or `--resume DIR` (`o.resume`).
-- @tparam table o options: job (module path), input, out, resume, store, provider, model, base-url,
--   parallel, max-attempts, token-budget, limit, seed, delay-ms, record-text, retry-review, rpm, tpm,
--   grace, latency; `command` (the word the user typed, for messages: "run" or "triage");
--   `job_def` (a job already loaded by `jsoncontract.jobs.definition.load`, instead of `job`)
-- @tparam table env `{root, bindir}`
-- @treturn integer exit status
function _M.run(o, env)
    if o.resume then return _M.resume(o, env) end
    use_env(env)
    local ok, err = check_options(o)
    if not ok then return die(err) end
    if o["retry-review"] then return die("option --retry-review goes with --resume DIR") end
    local mod
    mod, err = load_job(o)
    if not mod then return die(err) end
    local n, refused = new_job_parts(o, mod)
    if not n then return refused end

    -- Everything is checked; only now is anything created.
    local out = o.out or default_out_dir(o.command)
    local existed = os.rename(out, out) -- true when the folder was there before us
    ok, err = prepare_out_dir(out)
    if not ok then return die(err) end
    -- Held for the run: a `--resume` of this folder started meanwhile is refused.
    local lock
    lock, err = _M.lock_folder(out)
    if not lock then
        if not existed then os.remove(out .. "/" .. _M.LOCK_FILE) os.remove(out) end
        return fail(err)
    end
    local url = o.store or (out .. "/job.sqlite")
    local st
    st, err = store_mod.open(url)
    if not st then
        lock.release()
        if lock.path then os.remove(lock.path) end
        if not existed then os.remove(out) end -- the empty folder we made: nothing is left behind
        return fail(err.message)
    end
    n.mod, n.out = mod, out
    local code = new_job(st, o, env, n)
    lock.release()
    return code
end

--- `jsoncontract triage --resume DIR`: continue the folder's job. Committed items are never asked
-- again; items in flight when it stopped are. The mailbox must be the one the job started with
-- (ids and digests); a job read from stdin needs none (its items are in the store), unless one
-- is given. `--retry-review` first opens a new pass over the items in review.
-- @tparam table o options (as for `triage`; `resume` is the folder)
-- @tparam table env
-- @treturn integer exit status
function _M.resume(o, env)
    use_env(env)
    local okn, nerr = check_options(o)
    if not okn then return die(nerr) end
    local url = o.store or (o.resume .. "/job.sqlite")
    if not o.store and not file_exists(url) then
        return die("nothing to resume in " .. o.resume .. ": no job store " .. url)
    end
    -- One triage per folder: a second would give back this one's leases (below) and ask
    -- its items again. Held until the run has exported; the kernel drops it should we die.
    local lock, lerr = _M.lock_folder(o.resume)
    if not lock then return fail(lerr) end
    local code = resume_job(o, env)
    lock.release()
    return code
end

-- The rest of `resume`, with the job folder ours.
resume_job = function(o, env)
    local out = o.resume
    local url = o.store or (out .. "/job.sqlite")
    local st, err = store_mod.open(url, { create = false })
    if not st then return (err.kind == "not_found" and die or fail)(err.message) end
    local job
    job, err = st:latest_job()
    if not job then st:close() return (err.kind == "not_found" and die or fail)(err.message) end
    local c
    c, err = job_context(job, env, o)
    if not c then st:close() return die(err) end
    local input = o.input or stored_path(job.input_path, env)
    -- A job read from stdin has its items in the store and no file to read them from again:
    -- it resumes without its mailbox. A mailbox given (`--input`, `-` too) is checked as always.
    local items, digest = {}, job.input_digest
    if o.input or input ~= "-" then items, digest = _M.read_mailbox(input, c.jo.limit, c.mod) end
    if not items then
        st:close()
        return die("cannot read the input: " .. tostring(digest)
            .. (o.input and "" or relative_hint(input, "--input FILE")))
    end
    if digest ~= job.input_digest then
        local stored = st:item_digests(job.id) or {}
        local why = format("%d records now, %d when the job started", #items, #stored)
        local by_id = {}
        for _, it in ipairs(items) do by_id[it.item_id] = it end
        for _, s in ipairs(stored) do
            local now_item = by_id[s.item_id]
            if not now_item then why = "record " .. s.item_id .. " is missing" break end
            if now_item.input_digest ~= s.input_digest then
                why = "record " .. s.item_id .. " (line " .. now_item.seq .. ") has changed" break
            end
        end
        st:close()
        return die("the input " .. input .. " is not the one job " .. job.id .. " started with (" .. why
            .. "); nothing was asked. Start a new job in a new folder for a new input.")
    end
    if c.options_changed then
        -- The replaced option is kept, so the next resume runs as this one does.
        local ok, uerr = st:tx(function()
            return st:exec("UPDATE jobs SET options_json = ? WHERE id = ?", { core.encode(c.jo), job.id })
        end)
        if not ok then st:close() return fail(uerr.message) end
    end
    -- We are the job's only process (SQLite, one folder, and its lock is ours): whatever was leased died
    -- with the last run.
    if st.engine == "sqlite" then st:release(job.id, nil) end
    if o["retry-review"] then
        local why = "review items sent again (--retry-review)"
        if c.module_changed then
            why = format("review items sent again with job module %s (--retry-review)", tostring(c.jo.job))
        end
        if c.changed then
            why = format("review items sent again with contract %s %s (--retry-review)", c.changed.name,
                tostring(c.changed.version))
            local ok, uerr = st:tx(function()
                return st:exec("UPDATE jobs SET contract_name = ?, contract_version = ?, schema_hash = ?, "
                    .. "options_json = ? WHERE id = ?", { c.changed.name, c.changed.version, c.changed.schema_hash,
                    core.encode(c.jo), job.id })
            end)
            if not ok then st:close() return fail(uerr.message) end
        end
        local pass, n = st:new_review_pass(job.id, why)
        if not pass then st:close() return fail(n.message) end
        stderr:write(format("%s: pass %d sends %d review items back to the model\n", o.command or "run", pass, n))
    end
    local counts = st:counts(job.id)
    stderr:write(format("%s: resuming job %s: %d of %d %s already decided, provider %s, model %s; %s\n",
        o.command or "run", job.id, counts.done, counts.items, o.command == "triage" and "messages" or "items",
        job.provider, job.model, select(2, limits_of(c.p, o, c.jo))))
    o.job_dir = out
    local res
    res, err = work_on(st, job, c, o, env, progress_printer(counts.items, counts.done))
    if isatty(2) then stderr:write("\n") end
    if not res then st:close() return fail(err) end
    return finish(st, job, res, out, o)
end

-- Open the store named by --store, or DIR/job.sqlite for a folder argument. The third value is
-- true when the options are at fault (no store named, no such file, a database that holds no
-- job store): a usage error, exit 2; a store that cannot be reached or read is exit 1.
local function open_named(o, create)
    local url = o.store
    if not url and o.dir then url = o.dir .. "/job.sqlite" end
    if not url then
        return nil, "say which job store: --store URL (postgresql://... or a SQLite file) or a folder", true
    end
    if not url:match("^postgres") and not create and not file_exists((url:gsub("^sqlite:", ""))) then
        return nil, "no job store at " .. url, true
    end
    local st, err = store_mod.open(url, { create = create })
    if not st then return nil, err.message, err.kind == "not_found" end
    return st
end

-- The job named by --job, else the newest. On failure the exit status goes with it: no such
-- job is the options' fault (2), a store that cannot be read is not (1).
local function pick_job(st, o)
    local job, err
    if o.job then job, err = st:job(o.job) else job, err = st:latest_job() end
    if job then return job end
    return nil, err, err.kind == "not_found" and die or fail
end

--- `jsoncontract enqueue --store URL --job MODULE --input FILE`: create a job and its items in a
-- shared store.
-- @tparam table o options: store, job (module path; or `job_def`), input, provider, model, base-url, limit,
--   max-attempts, token-budget, seed, delay-ms, record-text, rpm, tpm, latency
-- @tparam table env
-- @treturn integer exit status (prints the job id on stdout)
function _M.enqueue(o, env)
    use_env(env)
    local okn, nerr = check_options(o)
    if not okn then return die(nerr) end
    local mod, err = load_job(o)
    if not mod then return die(err) end
    local n, code = new_job_parts(o, mod)
    if not n then return code end
    local input, p, items, digest, jo = n.input, n.p, n.items, n.digest, n.jo
    local st, usage
    st, err, usage = open_named(o, true)
    if not st then return (usage and die or fail)(err) end
    local ident = mod.contract:identity()
    local job_id
    -- The job and its items in one transaction: a failure leaves no empty job for workers to pick.
    job_id, err = st:create_job({ contract_name = ident.name, contract_version = ident.version,
        schema_hash = ident.schema_hash, provider = p.provider, model = p.model, options_json = core.encode(jo),
        input_digest = digest, input_path = _M.absolute(input) }, items)
    st:close()
    if not job_id then return fail(err.message) end
    stdout:write(job_id, "\n")
    stderr:write(format("enqueue: job %s with %d items; start workers with: jsoncontract worker --store URL\n",
        job_id, #items))
    return 0
end

--- `jsoncontract worker --store URL [--job ID]`: work on a shared job until no item is left.
-- Several workers on several hosts share the job through leases.
-- @tparam table o options: store, job, parallel, lease-seconds, grace, base-url, rpm, tpm
-- @tparam table env
-- @treturn integer exit status
function _M.worker(o, env)
    use_env(env)
    local ok, err = check_options(o)
    if not ok then return die(err) end
    local st, usage
    st, err, usage = open_named(o, false)
    if not st then return (usage and die or fail)(err) end
    local job, exit
    job, err, exit = pick_job(st, o)
    if not job then st:close() return exit(err.message) end
    local c
    c, err = job_context(job, env, o)
    if not c then st:close() return die(err) end
    -- A worker has no job folder: its context opens without one (`dir` nil).
    o.job_dir = nil
    stderr:write(format("worker: job %s, provider %s, model %s; %s\n", job.id, job.provider, job.model,
        select(2, limits_of(c.p, o, c.jo))))
    local res
    res, err = work_on(st, job, c, o, env, nil)
    st:close()
    if not res then return fail(err) end
    stdout:write(format("worker %s: %d items recorded (%d accepted, %d to review), %d already recorded by "
        .. "another worker, %d taken over by another after this worker's lease ran out, %d exchanges, "
        .. "%.1f s waiting on rate limits\n", res.owner, res.done, res.accepted, res.human_review, res.duplicates,
        res.taken_over, res.stats.exchanges or 0, res.stats.limit_wait_s or 0))
    if res.store_error then return fail("the worker stopped: " .. tostring(res.store_error.message)) end
    if res.breaker then
        return fail("the worker stopped: " .. res.breaker.message .. ". Nothing was sent to review for it; the "
            .. "items not settled wait: fix the cause and start the workers again")
    end
    if res.rule_faults and not res.signal then
        return fail(format("the worker left %d items waiting: %s. Nothing was sent to review for it: fix the "
            .. "rule and start the workers again", res.rule_faults.count, res.rule_faults.message))
    end
    if res.signal then return SIGNAL_EXIT[res.signal] end
    return 0
end

--- `jsoncontract status [DIR | --store URL] [--job ID]`: progress and per-gate counts of a job.
-- @tparam table o options: store, dir, job, json (flag)
-- @tparam table env
-- @treturn integer exit status
function _M.status(o, env)
    use_env(env)
    local st, err, usage = open_named(o, false)
    if not st then return (usage and die or fail)(err) end
    local job, exit
    job, err, exit = pick_job(st, o)
    if not job then st:close() return exit(err.message) end
    -- One snapshot for both: the line's figures add up while workers commit.
    local summary, counts
    summary, err = st:read_tx(function()
        local s, e = export.summary(st, job.id)
        counts = st:counts(job.id)
        return s, e
    end)
    st:close()
    if not summary then return fail(err.message) end
    if o.json then
        summary.metrics_text = nil
        summary.job_id, summary.leased, summary.waiting = job.id, counts.leased, counts.pending
        stdout:write(core.encode(summary, { indent = 2 }), "\n")
        return 0
    end
    stdout:write(format("job %s (%s %s, %s %s), pass %d\n", job.id, tostring(job.contract_name),
        tostring(job.contract_version), tostring(job.provider), tostring(job.model), counts.pass or 1))
    stdout:write(format("%d items: %d decided (%d accepted, %d to review), %d in flight, %d waiting\n",
        counts.items, counts.done, summary.accepted, summary.human_review, counts.leased, counts.pending))
    stdout:write(summary.metrics_text, "\n")
    return 0
end

--- `jsoncontract export DIR` or `export --store URL --out DIR [--job ID]`: write accepted.jsonl,
-- review.jsonl, evidence.jsonl and summary.json from the store (temp file, fsync, rename).
-- @tparam table o options: dir, store, out, job
-- @tparam table env
-- @treturn integer exit status
function _M.export(o, env)
    use_env(env)
    local out = o.out or o.dir
    if not out then return die("export needs a folder: export DIR, or --store URL --out DIR") end
    local st, err, usage = open_named(o, false)
    if not st then return (usage and die or fail)(err) end
    local job, exit
    job, err, exit = pick_job(st, o)
    if not job then st:close() return exit(err.message) end
    os.execute("mkdir -p " .. shell_quote(out) .. " 2>/dev/null") -- (export.write says why it cannot)
    local summary
    summary, err = export.write(st, job.id, out)
    st:close()
    if not summary then return fail(err.message) end
    stdout:write(format("exported job %s to %s: %d accepted, %d to review, %d not decided yet\n", job.id, out,
        summary.accepted, summary.human_review, summary.pending))
    return 0
end

return _M
