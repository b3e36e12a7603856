-- jsoncontract.jobs.export's one way to write a file: temp file, fsync, rename, fsync of the
-- folder (core.fsync). The order of the system calls is read from strace, which runs the
-- writer in a subprocess; without strace (or without ptrace) that spec says skipped.
local core = require "jsoncontract.core"
local export = require "jsoncontract.jobs.export"
local util = require "support.util"

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

describe("jsoncontract.jobs.export", function()
    local dir
    before_each(function() dir = util.sh("mktemp -d"):match("^(%S+)") end)
    after_each(function() if dir then util.sh("rm -rf " .. q(dir)) end end)

    describe("core.fsync()", function()
        it("syncs a file and a folder, and says why it cannot", function()
            local f = assert(io.open(dir .. "/a", "wb"))
            f:write("x")
            f:close()
            assert.is_true(core.fsync(dir .. "/a"))
            assert.is_true(core.fsync(dir))
            local ok, msg = core.fsync(dir .. "/missing")
            assert.is_nil(ok)
            assert.equal("cannot open " .. dir .. "/missing: No such file or directory", msg)
            assert.has_error(function() core.fsync() end)
        end)
    end)

    describe("write_atomic()", function()
        it("writes the whole file and leaves no temporary file", function()
            assert.is_true(export.write_atomic(dir .. "/t.jsonl", function(write)
                write("a\n") write("b\n")
                return true
            end))
            assert.equal("a\nb\n", util.read(dir .. "/t.jsonl"))
            assert.equal("t.jsonl\n", util.sh("ls -A " .. q(dir)))
        end)

        it("fsyncs the file before the rename and its folder after it", function()
            local _, code = util.sh("command -v strace")
            if code ~= 0 then return pending("skipped: strace (not on PATH)") end
            local cpath = os.getenv("JC_TEST_CPATH") or package.cpath:match("^[^;]+")
            local script = string.format([[
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = %q .. ";" .. package.cpath
assert(require("jsoncontract.jobs.export").write_atomic(%q, function(w) w("x") return true end))]],
                cpath, dir .. "/out.json")
            local f = assert(io.open(dir .. "/w.lua", "wb"))
            f:write(script)
            f:close()
            -- strace itself never gets an ASan run's preload; the Lua it starts does, without
            -- LeakSanitizer, which cannot work under ptrace.
            local out
            out, code = util.sh(string.format("env -u LD_PRELOAD strace -f -qq -o %s -e trace=openat,open,fsync,"
                .. "rename,renameat,renameat2 env LD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0 %s %s", q(dir .. "/trace"),
                q(os.getenv("LD_PRELOAD") or ""), util.LUA, q(dir .. "/w.lua")))
            if code ~= 0 and out:find("ptrace", 1, true) then return pending("skipped: strace (" .. out .. ")") end
            assert.equal(0, code, out)
            assert.equal("x", util.read(dir .. "/out.json"))
            -- The calls on our paths, in order: the descriptor each open gave names the fsync.
            local fds, seen = {}, {}
            for line in (util.read(dir .. "/trace") or ""):gmatch("[^\n]+") do
                local path, fd = line:match('open[at]*%([^"]*"([^"]+)".-%)%s+=%s+(%d+)')
                if path then fds[fd] = path end
                local sfd = line:match("fsync%((%d+)%)%s+=%s+0")
                if sfd and fds[sfd] then seen[#seen + 1] = "fsync " .. fds[sfd]:gsub("%.tmp%-%d+$", ".tmp") end
                local from, to = line:match('rename[at2]*%(.-"([^"]+)".-"([^"]+)"')
                if from then seen[#seen + 1] = "rename " .. from:gsub("%.tmp%-%d+$", ".tmp") .. " " .. to end
            end
            local want = dir .. "/out.json"
            assert.same({ "fsync " .. want .. ".tmp", "rename " .. want .. ".tmp " .. want, "fsync " .. dir }, seen)
        end)

        it("says why it cannot write, and leaves nothing behind", function()
            local ok, err = export.write_atomic(dir .. "/no/such/t.jsonl", function() return true end)
            assert.is_nil(ok)
            assert.same({ "store", "export_failed" }, { err.category, err.kind })
            assert.truthy(err.message:find("cannot write " .. dir .. "/no/such/t.jsonl", 1, true))
            assert.equal("", util.sh("ls -A " .. q(dir)))
        end)
    end)

    describe("write() and summary() over a store", function()
        local store = require "jsoncontract.jobs.store"
        local commands = require "jsoncontract.cli.job_commands"

        -- A SQLite job of n items; items 1..decided get an outcome (every third to review),
        -- one evidence line each.
        local function job_with(path, n, decided)
            local st = assert(store.open(path))
            local items = {}
            for i = 1, n do
                items[i] = { item_id = "m" .. i, seq = i, input_json = "{}", input_digest = "d" .. i }
            end
            local job = assert(st:create_job({ contract_name = "c", provider = "p", model = "m" }, items))
            assert(st:lease(job, "w1", decided, 60))
            for i = 1, decided do
                local review = i % 3 == 0
                assert(st:record_outcome(job, "m" .. i, { pass = 1, status = review and "human_review" or "accepted",
                    reason_category = review and "rules" or nil, reason_kind = review and "rule_failed" or nil,
                    record_json = '{"id":"m' .. i .. '"}', worker = "w1", evidence = { '{"n":' .. i .. '}' } }))
            end
            return st, job
        end

        local function lines(path)
            local n = 0
            for _ in io.lines(path) do n = n + 1 end
            return n
        end

        it("reads one snapshot: outcomes committed between its reads change none of its files", function()
            local st, job = job_with(dir .. "/job.sqlite", 10, 4)
            local other = assert(store.open(dir .. "/job.sqlite", { create = false }))
            finally(function() st:close() other:close() end)
            -- another worker commits two more outcomes after the export read the items, before
            -- it reads the evidence and the counts
            local each_evidence = st.each_evidence
            st.each_evidence = function(self, ...)
                assert(other:lease(job, "w2", 2, 60))
                for _, id in ipairs { "m5", "m7" } do
                    assert(other:record_outcome(job, id, { pass = 1, status = "accepted", record_json = '{"id":"'
                        .. id .. '"}', worker = "w2", evidence = { "{}" } }))
                end
                return each_evidence(self, ...)
            end
            local out = dir .. "/out"
            os.execute("mkdir -p " .. q(out))
            local summary = assert(export.write(st, job, out))
            assert.equal(3, lines(out .. "/accepted.jsonl"))
            assert.same({ 3, 1, 6, 4 }, { summary.accepted, summary.human_review, summary.pending,
                summary.exchanges })
            assert.equal(4, lines(out .. "/evidence.jsonl"))
            local file = core.decode(util.read(out .. "/summary.json"))
            assert.same({ 3, 4 }, { file.accepted, file.exchanges })
            -- the snapshot ended with the export: the next one sees the new outcomes
            st.each_evidence = nil
            assert.equal(5, assert(export.write(st, job, out)).accepted)
        end)

        it("counts an item a new review pass sent back as not decided, in summary, export and status", function()
            local st, job = job_with(dir .. "/job.sqlite", 9, 9)  -- m3, m6, m9 to review
            finally(function() st:close() end)
            local pass, n = assert(st:new_review_pass(job, "again"))
            assert.same({ 2, 3 }, { pass, n })
            assert(st:lease(job, "w2", 1, 60))  -- one in flight, two waiting, as after a kill mid-pass
            local c = st:counts(job)
            assert.same({ 6, 6, 0, 1, 2 }, { c.done, c.accepted, c.human_review, c.leased, c.pending })
            local out = dir .. "/out"
            os.execute("mkdir -p " .. q(out))
            local summary = assert(export.write(st, job, out))
            assert.same({ 9, 6, 0, 3 }, { summary.items, summary.accepted, summary.human_review, summary.pending })
            assert.equal(0, lines(out .. "/review.jsonl"))
            assert.equal(6, lines(out .. "/accepted.jsonl"))
            local said = {}
            local code = commands.status({ dir = dir }, { stdout = { write = function(_, ...)
                for _, x in ipairs { ... } do said[#said + 1] = x end
            end }, stderr = io.stderr })
            assert.equal(0, code)
            said = table.concat(said)
            assert.truthy(said:find("9 items: 6 decided (6 accepted, 0 to review), 1 in flight, 2 waiting", 1, true),
                said)
        end)
    end)
end)
