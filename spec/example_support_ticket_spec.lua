-- examples/support_ticket.lua: every case of the example, the lesson's exercises (4-digit order
-- ids, blank summaries, the 100-token budget) and the shop rules against a real SQLite table.
local jc = require "jsoncontract"
local evidence = require "jsoncontract.evidence"
local fake = require "support.fake_model"
local util = require "support.util"

local ticket = dofile("examples/support_ticket.lua")
local orders = dofile("examples/orders.lua")

local errs = util.errs

local msgs = util.msgs

-- The job module's own context (the shop's orders table, in memory): the rules read it.
local job_ctx
local function shop()
    job_ctx = job_ctx or assert(ticket.context {})
    return job_ctx
end

local function ask(contract, mail, fake_opts, opts)
    local send, calls = fake.transport(fake_opts)
    opts = util.fake_opts(send, opts)
    if opts.context == nil then
        opts.context = shop()
    end
    opts.evidence = opts.evidence or evidence.memory()
    return jc.ask(contract, mail, opts), calls
end

describe("examples/support_ticket.lua", function()
    describe("the example's answers", function()
        local S = "Courier did not come."
        local ENUM = '"delivery", "return", "payment", "other"'
        local cases = {
            { "a valid answer is accepted",
              '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"' .. S .. '"}' },
            { "German intent and 'ja' for a boolean: two errors, in order",
              '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"' .. S .. '"}', "schema",
              { { "/intent", "enum" }, { "/urgent", "type" } },
              { '/intent "Lieferung" is not one of ' .. ENUM, "/urgent is string, expected boolean" } },
            { "a missing order_id and an extra field mood",
              '{"intent":"return","urgent":false,"summary":"' .. S .. '","mood":"ruhig"}', "schema",
              { { "", "required" }, { "/mood", "additionalProperties" } },
              { "missing required field /order_id", "extra field /mood is not allowed" } },
            { "prose followed by a fenced block is not JSON",
              'Sure! Here is the data:\n```json\n{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x"}\n```',
              "format" },
            { "an unknown intent and a number where a string belongs",
              '{"intent":"refund","order_id":1042,"urgent":false,"summary":"' .. S .. '"}', "schema",
              { { "/intent", "enum" }, { "/order_id", "type" } },
              { '/intent "refund" is not one of ' .. ENUM, "/order_id is number, expected string or null" } },
        }
        for _, c in ipairs(cases) do
            it(c[1], function()
                local v, err = ticket.contract:check(c[2], { context = shop() })
                if not c[3] then
                    assert.same({ intent = "delivery", order_id = "1042", urgent = true, summary = S }, v)
                    return
                end
                assert.is_nil(v)
                assert.equal(c[3], err.category)
                if c[3] == "format" then
                    assert.equal("unexpected_character", err.kind)
                    assert.equal(0, err.offset)
                else
                    assert.equal("schema_mismatch", err.kind)
                    assert.same(c[4], errs(err))
                    assert.same(c[5], msgs(err))
                end
            end)
        end
    end)

    describe("the mail runs through the recorded fake model", function()
        it("order 1042 fails attempt 1 with the two errors and passes attempt 2", function()
            local out = ask(ticket.contract, "The courier did not come for order 1042, urgent, I leave tomorrow")
            assert.equal("accepted", out.status)
            assert.equal(2, #out.attempts)
            assert.same({ { "/intent", "enum" }, { "/urgent", "type" } }, errs(out.attempts[1]))
            assert.same({ "delivery", "1042", true }, { out.value.intent, out.value.order_id, out.value.urgent })
        end)
        it("order 1187 passes attempt 1", function()
            local out = ask(ticket.contract, "I want to return the jacket from order 1187, too big")
            assert.equal("accepted", out.status)
            assert.equal(1, #out.attempts)
            assert.same({ "return", "1187" }, { out.value.intent, out.value.order_id })
        end)
        it("'hello, something is wrong' gets prose three times and goes to a person, no category invented", function()
            local out, calls = ask(ticket.contract, "hello, something is wrong")
            assert.equal("human_review", out.status)
            assert.equal(3, #calls)
            assert.is_nil(out.value)
            assert.equal("format", out.reason.category)
            assert.equal("unexpected_character", out.reason.kind)
            assert.is_true(out.reason.attempts_exhausted)
        end)
        it("with reask_history \"all\" each attempt resends the whole history, so it costs more input tokens "
            .. "than the one before", function()
            local _, calls = ask(ticket.contract_all_history, "hello, something is wrong")
            local run = require "jsoncontract.run"
            local last = -1
            assert.equal(3, #calls)
            for i, c in ipairs(calls) do
                local n = 0
                for _, m in ipairs(c.body.messages) do n = n + run.estimate_tokens(m.content) end
                assert.is_true(n > last, "attempt " .. i)
                assert.equal(2 * i, #c.body.messages)
                last = n
            end
        end)
        it("by default a re-ask carries the mail, the last reply and its errors, not the earlier attempts", function()
            local _, calls = ask(ticket.contract, "hello, something is wrong")
            assert.equal(3, #calls)
            for i, c in ipairs(calls) do
                local m = c.body.messages
                assert.equal(i == 1 and 2 or 4, #m)
                assert.same({ "system", "user" }, { m[1].role, m[2].role })
                assert.equal("hello, something is wrong", m[2].content)
                if i > 1 then
                    assert.same({ "assistant", "user" }, { m[3].role, m[4].role })
                    assert.is_true(#m[3].content > 0)
                    assert.matches("^The answer is not exactly one valid JSON value", m[4].content)
                end
            end
        end)
    end)

    describe("the lesson's exercises", function()
        local function answer(order_id, summary)
            return jc.encode { intent = "delivery", order_id = order_id, urgent = false, summary = summary or "x." }
        end
        it("the 4-digit variant accepts 1042", function()
            local v = assert(ticket.contract_4digits:check(answer("1042"), { context = shop() }))
            assert.equal("1042", v.order_id)
        end)
        for _, id in ipairs { "10420", "#1042" } do
            it("the 4-digit variant rejects " .. id .. " with 'does not have 4 digits'", function()
                local v, err = ticket.contract_4digits:check(answer(id))
                assert.is_nil(v)
                assert.same({ { "/order_id", "pattern" } }, errs(err))
                assert.equal("/order_id " .. jc.encode(id) .. " does not have 4 digits", err.errors[1].message)
                assert.equal(err.errors[1].message, err.message)
            end)
        end
        it("the variant is a new version of the same contract", function()
            assert.equal(ticket.contract.name, ticket.contract_4digits.name)
            assert.equal("1.1.0", ticket.contract_4digits.version)
            assert.truthy(ticket.contract_4digits:prompt():find("version 1.1.0", 1, true))
        end)
        it("rejects an empty summary by minLength", function()
            local v, err = ticket.contract:check(answer(jc.null, ""))
            assert.is_nil(v)
            assert.same({ { "/summary", "minLength" }, { "/summary", "pattern" } }, errs(err))
        end)
        it("rejects a blank summary by its pattern", function()
            local v, err = ticket.contract:check(answer(jc.null, " \t "))
            assert.is_nil(v)
            assert.same({ { "/summary", "pattern" } }, errs(err))
        end)
        it("stops retrying once the history exceeds 100 tokens: 'hello, something is wrong' makes 2 attempts", function()
            local out, calls = ask(ticket.contract_all_history, "hello, something is wrong", nil, { policy = ticket.policy })
            assert.equal("human_review", out.status)
            assert.equal("budget", out.reason.category)
            assert.equal("token_budget", out.reason.kind)
            assert.equal(2, #out.attempts)
            assert.equal(2, #calls)
        end)
        it("the budget does not stop 1042, which is repaired within it", function()
            local out = ask(ticket.contract, "courier did not come, order 1042, urgent", nil, { policy = ticket.policy })
            assert.equal("accepted", out.status)
            assert.equal(2, #out.attempts)
        end)
    end)

    describe("the shop rules against the SQLite orders table", function()
        local db, path
        setup(function()
            path = os.tmpname()
            db = assert(orders.open(path))
            db:add("1042", "anna@example.org")
            db:add("1187", "ben@example.org")
        end)
        teardown(function()
            db:close()
            os.remove(path)
        end)
        local reply = '{"intent":"return","order_id":"1187","urgent":false,"summary":"Return the jacket."}'

        it("accepts order 1187 from its own customer", function()
            local v = assert(ticket.contract:check(reply, { context = { orders = db, sender = "ben@example.org" } }))
            assert.equal("1187", v.order_id)
        end)
        it("rejects order 1187 from another customer, for a person, not the model", function()
            local v, err = ticket.contract:check(reply, { context = { orders = db, sender = "anna@example.org" } })
            assert.is_nil(v)
            assert.equal("rule_failed", err.kind)
            assert.is_false(err.retry)
            assert.same({ { "/order_id", "rule:order_of_sender" } }, errs(err))
            assert.same({ "order 1187 does not belong to the sender" }, msgs(err))
        end)
        it("rejects an order that does not exist, with one error only", function()
            local v, err = ticket.contract:check(reply:gsub("1187", "4711"),
                { context = { orders = db, sender = "anna@example.org" } })
            assert.is_nil(v)
            assert.same({ { "/order_id", "rule:order_exists" } }, errs(err))
            assert.same({ "order 4711 does not exist" }, msgs(err))
        end)
        it("through jc.ask the foreign order goes to review after one attempt", function()
            local out, calls = ask(ticket.contract, "return the jacket, order 1187, too big", nil,
                { context = { orders = db, sender = "anna@example.org" } })
            assert.equal("human_review", out.status)
            assert.equal(1, #calls)
            assert.equal("rules", out.reason.category)
        end)
    end)

    describe("as a job module", function()
        local reply = '{"intent":"return","order_id":"1187","urgent":false,"summary":"Return the jacket."}'
        it("its context opens the shipped orders table, and closes it", function()
            local ctx, close = assert(ticket.context {})
            assert.is_true(ctx.orders:exists("1187"))
            assert.is_false(ctx.orders:exists("4711"))
            assert(ticket.contract:check(reply, { context = ctx }))
            close()
            assert.is_nil(ctx.orders.conn)
        end)
        it("without the orders table an order number fails, for a person, never passes", function()
            local v, err = ticket.contract:check(reply)
            assert.is_nil(v)
            assert.is_false(err.retry)
            assert.same({ { "/order_id", "rule:order_exists" } }, errs(err))
            -- no order number: nothing to look up
            assert(ticket.contract:check((reply:gsub('"1187"', "null"))))
        end)
    end)

    describe("beyond the program: the local check stays with a native schema", function()
        it("a refusal (stop reason refusal) is a state, never repaired", function()
            local out, calls = ask(ticket.contract, "order 5555",
                { script = { ["5555"] = { { nil, "stop", "I can't help with that." } } } })
            assert.equal("human_review", out.status)
            assert.equal(1, #calls)
            assert.equal("refused", out.reason.category)
        end)
        it("a reply cut at max tokens is never accepted", function()
            local whole = '{"intent":"other","order_id":null,"urgent":false,"summary":"x"}'
            local out = ask(ticket.contract, "order 5556", { script = { ["5556"] = { { whole, "length" } } } })
            assert.equal("human_review", out.status)
            assert.equal("truncated", out.reason.category)
        end)
    end)
end)
