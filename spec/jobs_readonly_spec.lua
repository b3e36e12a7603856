-- A finished job on storage this process cannot write (a read-only folder; as root the commands
-- run as `nobody`, for whom it is): `status`, `export` and the review desk read it (SQLite
-- read-only, immutable when no write-ahead log is left), a worker and a decision are refused,
-- and nothing in it changes.
local util = require "support.util"
local jobs = require "support.jobs"

local LUA = util.LUA
local q = jobs.q

describe("a finished job on read-only storage", function()
    local dir, as

    lazy_setup(function()
        local root = util.sh("env -u LD_PRELOAD id -u"):match("^0%s") ~= nil
        as = root and "runuser -u nobody -- " or ""
        dir = os.tmpname()
        os.remove(dir)
        os.execute("mkdir -p " .. q(dir) .. " && chmod 755 " .. q(dir))
    end)
    lazy_teardown(function()
        os.execute("chmod -R u+w " .. q(dir) .. " && rm -rf " .. q(dir))
    end)

    local function jc(args)
        -- absolute paths: the command may run as another user, from the same folder
        local cpath = os.getenv("JC_TEST_CPATH") or ("build/" .. LUA .. "/?.so")
        if cpath:sub(1, 1) ~= "/" then cpath = util.sh("pwd"):gsub("%s+$", "") .. "/" .. cpath end
        return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %senv LUA_CPATH=%s %s bin/jsoncontract %s")
            :format(as, q(cpath .. ";;"), LUA, args)
    end

    it("is read by status and export, refused by a worker, and left as it was", function()
        local job = dir .. "/job"
        local o, code = util.sh(jc(("triage --input examples/mailbox.jsonl --limit 4 --out %s --delay-ms 0")
            :format(q(job))):gsub("runuser %-u nobody %-%- ", ""))
        assert.equal(0, code, o)
        os.execute("chmod -R a+rX,a-w " .. q(job))
        local before = util.sh("cd " .. q(job) .. " && stat -c '%n %s %.9Y' . * && sha256sum *")
        -- a user who can write it (root) would test nothing: make sure this one cannot
        local _, can = util.sh(as .. "sh -c " .. q("touch " .. q(job .. "/probe") .. " 2>/dev/null"))
        if can == 0 then return pending("read-only storage: this user can write the folder anyway") end

        o, code = util.sh(jc("status " .. q(job)))
        assert.equal(0, code, o)
        assert.truthy(o:find("4 items: 4 decided", 1, true), o)

        local out = dir .. "/exported"
        os.execute("mkdir -p " .. q(out) .. " && chmod 777 " .. q(out))
        o, code = util.sh(jc(("export %s --out %s"):format(q(job), q(out))))
        assert.equal(0, code, o)
        assert.equal(4, #jobs.jsonl(out .. "/accepted.jsonl") + #jobs.jsonl(out .. "/review.jsonl"))

        -- fail closed: a worker cannot record anything here, and says why
        o, code = util.sh(jc("worker --store " .. q(job .. "/job.sqlite")))
        assert.equal(1, code, o)
        assert.truthy(o:find("read-only", 1, true), o)

        -- the desk serves the queue and says a decision cannot be recorded (it cannot: 500)
        local why = require("jsoncontract.review.serve").missing()
        if not why then
            local curl = require "jsoncontract.transport.curl"
            local port = util.closed_port()
            local log = dir .. "/desk.log"
            local pid = jobs.spawn(jc(("review %s --listen 127.0.0.1:%d"):format(q(job), port)), log)
            finally(function()
                -- the desk under runuser is its child: stop it (it stops its nginx), then runuser
                for _, child in ipairs(jobs.children(pid)) do os.execute("kill -TERM " .. child .. " 2>/dev/null") end
                if not jobs.wait_gone(pid, 10) then os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
            end)
            local base, page = "http://127.0.0.1:" .. port
            util.wait_until(function()
                page = curl.request { url = base .. "/", timeout_ms = 5000 }
                return page and page.status == 200
            end, 60)
            assert.truthy(page and page.status == 200, util.read(log))
            assert.truthy(page.body:find("a decision cannot be recorded", 1, true), page.body)
            local item_path = page.body:match('href="(/item/[^"?]+)')
            local item = assert(curl.request { url = base .. item_path, timeout_ms = 5000 })
            local res = assert(curl.request { url = base .. item_path, method = "POST", timeout_ms = 5000,
                headers = { ["Content-Type"] = "application/x-www-form-urlencoded", Origin = base },
                body = "action=needs_customer&csrf=" .. item.body:match('name="csrf" value="(%x+)"')
                    .. "&seen=" .. item.body:match('name="seen" value="(%d+)"') })
            assert.equal(500, res.status, res.body)
            assert.truthy(res.body:find("read-only", 1, true), res.body)
            os.execute("kill -TERM " .. pid) -- (runuser passes TERM on to the desk)
            assert.is_true(jobs.wait_gone(pid, 10), util.read(log))
        end

        assert.equal(before, (util.sh("cd " .. q(job) .. " && stat -c '%n %s %.9Y' . * && sha256sum *")))
    end)
end)
