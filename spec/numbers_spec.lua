-- Numbers keep their kind in every output: a count, a length, an offset, a line or an integer
-- limit is written as an integer (`1`, never `1.0`), on Lua 5.4 (which has a float subtype the
-- encoder writes as `1.0`) and on LuaJIT alike: the gates' error items, `check` and `lint --json`
-- output, evidence lines, the metrics, summary.json's fields. A model's own number is written as
-- the model spelt it (the job store keeps the accepted text).
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local cli = require "jsoncontract.cli"
local store_mod = require "jsoncontract.jobs.store"
local export = require "jsoncontract.jobs.export"
local fake = require "support.fake_model"
local util = require "support.util"

local ticket = dofile("examples/support_ticket.lua")

-- The JSON text less its strings (a string may hold "1.0"), then every number written with a
-- fraction or exponent, each with the key or token before it.
local function floats(text)
    local out, i = {}, 1
    local bare = {}
    while i <= #text do
        local q = text:find('"', i, true)
        bare[#bare + 1] = text:sub(i, (q or #text + 1) - 1)
        if not q then break end
        local e = q + 1
        while true do
            e = text:find('["\\]', e)
            if text:sub(e, e) == '"' then break end
            e = e + 2
        end
        bare[#bare + 1] = '""'
        i = e + 1
    end
    local s = table.concat(bare)
    for n in s:gmatch("%-?%d+[%.eE][%d%.eE+%-]*") do out[#out + 1] = n end
    return out
end

local function sink()
    local buf = {}
    return { write = function(self, ...) for _, s in ipairs { ... } do buf[#buf + 1] = s end return self end,
        text = function() return table.concat(buf) end }
end

describe("numbers keep their kind (" .. _VERSION .. (jit and " / LuaJIT" or "") .. ")", function()
    it("finds a float where one is (the check itself can fail)", function()
        assert.same({ "1.0", "2e3" }, floats('{"a":1.0,"b":"1.0","c":[2e3,3]}'))
        assert.same({}, floats('{"a":1,"b":"x \\" 1.0"}'))
    end)

    it("in the error items of the gates (limits, lengths, offsets, lines)", function()
        local schema_as_floats = core.decode('{"type":"object","properties":{"s":{"type":"string",'
            .. '"minLength":1.0},"n":{"type":"array","maxItems":2.0}},"required":["s"]}')
        local c = jc.contract { name = "n", version = "1", instructions = "x", schema = schema_as_floats }
        local _, err = c:check('{"s":"","n":[1,2,3]}')
        assert.equal("schema", err.category)
        local text = core.encode(err)
        assert.truthy(text:find('"limit":1', 1, true), text)
        assert.truthy(text:find('"actual":0', 1, true), text)
        assert.same({}, floats(text))
    end)

    it("in `check` output and in `lint --json`", function()
        local reply = os.tmpname()
        finally(function() os.remove(reply) end)
        local f = assert(io.open(reply, "wb"))
        f:write('{"intent":"x","order_id":"1","urgent":true,"summary":""}')
        f:close()
        local out = sink()
        cli.main({ "check", reply }, { stdout = out, stderr = sink() })
        assert.truthy(out.text():find('"offset"', 1, true), out.text())
        assert.same({}, floats(out.text()))
        out = sink()
        cli.main({ "lint", "--contract", "examples/support_ticket.lua", "--json" }, { stdout = out, stderr = sink() })
        assert.truthy(out.text():find('"bytes"', 1, true))
        assert.same({}, floats(out.text()))
    end)

    it("in evidence lines, an outcome and the metrics", function()
        local send = fake.transport()
        local log = evidence.memory { record_text = true }
        local out = jc.ask(ticket.contract, "the courier did not come for order 1042, urgent", {
            provider = "openai", model = "m", api_key = "sk-numbers-spec-0123456789", base_url = "http://127.0.0.1:9",
            transport = send, sleep = function() end, context = assert(ticket.context {}), evidence = log })
        assert.equal("accepted", out.status)
        local m = evidence.metrics()
        m:observe_outcome(out)
        local lines = table.concat(log.lines, "\n")
        assert.truthy(lines:find('"attempt":2', 1, true))
        for _, text in ipairs { lines, core.encode(out.attempts), core.encode(out.usage), core.encode(m:summary()) } do
            assert.same({}, floats(text))
        end
    end)

    it("in summary.json's counts and seconds", function()
        local dir = util.fresh_path()
        os.execute("mkdir -p '" .. dir .. "'")
        local st = assert(store_mod.open(dir .. "/job.sqlite"))
        finally(function()
            st:close()
            os.execute("rm -rf '" .. dir .. "'")
        end)
        local job = assert(st:create_job { contract_name = "support_ticket", contract_version = "1.0.0",
            schema_hash = ticket.contract.schema_hash, provider = "openai", model = "m", options_json = "{}",
            input_digest = "x" })
        assert(st:add_items(job, { { item_id = "m1", seq = 1, input_json = core.encode { id = "m1", text = "x" },
            input_digest = "d1" } }))
        -- waits as a run records them: seconds * 1000, a float on Lua 5.4
        assert(st:record_run(job, { worker = "w", started_at = 1, ended_at = 2, exchanges = 3,
            limit_wait_ms = 0 * 1000.0 }))
        local summary = assert(export.summary(st, job))
        summary.metrics_text = nil
        local text = core.encode(summary)
        assert.truthy(text:find('"limit_wait_s":0', 1, true), text)
        assert.same({}, floats(text))
        assert(st:record_run(job, { worker = "w", started_at = 3, ended_at = 4, exchanges = 0,
            limit_wait_ms = 1.5 * 1000 }))
        summary = assert(export.summary(st, job))
        assert.equal(1.5, summary.limit_wait_s) -- a fraction of a second stays one
    end)
end)
