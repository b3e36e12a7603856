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

    -- The lines of `file` once there are `n` (waits up to 5 s for the flush timers).
    local function lines_of(file, n)
        local lines
        for _ = 1, 100 do
            lines = {}
            for line in (util.read(file) or ""):gmatch("[^\n]+") do lines[#lines + 1] = line end
            if #lines >= n then break end
            nginx.run("sleep 0.05")
        end
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
                        "  location @jsoncontract_too_big { content_by_lua_block { " .. gw .. ".too_large() } }",
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
        for _ = 1, 100 do
            local gone = true
            for _, pid in ipairs(old) do
                if select(2, nginx.run("kill -0 " .. pid .. " 2>/dev/null")) == 0 then gone = false end
            end
            if gone then break end
            nginx.run("sleep 0.05")
        end
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
    end)

    it("takes in_flight down and counts a client that left as 499 client_closed", function()
        if not has_curl then return pending("skipped: curl (the command) not found on PATH") end
        local before = metric('jsoncontract_requests_total{contract="t",code="499",outcome="client_closed"}') or 0
        -- three clients that give up after 0.5 s on a model that takes 4 s
        nginx.run(string.format("for i in 1 2 3; do curl -s -m 0.5 -o /dev/null -X POST --data hi %s/slow & done; wait",
            srv.base))
        local in_flight, text
        for _ = 1, 60 do
            in_flight, text = metric('jsoncontract_in_flight{contract="t"}')
            if in_flight == 0 then break end
            nginx.run("sleep 0.05")
        end
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
        local line
        for _ = 1, 50 do
            line = srv:error_log():match("jsoncontract evidence: ({[^\n]*)")
            if line then break end
            nginx.run("sleep 0.05")
        end
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
