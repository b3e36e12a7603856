-- One worker's run (jsoncontract.jobs.runner) on a real SQLite store against the stand-in
-- model: a worker that stalled past its lease, whose item another worker took over, asks the
-- model no more for that item and records no outcome for it, only the rows of the exchanges made.
local util = require "support.util"
local jobs = require "support.jobs"
local store = require "jsoncontract.jobs.store"
local runner = require "jsoncontract.jobs.runner"
local jc = require "jsoncontract"

local ticket = dofile("examples/support_ticket.lua")
-- the stand-in answers this mail wrongly first (examples/support_ticket_standin.lua): a re-ask follows
local MAIL = "the courier did not come for order 1042, urgent, I leave tomorrow"

describe("jsoncontract.jobs.runner", function()
    it("stops asking the model for an item another worker took over, and records only the exchanges made", function()
        local dir = util.fresh_path()
        os.execute("mkdir -p " .. jobs.q(dir))
        local log = dir .. "/standin.log"
        local standin = util.start_standin { delay_ms = 600, log = log }
        local st = assert(store.open(dir .. "/job.sqlite"))
        finally(function()
            st:close()
            util.stop_standin(standin)
            os.execute("rm -rf " .. jobs.q(dir))
        end)
        local job = assert(st:create_job { contract_name = "support_ticket", contract_version = "1.0.0",
            schema_hash = ticket.contract.schema_hash, provider = "openai", model = "m", options_json = "{}",
            input_digest = "x" })
        assert(st:add_items(job, { { item_id = "m1", seq = 1, input_json = require("jsoncontract.core").encode {
            id = "m1", text = MAIL }, input_digest = "d1" } }))
        -- At this worker's first lease renewal, while its first model call waits, another worker
        -- holds the item (as after a stall past the lease), for a second.
        local renew, taken = st.renew, false
        st.renew = function(self, ...)
            if not taken then
                taken = true
                assert(self:exec("UPDATE items SET lease_owner = 'other', lease_expires_at = " .. self.d.now
                    .. " + 1 WHERE job_id = ? AND item_id = 'm1'", { job }))
            end
            return renew(self, ...)
        end
        local res = runner.run(st, job, { contract = ticket.contract, lease_seconds = 0.3, parallel = 1,
            signals = false, ask = { provider = "openai", model = "m", base_url = standin.base_url,
                context = (ticket.context {}) } })
        assert.is_nil(res.store_error)
        assert.is_true(taken)
        -- the first run of the item was given up (its wrong answer not re-asked); the lease
        -- came back when the other's expired, and the item was asked again from the start
        assert.same({ 1, 1, 1 }, { res.taken_over, res.done, res.accepted })
        assert.equal(3, #jobs.standin_log(log)) -- wrong answer (given up), then wrong and right
        -- every exchange made leaves its row, the given-up one too (first, under the same pass)
        assert.equal(3, st:counts(job).exchanges)
        local kinds = {}
        for i, rec in ipairs(st:evidence_for(job, "m1")) do kinds[i] = rec.gate end
        assert.same({ "schema", "schema", "accepted" }, kinds) -- (not the refusal to ask once it was lost)
        local m1 = st:item(job, "m1")
        assert.same({ "done", "accepted", 1 }, { m1.state, m1.status, #m1.outcomes })
        -- the accepted value is the model's text as the gates passed it (not decoded and
        -- encoded again), on one line; the exported line carries the same text last
        local ev = st:evidence_for(job, "m1")
        local text = ev[#ev].text
        assert.equal("accepted", ev[#ev].gate)
        local o = m1.outcomes[1]
        assert.equal(runner.one_line(text), o.value_json)
        assert.truthy(o.value_json:find("Delivery issue: the courier", 1, true)) -- spaces in strings kept
        assert.falsy(o.value_json:find("\n", 1, true))
        assert.equal(',"value":' .. o.value_json .. "}", o.record_json:sub(-#o.value_json - 10))
        assert.same(jc.decode(o.value_json), jc.decode(o.record_json).value)
    end)

    it("puts accepted JSON text on one line, strings and numbers as the model spelt them", function()
        local text = '{\n  "a" : [ 1.0 , 2e3 ],\t"b":"x \\" y\\\\",\r\n "c" : { } }'
        assert.equal('{"a":[1.0,2e3],"b":"x \\" y\\\\","c":{}}', runner.one_line(text))
        assert.equal("true", runner.one_line(" true "))
        assert.same({ '{"a":[[1]],"b":"[[[{"}', 3 }, { runner.one_line('{"a": [ [1] ], "b": "[[[{"}') })
    end)
end)
