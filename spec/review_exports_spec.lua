-- A decision on the desk reaches the job folder's exports without a manual step: the queue page
-- says when (when the desk stops), and stopping the desk (SIGINT) writes accepted.jsonl,
-- review.jsonl, evidence.jsonl and summary.json through the one writer `export` uses.
-- Without nginx or its Lua module the spec says skipped, by name.
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local jobs = require "support.jobs"
local review_job = require "support.review_job"

local q = jobs.q
local function run(cmd) return util.sh("env -u LD_PRELOAD sh -c " .. q(cmd)) end

local function missing_server()
    local why = require("jsoncontract.review.serve").missing()
    if why then return why end
    if not util.read("build/luajit/jsoncontract/core.so") then
        return "LuaJIT build of the core not found at build/luajit/jsoncontract/core.so (make LUA=luajit)"
    end
    return nil
end

local function request(method, url, body, headers)
    local res, err = curl.request { url = url, method = method, body = body, headers = headers, timeout_ms = 10000 }
    assert(res, tostring(err))
    return res
end

describe("jsoncontract review DIR: decisions reach the exports", function()
    local why = missing_server()
    if why then
        it("exports the decisions when the desk stops", function() pending("review desk skipped: " .. why) end)
        return
    end

    it("says so on the page, and writes them when the desk stops", function()
        local dir = run("mktemp -d"):match("^(%S+)")
        local port = util.closed_port()
        local log, rcfile, pidfile = dir .. "/desk.log", dir .. "/desk.rc", dir .. "/desk.pid"
        local pid
        finally(function()
            if pid and not util.read(rcfile) then run("kill -KILL " .. pid) end
            run("rm -rf " .. q(dir))
        end)
        review_job.build(dir, ".")
        run(string.format("(%s bin/jsoncontract review %s --listen 127.0.0.1:%d >%s 2>&1 & echo $! >%s; wait $!; "
            .. "echo $? >%s) >/dev/null 2>&1 &", q(util.LUA), q(dir), port, q(log), q(pidfile), q(rcfile)))
        local base = "http://127.0.0.1:" .. port
        util.wait_until(function()
            pid = (util.read(pidfile) or ""):match("%d+")
            return pid and (util.read(log) or ""):find("files in", 1, true)
                and curl.request { url = base .. "/desk.css", timeout_ms = 5000 } or util.read(rcfile)
        end, 60)
        assert.truthy(pid, util.read(log))

        local page = request("GET", base .. "/")
        assert.equal(200, page.status, page.body)
        assert.truthy(page.body:find("reach " .. dir .. "&#39;s accepted.jsonl", 1, true)
            or page.body:find("reach " .. dir .. "'s accepted.jsonl", 1, true), page.body)
        assert.truthy(page.body:find("when the desk stops", 1, true), page.body)

        -- m5 (the model could not settle it): "needs the customer"
        local item = request("GET", base .. "/item/m5")
        assert.equal(200, item.status)
        local body = "action=needs_customer&csrf=" .. item.body:match('name="csrf" value="(%x+)"')
            .. "&seen=" .. item.body:match('name="seen" value="(%d+)"')
        local res = request("POST", base .. "/item/m5", body, { ["Content-Type"] = "application/x-www-form-urlencoded",
            Origin = base })
        assert.equal(303, res.status, res.body)
        -- not yet in the exports: the page said when
        for _, r in ipairs(jobs.jsonl(dir .. "/review.jsonl")) do assert.is_nil(r.decided_by, r.id) end

        run("kill -INT " .. pid)
        util.wait_until(function() return (util.read(rcfile) or ""):match("%d+") end, 60)
        assert.equal("130", (util.read(rcfile) or ""):match("%d+"), util.read(log))
        local text = util.read(log)
        assert.truthy(text:find("exported job job-spec to " .. dir, 1, true), text)
        local found
        for _, r in ipairs(jobs.jsonl(dir .. "/review.jsonl")) do
            if r.id == "m5" then found = r end
        end
        assert.truthy(found, "m5 is not in review.jsonl")
        assert.same({ "human", "needs_customer" }, { found.decided_by, found.decision })
        assert.truthy(util.read(dir .. "/summary.json"))
    end)
end)
