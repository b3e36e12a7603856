-- The nginx.conf of docs/openresty.md runs as written: the snippet is taken from that page,
-- only what the page says to change is changed (paths, the port, the provider's base URL
-- for the stand-in model, the evidence file), and Debian's nginx serves it on 127.0.0.1.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local nginx = require "support.nginx_server"

local DOC = "docs/openresty.md"

-- `s` with every plain occurrence of `from` replaced by `to`; raises when there is none, so a
-- docs change that moves what the spec adapts fails here, not later in nginx.
local function replace(s, from, to)
    local i = s:find(from, 1, true)
    assert(i, "the nginx.conf of " .. DOC .. " no longer holds " .. from)
    local out, at = {}, 1
    while i do
        out[#out + 1] = s:sub(at, i - 1) .. to
        at = i + #from
        i = s:find(from, at, true)
    end
    out[#out + 1] = s:sub(at)
    return table.concat(out)
end

describe("docs/openresty.md's nginx.conf", function()
    local why = nginx.missing()
    if why then
        it("runs nginx", function() pending("nginx skipped: " .. why) end)
        return
    end

    it("serves the contract, the metrics and the JSON 413 as written, and keeps the evidence", function()
        local readme = assert(util.read(DOC))
        local snippet = assert(readme:match("```nginx\n(# nginx%.conf\n.-)```"), DOC .. " has an nginx.conf block")
        local standin, sport = nginx.start_standin()
        local root = nginx.run("pwd"):match("^(%S+)")
        local evidence_file
        local ok, srv = pcall(nginx.start, {
            ready = "/metrics",
            env = { OPENAI_API_KEY = "sk-readme-spec-0123456789" },
            whole = function(port, dir)
                evidence_file = dir .. "/evidence.jsonl"
                local conf = replace(snippet, "/srv/jsoncontract", root)
                conf = replace(conf, "listen 8080;", "listen 127.0.0.1:" .. port .. ";")
                conf = replace(conf, "/var/log/jsoncontract/evidence.jsonl", evidence_file)
                return replace(conf, 'provider = "openai",',
                    'provider = "openai", base_url = "http://127.0.0.1:' .. sport .. '",')
            end,
        })
        finally(function()
            if ok then srv:stop() end
            util.stop_standin(standin)
        end)
        -- nginx is here (above): a snippet that does not start is the page's defect
        assert(ok, srv)

        -- the page's curl line
        local mail = readme:match("%-%-data '([^']+)'")
        local res = assert(curl.request { url = srv.base .. "/triage", method = "POST", body = mail,
            headers = { ["X-Request-Id"] = "order-mail-77" }, timeout_ms = 30000 })
        assert.equal(200, res.status, res.body)
        local v = jc.decode(res.body)
        assert.same({ "delivery", "1042", true }, { v.intent, v.order_id, v.urgent })
        assert.same({ "order-mail-77", "support_ticket" }, { res.headers["x-request-id"], res.headers["x-contract"] })

        -- over client_max_body_size (1m): the gateway's JSON, not nginx's HTML page
        res = assert(curl.request { url = srv.base .. "/triage", method = "POST", body = ("x"):rep(1100 * 1024),
            timeout_ms = 30000 })
        assert.equal(413, res.status)
        assert.equal("body_too_large", jc.decode(res.body).error.code)

        res = assert(curl.request { url = srv.base .. "/metrics", timeout_ms = 5000 })
        assert.equal(200, res.status)
        assert.truthy(res.body:find('jsoncontract_requests_total{contract="support_ticket",code="200",'
            .. 'outcome="accepted"} 1', 1, true), res.body)

        -- nginx -s stop (TERM): exit_worker writes what the workers still buffered
        local dir = srv.dir
        srv:stop(true)
        ok = false
        local text = util.read(evidence_file) or ""
        nginx.run("rm -rf '" .. dir .. "'")
        local lines = {}
        for line in text:gmatch("[^\n]+") do lines[#lines + 1] = jc.decode(line) end
        assert.is_true(#lines >= 1, text)
        assert.equal("order-mail-77", lines[1].request_id)
        assert.falsy(text:find("sk-readme-spec", 1, true))
    end)
end)
