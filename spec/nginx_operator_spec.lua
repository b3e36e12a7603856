-- jsoncontract.nginx as an operator runs it: four workers, one evidence file, the exit and
-- start hooks of the README, lua_check_client_abort, error_page 413, a TERM stop. Debian's
-- nginx on 127.0.0.1 (spec/support/nginx_server.lua) serving spec/support/nginx_operator_app.lua,
-- whose model is a location of the same nginx. The TERM spec stops nginx, so it runs last.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local nginx = require "support.nginx_server"

local busted_it = it

describe("jsoncontract.nginx run by an operator", function()
    local why = nginx.missing()
    if why then
        it("runs nginx", function() pending("nginx skipped: " .. why) end)
        return
    end

    local srv, start_error
    local function it(name, fn) -- luacheck: ignore 431
        busted_it(name, function(...)
            if start_error then return pending("nginx skipped: " .. start_error) end
            return fn(...)
        end)
    end
    local has_curl = select(2, nginx.run("command -v curl")) == 0

    local function post(path, body)
        local res, err = curl.request { url = srv.base .. path, method = "POST", body = body, timeout_ms = 20000 }
        assert(res, tostring(err))
        return res
    end

    -- The lines of `file` once there are `n` (waits up to 30 s for the flush timers).
    local function lines_of(file, n)
        local lines
        util.wait_until(function()
            lines = {}
            for line in (util.read(file) or ""):gmatch("[^\n]+") do lines[#lines + 1] = line end
            return #lines >= n
        end)
        return lines
    end

    local function metric(sample)
        local m = post("/metrics").body
        return tonumber(m:match(sample:gsub("[%p]", "%%%0") .. " (%d+)")), m
    end

    setup(function()
        local ok, err = pcall(function()
            srv = nginx.start {
                workers = 4,
                error_level = "info",
                ready = "/fixed",
                http = function(port, dir)
                    local app = 'require("support.nginx_operator_app")'
                    local gw = 'require("jsoncontract.nginx")'
                    return table.concat({
                        "lua_shared_dict jc_metrics 1m;",
                        "client_body_buffer_size 16k; client_max_body_size 32k;",
                        "lua_check_client_abort on;",
                        string.format("init_by_lua_block { %s.init{ dir = %q, port = %d } }", app, dir, port),
                        "init_worker_by_lua_block { " .. gw .. ".init_worker() }",
                        "exit_worker_by_lua_block { " .. gw .. ".exit_worker() }",
                        "server {",
                        "  listen 127.0.0.1:" .. port .. ";",
                        "  error_page 413 = @jsoncontract_too_big;",
                        "  location @jsoncontract_too_big { content_by_lua_block { " .. gw .. '.too_large("t") } }',
                        "  location @early_too_big { content_by_lua_block { " .. app .. '.gw.early:too_large("t") } }',
                        "  location = /early { error_page 413 = @early_too_big; content_by_lua_block { "
                            .. app .. '.gw.early:serve("t") } }',
                        "  location = /nokey { content_by_lua_block { " .. app .. '.gw.nokey:serve("t") } }',
                        "  location = /reask { content_by_lua_block { " .. app .. '.gw.reask:serve("reask") } }',
                        "  location ^~ /reask_model/ { content_by_lua_block { " .. app .. '.model("reask") } }',
                        "  location = /slots { content_by_lua_block { " .. app .. ".slots() } }",
                        "  location = /t { content_by_lua_block { " .. gw .. '.serve("t") } }',
                        "  location = /t2 { content_by_lua_block { " .. app .. '.gw.shared2:serve("t") } }',
                        "  location = /t3 { content_by_lua_block { " .. app .. '.gw.shared3:serve("t") } }',
                        "  location = /term { content_by_lua_block { " .. app .. '.gw.term:serve("t") } }',
                        "  location = /slow { content_by_lua_block { " .. app .. '.gw.slow:serve("t") } }',
                        "  location = /log { content_by_lua_block { " .. app .. '.gw.log:serve("t") } }',
                        "  location = /flush_probe { content_by_lua_block { " .. app .. ".flush_probe() } }",
                        "  location = /metrics { content_by_lua_block { " .. gw .. ".metrics() } }",
                        "  location ^~ /model/ { content_by_lua_block { " .. app .. ".model() } }",
                        "  location ^~ /slow_model/ { content_by_lua_block { " .. app .. ".model(true) } }",
                        '  location = /fixed { return 200 "ok"; }',
                        "}",
                    }, "\n")
                end,
            }
        end)
        if not ok then start_error = tostring(err):gsub("\n.*", "") end
    end)

    teardown(function()
        if srv and srv.stop then srv:stop() end
    end)

    it("keeps every evidence line whole when four workers append 8 KB records to one file", function()
        if not has_curl then return pending("skipped: curl (the command) not found on PATH") end
        local n = 240
        local body = srv.dir .. "/body.txt"
        local f = assert(io.open(body, "w"))
        f:write(("Order 1042 did not come. "):rep(330))   -- 8250 bytes, kept in the evidence
        f:close()
        -- one curl, 24 connections at a time: the requests spread over the workers and three
        -- gateways; a HUP then ends the four workers at once, so their twelve flushes (about
        -- 170 KB each) meet at the file
        local cfg = srv.dir .. "/urls.txt"
        f = assert(io.open(cfg, "w"))
        for i = 1, n do
            f:write('url = "', srv.base, ({ "/t", "/t2", "/t3" })[i % 3 + 1], '"\n', 'output = "/dev/null"\n')
        end
        f:close()
        nginx.run(string.format("curl -s --parallel --parallel-max 24 -X POST --data-binary @%s -K %s",
            nginx.q(body), nginx.q(cfg)))
        local old = srv:workers()
        nginx.run("kill -HUP " .. srv:pid())
        util.wait_until(function()
            for _, pid in ipairs(old) do
                if select(2, nginx.run("kill -0 " .. pid .. " 2>/dev/null")) == 0 then return false end
            end
            return true
        end)
        local lines = lines_of(srv.dir .. "/shared.jsonl", n)
        local bad = 0
        for _, line in ipairs(lines) do
            local rec = jc.decode(line)
            if not (rec and rec.request_id and rec.input) then bad = bad + 1 end
        end
        assert.same({ n, 0 }, { #lines, bad })
    end)

    it("appends a flush as whole lines in one write(2) per MB, so workers cannot split each other's lines",
        function()
        if not util.read("/proc/self/io") then return pending("skipped: no /proc/self/io here") end
        local function probe(lines, bytes)
            return jc.decode(post("/flush_probe?lines=" .. lines .. "&bytes=" .. bytes, "x").body).writes
        end
        -- a buffered FILE wrote 600 KB as a block-sized write and a tail: two writes, and another
        -- worker's append could land between them
        assert.equal(1, probe(75, 8000))
        assert.equal(1, probe(1, 10))
        -- 2.4 MB: three writes of whole lines
        assert.equal(3, probe(300, 8000))
        local n = 0
        for line in util.read(srv.dir .. "/probe.jsonl"):gmatch("[^\n]+") do
            n = n + 1
            assert(jc.decode(line), line:sub(1, 100))
        end
        assert.equal(376, n)
    end)

    it("checks each evidence file once per worker at start, naming the path and the user", function()
        local log = srv:error_log()
        local path = srv.dir .. "/no-such-dir/evidence.jsonl"
        local pattern = "jsoncontract evidence: cannot open " .. path .. " as "
        -- one line per worker started (four, and four more after the HUP above)
        local per_pid, pids = {}, 0
        for pid in log:gmatch("%] (%d+)#%d+: [^\n]*" .. pattern:gsub("[%p]", "%%%0")) do
            if not per_pid[pid] then pids = pids + 1 end
            per_pid[pid] = (per_pid[pid] or 0) + 1
        end
        assert.truthy(pids >= 4, log)
        for pid, n in pairs(per_pid) do assert.equal(1, n, pid) end
        local user = nginx.run("id -un"):match("^(%S+)")
        assert.truthy(log:find(pattern .. user .. " (uid ", 1, true), log)
        -- the writable files raise nothing
        assert.falsy(log:find("cannot open " .. srv.dir .. "/shared.jsonl", 1, true))
        -- the error log keeps NOTICE here (level info): no word about path = "log" evidence
        assert.falsy(log:find("the error log's level is", 1, true))
    end)

    it("takes in_flight down and counts a client that left as 499 client_closed", function()
        if not has_curl then return pending("skipped: curl (the command) not found on PATH") end
        local before = metric('jsoncontract_requests_total{contract="t",code="499",outcome="client_closed"}') or 0
        -- three clients that give up after 2 s on a model that takes 4 s (2 s: on a busy machine
        -- nginx may read a request late, and one read after its client left is no case of this)
        nginx.run(string.format("for i in 1 2 3; do curl -s -m 2 -o /dev/null -X POST --data hi %s/slow & done; wait",
            srv.base))
        local in_flight, text
        util.wait_until(function()
            in_flight, text = metric('jsoncontract_in_flight{contract="t"}')
            return in_flight == 0
        end)
        assert.equal(0, in_flight, text)
        assert.equal(before + 3,
            metric('jsoncontract_requests_total{contract="t",code="499",outcome="client_closed"}'), text)
        local lines = lines_of(srv.dir .. "/slow.jsonl", 3)
        assert.equal(3, #lines)
        for _, line in ipairs(lines) do
            local rec = jc.decode(line)
            assert.same({ "client_closed", 499, "t" }, { rec.outcome, rec.status, rec.contract.name })
        end
        assert.equal(3, select(2, srv:error_log():gsub("status=499 code=client_closed", "")))
    end)

    it("keeps an evidence line in the error log JSON when its text would pass nginx's 2048 bytes", function()
        local body = ("Order 1187, shoes do not fit. "):rep(280)   -- 8400 bytes
        assert.equal(200, post("/log", body).status)
        local line = util.wait_until(function() return srv:error_log():match("jsoncontract evidence: ({[^\n]*)") end)
        assert.truthy(line, "no evidence line in the error log")
        line = line:gsub(", client: 127%.0%.0%.1.*$", "")
        local rec = assert(jc.decode(line), line)
        assert.truthy(#line <= 1500, #line)
        assert.same({ "input" }, rec.truncated)
        assert.equal(body:sub(1, #rec.input), rec.input)
        assert.truthy(#rec.input > 500, #rec.input)
        assert.equal('{"ok":true}', rec.text)
    end)

    it("answers a body over client_max_body_size with the gateway's JSON 413", function()
        local res = post("/t", ("x"):rep(40000))
        assert.equal(413, res.status, res.body)
        assert.equal("application/json", res.headers["content-type"])
        local v = jc.decode(res.body)
        assert.equal("body_too_large", v.error.code)
        assert.equal(res.headers["x-request-id"], v.request_id)
        -- like every other answer (too_large("t") names the contract)
        assert.same({ "t", "1.0.0" }, { res.headers["x-contract"], res.headers["x-contract-version"] })
    end)

    it("writes one evidence record for each answer decided before the model is asked", function()
        local function req(method, path, body, id)
            local res = assert(curl.request { url = srv.base .. path, method = method, body = body,
                headers = { ["X-Request-Id"] = id }, timeout_ms = 20000 })
            return res.status
        end
        assert.same({ 400, 405, 413, 413, 400, 500 }, {
            req("POST", "/early", "", "early-empty"),
            req("GET", "/early", nil, "early-get"),
            req("POST", "/early", ("x"):rep(20000), "early-max-body"),        -- over max_body_bytes
            req("POST", "/early", ("x"):rep(40000), "early-client-max"),      -- over client_max_body_size
            req("POST", "/early", "\xff\xfe", "early-utf8"),
            req("POST", "/nokey", "Where is order 1042?", "early-nokey"),
        })
        local by_id = {}
        for _, line in ipairs(lines_of(srv.dir .. "/early.jsonl", 6)) do
            assert.falsy(line:find("jcOperatorKey", 1, true), line)
            local rec = assert(jc.decode(line), line)
            assert.is_nil(rec.headers)
            by_id[rec.request_id] = rec
        end
        local want = {
            ["early-empty"] = { 400, "empty_body", "rejected" }, ["early-get"] = { 405, "method_not_allowed", "rejected" },
            ["early-max-body"] = { 413, "body_too_large", "rejected" },
            ["early-client-max"] = { 413, "body_too_large", "rejected" },
            ["early-utf8"] = { 400, "not_utf8", "rejected" }, ["early-nokey"] = { 500, "internal_error", "error" },
        }
        for id, w in pairs(want) do
            local rec = by_id[id]
            assert(rec, "no record for " .. id)
            assert.same(w, { rec.status, rec.code, rec.outcome }, id)
            assert.same({ "t", "1.0.0" }, { rec.contract.name, rec.contract.version }, id)
            assert.truthy(type(rec.reason) == "string" and #rec.reason > 0, id)
            -- the body only with record_text, and only when it was read within the limits as UTF-8
            assert.equal(id == "early-nokey" and "Where is order 1042?" or nil, rec.input, id)
        end
        assert.truthy(by_id["early-nokey"].reason:find("JC_OPERATOR_NO_SUCH_KEY", 1, true))
    end)

    it("counts the attempts and tokens a client that left had already spent", function()
        if not has_curl then return pending("skipped: curl (the command) not found on PATH") end
        local function sample(s) return metric(s) or 0 end
        -- (the re-ask gateway serves its contract as "reask": series no other spec adds to)
        local schema = 'jsoncontract_attempts_total{contract="reask",gate="schema"}'
        local tin = 'jsoncontract_tokens_total{contract="reask",direction="input"}'
        local tout = 'jsoncontract_tokens_total{contract="reask",direction="output"}'
        local closed = 'jsoncontract_requests_total{contract="reask",code="499",outcome="client_closed"}'
        local before = { sample(schema), sample(tin), sample(tout), sample(closed) }
        -- the first attempt fails the schema at once (10 + 5 tokens); the client leaves during the
        -- re-ask, which takes 4 s (after 3 s: the first attempt has that long on a busy machine)
        nginx.run("curl -s -m 3 -o /dev/null -X POST --data hi " .. srv.base .. "/reask")
        local now
        util.wait_until(function()
            now = { sample(schema), sample(tin), sample(tout), sample(closed) }
            return now[4] > before[4]
        end)
        assert.same({ before[1] + 1, before[2] + 10, before[3] + 5, before[4] + 1 }, now)
    end)

    it("forgets the in_flight requests of a worker killed with -9, and warns once per worker while draining",
        function()
        if not has_curl then return pending("skipped: curl (the command) not found on PATH") end
        local done = srv.dir .. "/kill9.done"
        -- eight requests on a model that takes 4 s, in the background
        nginx.run(string.format("(for i in 1 2 3 4 5 6 7 8; do curl -s -m 15 -o /dev/null -X POST --data hi %s/slow & "
            .. "done; wait; touch %s) >/dev/null 2>&1 &", srv.base, nginx.q(done)))
        local in_flight = 0
        util.wait_until(function()
            in_flight = metric('jsoncontract_in_flight{contract="t"}') or 0
            return in_flight == 8
        end)
        assert.equal(8, in_flight)
        local victim
        for pid, n in pairs(jc.decode(post("/slots").body)) do
            if n > 0 then victim = tonumber(pid) end
        end
        assert.truthy(victim)
        local old = srv:workers()
        nginx.run("kill -9 " .. victim)
        -- the master starts a replacement
        local replaced
        util.wait_until(function()
            for _, pid in ipairs(srv:workers()) do
                local known = false
                for _, o in ipairs(old) do known = known or o == pid end
                if not known then replaced = pid end
            end
            return replaced
        end)
        assert.truthy(replaced, "no replacement worker")
        -- a reload while the others still wait: their workers drain them and then write evidence
        -- without a flush timer
        nginx.run("kill -HUP " .. srv:pid())
        assert.truthy(util.wait_until(function() return util.read(done) end), "the requests did not end")
        local text
        util.wait_until(function()
            in_flight, text = metric('jsoncontract_in_flight{contract="t"}')
            return in_flight == 0
        end)
        assert.equal(0, in_flight, text)
        assert.is_nil(jc.decode(post("/slots").body)[tostring(victim)])
        -- said once per draining worker, not once per record
        local per_pid = {}
        for pid in srv:error_log():gmatch("%] (%d+)#%d+: [^\n]*no flush timer") do
            per_pid[pid] = (per_pid[pid] or 0) + 1
        end
        -- (a worker that drained before its records came needed no such write: none may be said)
        for pid, n in pairs(per_pid) do assert.equal(1, n, pid) end
    end)

    it("writes every buffered evidence line when nginx is stopped with TERM", function()
        for _ = 1, 6 do assert.equal(200, post("/term", "hello").status) end
        local file = srv.dir .. "/term.jsonl"
        assert.equal("", util.read(file))   -- made by init_worker's check; no flush yet (flush_ms = 10 min)
        local dir = srv.dir
        finally(function() nginx.run("rm -rf " .. nginx.q(dir)) end)
        srv:stop(true)   -- kill -TERM <master>, waits for it to exit
        local lines = {}
        for line in (util.read(file) or ""):gmatch("[^\n]+") do lines[#lines + 1] = assert(jc.decode(line)) end
        assert.equal(6, #lines)
        assert.falsy(util.read(dir .. "/error.log"):find("[emerg]", 1, true))
    end)
end)
