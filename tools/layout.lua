--- The house's map: which files form each room and which rooms each room may require. One
-- table, checked by spec/layout_spec.lua (every `require` in lua/ against it, every file of
-- lua/ in a room) and printed as docs/design.md's "Layout" map by
--   lua tools/layout.lua --markdown
-- which prints the text between `<!-- layout:begin -->` and `<!-- layout:end -->`
-- (`lua tools/layout.lua --write docs/design.md` puts it there).
--
-- A room: `name`; `files` (paths under the repository: a path ending in "/" is a folder and
-- everything under it, a more specific entry of another room wins); `modules` (module names
-- with no Lua file, the C core); `may` (the rooms it may require; a room always may require
-- itself; "*" is every room); `only` (single modules of a room it may require without the
-- whole room, each with `why`); `says` (one line for the map).
-- Rooms are listed beneath first (what every room may stand on), then in the order a reply
-- walks: transport -> providers (protocol) -> contract (format, schema, rules) -> run -> jobs
-- -> the fronts (cli, nginx, review).
local BASE = { "core", "utf8", "util", "compat", "secrets", "json", "errors" }

local function with(list, ...)
    local out = {}
    for _, x in ipairs(list) do out[#out + 1] = x end
    for _, x in ipairs({ ... }) do out[#out + 1] = x end
    return out
end

local _M = {}

_M.rooms = {
    { name = "core", files = { "lua/jsoncontract/ffi.lua" }, modules = { "jsoncontract.core" }, may = {},
        says = "the C core (csrc/, `jsoncontract.core`) and its FFI path on LuaJIT (ffi.lua)" },
    { name = "utf8", files = { "lua/jsoncontract/utf8.lua" }, may = {},
        says = "UTF-8 cuts; imports nothing (the stand-in uses it without the C core)" },
    { name = "util", files = { "lua/jsoncontract/util.lua" }, may = {},
        says = "helpers defined once: shell quoting, constant-time compare; imports nothing" },
    { name = "compat", files = { "lua/jsoncontract/compat.lua" }, may = { "core" },
        says = "clock, sleep, unpack, a pcall batch items may yield through (Lua 5.1)" },
    { name = "secrets", files = { "lua/jsoncontract/secrets.lua" }, may = { "core", "utf8" },
        says = "the one redaction of the key and the hygiene of text that leaves a run" },
    { name = "json", files = { "lua/jsoncontract/json.lua" }, may = { "core", "utf8" },
        says = "JSON Pointer tokens, is_array/is_object, the one clip" },
    { name = "errors", files = { "lua/jsoncontract/errors.lua" }, may = { "core", "json", "secrets" },
        says = "every err (one constructor over core.error), errors.is, errors.fields" },
    { name = "evidence", files = { "lua/jsoncontract/evidence.lua" }, may = BASE,
        says = "evidence records and metrics per gate" },
    { name = "feedback", files = { "lua/jsoncontract/feedback.lua" }, may = BASE,
        says = "the one wording of errors, for the model and for the end user" },
    { name = "transport", files = { "lua/jsoncontract/transport/" }, may = BASE,
        says = "curl, openresty (cosockets), http_status, default (which transport by nginx phase)" },
    { name = "providers", files = { "lua/jsoncontract/providers/" }, may = BASE,
        only = { { "jsoncontract.transport.http_status", why = "an HTTP status or a provider's error object "
            .. "read as a transport err" } },
        says = "the protocol gate: the registry (init), envelope, schema_subset, one file per provider, "
            .. "streaming, `rules/NAME.lua` (what each provider enforces, as data)" },
    { name = "contract", files = { "lua/jsoncontract/contract/" }, may = with(BASE, "feedback", "providers"),
        only = {
            { "jsoncontract.transport.default", why = "a rule's `batch.send` outside a batch, when the caller "
                .. "passed no transport (`check{transport=}`, the run's)" },
            { "jsoncontract.batch", why = "a contract file's `require \"jsoncontract.batch\"` in the rules' "
                .. "sandbox gives `batch.sleep`" },
            { "jsoncontract", why = "a contract file's `require \"jsoncontract\"` in the rules' sandbox gives "
                .. "the pure part of the public surface" },
        },
        says = "format, schema and rules gates: init (define, prompt, check), adapters, rules (the "
            .. "sandboxed rules gate), lint (what a provider enforces), diff (schema versions)" },
    { name = "run", files = { "lua/jsoncontract/run/" }, may = with(BASE, "feedback", "providers"),
        only = { { "jsoncontract.transport.default", why = "the transport and sleep when the caller names none" } },
        says = "the attempt loop (jc.ask): init, exchange (one HTTP exchange with its retries), policy; "
            .. "takes the contract as an argument" },
    { name = "standin", files = { "lua/jsoncontract/standin/" }, may = { "utf8" },
        says = "the test double (runs without the C core): hash, text, generate, conversation, wire, "
            .. "server, process (its one starter), faults" },
    { name = "jobs", files = { "lua/jsoncontract/jobs/", "lua/jsoncontract/batch.lua", "lua/jsoncontract/setup.lua" },
        may = with(BASE, "evidence", "feedback", "providers", "contract", "run"),
        only = { { "jsoncontract.standin.process", why = "setup starts the stand-in when no provider is given" } },
        says = "batch jobs: store, scheduler (the event loop), ratelimit, breaker, runner, export, definition "
            .. "(a job module); batch.lua (many items at once); setup.lua (the contract file, the provider)" },
    { name = "surface", files = { "lua/jsoncontract/init.lua" }, may = { "core", "contract", "run" },
        only = { { "jsoncontract.job", why = "`jc.job` loads the scripted job commands on first call" } },
        says = "the public surface `jsoncontract`: decode, encode, compile, contract, ask, job" },
    { name = "cli",
        files = { "lua/jsoncontract/cli/", "lua/jsoncontract/job.lua", "lua/jsoncontract/review/serve.lua" },
        may = { "*" },
        says = "the command line: cli/ (one file per command, the command table in init, job_commands: "
            .. "run/resume, enqueue, worker, status, export with their terminal output and folder locks), "
            .. "job.lua (`jc.job`, the same from a script), review/serve.lua (`jsoncontract review`: starts "
            .. "nginx with the desk, exports when it stops)" },
    { name = "nginx", files = { "lua/jsoncontract/nginx/" },
        may = with(BASE, "evidence", "feedback", "transport", "contract", "run", "jobs", "surface"),
        only = { { "jsoncontract.providers", why = "configure refuses, at start, a provider's own API "
            .. "without a key (missing_key)" } },
        says = "the contract gateway `jsoncontract.nginx`: init, body, contracts, evidence, handover, metrics" },
    { name = "review", files = { "lua/jsoncontract/review/" }, may = with(BASE, "contract"),
        only = { { "jsoncontract.jobs.store", why = "the queue is the job store's" },
            { "jsoncontract.jobs.definition", why = "a decision is checked against the job's contract and context" } },
        says = "the review desk (never reaches a model): desk, form, spans, html, nginx, queries" },
}

--- The map as the Markdown docs/design.md shows between the layout markers.
-- @treturn string
function _M.markdown()
    local out = { "<!-- layout:begin -->",
        "<!-- generated by `lua tools/layout.lua --markdown` from tools/layout.lua; spec/layout_spec.lua checks -->",
        "",
        "| room | files | may require |",
        "|---|---|---|" }
    for _, r in ipairs(_M.rooms) do
        local files = {}
        for _, f in ipairs(r.files) do files[#files + 1] = "`" .. f:gsub("^lua/jsoncontract/", "") .. "`" end
        for _, m in ipairs(r.modules or {}) do files[#files + 1] = "`" .. m .. "`" end
        local may = {}
        for _, m in ipairs(r.may) do may[#may + 1] = m == "*" and "every room" or m end
        for _, o in ipairs(r.only or {}) do may[#may + 1] = "`" .. o[1] .. "` (" .. o.why .. ")" end
        out[#out + 1] = string.format("| **%s**: %s | %s | %s |", r.name, r.says, table.concat(files, ", "),
            #may > 0 and table.concat(may, ", ") or "nothing")
    end
    out[#out + 1] = ""
    out[#out + 1] = "<!-- layout:end -->"
    return table.concat(out, "\n") .. "\n"
end

-- `--markdown`: print the map; `--write FILE`: replace the map between FILE's markers.
if arg and arg[0] and arg[0]:match("tools/layout%.lua$") then
    if arg[1] == "--markdown" then
        io.write(_M.markdown())
    elseif arg[1] == "--write" and arg[2] then
        local f = assert(io.open(arg[2], "rb"))
        local doc = f:read("*a")
        f:close()
        local s = doc:find("<!-- layout:begin -->", 1, true)
        local _, e = doc:find("<!-- layout:end -->\n", 1, true)
        if not s or not e then
            io.stderr:write(arg[2], " has no <!-- layout:begin --> ... <!-- layout:end --> lines\n")
            os.exit(1)
        end
        f = assert(io.open(arg[2], "wb"))
        assert(f:write(doc:sub(1, s - 1), _M.markdown(), doc:sub(e + 1)))
        assert(f:close())
    else
        io.stderr:write("usage: lua tools/layout.lua --markdown | --write docs/design.md\n")
        os.exit(2)
    end
end

return _M
