-- Rules that could hurt a run, inside a real triage batch: bin/jsoncontract triage over the
-- example mailbox against the stand-in model, with a contract whose extra rule misbehaves
-- for some mails (a Latin-1 message, NaN and a function put into the value, NaN or a
-- function returned, a raised table, an endless loop, a wait in the batch, a slow SQLite
-- query). The run goes on past each of them; a rule that could not run (it raised, returned
-- what is not a verdict or ran out of its budget) settles nothing: its mail waits, never goes
-- to review, and the run ends with status 1 saying so. The contract file is loaded
-- in the rules' sandbox (its closures reach no `print`, `io`, `os.exit`); a run whose rule is
-- stuck stops on SIGTERM.
local core = require "jsoncontract.core"
local util = require "support.util"

local LUA = util.LUA

-- The contract file: the support-ticket contract plus one rule keyed on the summary the
-- stand-in writes for each mail.
local CONTRACT = [=[
local jc = require "jsoncontract"
local batch = require "jsoncontract.batch"
local M = dofile("examples/support_ticket.lua")
local function f() end
local function hostile(v, ctx)
    local s = v.summary
    if s:find("Guten Tag", 1, true) then
        return { pointer = "/summary", message = "Kunde M\252ller: Auftrag unbekannt" } -- Latin-1 from a database
    elseif s:find("PayPal", 1, true) then
        v.urgent = 0 / 0; v.summary = f; v.extra = { f = f } -- ignored: a copy
    elseif s:find("Bonjour", 1, true) then
        return 0 / 0
    elseif s:find("Ol", 1, true) then
        return { pointer = "/summary", message = f }
    elseif s:find("Hola", 1, true) then
        error({ code = "E42", message = "orders database is down" })
    elseif s:find("jacket", 1, true) then
        -- (the sandbox: no os.exit to end the run, no shell, no hook to remove)
        pcall(function() os.exit(3) end)
        pcall(function() io.popen("id") end)
        pcall(function() debug.sethook() end)
        while true do end
    elseif s:find("invoice", 1, true) then
        batch.sleep(30) -- a slow lookup that waits through the batch
    elseif s:find("password", 1, true) then
        local cur = assert(ctx.orders.conn:execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL " ..
            "SELECT x + 1 FROM c WHERE x < 2000000) SELECT count(*) FROM c"))
        cur:fetch()
        cur:close()
    end
end
local rules = { { name = "hostile", check = hostile, retry = false, budget = { ms = 300 } } }
for _, r in ipairs(M.rules) do rules[#rules + 1] = r end
M.contract = jc.contract { name = "support_ticket", version = "1.0.0", schema = M.schema,
    instructions = "You sort customer support mail into queues.", rules = rules }
return M
]=]

local function read_lines(path)
    local out = {}
    for line in assert(io.open(path, "rb")):lines() do out[#out + 1] = assert(core.decode(line)) end
    return out
end

describe("bin/jsoncontract triage with rules that misbehave", function()
    local dir, out, code, by_ticket, by_review

    setup(function()
        dir = os.tmpname()
        os.remove(dir)
        assert(os.execute("mkdir -p '" .. dir .. "'"))
        local f = assert(io.open(dir .. "/contract.lua", "w"))
        f:write(CONTRACT)
        f:close()
        out, code = util.sh(("env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract triage " ..
            "--input examples/mailbox.jsonl --out %s/out --job %s/contract.lua --seed 1 --delay-ms 0 " ..
            "--fail-after 10 2>&1")
            :format(LUA, dir, dir))
        by_ticket, by_review = {}, {}
        if code == 1 then
            for _, t in ipairs(read_lines(dir .. "/out/accepted.jsonl")) do by_ticket[t.id] = t end
            for _, r in ipairs(read_lines(dir .. "/out/review.jsonl")) do by_review[r.id] = r end
        end
    end)

    teardown(function()
        if dir then os.execute("rm -rf '" .. dir .. "'") end
    end)

    -- the mails whose rule could not run
    local WAITING = { "m-2003", "m-2004", "m-2002", "m-1187", "m-invoice", "m-pw" }

    it("runs to the end, each mail in at most one of accepted or review, and says the rules failed", function()
        assert.equal(1, code, out)
        assert.truthy(out:find("the job did not finish: the contract's rules could not run on 6 items", 1, true), out)
        assert.truthy(out:find("those 6 items wait: fix the rule and continue with --resume", 1, true), out)
        local waiting = {}
        for _, id in ipairs(WAITING) do waiting[id] = true end
        local mailbox = read_lines("examples/mailbox.jsonl")
        for _, m in ipairs(mailbox) do
            local settled = (by_ticket[m.id] ~= nil and 1 or 0) + (by_review[m.id] ~= nil and 1 or 0)
            assert.equal(waiting[m.id] and 0 or 1, settled, m.id)
        end
    end)

    local REVIEW = {
        { "m-2001", "rule_failed", "Kunde M\239\191\189ller: Auftrag unbekannt" },
    }
    for _, case in ipairs(REVIEW) do
        it("sends " .. case[1] .. " to review as rules/" .. case[2], function()
            local r = assert(by_review[case[1]], case[1] .. " in review")
            assert.equal("rules", r.reason.category)
            assert.equal(case[2], r.reason.kind)
            local msg = r.reason.message .. " " .. ((r.reason.errors[1] or {}).message or "")
            assert.truthy(msg:find(case[3], 1, true), msg)
        end)
    end

    it("accepts the mail whose rule put NaN and a function into its copy, with the value unchanged", function()
        local t = assert(by_ticket["m-paypal"], "m-paypal accepted")
        assert.same({ intent = "payment", order_id = core.null, urgent = true,
            summary = "Payment issue: My PayPal payment for order 2005 failed but the money left my account." },
            t.value)
    end)

    it("leaves the other mails as the plain contract has them", function()
        assert.is_table(by_ticket["m-1042"])
        assert.equal("format", by_review["m-hallo"].reason.category)
        assert.equal("rule_failed", by_review["m-9999"].reason.kind)
    end)
end)

describe("bin/jsoncontract triage with a value no line can hold", function()
    it("sends that item to review saying why, and the run goes on", function()
        local pipe, port = util.start_fault_server(60)
        local dir = os.tmpname()
        os.remove(dir)
        finally(function()
            util.stop_fault_server(pipe, port)
            os.execute("rm -rf '" .. dir .. "'")
        end)
        assert(os.execute("mkdir -p '" .. dir .. "'"))
        local f = assert(io.open(dir .. "/any.lua", "w"))
        f:write('return { contract = require("jsoncontract").contract { name = "any", version = "1", ' ..
            'instructions = "Answer with a JSON object.", schema = { type = "object" } } }\n')
        f:close()
        local out, code = util.sh(("env -u ANTHROPIC_API_KEY OPENAI_API_KEY=sk-test-0000 " ..
            "OPENAI_BASE_URL=http://127.0.0.1:%d/f/deep1/deep+ok OPENAI_MODEL=m %s bin/jsoncontract triage " ..
            "--input examples/mailbox.jsonl --out %s/out --job %s/any.lua --parallel 1")
            :format(port, LUA, dir, dir))
        assert.equal(0, code, out)
        local review = read_lines(dir .. "/out/review.jsonl")
        local tickets = read_lines(dir .. "/out/accepted.jsonl")
        assert.equal(1, #review)
        assert.equal(11, #tickets)
        local r = review[1].reason
        assert.same({ "internal", "item_error" }, { r.category, r.kind })
        assert.truthy(r.message:find("this item's line could not be written: the value nests 1000 levels deep, "
            .. "and its line of accepted.jsonl would be deeper than a JSON reader takes by default", 1, true),
            r.message)
        assert.truthy(#r.message < 400, r.message)
        for _, t in ipairs(tickets) do assert.is_table(t.value) end -- every accepted line reads back
    end)
end)

describe("bin/jsoncontract triage with a rule stuck in a loop", function()
    it("stops on SIGTERM (the budget's hook reads the signal), exit 143, the item left for --resume", function()
        -- (whether the signal comes while the rule loops or while its item waits on the model,
        -- the loop is stopped: at once, or once the grace is over)
        local dir = os.tmpname()
        os.remove(dir)
        finally(function() os.execute("rm -rf '" .. dir .. "'") end)
        assert(os.execute("mkdir -p '" .. dir .. "'"))
        local f = assert(io.open(dir .. "/stuck.lua", "w"))
        -- (the hook cannot be removed: debug is out of reach, and the budgets are a day long)
        f:write([[
local M = dofile("examples/support_ticket.lua")
M.contract = require("jsoncontract").contract { name = "support_ticket", version = "1.0.0", schema = M.schema,
    instructions = "You sort customer support mail into queues.",
    rules_budget = { steps = 1e15, ms = 86400000, item_steps = 1e15, item_ms = 86400000 },
    rules = { function() pcall(function() debug.sethook() end) while true do end end } }
return M
]])
        f:close()
        -- (sh's pid is the triage's: exec)
        os.execute(("(sh -c 'echo $$ > %s/pid; exec env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract "
            .. "triage --input examples/mailbox.jsonl --out %s/out --job %s/stuck.lua --seed 1 --delay-ms 0 "
            .. "--parallel 1 --grace 1' > %s/log 2>&1; echo $? > %s/rc) &"):format(dir, LUA, dir, dir, dir, dir))
        local function exists(p)
            local h = io.open(p, "rb")
            if h then h:close() end
            return h ~= nil
        end
        -- stuck: the job exists, the stand-in answers within a second, the rule loops
        for _ = 1, 300 do
            if exists(dir .. "/out/job.sqlite") or exists(dir .. "/rc") then break end
            os.execute("sleep 0.1")
        end
        os.execute("sleep 2")
        assert.is_false(exists(dir .. "/rc"), "the run ended by itself: " .. tostring(util.read(dir .. "/log")))
        local pid = assert(util.read(dir .. "/pid")):match("%d+")
        os.execute("kill -TERM " .. pid)
        -- (a bound against a hang, not a speed check)
        for _ = 1, 300 do
            if exists(dir .. "/rc") then break end
            os.execute("sleep 0.1")
        end
        if not exists(dir .. "/rc") then os.execute("kill -KILL " .. pid) end
        local log = tostring(util.read(dir .. "/log"))
        assert.equal("143", (util.read(dir .. "/rc") or "none"):match("%d+"), log)
        assert.truthy(log:find("stopped by SIGTERM", 1, true), log)
        -- the stuck item was not decided: it is neither a ticket nor in review
        local decided = 0
        for _, name in ipairs { "tickets.jsonl", "review.jsonl" } do
            for line in (util.read(dir .. "/out/" .. name) or ""):gmatch("[^\n]+") do
                decided = decided + 1
                assert.falsy(line:find("rule_interrupted", 1, true), line)
            end
        end
        assert.truthy(log:find("not done yet", 1, true) or decided < 12, log)
        -- its exchange was made: recorded with the stopped rule, the item waiting, and exported
        local st = assert(require("jsoncontract.jobs.store").open(dir .. "/out/job.sqlite", { create = false }))
        finally(function() st:close() end)
        local job = assert(st:latest_job())
        local stopped = assert(st:query("SELECT e.record_json, i.state FROM evidence e JOIN items i ON "
            .. "i.job_id = e.job_id AND i.item_id = e.item_id WHERE e.job_id = ? AND e.record_json LIKE ?",
            { job.id, '%"kind":"rule_interrupted"%' }))
        -- one item in flight (--parallel 1), asked once: nothing is taken after the signal, not
        -- even the item the stopped rule gave back
        assert.equal(1, #stopped, log)
        for _, row in ipairs(stopped) do
            local rec = core.decode(row.record_json)
            assert.same({ "pending", "rules", core.decode(stopped[1].record_json).item_id },
                { row.state, rec.gate, rec.item_id })
        end
        local exported = util.read(dir .. "/out/evidence.jsonl") or ""
        assert.truthy(exported:find('"kind":"rule_interrupted"', 1, true), exported)
        assert.equal(st:counts(job.id).exchanges, select(2, exported:gsub("\n", "")))
        -- replaying the folder does not run the stopped rule again (it would loop, or differ: a
        -- signal's verdict is not the text's), and names the record it left out
        local out = util.sh(("timeout 60 %s bin/jsoncontract replay %s/out --contract %s/stuck.lua 2>&1")
            :format(LUA, dir, dir))
        assert.truthy(out:find(": recorded rules/rule_interrupted (a signal stopped the rule, not the text): not "
            .. "replayed", 1, true), out)
        assert.falsy(out:find("DIFFERS", 1, true), out)
    end)
end)
