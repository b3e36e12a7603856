-- Ids and texts shaped like SQL (`?`, `$1`, quotes, backslashes, `$$`), a NUL, bytes that are not
-- UTF-8 and a 300 KB mail, through a whole job on SQLite (`triage --parallel`) and on PostgreSQL
-- (two workers): the store binds every value, so each item is leased once, asked within that
-- one lease only, and decided once. (A store that pasted ids into `IN (...)` saw `q?1` as a placeholder: the item
-- was never marked leased and was asked again while in flight.)
local core = require "jsoncontract.core"
local util = require "support.util"
local jobs = require "support.jobs"
local store = require "jsoncontract.jobs.store"

local LUA = util.LUA
local q = jobs.q

local function jc(args)
    return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract %s"):format(LUA, args)
end

local HOSTILE = { "q?1", "?", "??", "$1", "$2 $1", "it's", "''", "back\\slash", "\\'", "$$x$$", "$tag$ $tag$",
    "'; DROP TABLE items; --", "a\"b", "%s %d", "é ü 中文 🙂" }

-- The mailbox: one mail per hostile id (its text holds the same shapes, and a marker to count the
-- stand-in's requests by), a 300 KB mail, a mail whose text holds an escaped NUL, and two lines
-- no decoder takes (a raw Latin-1 byte, a raw NUL): those go to review without a model call.
local function mailbox(path)
    local lines, expect = {}, {}
    for k, id in ipairs(HOSTILE) do
        local marker = ("<<m%02d>>"):format(k)
        lines[#lines + 1] = core.encode { id = id, text = marker .. " where is my order? " .. id .. " $1 $$ \\ '" }
        expect[marker] = id
    end
    lines[#lines + 1] = core.encode { id = "big?1", text = "<<big>> " .. ("order 1042 is late. "):rep(15000) }
    expect["<<big>>"] = "big?1"
    lines[#lines + 1] = core.encode { id = "nul$1", text = "<<nul>> a\0b" }
    expect["<<nul>>"] = "nul$1"
    lines[#lines + 1] = '{"id":"latin1?","text":"caf\xe9"}'
    lines[#lines + 1] = '{"id":"raw-nul?","text":"a\0b"}'
    local f = assert(io.open(path, "wb"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    return expect, #lines
end

-- Every item has exactly one outcome; returns item id -> outcome row.
local function one_outcome_each(st, job_id, n)
    local rows = assert(st:query("SELECT item_id, count(*) AS n FROM outcomes WHERE job_id = ? GROUP BY item_id",
        { job_id }))
    assert.equal(n, #rows)
    for _, r in ipairs(rows) do assert.equal(1, tonumber(r.n), r.item_id) end
    local counts = assert(st:counts(job_id))
    assert.same({ n, n, 0, 0 }, { counts.items, counts.done, counts.pending, counts.leased })
end

-- Each item leased once (`attempts`), and every stand-in request belongs to that one lease: the
-- requests for a mail are the exchanges its one outcome recorded (a re-ask after a schema
-- mismatch is one more of them); the lines no decoder takes were never sent.
local function one_lease_each(st, job_id, logs, expect)
    local calls = {}
    for _, path in ipairs(logs) do
        for _, r in ipairs(jobs.standin_log(path)) do
            local marker = r.mail:match("^(<<[%w]+>>)")
            assert.truthy(marker and expect[marker], "a request for no mail of the box")
            calls[marker] = (calls[marker] or 0) + 1
        end
    end
    for marker, id in pairs(expect) do
        local it = assert(st:item(job_id, id))
        assert.equal(1, it.attempts, ("leases of item %q"):format(id))
        local ev = assert(st:query("SELECT count(*) AS n FROM evidence WHERE job_id = ? AND item_id = ?",
            { job_id, id }))
        local exchanges = tonumber(ev[1].n)
        assert.truthy(exchanges >= 1, id)
        assert.equal(exchanges, calls[marker] or 0, ("model calls for item %q"):format(id))
    end
    for _, line in ipairs { "line-18", "line-19" } do
        assert.equal(1, assert(st:item(job_id, line)).attempts, line)
    end
end

-- The item ids as the exports and the store give them back, and the invalid lines' reasons.
local function ids_round_trip(st, job_id)
    for _, id in ipairs(HOSTILE) do
        local it = assert(st:item(job_id, id))
        assert.equal(id, it.item_id)
        assert.equal(id, core.decode(it.input_json).id)
        assert.equal("done", it.state)
    end
    local big = assert(st:item(job_id, "big?1"))
    assert.truthy(#big.input_json > 300000)
    for line, cause in pairs { ["line-18"] = "invalid UTF-8 byte 0xE9", ["line-19"] = "control character U+0000" } do
        local it = assert(st:item(job_id, line))
        assert.equal("human_review", it.status)
        local reason = core.decode(it.reason_json)
        assert.equal("invalid_input", reason.kind)
        assert.truthy(reason.message:find(cause, 1, true), reason.message)
    end
end

describe("a job whose ids and texts look like SQL", function()
    local tmp

    before_each(function()
        tmp = os.tmpname()
        os.remove(tmp)
        os.execute("mkdir -p " .. q(tmp))
    end)
    after_each(function() os.execute("rm -rf " .. q(tmp)) end)

    it("on SQLite: each item leased, asked and decided once", function()
        local box = tmp .. "/box.jsonl"
        local expect, n = mailbox(box)
        local log = tmp .. "/standin.log"
        local o, code = util.sh(("JC_STANDIN_LOG=%s %s"):format(q(log),
            jc(("triage --input %s --out %s --parallel 4 --delay-ms 0"):format(q(box), q(tmp .. "/out")))))
        assert.equal(0, code, o)
        local st = assert(store.open(tmp .. "/out/job.sqlite", { create = false }))
        finally(function() st:close() end)
        local job_id = st:latest_job().id
        one_outcome_each(st, job_id, n)
        one_lease_each(st, job_id, { log }, expect)
        ids_round_trip(st, job_id)
        -- the exports name each item once, under its own id
        local seen = {}
        for _, file in ipairs { "accepted.jsonl", "review.jsonl" } do
            for _, r in ipairs(jobs.jsonl(tmp .. "/out/" .. file)) do
                assert.is_nil(seen[r.id], r.id)
                seen[r.id] = true
            end
        end
        for _, id in ipairs(HOSTILE) do assert.is_true(seen[id], id) end
    end)

    it("on PostgreSQL: two workers, each item leased, asked and decided once", function()
        local pg, why = jobs.start_postgres()
        if not pg then return pending(why) end
        finally(pg.stop)
        local box = tmp .. "/box.jsonl"
        local expect, n = mailbox(box)
        local o, code = util.sh(jc(("enqueue --store %s --job examples/support_ticket.lua --input %s --delay-ms 20"):format(q(pg.url), q(box))))
        assert.equal(0, code, o)
        local job_id = o:match("(job%-%S+)")
        assert.truthy(job_id, o)
        local pids, logs = {}, {}
        finally(function()
            for _, pid in ipairs(pids) do os.execute("kill -9 " .. pid .. " 2>/dev/null") end
        end)
        for w = 1, 2 do
            logs[w] = tmp .. "/standin-" .. w .. ".log"
            pids[w] = jobs.spawn_status(jc(("worker --store %s --parallel 3"):format(q(pg.url))),
                tmp .. "/worker-" .. w .. ".out", "JC_STANDIN_LOG=" .. q(logs[w]))
        end
        for w = 1, 2 do
            assert.is_true(jobs.wait_gone(pids[w], 120), "worker " .. w .. " still running")
            local text = util.read(tmp .. "/worker-" .. w .. ".out")
            assert.equal(0, tonumber(text:match("exit=(%d+)")), text)
        end
        local st = assert(store.open(pg.url, { create = false }))
        finally(function() st:close() end)
        one_outcome_each(st, job_id, n)
        one_lease_each(st, job_id, logs, expect)
        ids_round_trip(st, job_id)
    end)
end)
