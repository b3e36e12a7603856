-- Job modules as batch jobs: the four examples over their shipped inputs through `run --job`
-- (the embedded stand-in over HTTP), kill -9 and --resume, an export in the run's shape, a desk
-- decision through the desk's own code, PostgreSQL workers, a job of another record shape, the
-- Lua API (jc.job), and failing closed: rules without a context, a context that cannot open.
local core = require "jsoncontract.core"
local util = require "support.util"
local jobs = require "support.jobs"
local store = require "jsoncontract.jobs.store"

local LUA = util.LUA
local CPATH = os.getenv("JC_TEST_CPATH") or "build/lua5.4/?.so"
local q = jobs.q
local tmpdir = util.fresh_path

local EXAMPLES = { "support_ticket", "ticket_priority", "leave_request", "blog_category" }

local function jc_cmd(args)
    return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u GEMINI_API_KEY %s bin/jsoncontract %s")
        :format(LUA, args)
end

local function sh(args, env)
    return util.sh((env and ("env " .. env .. " ") or "") .. jc_cmd(args) .. " 2>&1")
end

-- The ids and texts of a shipped input.
local function input_of(name)
    local ids, by_text = {}, {}
    for _, r in ipairs(jobs.jsonl("examples/" .. name .. ".jsonl")) do
        ids[#ids + 1] = r.id
        by_text[r.text] = r.id
    end
    return ids, by_text
end

-- Every id in exactly one of accepted.jsonl / review.jsonl; returns both lists.
local function check_outputs(dir, ids)
    local accepted, review = jobs.jsonl(dir .. "/accepted.jsonl"), jobs.jsonl(dir .. "/review.jsonl")
    local seen = {}
    for _, t in ipairs(accepted) do seen[t.id] = (seen[t.id] or 0) + 1 end
    for _, r in ipairs(review) do seen[r.id] = (seen[r.id] or 0) + 1 end
    for _, id in ipairs(ids) do assert.equal(1, seen[id], id .. " in accepted + review") end
    assert.equal(#ids, #accepted + #review)
    return accepted, review
end

local function summary(dir)
    local text = assert(util.read(dir .. "/summary.json"))
    return assert(core.decode(text))
end

-- Committed outcomes (item id -> decided_at) from the store.
local function committed(dir)
    local st = store.open(dir .. "/job.sqlite", { create = false })
    if not st then return {} end
    local out = {}
    local job = st:latest_job()
    if job then
        for _, r in ipairs(st:items(job.id, { state = "done" })) do out[r.item_id] = r.decided_at end
    end
    st:close()
    return out
end

local function count(t)
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n
end

local function write(path, text)
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
end

-- A job module of another shape: records {ticket_no, body = {note}}, a rule reading a catalog.
local SKU = [[
local jc = require "jsoncontract"
return {
    contract = jc.contract { name = "sku", version = "1.0.0", instructions = "Read the order note.",
        schema = { type = "object", properties = { sku = { type = "string", pattern = "^[A-Z]{3}-[0-9]{3}$" },
            qty = { type = "integer", minimum = 1 } }, required = { "sku", "qty" }, additionalProperties = false },
        rules = { { name = "sku_known", retry = false, check = function(v, ctx)
            if not ctx.catalog[v.sku] then return { pointer = "/sku", message = "unknown sku " .. v.sku } end
        end } } },
    item = function(r)
        if type(r) ~= "table" or type(r.body) ~= "table" or type(r.body.note) ~= "string" then
            return nil, "has no body.note"
        end
        return { id = tostring(r.ticket_no), text = r.body.note, customer = r.customer }
    end,
    %s
}
]]
local SKU_INPUT = '{"ticket_no": 17, "customer": "c-1", "body": {"note": "Send 3 of ABC-123"}}\n'
    .. '{"ticket_no": 18, "body": {"note": "two XYZ-999 please"}}\n'

describe("job modules as batch jobs", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() os.execute("rm -rf " .. q(dir)) end)

    for _, name in ipairs(EXAMPLES) do
        it(name .. ": run --job over its shipped input, export in the same shape", function()
            local ids = input_of(name)
            local out, code = sh(("run --job examples/%s.lua --input examples/%s.jsonl --out %s --delay-ms 0")
                :format(name, name, q(dir)))
            assert.equal(0, code, out)
            assert.truthy(out:find(#ids .. " items: ", 1, true), out)
            check_outputs(dir, ids)
            local s = summary(dir)
            assert.same({ name, #ids, true, core.null }, { s.contract.name, s.items, s.standin, s.stopped_by })
            assert.truthy(s.job:find("/examples/" .. name .. ".lua$"), s.job)
            assert.truthy(s.input:find("/examples/" .. name .. ".jsonl$"), s.input)
            assert.equal(s.accepted + s.human_review, #ids)
            -- export writes the same summary, field for field
            out, code = sh(("export %s --out %s/again"):format(q(dir), q(dir)))
            assert.equal(0, code, out)
            assert.same(s, summary(dir .. "/again"))
            assert.equal(util.read(dir .. "/accepted.jsonl"), util.read(dir .. "/again/accepted.jsonl"))
        end)

        it(name .. ": kill -9 during the run, --resume finishes it; nothing committed is asked again", function()
            local ids, by_text = input_of(name)
            local logs = tmpdir()
            os.execute("mkdir -p " .. q(logs))
            finally(function() os.execute("rm -rf " .. q(logs)) end)
            local pid = jobs.spawn(jc_cmd(("run --job examples/%s.lua --input examples/%s.jsonl --out %s "
                .. "--delay-ms 400 --parallel 1"):format(name, name, q(dir))), logs .. "/run1.out",
                "JC_STANDIN_LOG=" .. q(logs .. "/standin1.log"))
            -- once at least one outcome is committed, and before all are (400 ms an answer: the
            -- others take seconds, time enough for a busy machine to get round to the kill)
            local deadline = jobs.now() + 30
            while count(committed(dir)) < 1 and jobs.now() < deadline do jobs.sleep(0.02) end
            local standin = jobs.children(pid)
            os.execute("kill -9 " .. pid)
            assert.is_true(jobs.wait_gone(pid, 10))
            for _, c in ipairs(standin) do jobs.wait_gone(c, 5) end
            local before = committed(dir)
            assert.is_true(count(before) >= 1 and count(before) < #ids, "killed with " .. count(before) .. " done")
            local out, code = sh("run --resume " .. q(dir), "JC_STANDIN_LOG=" .. q(logs .. "/standin2.log"))
            assert.equal(0, code, out)
            for _, r in ipairs(jobs.standin_log(logs .. "/standin2.log")) do
                local id = by_text[r.mail]
                assert.truthy(id, "the stand-in was asked for a text not in the input: " .. tostring(r.mail))
                assert.is_nil(before[id], id .. " was asked again after its commit")
            end
            local now = committed(dir)
            for id, at in pairs(before) do assert.equal(at, now[id], id .. " changed its committed outcome") end
            check_outputs(dir, ids)
        end)
    end

    -- A desk over a run's store, through the desk's own code, with the job module's contract and
    -- the context a reader of the job opens.
    local function desk_for(name)
        local definition = require "jsoncontract.jobs.definition"
        local def = assert(definition.load("examples/" .. name .. ".lua"))
        local ctx, close = definition.reader_context(def, dir, ".")
        assert.is_not_nil(ctx, tostring(close))
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        finally(function() close() st:close() end)
        local desk = require("jsoncontract.review.desk").new { store = st,
            queries = require "jsoncontract.review.queries", job = assert(st:latest_job()),
            contract = def.contract, context = ctx or nil, secret = ("s"):rep(32) }
        local function page(id)
            return desk:handle({ method = "GET", path = "/item/" .. id, args = {}, reviewer = "ann" }).body
        end
        return function(id, fields)
            fields.csrf = desk:csrf_token("ann")
            fields.seen = page(id):match('name="seen" value="(%d+)"')
            return desk:handle { method = "POST", path = "/item/" .. id, args = {}, post = fields, reviewer = "ann" }
        end, ctx, page
    end

    local function exported(name, id)
        local found
        for _, t in ipairs(jobs.jsonl(dir .. "/" .. name)) do
            if t.id == id then found = t end
        end
        return found
    end

    it("support_ticket: a desk decision goes through the desk's code with the job's context, reaches the export",
        function()
        local out, code = sh(("run --job examples/support_ticket.lua --input examples/support_ticket.jsonl "
            .. "--out %s --delay-ms 0"):format(q(dir)))
        assert.equal(0, code, out)
        local _, review = check_outputs(dir, input_of("support_ticket"))
        assert.is_true(#review > 0, "nothing in review to decide")
        local id = review[1].id
        local post, ctx = desk_for("support_ticket")
        assert.truthy(ctx.orders, "the desk opens the job's orders table")
        local value = { action = "accept", ["v/intent"] = core.encode("other"), ["v/urgent"] = "false",
            ["v/summary"] = "A person read it." }
        -- the rules hold a person's value too: an order the shop does not have is refused
        value["v/order_id"] = "4711"
        local res = post(id, value)
        assert.equal(422, res.status)
        assert.truthy(res.body:find("order 4711 does not exist", 1, true))
        value["v/order_id"] = "1042"
        res = post(id, value)
        assert.equal(303, res.status, res.body)
        out, code = sh("export " .. q(dir))
        assert.equal(0, code, out)
        local found = exported("accepted.jsonl", id)
        assert.truthy(found, id .. " is not in accepted.jsonl after the decision")
        assert.same({ "human", "ann", "1042" }, { found.decided_by, found.reviewer, found.value.order_id })
    end)

    -- (one answer per item and a seed at which the stand-in's answers put some in review)
    for _, c in ipairs { { "ticket_priority", 3 }, { "leave_request", 1 }, { "blog_category", 1 } } do
        it(c[1] .. ": a desk decision on a review item reaches the export", function()
            local out, code = sh(("run --job examples/%s.lua --input examples/%s.jsonl --out %s --delay-ms 0 "
                .. "--max-attempts 1 --seed %d"):format(c[1], c[1], q(dir), c[2]))
            assert.equal(0, code, out)
            local _, review = check_outputs(dir, input_of(c[1]))
            assert.is_true(#review > 0, "nothing in review to decide")
            local id = review[1].id
            local post, _, page = desk_for(c[1])
            -- the form is the job's schema: a field for each required property
            local schema = dofile("examples/" .. c[1] .. ".lua").schema
            for _, name in ipairs(schema.required) do
                assert.truthy(page(id):find('name="v/' .. name .. '"', 1, true), name)
            end
            local res = post(id, { action = "needs_customer", note = "asked the sender" })
            assert.equal(303, res.status, res.body)
            out, code = sh("export " .. q(dir))
            assert.equal(0, code, out)
            local found = exported("review.jsonl", id)
            assert.same({ "human", "ann", "needs_customer", "asked the sender" }, { found.decided_by, found.reviewer,
                found.decision, found.note })
            assert.equal(c[1], summary(dir).contract.name)
        end)
    end

    it("PostgreSQL: an example job enqueued, two workers, an export in the run's shape", function()
        local pg, why = jobs.start_postgres()
        if not pg then return pending(why) end
        finally(pg.stop)
        local ids = input_of("ticket_priority")
        local out, code = sh(("enqueue --store %s --job examples/ticket_priority.lua --input "
            .. "examples/ticket_priority.jsonl --delay-ms 50"):format(q(pg.url)))
        assert.equal(0, code, out)
        os.execute("mkdir -p " .. q(dir))
        local pids = {}
        for i = 1, 2 do
            pids[i] = jobs.spawn_status(jc_cmd(("worker --store %s --parallel 2"):format(q(pg.url))),
                dir .. "/worker" .. i .. ".out")
        end
        for i = 1, 2 do
            assert.is_true(jobs.wait_gone(pids[i], 60))
            assert.truthy(jobs.wait_for(dir .. "/worker" .. i .. ".out", "exit=0", 5), util.read(dir .. "/worker"
                .. i .. ".out"))
        end
        out, code = sh(("export --store %s --out %s"):format(q(pg.url), q(dir)))
        assert.equal(0, code, out)
        check_outputs(dir, ids)
        local s = summary(dir)
        assert.same({ "ticket_priority", #ids, true, core.null, 0 }, { s.contract.name, s.items, s.standin,
            s.stopped_by, s.pending })
        assert.truthy(s.job:find("/examples/ticket_priority.lua$"), s.job)
    end)

    it("a job of another record shape: item() maps each record, the stand-in answers its schema", function()
        os.execute("mkdir -p " .. q(dir))
        write(dir .. "/sku.lua", SKU:format([[context = function(job) return { catalog = { ["ABC-123"] = true } } end,]]))
        write(dir .. "/in.jsonl", SKU_INPUT)
        local out, code = sh(("run --job %s/sku.lua --input %s/in.jsonl --out %s/out --delay-ms 0")
            :format(q(dir), q(dir), q(dir)))
        assert.equal(0, code, out)
        check_outputs(dir .. "/out", { "17", "18" })
        -- the store keeps the item the model read, under the id item() gave
        local st = assert(store.open(dir .. "/out/job.sqlite", { create = false }))
        local rows = st:query("SELECT input_json FROM items WHERE job_id = ? ORDER BY seq", { st:latest_job().id })
        st:close()
        assert.same({ id = "17", text = "Send 3 of ABC-123", customer = "c-1" }, core.decode(rows[1].input_json))
        -- a record item() cannot map is an input error naming its line; nothing is created
        write(dir .. "/bad.jsonl", SKU_INPUT .. '{"ticket_no": 19}\n')
        out, code = sh(("run --job %s/sku.lua --input %s/bad.jsonl --out %s/out2"):format(q(dir), q(dir), q(dir)))
        assert.equal(2, code, out)
        assert.truthy(out:find("line 3: has no body.note", 1, true), out)
        assert.is_nil(io.open(dir .. "/out2/job.sqlite", "rb"))
    end)
end)

describe("failing closed", function()
    local dir
    before_each(function()
        dir = tmpdir()
        os.execute("mkdir -p " .. q(dir))
        write(dir .. "/in.jsonl", SKU_INPUT)
        write(dir .. "/none.lua", SKU:format(""))
        write(dir .. "/broken.lua", SKU:format([[context = function(job)
            local f, err = io.open("/nonexistent/catalog.csv") if not f then error(err, 0) end end,]]))
    end)
    after_each(function() os.execute("rm -rf " .. q(dir)) end)

    local NAMED = "the contract sku 1.0.0 has rules (sku_known) and the job module "

    it("rules without a context: run, enqueue, check and jc.job refuse, naming the rule; nothing is created",
        function()
        local out, code = sh(("run --job %s/none.lua --input %s/in.jsonl --out %s/out"):format(q(dir), q(dir), q(dir)))
        assert.equal(2, code, out)
        assert.truthy(out:find(NAMED, 1, true), out)
        assert.truthy(out:find("gives them no context", 1, true), out)
        assert.is_nil(io.open(dir .. "/out", "rb"))
        out, code = sh(("enqueue --store %s/s.sqlite --job %s/none.lua --input %s/in.jsonl"):format(q(dir), q(dir),
            q(dir)))
        assert.equal(2, code, out)
        assert.truthy(out:find(NAMED, 1, true), out)
        assert.is_nil(io.open(dir .. "/s.sqlite", "rb"))
        out, code = util.sh(("echo '{\"sku\":\"ABC-123\",\"qty\":1}' | %s 2>&1"):format(jc_cmd("check --job "
            .. q(dir .. "/none.lua"))))
        assert.equal(2, code, out)
        assert.truthy(out:find(NAMED, 1, true), out)
        local jc = require "jsoncontract"
        local job, err = jc.job(dir .. "/none.lua", { input = dir .. "/in.jsonl", out = dir .. "/api" })
        assert.is_nil(job)
        assert.truthy(err:find(NAMED, 1, true), err)
        -- context = false says the rules need none
        write(dir .. "/nofalse.lua", SKU:format("context = false,"))
        assert(jc.job(dir .. "/nofalse.lua", { input = dir .. "/in.jsonl", out = dir .. "/api" }))
    end)

    it("rules without a context: the gateway's configure refuses, unless context = false", function()
        local gw = require "jsoncontract.nginx"
        local ok, err = pcall(gw.configure, { provider = "openai", model = "m", api_key_env = "OPENAI_API_KEY",
            contracts = { sku = dir .. "/none.lua" } })
        assert.is_false(ok)
        assert.truthy(tostring(err):find("contract 'sku': the contract sku 1.0.0 has rules (sku_known) and the "
            .. "gateway", 1, true), tostring(err))
        assert(gw.configure { provider = "openai", model = "m", api_key_env = "OPENAI_API_KEY",
            contracts = { sku = dir .. "/none.lua" }, context = false })
        assert(gw.configure { provider = "openai", model = "m", api_key_env = "OPENAI_API_KEY",
            contracts = { sku = dir .. "/none.lua" }, context = function() return { catalog = {} } end })
    end)

    it("no key for a provider's own API: the gateway's configure refuses, before any request", function()
        local gw = require "jsoncontract.nginx"
        local opts = { provider = "anthropic", model = "m", contracts = { sku = dir .. "/none.lua" }, context = false }
        local ok, err = pcall(gw.configure, opts)
        assert.is_false(ok)
        assert.truthy(tostring(err):find("nginx gateway: anthropic's API (api.anthropic.com) refuses every request "
            .. "without an API key: give api_key (it is usually in ANTHROPIC_API_KEY), or a base_url for a server "
            .. "that needs none (or api_key_env)", 1, true), tostring(err))
        -- a key, a variable read in the worker, or another server: configured
        for _, extra in ipairs { { api_key = "k" }, { api_key_env = "ANTHROPIC_API_KEY" },
            { base_url = "http://127.0.0.1:9" } } do
            local o = {}
            for k, v in pairs(opts) do o[k] = v end
            for k, v in pairs(extra) do o[k] = v end
            assert(gw.configure(o))
        end
    end)

    it("no key for a provider's own API: the gateway's new refuses too, a provider module, a blank key or "
        .. "an api_key_env that names no variable", function()
        local gw = require "jsoncontract.nginx"
        local openai = require("jsoncontract.providers").get("openai")
        local want = "nginx gateway: openai's API (api.openai.com) refuses every request without an API key"
        for _, o in ipairs { { provider = openai }, { provider = "openai", base_url = "https://API.openai.com./v1" } } do
            o.model, o.contracts, o.context = "m", { sku = dir .. "/none.lua" }, false
            local ok, err = pcall(gw.new, o)
            assert.is_false(ok)
            assert.truthy(tostring(err):find(want, 1, true), tostring(err))
        end
        -- a blank api_key would be sent as it is (and api_key_env never read)
        for _, env in ipairs { "OPENAI_API_KEY", false } do
            local ok, err = pcall(gw.new, { provider = "openai", model = "m", api_key = " ", api_key_env = env or nil,
                contracts = { sku = dir .. "/none.lua" }, context = false })
            assert.is_false(ok)
            assert.truthy(tostring(err):find("nginx gateway: api_key is blank: give the key, or api_key_env alone", 1,
                true), tostring(err))
        end
        -- (every request would answer 500 "is not set in the worker")
        for _, name in ipairs { "", " ", "A=B" } do
            local ok, err = pcall(gw.new, { provider = "openai", model = "m", api_key_env = name,
                contracts = { sku = dir .. "/none.lua" }, context = false })
            assert.is_false(ok)
            assert.truthy(tostring(err):find("nginx gateway: api_key_env must name an environment variable, got "
                .. ("%q"):format(name), 1, true), tostring(err))
        end
    end)

    it("rules without a context: the review desk refuses to start, naming the rule", function()
        local out, code = sh(("run --job examples/support_ticket.lua --input examples/support_ticket.jsonl --out %s/job "
            .. "--delay-ms 0"):format(q(dir)))
        assert.equal(0, code, out)
        local contract = dir .. "/ticket_no_context.lua"
        write(contract, 'local t = dofile("examples/support_ticket.lua")\nreturn { contract = t.contract }\n')
        out, code = sh(("review %s/job --contract %s --listen 127.0.0.1:1"):format(q(dir), q(contract)))
        assert.equal(1, code, out)
        if out:find("nginx", 1, true) and not out:find("order_exists", 1, true) then
            return pending("desk skipped: " .. out:match("[^\n]*"))
        end
        assert.truthy(out:find("has rules (order_exists, order_of_sender)", 1, true), out)
    end)

    it("a context that cannot open stops the run before any model call: exit 1, nothing decided or in review",
        function()
        local log = dir .. "/standin.log"
        local out, code = sh(("run --job %s/broken.lua --input %s/in.jsonl --out %s/out --delay-ms 0")
            :format(q(dir), q(dir), q(dir)), "JC_STANDIN_LOG=" .. q(log))
        assert.equal(1, code, out)
        assert.truthy(out:find("cannot open the context of " .. dir .. "/broken.lua: /nonexistent/catalog.csv", 1,
            true), out)
        assert.truthy(out:find("nothing was asked", 1, true), out)
        assert.same({}, jobs.standin_log(log))
        assert.same({}, jobs.jsonl(dir .. "/out/review.jsonl"))
        assert.equal(0, count(committed(dir .. "/out")))
        -- a worker on the same job fails the same way
        out, code = sh(("worker --store %s/out/job.sqlite"):format(q(dir)), "JC_STANDIN_LOG=" .. q(log))
        assert.equal(1, code, out)
        assert.same({}, jobs.standin_log(log))
        assert.equal(0, count(committed(dir .. "/out")))
        -- and the Lua API returns nil and the message
        local job = assert(require("jsoncontract").job(dir .. "/broken.lua", { input = dir .. "/in.jsonl",
            out = dir .. "/api" }))
        local s, err = job:run()
        assert.is_nil(s)
        assert.truthy(err:find("cannot open the context", 1, true), err)
    end)
end)

describe("the Lua API (jc.job)", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() os.execute("rm -rf " .. q(dir)) end)

    it("examples/job_script.lua runs a job from a script; a second run into the same folder fails", function()
        local env = ("env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY LUA_PATH=%s LUA_CPATH=%s ")
            :format(q("lua/?.lua;lua/?/init.lua;;"), q(CPATH .. ";;"))
        local out, code = util.sh(env .. LUA .. " examples/job_script.lua " .. q(dir) .. " 2>&1")
        assert.equal(0, code, out)
        assert.truthy(out:find("7 items: ", 1, true), out)
        assert.truthy(out:find("status: 7 of 7 decided", 1, true), out)
        check_outputs(dir, input_of("leave_request"))
        out, code = util.sh(env .. LUA .. " examples/job_script.lua " .. q(dir) .. " 2>&1")
        assert.equal(1, code, out)
        assert.truthy(out:find("job failed: output folder " .. dir .. " is not empty", 1, true), out)
    end)

    it("run, status, resume and export in-process, from a module table", function()
        local jc = require "jsoncontract"
        local mod = dofile("examples/blog_category.lua")
        local job = assert(jc.job(mod, { input = "examples/blog_category.jsonl", out = dir, ["delay-ms"] = 0 }))
        local s = assert(job:run { parallel = 2 })
        assert.equal(6, s.items)
        local st = assert(job:status())
        assert.same({ 6, s.accepted, s.human_review }, { st.items, st.accepted, st.human_review })
        local again = assert(job:resume())
        assert.same({ s.accepted, s.human_review }, { again.accepted, again.human_review })
        local ex = assert(job:export(dir .. "/copy"))
        assert.same(summary(dir), ex)
        local none, err = jc.job(mod, { input = "examples/blog_category.jsonl" }):run()
        assert.is_nil(none)
        assert.truthy(err:find("needs opts.out", 1, true), err)
    end)
end)
