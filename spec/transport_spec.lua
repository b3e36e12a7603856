-- Specs of the libcurl transport (core.http_request, core.http_many and
-- jsoncontract.transport.curl) against jsoncontract.standin.faults,
-- started on 127.0.0.1 with a free port. No outside hosts, no timing assertions.
local core = require "jsoncontract.core"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"

local start_server, stop_server = util.start_fault_server, util.stop_fault_server
local closed_port = util.closed_port

local function assert_transport_err(res, err, kind, curl_code)
    assert.is_nil(res)
    assert.equal("table", type(err))
    assert.equal(core.error_mt, getmetatable(getmetatable(err)))
    assert.equal("transport", err.category)
    assert.equal(kind, err.kind)
    if curl_code then assert.equal(curl_code, err.curl_code) end
    assert.equal("number", type(err.elapsed_ms))
    assert.equal("string", type(err.message))
end

describe("jsoncontract.core", function()
    local pipe, port, base

    setup(function()
        pipe, port = start_server(120)
        base = "http://127.0.0.1:" .. port
    end)

    teardown(function()
        if pipe then stop_server(pipe, port) end
    end)

    after_each(function()
        collectgarbage("collect")
    end)

    describe("http_request()", function()
        it("returns a 200 response with status, lower-case headers, body and elapsed_ms", function()
            local res, err = core.http_request { url = base .. "/ok" }
            assert.is_nil(err)
            assert.equal(200, res.status)
            assert.equal("application/json", res.headers["content-type"])
            assert.equal("11", res.headers["content-length"])
            assert.equal('{"ok":true}', res.body)
            assert.equal("number", type(res.elapsed_ms))
            assert.is_true(res.elapsed_ms >= 0)
        end)

        it("returns a 500 as a response, not an error", function()
            local res, err = core.http_request { url = base .. "/status/500" }
            assert.is_nil(err)
            assert.equal(500, res.status)
            assert.equal('{"error":"status 500"}', res.body)
        end)

        it("returns a 429 as a response with its Retry-After header", function()
            local res = core.http_request { url = base .. "/status/429" }
            assert.equal(429, res.status)
            assert.equal("2", res.headers["retry-after"])
        end)

        it("does not follow a redirect: the 302 comes back and the target is never hit", function()
            local res, err = core.http_request {
                url = base .. "/redirect", headers = { Authorization = "Bearer sk-secret" },
            }
            assert.is_nil(err)
            assert.equal(302, res.status)
            assert.equal(base .. "/steal", res.headers["location"])
            local stats = core.http_request { url = base .. "/stats" }
            assert.equal('{"steal":0}', stats.body)
        end)

        it("sends the method, headers and body as given, adding no Content-Type", function()
            local res = core.http_request {
                url = base .. "/echo", body = '{"q":1}', headers = { ["X-Trace"] = "abc", ["X-Empty"] = "" },
            }
            assert.equal(200, res.status)
            assert.matches('"method":"POST"', res.body, 1, true)
            assert.matches('"x-trace":"abc"', res.body, 1, true)
            assert.matches('"x-empty":""', res.body, 1, true)
            assert.matches('"content-length":"7"', res.body, 1, true)
            assert.matches('"body":"{\\"q\\":1}"', res.body, 1, true)
            assert.not_matches("content-type", res.body, 1, true)
            assert.not_matches("expect", res.body, 1, true)
        end)

        it("uses a given method", function()
            local res = core.http_request { url = base .. "/echo", method = "PUT", body = "x" }
            assert.matches('"method":"PUT"', res.body, 1, true)
            res = core.http_request { url = base .. "/echo" }
            assert.matches('"method":"GET"', res.body, 1, true)
        end)

        it("fails with kind connect on a closed port, naming host:port but no header value", function()
            local p = closed_port()
            local res, err = core.http_request {
                url = "http://127.0.0.1:" .. p .. "/ok?key=sk-in-query", headers = { ["x-api-key"] = "sk-secret" },
            }
            assert_transport_err(res, err, "connect", "CURLE_COULDNT_CONNECT")
            assert.matches("127.0.0.1:" .. p, err.message, 1, true)
            assert.not_matches("sk-", err.message, 1, true)
            assert.not_matches("sk-", tostring(err), 1, true)
            assert.not_matches("sk-", err.detail, 1, true)
            assert.not_matches("/ok", err.detail, 1, true)
        end)

        it("fails with kind timeout when the total timeout_ms runs out during a slow drip", function()
            local res, err = core.http_request { url = base .. "/slow", timeout_ms = 1000 }
            assert_transport_err(res, err, "timeout", "CURLE_OPERATION_TIMEDOUT")
        end)

        it("fails with kind timeout when no byte arrives for read_timeout_ms", function()
            local res, err = core.http_request {
                url = base .. "/delay?ms=8000", read_timeout_ms = 1000, timeout_ms = 60000,
            }
            assert_transport_err(res, err, "timeout", "CURLE_ABORTED_BY_CALLBACK")
        end)

        it("does not time out a slow drip whose bytes keep arriving within read_timeout_ms", function()
            local res, err = core.http_request { url = base .. "/slow?n=12", read_timeout_ms = 3000, timeout_ms = 60000 }
            assert.is_nil(err)
            assert.equal(string.rep("x", 12), res.body)
        end)

        it("fails with kind too_large when Content-Length is over max_response_bytes", function()
            local res, err = core.http_request { url = base .. "/big", max_response_bytes = 1024 * 1024 }
            assert_transport_err(res, err, "too_large", "CURLE_FILESIZE_EXCEEDED")
        end)

        it("fails with kind too_large when a body without Content-Length grows over the cap", function()
            local res, err = core.http_request { url = base .. "/bigstream" }   -- default cap 8 MiB
            assert_transport_err(res, err, "too_large", "CURLE_WRITE_ERROR")
        end)

        it("accepts a body of exactly max_response_bytes", function()
            local res, err = core.http_request { url = base .. "/ok", max_response_bytes = 11 }
            assert.is_nil(err)
            assert.equal('{"ok":true}', res.body)
            res, err = core.http_request { url = base .. "/ok", max_response_bytes = 10 }
            assert_transport_err(res, err, "too_large")
        end)

        it("fails with kind reset when the connection closes mid-body", function()
            local res, err = core.http_request { url = base .. "/reset" }
            assert_transport_err(res, err, "reset", "CURLE_PARTIAL_FILE")
        end)

        it("fails with kind reset on a TCP reset mid-body", function()
            local res, err = core.http_request { url = base .. "/rst" }
            assert_transport_err(res, err, "reset", "CURLE_RECV_ERROR")
        end)

        it("returns an HTML body as it is, with its content-type", function()
            local res, err = core.http_request { url = base .. "/html" }
            assert.is_nil(err)
            assert.equal(200, res.status)
            assert.equal("text/html; charset=utf-8", res.headers["content-type"])
            assert.equal("<html><body>Service Unavailable</body></html>", res.body)
        end)

        it("reports a header line over libcurl's limit as too_large, not a raise", function()
            local res, err = core.http_request { url = base .. "/hugeheader" }
            assert.is_nil(res)
            assert.equal("transport", err.category)
            assert.equal("too_large", err.kind)
        end)

        it("decodes a gzip body to the plain JSON", function()
            local res, err = core.http_request { url = base .. "/gzip" }
            assert.is_nil(err)
            assert.equal("gzip", res.headers["content-encoding"])
            assert.equal('{"ok":true}', res.body)
        end)

        it("fails with kind tls when https:// talks to a plain-HTTP port", function()
            local res, err = core.http_request { url = "https://127.0.0.1:" .. port .. "/ok", timeout_ms = 10000 }
            assert_transport_err(res, err, "tls", "CURLE_SSL_CONNECT_ERROR")
        end)

        it("raises on a URL scheme other than http or https", function()
            assert.has_error(function() core.http_request { url = "file:///etc/passwd" } end,
                "http_request: 'url' must start with http:// or https://")
            assert.has_error(function() core.http_request { url = "ftp://127.0.0.1/" } end,
                "http_request: 'url' must start with http:// or https://")
        end)

        it("accepts an upper-case scheme", function()
            local res = core.http_request { url = "HTTP://127.0.0.1:" .. port .. "/ok" }
            assert.equal(200, res.status)
        end)

        it("raises on an unknown request field", function()
            assert.has_error(function() core.http_request { url = base .. "/ok", timeout = 5 } end,
                "http_request: unknown field 'timeout'")
        end)

        it("raises on misuse of the known fields", function()
            assert.has_error(function() core.http_request { url = base, timeout_ms = -1 } end,
                "http_request: 'timeout_ms' must be an integer in [0, 2147483647]")
            assert.has_error(function() core.http_request { url = base, connect_timeout_ms = 1.5 } end,
                "http_request: 'connect_timeout_ms' must be an integer in [1, 2147483647]")
            assert.has_error(function() core.http_request { url = base, headers = { ["X-A"] = "1\r\nX-B: 2" } } end,
                "http_request: header 'X-A' has a control character in its value")
            assert.has_error(function() core.http_request { url = base, headers = { ["Bad Name"] = "1" } } end,
                "http_request: header name 'Bad Name' is not a token")
            assert.has_error(function() core.http_request { url = base, method = "GET /x" } end,
                "http_request: 'method' is not an HTTP method token")
            assert.has_error(function() core.http_request { body = "x" } end,
                "http_request: 'url' is required")
            assert.has_error(function() core.http_request { url = "http://[::1/" } end,
                "http_request: 'url' is not a valid URL (Bad IPv6 address)")
        end)
    end)

    describe("http_many()", function()
        it("returns 20 results in the order of the requests", function()
            local reqs = {}
            for i = 1, 20 do reqs[i] = { url = base .. "/delay?ms=" .. (300 + i) } end
            local results = core.http_many(reqs, { max_parallel = 8 })
            assert.equal(20, #results)
            for i = 1, 20 do
                assert.equal(200, results[i].status)
                assert.equal('{"delayed":' .. (300 + i) .. '}', results[i].body)
            end
        end)

        it("puts an err where a request failed", function()
            local p = closed_port()
            local results = core.http_many {
                { url = base .. "/ok" },
                { url = "http://127.0.0.1:" .. p .. "/" },
                { url = base .. "/status/500" },
                { url = base .. "/delay?ms=8000", read_timeout_ms = 1000 },
                { url = base .. "/bigstream", max_response_bytes = 1000 },
            }
            assert.equal(5, #results)
            assert.equal(200, results[1].status)
            assert.equal(core.error_mt, getmetatable(getmetatable(results[2])))
            assert.equal("transport", results[2].category)
            assert.equal("connect", results[2].kind)
            assert.equal(500, results[3].status)
            assert.equal("timeout", results[4].kind)
            assert.equal("CURLE_ABORTED_BY_CALLBACK", results[4].curl_code)
            assert.equal("too_large", results[5].kind)
        end)

        it("returns an empty array for no requests", function()
            assert.same({}, core.http_many {})
        end)

        it("raises on a bad request before any transfer starts", function()
            assert.has_error(function()
                core.http_many { { url = base .. "/steal" }, { url = base .. "/ok", nope = 1 } }
            end, "http_many: request #2: unknown field 'nope'")
            assert.has_error(function()
                core.http_many({ { url = base .. "/steal" } }, { parallel = 2 })
            end, "bad argument #2 to 'http_many' (unknown option 'parallel')")
            local stats = core.http_request { url = base .. "/stats" }
            assert.equal('{"steal":0}', stats.body)
        end)
    end)
end)

-- TLS against `openssl s_server` with self-signed certificates made at test time.
describe("jsoncontract.core TLS", function()
    local dir, servers = nil, {}
    local have_openssl = os.execute("command -v openssl >/dev/null 2>&1")
    have_openssl = have_openssl == true or have_openssl == 0

    -- Make a self-signed certificate with subjectAltName 'san' and serve it
    -- with `openssl s_server -www`; returns the port and the certificate path.
    local function tls_server(name, san)
        local key, cert = dir .. "/" .. name .. "-key.pem", dir .. "/" .. name .. "-cert.pem"
        local ok = os.execute(string.format("env -u LD_PRELOAD openssl req -x509 -newkey ec "
            .. "-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %s -out %s -days 1 "
            .. "-subj /CN=jc-test -addext subjectAltName=%s >/dev/null 2>&1", key, cert, san))
        assert(ok == true or ok == 0, "openssl req failed")
        local port = closed_port()
        local pipe = assert(io.popen(string.format("echo $$; exec env -u LD_PRELOAD openssl s_server "
            .. "-accept 127.0.0.1:%d -cert %s -key %s -www 2>/dev/null", port, cert, key), "r"))
        local pid = tonumber(pipe:read("*l"))
        servers[#servers + 1] = { pipe = pipe, pid = pid, files = { key, cert } }
        local line   -- s_server prints "ACCEPT" once it listens (after a DH notice)
        for _ = 1, 5 do
            line = pipe:read("*l")
            if line == nil or line == "ACCEPT" then break end
        end
        assert.equal("ACCEPT", line)
        return port, cert
    end

    setup(function()
        if not have_openssl then return end
        dir = os.tmpname()
        os.remove(dir)
        local ok = os.execute("mkdir -m 700 " .. dir)
        assert(ok == true or ok == 0, "cannot make " .. dir)
    end)

    teardown(function()
        for _, s in ipairs(servers) do
            if s.pid then os.execute("kill " .. s.pid) end
            s.pipe:close()
            for _, f in ipairs(s.files) do os.remove(f) end
        end
        if dir then os.remove(dir) end
    end)

    after_each(function()
        collectgarbage("collect")
    end)

    it("fails with kind tls on a certificate from an unknown CA, and succeeds with ca_file", function()
        if not have_openssl then pending("openssl not found on PATH") return end
        local port, cert = tls_server("ip", "IP:127.0.0.1")
        local url = "https://127.0.0.1:" .. port .. "/"
        local res, err = core.http_request { url = url, timeout_ms = 10000 }
        assert_transport_err(res, err, "tls", "CURLE_PEER_FAILED_VERIFICATION")
        res, err = core.http_request { url = url, ca_file = cert, timeout_ms = 10000 }
        assert.is_nil(err)
        assert.equal(200, res.status)
        assert.matches("<HTML>", res.body, 1, true)
    end)

    it("fails with kind tls when the certificate names another host", function()
        if not have_openssl then pending("openssl not found on PATH") return end
        local port, cert = tls_server("other", "DNS:other.invalid")
        local res, err = core.http_request { url = "https://127.0.0.1:" .. port .. "/", ca_file = cert,
            timeout_ms = 10000 }
        assert_transport_err(res, err, "tls", "CURLE_PEER_FAILED_VERIFICATION")
    end)

    it("fails with kind tls when ca_file cannot be read", function()
        if not have_openssl then pending("openssl not found on PATH") return end
        local port = tls_server("nofile", "IP:127.0.0.1")
        local res, err = core.http_request { url = "https://127.0.0.1:" .. port .. "/",
            ca_file = dir .. "/does-not-exist.pem", timeout_ms = 10000 }
        assert_transport_err(res, err, "tls", "CURLE_SSL_CACERT_BADFILE")
    end)
end)

describe("jsoncontract.transport.curl", function()
    local pipe, port, base

    setup(function()
        pipe, port = start_server(60)
        base = "http://127.0.0.1:" .. port
    end)

    teardown(function()
        if pipe then stop_server(pipe, port) end
    end)

    after_each(function()
        collectgarbage("collect")
    end)

    it("has a _VERSION", function()
        assert.equal(core._VERSION, curl._VERSION)
    end)

    it("request() returns res, or nil and err", function()
        local res, err = curl.request { url = base .. "/ok" }
        assert.is_nil(err)
        assert.equal(200, res.status)
        res, err = curl.request { url = "http://127.0.0.1:" .. closed_port() .. "/" }
        assert_transport_err(res, err, "connect")
    end)

    it("request_many() returns results in order", function()
        local results = curl.request_many({ { url = base .. "/ok" }, { url = base .. "/status/429" } },
            { max_parallel = 2 })
        assert.equal(200, results[1].status)
        assert.equal(429, results[2].status)
        results = curl.request_many { { url = base .. "/html" } }
        assert.equal(200, results[1].status)
    end)
end)
