--- The command line behind bin/jsoncontract.
-- `triage` runs the main job: every message of a mailbox (JSONL, one `{id, text}` per line)
-- through the support-ticket contract and a model, into accepted tickets or the review queue.
-- `check` runs the format, schema and rules gates on one reply. `diff`, `replay`, `selftest`,
-- `probe`, `examples` and `lint` are described in USAGE below.
-- @module jsoncontract.cli
local core = require "jsoncontract.core"
local run = require "jsoncontract.run"
local batch = require "jsoncontract.batch"
local evidence = require "jsoncontract.evidence"
local errors = require "jsoncontract.errors"
local secrets = require "jsoncontract.secrets"

local format = string.format
local stderr, stdout = io.stderr, io.stdout

local _M = { _VERSION = core._VERSION }

local USAGE = [[
usage: jsoncontract <command> [options]

commands:
  triage [options]             triage a mailbox with the support-ticket contract
      --input FILE             JSONL mailbox (default: $JC_SHARED/corpora/support-emails/emails.jsonl
                               when present, else examples/mailbox.jsonl)
      --out DIR                output folder, must be new or empty (default: out/triage-<UTC time>)
      --contract FILE          Lua file returning {contract=...} (default: examples/support_ticket.lua)
      --provider NAME          openai | anthropic (default: from the API key set, else openai)
      --model NAME             model name (default: OPENAI_MODEL / ANTHROPIC_MODEL or a stand-in name)
      --base-url URL           provider base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL)
      --parallel N             items in flight at once (default 8)
      --max-attempts N         model answers per item (default 3)
      --token-budget N         stop retrying when the history would exceed N estimated tokens
      --limit N                only the first N messages
      --seed N                 stand-in model seed (default 1)
      --delay-ms N             stand-in model delay per answer (default 20)
      --record-text            keep raw model text and mail text in the evidence log
  check --contract FILE [REPLY]  run format, schema and rules gates on one reply (file or stdin);
      --adapter NAME           allow one adapter (e.g. unwrap-one-json-fence); exit 0 accepted, 1 rejected
  diff OLD NEW                 classify each schema change between two contract versions (.lua
                               contract files or JSON Schema files); exit 0 compatible, 1 breaking
      --json                   findings as JSON
  replay EVIDENCE              re-run the contract offline on the replies in an evidence log (written
                               with --record-text) or on one saved provider response; names the file
                               and its SHA-256; exit 0 when every verdict matches the recorded one
      --contract FILE          contract to replay with (default: examples/<recorded name>.lua)
      --adapter NAME           also allow this adapter
  selftest                     offline checks of the whole chain, with a local HTTP server for
                               500, redirect, invalid body and read timeout; exit 0 when all pass
  probe [--provider openai]    one JSON-mode request (response_format json_object); records what the
                               provider did, never switches modes; exit 0 honoured, 1 not, 3 unclear
      --base-url URL           an OpenAI-compatible server (default: the provider's, or the stand-in
                               when no key is set); --model NAME, --timeout-ms N (default 30000)
      --out FILE               also append the record to this evidence log
  examples [NAME...]           run each example over examples/<name>.jsonl and print per-gate metrics
      --standin                the stand-in model over HTTP instead of the recorded replies
      --verbose                also print each accepted value
  lint ...                     lint contracts (when jsoncontract.cli_lint is installed)
  help                         this text

With OPENAI_API_KEY or ANTHROPIC_API_KEY set, triage calls that provider; otherwise it starts the
embedded stand-in model on 127.0.0.1 and talks to it over real HTTP. Keys never reach any output.
]]

-- The keys a run may hold: whatever goes to stderr or stdout is redacted of them.
local function known_keys()
    return { os.getenv("OPENAI_API_KEY"), os.getenv("ANTHROPIC_API_KEY"), os.getenv("GEMINI_API_KEY") }
end

local function die(msg)
    stderr:write("jsoncontract: ", secrets.clean(msg, known_keys(), 4000), "\n")
    return 2
end

local function parse_args(argv, first, flags)
    local opts, rest = {}, {}
    local i = first
    while i <= #argv do
        local a = argv[i]
        local name = a:match("^%-%-([%w%-]+)$")
        if name then
            local kind = flags[name]
            if not kind then return nil, "unknown option --" .. name end
            if kind == "flag" then
                opts[name] = true
            else
                i = i + 1
                local v = argv[i]
                if v == nil then return nil, "option --" .. name .. " needs a value" end
                if kind == "number" then
                    v = tonumber(v)
                    if not v or v < 0 or v % 1 ~= 0 then return nil, "option --" .. name .. " needs a whole number" end
                end
                opts[name] = v
            end
        else
            rest[#rest + 1] = a
        end
        i = i + 1
    end
    return opts, rest
end

local function file_exists(path)
    local f = io.open(path, "rb")
    if f then f:close() return true end
    return false
end

local function read_file(path)
    local f, msg = io.open(path, "rb")
    if not f then return nil, msg end
    local s, rerr = f:read("*a")
    f:close()
    if not s then return nil, path .. ": " .. tostring(rerr) end -- e.g. a folder
    return s
end

local function shell_quote(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- The interpreter running us, to start the stand-in with the same Lua.
local function interpreter()
    local i = -1
    while arg and arg[i - 1] do i = i - 1 end
    return arg and arg[i] or (jit and "luajit" or "lua5.4")
end

local function load_contract(path)
    local ok, mod = pcall(dofile, path)
    if not ok then return nil, "cannot load contract " .. path .. ": " .. tostring(mod) end
    if type(mod) ~= "table" or type(mod.contract) ~= "table" then
        return nil, path .. " must return a table with a 'contract' field"
    end
    return mod
end

-- Read a JSONL mailbox. A line that is not a JSON object with a string `text` becomes an item
-- with `input_error`, so it still ends in the review queue: nothing is lost.
local function read_mailbox(path, limit)
    local f, msg = io.open(path, "rb")
    if not f then return nil, msg end
    local items, lineno = {}, 0
    if limit == 0 then f:close() return items end
    -- A folder opens but cannot be read: say so instead of raising from lines().
    local ok, err = pcall(function()
        for line in f:lines() do
            lineno = lineno + 1
            if line:match("%S") then
                local v, derr = core.decode(line)
                local item
                if v == nil then
                    item = { id = "line-" .. lineno,
                        input_error = "line " .. lineno .. " is not JSON: " .. derr.message }
                elseif type(v) ~= "table" or type(v.text) ~= "string" then
                    item = { id = "line-" .. lineno, input_error = "line " .. lineno .. " has no string field 'text'" }
                else
                    item = v
                    if type(item.id) ~= "string" then item.id = "line-" .. lineno end
                end
                items[#items + 1] = item
                if limit and #items >= limit then break end
            end
        end
    end)
    f:close()
    if not ok then return nil, path .. ": " .. tostring(err):gsub("^.-: ", "") end
    return items
end

local function prepare_out_dir(dir)
    local r = os.execute("test -e " .. shell_quote(dir) .. " -a ! -d " .. shell_quote(dir))
    if r == true or r == 0 then
        return nil, "output path " .. dir .. " exists and is not a folder (nothing was overwritten)"
    end
    local p = io.popen("ls -A " .. shell_quote(dir) .. " 2>/dev/null")
    local listing = p:read("*a")
    p:close()
    if listing ~= "" then
        return nil, "output folder " .. dir .. " is not empty; choose a new one (nothing was overwritten)"
    end
    r = os.execute("mkdir -p " .. shell_quote(dir))
    if r ~= true and r ~= 0 then
        return nil, "cannot create output folder " .. dir
    end
    return true
end

-- The default output folder: out/triage-<UTC time>, with -2, -3, ... when that one is taken.
local function default_out_dir()
    local base = "out/triage-" .. os.date("!%Y%m%d-%H%M%S")
    local dir, n = base, 1
    while true do
        local p = io.popen("ls -A " .. shell_quote(dir) .. " 2>/dev/null; test -e " .. shell_quote(dir) .. " && echo x")
        local taken = p:read("*a") ~= ""
        p:close()
        if not taken then return dir end
        n = n + 1
        dir = base .. "-" .. n
    end
end

-- Start the stand-in model server; returns base_url and a stop function.
local function start_standin(bindir, seed, delay_ms)
    -- --idle-seconds: should we die without saying /shutdown, the server follows soon.
    local cmd = format("%s %s --port 0 --seed %d --delay-ms %d --max-seconds 21600 --idle-seconds 120",
        shell_quote(interpreter()), shell_quote(bindir .. "/jsoncontract-standin"), seed, delay_ms)
    local proc = io.popen(cmd, "r")
    local line = proc and proc:read("l")
    local port = line and line:match("^listening 127%.0%.0%.1:(%d+)")
    if not port then
        if proc then proc:close() end
        return nil, "the stand-in model did not start (" .. tostring(line) .. ")"
    end
    local base = "http://127.0.0.1:" .. port
    local function stop()
        local curl = require "jsoncontract.transport.curl"
        curl.request { url = base .. "/shutdown", method = "POST", body = "", timeout_ms = 2000 }
        proc:close()
    end
    return base, stop
end

-- Which provider, model, key and base URL: a key in the environment wins; else the stand-in.
-- Which provider, model, key and base URL. A key in the environment wins; a --base-url
-- without a key talks to that server without one (a local OpenAI-compatible server, say);
-- otherwise the stand-in. Returns nil, message on a bad choice.
local function choose_provider(o)
    local env = os.getenv
    local providers = require "jsoncontract.providers"
    if o.provider and not pcall(providers.get, o.provider) then
        return nil, "unknown provider " .. o.provider .. " (known: " .. table.concat(providers.names, ", ") .. ")"
    end
    if o.model == "" then return nil, "option --model needs a name" end
    local base = o["base-url"]
    if base and not base:match("^https?://[^/]") then return nil, "option --base-url needs an http(s) URL" end
    local openai_key, anthropic_key = env("OPENAI_API_KEY"), env("ANTHROPIC_API_KEY")
    if openai_key and openai_key ~= "" and (o.provider == nil or o.provider == "openai") then
        return { provider = "openai", api_key = openai_key, model = o.model or env("OPENAI_MODEL") or "gpt-4o-mini",
            base_url = base or env("OPENAI_BASE_URL") }
    end
    if anthropic_key and anthropic_key ~= "" and (o.provider == nil or o.provider == "anthropic") then
        return { provider = "anthropic", api_key = anthropic_key,
            model = o.model or env("ANTHROPIC_MODEL") or "claude-sonnet-4-5",
            base_url = base or env("ANTHROPIC_BASE_URL") }
    end
    if base then
        if not o.model then return nil, "option --base-url without an API key needs --model" end
        return { provider = o.provider or "openai", model = o.model, base_url = base }
    end
    local name = o.provider or "openai"
    if name ~= "openai" and name ~= "anthropic" then
        return nil, "the stand-in model speaks openai and anthropic only; --provider " .. name
            .. " needs its key (or --base-url and --model)"
    end
    return { provider = name, model = o.model or "standin-1", standin = true }
end

local function isatty(fd)
    local r = os.execute("test -t " .. fd)
    return r == true or r == 0
end

--- `jsoncontract triage`: see USAGE. Returns the exit status (0 when every item ended in
-- exactly one of accepted or review, whatever the split).
function _M.triage(argv, env)
    local o, rest = parse_args(argv, 2, {
        input = "string", out = "string", contract = "string", provider = "string", model = "string",
        ["base-url"] = "string", parallel = "number", ["max-attempts"] = "number", ["token-budget"] = "number",
        limit = "number", seed = "number", ["delay-ms"] = "number", ["record-text"] = "flag",
    })
    if not o then return die(rest) end
    if #rest > 0 then return die("unexpected argument " .. rest[1]) end
    local root = env.root
    local shared = os.getenv("JC_SHARED") or (root == "." and "../shared" or (root .. "/../shared"))
    local input = o.input
    if not input then
        input = shared .. "/corpora/support-emails/emails.jsonl"
        if not file_exists(input) then input = root .. "/examples/mailbox.jsonl" end
    end
    local parallel, max_attempts = o.parallel or 8, o["max-attempts"] or 3
    if parallel < 1 or parallel > 256 then return die("option --parallel must be from 1 to 256") end
    if max_attempts < 1 then return die("option --max-attempts must be at least 1") end
    local p, perr = choose_provider(o)
    if not p then return die(perr) end
    local mod, err = load_contract(o.contract or (root .. "/examples/support_ticket.lua"))
    if not mod then return die(err) end
    local contract = mod.contract
    local items
    items, err = read_mailbox(input, o.limit)
    if not items then return die("cannot read mailbox: " .. tostring(err)) end

    -- Everything is checked; only now is anything created.
    local out = o.out or default_out_dir()
    local ok
    ok, err = prepare_out_dir(out)
    if not ok then return die(err) end

    -- The shop's orders: the orders the mailbox refers to, plus the examples' own.
    local orders_mod = dofile(root .. "/examples/orders.lua")
    local db
    db, err = orders_mod.open(out .. "/orders.sqlite")
    if not db then return die("cannot open orders database: " .. tostring(err)) end
    for _, id in ipairs { "1042", "1187", "2001", "2002", "2003", "2004", "2005" } do db:add(id, "example") end
    for _, item in ipairs(items) do
        local meta = type(item.meta) == "table" and item.meta or {}
        for _, id in ipairs(type(meta.inserted_order_numbers) == "table" and meta.inserted_order_numbers or {}) do
            if type(id) == "string" then db:add(id, item.id) end
        end
    end

    local stop_standin
    if p.standin then
        p.base_url, stop_standin = start_standin(env.bindir, o.seed or 1, o["delay-ms"] or 20)
        if not p.base_url then db:close() return die(stop_standin) end
    end

    local log = assert(evidence.open(out .. "/evidence.jsonl", { record_text = o["record-text"] }))
    if p.api_key then log:add_secret(p.api_key) end
    local tickets = assert(io.open(out .. "/tickets.jsonl", "w"))
    local review = assert(io.open(out .. "/review.jsonl", "w"))
    local metrics = evidence.metrics()
    local tty = isatty(2)
    local done, n_accepted, n_review = 0, 0, 0

    stderr:write(format("triage: %d messages from %s, provider %s (%s), model %s, output %s\n", #items, input,
        p.provider, p.standin and ("stand-in at " .. p.base_url) or "live", p.model, out))

    local function no_attempt(item, category, kind, message)
        return { status = "human_review", attempts = setmetatable({}, core.array_mt),
            usage = { input_tokens = 0, output_tokens = 0 }, item_id = item.id,
            reason = errors.new(category, kind, message) }
    end

    local function work(item)
        if item.input_error then return no_attempt(item, "input", "invalid_input", item.input_error) end
        -- One item's failure (a bug in a rule, say) is that item's review reason, never the
        -- end of the whole run.
        local asked, outcome = pcall(run.ask, contract, item.text, {
            provider = p.provider, model = p.model, api_key = p.api_key, base_url = p.base_url,
            transport = batch.send, sleep = batch.sleep, evidence = log, context = { orders = db },
            item_id = item.id, policy = { max_attempts = max_attempts, token_budget = o["token-budget"] },
            max_tokens = 300, timeout_ms = 120000,
        })
        if asked then return outcome end
        local msg = secrets.clean(secrets.describe(outcome), p.api_key, 500)
        return no_attempt(item, "internal", "item_error", "this item could not be processed: " .. msg)
    end

    -- One item's line, checked before anything is written: the key redacted from every
    -- string, and a line that cannot be encoded (a value no JSON can hold, nested too deep)
    -- becomes that item's review line with the reason, so the run goes on.
    local function line_for(base)
        local encoded, line = pcall(core.encode, secrets.redact_value(base, p.api_key))
        if encoded then return line end
        return nil, secrets.clean(line, p.api_key, 300)
    end

    local function on_done(i, outcome)
        local item = items[i]
        done = done + 1
        local attempts = setmetatable({}, core.array_mt)
        for k, a in ipairs(outcome.attempts) do
            attempts[k] = { gate = a.gate, kind = a.kind, finish = a.finish, http_status = a.http_status }
        end
        local base = { id = item.id, request_id = outcome.request_id, contract = contract:identity(),
            attempts = attempts, usage = outcome.usage, elapsed_ms = outcome.elapsed_ms }
        local line, why
        if outcome.status == "accepted" then
            base.ticket = outcome.value
            base.adapters = outcome.adapters
            line, why = line_for(base)
            if line then
                n_accepted = n_accepted + 1
                tickets:write(line, "\n")
            else
                base.ticket, base.adapters = nil, nil
                outcome = { status = "human_review", attempts = outcome.attempts, usage = outcome.usage,
                    reason = errors.new("internal", "item_error", "this item's ticket could not be written: " .. why) }
            end
        end
        if outcome.status ~= "accepted" then
            n_review = n_review + 1
            local r = outcome.reason
            local errs = setmetatable({}, core.array_mt)
            -- Messages a person reads: long pointers and values in them elided in the middle.
            for k, e in ipairs(r.errors or {}) do
                errs[k] = { pointer = e.pointer, keyword = e.keyword,
                    message = secrets.clean(e.message, p.api_key, 1000) }
            end
            base.reason = { category = r.category, kind = r.kind, message = secrets.clean(r.message, p.api_key, 2000),
                errors = errs }
            line, why = line_for(base)
            if not line then
                base.reason = { category = "internal", kind = "item_error", errors = setmetatable({}, core.array_mt),
                    message = "this item's review line could not be written: " .. why }
                line = assert(line_for(base))
            end
            review:write(line, "\n")
        end
        metrics:observe_outcome(outcome)
        if tty then
            stderr:write(format("\r%d/%d done: %d accepted, %d to review", done, #items, n_accepted, n_review))
        end
    end

    local okrun, runerr = pcall(batch.run, items, work, { parallel = parallel, on_done = on_done })
    if tty then stderr:write("\n") end
    tickets:close()
    review:close()
    log:close()
    db:close()
    if stop_standin then stop_standin() end
    if not okrun then return die("triage stopped: " .. tostring(runerr)) end

    local summary = metrics:summary()
    local f = assert(io.open(out .. "/summary.json", "w"))
    f:write(core.encode({ input = input, items = #items, accepted = n_accepted, human_review = n_review,
        provider = p.provider, model = p.model, standin = p.standin or false, contract = contract:identity(),
        metrics = summary }, { indent = 2 }), "\n")
    f:close()

    stdout:write(metrics:format(), "\n")
    stdout:write(format("%d messages: %d accepted (%s/tickets.jsonl), %d to review (%s/review.jsonl); " ..
        "evidence in %s/evidence.jsonl\n", #items, n_accepted, out, n_review, out, out))
    if n_accepted + n_review ~= #items then
        stderr:write("jsoncontract: counts do not add up\n")
        return 1
    end
    return 0
end

--- `jsoncontract check --contract FILE [REPLY]`: one reply through format, schema and rules.
function _M.check(argv, env)
    local o, rest = parse_args(argv, 2, { contract = "string", adapter = "string" })
    if not o then return die(rest) end
    local mod, err = load_contract(o.contract or (env.root .. "/examples/support_ticket.lua"))
    if not mod then return die(err) end
    local text
    if rest[1] then
        text, err = read_file(rest[1])
        if not text then return die(err) end
    else
        text = io.read("a")
    end
    if o.adapter then
        local known = false
        for _, name in ipairs(require("jsoncontract.adapters").names) do known = known or name == o.adapter end
        if not known then return die("unknown adapter " .. o.adapter) end
    end
    local value, report = mod.contract:check(text, { adapters = o.adapter and { o.adapter } or nil })
    if value ~= nil then
        stdout:write(core.encode({ verdict = "accepted", value = value, adapters = report.adapters },
            { indent = 2 }), "\n")
        return 0
    end
    stdout:write(core.encode({ verdict = "rejected", category = report.category, kind = report.kind,
        message = report.message, errors = report.errors }, { indent = 2 }), "\n")
    return 1
end

----------------------------------------------------------------------------
-- Loading contracts and schemas
----------------------------------------------------------------------------

-- A schema from a contract Lua file (its `contract.schema`, or `schema`) or a JSON Schema file.
local function load_schema(path)
    if path:match("%.lua$") then
        local ok, mod = pcall(dofile, path)
        if not ok then return nil, "cannot load " .. path .. ": " .. tostring(mod) end
        if type(mod) == "table" and type(mod.contract) == "table" and mod.contract.schema ~= nil then
            return mod.contract.schema, mod.contract.version
        end
        if type(mod) == "table" and mod.schema ~= nil then return mod.schema end
        return nil, path .. " must return a table with a 'contract' or 'schema' field"
    end
    local text, err = read_file(path)
    if not text then return nil, err end
    local v, derr = core.decode(text)
    if v == nil then return nil, path .. " is not JSON: " .. derr.message end
    if type(v) ~= "table" and type(v) ~= "boolean" then return nil, path .. " is not a JSON Schema" end
    -- Only a schema the validator accepts is diffed: no verdicts about non-schemas.
    local ok, cerr = pcall(core.compile, v)
    if not ok then return nil, path .. ": " .. tostring(cerr) end
    return v
end

--- `jsoncontract diff OLD NEW`: classify each schema change; exit 0 compatible, 1 breaking.
function _M.diff(argv)
    local o, rest = parse_args(argv, 2, { json = "flag" })
    if not o then return die(rest) end
    if #rest ~= 2 then return die("diff needs two files: OLD NEW (contract .lua files or JSON Schema files)") end
    local old, oldv = load_schema(rest[1])
    if old == nil then return die(oldv) end
    local new, newv = load_schema(rest[2])
    if new == nil then return die(newv) end
    local ok, findings, breaking = pcall(require("jsoncontract.diff").diff, old, new)
    if not ok then return die("diff failed: " .. tostring(findings)) end
    if o.json then
        stdout:write(core.encode({ old = rest[1], new = rest[2], breaking = breaking, findings = findings },
            { indent = 2 }), "\n")
        return breaking and 1 or 0
    end
    stdout:write(format("diff %s%s -> %s%s\n", rest[1], oldv and (" (version " .. oldv .. ")") or "",
        rest[2], newv and (" (version " .. newv .. ")") or ""))
    for _, f in ipairs(findings) do
        stdout:write(format("%-10s %s %s: %s\n", f.breaking and "BREAKING" or "compatible", f.pointer, f.change,
            f.reason))
    end
    local nb = 0
    for _, f in ipairs(findings) do if f.breaking then nb = nb + 1 end end
    stdout:write(format("%s: %d change(s), %d breaking\n", breaking and "breaking" or "compatible", #findings, nb))
    return breaking and 1 or 0
end

----------------------------------------------------------------------------
-- replay
----------------------------------------------------------------------------

local function verdict_of(value, err)
    if value ~= nil then return "accepted", nil end
    return err.category, err.kind
end

local function show_verdict(gate, kind)
    return kind and (gate .. "/" .. kind) or gate
end

--- `jsoncontract replay EVIDENCE`: re-run the contract on recorded replies, offline.
-- EVIDENCE is an evidence log (JSONL; records written with --record-text carry the model's text)
-- or one saved provider response body (`--provider openai|anthropic`, default openai).
-- Exit 0 when every replayed verdict matches the recorded one (or, for a saved response, when it
-- is accepted), 1 otherwise.
function _M.replay(argv, env)
    local o, rest = parse_args(argv, 2, { contract = "string", adapter = "string", provider = "string" })
    if not o then return die(rest) end
    if #rest ~= 1 then return die("replay needs one evidence file") end
    local adapter_names = require("jsoncontract.adapters").names
    local function known_adapter(a)
        for _, n in ipairs(adapter_names) do if n == a then return true end end
        return false
    end
    if o.adapter and not known_adapter(o.adapter) then return die("unknown adapter " .. o.adapter) end
    if o.provider and not pcall(require("jsoncontract.providers").get, o.provider) then
        return die("unknown provider " .. o.provider)
    end
    local path = rest[1]
    local bytes, err = read_file(path)
    if not bytes then return die(err) end
    stdout:write(format("replay %s sha256 %s (%d bytes)\n", path, core.sha256(bytes), #bytes))

    local contracts, contexts = {}, {}
    local evidence_dir = path:match("^(.*)/[^/]*$") or "."
    local function contract_for(name)
        if not o.contract and name ~= nil and (type(name) ~= "string" or not name:match("^[%w_%-]+$")) then
            -- The evidence is data: a name never becomes a path outside examples/.
            return nil, "the record names the contract " .. core.encode(name) .. ", which is not an example name; "
                .. "pass --contract FILE"
        end
        local file = o.contract or (name and (env.root .. "/examples/" .. name .. ".lua"))
        if not file then return nil, "the record names no contract; pass --contract FILE" end
        if contracts[file] == nil then
            if not file_exists(file) then
                contracts[file] = false
                return nil, "no contract file " .. file .. "; pass --contract FILE"
            end
            local mod, lerr = load_contract(file)
            if not mod then return nil, lerr end
            contracts[file] = mod
            -- The rules' context of the run (e.g. the orders table next to the evidence), when the
            -- contract module knows how to find it offline.
            if type(mod.replay_context) == "function" then
                contexts[file] = mod.replay_context { evidence_dir = evidence_dir, root = env.root }
            end
        end
        if not contracts[file] then return nil, "no contract file " .. file end
        return contracts[file].contract, contexts[file]
    end
    local extra = o.adapter and { o.adapter } or {}

    -- One saved provider response (the outer JSON envelope).
    local doc = core.decode(bytes)
    if type(doc) == "table" and (doc.choices ~= nil or doc.type == "message") then
        local provider = require("jsoncontract.providers").get(o.provider or (doc.type == "message" and "anthropic"
            or "openai"))
        local contract, cerr = contract_for(nil)
        if not contract then return die(cerr) end
        local reply, perr = provider.read_response(200, {}, bytes)
        if not reply then
            stdout:write(format("saved response: rejected at the protocol gate: %s\n", tostring(perr)))
            return 1
        end
        local value, report = contract:check(reply.text, { adapters = extra })
        if value ~= nil then
            stdout:write(format("saved response: accepted by %s %s%s\n", contract.name, contract.version,
                #report.adapters > 0 and (" with adapter " .. table.concat(report.adapters, ", ")) or ""))
            return 0
        end
        stdout:write(format("saved response: rejected by %s %s: %s\n", contract.name, contract.version,
            tostring(report)))
        return 1
    end

    local n, same, differ, skipped, unknown, lineno = 0, 0, 0, 0, 0, 0
    for line in (bytes .. "\n"):gmatch("([^\n]*)\n") do
        lineno = lineno + 1
        if line:match("%S") then
            local rec = core.decode(line)
            if type(rec) ~= "table" then
                stdout:write(format("line %d: not an evidence record, skipped\n", lineno))
                skipped = skipped + 1
            elseif type(rec.text) ~= "string" or (rec.gate ~= "accepted" and rec.gate ~= "format"
                and rec.gate ~= "schema" and rec.gate ~= "rules") then
                -- Transport and protocol records carry no model text to re-check; anything
                -- else without a string text is named, not skipped silently.
                if rec.gate ~= "transport" and rec.gate ~= "protocol" then
                    stdout:write(format("line %d: no model text to re-check (gate %s), skipped\n", lineno,
                        core.encode(rec.gate == nil and core.null or rec.gate)))
                end
                skipped = skipped + 1
            else
                local name = type(rec.contract) == "table" and rec.contract.name or nil
                local contract, ctx = contract_for(name)
                if not contract then return die("line " .. lineno .. ": " .. ctx) end
                local adapters = {}
                for _, a in ipairs(type(rec.adapters) == "table" and rec.adapters or {}) do
                    if not known_adapter(a) then
                        return die("line " .. lineno .. ": the record names an unknown adapter " .. core.encode(a))
                    end
                    adapters[#adapters + 1] = a
                end
                for _, a in ipairs(extra) do adapters[#adapters + 1] = a end
                local value, cres = contract:check(rec.text, { adapters = adapters, context = ctx })
                local gate, kind = verdict_of(value, cres)
                local rgate = rec.gate
                local rkind = rgate ~= "accepted" and rec.kind or nil
                local where = format("line %d%s attempt %s", lineno,
                    type(rec.item_id) == "string" and (" (" .. rec.item_id .. ")") or "", tostring(rec.attempt))
                n = n + 1
                local note = ""
                if type(rec.contract) == "table" and rec.contract.schema_hash
                    and rec.contract.schema_hash ~= contract.schema_hash then
                    note = format(" (recorded with %s %s, replayed with %s %s)", tostring(rec.contract.name),
                        tostring(rec.contract.version), contract.name, contract.version)
                end
                if gate == rgate and kind == rkind then
                    same = same + 1
                    stdout:write(format("%s: %s, same as recorded%s\n", where, show_verdict(gate, kind), note))
                elseif rgate == "rules" and gate == "accepted" and ctx == nil then
                    unknown = unknown + 1
                    stdout:write(format("%s: recorded %s; the format and schema gates agree, the rules need the "
                        .. "run's context, not available offline: not compared%s\n",
                        where, show_verdict(rgate, rkind), note))
                else
                    differ = differ + 1
                    stdout:write(format("%s: DIFFERS: recorded %s, replayed %s%s\n", where,
                        show_verdict(rgate, rkind), show_verdict(gate, kind), note))
                end
            end
        end
    end
    stdout:write(format("%d replayed: %d same, %d differ%s; %d record(s) without text or outside the contract " ..
        "gates skipped\n", n, same, differ, unknown > 0 and format(", %d not comparable offline", unknown) or "",
        skipped))
    if n == 0 then
        stderr:write("jsoncontract: no record carries the model's text (record it with --record-text)\n")
        return 1
    end
    return differ == 0 and 0 or 1
end

----------------------------------------------------------------------------
-- selftest
----------------------------------------------------------------------------

-- An OpenAI Chat Completions envelope around `content`.
local function envelope(content, finish, refusal)
    return core.encode {
        id = "chatcmpl-selftest", object = "chat.completion", model = "selftest-1",
        choices = setmetatable({ { index = 0, finish_reason = finish or "stop",
            message = { role = "assistant", content = content == nil and core.null or content,
                refusal = refusal or core.null } } }, core.array_mt),
        usage = { prompt_tokens = 50, completion_tokens = 10, total_tokens = 60 },
    }
end

-- A transport answering from a list of contents, one per call.
local function scripted(list)
    local i = 0
    return function()
        i = i + 1
        local a = list[math.min(i, #list)]
        if type(a) == "string" then a = { a } end
        return { status = 200, headers = { ["content-type"] = "application/json" }, body = envelope(a[1], a[2], a[3]) }
    end
end

--- `jsoncontract _fault-server`: a misbehaving HTTP server on 127.0.0.1 for `selftest`. Prints
-- "PORT <n>", serves one connection at a time until GET /quit or 30 s without a connection.
-- Paths (by prefix): /500 (HTTP 500 with an OpenAI error body), /redirect (302 elsewhere),
-- /invalid (200 with an HTML body), /slow (headers, 10 of 100 bytes, then silence for 1.5 s),
-- /ok (200 with a valid support-ticket envelope), /quit.
function _M.fault_server()
    local socket = require "socket"
    local server = assert(socket.bind("127.0.0.1", 0))
    local _, port = server:getsockname()
    stdout:write("PORT ", port, "\n")
    stdout:flush()
    server:settimeout(30)
    while true do
        local c = server:accept()
        if not c then break end
        c:settimeout(5)
        local line = c:receive("*l") or ""
        local path = line:match("^%u+ (%S+)") or "/"
        local len = 0
        while true do
            local h = c:receive("*l")
            if not h or h == "" then break end
            local cl = h:lower():match("^content%-length:%s*(%d+)")
            if cl then len = tonumber(cl) end
        end
        if len > 0 then c:receive(len) end
        local function respond(status, reason, ctype, body, extra)
            c:send(format("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n%s",
                status, reason, ctype, #body, extra or "", body))
        end
        local quit = false
        if path:find("^/500") then
            respond(500, "Internal Server Error", "application/json",
                '{"error":{"message":"The server had an error","type":"server_error"}}')
        elseif path:find("^/redirect") then
            respond(302, "Found", "text/plain", "", format("Location: http://127.0.0.1:%d/steal\r\n", port))
        elseif path:find("^/invalid") then
            respond(200, "OK", "text/html", "<html><body>Bad gateway</body></html>")
        elseif path:find("^/slow") then
            c:send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":\"sl")
            socket.sleep(1.5)
        elseif path:find("^/ok") then
            respond(200, "OK", "application/json",
                envelope('{"intent":"return","order_id":"1187","urgent":false,"summary":"Return the jacket."}'))
        elseif path == "/quit" then
            respond(200, "OK", "text/plain", "bye")
            quit = true
        else
            respond(404, "Not Found", "text/plain", "")
        end
        c:close()
        if quit then break end
    end
    server:close()
    return 0
end

--- `jsoncontract selftest`: offline checks of the whole chain, one line each, then a count.
-- Needs no network and no busted; starts its own local HTTP server for the transport faults.
-- Exit 0 when every check passes.
function _M.selftest(argv, env)
    local o, rest = parse_args(argv, 2, {})
    if not o then return die(rest) end
    local jc = require "jsoncontract"
    local diff = require "jsoncontract.diff"
    local messages = require "jsoncontract.messages"
    local openai = require "jsoncontract.providers.openai"
    local root = env.root
    local checks = {}
    local function check(name, fn) checks[#checks + 1] = { name, fn } end
    local function ex(name) return dofile(root .. "/examples/" .. name .. ".lua") end
    local function expect(cond, detail) if not cond then error(detail or "expectation failed", 0) end end
    local function fails_as(category, kind, v, err)
        expect(v == nil, "accepted")
        expect(err.category == category and (kind == nil or err.kind == kind),
            "got " .. tostring(err.category) .. "/" .. tostring(err.kind))
    end
    local function ask(contract, input, transport, extra)
        local opts = { provider = "openai", model = "selftest-1", base_url = "http://127.0.0.1:9",
            transport = transport, sleep = function() end }
        for k, v in pairs(extra or {}) do opts[k] = v end
        return jc.ask(contract, input, opts)
    end
    local ticket = ex("support_ticket")
    local GOOD = '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"Courier did not come."}'

    -- format gate
    check("decode: one JSON object", function()
        local v = jc.decode('{"a":[1,2.5,"x",true,null]}')
        expect(type(v) == "table" and v.a[5] == jc.null)
    end)
    check("decode: a second value after the first is trailing_content", function()
        fails_as("format", "trailing_content", jc.decode('{"a":1}{"a":2}'))
    end)
    check("decode: a duplicate key is rejected", function()
        fails_as("format", "duplicate_key", jc.decode('{"a":1,"a":2}'))
    end)
    check("decode: invalid UTF-8 is rejected", function()
        fails_as("format", "invalid_utf8", jc.decode('"\255"'))
    end)
    check("decode: prose is not JSON, at offset 0", function()
        local v, err = jc.decode("Sure! Here is the data:")
        fails_as("format", "unexpected_character", v, err)
        expect(err.offset == 0, "offset " .. tostring(err.offset))
    end)
    check("decode: an unescaped control character in a string is rejected", function()
        fails_as("format", "control_character", jc.decode('"a\1b"'))
    end)
    check("decode: 12 stays a number and \"12\" a string", function()
        local v = jc.decode('[12,"12"]')
        expect(type(v[1]) == "number" and type(v[2]) == "string")
    end)
    -- schema gate
    check("examples: all four load, each with a name and a version", function()
        for _, name in ipairs { "support_ticket", "ticket_priority", "leave_request", "blog_category" } do
            local c = ex(name).contract
            expect(c.name == name and c.version:match("^%d+%.%d+%.%d+$"), name)
        end
    end)
    check("schema: a valid SEEDS §1 answer is accepted", function()
        expect(ticket.contract:check(GOOD) ~= nil)
    end)
    check("schema: 'Lieferung' and 'ja' give enum then type", function()
        local _, err = ticket.contract:check('{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"x"}')
        expect(err and err.errors[1].keyword == "enum" and err.errors[2].keyword == "type")
    end)
    check("schema: a missing field and an extra field", function()
        local _, err = ticket.contract:check('{"intent":"return","urgent":false,"summary":"x","mood":"ruhig"}')
        expect(err and err.errors[1].keyword == "required" and err.errors[2].pointer == "/mood")
    end)
    check("schema: 12 is not \"12\"", function()
        local _, err = ex("blog_category").contract:check('{"category":"llm","tags":[12]}')
        expect(err and err.errors[1].keyword == "type")
    end)
    check("schema: an impossible calendar date", function()
        local _, err = ex("leave_request").contract:check(
            '{"status":"complete","start_date":"2027-02-30","end_date":"2027-03-01","clarification_question":null}')
        expect(err and err.errors[1].keyword == "format")
    end)
    check("contract: a custom message ('does not have 4 digits')", function()
        local _, err = ticket.contract_4digits:check(
            '{"intent":"other","order_id":"10420","urgent":false,"summary":"x"}')
        expect(err and err.errors[1].message == '/order_id "10420" does not have 4 digits')
    end)
    -- rules gate
    check("rules: a reversed date range goes to a person", function()
        local v, err = ex("leave_request").contract:check(
            '{"status":"complete","start_date":"2027-06-12","end_date":"2027-06-10","clarification_question":null}')
        fails_as("rules", "rule_failed", v, err)
        expect(err.retry == false)
    end)
    -- adapters
    local FENCED = '\n\n```json\n{"category":"ai-apps","tags":["LLM應用","API集成","多輪對話"]}\n```'
    check("adapter: the fenced reply is rejected strictly", function()
        fails_as("format", "unexpected_character", ex("blog_category").contract:check(FENCED))
    end)
    check("adapter: unwrap-one-json-fence accepts it and is recorded", function()
        local v, report = ex("blog_category").contract:check(FENCED, { adapters = { "unwrap-one-json-fence" } })
        expect(v and report.adapters[1] == "unwrap-one-json-fence")
    end)
    check("adapter: text before the fence is still rejected", function()
        fails_as("format", "adapter_rejected",
            ex("blog_category").contract:check("Here:" .. FENCED, { adapters = { "unwrap-one-json-fence" } }))
    end)
    -- protocol gate
    check("protocol: a refusal is refused, not a format error", function()
        fails_as("refused", nil, openai.read_response(200, {}, envelope(nil, "stop", "I can't help.")))
    end)
    check("protocol: finish_reason length is truncated even with whole JSON", function()
        fails_as("truncated", nil, openai.read_response(200, {}, envelope(GOOD, "length")))
    end)
    -- the attempt loop
    check("ask: a bad answer is repaired at attempt 2", function()
        local out = ask(ticket.contract, "order 1042", scripted {
            '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"x"}', GOOD })
        expect(out.status == "accepted" and #out.attempts == 2, out.status .. " after " .. #out.attempts)
    end)
    check("ask: prose three times goes to a person", function()
        local out = ask(ticket.contract, "hello, something is wrong", scripted { "Could you tell me more?" })
        expect(out.status == "human_review" and #out.attempts == 3)
    end)
    check("ask: the 100-token budget stops retrying early", function()
        local out = ask(ticket.contract, "hello, something is wrong",
            scripted { "Sure! I am happy to help. Could you tell me more about the problem?" },
            { policy = ticket.policy })
        expect(out.reason.kind == "token_budget" and #out.attempts == 2, tostring(out.reason.kind) .. " after " ..
            #out.attempts)
    end)
    check("ask: a refusal is never retried", function()
        local n = 0
        local send = scripted { { nil, "stop", "No." } }
        local out = ask(ticket.contract, "x", function(r) n = n + 1 return send(r) end)
        expect(out.reason.category == "refused" and n == 1)
    end)
    check("ask: a reply cut at max tokens is never retried nor accepted", function()
        local n = 0
        local send = scripted { { GOOD, "length" } }
        local out = ask(ticket.contract, "x", function(r) n = n + 1 return send(r) end)
        expect(out.status == "human_review" and out.reason.category == "truncated" and n == 1)
    end)
    check("metrics: needing clarification is counted apart", function()
        local lr = ex("leave_request")
        local out = ask(lr.contract, "Ich brauche am Freitag frei.", scripted {
            '{"status":"needs_clarification","start_date":null,"end_date":null,"clarification_question":"Welcher?"}' })
        local typed = lr.result(out)
        local m = evidence.metrics()
        m:observe_outcome(out)
        expect(typed.kind == "needs_clarification" and m:summary().needs_clarification == 1)
    end)
    check("evidence: the key never reaches a record, text only on opt-in", function()
        local log = evidence.memory()
        local key = "sk-selftest-0123456789abcdef"
        ask(ticket.contract, "order 1042", scripted { GOOD }, { evidence = log, api_key = key })
        expect(#log.lines == 1 and not log.lines[1]:find(key, 1, true) and not log.lines[1]:find("Courier", 1, true))
    end)
    check("evidence: the contract version is in every record and outcome", function()
        local log = evidence.memory()
        local out = ask(ticket.contract, "order 1042", scripted { GOOD }, { evidence = log })
        expect(core.decode(log.lines[1]).contract.version == "1.0.0" and out.contract.version == "1.0.0")
    end)
    check("messages: the user sees a plain message without internals", function()
        local out = ask(ticket.contract, "hello", scripted { "prose" })
        local m = messages.user_message(out)
        expect(m == "The answer could not be processed right now. Please try again.", m)
    end)
    check("diff: a tightened order_id pattern is breaking", function()
        local _, breaking = diff.diff(ticket.contract.schema, ticket.contract_4digits.schema)
        expect(breaking == true)
    end)
    check("diff: a new optional field is compatible", function()
        local new = jc.decode(jc.encode(ticket.schema))
        new.properties.lang = { type = "string" }
        local _, breaking = diff.diff(ticket.schema, new)
        expect(breaking == false)
    end)

    -- transport, against a local server
    local server_port, server
    local function http_check(name, fn)
        check(name, function()
            expect(server_port, "the local test server did not start")
            fn("http://127.0.0.1:" .. server_port)
        end)
    end
    local function http_ask(base)
        return ask(ticket.contract, "order 1187", nil, { base_url = base, policy = { transport_retries = 0 },
            transport = require("jsoncontract.transport.curl").request, timeout_ms = 5000 })
    end
    http_check("http: a 200 reply runs the whole chain to accepted", function(base)
        local out = http_ask(base .. "/ok")
        expect(out.status == "accepted" and out.value.order_id == "1187", out.status)
    end)
    http_check("http: the API key stays out of the evidence of a real exchange", function(base)
        local log = evidence.memory()
        local key = "sk-selftest-http-0123456789"
        local out = ask(ticket.contract, "order 1187", nil, { base_url = base .. "/ok", api_key = key, evidence = log,
            transport = require("jsoncontract.transport.curl").request, timeout_ms = 5000 })
        expect(out.status == "accepted" and #log.lines == 1 and not log.lines[1]:find(key, 1, true))
    end)
    http_check("http: HTTP 500 is a transport server_error, no crash", function(base)
        local out = http_ask(base .. "/500")
        expect(out.reason.category == "transport" and out.reason.kind == "server_error", tostring(out.reason))
    end)
    http_check("http: a redirect is not followed", function(base)
        local out = http_ask(base .. "/redirect")
        expect(out.reason.category == "transport" and out.reason.kind == "redirect", tostring(out.reason))
    end)
    http_check("http: an invalid (HTML) body is a protocol error", function(base)
        local out = http_ask(base .. "/invalid")
        expect(out.reason.category == "protocol" and out.reason.kind == "invalid_envelope", tostring(out.reason))
    end)
    http_check("http: a read timeout (no byte for 300 ms) is a transport timeout", function(base)
        local res, err = require("jsoncontract.transport.curl").request { url = base .. "/slow", method = "GET",
            read_timeout_ms = 300, timeout_ms = 10000 }
        expect(res == nil and err.category == "transport" and err.kind == "timeout", tostring(err))
    end)

    -- start the server, run every check, stop the server
    local cmd = format("%s %s _fault-server", shell_quote(interpreter()), shell_quote(env.bindir .. "/jsoncontract"))
    server = io.popen(cmd, "r")
    local first = server and server:read("l")
    server_port = first and first:match("^PORT (%d+)")
    local passed, failed = 0, 0
    for i, c in ipairs(checks) do
        local ok, msg = pcall(c[2])
        if ok then
            passed = passed + 1
            stdout:write(format("ok %d - %s\n", i, c[1]))
        else
            failed = failed + 1
            stdout:write(format("FAIL %d - %s: %s\n", i, c[1], tostring(msg)))
        end
    end
    if server then
        if server_port then
            require("jsoncontract.transport.curl").request { url = "http://127.0.0.1:" .. server_port .. "/quit",
                method = "GET", timeout_ms = 5000 }
        end
        server:close()
    end
    stdout:write(format("%d checks: %d ok, %d failed\n", #checks, passed, failed))
    return failed == 0 and 0 or 1
end

----------------------------------------------------------------------------
-- probe
----------------------------------------------------------------------------

--- `jsoncontract probe`: send one request in JSON mode (`response_format: json_object`) and
-- record what the provider did. It never switches modes, here or anywhere: the finding is
-- recorded for a person to act on. A timeout proves nothing either way.
-- Exit 0 honoured, 1 rejected or ignored, 3 inconclusive.
function _M.probe(argv, env)
    local o, rest = parse_args(argv, 2, { provider = "string", model = "string", ["base-url"] = "string",
        out = "string", ["timeout-ms"] = "number" })
    if not o then return die(rest) end
    if #rest > 0 then return die("unexpected argument " .. rest[1]) end
    local p, perr = choose_provider(o)
    if not p then return die(perr) end
    if p.standin and o["base-url"] then
        p.standin, p.base_url = nil, o["base-url"] -- a local OpenAI-compatible server without a key
    end
    if p.provider ~= "openai" then
        return die("probe: " .. p.provider .. " has no JSON mode to probe (only openai-compatible providers do)")
    end
    local stop
    if p.standin then
        p.base_url, stop = start_standin(env.bindir, 1, 0)
        if not p.base_url then return die(stop) end
    end
    local openai = require "jsoncontract.providers.openai"
    local view = { name = "json_mode_probe", version = "1", schema = { type = "object" },
        prompt = "Answer with one JSON object and nothing else: {\"ok\": true}." }
    local ask_ok = { { role = "user", content = "Reply with the JSON object {\"ok\": true}." } }
    local req = openai.build_request(view, ask_ok,
        { model = p.model, api_key = p.api_key, base_url = p.base_url, mode = "json", max_tokens = 50 })
    local t0 = os.time()
    local res, terr = require("jsoncontract.transport.curl").request { url = req.url, method = req.method,
        headers = req.headers, body = req.body, timeout_ms = o["timeout-ms"] or 30000 }
    local rec = { ts = os.date("!%Y-%m-%dT%H:%M:%SZ"), probe = "json_mode", provider = p.provider, model = p.model,
        standin = p.standin or false, mode_requested = "json", response_format = { type = "json_object" },
        mode_switched = false, elapsed_s = os.time() - t0 }
    local status
    if not res then
        rec.capability, rec.kind = "inconclusive", terr.kind
        rec.reason = terr.kind == "timeout" and "a timeout proves nothing either way"
            or ("the request did not complete (" .. tostring(terr.kind) .. ")")
        status = 3
    else
        rec.http_status = res.status
        local reply, rerr = openai.read_response(res.status, res.headers or {}, res.body or "")
        if reply then
            rec.finish_reason = reply.finish_reason
            local v = core.decode(reply.text)
            if type(v) == "table" and getmetatable(v) ~= core.array_mt then
                rec.capability, rec.reason = "honoured", "HTTP 200 and the content is one JSON object"
                status = 0
            else
                rec.capability, rec.reason = "ignored", "HTTP 200 but the content is not one JSON object"
                status = 1
            end
        elseif res.status == 400 and (res.body or ""):find("response_format", 1, true) then
            rec.capability, rec.kind = "rejected", rerr.kind
            rec.reason = "HTTP 400 naming response_format: JSON mode is not supported"
            status = 1
        else
            rec.capability, rec.kind = "inconclusive", rerr.kind
            rec.reason = "the provider answered " .. tostring(rerr) .. "; nothing is concluded"
            status = 3
        end
    end
    if stop then stop() end
    local line = secrets.redact(core.encode(rec), p.api_key)
    stdout:write(line, "\n")
    if o.out then
        local log = assert(evidence.open(o.out))
        if p.api_key then log:add_secret(p.api_key) end
        log:write(rec)
        log:close()
    end
    return status
end

----------------------------------------------------------------------------
-- examples
----------------------------------------------------------------------------

local EXAMPLES = { "support_ticket", "ticket_priority", "leave_request", "blog_category" }

--- `jsoncontract examples [NAME...]`: run each example over its own small input file
-- (examples/<name>.jsonl: `{id, text, replies}` per line) and print its per-gate metrics.
-- By default the model is the recorded one (each line's `replies`, one per attempt, served as real
-- OpenAI envelopes); with `--standin` the embedded stand-in answers over HTTP instead.
function _M.examples(argv, env)
    local o, rest = parse_args(argv, 2, { standin = "flag", verbose = "flag" })
    if not o then return die(rest) end
    local names = #rest > 0 and rest or EXAMPLES
    local p, stop
    if o.standin then
        p = { provider = "openai", model = "standin-1" }
        p.base_url, stop = start_standin(env.bindir, 1, 0)
        if not p.base_url then return die(stop) end
    end
    for _, name in ipairs(names) do
        local mod, err = load_contract(env.root .. "/examples/" .. name .. ".lua")
        if not mod then
            if stop then stop() end
            return die(err)
        end
        local input = env.root .. "/examples/" .. name .. ".jsonl"
        local items
        items, err = read_mailbox(input)
        if not items then
            if stop then stop() end
            return die("cannot read " .. input .. ": " .. tostring(err))
        end
        local metrics = evidence.metrics()
        stdout:write(format("== %s %s: %d inputs from %s, %s\n", mod.contract.name, mod.contract.version, #items,
            input, o.standin and "stand-in model over HTTP" or "recorded model"))
        for _, item in ipairs(items) do
            local opts = { provider = "openai", model = "recorded-1", base_url = "http://127.0.0.1:9",
                sleep = function() end, policy = mod.policy, adapters = mod.adapters, item_id = item.id }
            if o.standin then
                opts.model, opts.base_url = p.model, p.base_url
            else
                local replies = type(item.replies) == "table" and item.replies or {}
                local i = 0
                opts.transport = function()
                    i = i + 1
                    local a = replies[math.min(i, #replies)] or ""
                    if type(a) ~= "table" then a = { content = a } end
                    return { status = 200, headers = {}, body = envelope(a.content, a.finish, a.refusal) }
                end
            end
            local outcome = run.ask(mod.contract, item.text, opts)
            local typed = mod.result and mod.result(outcome)
            metrics:observe_outcome(outcome)
            local what
            if outcome.status == "accepted" then
                what = format("accepted after %d attempt(s)", #outcome.attempts)
                if typed and typed.kind ~= "valid" then what = what .. ", " .. typed.kind:gsub("_", " ") end
                if outcome.adapters and #outcome.adapters > 0 then
                    what = what .. ", adapter " .. table.concat(outcome.adapters, ", ")
                end
            else
                what = format("to a person after %d attempt(s): %s/%s", #outcome.attempts,
                    tostring(outcome.reason.category), tostring(outcome.reason.kind))
            end
            stdout:write(format("  %-14s %s\n", item.id, what))
            if o.verbose and outcome.status == "accepted" then
                stdout:write("                 ", core.encode(outcome.value), "\n")
            end
        end
        local c = metrics:summary()
        stdout:write(format("  parseable %d/%d, schema-valid %d/%d, rules passed %d/%d attempts; " ..
            "accepted %d/%d items, needing clarification or review %d, to a person %d\n",
            c.parseable, c.attempts, c.schema_valid, c.attempts, c.rules_pass, c.attempts,
            c.accepted, c.items, c.needs_clarification, c.human_review))
    end
    if stop then stop() end
    return 0
end

--- Entry point: dispatch `argv[1]`.
-- @tparam table argv the script's `arg`
-- @tparam table env `{root = repository or install root}`
-- @treturn integer exit status
function _M.main(argv, env)
    local cmd = argv[1]
    if cmd == "triage" then return _M.triage(argv, env) end
    if cmd == "check" then return _M.check(argv, env) end
    if cmd == "diff" then return _M.diff(argv, env) end
    if cmd == "replay" then return _M.replay(argv, env) end
    if cmd == "selftest" then return _M.selftest(argv, env) end
    if cmd == "probe" then return _M.probe(argv, env) end
    if cmd == "examples" then return _M.examples(argv, env) end
    if cmd == "_fault-server" then return _M.fault_server() end
    if cmd == "lint" then
        -- Written separately (jsoncontract.cli_lint, run(argv, env)); absent in some builds.
        local ok, lint = pcall(require, "jsoncontract.cli_lint")
        if ok and type(lint) == "table" and type(lint.run) == "function" then return lint.run(argv, env) end
        return die("lint is not available (module jsoncontract.cli_lint not found)")
    end
    if cmd == nil or cmd == "help" or cmd == "--help" then
        stdout:write(USAGE)
        return cmd == nil and 2 or 0
    end
    stderr:write(USAGE)
    return die("unknown command " .. cmd)
end

return _M
