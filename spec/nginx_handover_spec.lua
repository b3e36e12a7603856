-- Gateway hand-overs reach a person: jsoncontract.nginx with `store` records each handed-over
-- request (a refusal from the stand-in model) in the store as an item of the contract's gateway
-- job, before its 202; `on_handover` still runs; `jsoncontract review STORE` (nginx) then lists
-- it and shows its text, attempts and reason. A store that cannot be written answers 503
-- `handover_unavailable`, never a 202; one that cannot be opened stops nginx at start. Two nginx
-- nodes sharing one PostgreSQL store find or create one gateway job between them. Real nginx,
-- the stand-in model, a SQLite file and a PostgreSQL server the spec starts; skipped by name
-- when one cannot start.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local nginx = require "support.nginx_server"
local review_nginx = require "support.review_nginx"
local review_pg = require "support.review_pg"
local store_mod = require "jsoncontract.jobs.store"

local q = nginx.q
local KEY = "gwHandoverKey-7c1e9a44"
local REFUSE = "Please [[refuse]] this one: where is my parcel for order 1042?"

-- A contract file both the gateway and the desk load.
local function write_contract(dir, root)
    local f = assert(io.open(dir .. "/gw_ticket.lua", "w"))
    f:write(string.format([[
local jc = require "jsoncontract"
local t = dofile(%q)
return { contract = jc.contract { name = "gw_ticket", version = "1.0.0", schema = t.schema,
    instructions = "Sort the mail into a queue." } }
]], root .. "/examples/support_ticket.lua"))
    f:close()
    return dir .. "/gw_ticket.lua"
end

-- nginx with the gateway on `store` (and a second one whose store cannot be written).
local function start_gateway(standin_port, contract_file, store, broken)
    return nginx.start {
        http = function(port)
            local lines = {
                "lua_shared_dict jc_spec 64k;",
                "init_by_lua_block {",
                "  local gateway = require 'jsoncontract.nginx'",
                "  local function opts(st) return { provider = 'openai', model = 'standin-1', api_key = "
                    .. string.format("%q", KEY) .. ",",
                "    base_url = 'http://127.0.0.1:" .. standin_port .. "', contracts = { gw_ticket = "
                    .. string.format("%q", contract_file) .. " },",
                "    store = st, on_handover = function(item) ngx.shared.jc_spec:set('handover', item.item_id) end }",
                "  end",
                "  gateway.configure(opts(" .. string.format("%q", store) .. "))",
                broken and ("  BROKEN = gateway.new(opts(" .. string.format("%q", broken) .. "))") or "",
                "}",
                "server { listen 127.0.0.1:" .. port .. ";",
                "  location = /t { content_by_lua_block { require('jsoncontract.nginx').serve('gw_ticket') } }",
                "  location = /broken { content_by_lua_block { BROKEN:serve('gw_ticket') } }",
                "  location = /handover { content_by_lua_block { ngx.say(ngx.shared.jc_spec:get('handover') or '') } }",
                "  location = / { return 200 'ok'; } }",
            }
            return table.concat(lines, "\n")
        end,
    }
end

local function post(base, path, text)
    local res, err = curl.request { url = base .. path, method = "POST", body = text, timeout_ms = 30000 }
    assert(res, tostring(err))
    return res
end

describe("jsoncontract.nginx hand-overs into a job store", function()
    local why = nginx.missing() or review_nginx.missing()
    if why then
        it("records hand-overs", function() pending("nginx skipped: " .. why) end)
        return
    end

    local dir, standin, sport, root, contract_file
    setup(function()
        root = nginx.run("pwd"):match("^(%S+)")
        dir = nginx.run("mktemp -d"):match("^(%S+)")
        standin, sport = nginx.start_standin()
        contract_file = write_contract(dir, root)
    end)
    teardown(function()
        if standin then util.stop_standin(standin) end
        if dir then nginx.run("rm -rf " .. q(dir)) end
    end)

    it("records a handed-over request before its 202, and the desk on the same store shows it", function()
        local store = dir .. "/gw.sqlite"
        local srv = start_gateway(sport, contract_file, store, dir .. "/no/such/folder/gw.sqlite")
        local desk
        finally(function()
            if desk then review_nginx.stop(desk) end
            srv:stop()
        end)
        local res = post(srv.base, "/t", REFUSE)
        assert.equal(202, res.status, res.body)
        local answer = jc.decode(res.body)
        assert.equal("handed_over", answer.status)
        local item_id = answer.item_id
        -- on_handover still ran
        assert.equal(item_id, curl.request { url = srv.base .. "/handover", timeout_ms = 5000 }.body:match("%S+"))
        -- in the store: the item, its outcome and its evidence
        local st = assert(store_mod.open(store, { create = false }))
        local job = assert(st:job("gateway-gw_ticket-1.0.0"))
        assert.same({ "gw_ticket", "1.0.0" }, { job.contract_name, job.contract_version })
        local it = assert(st:item(job.id, item_id))
        assert.same({ "done", "human_review", "model", "refused" }, { it.state, it.status, it.decided_by,
            it.reason_category })
        assert.equal(REFUSE, jc.decode(it.input_json).text)
        local ev = assert(st:evidence_for(job.id, item_id))
        assert.truthy(#ev >= 1)
        st:close()
        -- a second hand-over joins the same job
        assert.equal(202, post(srv.base, "/t", REFUSE .. " Again.").status)
        st = assert(store_mod.open(store, { create = false }))
        assert.equal(2, #assert(st:items(job.id)))
        st:close()
        -- the desk serves it
        desk = review_nginx.start(dir, "--contract " .. q(contract_file), store)
        local page = assert(curl.request { url = desk.base .. "/", timeout_ms = 10000 })
        assert.equal(200, page.status)
        assert.truthy(page.body:find("Review queue: 2 to review", 1, true), page.body:sub(1, 1500))
        assert.truthy(page.body:find('href="/item/' .. item_id .. '"', 1, true))
        page = assert(curl.request { url = desk.base .. "/item/" .. item_id, timeout_ms = 10000 })
        assert.equal(200, page.status)
        assert.truthy(page.body:find("where is my parcel for order 1042?", 1, true))
        assert.truthy(page.body:find("refused/", 1, true), page.body)
        assert.truthy(page.body:find('<form class="decide"', 1, true))
        assert.falsy(page.body:find(KEY, 1, true))
        -- a store that cannot be written: no 202, no promise of a person
        res = post(srv.base, "/broken", REFUSE)
        assert.equal(503, res.status, res.body)
        assert.equal("handover_unavailable", jc.decode(res.body).error.code)
        assert.truthy(srv:error_log():find("not recorded: ", 1, true))
    end)

    it("stops nginx at start when the store cannot be opened", function()
        local ok, err = pcall(start_gateway, sport, contract_file, dir .. "/no/such/folder/gw.sqlite")
        assert.is_false(ok)
        assert.truthy(tostring(err):find("cannot open the hand-over store", 1, true), tostring(err))
    end)

    it("shares one gateway job between two nginx nodes on one PostgreSQL store", function()
        local pg, pwhy = review_pg.start()
        if not pg then return pending(pwhy) end
        local a, b, st
        finally(function()
            if st then st:close() end
            if a then a:stop() end
            if b then b:stop() end
            review_pg.stop(pg)
        end)
        a = start_gateway(sport, contract_file, pg.url)
        b = start_gateway(sport, contract_file, pg.url)
        -- both nodes at once, from the first request on: the job is created by one and found by the other
        local reqs = {}
        for i = 1, 8 do
            reqs[i] = { url = (i % 2 == 0 and a or b).base .. "/t", method = "POST", body = REFUSE .. " #" .. i,
                timeout_ms = 30000 }
        end
        local results = curl.request_many(reqs)
        local ids = {}
        for i, res in ipairs(results) do
            assert.equal(202, res.status, "request " .. i .. ": " .. tostring(res.body) .. a:error_log() .. b:error_log())
            ids[#ids + 1] = jc.decode(res.body).item_id
        end
        st = assert(store_mod.open(pg.url, { create = false }))
        local rows = assert(st:query("SELECT id FROM jobs"))
        assert.equal(1, #rows)
        local items = assert(st:items("gateway-gw_ticket-1.0.0"))
        assert.equal(8, #items)
        for _, row in ipairs(items) do assert.same({ "done", "human_review" }, { row.state, row.status }) end
    end)
end)
