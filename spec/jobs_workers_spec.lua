-- Three workers on one job in a real PostgreSQL server (started here): one is killed -9 mid-run;
-- the others take its leases once they expire, and every item's outcome is recorded exactly once.
local core = require "jsoncontract.core"
local util = require "support.util"
local jobs = require "support.jobs"
local store = require "jsoncontract.jobs.store"

local LUA = util.LUA
local q = jobs.q

local function jc(args)
    return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract %s"):format(LUA, args)
end

describe("jsoncontract worker over PostgreSQL", function()
    local pg, why, mailbox, by_text, ids

    lazy_setup(function()
        mailbox, by_text, ids = jobs.mailbox(60)
        if not mailbox then why = by_text return end
        pg, why = jobs.start_postgres()
    end)
    lazy_teardown(function()
        if pg then pg.stop() end
        if mailbox then os.remove(mailbox) end
    end)

    it("3 workers, one killed mid-run: every mail decided exactly once, nothing asked after its commit", function()
        if not pg then return pending(why) end
        local tmp = os.tmpname()
        os.remove(tmp)
        os.execute("mkdir -p " .. q(tmp))
        local pids = {}
        finally(function()
            for _, pid in ipairs(pids) do os.execute("kill -9 " .. pid .. " 2>/dev/null") end
            os.execute("rm -rf " .. q(tmp))
        end)
        -- (500 ms an answer: the 48 mails after the first dozen take the workers seconds, so
        -- worker 2 is still at work when a busy machine gets round to killing it; at 40 ms they
        -- were done 0.4 s after the dozen)
        local o, code = util.sh(jc(("enqueue --job examples/support_ticket.lua --store %s --input %s --delay-ms 500"):format(q(pg.url), q(mailbox))))
        assert.equal(0, code, o)
        local job_id = o:match("(job%-%S+)")
        assert.truthy(job_id, o)
        for w = 1, 3 do
            pids[w] = jobs.spawn_status(jc(("worker --store %s --parallel 3 --lease-seconds 2"):format(q(pg.url))),
                tmp .. "/worker-" .. w .. ".out", "JC_STANDIN_LOG=" .. q(tmp .. "/standin-" .. w .. ".log"))
        end
        -- once a dozen outcomes are in, kill worker 2 (the shell's child) and its stand-in follows
        local st = assert(store.open(pg.url, { create = false }))
        finally(function() st:close() end)
        local deadline = jobs.now() + 60
        while jobs.now() < deadline and (st:counts(job_id).done or 0) < 12 do jobs.sleep(0.05) end
        local victim = jobs.children(pids[2])[1]
        assert.truthy(victim, "worker 2 is running")
        local standin = jobs.children(victim)
        os.execute("kill -9 " .. victim)
        for _, c in ipairs(standin) do assert.is_true(jobs.wait_gone(c, 5), "stand-in outlived its worker") end
        assert.is_true(jobs.wait_gone(pids[1], 120))
        assert.is_true(jobs.wait_gone(pids[3], 120))
        for _, w in ipairs { 1, 3 } do
            local text = util.read(tmp .. "/worker-" .. w .. ".out")
            assert.equal(0, tonumber(text:match("exit=(%d+)")), text)
        end

        -- exactly one outcome per item (the UNIQUE constraint), all items decided
        local rows = assert(st:query("SELECT item_id, count(*) AS n, min(decided_at) AS t FROM outcomes "
            .. "WHERE job_id = ? GROUP BY item_id", { job_id }))
        assert.equal(#ids, #rows)
        local decided = {}
        for _, r in ipairs(rows) do
            assert.equal(1, tonumber(r.n))
            decided[r.item_id] = tonumber(r.t)
        end
        -- no worker asked for an item after its outcome was committed (one clock: one host)
        for w = 1, 3 do
            for _, r in ipairs(jobs.standin_log(tmp .. "/standin-" .. w .. ".log")) do
                local id = by_text[r.mail]
                assert.is_true(r.t <= decided[id] + 0.05, ("worker %d asked %s %.3f s after its commit")
                    :format(w, id, r.t - decided[id]))
            end
        end
        -- worker 2's leases were taken over by the others
        local took = 0
        for _, r in ipairs(st:query("SELECT count(DISTINCT worker) AS n FROM outcomes WHERE job_id = ?", { job_id })) do
            took = tonumber(r.n)
        end
        assert.is_true(took >= 2)

        -- status and export work against the same store
        o, code = util.sh(jc("status --store " .. q(pg.url) .. " --json"))
        assert.equal(0, code, o)
        local status = core.decode(o)
        assert.same({ #ids, 0, 0 }, { status.items, status.pending, status.leased })
        assert.equal(#ids, status.metrics.items)
        o, code = util.sh(jc(("export --store %s --out %s"):format(q(pg.url), q(tmp .. "/export"))))
        assert.equal(0, code, o)
        local seen = {}
        for _, f in ipairs { "accepted.jsonl", "review.jsonl" } do
            for _, r in ipairs(jobs.jsonl(tmp .. "/export/" .. f)) do seen[r.id] = (seen[r.id] or 0) + 1 end
        end
        for _, id in ipairs(ids) do assert.equal(1, seen[id], id) end
    end)

    it("worker, status and export on a database without a job store say so, without SQL (exit 2)", function()
        if not pg then return pending(why) end
        local admin = assert(store.open(pg.url))
        assert(admin:exec("CREATE DATABASE no_store"))
        admin:close()
        local url = (pg.url:gsub("/postgres$", "/no_store"))
        local st, err = store.open(url, { create = false })
        assert.is_nil(st)
        assert.equal("not_found", err.kind)
        local out = os.tmpname()
        os.remove(out)
        finally(function() os.execute("rm -rf " .. q(out)) end)
        for _, cmd in ipairs { "worker", "status", "status --json", "export --out " .. q(out) } do
            local o, code = util.sh(jc(cmd .. " --store " .. q(url)))
            assert.equal(2, code, cmd .. ": " .. o)
            assert.truthy(o:find("no job store at " .. url .. " (no jobs table): create one with `jsoncontract "
                .. "enqueue --store URL`", 1, true), o)
            assert.falsy(o:find("relation", 1, true), o)
        end
        -- nothing was created there
        admin = assert(store.open(url, { create = true }))
        assert.equal(0, tonumber(admin:query("SELECT count(*) AS n FROM jobs")[1].n))
        admin:close()
    end)

    it("enqueue: a line that is not UTF-8 goes to review as on SQLite; a bad id is refused, no job left", function()
        if not pg then return pending(why) end
        local admin = assert(store.open(pg.url))
        assert(admin:exec("CREATE DATABASE bad_lines"))
        admin:close()
        local url = (pg.url:gsub("/postgres$", "/bad_lines"))
        assert(store.open(url)):close() -- the schema, as a first enqueue would have made it
        local box, out = os.tmpname(), os.tmpname()
        os.remove(out)
        finally(function() os.remove(box) os.execute("rm -rf " .. q(out)) end)
        local function write_box(text)
            local f = assert(io.open(box, "wb"))
            f:write(text)
            f:close()
        end
        -- an id PostgreSQL could not index, a NUL in an id: refused by line before anything is made
        write_box('{"id":"ok-1","text":"hi"}\n{"id":"' .. ("x"):rep(9000) .. '","text":"t"}\n{"id":"n\\u0000b","text":"t"}\n')
        local o, code = util.sh(jc(("enqueue --job examples/support_ticket.lua --store %s --input %s"):format(q(url), q(box))))
        assert.equal(2, code, o)
        assert.truthy(o:find("line 2: id .* is 9000 bytes long"), o)
        assert.truthy(o:find("line 3: id .* holds the control character U%+0000"), o)
        o, code = util.sh(jc(("worker --store %s"):format(q(url))))
        assert.equal(2, code, o)
        assert.truthy(o:find("the store holds no job", 1, true), o)

        write_box('{"id":"ok-1","text":"hi"}\n{"id":"latin1","text":"caf\xe9 order 1042"}\n')
        o, code = util.sh(jc(("enqueue --job examples/support_ticket.lua --store %s --input %s --delay-ms 0"):format(q(url), q(box))))
        assert.equal(0, code, o)
        o, code = util.sh(jc(("worker --store %s"):format(q(url))))
        assert.equal(0, code, o)
        o, code = util.sh(jc(("export --store %s --out %s"):format(q(url), q(out))))
        assert.equal(0, code, o)
        local review = jobs.jsonl(out .. "/review.jsonl")
        assert.equal(1, #review)
        assert.same({ "line-2", "input", "invalid_input" }, { review[1].id, review[1].reason.category,
            review[1].reason.kind })
    end)

    it("a worker the breaker stops leaves the evidence of its held-back attempts; the next worker's follow", function()
        if not pg then return pending(why) end
        local admin = assert(store.open(pg.url))
        assert(admin:exec("CREATE DATABASE held_back"))
        admin:close()
        local url = (pg.url:gsub("/postgres$", "/held_back"))
        local out = os.tmpname()
        os.remove(out)
        local standin
        finally(function()
            if standin then util.stop_standin(standin) end
            os.execute("rm -rf " .. q(out))
        end)
        local o, code = util.sh(jc(("enqueue --store %s --job examples/support_ticket.lua --input "
            .. "examples/mailbox.jsonl --limit 4 --base-url http://127.0.0.1:%d --model m"):format(q(url),
            util.closed_port())))
        assert.equal(0, code, o)
        local job_id = o:match("(job%-%S+)")
        o, code = util.sh(jc(("worker --store %s --fail-after 2 --parallel 1"):format(q(url))))
        assert.equal(1, code, o)
        local st = assert(store.open(url, { create = false }))
        finally(function() st:close() end)
        local c = st:counts(job_id)
        assert.same({ 4, 0 }, { c.pending, c.done })
        -- the exchanges of the attempts held back, each recorded with its gate and numbered in order
        local function rows()
            local by = {}
            for _, r in ipairs(assert(st:query("SELECT item_id, pass, seq, record_json FROM evidence "
                .. "WHERE job_id = ? ORDER BY item_id, pass, seq", { job_id }))) do
                by[r.item_id] = by[r.item_id] or {}
                local list = by[r.item_id]
                list[#list + 1] = { seq = tonumber(r.seq), json = r.record_json, rec = core.decode(r.record_json) }
            end
            return by
        end
        local held = rows()
        local n = 0
        for id, list in pairs(held) do
            for i, row in ipairs(list) do
                n = n + 1
                assert.same({ i, "transport", "connect" }, { row.seq, row.rec.gate, row.rec.kind }, id)
            end
            assert.equal(#list, #st:evidence_for(job_id, id))
        end
        assert.truthy(n >= 2, n)
        assert.equal(n, c.exchanges)
        o, code = util.sh(jc(("export --store %s --out %s"):format(q(url), q(out))))
        assert.equal(0, code, o)
        assert.equal(n, #jobs.jsonl(out .. "/evidence.jsonl"))

        local port
        standin, port = util.start_standin { examples_dir = "examples", delay_ms = 0 }
        o, code = util.sh(jc(("worker --store %s --base-url http://127.0.0.1:%d"):format(q(url), port)))
        assert.equal(0, code, o)
        c = st:counts(job_id)
        assert.same({ 4, 0 }, { c.done, c.pending })
        local after = rows()
        for id, old in pairs(held) do
            local new = after[id]
            assert.truthy(#new > #old, id)
            for i, row in ipairs(new) do
                assert.equal(i, row.seq, id)
                if old[i] then assert.equal(old[i].json, row.json, id) end
            end
            assert.equal(1, #st:item(job_id, id).outcomes, id)
        end
    end)

    it("a worker whose connection the server ends: its last line and its runs row count what it did", function()
        if not pg then return pending(why) end
        local admin = assert(store.open(pg.url))
        assert(admin:exec("CREATE DATABASE cut_off"))
        admin:close()
        local url = (pg.url:gsub("/postgres$", "/cut_off"))
        local tmp = os.tmpname()
        finally(function() os.remove(tmp) end)
        -- (200 ms an answer: the worker is still at work seconds after its eighth outcome, when a
        -- busy machine gets round to ending its connection)
        local o, code = util.sh(jc(("enqueue --store %s --job examples/support_ticket.lua --input %s --delay-ms 200"):format(q(url), q(mailbox))))
        assert.equal(0, code, o)
        local job_id = o:match("(job%-%S+)")
        local pid = jobs.spawn_status(jc(("worker --store %s --parallel 2"):format(q(url))), tmp)
        finally(function() os.execute("kill -9 " .. pid .. " 2>/dev/null") end)
        local st = assert(store.open(url, { create = false }))
        finally(function() st:close() end)
        local deadline = jobs.now() + 60
        while jobs.now() < deadline and (st:counts(job_id).done or 0) < 8 do jobs.sleep(0.05) end
        -- as an administrator's pg_terminate_backend or a server restart would
        assert(st:query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
            .. "AND datname = current_database() AND backend_type = 'client backend'"))
        assert.is_true(jobs.wait_gone(pid, 60))
        local text = util.read(tmp)
        assert.equal(1, tonumber(text:match("exit=(%d+)")), text)
        local said = tonumber(text:match("(%d+) exchanges"))
        local committed = tonumber(st:counts(job_id).exchanges)
        assert.truthy(committed >= 8, text)
        -- every committed exchange is counted on the line, and the runs row says the same
        assert.truthy(said and said >= committed, text)
        local runs = assert(st:query("SELECT exchanges, stop_reason FROM runs WHERE job_id = ?", { job_id }))
        assert.equal(1, #runs, text)
        assert.same({ said, "store_error" }, { tonumber(runs[1].exchanges), runs[1].stop_reason })
    end)
end)
