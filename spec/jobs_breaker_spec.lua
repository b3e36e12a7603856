-- The circuit breaker of a batch job: failures that no item can fix (the model unreachable, a
-- wrong key) stop the job with exit 1 and a message naming the cause and the fix, send nothing
-- to review, and leave the items waiting, so `--resume` with a working model settles them all.
-- Also the provider facts a job runs with: a job resumes with its own provider's key variable,
-- and a custom base URL has no rate limit unless one is given.
local util = require "support.util"
local store = require "jsoncontract.jobs.store"
local policy = require "jsoncontract.run.policy"
local breaker = require "jsoncontract.jobs.breaker"
local errors = require "jsoncontract.errors"

local LUA = util.LUA

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- bin/jsoncontract with no provider key set but those in `env` ("NAME=value ...").
local function cli(args, env)
    return util.sh(("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u GEMINI_API_KEY "
        .. "-u OPENAI_BASE_URL -u ANTHROPIC_BASE_URL %s %s bin/jsoncontract %s"):format(env or "", LUA, args))
end

-- The job's item counts straight from its store.
local function counts(url)
    local st = assert(store.open(url, { create = false }))
    local job = assert(st:latest_job())
    local c = st:counts(job.id)
    local review = st:items(job.id, { status = "human_review" })
    st:close()
    return c, #review
end

-- The job's evidence rows from its store, by item (`{pass, seq, rec, json}` in the order
-- written), how many there are, and each item's outcomes and its records as the desk reads them.
local function evidence_rows(url)
    local st = assert(store.open(url, { create = false }))
    finally(function() st:close() end)
    local job = assert(st:latest_job())
    local rows = assert(st:query("SELECT item_id, pass, seq, record_json FROM evidence WHERE job_id = ? "
        .. "ORDER BY item_id, pass, seq", { job.id }))
    local by_item = {}
    for _, r in ipairs(rows) do
        local list = by_item[r.item_id] or {}
        by_item[r.item_id] = list
        list[#list + 1] = { pass = tonumber(r.pass), seq = tonumber(r.seq), json = r.record_json,
            rec = assert(require("jsoncontract.core").decode(r.record_json)) }
    end
    local items = {}
    for id in pairs(by_item) do
        items[id] = { outcomes = assert(st:item(job.id, id)).outcomes, desk = assert(st:evidence_for(job.id, id)) }
    end
    return by_item, #rows, items
end

-- The items held back in a first run (`before`), after a resume settled them (`after`, `items`):
-- their held-back rows first, unchanged, then the new ones, numbered 1, 2, ... in one pass; the
-- desk's list the same; the outcome recorded once. Returns how many items it checked.
local function held_back_then_settled(before, after, items)
    local n = 0
    for id, old in pairs(before) do
        n = n + 1
        local new = after[id]
        assert.truthy(#new > #old, id .. ": no attempt after the held-back ones")
        for i, row in ipairs(new) do
            assert.same({ 1, i }, { row.pass, row.seq }, id)
            if old[i] then assert.equal(old[i].json, row.json, id .. " row " .. i) end
        end
        assert.equal(#new, #items[id].desk, id)
        assert.equal(new[#new].rec.request_id, items[id].desk[#new].request_id, id)
        assert.equal(1, #items[id].outcomes, id)
    end
    return n
end

local function lines(path)
    local n = 0
    for line in (util.read(path) or ""):gmatch("[^\n]+") do if line:match("%S") then n = n + 1 end end
    return n
end

-- The key server (spec/support/key_server.lua): 401 for any key but `key`.
local function key_server(key)
    return util.start_server(("env -u LD_PRELOAD %s spec/support/key_server.lua %s 120"):format(LUA, q(key)),
        "^PORT (%d+)$")
end

local function stop_key_server(pipe, port)
    require("jsoncontract.core").http_request { url = "http://127.0.0.1:" .. port .. "/quit", timeout_ms = 5000 }
    pipe:close()
end

describe("failures no item can fix", function()
    it("are told apart from the failures of one item", function()
        local function t(kind, fields)
            return errors.new("transport", kind, "m", fields)
        end
        assert.equal("refused", policy.systemic(t("connect", { detail = "Connection refused" })))
        assert.equal("unreachable", policy.systemic(t("connect", { curl_code = "CURLE_COULDNT_CONNECT" })))
        assert.equal("dns", policy.systemic(t("connect", { curl_code = "CURLE_COULDNT_RESOLVE_HOST" })))
        assert.equal("tls", policy.systemic(t("tls")))
        assert.equal("unauthorized", policy.systemic(t("client_error", { status = 401 })))
        assert.equal("forbidden", policy.systemic(t("client_error", { status = 403 })))
        assert.equal("not_found", policy.systemic(t("client_error", { status = 404 })))
        assert.equal("quota", policy.systemic(t("quota_exceeded", { status = 429 })))
        -- one item's failures, or passing ones
        assert.is_nil(policy.systemic(t("client_error", { status = 400 })))
        assert.is_nil(policy.systemic(t("rate_limited", { status = 429 })))
        assert.is_nil(policy.systemic(t("server_error", { status = 500 })))
        assert.is_nil(policy.systemic(t("timeout")))
        assert.is_nil(policy.systemic(errors.new("schema", "invalid", "m")))
        assert.is_nil(policy.systemic(nil))
    end)

    it("are still each request's 502 at the gateway (a 429 or an overload its 503)", function()
        -- (the gateway counts every answer in jsoncontract_requests_total{code} and the reason in
        -- jsoncontract_outcomes_total{category,kind}: spec/nginx_gateway_spec.lua)
        local gw = require "jsoncontract.nginx"
        local function status(kind, fields)
            return gw.STATUS[gw.failure_code { status = "human_review",
                reason = errors.new("transport", kind, "m", fields) }]
        end
        assert.same({ 502, 502, 502, 502, 503, 503 }, { status("connect"), status("tls"),
            status("client_error", { status = 401 }), status("client_error", { status = 404 }),
            status("rate_limited", { status = 429 }), status("overloaded", { status = 503 }) })
    end)

    it("trip the breaker only N in a row, and it says the cause and the fix without the key", function()
        local b = breaker.new { limit = 3, provider = "gemini", model = "gm", secret = "sk-secret-123456" }
        local denied = { status = "human_review", reason = errors.new("transport", "client_error",
            "gemini HTTP 401: key sk-secret-123456 is wrong", { status = 401 }) }
        assert.equal("unauthorized", b:observe(denied))
        assert.equal("unauthorized", b:observe(denied))
        assert.is_nil(b:observe({ status = "human_review", reason = errors.new("schema", "invalid", "m") }))
        assert.is_nil(b:observe({ status = "accepted" }))
        assert.equal("unauthorized", b:observe(denied))
        assert.equal("unauthorized", b:observe(denied))
        assert.is_false(b:tripped())
        assert.is_nil(b:message())
        b:observe(denied)
        assert.is_true(b:tripped())
        local msg = b:message()
        assert.truthy(msg:find("https://generativelanguage.googleapis.com answered 401 Unauthorized 3 times in a row",
            1, true), msg)
        assert.truthy(msg:find("check GEMINI_API_KEY", 1, true), msg)
        assert.is_nil(msg:find("sk-secret-123456", 1, true))
        assert.equal(5, b.held_back)
        assert.has_error(function() breaker.new { limit = 0 } end)
    end)

    it("stop triage on an unreachable model: exit 1, nothing to review; --resume with a working model "
        .. "settles every item", function()
        local dir = util.fresh_path()
        local standin
        finally(function()
            if standin then util.stop_standin(standin) end
            os.execute("rm -rf " .. q(dir))
        end)
        local port = util.closed_port()
        local out, code = cli(("triage --input examples/mailbox.jsonl --limit 10 --base-url http://127.0.0.1:%d "
            .. "--model m --parallel 4 --out %s"):format(port, q(dir)))
        assert.equal(1, code, out)
        assert.truthy(out:find(("the model at http://127.0.0.1:%d did not accept the connection 5 times in a row: "
            .. "check --base-url"):format(port), 1, true)
            or out:find(("the model at http://127.0.0.1:%d refused the connection 5 times in a row: "
            .. "check --base-url"):format(port), 1, true), out)
        assert.truthy(out:find("continue with --resume " .. dir, 1, true), out)
        assert.is_nil(out:find("to review (", 1, true), out)
        local c, review = counts(dir .. "/job.sqlite")
        assert.equal(0, review)
        assert.equal(0, c.done)
        assert.equal(10, c.pending)
        assert.equal(0, lines(dir .. "/review.jsonl"))
        local summary = require("jsoncontract.core").decode(util.read(dir .. "/summary.json"))
        assert.same({ "breaker", 10, 0 }, { summary.stopped_by, summary.pending, summary.human_review })
        -- every attempt made left its evidence: in the store, the desk's list, evidence.jsonl,
        -- and the exchanges counted
        local held, n = evidence_rows(dir .. "/job.sqlite")
        assert.truthy(n >= 5, n)
        for id, list in pairs(held) do
            for _, row in ipairs(list) do assert.same({ "transport", "connect" }, { row.rec.gate, row.rec.kind }, id) end
        end
        assert.same({ n, n, n }, { c.exchanges, summary.exchanges, lines(dir .. "/evidence.jsonl") })

        local sport
        standin, sport = util.start_standin { examples_dir = "examples", delay_ms = 0 }
        out, code = cli(("triage --resume %s --base-url http://127.0.0.1:%d"):format(q(dir), sport))
        assert.equal(0, code, out)
        c = counts(dir .. "/job.sqlite")
        assert.equal(10, c.done)
        assert.equal(0, c.pending)
        assert.equal(10, lines(dir .. "/accepted.jsonl") + lines(dir .. "/review.jsonl"))
        local after, m, items = evidence_rows(dir .. "/job.sqlite")
        assert.truthy(held_back_then_settled(held, after, items) >= 1)
        assert.same({ m, m }, { c.exchanges, lines(dir .. "/evidence.jsonl") })
    end)

    it("stop triage on a wrong key (401) at the first items, without showing the key; --resume with the "
        .. "right key settles every item", function()
        local pipe, port = key_server("sk-right-key-0001")
        local dir = util.fresh_path()
        -- (busted keeps one finally per test)
        finally(function() stop_key_server(pipe, port) os.execute("rm -rf " .. q(dir)) end)
        local out, code = cli(("triage --input examples/mailbox.jsonl --base-url http://127.0.0.1:%d --model m "
            .. "--parallel 2 --fail-after 3 --out %s"):format(port, q(dir)), "OPENAI_API_KEY=sk-wrong-key-0002")
        assert.equal(1, code, out)
        assert.truthy(out:find("answered 401 Unauthorized 3 times in a row: the API key is wrong or missing: "
            .. "check OPENAI_API_KEY", 1, true), out)
        assert.is_nil(out:find("sk-wrong-key-0002", 1, true))
        local c, review = counts(dir .. "/job.sqlite")
        assert.equal(0, review)
        assert.equal(12, c.pending)
        assert.equal(0, lines(dir .. "/review.jsonl"))
        -- the refused exchanges are recorded, each with its 401, and never the key
        local held, n = evidence_rows(dir .. "/job.sqlite")
        assert.truthy(n >= 3, n)
        for id, list in pairs(held) do
            for _, row in ipairs(list) do
                assert.same({ "transport", 401 }, { row.rec.gate, row.rec.http_status }, id)
                assert.is_nil(row.json:find("sk-wrong-key-0002", 1, true), row.json)
            end
        end
        local exported = util.read(dir .. "/evidence.jsonl")
        assert.equal(n, lines(dir .. "/evidence.jsonl"))
        assert.is_nil(exported:find("sk-wrong-key-0002", 1, true))
        assert.truthy(exported:find('"http_status":401', 1, true), exported)

        out, code = cli(("triage --resume %s"):format(q(dir)), "OPENAI_API_KEY=sk-right-key-0001")
        assert.equal(0, code, out)
        c, review = counts(dir .. "/job.sqlite")
        assert.equal(12, c.done)
        -- the key server's "{}" is no ticket: these are the model's to settle, and it could not
        assert.equal(12, review)
        local after, m, items = evidence_rows(dir .. "/job.sqlite")
        assert.truthy(held_back_then_settled(held, after, items) >= 1)
        for id in pairs(held) do assert.equal(200, after[id][#after[id]].rec.http_status, id) end
        assert.same({ m, m }, { c.exchanges, lines(dir .. "/evidence.jsonl") })
    end)

    it("stop triage on a TLS failure and on a 404 for the path, each naming what to check", function()
        local pipe, port = util.start_fault_server(60)
        local dir1, dir2 = util.fresh_path(), util.fresh_path()
        finally(function()
            util.stop_fault_server(pipe, port)
            os.execute("rm -rf " .. q(dir1) .. " " .. q(dir2))
        end)
        -- https:// to a plain HTTP server
        local out, code = cli(("triage --input examples/mailbox.jsonl --limit 6 --base-url https://127.0.0.1:%d "
            .. "--model m --fail-after 2 --out %s"):format(port, q(dir1)))
        assert.equal(1, code, out)
        assert.truthy(out:find(("the TLS handshake with https://127.0.0.1:%d failed 2 times in a row: check "
            .. "--base-url (https:// for a server with TLS, http:// for one without)"):format(port), 1, true), out)
        local c, review = counts(dir1 .. "/job.sqlite")
        assert.same({ 0, 6 }, { review, c.pending })
        out, code = cli(("triage --input examples/mailbox.jsonl --limit 6 --base-url http://127.0.0.1:%d/nothing "
            .. "--model m9 --fail-after 2 --out %s"):format(port, q(dir2)))
        assert.equal(1, code, out)
        assert.truthy(out:find("answered 404 Not Found 2 times in a row: there is no model m9 there, or no such "
            .. "path: check --model and --base-url", 1, true), out)
        c, review = counts(dir2 .. "/job.sqlite")
        assert.same({ 0, 6 }, { review, c.pending })
    end)

    it("send an item round again after a blip shorter than --fail-after, never to review", function()
        local pipe, port = util.start_fault_server(60)
        local dir = util.fresh_path()
        finally(function()
            util.stop_fault_server(pipe, port)
            os.execute("rm -rf " .. q(dir))
        end)
        -- the fault server's first answer on this path is a 401, every later one a reply
        local id = ("blip%d"):format(math.random(1, 1e9))
        local path = "/f/" .. id .. "/auth401+ok"
        local out, code = cli(("triage --input examples/mailbox.jsonl --limit 4 --base-url http://127.0.0.1:%d%s "
            .. "--model m --parallel 1 --max-attempts 1 --fail-after 2 --out %s"):format(port, path, q(dir)),
            "OPENAI_API_KEY=sk-blip-0009")
        assert.equal(0, code, out)
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local job = assert(st:latest_job())
        local c = st:counts(job.id)
        local rows = st:items(job.id, { state = "done" })
        st:close()
        assert.equal(4, c.done)
        -- ({"label": "bug"} is no ticket: the model's to settle, and it could not)
        for _, r in ipairs(rows) do assert.equal("schema", r.reason_category, r.item_id) end
        -- the 401 was asked, and its item once more
        local hits = require("jsoncontract.core").http_request { url = ("http://127.0.0.1:%d/hits/%s"):format(port, id),
            timeout_ms = 5000 }
        assert.equal('{"hits":5}', hits.body)
    end)

    it("stop a worker the same way (--fail-after on worker)", function()
        local pipe, port = key_server("sk-right-key-0003")
        local db = util.fresh_path() .. ".sqlite"
        finally(function() stop_key_server(pipe, port) os.remove(db) end)
        local out, code = cli(("enqueue --store %s --job examples/support_ticket.lua --input examples/mailbox.jsonl "
            .. "--limit 6 --base-url http://127.0.0.1:%d --model m"):format(q(db), port), "OPENAI_API_KEY=sk-wrong-key-0004")
        assert.equal(0, code, out)
        out, code = cli(("worker --store %s --fail-after 2 --parallel 1"):format(q(db)),
            "OPENAI_API_KEY=sk-wrong-key-0004")
        assert.equal(1, code, out)
        assert.truthy(out:find("the worker stopped: the model at http://127.0.0.1:" .. port
            .. " answered 401 Unauthorized 2 times in a row", 1, true), out)
        local c, review = counts(db)
        assert.equal(0, review)
        assert.equal(6, c.pending)
        out, code = cli(("worker --store %s --fail-after 0"):format(q(db)), "OPENAI_API_KEY=sk-right-key-0003")
        assert.equal(2, code, out)
        assert.truthy(out:find("option --fail-after must be at least 1", 1, true), out)
    end)
end)

describe("provider facts", function()
    it("resume a Gemini job with GEMINI_API_KEY, never another provider's key", function()
        local pipe, port = key_server("gm-right-key-0005")
        local dir = util.fresh_path()
        finally(function() stop_key_server(pipe, port) os.execute("rm -rf " .. q(dir)) end)
        -- started with a key the server refuses: the breaker names Gemini's key variable
        local out, code = cli(("triage --provider gemini --input examples/mailbox.jsonl --limit 4 --base-url "
            .. "http://127.0.0.1:%d --model gm --fail-after 2 --out %s"):format(port, q(dir)),
            "GEMINI_API_KEY=gm-wrong-key-0006")
        assert.equal(1, code, out)
        assert.truthy(out:find("check GEMINI_API_KEY", 1, true), out)
        -- OpenAI's key holds the right value: a resume reading it would be let in
        out, code = cli(("triage --resume %s --fail-after 2"):format(q(dir)),
            "OPENAI_API_KEY=gm-right-key-0005 GEMINI_API_KEY=gm-wrong-key-0006")
        assert.equal(1, code, out)
        assert.truthy(out:find("check GEMINI_API_KEY", 1, true), out)
        out, code = cli(("triage --resume %s"):format(q(dir)), "GEMINI_API_KEY=gm-right-key-0005")
        assert.equal(0, code, out)
        assert.equal(4, (counts(dir .. "/job.sqlite")).done)
    end)

    it("refuse to resume a job without its provider's key (keys are never stored)", function()
        local pipe, port = key_server("gm-right-key-0007")
        local dir = util.fresh_path()
        finally(function() stop_key_server(pipe, port) os.execute("rm -rf " .. q(dir)) end)
        -- a job on the provider's own host (its base URL from the environment, not stored)
        local out, code = cli(("triage --provider openai --input examples/mailbox.jsonl --limit 2 --model m "
            .. "--fail-after 1 --out %s"):format(q(dir)),
            ("OPENAI_API_KEY=wrong-0008 OPENAI_BASE_URL=http://127.0.0.1:%d"):format(port))
        assert.equal(1, code, out)
        out, code = cli(("triage --resume %s"):format(q(dir)), "ANTHROPIC_API_KEY=gm-right-key-0007")
        assert.equal(2, code, out)
        assert.truthy(out:find("whose key is read from OPENAI_API_KEY, which is not set here", 1, true), out)
    end)

    it("refuse to start or resume a job at its provider's own host without a key (--base-url naming it)", function()
        local pipe, port = key_server("gm-right-key-0009")
        local dir = util.fresh_path()
        finally(function() stop_key_server(pipe, port) os.execute("rm -rf " .. q(dir)) end)
        local out, code = cli(("triage --provider openai --input examples/mailbox.jsonl --limit 2 --model m "
            .. "--base-url https://API.openai.com./v1 --out %s"):format(q(dir)))
        assert.equal(2, code, out)
        assert.truthy(out:find("openai's API (api.openai.com) refuses every request without an API key", 1, true),
            out)
        out, code = cli(("triage --provider openai --input examples/mailbox.jsonl --limit 2 --model m "
            .. "--fail-after 1 --out %s"):format(q(dir)),
            ("OPENAI_API_KEY=wrong-0010 OPENAI_BASE_URL=http://127.0.0.1:%d"):format(port))
        assert.equal(1, code, out)
        out, code = cli(("triage --resume %s --base-url https://api.openai.com"):format(q(dir)))
        assert.equal(2, code, out)
        assert.truthy(out:find("openai's API (api.openai.com) refuses every request without an API key", 1, true),
            out)
    end)

    it("choose the provider by the key set, with its default model", function()
        local setup = require "jsoncontract.setup"
        local function env(t) return function(n) return t[n] end end
        local p = assert(setup.choose_provider({}, env { GEMINI_API_KEY = "g" }))
        assert.same({ "gemini", "g", "gemini-2.5-flash" }, { p.provider, p.api_key, p.model })
        p = assert(setup.choose_provider({}, env { GEMINI_API_KEY = "g", ANTHROPIC_API_KEY = "a" }))
        assert.equal("anthropic", p.provider)
        p = assert(setup.choose_provider({}, env { GEMINI_API_KEY = "g", OPENAI_API_KEY = "o", OPENAI_MODEL = "" }))
        assert.same({ "openai", "gpt-4o-mini" }, { p.provider, p.model })
        p = assert(setup.choose_provider({ provider = "openai_responses" }, env { OPENAI_API_KEY = "o" }))
        assert.same({ "openai_responses", "o" }, { p.provider, p.api_key })
        local none, err = setup.choose_provider({ provider = "gemini" }, env {})
        assert.is_nil(none)
        assert.truthy(err:find("needs its key in GEMINI_API_KEY", 1, true), err)
        assert.same({ "OPENAI_API_KEY", "anthropic" }, { setup.provider_env("openai", env {}).key_env,
            setup.choose_provider({}, env { ANTHROPIC_API_KEY = "a" }).provider })
        assert.equal("gm", setup.provider_env("gemini", env { GEMINI_API_KEY = "gm", OPENAI_API_KEY = "o" }).api_key)
    end)

    it("state the key variable, default model, base URL and rate limits of every provider, with sources", function()
        local providers = require "jsoncontract.providers"
        for _, name in ipairs(providers.names) do
            local f = providers.facts(name)
            assert.truthy(f.base_url and f.base_url:match("^https?://"), name)
            if f.rate_limit then
                assert.truthy(f.rate_limit.rpm > 0 and f.rate_limit.tpm > 0, name)
                assert.truthy(type(f.rate_limit.source) == "string" and #f.rate_limit.source > 10, name)
            end
        end
        assert.same({ "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OLLAMA_API_KEY", "OPENAI_API_KEY" },
            providers.key_variables())
    end)
end)

describe("rate limits", function()
    local ratelimit = require "jsoncontract.jobs.ratelimit"

    it("are the provider's on its own API host only", function()
        local l, words = ratelimit.limits("openai", nil)
        assert.same({ 500, 200000 }, { l.rpm, l.tpm })
        assert.truthy(words:find("500 requests and 200000 tokens a minute (openai's defaults for api.openai.com",
            1, true), words)
        l = ratelimit.limits("openai", "https://API.openai.com:443/v1")
        assert.equal(500, l.rpm)
        -- the same host in the spellings a transport sends there too (the root's dot, userinfo)
        assert.equal(500, ratelimit.limits("openai", "https://x@api.openai.com./v1").rpm)
        l, words = ratelimit.limits("anthropic", "https://api.anthropic.com")
        assert.same({ 50, 40000 }, { l.rpm, l.tpm })
        assert.truthy(words:find("docs.anthropic.com/en/api/rate-limits", 1, true), words)
    end)

    it("are none on a custom base URL unless --rpm/--tpm give them, and none on the stand-in", function()
        local l, words = ratelimit.limits("openai", "http://127.0.0.1:8080/v1")
        assert.is_nil(l)
        assert.equal("rate limits: none (127.0.0.1:8080 is not openai's API host; --rpm/--tpm set them)", words)
        l, words = ratelimit.limits("openai", "http://127.0.0.1:8080/v1", 100, nil)
        assert.same({ 100 }, { l.rpm, l.tpm })
        assert.equal("rate limits: 100 requests a minute (--rpm/--tpm)", words)
        l = ratelimit.limits("openai", nil, 0, 0)
        assert.is_nil(l)
        l, words = ratelimit.limits("openai", nil, nil, nil, true)
        assert.is_nil(l)
        assert.truthy(words:find("none (the stand-in", 1, true), words)
        l = ratelimit.limits("llamacpp", nil)
        assert.is_nil(l)
    end)

    it("are said on the start line: a local server runs without the provider's limits", function()
        local standin, sport = util.start_standin { examples_dir = "examples", delay_ms = 0 }
        local dir = util.fresh_path()
        finally(function() util.stop_standin(standin) os.execute("rm -rf " .. q(dir)) end)
        local out, code = cli(("triage --input examples/mailbox.jsonl --limit 3 --base-url http://127.0.0.1:%d "
            .. "--model m --out %s"):format(sport, q(dir)), "OPENAI_API_KEY=sk-local")
        assert.equal(0, code, out)
        assert.truthy(out:find(("rate limits: none (127.0.0.1:%d is not openai's API host"):format(sport), 1, true),
            out)
        assert.is_nil(out:find("waited", 1, true), out)
    end)
end)

-- A job folder with a job module whose one rule is `rule_src` (Lua source of a function, with
-- `calls` counting its calls) and `n` input records; the folder is removed after the test.
local function rule_job(rule_src, n)
    local dir = util.fresh_path()
    finally(function() os.execute("rm -rf " .. q(dir)) end)
    os.execute("mkdir -p " .. q(dir))
    local f = assert(io.open(dir .. "/job.lua", "w"))
    local text = ([[
local jc = require "jsoncontract"
local calls = 0
return {
    contract = jc.contract {
        name = "own_mood", version = "1.0.0", instructions = "Say the mood of the note.",
        schema = { type = "object", additionalProperties = false, required = { "mood" },
            properties = { mood = { type = "string", enum = { "glad", "sad" } } } },
        rules = { { name = "known", check = RULE } },
    },
    context = false,
}
]]):gsub("RULE", function() return rule_src end)
    f:write(text)
    f:close()
    f = assert(io.open(dir .. "/in.jsonl", "w"))
    for i = 1, n do f:write(('{"id":"n%d","text":"note %d"}\n'):format(i, i)) end
    f:close()
    return dir
end

describe("rules that cannot run", function()
    it("trip the breaker after N such items, in a row or not, and a verdict of a rule does not count", function()
        local b = breaker.new { limit = 3 }
        local raised = { status = "human_review", reason = errors.new("rules", "rule_error",
            "rule known raised: attempt to index a nil value", { rule = "known" }) }
        local said_no = { status = "human_review", reason = errors.new("rules", "rule_failed", "no such order") }
        assert.equal("rule", b:observe(raised))
        assert.is_nil(b:observe(said_no))
        assert.is_nil(b:observe({ status = "accepted" }))
        assert.equal("rule", b:observe({ status = "human_review",
            reason = errors.new("rules", "rule_timeout", "rule known ran out of its step budget") }))
        assert.is_false(b:tripped())
        assert.equal("rule", b:observe(raised))
        assert.is_true(b:tripped())
        local msg = b:message()
        assert.truthy(msg:find("the contract's rules could not run on 3 items (rule_error: rule known raised", 1, true),
            msg)
        assert.truthy(msg:find("fix the rule", 1, true), msg)
    end)

    it("stop run --job with exit 1 and nothing in review when a rule raises on every item", function()
        local dir = rule_job("function(v) return v.missing.field == 1 end", 12)
        local out, code = cli(("run --job %s --input %s --out %s --delay-ms 0 --fail-after 3"):format(
            q(dir .. "/job.lua"), q(dir .. "/in.jsonl"), q(dir .. "/out")))
        assert.equal(1, code, out)
        -- (it stops taking at the third; items already in flight may add to the count)
        assert.truthy(out:find("the job stopped: the contract's rules could not run on %d+ items %(rule_error: rule "
            .. "known raised"), out)
        assert.equal(0, lines(dir .. "/out/review.jsonl"), out)
        local c = counts(dir .. "/out/job.sqlite")
        assert.equal(0, c.done or 0)
    end)
end)

describe("a rule that cannot run on a few items", function()
    it("lets the run settle the rest, keeps those items waiting and out of review, and exits 1", function()
        local dir = rule_job([[function()
            calls = calls + 1
            if calls == 3 or calls == 7 then error("no ledger row for call " .. calls) end
            return true
        end]], 10)
        local out, code = cli(("run --job %s --input %s --out %s --delay-ms 0 --parallel 2"):format(
            q(dir .. "/job.lua"), q(dir .. "/in.jsonl"), q(dir .. "/out")))
        assert.equal(1, code, out)
        assert.truthy(out:find("the job did not finish: the contract's rules could not run on 2 items", 1, true), out)
        assert.truthy(out:find("no ledger row for call ", 1, true), out)
        local c, in_review = counts(dir .. "/out/job.sqlite")
        assert.equal(8, c.done, out)
        assert.equal(2, c.pending, out)
        local review = util.read(dir .. "/out/review.jsonl") or ""
        assert.is_nil(review:find("rule_error", 1, true), review)
        assert.equal(in_review, lines(dir .. "/out/review.jsonl"))
        -- the two attempts whose rule raised are recorded with the rule's fault, and exported
        local held = {}
        local by_item, n = evidence_rows(dir .. "/out/job.sqlite")
        local st = assert(store.open(dir .. "/out/job.sqlite", { create = false }))
        for _, row in ipairs(assert(st:items(assert(st:latest_job()).id, { state = "pending" }))) do
            local list = assert(by_item[row.item_id], row.item_id)
            assert.same({ "rules", "rule_error" }, { list[#list].rec.gate, list[#list].rec.kind }, row.item_id)
            held[row.item_id] = list
        end
        st:close()
        assert.same({ n, n }, { c.exchanges, lines(dir .. "/out/evidence.jsonl") })
        local _, faults = (util.read(dir .. "/out/evidence.jsonl") or ""):gsub('"kind":"rule_error"', "")
        assert.equal(2, faults)

        -- the rule runs now (a new process counts its calls from 0): the two are settled after
        -- their recorded faults
        out, code = cli(("run --resume %s --delay-ms 0"):format(q(dir .. "/out")))
        assert.equal(0, code, out)
        c = counts(dir .. "/out/job.sqlite")
        assert.same({ 10, 0 }, { c.done, c.pending })
        local after, m, items = evidence_rows(dir .. "/out/job.sqlite")
        assert.equal(2, held_back_then_settled(held, after, items))
        assert.same({ m, m }, { c.exchanges, lines(dir .. "/out/evidence.jsonl") })
    end)
end)
