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
end)
