--- The review desk's queries over the job store (`jsoncontract.jobs.store`): the queue of
-- items a model sent to a person, with counts per reason, filters and keyset paging (a queue
-- of 10,000 items costs one indexed range read per page, never an OFFSET walk); one item with
-- its input, outcomes and evidence; and a person's decision, recorded like a model's outcome:
-- an outcome row with `decided_by = 'human'` under the item's next pass, and its evidence
-- record, in one transaction (`store:record_outcome`).
--
-- The queue's words: an item is "open" when its latest outcome is the model's and says
-- `human_review` (and the item is not being asked again); "decided" when its latest outcome is
-- a person's. Its reason is the category/kind of its latest model outcome.
-- @module jsoncontract.review.queries
local core = require "jsoncontract.core"

local type, tostring, tonumber, ipairs, pcall, setmetatable =
    type, tostring, tonumber, ipairs, pcall, setmetatable
local format, match = string.format, string.match

local _M = { _VERSION = core._VERSION }

-- The latest outcome of the item (any author) and the latest outcome written by the model.
local LATEST = "o.pass = (SELECT max(pass) FROM outcomes x WHERE x.job_id = i.job_id AND x.item_id = i.item_id)"
local LATEST_MODEL = "m.pass = (SELECT max(pass) FROM outcomes y WHERE y.job_id = i.job_id "
    .. "AND y.item_id = i.item_id AND y.decided_by = 'model')"

local FROM_LATEST = " FROM items i JOIN outcomes o ON o.job_id = i.job_id AND o.item_id = i.item_id AND " .. LATEST
local FROM_BOTH = FROM_LATEST .. " JOIN outcomes m ON m.job_id = i.job_id AND m.item_id = i.item_id AND "
    .. LATEST_MODEL

-- The rows of a view of the queue: FROM clause + WHERE, and the table alias that holds the
-- model's reason. An open item's latest outcome IS its latest model outcome, so the open view
-- (the one a reviewer lives in) needs no second join.
local function source(status)
    if status == "decided" then
        return FROM_BOTH .. " WHERE i.job_id = ? AND o.decided_by = 'human'", "m"
    elseif status == "all" then
        return FROM_BOTH .. " WHERE i.job_id = ? AND m.status = 'human_review'", "m"
    end
    return FROM_LATEST .. " WHERE i.job_id = ? AND o.decided_by = 'model' AND o.status = 'human_review' "
        .. "AND i.state = 'done'", "o"
end

-- "category/kind" -> category, kind (kind may hold a slash: only the first one splits).
local function split_reason(reason)
    local c, k = match(reason, "^([^/]*)/(.*)$")
    return c or reason, k
end

local function fail(store, err)
    return nil, store.error("read_failed", tostring(err))
end

--- Counts for the queue's header.
-- @tparam table store an open store
-- @tparam string job_id
-- @treturn[1] table `open` (integer), `decided` (integer), `by_reason` (list of `{reason = "category/kind",
--   n = integer}` over the open items, most frequent first)
-- @return[2] nil
-- @treturn[2] table err (`store`/`read_failed`)
function _M.queue_counts(store, job_id)
    -- From the outcomes side (an outcome with no later one), which reads half what the
    -- items-side join reads.
    local rows, err = store:query("SELECT o.reason_category AS c, o.reason_kind AS k, count(*) AS n FROM outcomes o "
        .. "JOIN items i ON i.job_id = o.job_id AND i.item_id = o.item_id WHERE o.job_id = ? AND "
        .. "o.decided_by = 'model' AND o.status = 'human_review' AND i.state = 'done' AND NOT EXISTS (SELECT 1 "
        .. "FROM outcomes x WHERE x.job_id = o.job_id AND x.item_id = o.item_id AND x.pass > o.pass) "
        .. "GROUP BY o.reason_category, o.reason_kind", { job_id })
    if not rows then return fail(store, err) end
    local out = { open = 0, decided = 0, by_reason = {} }
    for _, r in ipairs(rows) do
        local n = tonumber(r.n)
        out.open = out.open + n
        out.by_reason[#out.by_reason + 1] = { reason = tostring(r.c or "?") .. "/" .. tostring(r.k or "?"), n = n }
    end
    table.sort(out.by_reason, function(a, b)
        if a.n ~= b.n then return a.n > b.n end
        return a.reason < b.reason
    end)
    -- Decided items are few: count them from the outcomes side.
    rows, err = store:query("SELECT count(*) AS n FROM outcomes o WHERE o.job_id = ? AND o.decided_by = 'human' "
        .. "AND NOT EXISTS (SELECT 1 FROM outcomes x WHERE x.job_id = o.job_id AND x.item_id = o.item_id "
        .. "AND x.pass > o.pass)", { job_id })
    if not rows then return fail(store, err) end
    out.decided = tonumber(rows[1].n) or 0
    return out
end

-- FROM + WHERE of a view with its reason filter; the reason columns' alias.
local function view(status, reason, args)
    local sql, alias = source(status)
    if reason then
        local c, k = split_reason(reason)
        sql = sql .. " AND " .. alias .. ".reason_category = ?"
        args[#args + 1] = c
        if k then
            sql = sql .. " AND " .. alias .. ".reason_kind = ?"
            args[#args + 1] = k
        end
    end
    return sql, alias
end

--- One page of the queue, in input order, by keyset on the items' `seq`.
-- @tparam table store
-- @tparam string job_id
-- @tparam[opt] table opts `status` ("open" default, "decided", "all"), `reason` ("category/kind"
--   or "category"), `after` (seq: the page after it), `before` (seq: the page before it),
--   `limit` (integer, default 50)
-- @treturn[1] table rows, each `item_id`, `seq` (integer), `input` (decoded input JSON),
--   `reason` ("category/kind" of the model's outcome), `status` and `decided_by` of the latest outcome,
--   `decision` (a person's: "accept", "not_applicable", "needs_customer"; nil when none)
-- @treturn[1] boolean more: another page lies beyond this one in the paging direction
-- @return[2] nil
-- @treturn[2] table err
function _M.queue(store, job_id, opts)
    opts = opts or {}
    local limit = opts.limit or 50
    local args = { job_id }
    local from, alias = view(opts.status, opts.reason, args)
    local sql = "SELECT i.item_id, i.seq, i.input_json, " .. store:input_hex_sql("i")
        .. ", o.status, o.decided_by, o.reason_kind AS ok, "
        .. alias .. ".reason_category AS c, " .. alias .. ".reason_kind AS k" .. from
    local backwards = opts.before ~= nil and opts.after == nil
    if backwards then
        sql = sql .. " AND i.seq < ? ORDER BY i.seq DESC"
        args[#args + 1] = opts.before
    else
        if opts.after then
            sql = sql .. " AND i.seq > ?"
            args[#args + 1] = opts.after
        end
        sql = sql .. " ORDER BY i.seq"
    end
    sql = sql .. " LIMIT ?"
    args[#args + 1] = limit + 1
    local rows, err = store:query(sql, args)
    if not rows then return fail(store, err) end
    local more = #rows > limit
    if more then rows[#rows] = nil end
    local out = {}
    for i, r in ipairs(rows) do
        store.input_of(r)
        out[backwards and (#rows - i + 1) or i] = {
            item_id = r.item_id, seq = tonumber(r.seq),
            input = r.input_json and (core.decode(r.input_json) or r.input_json),
            reason = tostring(r.c or "?") .. "/" .. tostring(r.k or "?"), status = r.status, decided_by = r.decided_by,
            decision = r.decided_by == "human" and (r.status == "accepted" and "accept" or r.ok) or nil,
        }
    end
    return out, more
end

--- The item after `seq` in the same view of the queue.
-- @tparam table store
-- @tparam string job_id
-- @tparam number seq
-- @tparam[opt] table opts `status`, `reason` as for `queue`
-- @treturn string|nil the next item's id (nil at the end or on a read error)
function _M.next_item(store, job_id, seq, opts)
    opts = opts or {}
    local args = { job_id }
    local sql = "SELECT i.item_id" .. view(opts.status, opts.reason, args) .. " AND i.seq > ? ORDER BY i.seq LIMIT 1"
    args[#args + 1] = seq
    local rows = store:query(sql, args)
    return rows and rows[1] and rows[1].item_id or nil
end

--- One item for the item page.
-- @tparam table store
-- @tparam string job_id
-- @tparam string item_id
-- @treturn[1] table `item_id`, `seq`, `state`, `input` (decoded input JSON, or its text when it is not
--   JSON), `latest_pass` (integer, 0 when no outcome), `outcomes` (every
--   pass's outcome row, oldest first), `outcome` (the latest: `status`, `decided_by`, `decision`,
--   `decided_at` (UTC text), `reviewer`), `model_reason` (the reason of the latest model outcome: decoded
--   `reason_json`, or nil), `human_value` (the value of the latest human acceptance, or nil),
--   `evidence` (decoded records, oldest first; a person's records carry `decided_by = "human"`)
-- @return[2] nil
-- @treturn[2] table err (`not_found`, `read_failed`)
function _M.item(store, job_id, item_id)
    local row, err = store:item(job_id, item_id)
    if not row then return nil, err end
    local ev
    ev, err = store:evidence_for(job_id, item_id)
    if not ev then return nil, err end
    -- A mailbox line that is not JSON is shown as the text it is.
    local it = { item_id = row.item_id, seq = row.seq, state = row.state, outcomes = row.outcomes, evidence = ev,
        input = row.input_json and (core.decode(row.input_json) or row.input_json) }
    for _, o in ipairs(row.outcomes) do
        if o.decided_by == "model" then
            it.model_reason = o.reason_json and core.decode(o.reason_json) or nil
            it.model_status = o.status
        end
    end
    local last = row.outcomes[#row.outcomes]
    it.latest_pass = last and last.pass or 0
    if last then
        local rec = last.record_json and core.decode(last.record_json) or {}
        it.outcome = { status = last.status, decided_by = last.decided_by, pass = last.pass,
            decision = last.decided_by == "human" and (last.status == "accepted" and "accept" or last.reason_kind)
                or nil,
            decided_at = last.decided_at and os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(last.decided_at)),
            reviewer = type(rec) == "table" and rec.reviewer or nil }
        if last.decided_by == "human" and last.status == "accepted" and last.value_json then
            it.human_value = core.decode(last.value_json)
        end
    end
    return it
end

local function human_record(job_id, item_id, rec, pass, contract)
    local out = {
        ts = rec.ts, item_id = item_id, job_id = job_id, decided_by = "human", reviewer = rec.reviewer,
        gate = rec.gate, decision = rec.decision, value = rec.value, note = rec.note, pass = pass,
        contract = contract,
    }
    if rec.errors then
        local list = setmetatable({}, core.array_mt)
        for i, e in ipairs(rec.errors) do
            list[i] = { pointer = e.pointer, keyword = e.keyword, property = e.property, message = e.message }
        end
        out.errors = list
    end
    if rec.errors_seen then out.errors_seen = rec.errors_seen end
    return out
end

--- Record a submission the contract refused (a human attempt without a decision): one
-- evidence record `{decided_by = "human", reviewer, ts, gate, value, errors}` under the item's
-- current pass.
-- @tparam table store
-- @tparam string job_id
-- @tparam string item_id
-- @tparam table rec `reviewer`, `ts` (UTC text), `gate` ("form"|"schema"|"rules"|"format"),
--   `decision` ("accept"), `value` (what was submitted), `errors` (list of `{pointer, keyword, property, message}`),
--   `note`, `contract` (`{name, version, schema_hash}`)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err (`write_failed`)
function _M.record_human_attempt(store, job_id, item_id, rec)
    return store:tx(function()
        local rows, e = store:query("SELECT pass FROM items WHERE job_id = ? AND item_id = ?", { job_id, item_id })
        if not rows then return nil, e end
        if not rows[1] then return nil, store.error("not_found", "no item " .. tostring(item_id)) end
        local pass = tonumber(rows[1].pass)
        local seq
        seq, e = store:next_evidence_seq(job_id, item_id, pass)
        if not seq then return nil, e end
        local ok, line = pcall(core.encode, human_record(job_id, item_id, rec, pass, rec.contract))
        if not ok then return nil, line end
        return store:exec("INSERT INTO evidence (job_id, item_id, pass, seq, record_json) VALUES (?, ?, ?, ?, ?)",
            { job_id, item_id, pass, seq, line })
    end)
end

-- The errors a person saw on this item since the last decision: the errors of the refused
-- submissions recorded after the latest outcome.
local function errors_seen(store, job_id, item_id)
    local ev = store:evidence_for(job_id, item_id) or {}
    local seen = setmetatable({}, core.array_mt)
    for _, rec in ipairs(ev) do
        if rec.decided_by == "human" then
            if rec.gate == "accepted" then
                seen = setmetatable({}, core.array_mt)
            elseif type(rec.errors) == "table" then
                for _, e in ipairs(rec.errors) do
                    seen[#seen + 1] = { pointer = e.pointer, keyword = e.keyword, message = e.message, ts = rec.ts }
                end
            end
        end
    end
    return seen
end

--- Record a person's decision: an outcome (`decided_by = 'human'`, pass = the item's highest
-- recorded pass + 1), its evidence record and the item's pass, in one transaction. The outcome's `record_json`
-- is the line the exports write, marked `decided_by: "human"` with the reviewer. An accepted
-- value is an `accepted` outcome (accepted.jsonl); "not for this job" and "needs the customer" are
-- `human_review` outcomes whose reason is the person's (`category = "human"`, `kind` the
-- decision), so every item stays in exactly one of accepted / review, and a new review pass
-- (`store:new_review_pass`, which re-asks only the model's review outcomes) leaves them alone.
-- @tparam table store
-- @tparam string job_id
-- @tparam string item_id
-- @tparam table d `decision` ("accept"|"not_applicable"|"needs_customer"), `value_json` (when
--   accepted: the JSON text the contract's gates passed, stored as it is; or `value`, a Lua
--   value encoded here), `reviewer` (string), `decided_at` (UTC text), `record` (the desk's record:
--   `decision`, `note`, `gate`), `contract` (`{name, version, schema_hash}`)
-- @tparam[opt] integer seen_pass the item's latest pass when the reviewer loaded the page: when
--   another outcome was recorded since, nothing is written and the err is `duplicate`
-- @treturn[1] true
-- @treturn[1] integer the pass it was recorded under
-- @return[2] nil
-- @treturn[2] table err (`duplicate` when another decision took that pass first, `write_failed`)
function _M.record_decision(store, job_id, item_id, d, seen_pass)
    local rows, qerr = store:query("SELECT max(pass) AS p FROM outcomes WHERE job_id = ? AND item_id = ?",
        { job_id, item_id })
    if not rows then return nil, store.error("read_failed", tostring(qerr)) end
    local latest = tonumber(rows[1] and rows[1].p) or 0
    -- The reviewer decided on what the page showed: a decision recorded since then (another
    -- reviewer's) wins, and this one is refused rather than stacked on top unseen.
    if seen_pass and latest ~= seen_pass then
        return nil, store.error("duplicate", format("item %s was decided by someone else meanwhile (pass %d)",
            tostring(item_id), latest))
    end
    local pass = latest + 1
    local rec = d.record or {}
    local value_json = d.value_json or (d.value ~= nil and core.encode(d.value) or nil)
    rec.value_json = nil -- (the desk's copy of value_json: the record carries `value`)
    rec.reviewer, rec.ts = d.reviewer, d.decided_at or rec.ts
    rec.errors_seen = errors_seen(store, job_id, item_id)
    local ev = human_record(job_id, item_id, rec, pass, d.contract)
    local status = d.decision == "accept" and "accepted" or "human_review"
    local line = {
        id = item_id, decided_by = "human", reviewer = d.reviewer, decided_at = rec.ts, decision = d.decision,
        contract = d.contract, pass = pass, note = rec.note,
    }
    local reason_json, cat, kind
    if status ~= "accepted" then
        local reason = { category = "human", kind = d.decision,
            message = d.decision == "not_applicable" and "a person decided this item is not for this job"
                or "a person decided this needs the customer" }
        line.reason = reason
        reason_json, cat, kind = core.encode(reason), reason.category, reason.kind
    end
    -- "value" sorts after every other key of the line: the checked text goes last, as it is
    local line_json = core.encode(line)
    if status == "accepted" and value_json then line_json = line_json:sub(1, -2) .. ',"value":' .. value_json .. "}" end
    -- As store:record_outcome (the item done, its lease cleared), plus the item's pass moved
    -- to the decision's: the store's `new_review_pass` then sees a person's outcome, not the
    -- model's, and leaves the item alone. An item waiting or leased in a review pass is done
    -- by this decision: a worker still asking the model for it finds the pass decided.
    local ok, err = store:tx(function()
        -- after the attempts recorded in this pass while the item waited (first: it locks the item)
        local seq, e = store:next_evidence_seq(job_id, item_id, pass)
        if not seq then return nil, e end
        local r
        r, e = store:exec("INSERT INTO outcomes (job_id, item_id, pass, status, value_json, reason_json, "
            .. "reason_category, reason_kind, record_json, decided_by, decided_at, worker) VALUES "
            .. "(?, ?, ?, ?, ?, ?, ?, ?, ?, 'human', " .. store.d.now .. ", ?)",
            { job_id, item_id, pass, status, value_json, reason_json, cat, kind, line_json,
              "review:" .. tostring(d.reviewer) })
        if not r then
            local msg = tostring(e)
            if msg:find("UNIQUE", 1, true) or msg:find("unique", 1, true) or msg:find("duplicate key", 1, true) then
                return nil, store.error("duplicate", format("item %s pass %d already has an outcome (another "
                    .. "decision came first)", tostring(item_id), pass))
            end
            return nil, e
        end
        r, e = store:exec("INSERT INTO evidence (job_id, item_id, pass, seq, record_json) VALUES (?, ?, ?, ?, ?)",
            { job_id, item_id, pass, seq, core.encode(ev) })
        if not r then return nil, e end
        r, e = store:exec("UPDATE items SET pass = ?, state = 'done', lease_owner = NULL, lease_expires_at = NULL "
            .. "WHERE job_id = ? AND item_id = ?", { pass, job_id, item_id })
        if not r then return nil, e end
        return true
    end)
    if not ok then return nil, err end
    return true, pass
end

return _M
