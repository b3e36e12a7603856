-- triage as a job: kill -9 at random moments and --resume, signals, a changed mailbox, duplicate
-- ids, a full disk, a review pass, and the orders table catching misread order numbers.
-- Real processes, a real SQLite store, the real stand-in over HTTP.
local core = require "jsoncontract.core"
local util = require "support.util"
local jobs = require "support.jobs"
local store = require "jsoncontract.jobs.store"

local LUA = util.LUA
local q = jobs.q

local tmpdir = util.fresh_path

local function triage_cmd(args)
    -- (subprocesses without the sanitizer preload of an ASan run: the C core runs under ASan in-process
    -- in the store and scheduler specs)
    return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract triage %s"):format(LUA, args)
end

-- Committed outcomes (item id -> decided_at) straight from the store.
local function committed(dir)
    local st = store.open(dir .. "/job.sqlite", { create = false })
    if not st then return {} end
    local job = st:latest_job()
    local out = {}
    if job then
        for _, r in ipairs(st:items(job.id, { state = "done" })) do out[r.item_id] = r.decided_at end
    end
    st:close()
    return out
end

-- Every mail in exactly one of tickets/review, each line whole; returns the counts.
local function check_exports(dir, ids)
    local seen = {}
    local tickets = jobs.jsonl(dir .. "/accepted.jsonl")
    local review = jobs.jsonl(dir .. "/review.jsonl")
    for _, t in ipairs(tickets) do seen[t.id] = (seen[t.id] or 0) + 1 end
    for _, r in ipairs(review) do seen[r.id] = (seen[r.id] or 0) + 1 end
    for _, id in ipairs(ids) do assert.equal(1, seen[id], "mail " .. id .. " in accepted + review") end
    assert.equal(#ids, #tickets + #review)
    jobs.jsonl(dir .. "/evidence.jsonl")
    return #tickets, #review
end

describe("triage as a job", function()
    local mailbox, by_text, ids, why

    lazy_setup(function()
        mailbox, by_text, ids = jobs.mailbox(100)
        if not mailbox then why = by_text end
    end)
    lazy_teardown(function() if mailbox then os.remove(mailbox) end end)

    it("survives kill -9 at 10 random moments: resumed, nothing committed is asked again", function()
        if not mailbox then return pending(why) end
        local dir, logs = tmpdir(), tmpdir()
        os.execute("mkdir -p " .. q(logs))
        finally(function() os.execute("rm -rf " .. q(dir) .. " " .. q(logs)) end)
        -- (a failure names its seed: JC_CRASH_SEED=<seed> replays the same moments)
        local seed = tonumber(os.getenv("JC_CRASH_SEED") or "") or os.time()
        local rand = util.lcg(seed)
        local before = {}     -- item -> decided_at, committed before the current run
        local kills = 0
        for run = 1, 11 do
            local log = logs .. "/standin-" .. run .. ".log"
            local out = logs .. "/run-" .. run .. ".out"
            local args = run == 1 and ("--input %s --out %s --delay-ms 30 --parallel 4"):format(q(mailbox), q(dir))
                or ("--resume %s --parallel 4"):format(q(dir))
            local pid = jobs.spawn(triage_cmd(args), out, "JC_STANDIN_LOG=" .. q(log))
            if run <= 10 then
                -- a random moment once the job is under way: 0.05 .. 0.8 s after it said so
                assert(jobs.wait_for(out, "triage: ", 20), "run " .. run .. " did not start: " .. tostring(util.read(out)))
                jobs.sleep(0.05 + rand(750) / 1000)
                local standin = jobs.children(pid)
                os.execute("kill -9 " .. pid)
                assert.is_true(jobs.wait_gone(pid, 10))
                kills = kills + 1
                -- the stand-in follows its parent
                for _, c in ipairs(standin) do assert.is_true(jobs.wait_gone(c, 5), "stand-in outlived triage") end
            else
                assert.is_true(jobs.wait_gone(pid, 120), "the last resume did not finish")
                assert.truthy(util.read(out):find(#ids .. " messages: ", 1, true), util.read(out))
            end
            -- nothing committed before this run was asked in this run
            for _, r in ipairs(jobs.standin_log(log)) do
                local id = by_text[r.mail]
                assert.is_nil(before[id], "JC_CRASH_SEED=" .. seed .. ": run " .. run .. " asked " .. tostring(id) .. " again after its commit")
            end
            local now = committed(dir)
            for id in pairs(before) do assert.truthy(now[id], "JC_CRASH_SEED=" .. seed .. ": " .. id .. " lost its committed outcome") end
            before = now
        end
        assert.equal(10, kills)
        check_exports(dir, ids)
        -- one outcome per item, in the store too
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local job = st:latest_job()
        local rows = st:query("SELECT item_id, count(*) AS n FROM outcomes WHERE job_id = ? GROUP BY item_id", { job.id })
        st:close()
        assert.equal(#ids, #rows)
        for _, r in ipairs(rows) do assert.equal(1, tonumber(r.n)) end
    end)

    for _, case in ipairs { { "SIGINT", 130 }, { "SIGTERM", 143 } } do
        it(case[1] .. ": finishes what is in flight, commits, exports, summarises, stops the stand-in, exits "
            .. case[2], function()
            if not mailbox then return pending(why) end
            local dir, out = tmpdir(), os.tmpname()
            finally(function() os.execute("rm -rf " .. q(dir)) os.remove(out) end)
            -- (150 ms an answer: the hundred mails take seconds, so the signal comes mid-run even
            -- when a busy machine sends it late)
            local pid = jobs.spawn_status(triage_cmd(("--input %s --out %s --delay-ms 150 --parallel 4")
                :format(q(mailbox), q(dir))), out)
            assert(jobs.wait_for(out, "triage: ", 20))
            jobs.sleep(0.4)
            -- the shell's child is triage; its child the stand-in
            local triage = jobs.children(pid)[1]
            local standin = jobs.children(triage)
            os.execute("kill -" .. case[1]:sub(4) .. " " .. triage)
            assert.is_true(jobs.wait_gone(pid, 60))
            local text = util.read(out)
            assert.equal(case[2], tonumber(text:match("exit=(%d+)")), text)
            assert.truthy(text:find("not done yet", 1, true), text)
            assert.truthy(text:find("stopped by " .. case[1], 1, true), text)
            for _, c in ipairs(standin) do assert.is_true(jobs.wait_gone(c, 5), "stand-in outlived triage") end
            local summary = core.decode(util.read(dir .. "/summary.json"))
            assert.equal(case[1], summary.stopped_by)
            local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
            local c = st:counts(st:latest_job().id)
            st:close()
            assert.equal(0, c.leased)          -- in-flight items finished or went back
            assert.equal(c.done, summary.accepted + summary.human_review)
            assert.is_true(c.pending > 0)
            -- and the job goes on from there
            local o, code = util.sh(triage_cmd("--resume " .. q(dir)))
            assert.equal(0, code, o)
            check_exports(dir, ids)
        end)
    end

    it("refuses to resume with a changed or a different mailbox, naming the message", function()
        local dir, box = tmpdir(), os.tmpname()
        finally(function() os.execute("rm -rf " .. q(dir)) os.remove(box) end)
        os.execute("cp examples/mailbox.jsonl " .. q(box))
        local o, code = util.sh(triage_cmd(("--input %s --out %s --delay-ms 0 --limit 3"):format(q(box), q(dir))))
        assert.equal(0, code, o)
        local text = util.read(box)
        local f = assert(io.open(box, "wb"))
        f:write((text:gsub("order 1187", "order 1188", 1)))
        f:close()
        o, code = util.sh(triage_cmd("--resume " .. q(dir)))
        assert.equal(2, code, o)
        assert.truthy(o:find("record m-1187 (line 2) has changed", 1, true), o)
        o, code = util.sh(triage_cmd("--resume " .. q(dir) .. " --input spec/support/../../examples/mailbox.jsonl"))
        assert.equal(0, code, o)   -- the same mailbox under another path: same ids and digests
        o, code = util.sh(triage_cmd("--resume /nonexistent/folder"))
        assert.equal(2, code, o)
        assert.truthy(o:find("nothing to resume", 1, true), o)
    end)

    it("resumes a job read from stdin without its mailbox; one given is still checked", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local o, code = util.sh(triage_cmd(("--input - --out %s --delay-ms 0 --limit 4 <examples/mailbox.jsonl")
            :format(q(dir))))
        assert.equal(0, code, o)
        -- two items back to waiting, as a run stopped mid-way leaves them
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local job = st:latest_job()
        assert.equal("-", job.input_path)
        assert(st:exec("DELETE FROM outcomes WHERE job_id = ? AND item_id IN ('m-1042', 'm-1187')", { job.id }))
        assert(st:exec("UPDATE items SET state = 'pending' WHERE job_id = ? AND item_id IN ('m-1042', 'm-1187')",
            { job.id }))
        st:close()
        o, code = util.sh(triage_cmd("--resume " .. q(dir) .. " --input - </dev/null"))
        assert.equal(2, code, o)   -- a mailbox given is compared, stdin too
        assert.truthy(o:find("is not the one job", 1, true), o)
        o, code = util.sh(triage_cmd("--resume " .. q(dir) .. " </dev/null"))
        assert.equal(0, code, o)
        assert.truthy(o:find("2 of 4 messages already decided", 1, true), o)
        assert.equal(4, #jobs.jsonl(dir .. "/accepted.jsonl") + #jobs.jsonl(dir .. "/review.jsonl"))
        -- the same mail as a file (its first 4 lines: the job's --limit) is the same mailbox
        o, code = util.sh(triage_cmd("--resume " .. q(dir) .. " --input examples/mailbox.jsonl"))
        assert.equal(0, code, o)
    end)

    it("refuses a second triage on a folder while one runs; the lock of a run killed -9 blocks nothing", function()
        local dir, logs = tmpdir(), tmpdir()
        os.execute("mkdir -p " .. q(logs))
        finally(function() os.execute("rm -rf " .. q(dir) .. " " .. q(logs)) end)
        local box_ids = {}
        for line in io.lines("examples/mailbox.jsonl") do box_ids[#box_ids + 1] = core.decode(line).id end
        local pid = jobs.spawn(triage_cmd(("--input examples/mailbox.jsonl --out %s --delay-ms 400 --parallel 2")
            :format(q(dir))), logs .. "/1.out")
        assert(jobs.wait_for(logs .. "/1.out", "triage: ", 20), util.read(logs .. "/1.out"))
        local o, code = util.sh(triage_cmd("--resume " .. q(dir)))
        assert.equal(1, code, o)
        assert.truthy(o:find("another triage is running on the job in " .. dir, 1, true), o)
        -- killed -9: its lock file stays, but the kernel gave the lock back
        os.execute("kill -9 " .. pid)
        assert.is_true(jobs.wait_gone(pid, 10))
        assert.truthy(io.open(dir .. "/triage.lock", "rb"), "the lock file is in the job folder")
        local run = jobs.spawn_status(triage_cmd("--resume " .. q(dir)), logs .. "/2.out")
        assert(jobs.wait_for(logs .. "/2.out", "resuming job", 20), util.read(logs .. "/2.out"))
        -- the tester's case: a second resume while the first runs asks nothing and takes no lease
        local log3 = logs .. "/standin-3.log"
        o, code = util.sh("JC_STANDIN_LOG=" .. q(log3) .. " " .. triage_cmd("--resume " .. q(dir)))
        assert.equal(1, code, o)
        assert.truthy(o:find("another triage is running", 1, true), o)
        assert.equal(0, #jobs.standin_log(log3))
        assert.is_true(jobs.wait_gone(run, 60))
        local text = util.read(logs .. "/2.out")
        assert.equal(0, tonumber(text:match("exit=(%d+)")), text)
        check_exports(dir, box_ids)
    end)

    it("stores absolute paths, so --resume works from any folder; a job with relative ones still resumes",
        function()
            local dir, elsewhere = tmpdir(), tmpdir()
            finally(function() os.execute("rm -rf " .. q(dir) .. " " .. q(elsewhere)) end)
            os.execute("mkdir -p " .. q(elsewhere))
            local root = util.lines("pwd")[1]
            local o, code = util.sh(triage_cmd("--input examples/mailbox.jsonl --limit 2 --delay-ms 0 --out " .. q(dir)))
            assert.equal(0, code, o)
            local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
            local job = assert(st:latest_job())
            assert.equal(root .. "/examples/support_ticket.lua", core.decode(job.options_json).job)
            assert.equal(root .. "/examples/mailbox.jsonl", job.input_path)
            local function resume_from_elsewhere(args)
                return util.sh(("cd %s && env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s %s triage "
                    .. "--resume %s %s"):format(q(elsewhere), LUA, q(root .. "/bin/jsoncontract"), q(dir), args or ""))
            end
            o, code = resume_from_elsewhere()
            assert.equal(0, code, o)
            -- A job made before: the defaults as given, relative to the folder it was made in.
            local function store_paths(contract, input)
                local jo = core.decode(job.options_json)
                jo.job, jo.contract = nil, contract   -- (as jobs made before job modules kept it)
                assert(st:tx(function()
                    return st:exec("UPDATE jobs SET options_json = ?, input_path = ? WHERE id = ?",
                        { core.encode(jo), input, job.id })
                end))
            end
            store_paths("./examples/support_ticket.lua", "examples/mailbox.jsonl")
            o, code = resume_from_elsewhere()
            assert.equal(0, code, o)   -- the defaults are this installation's examples/
            store_paths("mine/ticket.lua", "mine/mail.jsonl")
            o, code = resume_from_elsewhere()
            assert.equal(2, code, o)
            assert.truthy(o:find("the job stored the relative path mine/ticket.lua", 1, true), o)
            assert.truthy(o:find("give --job MODULE", 1, true), o)
            o, code = resume_from_elsewhere("--job " .. q(root .. "/examples/support_ticket.lua"))
            assert.equal(2, code, o)
            assert.truthy(o:find("give --input FILE", 1, true), o)
            o, code = resume_from_elsewhere("--job " .. q(root .. "/examples/support_ticket.lua")
                .. " --input " .. q(root .. "/examples/mailbox.jsonl"))
            assert.equal(0, code, o)
            -- --job on a plain resume is the job's own contract or nothing
            o, code = resume_from_elsewhere("--job " .. q(root .. "/examples/leave_request.lua"))
            assert.equal(2, code, o)
            assert.truthy(o:find("run the job with the contract it started with", 1, true), o)
            st:close()
        end)

    it("names every duplicate id by line and creates nothing", function()
        local dir, box = tmpdir(), os.tmpname()
        finally(function() os.remove(box) end)
        local f = assert(io.open(box, "wb"))
        f:write('{"id":"a","text":"x"}\n{"id":"b","text":"y"}\n{"id":"a","text":"z"}\n\n{"id":"b","text":"w"}\n')
        f:close()
        local o, code = util.sh(triage_cmd(("--input %s --out %s"):format(q(box), q(dir))))
        assert.equal(2, code, o)
        assert.truthy(o:find('line 3: id "a" is already used on line 1', 1, true), o)
        assert.truthy(o:find('line 5: id "b" is already used on line 2', 1, true), o)
        assert.is_nil(io.open(dir, "rb"))
    end)

    it("refuses ids with a control character or over 512 bytes, naming the line, and creates nothing", function()
        local dir, box = tmpdir(), os.tmpname()
        finally(function() os.remove(box) end)
        local f = assert(io.open(box, "wb"))
        f:write('{"id":"ok-1","text":"hi"}\n{"id":"a\\u0000x","text":"one"}\n{"id":"a\\u0000y","text":"two"}\n'
            .. '{"id":"' .. ("k"):rep(513) .. '","text":"long"}\n{"id":"' .. ("k"):rep(512) .. '","text":"fits"}\n')
        f:close()
        local o, code = util.sh(triage_cmd(("--input %s --out %s"):format(q(box), q(dir))))
        assert.equal(2, code, o)
        assert.truthy(o:find('line 2: id "a\\0x" holds the control character U+0000', 1, true), o)
        assert.truthy(o:find('line 3: id "a\\0y" holds', 1, true), o)
        assert.truthy(o:find("line 4: id .* is 513 bytes long %(at most 512%)"), o)
        assert.falsy(o:find("line 5", 1, true), o)
        assert.falsy(o:find("\0", 1, true), "a raw NUL on the terminal")
        assert.is_nil(io.open(dir, "rb"))
    end)

    it("sends a line that is not UTF-8 or holds a NUL byte to review as input/invalid_input", function()
        local dir, box = tmpdir(), os.tmpname()
        finally(function() os.remove(box) os.execute("rm -rf " .. q(dir)) end)
        local f = assert(io.open(box, "wb"))
        f:write('{"id":"ok-1","text":"hi"}\n{"id":"latin1","text":"caf\xe9 order 1042"}\n'
            .. '{"id":"nul","text":"a\0b"}\n')
        f:close()
        local o, code = util.sh(triage_cmd(("--input %s --out %s --delay-ms 0"):format(q(box), q(dir))))
        assert.equal(0, code, o)
        local review = jobs.jsonl(dir .. "/review.jsonl")
        assert.equal(2, #review)
        local causes = { "invalid UTF-8 byte 0xE9 in a string at line 1, column 27", "control character U+0000" }
        for k, r in ipairs(review) do
            assert.equal("line-" .. (k + 1), r.id)
            assert.same({ "input", "invalid_input" }, { r.reason.category, r.reason.kind })
            -- the real cause, with its offset: not the store's rewrite of the bytes
            assert.truthy(tostring(r.reason.message):find(causes[k], 1, true), tostring(r.reason.message))
            assert.falsy(tostring(r.reason.message):find("escape '\\'", 1, true), tostring(r.reason.message))
        end
        -- stored as the bytes they are, so --resume matches the mailbox by digest
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local it = st:item(st:latest_job().id, "line-3")
        st:close()
        assert.equal('{"id":"nul","text":"a\0b"}', it.input_json)
        o, code = util.sh(triage_cmd("--resume " .. q(dir)))
        assert.equal(0, code, o)
    end)

    it("leaves no empty folder when the store cannot be opened, and calls a missing store a usage error", function()
        local dir = tmpdir()
        local o, code = util.sh(triage_cmd(("--limit 2 --out %s --store /nonexistent-dir/x.sqlite"):format(q(dir))))
        assert.equal(1, code, o)
        assert.truthy(o:find("cannot open the job store", 1, true), o)
        assert.is_nil(os.rename(dir, dir))
        local env = "env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY " .. LUA .. " bin/jsoncontract "
        for _, cmd in ipairs { "worker", "enqueue --job examples/support_ticket.lua --input examples/mailbox.jsonl",
            "worker --store " .. q(dir) } do
            o, code = util.sh(env .. cmd)
            assert.equal(2, code, cmd .. ": " .. o)
            assert.truthy(o:find("job store", 1, true), o)
        end
    end)

    it("status, export and worker change nothing in a database that is no job store, and say so (exit 2); "
        .. "a store that cannot be reached is exit 1", function()
        local dir = tmpdir()
        os.execute("mkdir -p " .. q(dir))
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local other = dir .. "/other.sqlite"
        local env = assert(require("luasql.sqlite3").sqlite3())
        local conn = assert(env:connect(other))
        assert(conn:execute("CREATE TABLE notes (x TEXT)"))
        assert(conn:execute("INSERT INTO notes VALUES ('mine')"))
        conn:close()
        env:close()
        local before = core.sha256(util.read(other))
        local notdb = dir .. "/notes.txt"
        local f = assert(io.open(notdb, "wb"))
        f:write("not a database\n")
        f:close()
        local jc = "env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY " .. LUA .. " bin/jsoncontract "
        for _, cmd in ipairs { "status --store " .. q(other), "status --json --store " .. q(other),
            "export --store " .. q(other) .. " --out " .. q(dir .. "/x"), "worker --store " .. q(other),
            "triage --resume " .. q(dir) .. " --store " .. q(other) } do
            local o, code = util.sh(jc .. cmd)
            assert.equal(2, code, cmd .. ": " .. o)
            assert.truthy(o:find("no job store at " .. other .. " (no jobs table)", 1, true), o)
        end
        local o, code = util.sh(jc .. "status --store " .. q(notdb))
        assert.equal(2, code, o)
        assert.truthy(o:find("(not a SQLite database)", 1, true), o)
        -- the foreign file is as it was: same bytes, still in its own journal mode, no WAL beside it
        assert.equal(before, core.sha256(util.read(other)))
        assert.is_nil(io.open(other .. "-wal", "rb"))
        assert.equal("not a database\n", util.read(notdb))
        for _, cmd in ipairs { "status", "export --out " .. q(dir .. "/x") } do
            o, code = util.sh(jc .. cmd .. " --store postgresql://nobody@127.0.0.1:1/none")
            assert.equal(1, code, cmd .. ": " .. o)
            assert.truthy(o:find("cannot open the job store", 1, true), o)
        end
    end)

    it("sends the review items back as a new recorded pass with --retry-review", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local o, code = util.sh(triage_cmd("--input examples/mailbox.jsonl --out " .. q(dir) .. " --delay-ms 0"))
        assert.equal(0, code, o)
        local review1 = jobs.jsonl(dir .. "/review.jsonl")
        assert.is_true(#review1 > 0)
        o, code = util.sh(triage_cmd("--resume " .. q(dir) .. " --retry-review"))
        assert.equal(0, code, o)
        assert.truthy(o:find("pass 2 sends " .. #review1 .. " review items back", 1, true), o)
        local n_t, n_r = check_exports(dir, (function()
            local t = {}
            for _, m in ipairs(jobs.jsonl("examples/mailbox.jsonl")) do t[#t + 1] = m.id end
            return t
        end)())
        assert.equal(#review1, n_r)   -- the stand-in answers the same way: they stay in review
        assert.is_true(n_t > 0)
        for _, r in ipairs(jobs.jsonl(dir .. "/review.jsonl")) do assert.equal(2, r.pass) end
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local job = st:latest_job()
        local passes = st:query("SELECT pass, reason FROM passes WHERE job_id = ? ORDER BY pass", { job.id })
        local first = st:item(job.id, review1[1].id)
        st:close()
        assert.equal(2, #passes)
        assert.equal(2, #first.outcomes)   -- both passes' outcomes are kept

        -- a fixed contract (here: a new version) for a third pass over what is still in review
        -- (beside its orders table, which its context opens)
        local fixed_dir = tmpdir()
        os.execute(("mkdir -p %s && cp examples/orders.lua examples/orders.csv %s"):format(q(fixed_dir), q(fixed_dir)))
        finally(function() os.execute("rm -rf " .. q(fixed_dir)) end)
        local fixed = fixed_dir .. "/support_ticket.lua"
        local f = assert(io.open(fixed, "wb"))
        f:write((util.read("examples/support_ticket.lua"):gsub('version = "1%.0%.0"', 'version = "1.0.1"', 1)))
        f:close()
        o, code = util.sh(triage_cmd("--resume " .. q(dir) .. " --retry-review --job " .. q(fixed)))
        assert.equal(0, code, o)
        st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local reason = st:query("SELECT reason FROM passes WHERE job_id = ? AND pass = 3", { job.id })[1].reason
        local version = st:job(job.id).contract_version
        st:close()
        assert.truthy(reason:find("1.0.1", 1, true), reason)
        assert.equal("1.0.1", version)
    end)

    it("stops with a clear message and a non-zero exit when the disk is full, never a success line", function()
        if not mailbox then return pending(why) end
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        -- a file size limit makes every write past it fail (EFBIG), as a full disk does
        local o, code = util.sh(("sh -c %s"):format(q("ulimit -f 1000; trap '' XFSZ; exec " ..
            triage_cmd(("--input %s --out %s --delay-ms 0"):format(q(mailbox), q(dir))))))
        assert.equal(1, code, o)
        assert.truthy(o:find("job store", 1, true), o)
        assert.falsy(o:find("messages: ", 1, true), o)
        -- what was committed is whole, and a resume with room finishes the job
        o, code = util.sh(triage_cmd("--resume " .. q(dir)))
        assert.equal(0, code, o)
        check_exports(dir, ids)
    end)

    it("lets the orders table catch the stand-in's misread order numbers", function()
        local src, reason = util.shared_path("corpora/support-emails/emails.jsonl", "support-emails corpus")
        if not src then return pending(reason) end
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local o, code = util.sh(triage_cmd(("--input %s --out %s --delay-ms 0 --parallel 16"):format(q(src), q(dir))))
        assert.equal(0, code, o)
        local summary = core.decode(util.read(dir .. "/summary.json"))
        assert.is_true((summary.rules_caught.order_exists or 0) >= 1)
        assert.is_true(summary.metrics.rules_pass < summary.metrics.schema_valid)
        assert.truthy(o:find("rules caught (items handed to a person): order_exists", 1, true), o)
        local caught = 0
        for _, r in ipairs(jobs.jsonl(dir .. "/review.jsonl")) do
            if r.reason.category == "rules" and r.reason.errors[1].keyword == "rule:order_exists" then
                caught = caught + 1
            end
        end
        assert.equal(summary.rules_caught.order_exists, caught)
    end)
end)
