-- jsoncontract.nginx, the contract gateway, in a real nginx: Debian's nginx with
-- lua-nginx-module (one worker, 127.0.0.1, a temp prefix; spec/support/nginx_server.lua) in
-- front of three stand-in models (bin/jsoncontract-standin: a prompt one, a slow one with a 3 s
-- answer delay, and one only the pool spec talks to), serving spec/support/nginx_gateway_app.lua.
-- Everything is stopped by pid in teardown, also when a spec fails. Nothing here times anything:
-- "does not block" is shown by what another location sees while a request waits.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local nginx = require "support.nginx_server"

local KEY = "jcTestKey-4f9a2c7e1b9d"
local KEY_ENV = "JC_GATEWAY_TEST_KEY"
local MAIL_1042 = "Hello, my order 1042: the courier did not come, urgent, I leave tomorrow."
local MAIL_1187 = "I want to return order 1187, the shoes do not fit."
local PERSON = "Your request has been passed to a person, who will get back to you."
local RETRY = "The answer could not be processed right now. Please try again."

-- Every response body and header value seen, to look for the key at the end.
local seen = {}

local busted_it = it

describe("jsoncontract.nginx gateway in nginx", function()
    local why = nginx.missing()
    if why then
        it("runs nginx", function() pending("nginx skipped: " .. why) end)
        return
    end

    local srv, standins, ports, tls_port = nil, {}, {}, nil
    -- When nginx or a stand-in cannot start, every spec below says skipped, with the reason.
    local start_error
    local function it(name, fn) -- luacheck: ignore 431
        busted_it(name, function(...)
            if start_error then return pending("nginx skipped: " .. start_error) end
            return fn(...)
        end)
    end
    local root = nginx.run("pwd"):match("^(%S+)")
    local have_tls = select(2, nginx.run("command -v openssl")) == 0

    local function http(method, path, body, headers)
        local res, err = curl.request { url = srv.base .. path, method = method, body = body, headers = headers,
            timeout_ms = 30000 }
        assert(res, tostring(err))
        seen[#seen + 1] = res.body
        for k, v in pairs(res.headers) do seen[#seen + 1] = k .. ": " .. v end
        return res
    end
    local function post(path, body, headers) return http("POST", path, body, headers) end
    local function json(res) return (jc.decode(res.body)) end

    local function stats(name)
        local res = assert(curl.request { url = "http://127.0.0.1:" .. ports[name] .. "/stats", timeout_ms = 5000 })
        return jc.decode(res.body)
    end

    local function write_bumped(dir, version, name)
        name = name or "bumped"
        local f = assert(io.open(dir .. "/" .. name .. ".lua", "w"))
        f:write(string.format([[
local t = dofile(%q)
return { name = %q, version = %q, schema = t.schema, instructions = "Sort the mail into a queue." }
]], root .. "/examples/support_ticket.lua", name, version))
        f:close()
    end

    setup(function()
        tls_port = util.closed_port()
        local ok, err = pcall(function()
            for _, name in ipairs { "standin", "slow", "pool" } do
                local pipe, port = nginx.start_standin(name == "slow" and { delay_ms = 3000 } or nil)
                standins[name], ports[name] = pipe, port
            end
            srv = nginx.start {
                main = "env " .. KEY_ENV .. "=" .. KEY .. ";",
                error_level = "notice",
                ready = "/fixed",
                http = function(port, dir)
                    write_bumped(dir, "1.0.0")
                    write_bumped(dir, "1.0.0", "hup")
                    if have_tls then
                        nginx.run(string.format("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                            .. "-addext subjectAltName=IP:127.0.0.1 -keyout %s/tls.key -out %s/tls.pem", dir, dir))
                    end
                    local app = 'require("support.nginx_gateway_app")'
                    local gw = 'require("jsoncontract.nginx")'
                    local lines = {
                        "lua_shared_dict jc_metrics 1m; lua_shared_dict jc_spec 64k;",
                        "client_body_buffer_size 1k; client_max_body_size 1m;",
                        string.format("init_by_lua_block { %s.init{ root = %q, dir = %q, standin = %d, slow = %d, "
                            .. "pool = %d, port = %d, key_env = %q } }", app, root, dir, ports.standin,
                            ports.slow, ports.pool, port, KEY_ENV),
                        "server {",
                        "  listen 127.0.0.1:" .. port .. ";",
                        "  location = /triage { content_by_lua_block { " .. gw .. '.serve("support_ticket") } }',
                        "  location = /triage_file { client_body_in_file_only clean; content_by_lua_block { "
                            .. gw .. '.serve("support_ticket") } }',
                        "  location = /bumped { content_by_lua_block { " .. gw .. '.serve("bumped") } }',
                        "  location = /hup { content_by_lua_block { " .. app .. '.gw.hup:serve("hup") } }',
                        "  location = /loads { content_by_lua_block { " .. app .. ".loads() } }",
                        "  location = /handover { content_by_lua_block { " .. app .. ".handover() } }",
                        "  location = /rules { content_by_lua_block { " .. app .. '.gw.rules:serve("support_ticket") } }',
                        "  location = /nocontext { content_by_lua_block { " .. app
                            .. '.gw.nocontext:serve("support_ticket") } }',
                        "  location = /slow { content_by_lua_block { " .. app .. '.gw.slow:serve("slow_ticket") } }',
                        "  location = /pooled { content_by_lua_block { " .. app .. '.gw.pool:serve("pooled_ticket") } }',
                        "  location = /echo { content_by_lua_block { " .. app .. '.gw.echo:serve("echo_ticket") } }',
                        "  location ^~ /echo401/ { default_type application/json; return 401 "
                            .. [['{"error":{"message":"Incorrect API key provided: $http_authorization (request $http_x_request_id)",]]
                            .. [["type":"invalid_request_error","code":"invalid_api_key"}}'; }]],
                        "  location = /metrics { content_by_lua_block { " .. gw .. ".metrics() } }",
                        "  location = /exact { content_by_lua_block { " .. app .. '.gw.exact:serve("exact") } }',
                        "  location ^~ /exact_model/ { content_by_lua_block { " .. app .. ".exact_model() } }",
                        '  location = /fixed { return 200 "ok"; }',
                        "  location = /phases { content_by_lua_block { " .. app .. ".phases() } "
                            .. "log_by_lua_block { " .. app .. ".log() } }",
                        "  location = /ask_default { content_by_lua_block { " .. app .. '.ask("default") } }',
                        "  location = /ask_curl { content_by_lua_block { " .. app .. '.ask("curl") } }',
                        "  location = /tls { content_by_lua_block { " .. app .. ".tls() } }",
                        "}",
                    }
                    if have_tls then
                        -- TLS 1.3: its session tickets come after the handshake
                        lines[#lines + 1] = "lua_ssl_trusted_certificate " .. dir .. "/tls.pem; "
                            .. "lua_ssl_protocols TLSv1.2 TLSv1.3;"
                        lines[#lines + 1] = "server { listen 127.0.0.1:" .. tls_port .. " ssl; ssl_certificate "
                            .. dir .. "/tls.pem; ssl_certificate_key " .. dir .. "/tls.key; "
                            .. "ssl_session_cache shared:SSL:1m; ssl_protocols TLSv1.2 TLSv1.3; "
                            .. "location / { return 200 \"$ssl_session_reused\"; } }"
                    end
                    return table.concat(lines, "\n")
                end,
            }
        end)
        if not ok then
            for _, h in pairs(standins) do util.stop_standin(h) end
            standins = {}
            start_error = tostring(err):gsub("\n.*", "")
        end
    end)

    teardown(function()
        for _, h in pairs(standins) do util.stop_standin(h) end
        if srv and srv.stop then srv:stop() end
    end)

    describe("serve(): the answer", function()
        it("is 200 with the checked value, the request id and the contract version", function()
            local res = post("/triage", MAIL_1187, { ["X-Request-Id"] = "spec-req-1187" })
            assert.equal(200, res.status, res.body)
            local v = json(res)
            assert.same({ "return", "1187", false }, { v.intent, v.order_id, v.urgent })
            assert.same({ "spec-req-1187", "support_ticket", "1.0.0", "1", "application/json" },
                { res.headers["x-request-id"], res.headers["x-contract"], res.headers["x-contract-version"],
                  res.headers["x-attempts"], res.headers["content-type"] })
        end)

        it("is 200 with the checked value as JSON text: the body is what contract:check_json accepted", function()
            local res = post("/triage", MAIL_1187)
            assert.equal(200, res.status, res.body)
            -- what the stand-in answered for this mail, through the same contract
            local ticket = dofile(root .. "/examples/support_ticket.lua").contract
            assert.is_nil(res.body:find("^%s"))
            assert.same(ticket:check(res.body:gsub("\n$", ""), { context = { orders = {
                exists = function() return true end, customer = function() return nil end } } }), json(res))
        end)

        it("is 200 with the model's JSON exactly as written, inside an unwrapped fence, big integers kept", function()
            local app = require "support.nginx_gateway_app"
            local res = post("/exact", "Copy order A-1.")
            assert.equal(200, res.status, res.body)
            assert.equal(app.EXACT_JSON .. "\n", res.body)
            assert.truthy(res.body:find("123456789012345678901234567890", 1, true))
            assert.same({ "exact", "1.0.0", "1", "application/json" }, { res.headers["x-contract"],
                res.headers["x-contract-version"], res.headers["x-attempts"], res.headers["content-type"] })
        end)

        it("is 200 after a re-ask (the 1042 mail: Lieferung/ja, then the right ticket)", function()
            local res = post("/triage", MAIL_1042)
            assert.equal(200, res.status, res.body)
            assert.same({ "delivery", "1042", true }, { json(res).intent, json(res).order_id, json(res).urgent })
            assert.equal("2", res.headers["x-attempts"])
            -- no usable request id sent: nginx's $request_id (32 hex digits)
            assert.truthy(res.headers["x-request-id"]:match("^%x+$") and #res.headers["x-request-id"] == 32)
        end)

        it("is 202 with the plain message and an item id when the model refuses", function()
            local res = post("/triage", "[[refuse]] Tell me a secret about order 1042.")
            assert.equal(202, res.status, res.body)
            local v = json(res)
            assert.same({ "handed_over", PERSON }, { v.status, v.message })
            assert.truthy(v.item_id:match("^%x+$") and #v.item_id == 32, v.item_id)
            assert.equal(res.headers["x-request-id"], v.request_id)
        end)

        it("is 500 context_missing, the model never asked, when a gateway from new has no context for rules",
            function()
            local res = post("/nocontext", MAIL_1187, { ["X-Request-Id"] = "spec-nocontext-1" })
            assert.equal(500, res.status, res.body)
            assert.equal("context_missing", json(res).error.code, res.body)
            assert.truthy(json(res).error.message:find("no context", 1, true), res.body)
            assert.is_nil(res.headers["x-attempts"])
            local log = srv:error_log()
            assert.truthy(log:find("request_id=spec-nocontext-1 item_id=- contract=support_ticket status=500 "
                .. "code=context_missing: the contract support_ticket 1.0.0 has rules (order_exists, order_of_sender) "
                .. "and the gateway (new{context = ...}) gives them no context", 1, true), log)
        end)

        it("is 202 when a business rule sends the ticket to a person, and calls on_handover", function()
            local res = post("/rules", MAIL_1187, { ["X-Request-Id"] = "spec-rules-1" })
            assert.equal(202, res.status, res.body)
            assert.same({ "handed_over", PERSON }, { json(res).status, json(res).message })
            local item = json(http("GET", "/handover"))
            assert.same({ json(res).item_id, "spec-rules-1", "support_ticket", "rules", "rule_failed", MAIL_1187 },
                { item.item_id, item.request_id, item.contract, item.category, item.kind, item.input })
        end)

        it("is 502 no_valid_answer with user-safe words for a truncated reply", function()
            local res = post("/triage", "[[truncate]] My order 1042 never came, urgent.")
            assert.equal(502, res.status, res.body)
            local v = json(res)
            assert.same({ "no_valid_answer", RETRY }, { v.error.code, v.error.message })
            assert.truthy(v.item_id)
            -- the technical reason only in the log
            assert.falsy(res.body:find("truncat", 1, true))
            assert.truthy(srv:error_log():find("item_id=" .. v.item_id .. " contract=support_ticket status=502 "
                .. "code=no_valid_answer: truncated/max_tokens", 1, true), srv:error_log())
        end)

        it("is 502 model_unavailable when the provider says 401 and echoes the key", function()
            local res = post("/echo", MAIL_1187, { ["X-Request-Id"] = "spec-echo-7" })
            assert.equal(502, res.status, res.body)
            assert.same({ "model_unavailable", RETRY }, { json(res).error.code, json(res).error.message })
            -- the provider got the client's request id (its 401 names it; the log keeps it)
            assert.truthy(srv:error_log():find("Bearer [redacted] (request spec-echo-7)", 1, true), srv:error_log())
        end)

        it("is 503 model_busy with the provider's Retry-After when it stays at 503 (or 429) through the retries",
            function()
            for _, code in ipairs { 503, 429 } do
                local res = post("/triage", "[[status " .. code .. "]] My order 1042 never came, urgent.")
                assert.equal(503, res.status, res.body)
                assert.same({ "model_busy", RETRY }, { json(res).error.code, json(res).error.message })
                assert.equal("1", res.headers["retry-after"], code)
            end
        end)
    end)

    describe("serve(): the request body", function()
        it("reads a body nginx spooled to a file (over client_body_buffer_size)", function()
            local mail = MAIL_1187 .. " " .. string.rep("Thank you. ", 400)
            assert.truthy(#mail > 4096)
            local res = post("/triage", mail)
            assert.equal(200, res.status, res.body)
            assert.equal("1187", json(res).order_id)
        end)

        it("reads a body in a file with client_body_in_file_only", function()
            local res = post("/triage_file", MAIL_1187)
            assert.equal(200, res.status, res.body)
            assert.equal("1187", json(res).order_id)
        end)

        for _, c in ipairs {
            { "an empty body", "", 400, "empty_body" },
            { "a body of whitespace only", "  \r\n\t ", 400, "empty_body" },
            { "a body over max_body_bytes (8192)", string.rep("a", 9000), 413, "body_too_large" },
            { "a body that is not UTF-8", "order 1042 \255\254", 400, "not_utf8" },
        } do
            it("answers " .. c[1] .. " with " .. c[3] .. " " .. c[4] .. " in JSON", function()
                local res = post("/triage", c[2])
                assert.equal(c[3], res.status, res.body)
                assert.equal("application/json", res.headers["content-type"])
                assert.equal(c[4], json(res).error.code)
                assert.truthy(json(res).error.message)
            end)
        end

        it("answers GET with 405 and Allow: POST", function()
            local res = http("GET", "/triage")
            assert.same({ 405, "POST", "method_not_allowed" }, { res.status, res.headers.allow, json(res).error.code })
        end)
    end)

    describe("non-blocking by default", function()
        it("picks curl in init_by_lua, cosockets in content and timer phases, refuses the log phase", function()
            http("GET", "/phases")
            local v = json(http("GET", "/phases"))
            assert.same({ "curl", "openresty", "openresty" }, { v.init, v.content, v.timer })
            assert.truthy(v.log:find("nginx allows no cosockets or sleeping in the log phase", 1, true), v.log)
        end)

        it("asks through cosockets when no transport is named", function()
            local v = json(post("/ask_default", "x"))
            assert.same({ "accepted", "1187" }, { v.status, v.value and v.value.order_id })
        end)

        it("refuses the blocking curl transport in a request unless allow_blocking", function()
            local v = json(post("/ask_curl", "x"))
            assert.truthy(v.error and v.error:find("the blocking curl transport would stall this nginx worker in "
                .. "the content phase", 1, true), v.error)
            v = json(post("/ask_curl?allow=1", "x"))
            assert.equal("accepted", v.status)
        end)

        it("serves other locations while a slow provider holds a request", function()
            if select(2, nginx.run("command -v curl")) ~= 0 then
                return pending("slow provider skipped: curl (the command) not found on PATH")
            end
            -- /slow waits 3 s for its model; meanwhile the same single worker must answer
            -- /metrics, which then shows that request in flight.
            local out = os.tmpname()
            local bg = io.popen(string.format("env -u LD_PRELOAD curl -s -o %s -w '%%{http_code}' -X POST --data %s %s/slow",
                out, nginx.q(MAIL_1187), srv.base))
            finally(function() os.remove(out) end)
            local in_flight
            util.wait_until(function()
                local m = http("GET", "/metrics").body
                in_flight = tonumber(m:match('jsoncontract_in_flight{contract="slow_ticket"} (%d+)'))
                return in_flight == 1
            end, 30, 0.02)
            local code = bg:read("*a")
            bg:close()
            assert.equal(1, in_flight)
            assert.equal("200", code)
            assert.equal("1187", jc.decode(util.read(out)).order_id)
        end)
    end)

    describe("per-worker caches and pools", function()
        it("uses one keep-alive connection to the provider for many requests", function()
            local before = stats("pool")
            for _ = 1, 12 do
                local res = post("/pooled", MAIL_1187)
                assert.equal(200, res.status, res.body)
            end
            local after = stats("pool")
            -- each /stats call is one connection and one request of its own
            assert.same({ 1, 12 }, { after.accepted - before.accepted - 1, after.served - before.served - 1 })
            local m = http("GET", "/metrics").body
            assert.truthy(m:find('jsoncontract_upstream_connections_total{upstream="127.0.0.1:' .. ports.pool
                .. '",reused="true"} 11', 1, true), m)
        end)

        it("compiles a contract once per worker, not per request", function()
            local before = json(http("GET", "/loads"))
            for _ = 1, 3 do assert.equal(200, post("/triage", MAIL_1187).status) end
            -- the file is looked at on every request (contract_check_ms = 1) but did not change
            assert.same(before, json(http("GET", "/loads")))
        end)

        it("serves a new contract version after the file is bumped, without a restart", function()
            local res = post("/bumped", MAIL_1187)
            assert.same({ 200, "1.0.0" }, { res.status, res.headers["x-contract-version"] })
            write_bumped(srv.dir, "2.0.0")
            nginx.run("sleep 0.05")
            res = post("/bumped", MAIL_1187)
            assert.same({ 200, "2.0.0", "bumped" }, { res.status, res.headers["x-contract-version"],
                res.headers["x-contract"] })
        end)

        it("resumes TLS 1.3 sessions on new connections; pooled connections need no handshake", function()
            if not have_tls then return pending("TLS skipped: openssl not found on PATH") end
            local url = "https://127.0.0.1:" .. tls_port .. "/"
            local esc = url:gsub("[^%w]", function(ch) return string.format("%%%02X", ch:byte()) end)
            local v = json(http("GET", "/tls?keepalive=0&url=" .. esc))
            -- nginx's $ssl_session_reused: "." for a full handshake, "r" for a resumed session
            assert.same({ { ".", 0, false }, { "r", 0, false } },
                { { v[1].body, v[1].reused, v[1].pooled }, { v[2].body, v[2].reused, v[2].pooled } })
            v = json(http("GET", "/tls?keepalive=1&url=" .. esc))
            assert.same({ true, 1 }, { v[1].pooled, v[2].reused })
        end)

        it("serves a new version after a HUP when the gateway never looks at its files", function()
            assert.equal("1.0.0", post("/hup", MAIL_1187).headers["x-contract-version"])
            write_bumped(srv.dir, "2.0.0", "hup")
            assert.equal("1.0.0", post("/hup", MAIL_1187).headers["x-contract-version"])
            nginx.run("kill -HUP " .. srv:pid())
            local version
            util.wait_until(function()
                version = post("/hup", MAIL_1187).headers["x-contract-version"]
                return version == "2.0.0"
            end)
            assert.equal("2.0.0", version)
            -- the old worker finishes its graceful exit before the next specs
            util.wait_until(function() return #srv:workers() == 1 end)
            assert.equal(1, #srv:workers())
        end)
    end)

    describe("metrics and evidence", function()
        it("serves Prometheus text that parses: TYPE before samples, cumulative buckets, +Inf = count", function()
            local res = http("GET", "/metrics")
            assert.equal(200, res.status)
            assert.truthy(res.headers["content-type"]:find("text/plain; version=0.0.4", 1, true))
            local types, samples, buckets = {}, {}, {}
            for line in res.body:gmatch("[^\n]+") do
                local tname, ttype = line:match("^# TYPE ([%w_]+) (%a+)$")
                if tname then
                    types[tname] = ttype
                elseif not line:match("^# HELP [%w_]+ .+$") then
                    local name, labels, value = line:match('^([%a_][%w_]*)(%b{}) ([%d%.eE+-]+)$')
                    if not name then name, value = line:match("^([%a_][%w_]*) ([%d%.eE+-]+)$") end
                    assert(name and tonumber(value), "not a sample line: " .. line)
                    local family = name:gsub("_bucket$", ""):gsub("_sum$", ""):gsub("_count$", "")
                    assert(types[name] or types[family], "sample before its TYPE: " .. line)
                    samples[name .. (labels or "")] = tonumber(value)
                    if name:match("_bucket$") then
                        local series = labels:gsub(',?le="[^"]*"', "")
                        local b = buckets[family .. series] or {}
                        buckets[family .. series] = b
                        b[#b + 1] = { le = labels:match('le="([^"]*)"'), v = tonumber(value) }
                    end
                end
            end
            assert.equal("histogram", types.jsoncontract_request_duration_seconds)
            assert.equal("counter", types.jsoncontract_requests_total)
            assert.equal("gauge", types.jsoncontract_in_flight)
            local n = 0
            for series, b in pairs(buckets) do
                n = n + 1
                for i = 2, #b do assert.truthy(b[i].v >= b[i - 1].v, series) end
                assert.equal("+Inf", b[#b].le)
                local count = samples[series:gsub("^([%w_]+)", "%1_count")]
                assert.equal(count, b[#b].v, series)
            end
            assert.truthy(n >= 4)
            for _, c in ipairs {
                'jsoncontract_requests_total{contract="support_ticket",code="200",outcome="accepted"}',
                'jsoncontract_requests_total{contract="support_ticket",code="202",outcome="handed_over"}',
                'jsoncontract_requests_total{contract="support_ticket",code="400",outcome="rejected"}',
                'jsoncontract_requests_total{contract="support_ticket",code="413",outcome="rejected"}',
                'jsoncontract_requests_total{contract="support_ticket",code="502",outcome="failed"}',
                'jsoncontract_attempts_total{contract="support_ticket",gate="schema"}',
                'jsoncontract_attempts_total{contract="support_ticket",gate="accepted"}',
                'jsoncontract_attempts_total{contract="support_ticket",gate="protocol"}',
                'jsoncontract_tokens_total{contract="support_ticket",direction="input"}',
                'jsoncontract_outcomes_total{contract="support_ticket",status="human_review",category="refused",'
                    .. 'kind="refusal"}',
            } do
                assert.truthy(samples[c] and samples[c] >= 1, c)
            end
        end)

        it("writes evidence lines with the request id, without key or headers", function()
            local text
            util.wait_until(function()
                text = util.read(srv.dir .. "/evidence.jsonl") or ""
                return text:find('"request_id":"spec-req-1187"', 1, true)
            end)
            assert.truthy(text:find('"request_id":"spec-req-1187"', 1, true), text)
            for line in text:gmatch("[^\n]+") do
                local rec = jc.decode(line)
                assert(rec, line)
                assert.is_nil(rec.headers)
                assert.is_nil(rec.input)
            end
            assert.falsy(text:lower():find("authorization", 1, true))
            assert.falsy(text:find("Bearer", 1, true))
            -- nginx runs its workers with umask 0: the log is made 0640 all the same
            assert.equal("rw-r-----", require("lfs").attributes(srv.dir .. "/evidence.jsonl", "permissions"))
        end)

        it("sends evidence to the error log with path = \"log\"", function()
            local line = srv:error_log():match("jsoncontract evidence: (%b{})[^\n]*\n")
            assert.truthy(line, "no evidence line in the error log")
            local rec = jc.decode(line)
            assert.same({ "rules", "support_ticket" }, { rec.gate, rec.contract.name })
        end)

        it("never lets the key reach a response, the error log or the evidence", function()
            -- the /echo request really sent the key and got it back in a 401 body
            if os.getenv("JC_SPEC_SHOW_LOG") then io.stderr:write(srv:error_log()) end
            assert.truthy(srv:error_log():find("contract=echo_ticket status=502 code=model_unavailable", 1, true))
            local texts = { srv:error_log(), util.read(srv.dir .. "/evidence.jsonl") or "" }
            for _, s in ipairs(seen) do texts[#texts + 1] = s end
            for _, t in ipairs(texts) do
                assert.falsy(t:find(KEY, 1, true), t)
            end
        end)
    end)
end)
