--- Exports of a job, written from the store: `accepted.jsonl` (accepted), `review.jsonl` (to a
-- person), `evidence.jsonl` (every recorded exchange) and `summary.json`. One writer: `run`,
-- `triage`, `export` and the Lua API all write them here, in one shape (`job_fields`).
-- Each file is written to a temporary file in the same folder, every write and the close are
-- checked, the file is fsync'd, and only then is it renamed over the old one, and the folder
-- fsync'd after the rename: a reader sees the old file or the new one, never a torn line, a
-- full disk is an error, never a short file, and after a power cut the export is the old one
-- or the new one whole, never a renamed file whose data never reached the disk.
-- @module jsoncontract.jobs.export
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local evidence = require "jsoncontract.evidence"

local type, ipairs, pairs, tostring, tonumber = type, ipairs, pairs, tostring, tonumber
local format = string.format

local tointeger = math.tointeger -- luacheck: ignore 143 (Lua 5.3+; nil on LuaJIT)

local _M = { _VERSION = core._VERSION }

local function export_error(message)
    return errors.new("store", "export_failed", message)
end

-- The folder a path is in ("." for a bare name), to fsync after a rename into it.
local function dir_of(path)
    return path:match("^(.*[^/])/+[^/]*$") or (path:sub(1, 1) == "/" and "/" or ".")
end

--- Write a file by temp file + fsync + rename + fsync of the folder. `produce(write)` calls
-- `write(s)` for each chunk.
-- @tparam string path
-- @tparam function produce function(write) -> true | nil, err
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err (`store`/`export_failed`)
function _M.write_atomic(path, produce)
    local tmp = format("%s.tmp-%d", path, (core.process_ids and core.process_ids()) or 0)
    local f, msg = io.open(tmp, "wb")
    if not f then return nil, export_error("cannot write " .. path .. ": " .. tostring(msg)) end
    local failed
    local function write(s)
        if failed then return end
        local ok, werr = f:write(s)
        if not ok then failed = werr or "write failed" end
    end
    local okp, perr = produce(write)
    local okf, ferr = f:flush()
    if not okf and not failed then failed = ferr or "flush failed" end
    local okc, cerr = f:close()
    if not okc and not failed then failed = cerr or "close failed" end
    if not okp then failed = failed or (perr and (perr.message or tostring(perr))) or "export failed" end
    if not failed then
        local synced, serr = core.fsync(tmp)
        if not synced then failed = serr end
    end
    if failed then
        os.remove(tmp)
        return nil, export_error("cannot write " .. path .. ": " .. tostring(failed))
    end
    local okr, rerr = os.rename(tmp, path)
    if not okr then
        os.remove(tmp)
        return nil, export_error("cannot rename " .. tmp .. " to " .. path .. ": " .. tostring(rerr))
    end
    -- The rename is in the folder's entries: without this a power cut may undo it.
    local synced, serr = core.fsync(dir_of(path))
    if not synced then return nil, export_error("renamed " .. path .. " but " .. serr) end
    return true
end

-- An outcome as the metrics want it, rebuilt from an exported line.
local function outcome_of(line, status)
    local rec = core.decode(line)
    if type(rec) ~= "table" then return nil end
    return { status = status, attempts = rec.attempts or {}, reason = rec.reason }, rec
end

-- Milliseconds as seconds to the millisecond; a whole number of seconds is an integer on
-- every runtime (Lua 5.4 would write 0 / 1000 as 0.0, LuaJIT as 0).
local function seconds(ms)
    local s = math.floor((tonumber(ms) or 0) + 0.5) / 1000
    return tointeger and tointeger(s) or s
end

--- Per-gate metrics, outcome counts and what the rules caught, from the store.
-- @tparam table store
-- @tparam string job_id
-- Decided means done in the item's current pass: an item a new review pass sent back is not
-- decided until that pass records it, whatever an earlier pass said (so accepted +
-- human_review + pending = items, in `status`, `export` and a run's exit status alike).
-- @treturn[1] table summary fields: `items`, `accepted`, `human_review` (items done, by their latest
--   outcome), `pending` (not decided yet: waiting or in flight),
--   `pass`, `metrics` (per gate, see `jsoncontract.evidence`), `rules_caught` ({[rule name] =
--   items handed over by it}), `review_reasons` ({["category/kind"] = n}), `exchanges` (HTTP
--   exchanges recorded, every pass: those of the committed outcomes and those of the attempts
--   held back, a failure no item can fix; the lines of evidence.jsonl but a person's records),
--   `limit_wait_s` (seconds requests waited on rate limits, summed over runs), `workers`
-- @return[2] nil
-- @treturn[2] table err
function _M.summary(store, job_id)
    local counts, err = store:counts(job_id)
    if not counts then return nil, err end
    local rows
    rows, err = store:items(job_id)
    if not rows then return nil, err end
    local m = evidence.metrics()
    local caught = {}
    for _, row in ipairs(rows) do
        if row.record_json and row.state == "done" then
            local o, rec = outcome_of(row.record_json, row.status)
            if o then m:observe_outcome(o) end
            local reason = rec and rec.reason
            if type(reason) == "table" and reason.category == "rules" and type(reason.errors) == "table" then
                local seen = {}
                for _, e in ipairs(reason.errors) do
                    local name = type(e.keyword) == "string" and e.keyword:match("^rule:(.+)$")
                    if name and not seen[name] then
                        seen[name] = true
                        caught[name] = (caught[name] or 0) + 1
                    end
                end
            end
        end
    end
    return {
        items = counts.items, accepted = counts.accepted, human_review = counts.human_review,
        pending = counts.items - counts.done, pass = counts.pass,
        metrics = m:summary(), metrics_text = m:format(), rules_caught = caught,
        review_reasons = counts.by_reason, exchanges = counts.exchanges,
        limit_wait_s = seconds(counts.limit_wait_ms), workers = counts.workers,
    }
end

--- What summary.json says of the job itself, from its row in the store (so every command that
-- writes it writes the same fields): `job_id`, `job` (the job module's path), `contract`
-- (`{name, version, schema_hash}`), `provider`, `model`, `standin` (boolean), `input` (the input's
-- path, "-" for stdin).
-- @tparam table job a job row (`jsoncontract.jobs.store`)
-- @treturn table
function _M.job_fields(job)
    local jo = core.decode(job.options_json or "{}")
    if type(jo) ~= "table" then jo = {} end
    return { job_id = job.id, job = jo.job or jo.contract or core.null,
        contract = { name = job.contract_name, version = job.contract_version, schema_hash = job.schema_hash },
        provider = job.provider, model = job.model, standin = jo.standin == true, input = job.input_path or core.null }
end

--- Write the four exports of a job into `dir`.
-- @tparam table store
-- @tparam string job_id
-- @tparam string dir existing folder
-- @tparam[opt] table extra `{stopped_by = "SIGINT"|"SIGTERM"|nil}` (the run that writes it; null otherwise)
-- @treturn[1] table summary (as `summary`, plus `extra`)
-- @return[2] nil
-- @treturn[2] table err (`store`/`export_failed` or a store error)
function _M.write(store, job_id, dir, extra)
    -- Every read of the export in one read transaction: workers committing meanwhile cannot make
    -- accepted.jsonl, evidence.jsonl and summary.json disagree.
    return store:read_tx(function() return _M.write_snapshot(store, job_id, dir, extra) end)
end

--- `write` without its read transaction: for a caller that holds one already.
-- @tparam table store
-- @tparam string job_id
-- @tparam string dir
-- @tparam[opt] table extra
-- @treturn[1] table summary
-- @return[2] nil
-- @treturn[2] table err
function _M.write_snapshot(store, job_id, dir, extra)
    local rows, err = store:items(job_id)
    if not rows then return nil, err end
    local ok
    for _, out in ipairs { { "accepted.jsonl", "accepted" }, { "review.jsonl", "human_review" } } do
        local file, status = out[1], out[2]
        ok, err = _M.write_atomic(dir .. "/" .. file, function(write)
            for _, row in ipairs(rows) do
                if row.status == status and row.state == "done" then
                    write(row.record_json)
                    write("\n")
                end
            end
            return true
        end)
        if not ok then return nil, err end
    end
    ok, err = _M.write_atomic(dir .. "/evidence.jsonl", function(write)
        return store:each_evidence(job_id, function(line) write(line) write("\n") end)
    end)
    if not ok then return nil, err end
    local summary
    summary, err = _M.summary(store, job_id)
    if not summary then return nil, err end
    local job
    job, err = store:job(job_id)
    if not job then return nil, err end
    local text = summary.metrics_text
    summary.metrics_text = nil
    for k, v in pairs(_M.job_fields(job)) do summary[k] = v end
    summary.stopped_by = (extra and extra.stopped_by) or core.null
    ok, err = _M.write_atomic(dir .. "/summary.json", function(write)
        write(core.encode(summary, { indent = 2 }))
        write("\n")
        return true
    end)
    if not ok then return nil, err end
    summary.metrics_text = text
    return summary
end

return _M
