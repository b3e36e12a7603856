-- The job store (jsoncontract.jobs.store) on a real SQLite file and on a real PostgreSQL
-- server started here: one schema, one code path, the same expectations for both.
local store = require "jsoncontract.jobs.store"
local jobs = require "support.jobs"
local util = require "support.util"

local function items(n)
    local out = {}
    for i = 1, n do
        out[i] = { item_id = "m" .. i, seq = i, input_json = '{"id":"m' .. i .. '","text":"t"}', input_digest = "d" .. i }
    end
    return out
end

local function behaves_like_a_job_store(engine, get_url)
    describe(engine, function()
        local st, job, store_url

        before_each(function()
            local why
            store_url, why = get_url()
            if not store_url then return pending(why) end
            st = assert(store.open(store_url))
            job = assert(st:create_job { contract_name = "support_ticket", contract_version = "1.0.0",
                schema_hash = "abc", provider = "openai", model = "m", options_json = "{}", input_digest = "x" })
            assert.equal(5, st:add_items(job, items(5)))
        end)
        after_each(function()
            if st then st:close() end
            st = nil
        end)

        it("keeps the job and its items, and refuses an item id twice", function()
            if not st then return end
            local j = assert(st:job(job))
            assert.equal("support_ticket", j.contract_name)
            assert.equal(5, j.items)
            assert.equal(job, st:latest_job().id)
            local ok, err = st:add_items(job, { { item_id = "m3", seq = 9, input_json = "{}", input_digest = "z" } })
            assert.is_nil(ok)
            assert.equal("store", err.category)
            assert.equal("duplicate", err.kind)
            assert.equal(5, st:counts(job).items)
            local none, nerr = st:job("no-such-job")
            assert.is_nil(none)
            assert.equal("not_found", nerr.kind)
        end)

        it("creates a job and its items in one transaction: an item it cannot store leaves no job", function()
            if not st then return end
            local function jobs_n() return tonumber(st:query("SELECT count(*) AS n FROM jobs")[1].n) end
            local meta = { contract_name = "c", provider = "p", model = "m" }
            local two = assert(st:create_job(meta, items(2)))
            assert.equal(2, st:job(two).items)
            assert.equal(two, st:latest_job().id)
            -- a duplicate id, an id with a NUL, an id that is not UTF-8: refused, named by line,
            -- never raised; nothing of the job is left
            local bad = {
                { { item_id = "x", seq = 1, input_json = "{}" }, { item_id = "x", seq = 2, input_json = "{}" } },
                { { item_id = "ok", seq = 1, input_json = "{}" }, { item_id = "n\0ul", seq = 7, input_json = "{}" } },
                { { item_id = "ok", seq = 1, input_json = "{}" }, { item_id = "caf\233", seq = 4, input_json = "{}" } },
            }
            for k, list in ipairs(bad) do
                local id, err = st:create_job(meta, list)
                assert.is_nil(id, "case " .. k)
                assert.equal("store", err.category)
                assert.truthy(err.message:find("line " .. list[2].seq, 1, true), err.message)
                assert.equal(2, jobs_n(), "case " .. k .. " left a job behind")
                assert.equal(two, st:latest_job().id)
            end
        end)

        it("binds every id: ids shaped like SQL are leased, renewed, held and released as themselves", function()
            if not st then return end
            local hostile = { "q?1", "?", "$1", "it's", "back\\slash", "$$x$$", "'); DELETE FROM items; --" }
            local list = {}
            for i, id in ipairs(hostile) do list[i] = { item_id = id, seq = 100 + i, input_json = "{}" } end
            assert.equal(#hostile, st:add_items(job, list))
            local a = assert(st:lease(job, "w1", 100, 30))
            assert.equal(5 + #hostile, #a)
            -- nothing is left to lease while they are in flight (a pasted `q?1` was taken again)
            assert.same({}, assert(st:lease(job, "w2", 100, 30)))
            assert.equal(#hostile, st:renew(job, "w1", hostile, 60))
            local held = assert(st:held(job, "w1", hostile))
            for _, id in ipairs(hostile) do assert.is_true(held[id], id) end
            assert.equal(2, st:release(job, "w1", { "q?1", "$1" }))
            local b = assert(st:lease(job, "w2", 100, 30))
            assert.same({ "q?1", "$1" }, { b[1].item_id, b[2].item_id })
            assert.equal(2, b[1].attempts)
            for _, id in ipairs(hostile) do
                assert(st:record_outcome(job, id, { pass = 1, status = "accepted", record_json = '{"id":"?"}',
                    value_json = '"$1 ? \'"', evidence = { '{"text":"$$ ? \\u0000"}' } }))
                assert.equal("done", st:item(job, id).state)
            end
            assert.equal(5 + #hostile, st:counts(job).items)
        end)

        it("opens a store made before items kept bytes, and adds the column when it may change the schema", function()
            if not st then return end
            assert(st:exec("ALTER TABLE items DROP COLUMN input_bytes"))
            local url = st.url
            st:close()
            st = assert(store.open(url, { create = false }))
            assert.is_false(st.has_input_bytes)
            assert.equal('{"id":"m1","text":"t"}', st:item(job, "m1").input_json)
            assert.equal(5, #assert(st:lease(job, "w1", 10, 30)))
            local n, err = st:add_items(job, { { item_id = "b", seq = 9, input_json = "caf\233" } })
            assert.is_nil(n)
            assert.equal("write_failed", err.kind)
            st:close()
            st = assert(store.open(url))
            assert.is_true(st.has_input_bytes)
            assert.equal(1, st:add_items(job, { { item_id = "b", seq = 9, input_json = "caf\233" } }))
            assert.equal("caf\233", st:item(job, "b").input_json)
        end)

        it("keeps an input line that is not UTF-8 text as the bytes it is", function()
            if not st then return end
            local lines = { '{"id":"l","text":"caf\233"}', "a\0b", '{"id":"n","text":"x\0y\255"}', "\0", "\195\40 $$ ? '\\" }
            local list = {}
            for i, line in ipairs(lines) do list[i] = { item_id = "b" .. i, seq = 10 + i, input_json = line } end
            assert.equal(#lines, st:add_items(job, list))
            for i, line in ipairs(lines) do
                assert.equal(line, st:item(job, "b" .. i).input_json, "line " .. i)
            end
            local leased = assert(st:lease(job, "w1", 100, 30))
            local got = {}
            for _, it in ipairs(leased) do got[it.item_id] = it.input_json end
            for i, line in ipairs(lines) do assert.equal(line, got["b" .. i], "leased line " .. i) end
            assert.equal('{"id":"m1","text":"t"}', got.m1, "a text line next to them")
            -- the decoder, not the store, names the fault
            local core = require "jsoncontract.core"
            local _, why = core.decode(got.b1)
            assert.truthy(tostring(why):find("invalid_utf8", 1, true), tostring(why))
            _, why = core.decode(got.b3)
            assert.truthy(tostring(why):find("U+0000", 1, true), tostring(why))
        end)

        it("leases waiting items in input order, and takes an expired lease again", function()
            if not st then return end
            -- (a 2 s lease: a busy machine may pause a second between these statements; the
            -- expired lease is then waited for, not slept for)
            local a = assert(st:lease(job, "w1", 2, 2))
            assert.same({ "m1", "m2" }, { a[1].item_id, a[2].item_id })
            assert.equal(1, a[1].attempts)
            local b = assert(st:lease(job, "w2", 10, 30))
            assert.equal(3, #b)
            assert.equal("m3", b[1].item_id)
            assert.equal(0, #assert(st:lease(job, "w3", 10, 30)))
            local c = util.wait_until(function()
                local got = assert(st:lease(job, "w3", 10, 30))
                return #got > 0 and got
            end, 30, 0.1) or {}
            assert.equal(2, #c)
            assert.same({ "m1", "m2" }, { c[1].item_id, c[2].item_id })
            assert.equal(2, c[1].attempts)
            assert.equal(2, st:release(job, "w3"))
            assert.equal(2, st:counts(job).pending)
        end)

        it("records an outcome exactly once, with its evidence and state, in one transaction", function()
            if not st then return end
            assert(st:lease(job, "w1", 5, 30))
            local row = { pass = 1, status = "accepted", value_json = '{"intent":"other"}', record_json = '{"id":"m1"}',
                decided_by = "model", worker = "w1", evidence = { '{"attempt":1}', '{"attempt":2}' } }
            assert.is_true(st:record_outcome(job, "m1", row))
            local ok, err = st:record_outcome(job, "m1", row)
            assert.is_nil(ok)
            assert.equal("duplicate", err.kind)
            local it1 = assert(st:item(job, "m1"))
            assert.equal("done", it1.state)
            assert.equal("accepted", it1.status)
            assert.equal(1, #it1.outcomes)
            assert.equal(2, #st:evidence_for(job, "m1"))  -- the duplicate added none
            assert.equal(2, st:evidence_for(job, "m1")[2].attempt)
            assert.is_true(st:record_outcome(job, "m2", { pass = 1, status = "human_review",
                reason_json = '{"category":"rules"}', reason_category = "rules", reason_kind = "rule_failed",
                record_json = '{"id":"m2"}', worker = "w1" }))
            local c = st:counts(job)
            assert.same({ 2, 1, 1, 3 }, { c.done, c.accepted, c.human_review, c.leased })
            assert.equal(1, c.by_reason["rules/rule_failed"])
            assert.equal(1, #st:items(job, { status = "human_review" }))
            assert.equal(1, #st:items(job, { reason = "rule_failed" }))
            assert.equal(2, #st:items(job, { offset = 1, limit = 2 }))
        end)

        it("gives a held-back item back with its evidence rows, and its outcome's rows come after them", function()
            if not st then return end
            local function seqs(item_id, pass)
                local out = {}
                for _, r in ipairs(assert(st:query("SELECT seq FROM evidence WHERE job_id = ? AND item_id = ? "
                    .. "AND pass = ? ORDER BY seq", { job, item_id, pass }))) do out[#out + 1] = tonumber(r.seq) end
                return out
            end
            assert.equal(5, #assert(st:lease(job, "w1", 5, 30)))
            -- the model unreachable: two exchanges, nothing settled
            assert.is_true(st:hold_back(job, "w1", "m1", 1, { '{"attempt":1,"gate":"transport","kind":"connect"}',
                '{"attempt":2,"gate":"transport","kind":"connect"}' }))
            local m1 = st:item(job, "m1")
            assert.same({ "pending", nil, nil }, { m1.state, m1.lease_owner, m1.status })
            assert.same({ 1, 2 }, seqs("m1", 1))
            assert.equal(2, st:counts(job).exchanges)
            -- taken again, held back again, then settled: the pass's rows in the order written
            assert.equal("m1", assert(st:lease(job, "w2", 1, 30))[1].item_id)
            assert.is_true(st:hold_back(job, "w2", "m1", 1, { '{"attempt":1,"gate":"rules","kind":"rule_error"}' }))
            assert.equal("m1", assert(st:lease(job, "w3", 1, 30))[1].item_id)
            assert.is_true(st:record_outcome(job, "m1", { pass = 1, status = "accepted", record_json = '{"id":"m1"}',
                worker = "w3", evidence = { '{"attempt":1,"gate":"accepted"}' } }))
            assert.same({ 1, 2, 3, 4 }, seqs("m1", 1))
            local ev = st:evidence_for(job, "m1")
            assert.same({ "transport", "transport", "rules", "accepted" }, { ev[1].gate, ev[2].gate, ev[3].gate,
                ev[4].gate })
            assert.equal(1, #st:item(job, "m1").outcomes)
            assert.equal(4, st:counts(job).exchanges)
            -- an empty attempt list gives the item back all the same
            assert.is_true(st:hold_back(job, "w1", "m5", 1, {}))
            assert.equal("pending", st:item(job, "m5").state)
            assert.same({}, seqs("m5", 1))
        end)

        it("keeps the rows of a held-back attempt whose lease another worker took, and leaves the item to it", function()
            if not st then return end
            assert(st:lease(job, "w1", 1, 30))
            -- w1's lease runs out and w2 takes the item
            assert(st:exec("UPDATE items SET lease_expires_at = 0 WHERE job_id = ? AND item_id = 'm1'", { job }))
            assert.equal("m1", assert(st:lease(job, "w2", 1, 30))[1].item_id)
            assert.is_false(st:hold_back(job, "w1", "m1", 1, { '{"attempt":1,"gate":"transport"}' }))
            local m1 = st:item(job, "m1")
            assert.same({ "leased", "w2" }, { m1.state, m1.lease_owner })
            assert.equal(1, #st:evidence_for(job, "m1"))
            -- w2 settles it: its rows follow w1's
            assert(st:record_outcome(job, "m1", { pass = 1, status = "accepted", record_json = "{}", worker = "w2",
                evidence = { '{"attempt":1,"gate":"accepted"}' } }))
            local rows = st:query("SELECT seq, record_json FROM evidence WHERE job_id = ? AND item_id = 'm1' ORDER BY seq",
                { job })
            assert.same({ "1", "2" }, { tostring(rows[1].seq), tostring(rows[2].seq) })
            assert.truthy(rows[2].record_json:find('"accepted"', 1, true))
            -- no such item: nothing written
            local ok, err = st:hold_back(job, "w1", "no-such-item", 1, { '{"attempt":1}' })
            assert.is_nil(ok)
            assert.same({ "store", "not_found" }, { err.category, err.kind })
            assert.equal(0, #st:evidence_for(job, "no-such-item"))
            assert.has_error(function() st:hold_back(job, nil, "m2", 1, {}) end)
            assert.has_error(function() st:hold_back(job, "w1", "m2", 1, "line") end)
        end)

        it("records the rows of an attempt that decides nothing here, leaving the item to the worker that holds it",
            function()
            if not st then return end
            assert(st:lease(job, "w1", 1, 30))
            assert(st:exec("UPDATE items SET lease_expires_at = 0 WHERE job_id = ? AND item_id = 'm1'", { job }))
            assert.equal("m1", assert(st:lease(job, "w2", 1, 30))[1].item_id)
            -- w1's exchange, made before it found the item taken
            assert.is_true(st:record_attempts(job, "m1", 1, { '{"attempt":1,"gate":"schema"}' }))
            local m1 = st:item(job, "m1")
            assert.same({ "leased", "w2" }, { m1.state, m1.lease_owner })
            assert(st:record_outcome(job, "m1", { pass = 1, status = "accepted", record_json = "{}", worker = "w2",
                evidence = { '{"attempt":1,"gate":"accepted"}' } }))
            -- and one whose outcome w2 recorded first: after it, the item still done
            assert.is_true(st:record_attempts(job, "m1", 1, { '{"attempt":1,"gate":"accepted"}' }))
            assert.is_true(st:record_attempts(job, "m1", 1, {}))
            local got = {}
            for i, r in ipairs(assert(st:query("SELECT seq, record_json FROM evidence WHERE job_id = ? AND "
                .. "item_id = 'm1' ORDER BY seq", { job }))) do got[i] = tonumber(r.seq) .. " " .. r.record_json end
            assert.same({ '1 {"attempt":1,"gate":"schema"}', '2 {"attempt":1,"gate":"accepted"}',
                '3 {"attempt":1,"gate":"accepted"}' }, got)
            assert.same({ "done", 1 }, { st:item(job, "m1").state, #st:item(job, "m1").outcomes })
            assert.equal(3, st:counts(job).exchanges)
            local ok, err = st:record_attempts(job, "no-such-item", 1, { '{"attempt":1}' })
            assert.is_nil(ok)
            assert.same({ "store", "not_found" }, { err.category, err.kind })
            assert.has_error(function() st:record_attempts(job, "m2", "1", {}) end)
            -- an outcome for an item the job has not: refused, and no outcome or row left behind
            ok, err = st:record_outcome(job, "no-such-item", { pass = 1, status = "accepted", record_json = "{}",
                evidence = { '{"attempt":1}' } })
            assert.is_nil(ok)
            assert.same({ "store", "not_found" }, { err.category, err.kind })
            assert.same({ 0, 0 }, { tonumber(st:query("SELECT count(*) AS n FROM outcomes WHERE item_id = "
                .. "'no-such-item'")[1].n), tonumber(st:query("SELECT count(*) AS n FROM evidence WHERE item_id = "
                .. "'no-such-item'")[1].n) })
        end)

        it("numbers one item's rows one after the other when several processes write them at once", function()
            if not st then return end
            -- three writers (a held-back attempt, a taken-over one, a person's refused submission)
            -- on one item, each in its own process and connection
            local child = util.fresh_path() .. ".lua"
            local f = assert(io.open(child, "w"))
            f:write(([[
package.path, package.cpath = "lua/?.lua;lua/?/init.lua;" .. package.path, %q
local store = require "jsoncontract.jobs.store"
local review = require "jsoncontract.review.queries"
local st = assert(store.open(%q, { create = false }))
local w = arg[1]
for i = 1, 40 do
    local line = '{"attempt":' .. i .. ',"w":"' .. w .. '"}'
    if w == "a" then assert(st:hold_back(%q, "w" .. w, "m1", 1, { line, line }) ~= nil)
    elseif w == "b" then assert(st:record_attempts(%q, "m1", 1, { line }))
    else assert(review.record_human_attempt(st, %q, "m1", { reviewer = "ana", ts = "t", gate = "schema",
        value = {}, errors = {} })) end
end
st:close()
]]):format(package.cpath, store_url, job, job, job))
            f:close()
            finally(function() os.remove(child) end)
            local procs = {}
            for _, w in ipairs { "a", "b", "c" } do
                procs[#procs + 1] = io.popen(("%s %s %s 2>&1; echo rc=$?"):format(util.LUA, child, w))
            end
            for _, p in ipairs(procs) do
                local out = p:read("*a")
                p:close()
                assert.truthy(out:find("rc=0", 1, true), out)
            end
            local rows = assert(st:query("SELECT seq FROM evidence WHERE job_id = ? AND item_id = 'm1' AND pass = 1 "
                .. "ORDER BY seq", { job }))
            assert.equal(160, #rows)
            for i, r in ipairs(rows) do assert.equal(i, tonumber(r.seq)) end
        end)

        it("gives a held-back item back and writes its rows in one transaction: a row it cannot write leaves the "
            .. "item leased and no row", function()
            if not st then return end
            assert(st:lease(job, "w1", 1, 30))
            -- the second line holds a NUL, which no text column takes: the first row went in, and goes
            local ok, err = st:hold_back(job, "w1", "m1", 1, { '{"attempt":1,"gate":"transport"}', '{"attempt":2}\0' })
            assert.is_nil(ok)
            assert.same({ "store", "write_failed" }, { err.category, err.kind })
            local m1 = st:item(job, "m1")
            assert.same({ "leased", "w1" }, { m1.state, m1.lease_owner })
            assert.equal(0, #st:evidence_for(job, "m1"))
            assert.equal(0, st:counts(job).exchanges)
            -- nothing half-done is left in the way: the give-back goes through after
            assert.is_true(st:hold_back(job, "w1", "m1", 1, { '{"attempt":1,"gate":"transport"}' }))
            assert.same({ "pending", 1 }, { st:item(job, "m1").state, #st:evidence_for(job, "m1") })
        end)

        it("numbers a person's record after the attempts held back in the same pass", function()
            if not st then return end
            local review = require "jsoncontract.review.queries"
            assert(st:lease(job, "w1", 5, 30))
            assert(st:record_outcome(job, "m2", { pass = 1, status = "human_review", record_json = '{"id":"m2"}',
                evidence = { '{"attempt":1,"gate":"schema"}' } }))
            assert(st:new_review_pass(job, "contract fixed"))
            assert.equal("m2", assert(st:lease(job, "w2", 1, 30))[1].item_id)
            assert.is_true(st:hold_back(job, "w2", "m2", 2, { '{"attempt":1,"gate":"transport"}',
                '{"attempt":2,"gate":"transport"}' }))
            assert.same({ true, 2 }, { review.record_decision(st, job, "m2", { decision = "needs_customer",
                reviewer = "ana", contract = { name = "support_ticket", version = "1.0.0" } }, 1) })
            local rows = st:query("SELECT pass, seq, record_json FROM evidence WHERE job_id = ? AND item_id = 'm2' "
                .. "ORDER BY pass, seq", { job })
            local got = {}
            for i, r in ipairs(rows) do got[i] = tonumber(r.pass) .. "/" .. tonumber(r.seq) end
            assert.same({ "1/1", "2/1", "2/2", "2/3" }, got)
            assert.truthy(rows[4].record_json:find('"decided_by":"human"', 1, true), rows[4].record_json)
            -- a person's records are no HTTP exchanges: three were made (and a refused submission
            -- recorded on another item counts none either)
            assert(review.record_human_attempt(st, job, "m3", { reviewer = "ana", ts = "2026-01-01T00:00:00Z",
                gate = "schema", value = {}, errors = {}, contract = { name = "support_ticket", version = "1.0.0" } }))
            assert.equal(3, st:counts(job).exchanges)
        end)

        it("rolls a failed outcome back whole: no outcome, no evidence, no state change", function()
            if not st then return end
            -- the evidence row breaks NOT NULL after the outcome went in: the whole transaction goes
            local bad, berr = st:tx(function()
                assert(st:exec("INSERT INTO outcomes (job_id, item_id, pass, status, decided_by) VALUES (?, 'm2', 1, "
                    .. "'accepted', 'model')", { job }))
                return st:exec("INSERT INTO evidence (job_id, item_id, pass, seq, record_json) VALUES (?, 'm2', 1, 1, NULL)",
                    { job })
            end)
            assert.is_nil(bad)
            assert.equal("write_failed", berr.kind)
            assert.is_nil(st:item(job, "m2").status)
        end)

        it("says write_failed (never raises) when the connection is gone", function()
            if not st then return end
            st.conn:close()
            local ok, err = st:record_outcome(job, "m1", { pass = 1, status = "accepted", record_json = "{}" })
            assert.is_nil(ok)
            assert.equal("store", err.category)
            assert.equal("write_failed", err.kind)
            st.conn = nil
        end)

        it("opens a new pass over the review items only", function()
            if not st then return end
            assert(st:lease(job, "w1", 5, 30))
            assert(st:record_outcome(job, "m1", { pass = 1, status = "accepted", record_json = '{"id":"m1"}' }))
            assert(st:record_outcome(job, "m2", { pass = 1, status = "human_review", record_json = '{"id":"m2"}' }))
            local pass, n = st:new_review_pass(job, "contract fixed")
            assert.same({ 2, 1 }, { pass, n })
            local again = assert(st:lease(job, "w1", 5, 30))
            assert.equal(1, #again)
            assert.same({ "m2", 2 }, { again[1].item_id, again[1].pass })
            assert(st:record_outcome(job, "m2", { pass = 2, status = "accepted", record_json = '{"id":"m2","pass":2}' }))
            local m2 = st:item(job, "m2")
            assert.same({ "accepted", 2, 2 }, { m2.status, m2.pass, #m2.outcomes })
        end)

        it("a person's decision on an item leased in a review pass ends it: the worker's late outcome is a "
            .. "duplicate and nobody takes the item again", function()
            if not st then return end
            local review = require "jsoncontract.review.queries"
            assert(st:lease(job, "w1", 5, 30))
            assert(st:record_outcome(job, "m2", { pass = 1, status = "human_review", record_json = '{"id":"m2"}' }))
            assert(st:new_review_pass(job, "contract fixed"))
            assert.equal("m2", assert(st:lease(job, "w2", 1, 30))[1].item_id)
            -- the desk shows pass 1's outcome; the reviewer decides while w2 asks the model again
            assert.same({ true, 2 }, { review.record_decision(st, job, "m2", { decision = "needs_customer",
                reviewer = "ana", contract = { name = "support_ticket", version = "1.0.0" } }, 1) })
            local m2 = st:item(job, "m2")
            assert.same({ "done", "human" }, { m2.state, m2.outcomes[#m2.outcomes].decided_by })
            local ok, err = st:record_outcome(job, "m2", { pass = 2, status = "accepted", record_json = "{}", worker = "w2" })
            assert.is_nil(ok)
            assert.equal("duplicate", err.kind)
            assert.same({}, assert(st:lease(job, "w3", 5, 30)))
            assert.equal(0, st:counts(job).pending)
        end)

        it("an item left leased with its pass decided is made done by the next duplicate outcome", function()
            if not st then return end
            assert(st:lease(job, "w1", 5, 30))
            assert(st:record_outcome(job, "m3", { pass = 1, status = "accepted", record_json = '{"id":"m3"}' }))
            -- as a store written by an older version could leave it
            assert(st:exec("UPDATE items SET state = 'leased', lease_owner = 'w9' WHERE job_id = ? AND item_id = 'm3'",
                { job }))
            local ok, err = st:record_outcome(job, "m3", { pass = 1, status = "accepted", record_json = "{}" })
            assert.is_nil(ok)
            assert.equal("duplicate", err.kind)
            assert.same({ "done", nil }, { st:item(job, "m3").state, st:item(job, "m3").lease_owner })
        end)
    end)
end

describe("jsoncontract.jobs.store", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    local n = 0
    teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

    behaves_like_a_job_store("SQLite (WAL)", function()
        n = n + 1
        return dir .. "/job" .. n .. ".sqlite"
    end)

    it("puts SQLite in WAL mode", function()
        local st = assert(store.open(dir .. "/wal.sqlite"))
        finally(function() st:close() end)
        assert.equal("wal", st:query("PRAGMA journal_mode")[1].journal_mode)
    end)

    it("with create = false opens a job store only: another database is not_found and left as it was", function()
        local path = dir .. "/other.sqlite"
        local env = assert(require("luasql.sqlite3").sqlite3())
        local conn = assert(env:connect(path))
        assert(conn:execute("CREATE TABLE notes (x TEXT)"))
        conn:close()
        env:close()
        local st, err = store.open(path, { create = false })
        assert.is_nil(st)
        assert.same({ "store", "not_found" }, { err.category, err.kind })
        assert.truthy(err.message:find("(no jobs table)", 1, true), err.message)
        assert.is_nil(io.open(path .. "-wal", "rb"))
        st = assert(store.open(path, { create = true }))
        assert.equal("wal", st:query("PRAGMA journal_mode")[1].journal_mode)
        st:close()
        st = assert(store.open(path, { create = false }))
        st:close()
    end)

    it("says open_failed for a store it cannot open", function()
        local st, err = store.open("/nonexistent/folder/job.sqlite")
        assert.is_nil(st)
        assert.equal("open_failed", err.kind)
        st, err = store.open("postgresql://nobody:secret@127.0.0.1:1/none")
        assert.is_nil(st)
        assert.equal("open_failed", err.kind)
        assert.falsy(err.message:find("secret", 1, true))
    end)

    local pg, why
    local db = 0
    lazy_setup(function() pg, why = jobs.start_postgres() end)
    lazy_teardown(function() if pg then pg.stop() end end)

    behaves_like_a_job_store("PostgreSQL", function()
        if not pg then return nil, why end
        -- a fresh schema per test: a new database
        db = db + 1
        local admin = assert(store.open(pg.url))
        assert(admin:exec("CREATE DATABASE t" .. db))
        admin:close()
        return (pg.url:gsub("/postgres$", "/t" .. db))
    end)

    it("PostgreSQL: a worker skips rows another holds (FOR UPDATE SKIP LOCKED)", function()
        if not pg then return pending(why) end
        local a = assert(store.open(pg.url))
        local b = assert(store.open(pg.url, { create = false }))
        finally(function() a:close() b:close() end)
        local job = assert(a:create_job { contract_name = "c", provider = "p", model = "m" })
        assert(a:add_items(job, items(4)))
        assert(a:exec("BEGIN"))
        local held = assert(a:query("SELECT item_id FROM items WHERE job_id = ? ORDER BY seq LIMIT 2 "
            .. "FOR UPDATE SKIP LOCKED", { job }))
        assert.equal(2, #held)
        local got = assert(b:lease(job, "w2", 10, 30))  -- does not wait for a's transaction
        assert.same({ "m3", "m4" }, { got[1].item_id, got[2].item_id })
        assert(a:exec("ROLLBACK"))
    end)
end)
