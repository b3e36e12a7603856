--- The command line behind bin/jsoncontract.
-- `triage` runs the main job: every message of a mailbox (JSONL, one `{id, text}` per line)
-- through the support-ticket contract and a model, into accepted tickets or the review queue.
-- `check` runs the format, schema and rules gates on one reply.
-- @module jsoncontract.cli
local core = require "jsoncontract.core"
local run = require "jsoncontract.run"
local batch = require "jsoncontract.batch"
local evidence = require "jsoncontract.evidence"
local errors = require "jsoncontract.errors"

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
                               exit 0 accepted, 1 rejected
  help                         this text

With OPENAI_API_KEY or ANTHROPIC_API_KEY set, triage calls that provider; otherwise it starts the
embedded stand-in model on 127.0.0.1 and talks to it over real HTTP. Keys never reach any output.
]]

local function die(msg)
    stderr:write("jsoncontract: ", msg, "\n")
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
    local s = f:read("a")
    f:close()
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
    for line in f:lines() do
        lineno = lineno + 1
        if line:match("%S") then
            local v, err = core.decode(line)
            local item
            if v == nil then
                item = { id = "line-" .. lineno, input_error = "line " .. lineno .. " is not JSON: " .. err.message }
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
    f:close()
    return items
end

local function prepare_out_dir(dir)
    local p = io.popen("ls -A " .. shell_quote(dir) .. " 2>/dev/null")
    local listing = p:read("a")
    p:close()
    if listing ~= "" then
        return nil, "output folder " .. dir .. " is not empty; choose a new one (nothing was overwritten)"
    end
    local r = os.execute("mkdir -p " .. shell_quote(dir))
    if r ~= true and r ~= 0 then
        return nil, "cannot create output folder " .. dir
    end
    return true
end

-- Start the stand-in model server; returns base_url and a stop function.
local function start_standin(root, seed, delay_ms)
    local cmd = format("%s %s --port 0 --seed %d --delay-ms %d --max-seconds 3600",
        shell_quote(interpreter()), shell_quote(root .. "/bin/jsoncontract-standin"), seed, delay_ms)
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
local function choose_provider(o)
    local env = os.getenv
    local openai_key, anthropic_key = env("OPENAI_API_KEY"), env("ANTHROPIC_API_KEY")
    if openai_key and openai_key ~= "" and (o.provider == nil or o.provider == "openai") then
        return { provider = "openai", api_key = openai_key, model = o.model or env("OPENAI_MODEL") or "gpt-4o-mini",
            base_url = o["base-url"] or env("OPENAI_BASE_URL") }
    end
    if anthropic_key and anthropic_key ~= "" and (o.provider == nil or o.provider == "anthropic") then
        return { provider = "anthropic", api_key = anthropic_key,
            model = o.model or env("ANTHROPIC_MODEL") or "claude-sonnet-4-5",
            base_url = o["base-url"] or env("ANTHROPIC_BASE_URL") }
    end
    return { provider = o.provider or "openai", model = o.model or "standin-1", standin = true }
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
    local mod, err = load_contract(o.contract or (root .. "/examples/support_ticket.lua"))
    if not mod then return die(err) end
    local contract = mod.contract
    local items
    items, err = read_mailbox(input, o.limit)
    if not items then return die("cannot read mailbox: " .. tostring(err)) end

    local out = o.out or ("out/triage-" .. os.date("!%Y%m%d-%H%M%S"))
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

    local p = choose_provider(o)
    local stop_standin
    if p.standin then
        p.base_url, stop_standin = start_standin(root, o.seed or 1, o["delay-ms"] or 20)
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

    local function work(item)
        if item.input_error then
            return { status = "human_review", attempts = setmetatable({}, core.array_mt), usage = { input_tokens = 0, output_tokens = 0 },
                reason = errors.new("input", "invalid_input", item.input_error), item_id = item.id }
        end
        return run.ask(contract, item.text, {
            provider = p.provider, model = p.model, api_key = p.api_key, base_url = p.base_url,
            transport = batch.send, sleep = batch.sleep, evidence = log, context = { orders = db },
            item_id = item.id, policy = { max_attempts = o["max-attempts"] or 3, token_budget = o["token-budget"] },
            max_tokens = 300, timeout_ms = 120000,
        })
    end

    local function on_done(i, outcome)
        local item = items[i]
        done = done + 1
        metrics:observe_outcome(outcome)
        local attempts = setmetatable({}, core.array_mt)
        for k, a in ipairs(outcome.attempts) do
            attempts[k] = { gate = a.gate, kind = a.kind, finish = a.finish, http_status = a.http_status }
        end
        local base = { id = item.id, request_id = outcome.request_id, contract = contract:identity(),
            attempts = attempts, usage = outcome.usage, elapsed_ms = outcome.elapsed_ms }
        if outcome.status == "accepted" then
            n_accepted = n_accepted + 1
            base.ticket = outcome.value
            base.adapters = outcome.adapters
            tickets:write(core.encode(base), "\n")
        else
            n_review = n_review + 1
            local r = outcome.reason
            local errs = setmetatable({}, core.array_mt)
            for k, e in ipairs(r.errors or {}) do
                errs[k] = { pointer = e.pointer, keyword = e.keyword, message = e.message }
            end
            base.reason = { category = r.category, kind = r.kind, message = r.message, errors = errs }
            review:write(core.encode(base), "\n")
        end
        if tty then
            stderr:write(format("\r%d/%d done: %d accepted, %d to review", done, #items, n_accepted, n_review))
        end
    end

    local okrun, runerr = pcall(batch.run, items, work, { parallel = o.parallel or 8, on_done = on_done })
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

--- Entry point: dispatch `argv[1]`.
-- @tparam table argv the script's `arg`
-- @tparam table env `{root = repository or install root}`
-- @treturn integer exit status
function _M.main(argv, env)
    local cmd = argv[1]
    if cmd == "triage" then return _M.triage(argv, env) end
    if cmd == "check" then return _M.check(argv, env) end
    if cmd == nil or cmd == "help" or cmd == "--help" then
        stdout:write(USAGE)
        return cmd == nil and 2 or 0
    end
    stderr:write(USAGE)
    return die("unknown command " .. cmd)
end

return _M
