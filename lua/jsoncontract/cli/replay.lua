--- `jsoncontract replay EVIDENCE`: re-run the contract on recorded replies, offline.
-- EVIDENCE is a job folder or a store URL (`--job ID`, default the newest job: its store keeps
-- every attempt's text), an evidence log (JSONL; records written with --record-text carry the model's text)
-- or one saved provider response body (`--provider`, default openai, or anthropic for a Messages
-- body). Exit 0 when every replayed verdict matches the recorded one (or, for a saved response,
-- when it is accepted), 1 otherwise, 2 on a usage error or when a contract with rules finds no
-- context for them (its module's `replay_context` finds none for the run, or it has neither that
-- nor a `context`), unless the module says `context = false`: rules never run without their data.
-- @module jsoncontract.cli.replay
local core = require "jsoncontract.core"
local adapters = require "jsoncontract.contract.adapters"
local providers = require "jsoncontract.providers"
local util = require "jsoncontract.cli.util"

local format = string.format

local function verdict_of(value, err)
    if value ~= nil then return "accepted", nil end
    return err.category, err.kind
end

local function show_verdict(gate, kind)
    return kind and (gate .. "/" .. kind) or gate
end

-- Why a loaded module's rules have no context for this replay (nil when they have one or need
-- none): a `replay_context` that finds nothing for the run is not replaced by the module's own
-- `context`, which opens other data than the run read.
local function missing_context(mod, ctx, file, context_dir)
    if ctx ~= nil or mod.context == false then return nil end
    local names = require("jsoncontract.jobs.definition").rule_names(mod.contract)
    if #names == 0 then return nil end
    local c = mod.contract
    local where = type(mod.replay_context) == "function"
        and ("its replay_context found none for the run in " .. context_dir .. " (give the run's folder, or "
            .. "--context DIR: the folder holding what the rules read)")
        or "the module has no replay_context and no context"
    return format("the contract %s %s (%s) has rules (%s) and no context to replay them with: %s; "
        .. "the rules would run without their data. A module whose rules need none says `context = false`",
        tostring(c.name), tostring(c.version), file, table.concat(names, ", "), where)
end

-- The contract a record names, loaded once per file (with its offline rules context, when the
-- contract module knows how to find it). The evidence is data: a name never becomes a path
-- outside examples/.
local function contract_loader(args, env, evidence_dir)
    evidence_dir = args.context or evidence_dir
    local contracts, contexts = {}, {}
    return function(name)
        if not args.contract and name ~= nil and (type(name) ~= "string" or not name:match("^[%w_%-]+$")) then
            return nil, "the record names the contract " .. core.encode(name) .. ", which is not an example name; "
                .. "pass --contract FILE"
        end
        local file = args.contract or (name and (env.root .. "/examples/" .. name .. ".lua"))
        if not file then return nil, "the record names no contract; pass --contract FILE" end
        if contracts[file] == nil then
            if util.kind(file) == nil then
                contracts[file] = false
                return nil, "no contract file " .. file .. "; pass --contract FILE"
            end
            local mod, lerr = util.load_contract(file)
            if not mod then return nil, lerr end
            if type(mod.replay_context) == "function" then
                contexts[file] = mod.replay_context { evidence_dir = evidence_dir, root = env.root }
            elseif type(mod.context) == "function" then
                -- no run data to find: the job module's own context, as a run opens it
                local ok, ctx = pcall(mod.context, { module = file })
                if not ok or type(ctx) ~= "table" then
                    contracts[file] = false
                    return nil, "the context of " .. file .. " failed to open: "
                        .. (ok and ("it returned " .. type(ctx) .. ", not a table") or tostring(ctx))
                end
                contexts[file] = ctx
            end
            local why = missing_context(mod, contexts[file], file, evidence_dir)
            if why then
                contracts[file] = false
                return nil, why
            end
            contracts[file] = mod
        end
        if not contracts[file] then return nil, "no contract file " .. file end
        return contracts[file].contract, contexts[file]
    end
end

-- One saved provider response (the outer JSON envelope).
local function replay_response(args, env, bytes, doc, contract_for, extra)
    local out = env.stdout
    local provider = providers.get(args.provider or (doc.type == "message" and "anthropic" or "openai"))
    local contract, ctx = contract_for(nil)
    if not contract then return util.fail(env, ctx) end
    local reply, perr = provider.read_response(200, {}, bytes)
    if not reply then
        out:write(format("saved response: rejected at the protocol gate: %s\n", tostring(perr)))
        return 1
    end
    local value, report = contract:check(reply.text, { adapters = extra, context = ctx })
    if value ~= nil then
        out:write(format("saved response: accepted by %s %s%s\n", contract.name, contract.version,
            #report.adapters > 0 and (" with adapter " .. table.concat(report.adapters, ", ")) or ""))
        return 0
    end
    out:write(format("saved response: rejected by %s %s: %s\n", contract.name, contract.version, tostring(report)))
    return 1
end

-- The evidence a job store keeps for a job, as JSONL, with the model's text (the store keeps
-- it; an exported evidence.jsonl has it only with --record-text). nil and why on failure.
local function store_evidence(url, job_id)
    local store = require "jsoncontract.jobs.store"
    local st, err = store.open(url, { create = false })
    if not st then return nil, err.message end
    local job
    if job_id then job, err = st:job(job_id) else job, err = st:latest_job() end
    if not job then
        st:close()
        if job_id and job_id:match("%.lua$") then
            return nil, err.message .. " (here --job names a job id, as `status` lists them; the job module "
                .. "to replay with is --contract FILE)"
        end
        return nil, err.message
    end
    local lines = {}
    local ok
    ok, err = st:each_evidence(job.id, function(line) lines[#lines + 1] = line end, { text = true })
    st:close()
    if not ok then return nil, err.message end
    lines[#lines + 1] = ""
    local options = core.decode(job.options_json or "")
    return table.concat(lines, "\n"), job.id, type(options) == "table" and options.job or nil
end

-- The job module a run recorded (`summary.json`'s `job`, beside an exported evidence log),
-- when that file still exists: replay checks with what the run ran.
local function recorded_module(dir)
    local text = util.read_file(dir .. "/summary.json")
    local summary = text and core.decode(text)
    local file = type(summary) == "table" and summary.job
    if type(file) == "string" and util.kind(file) == "file" then return file end
    return nil
end

-- Where a record is, as a line of the report names it: "line 4 (m-1042) attempt 2".
local function where_of(lineno, rec)
    return format("line %d%s%s", lineno, type(rec.item_id) == "string" and (" (" .. rec.item_id .. ")") or "",
        rec.attempt ~= nil and (" attempt " .. tostring(rec.attempt)) or "")
end

local function run_replay(args, env)
    local out = env.stdout
    local path = args.evidence
    local bytes, err
    if path:match("^postgres[a-z]*://") or util.kind(path) == "directory" then
        -- A job folder (its job.sqlite) or a store URL: the job's evidence from its store.
        local url = path:match("^postgres[a-z]*://") and path or (path .. "/job.sqlite")
        if not path:match("^postgres") and util.kind(url) ~= "file" then
            return util.fail(env, "no job store in " .. path .. " (no job.sqlite): give a job folder, a store "
                .. "URL or an evidence log")
        end
        local job_id, module
        bytes, job_id, module = store_evidence(url, args.job)
        if not bytes then return util.fail(env, job_id) end
        if not args.contract and type(module) == "string" and util.kind(module) == "file" then
            args.contract = module
            out:write(format("with the job module the run recorded: %s\n", module))
        end
        out:write(format("replay job %s from its store %s\n", job_id, url:gsub("^(%a+://[^:/@]*):[^@]*@", "%1:***@")))
    else
        bytes, err = util.read_file(path)
        if bytes and not args.contract then args.contract = recorded_module(path:match("^(.*)/[^/]*$") or ".") end
    end
    if not bytes then return util.fail(env, err) end
    out:write(format("replay %s sha256 %s (%d bytes)\n", path, core.sha256(bytes), #bytes))
    -- the folder a module's replay_context looks in: a job folder itself, else the log's folder
    local contract_for = contract_loader(args, env, util.kind(path) == "directory" and path
        or path:match("^(.*)/[^/]*$") or ".")
    local extra = args.adapter and { args.adapter } or {}

    local doc = core.decode(bytes)
    if type(doc) == "table" and (doc.choices ~= nil or doc.type == "message") then
        return replay_response(args, env, bytes, doc, contract_for, extra)
    end

    -- `broken`: lines that are not evidence records (a torn last line, garbage): the log is
    -- not whole, so "all match" cannot be said of it
    local n, same, differ, skipped, unknown, broken, lineno = 0, 0, 0, 0, 0, 0, 0
    for line in (bytes .. "\n"):gmatch("([^\n]*)\n") do
        lineno = lineno + 1
        if line:match("%S") then
            local rec = core.decode(line)
            if type(rec) ~= "table" or getmetatable(rec) == core.array_mt then
                out:write(format("line %d: not an evidence record (%s), skipped\n", lineno,
                    rec == nil and "not JSON: a torn or damaged line" or "not a JSON object"))
                broken = broken + 1
            elseif type(rec.text) ~= "string" or (rec.gate ~= "accepted" and rec.gate ~= "format"
                and rec.gate ~= "schema" and rec.gate ~= "rules") then
                -- Transport and protocol records carry no model text to re-check; anything
                -- else without a string text is named, not skipped silently.
                if rec.gate ~= "transport" and rec.gate ~= "protocol" then
                    out:write(format("line %d: no model text to re-check (gate %s), skipped\n", lineno,
                        core.encode(rec.gate == nil and core.null or rec.gate)))
                end
                skipped = skipped + 1
            elseif rec.kind == "rule_interrupted" then
                -- The run's signal stopped the rule (a held-back attempt): a verdict on the run, not
                -- on the text, so no replay can agree with it; and a rule that was stuck would loop here.
                unknown = unknown + 1
                out:write(format("%s: recorded rules/rule_interrupted (a signal stopped the rule, not the text): "
                    .. "not replayed\n", where_of(lineno, rec)))
            else
                local names = {}
                if rec.adapters ~= nil and getmetatable(rec.adapters) ~= core.array_mt then
                    return util.fail(env, "line " .. lineno .. ": the record's adapters are not a list of names")
                end
                for _, a in ipairs(rec.adapters or {}) do
                    if not adapters.known(a) then
                        return util.fail(env, "line " .. lineno .. ": the record names an unknown adapter "
                            .. core.encode(a))
                    end
                    names[#names + 1] = a
                end
                for _, a in ipairs(extra) do names[#names + 1] = a end
                local name = type(rec.contract) == "table" and rec.contract.name or nil
                local contract, ctx = contract_for(name)
                if not contract then return util.fail(env, "line " .. lineno .. ": " .. ctx) end
                local value, cres = contract:check(rec.text, { adapters = names, context = ctx })
                local gate, kind = verdict_of(value, cres)
                local rgate = rec.gate
                local rkind = rgate ~= "accepted" and rec.kind or nil
                local where = where_of(lineno, rec)
                n = n + 1
                local note = ""
                if type(rec.contract) == "table" and rec.contract.schema_hash
                    and rec.contract.schema_hash ~= contract.schema_hash then
                    note = format(" (recorded with %s %s, replayed with %s %s)", tostring(rec.contract.name),
                        tostring(rec.contract.version), contract.name, contract.version)
                end
                if gate == rgate and kind == rkind then
                    same = same + 1
                    out:write(format("%s: %s, same as recorded%s\n", where, show_verdict(gate, kind), note))
                elseif rgate == "rules" and gate == "accepted" and ctx == nil then
                    unknown = unknown + 1
                    out:write(format("%s: recorded %s; the format and schema gates agree, the rules need the "
                        .. "run's context, not available offline: not compared%s\n",
                        where, show_verdict(rgate, rkind), note))
                else
                    differ = differ + 1
                    out:write(format("%s: DIFFERS: recorded %s, replayed %s%s\n", where,
                        show_verdict(rgate, rkind), show_verdict(gate, kind), note))
                end
            end
        end
    end
    out:write(format("%d replayed: %d same, %d differ%s; %d record(s) without text or outside the contract " ..
        "gates skipped%s\n", n, same, differ, unknown > 0 and format(", %d not comparable offline", unknown) or "",
        skipped, broken > 0 and format("; %d line(s) not evidence records", broken) or ""))
    if n == 0 then
        env.stderr:write("jsoncontract: nothing was replayed: no record carries the model's text (an exported "
            .. "evidence.jsonl has it only with --record-text; `replay DIR` reads it from the job's store)\n")
        return 1
    end
    if broken > 0 then
        env.stderr:write(format("jsoncontract: %d line(s) of %s are not evidence records: the log is damaged\n",
            broken, path))
    end
    return (differ == 0 and broken == 0) and 0 or 1
end

return {
    name = "replay",
    summary = "Re-run the contract offline on the replies of an evidence log or one saved response.",
    configure = function(parser)
        parser:argument("evidence", "A job folder or store URL (the store keeps the model's text), an evidence "
            .. "log (JSONL, written with --record-text) or one saved response body.")
        parser:option("--job", "With a job folder or store URL: the job to replay (default: the newest).")
        parser:option("--contract", "Contract or job module to replay with (default: the job module the run "
            .. "recorded, else examples/<recorded name>.lua).")
        parser:option("--context", "The folder the contract module's replay_context reads the run's data from "
            .. "(default: the job folder, or the evidence log's folder).")
        parser:option("--adapter", "Also allow this adapter."):choices(adapters.names)
        parser:option("--provider", "Provider of a saved response (default: openai, or anthropic for a "
            .. "Messages body)."):convert(util.provider_name)
    end,
    run = run_replay,
}
