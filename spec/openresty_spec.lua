-- jsoncontract.transport.openresty inside a real nginx: Debian's nginx with lua-nginx-module
-- runs as its own process (spec/support/nginx_server.lua: daemon, pid file, error log and temp
-- paths in a temp prefix, one worker, 127.0.0.1 on free ports), loads the repo's lua/ and build/luajit's core
-- (JC_NGINX_CPATH overrides), trusts one of two throw-away certificates, and serves
-- spec/support/nginx_app.lua: /check (contract:check of the body), /ask (jc.ask through the
-- cosocket transport against bin/jsoncontract-standin), /raw and /many (the transport itself)
-- and /sock (raw replies for the error paths). Whatever interpreter runs busted, nginx runs
-- its own LuaJIT; teardown stops the master by its pid.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local nginx = require "support.nginx_server"
local now = require("jsoncontract.compat").now

-- Why the spec cannot run here, or nil.
local function missing()
    local why = nginx.missing()
    if why then return why end
    local _, code = nginx.run("command -v openssl")
    if code ~= 0 then return "openssl (for the test certificates) not found on PATH" end
    return nil
end

local function esc(s) return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end)) end

local MAIL_1042 = "Hello, my order 1042: the courier did not come, urgent, I leave tomorrow."

describe("jsoncontract.transport.openresty in nginx", function()
    local why = missing()
    if why then
        it("runs nginx", function() pending(why) end)
        return
    end

    local srv, port, base, standin_port, fault_port, tls_good, tls_bad
    -- nginx also listens on [::1] when the loopback has IPv6.
    local ipv6 = (util.read("/proc/net/if_inet6") or ""):find("^0+1 ") ~= nil
        or (util.read("/proc/net/if_inet6") or ""):find("\n0+1 ") ~= nil

    local function call(path, body)
        local res, err = curl.request { url = base .. path, method = body and "POST" or "GET", body = body,
            timeout_ms = 30000 }
        assert(res, tostring(err))
        assert.equal(200, res.status, res.body)
        return jc.decode(res.body)
    end

    setup(function()
        tls_good, tls_bad = util.closed_port(), util.closed_port()
        srv = nginx.start {
            worker_connections = 64,
            ready = "/big",
            helper = function()
                local pipe, fault_pipe
                pipe, standin_port = util.start_standin()
                fault_pipe, fault_port = util.start_fault_server(300)
                return function()
                    util.stop_standin(pipe)
                    util.stop_fault_server(fault_pipe, fault_port)
                end
            end,
            http = function(p, dir)
                -- Two self-signed certificates for 127.0.0.1: "good" is in
                -- lua_ssl_trusted_certificate, "bad" is not.
                for _, name in ipairs { "good", "bad" } do
                    local out, code = nginx.run(string.format("openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
                        .. "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout %s/%s.key -out %s/%s.pem",
                        nginx.q(dir), name, nginx.q(dir), name))
                    assert(code == 0, out)
                end
                return table.concat({
                    string.format('  init_by_lua_block { require("support.nginx_app").init("%s") }',
                        nginx.run("pwd"):match("^(%S+)")),
                    "  server {",
                    "    listen 127.0.0.1:" .. p .. ";",
                    ipv6 and "    listen [::1]:" .. p .. ";" or "",
                    '    location = /check { content_by_lua_block { require("support.nginx_app").check() } }',
                    '    location = /ask { content_by_lua_block { require("support.nginx_app").ask() } }',
                    '    location = /raw { content_by_lua_block { require("support.nginx_app").raw() } }',
                    '    location = /many { content_by_lua_block { require("support.nginx_app").many() } }',
                    '    location = /pool { content_by_lua_block { require("support.nginx_app").pool() } }',
                    '    location = /sock { content_by_lua_block { require("support.nginx_app").sock() } }',
                    '    location = /big { return 200 "0123456789abcdefghij"; }',
                    "  }",
                    "  lua_ssl_trusted_certificate " .. dir .. "/good.pem;",
                    "  server { listen 127.0.0.1:" .. tls_good .. " ssl; ssl_certificate " .. dir .. "/good.pem;",
                    "    ssl_certificate_key " .. dir .. "/good.key; location / { return 200 \"tls ok\"; } }",
                    "  server { listen 127.0.0.1:" .. tls_bad .. " ssl; ssl_certificate " .. dir .. "/bad.pem;",
                    "    ssl_certificate_key " .. dir .. "/bad.key; location / { return 200 \"tls ok\"; } }",
                }, "\n")
            end,
        }
        port, base = srv.port, srv.base
    end)

    teardown(function() if srv then srv:stop() end end)

    describe("/check: the contract compiled at module level", function()
        it("accepts a valid ticket", function()
            local out = call("/check", '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"Late."}')
            assert.is_true(out.ok)
            assert.same({ "delivery", "1042", true, "Late." },
                { out.value.intent, out.value.order_id, out.value.urgent, out.value.summary })
        end)

        it("rejects the Lieferung reply with the two schema errors, in order", function()
            local out = call("/check", '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"Late."}')
            assert.is_false(out.ok)
            assert.same({ "schema", "schema_mismatch" }, { out.err.category, out.err.kind })
            assert.same({ { pointer = "/intent", keyword = "enum" }, { pointer = "/urgent", keyword = "type" } },
                out.err.errors)
        end)

        it("reports a reply that is not JSON as a format error", function()
            local out = call("/check", "Sure! {}")
            assert.same({ "format", "unexpected_character" }, { out.err.category, out.err.kind })
        end)
    end)

    describe("/ask: jc.ask through the cosocket transport and the stand-in model", function()
        it("accepts the 1042 seed mail at attempt 2, after the Lieferung/ja reply", function()
            local out = call("/ask?base=" .. esc("http://127.0.0.1:" .. standin_port), MAIL_1042)
            assert.equal("accepted", out.status)
            assert.equal(2, #out.attempts)
            assert.same({ "schema", "schema_mismatch" }, { out.attempts[1].category, out.attempts[1].kind })
            assert.same({ "delivery", "1042", true }, { out.value.intent, out.value.order_id, out.value.urgent })
        end)

        it("sends a refused connection to review as transport/connect", function()
            local out = call("/ask?base=" .. esc("http://127.0.0.1:" .. util.closed_port()), MAIL_1042)
            assert.equal("human_review", out.status)
            assert.same({ "transport", "connect" }, { out.reason.category, out.reason.kind })
            assert.truthy(out.reason.message:find("127.0.0.1:", 1, true), out.reason.message)
        end)

        it("enforces max_response_bytes on the model's answer: transport/too_large", function()
            local out = call("/ask?max=50&base=" .. esc("http://127.0.0.1:" .. standin_port), MAIL_1042)
            assert.equal("human_review", out.status)
            assert.same({ "transport", "too_large" }, { out.reason.category, out.reason.kind })
        end)
    end)

    describe("/raw: one request", function()
        it("reads a Content-Length body", function()
            local out = call("/raw?url=" .. esc(base .. "/big"))
            assert.same({ 200, "0123456789abcdefghij" }, { out.status, out.body })
        end)

        it("reads a chunked body (nginx chunks Lua output)", function()
            local out = call("/raw?url=" .. esc(base .. "/check"))
            assert.same({ 200, "chunked" }, { out.status, out.te })
            assert.same({ "format", "empty" }, { jc.decode(out.body).err.category, jc.decode(out.body).err.kind })
        end)

        it("caps the body while reading: one byte under the length is too_large", function()
            local out = call("/raw?max=19&url=" .. esc(base .. "/big"))
            assert.same({ "transport", "too_large" }, { out.err.category, out.err.kind })
            out = call("/raw?max=20&url=" .. esc(base .. "/big"))
            assert.equal("0123456789abcdefghij", out.body)
        end)

        it("caps a chunked body too", function()
            local out = call("/raw?max=10&url=" .. esc(base .. "/check"))
            assert.same({ "transport", "too_large" }, { out.err.category, out.err.kind })
        end)

        it("reads a body that runs until the server closes", function()
            local out = call("/raw?url=" .. esc(base .. "/sock?mode=close"))
            assert.same({ 200, "body until close" }, { out.status, out.body })
        end)

        it("skips a 100 Continue and returns the final response", function()
            local out = call("/raw?url=" .. esc(base .. "/sock?mode=continue"))
            assert.same({ 201, "ok" }, { out.status, out.body })
        end)

        for _, c in ipairs {
            { "empty", "reset", "no reply at all" },
            { "short", "reset", "a body shorter than its Content-Length" },
            { "garbage", "protocol", "a reply that is not HTTP" },
            { "badchunk", "protocol", "a bad chunk size" },
            { "gzip", "protocol", "a compressed body nobody asked for" },
            { "bigheader", "too_large", "a header line that never ends (200 KiB, no newline)" },
            { "bigstatus", "too_large", "an HTTP status line that never ends" },
            { "hugeline", "protocol", "a first line that never ends and is not HTTP" },
            { "hello", "protocol", "a short reply that is not HTTP" },
            { "manycontinue", "too_large", "75 KiB of 100 Continue heads" },
            { "bigchunkline", "protocol", "a chunk-size line over 1 KiB" },
            { "twocl", "protocol", "two different Content-Length values" },
            { "gzipchunked", "protocol", "Transfer-Encoding: gzip, chunked" },
            { "twote", "protocol", "Transfer-Encoding gzip then chunked on two lines" },
            { "notchunked", "protocol", "Transfer-Encoding: notchunked" },
            { "chunkjunk", "protocol", "a chunk size with junk after the digits (5zzz)" },
            { "status2000", "protocol", "a four-digit status (2000)" },
            { "status099", "protocol", "a status under 100 (099)" },
            { "status600", "protocol", "a status over 599 (600)" },
            { "barecr", "protocol", "a bare CR inside a header value" },
            { "nocolon", "protocol", "a header line without a colon" },
            { "spacename", "protocol", "a header name with a space" },
        } do
            it("reports " .. c[3] .. " as transport/" .. c[2], function()
                local out = call("/raw?url=" .. esc(base .. "/sock?mode=" .. c[1]))
                assert.same({ "transport", c[2] }, { out.err.category, out.err.kind })
                assert.truthy(out.err.message:find("127.0.0.1:" .. port, 1, true), out.err.message)
            end)
        end

        it("names the cause of an unbounded or non-HTTP first line", function()
            local out = call("/raw?url=" .. esc(base .. "/sock?mode=hello"))
            assert.equal("HTTP exchange with 127.0.0.1:" .. port .. " failed (not an HTTP response)", out.err.message)
            out = call("/raw?url=" .. esc(base .. "/sock?mode=bigheader"))
            assert.equal("response headers from 127.0.0.1:" .. port .. " are over 65536 bytes", out.err.message)
        end)

        it("reads a status line without a reason phrase and trims header values", function()
            local out = call("/raw?url=" .. esc(base .. "/sock?mode=padded"))
            assert.same({ 200, "ok", "v  w", "" }, { out.status, out.body, out.headers["x-pad"], out.headers["x-empty"] })
        end)

        it("accepts a repeated equal Content-Length and a chunk extension", function()
            local out = call("/raw?url=" .. esc(base .. "/sock?mode=samecl"))
            assert.same({ 200, "abc" }, { out.status, out.body })
            out = call("/raw?url=" .. esc(base .. "/sock?mode=chunkext"))
            assert.same({ 200, "hello", "Chunked" }, { out.status, out.body, out.te })
        end)

        it("counts trailers against max_response_bytes", function()
            local out = call("/raw?url=" .. esc(base .. "/sock?mode=trailer"))
            assert.same({ 200, "hello" }, { out.status, out.body })
            out = call("/raw?max=1000&url=" .. esc(base .. "/sock?mode=trailer"))
            assert.same({ "transport", "too_large" }, { out.err.category, out.err.kind })
        end)

        it("connects to an IPv6 literal [::1]", function()
            if not ipv6 then return pending("no IPv6 loopback (::1) here") end
            local out = call("/raw?url=" .. esc("http://[::1]:" .. port .. "/big"))
            assert.same({ 200, "0123456789abcdefghij" }, { out.status, out.body })
            out = call("/raw?url=" .. esc("http://[::1]:" .. util.closed_port() .. "/"))
            assert.same({ "transport", "connect" }, { out.err.category, out.err.kind })
            assert.truthy(out.err.message:find("^cannot connect to %[::1%]:%d+$"), out.err.message)
        end)

        it("gives up on a silent server after read_timeout_ms: transport/timeout", function()
            local out = call("/raw?read=200&url=" .. esc(base .. "/sock?mode=close&sleep=2"))
            assert.same({ "transport", "timeout" }, { out.err.category, out.err.kind })
            assert.equal("no data from 127.0.0.1:" .. port .. " for 200 ms", out.err.message)
        end)

        it("gives up when the whole exchange is over timeout_ms: transport/timeout", function()
            local out = call("/raw?total=300&url=" .. esc(base .. "/sock?mode=close&sleep=2"))
            assert.same({ "transport", "timeout" }, { out.err.category, out.err.kind })
            assert.truthy(out.err.message:find("^timed out talking to 127%.0%.0%.1:" .. port .. " after %d+ ms$"),
                out.err.message)
        end)

        -- Each byte arrives well within the timeout, so only a deadline over the whole
        -- exchange ends these; the drips would take 20 s and 14 s to finish (the bound of 10 s
        -- leaves a busy machine room over the 1 s deadline).
        it("cuts a body dripping a byte every 200 ms at timeout_ms: transport/timeout", function()
            local t0 = now()
            local out = call("/raw?total=1000&url=" .. esc("http://127.0.0.1:" .. fault_port .. "/slow?n=100"))
            local took = now() - t0
            assert.same({ "transport", "timeout" }, { out.err.category, out.err.kind })
            assert.truthy(out.err.message:find("^timed out talking to 127%.0%.0%.1:%d+ after %d+ ms$"),
                out.err.message)
            assert.is_true(took < 10, "took " .. took .. " s")
        end)

        it("cuts a status line and headers dripping a byte every 200 ms at timeout_ms", function()
            local t0 = now()
            local out = call("/raw?total=1000&url=" .. esc(base .. "/sock?mode=chunkext&drip=0.2"))
            local took = now() - t0
            assert.same({ "transport", "timeout" }, { out.err.category, out.err.kind })
            assert.is_true(took < 10, "took " .. took .. " s")
        end)

        it("still reads a dripped reply whole when it ends within timeout_ms", function()
            local out = call("/raw?total=10000&url=" .. esc(base .. "/sock?mode=samecl&drip=0.01"))
            assert.same({ 200, "abc" }, { out.status, out.body })
        end)

        it("speaks TLS to a server whose certificate nginx trusts", function()
            local out = call("/raw?url=" .. esc("https://127.0.0.1:" .. tls_good .. "/"))
            assert.same({ 200, "tls ok" }, { out.status, out.body })
        end)

        it("verifies certificates: an untrusted one is transport/tls", function()
            local out = call("/raw?url=" .. esc("https://127.0.0.1:" .. tls_bad .. "/"))
            assert.same({ "transport", "tls" }, { out.err.category, out.err.kind })
            assert.equal("TLS failure with 127.0.0.1:" .. tls_bad, out.err.message)
        end)

        it("keeps a completely framed HTTP/1.1 response's connection and reuses it", function()
            local out = call("/pool?a=" .. esc(base .. "/big") .. "&b=" .. esc(base .. "/big"))
            assert.same({ { 200, 0, true }, { 200, 1, true } },
                { { out[1].status, out[1].reused, out[1].pooled }, { out[2].status, out[2].reused, out[2].pooled } })
        end)

        for _, c in ipairs {
            { "close", "a body that runs until the server closes" },
            { "connclose", "Connection: close" },
            { "http10", "an HTTP/1.0 response" },
            { "short", "a body shorter than its Content-Length" },
        } do
            it("does not pool the connection after " .. c[2], function()
                local out = call("/pool?a=" .. esc(base .. "/sock?mode=" .. c[1]) .. "&b=" .. esc(base .. "/big"))
                assert.is_not_true(out[1].pooled)
                assert.same({ 200, 0 }, { out[2].status, out[2].reused })
            end)
        end

        it("retries on a new connection when a pooled one was closed by the server", function()
            -- the server closes 0.2 s after its answer: the client has pooled the connection and
            -- sends the next request on it, which the closing server never reads
            local out = call("/pool?a=" .. esc(base .. "/sock?mode=keepclose&after=0.2") .. "&b=" .. esc(base .. "/big"))
            assert.same({ true, 200, "0123456789abcdefghij", 0 }, { out[1].pooled, out[2].status, out[2].body,
                out[2].reused })
        end)

        it("request_many returns results in request order, errors in place", function()
            local out = call("/many?a=" .. esc("http://127.0.0.1:" .. util.closed_port() .. "/")
                .. "&b=" .. esc(base .. "/big"))
            assert.same({ { kind = "connect" }, { status = 200, body = "0123456789abcdefghij" } }, out)
        end)

        it("reports a refused connection as transport/connect naming host:port", function()
            local p = util.closed_port()
            local out = call("/raw?url=" .. esc("http://127.0.0.1:" .. p .. "/v1/secret-path"))
            assert.same({ "transport", "connect" }, { out.err.category, out.err.kind })
            assert.equal("cannot connect to 127.0.0.1:" .. p, out.err.message)
        end)
    end)
end)

describe("jsoncontract.transport.openresty misuse (checked before any cosocket)", function()
    local openresty = require "jsoncontract.transport.openresty"
    it("raises on requests the transport cannot send", function()
        util.raises("request must be a table", openresty.request, "http://x")
        util.raises("unknown request field timeout", openresty.request, { url = "http://x/", timeout = 1 })
        util.raises("url must start with http:// or https://", openresty.request, { url = "ftp://x/" })
        util.raises("url is required", openresty.request, {})
        util.raises("timeout_ms must be an integer >= 0", openresty.request, { url = "http://x/", timeout_ms = -1 })
        util.raises("ca_file is not supported", openresty.request, { url = "https://x/", ca_file = "/ca.pem" })
        util.raises("header Content-Length is set by the transport", openresty.request,
            { url = "http://x/", headers = { ["Content-Length"] = "3" } })
        util.raises("bad header", openresty.request, { url = "http://x/", headers = { A = "v\r\nX: y" } })
        util.raises("max_parallel must be an integer in 1..1024", openresty.request_many, {}, { max_parallel = 0 })
        util.raises("unknown request field x", openresty.request_many, { { url = "http://x/" }, { x = 1 } })
    end)
end)
