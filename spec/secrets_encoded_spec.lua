-- The key in the spellings a base64 or string-literal decoder gives back, against a hostile
-- provider (lua/jsoncontract/standin/faults.lua, /keyecho64) that echoes it, one form per
-- request: base64 at each of the 3 alignments, standard and URL-safe, with and without padding;
-- `user:key` as Basic auth carries it (three users); split across two adjacent string literals
-- (`"a" "b"`, `'a' + 'b'`, an array under an extra key, a refusal); a 401 quoting Basic auth.
-- Every output is searched for the key, for each of the base64 runs only the key determines
-- (one of which is in every base64 spelling of it), and for each half of the split, under
-- JSON, percent and JSON Pointer decoding: triage's files, stdout and stderr and its SQLite
-- store file; the same job on a PostgreSQL store (pg_dump); the review desk's pages (nginx);
-- the gateway's answers, headers, evidence and error log (nginx). Servers that cannot start
-- here say skipped by name.
local core = require "jsoncontract.core"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local secrets = require "jsoncontract.secrets"
local review_pg = require "support.review_pg"
local review_nginx = require "support.review_nginx"
local nginx = require "support.nginx_server"

local LUA = util.LUA
-- '+' and '/' in its standard base64, so the two alphabets differ
local KEY = "sk-b64ECHO~~>?-0123456789abcdefXYZ"
local FORMS = 20 -- /keyecho64's forms (faults.lua)
local ITEMS = 44

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- What must not appear: the key, both halves of the split (faults.lua splits after 11 bytes),
-- and each alignment's base64 run that only the key determines, in both alphabets.
local NEEDLES = { KEY, KEY:sub(1, 11), KEY:sub(12) }
for a = 0, 2 do
    local enc = secrets.base64(("\0"):rep(a) .. KEY)
    local first = ({ [0] = 0, 2, 3 })[a]
    local run = enc:sub(first + 1, math.floor(8 * (a + #KEY) / 6))
    NEEDLES[#NEEDLES + 1] = run
    NEEDLES[#NEEDLES + 1] = (run:gsub("%+", "-"):gsub("/", "_"))
end

local DECODERS = {
    function(s)
        return (s:gsub("\\u(%x%x%x%x)", function(h)
            local n = tonumber(h, 16)
            return n < 128 and string.char(n) or nil
        end))
    end,
    function(s) return (s:gsub("\\([\\/\"])", "%1")) end,
    function(s) return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end,
    function(s) return (s:gsub("~1", "/"):gsub("~0", "~")) end,
}
-- The first needle found in `s` under up to two layers of decoding, or nil.
local function leak(s)
    local seen, todo = { [s] = true }, { { s, 0 } }
    while #todo > 0 do
        local item = table.remove(todo)
        for _, n in ipairs(NEEDLES) do
            if item[1]:find(n, 1, true) then return n end
        end
        if item[2] < 2 then
            for _, d in ipairs(DECODERS) do
                local t = d(item[1])
                if not seen[t] then
                    seen[t] = true
                    todo[#todo + 1] = { t, item[2] + 1 }
                end
            end
        end
    end
    return nil
end

local function assert_clean(what, s)
    local n = leak(s)
    assert(n == nil, what .. " holds " .. tostring(n))
end

describe("the API key in base64 and split spellings, against a hostile provider", function()
    local pipe, port, dir

    local function hits(id)
        local res = assert(core.http_request { url = "http://127.0.0.1:" .. port .. "/hits/64-" .. id,
            timeout_ms = 5000 })
        return core.decode(res.body).hits
    end

    local function triage(out, id, extra)
        return util.sh(("env -u ANTHROPIC_API_KEY OPENAI_API_KEY=%s OPENAI_BASE_URL=http://127.0.0.1:%d/keyecho64/%s "
            .. "OPENAI_MODEL=echo-model %s bin/jsoncontract triage --input %s --out %s --record-text --parallel 2 %s "
            .. "2>&1"):format(q(KEY), port, id, LUA, q(dir .. "/mails.jsonl"), q(out), extra or ""))
    end

    setup(function()
        pipe, port = util.start_fault_server(300)
        dir = util.sh("mktemp -d"):match("^(%S+)")
        local f = assert(io.open(dir .. "/mails.jsonl", "w"))
        for i = 1, ITEMS do
            f:write(core.encode({ id = string.format("e%02d", i), text = "Hello, mail number " .. i .. "." }), "\n")
        end
        f:close()
    end)

    teardown(function()
        if port then util.stop_fault_server(pipe, port) end
        if dir then util.sh("rm -rf " .. q(dir)) end
    end)

    it("the spec's search sees each form the server sends", function()
        local b64 = function(s) return secrets.base64(s) end
        assert.truthy(leak("Basic " .. b64("reviewer@example.com:" .. KEY)))
        assert.truthy(leak(b64("xy" .. KEY .. "yz", true)))
        assert.truthy(leak('[\\"' .. KEY:sub(1, 11) .. '\\", \\"' .. KEY:sub(12) .. '\\"]'))
        assert.is_nil(leak("Basic " .. b64("reviewer@example.com:[redacted]")))
    end)

    it("reaches no triage file, SQLite store, stdout or stderr", function()
        local out, code = triage(dir .. "/run", "sqlite")
        assert.equal(0, code, out)
        assert.truthy(hits("sqlite") >= FORMS, "every form was served")
        assert_clean("triage's output", out)
        local files = util.lines("find " .. q(dir .. "/run") .. " -type f")
        assert.truthy(#files >= 5)
        local saw_store = false
        for _, path in ipairs(files) do
            if path:match("%.sqlite$") then saw_store = true end
            assert_clean(path, util.slurp(path))
        end
        assert.is_true(saw_store, "the SQLite store file was searched")
        local all = util.slurp(dir .. "/run/accepted.jsonl") .. util.slurp(dir .. "/run/review.jsonl")
            .. util.slurp(dir .. "/run/evidence.jsonl")
        assert.truthy(all:find("Basic [%w+/]*%[redacted%]"))
        assert.truthy(all:find("Echo [redacted]", 1, true))
    end)

    it("reaches no PostgreSQL store", function()
        local pg, why = review_pg.start()
        if not pg then return pending(why) end
        finally(function() review_pg.stop(pg) end)
        local out, code = triage(dir .. "/pgrun", "pg", "--store " .. q(pg.url))
        assert.equal(0, code, out)
        assert.truthy(hits("pg") >= FORMS, "every form was served")
        assert_clean("triage's output", out)
        local dump, dcode = util.sh("env -u LD_PRELOAD " .. pg.bin .. "/pg_dump -h 127.0.0.1 -p " .. pg.port .. " -U jc --data-only jobs")
        assert.equal(0, dcode, dump)
        assert.truthy(dump:find("COPY public.", 1, true))
        assert.truthy(dump:find("[redacted]", 1, true))
        assert_clean("pg_dump of the store", dump)
    end)

    it("reaches no page of the review desk", function()
        local why = review_nginx.missing()
        if why then return pending("review desk skipped: " .. why) end
        local desk = review_nginx.start(dir, nil, dir .. "/run")
        finally(function() review_nginx.stop(desk) end)
        local pages = 0
        for _, path in ipairs { "/", "/?state=all" } do
            local res = assert(curl.request { url = desk.base .. path, timeout_ms = 10000 })
            assert.equal(200, res.status)
            assert_clean(path, res.body)
        end
        for i = 1, ITEMS do
            local path = string.format("/item/e%02d", i)
            local res = assert(curl.request { url = desk.base .. path, timeout_ms = 10000 })
            if res.status == 200 then pages = pages + 1 end
            assert_clean(path, res.body)
        end
        assert.truthy(pages >= 5, "item pages served: " .. pages)
    end)

    it("reaches no answer, header, evidence line or log line of the gateway", function()
        local why = nginx.missing()
        if why then return pending("nginx skipped: " .. why) end
        local srv = nginx.start {
            error_level = "info",
            http = function(p, d)
                return table.concat({
                    "init_by_lua_block { local t = dofile(" .. string.format("%q", nginx.run("pwd"):match("^(%S+)")
                        .. "/examples/support_ticket.lua") .. ")",
                    "  require('jsoncontract.nginx').configure{ provider = 'openai', model = 'echo-model',",
                    "    api_key = " .. string.format("%q", KEY) .. ", policy = { transport_retries = 0 },",
                    "    base_url = 'http://127.0.0.1:" .. port .. "/keyecho64/gw',",
                    "    contracts = { echo = { name = 'echo', version = '1.0.0', schema = t.schema,",
                    "      instructions = 'Sort the mail.' } },",
                    "    evidence = { path = '" .. d .. "/evidence.jsonl', record_text = true, flush_ms = 50 } } }",
                    -- stop() sends TERM: without this the lines of requests served within the last
                    -- flush_ms are lost (all of them when the requests take less than 50 ms in all)
                    "exit_worker_by_lua_block { require('jsoncontract.nginx').exit_worker() }",
                    "server { listen 127.0.0.1:" .. p .. ";",
                    "  location = /t { content_by_lua_block { require('jsoncontract.nginx').serve('echo') } }",
                    "  location = / { return 200 'ok'; } }",
                }, "\n")
            end,
        }
        local evdir = srv.dir
        finally(function() srv:stop() end)
        local statuses = {}
        for i = 1, FORMS + 4 do
            local res = assert(curl.request { url = srv.base .. "/t", method = "POST", body = "mail " .. i,
                timeout_ms = 30000 })
            statuses[res.status] = true
            assert_clean("answer " .. i, res.body)
            for k, v in pairs(res.headers) do assert_clean("header " .. k, v) end
        end
        assert.truthy(hits("gw") >= FORMS, "every form was served")
        assert.is_true(statuses[200] and statuses[202] and true or false, "accepted and handed-over answers")
        srv:stop(true)
        assert_clean("the error log", util.read(evdir .. "/error.log") or "")
        local ev = util.read(evdir .. "/evidence.jsonl") or ""
        assert.truthy(#ev > 0)
        assert_clean("the gateway's evidence", ev)
        util.sh("rm -rf " .. q(evdir))
    end)
end)
