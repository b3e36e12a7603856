-- examples/leave_request.lua: the example's tests. Inputs (ordinary, ambiguous, incomplete,
-- contradictory, off-topic) run through the recorded fake model; replies (reversed range,
-- impossible date, wrong type, extra key, non-JSON, ...) through contract:check.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local fake = require "support.fake_model"
local util = require "support.util"

local ex = dofile("examples/leave_request.lua")

local errs = util.errs

local function reply(status, s, e, q)
    return core.encode { status = status, start_date = s or jc.null, end_date = e or jc.null,
        clarification_question = q or jc.null }
end

local ANSWERS = {
    ordinary = { reply("complete", "2027-06-12", "2027-06-14") },
    friday = { reply("needs_clarification", nil, nil, "Which Friday do you mean, with its date?") },
    incomplete = { reply("needs_clarification", "2027-06-12", nil, "Until which day do you want leave?") },
    contradictory = { reply("complete", "2027-06-12", "2027-06-10") },
    offtopic = { reply("not_a_request") },
    ["fill-in"] = { reply("complete", "2027-06-12", nil) },
    sloppy = { '{"status":"complete","start_date":"2027-6-12","end_date":"2027-06-14","clarification_question":null}',
               reply("complete", "2027-06-12", "2027-06-14") },
    prose = { "Gern! Ab wann genau?" },
}
local INPUTS = {
    ordinary = "Ich möchte vom 12. bis 14. Juni 2027 Urlaub nehmen.",
    friday = "Ich brauche am Freitag frei.",
    incomplete = "Urlaub ab dem 12. Juni 2027, bitte.",
    contradictory = "Urlaub vom 12. bis zum 10. Juni 2027.",
    offtopic = "Was gibt es heute in der Kantine?",
    ["fill-in"] = "Urlaub ab dem 12. Juni, Ende offen.",
    sloppy = "Urlaub 12.6.2027 bis 14.6.2027",
}
local function key(mail)
    for k, text in pairs(INPUTS) do
        if mail == text then return k end
    end
    return "prose"
end

local function ask(name, opts)
    local send, calls = fake.transport { answers = ANSWERS, key = key }
    opts = util.fake_opts(send, opts)
    opts.policy = ex.policy
    opts.evidence = opts.evidence or evidence.memory()
    local out = jc.ask(ex.contract, INPUTS[name] or name, opts)
    return out, ex.result(out), calls
end

describe("examples/leave_request.lua", function()
    describe("inputs through the recorded fake model", function()
        it("ordinary: a complete request, valid", function()
            local out, r = ask("ordinary")
            assert.equal("valid", r.kind)
            assert.same({ status = "complete", start_date = "2027-06-12", end_date = "2027-06-14",
                clarification_question = jc.null }, r.value)
            assert.is_nil(out.needs_clarification)
        end)
        it("ambiguous ('am Freitag'): needs clarification, with the question, no invented date", function()
            local out, r = ask("friday")
            assert.equal("needs_clarification", r.kind)
            assert.equal("Which Friday do you mean, with its date?", r.question)
            assert.equal(jc.null, out.value.start_date)
            assert.is_true(out.needs_clarification)
        end)
        it("incomplete (no end date): needs clarification, end date stays null", function()
            local out, r = ask("incomplete")
            assert.equal("needs_clarification", r.kind)
            assert.equal(jc.null, out.value.end_date)
        end)
        it("contradictory ('vom 12. bis zum 10.'): invalid, to a person after one attempt, never swapped", function()
            local out, r, calls = ask("contradictory")
            assert.equal("invalid", r.kind)
            assert.equal(1, #calls)
            assert.equal("rules", r.reason.category)
            assert.same({ { "/end_date", "rule:status_fits" } }, errs(r.reason))
            assert.equal("end date 2027-06-10 is before start date 2027-06-12", r.reason.errors[1].message)
            assert.is_nil(out.value)
        end)
        it("off-topic: not a request, valid, no dates", function()
            local _, r = ask("offtopic")
            assert.equal("valid", r.kind)
            assert.same({ "not_a_request", jc.null, jc.null }, { r.value.status, r.value.start_date, r.value.end_date })
        end)
        it("a 'complete' answer missing its end date is invalid, never completed with the start date", function()
            local _, r = ask("fill-in")
            assert.equal("invalid", r.kind)
            assert.same({ { "/end_date", "rule:status_fits" } }, errs(r.reason))
        end)
        it("a date that does not round-trip gets one clearer retry, then passes", function()
            local out, r, calls = ask("sloppy")
            assert.equal("valid", r.kind)
            assert.equal(2, #calls)
            assert.same({ { "/start_date", "pattern" }, { "/start_date", "format" } }, errs(out.attempts[1]))
        end)
        it("prose twice: invalid after the bounded retry", function()
            local _, r, calls = ask("Hallo?")
            assert.equal("invalid", r.kind)
            assert.equal(2, #calls)
            assert.equal("format", r.reason.category)
        end)
        it("counts needing clarification in the metrics", function()
            local m = evidence.metrics()
            for _, name in ipairs { "ordinary", "friday", "incomplete", "contradictory", "offtopic" } do
                m:observe_outcome((ask(name)))
            end
            local s = m:summary()
            assert.same({ 5, 5, 5, 4, 2, 1 }, { s.items, s.parseable, s.schema_valid, s.accepted,
                s.needs_clarification, s.human_review })
        end)
    end)

    describe("replies through contract:check", function()
        local cases = {
            { "the valid example",
              '{"status":"complete","start_date":"2027-06-12","end_date":"2027-06-14","clarification_question":null}' },
            { "reversed range", reply("complete", "2027-06-14", "2027-06-12"), "rules",
              { { "/end_date", "rule:status_fits" } } },
            { "impossible date", reply("complete", "2027-02-30", "2027-03-02"), "schema",
              { { "/start_date", "format" } }, { '/start_date "2027-02-30" is not a valid date' } },
            { "a date that does not round-trip", reply("complete", "2027-6-12", "2027-06-14"), "schema",
              { { "/start_date", "pattern" }, { "/start_date", "format" } } },
            { "an empty string for an unknown date", reply("needs_clarification", "", nil, "Wann?"), "schema",
              { { "/start_date", "pattern" }, { "/start_date", "format" } } },
            { "'unknown' for an unknown date", reply("needs_clarification", "unknown", nil, "Wann?"), "schema",
              { { "/start_date", "pattern" }, { "/start_date", "format" } } },
            { "wrong type", '{"status":"complete","start_date":20270612,"end_date":"2027-06-14","clarification_question":null}',
              "schema", { { "/start_date", "type" } }, { "/start_date is number, expected string or null" } },
            { "extra key", '{"status":"not_a_request","start_date":null,"end_date":null,"clarification_question":null,' ..
              '"reason":"Kantine"}', "schema", { { "/reason", "additionalProperties" } } },
            { "a missing field is not null", '{"status":"not_a_request","start_date":null,"end_date":null}', "schema",
              { { "", "required" } }, { "missing required field /clarification_question" } },
            { "an unknown status", reply("maybe"), "schema", { { "/status", "enum" } } },
            { "non-JSON", "Urlaub vom 12. bis 14. Juni", "format" },
            { "complete with a question", reply("complete", "2027-06-12", "2027-06-14", "Sicher?"), "rules",
              { { "/clarification_question", "rule:status_fits" } } },
            { "complete without dates", reply("complete"), "rules",
              { { "/start_date", "rule:status_fits" }, { "/end_date", "rule:status_fits" } } },
            { "needs_clarification without a question", reply("needs_clarification"), "rules",
              { { "/clarification_question", "rule:status_fits" } } },
            { "needs_clarification with a blank question", reply("needs_clarification", nil, nil, "  "), "rules",
              { { "/clarification_question", "rule:status_fits" } } },
            { "not_a_request with dates", reply("not_a_request", "2027-06-12", "2027-06-14"), "rules",
              { { "/start_date", "rule:status_fits" }, { "/end_date", "rule:status_fits" } } },
        }
        for _, c in ipairs(cases) do
            it(c[1], function()
                local v, err = ex.contract:check(c[2])
                if not c[3] then
                    assert.equal("2027-06-12", v.start_date)
                    assert.equal(jc.null, v.clarification_question)
                    return
                end
                assert.is_nil(v)
                assert.equal(c[3], err.category)
                if c[3] == "format" then
                    assert.equal("unexpected_character", err.kind)
                    assert.equal(0, err.offset)
                end
                if c[4] then assert.same(c[4], errs(err)) end
                if c[5] then
                    for i, m in ipairs(c[5]) do assert.equal(m, err.errors[i].message) end
                end
                if c[3] == "rules" then assert.is_false(err.retry) end
            end)
        end
        it("dates round-trip exactly", function()
            -- keys sorted, as core.encode writes them
            local text = '{"clarification_question":null,"end_date":"2027-06-14","start_date":"2027-06-12","status":"complete"}'
            assert.equal(text, core.encode((ex.contract:check(text))))
        end)
    end)

    describe("compatibility across versions", function()
        local diff = require "jsoncontract.contract.diff"
        local function v2(edit)
            local s = core.decode(core.encode(ex.schema))
            edit(s)
            return diff.diff(ex.schema, s)
        end
        it("a new optional field (a reason) is compatible", function()
            local f, breaking = v2(function(s) s.properties.reason = { type = { "string", "null" } } end)
            assert.is_false(breaking)
            assert.equal("property_added_optional", f[1].change)
        end)
        it("a new status value is breaking for consumers that branch on status", function()
            local f, breaking = v2(function(s) s.properties.status.enum[4] = "cancelled" end)
            assert.is_true(breaking)
            assert.same({ "/properties/status", "enum_value_added" }, { f[1].pointer, f[1].change })
        end)
        it("dates that may no longer be null are breaking: old needs_clarification answers fail", function()
            local f, breaking = v2(function(s) s.properties.end_date.type = "string" end)
            assert.is_true(breaking)
            assert.same({ "/properties/end_date", "null_disallowed" }, { f[1].pointer, f[1].change })
        end)
    end)

    describe("the contract version", function()
        it("is in the prompt, in every outcome and in every evidence record", function()
            assert.truthy(ex.contract:prompt():find("Contract: leave_request, version 1.0.0.", 1, true))
            local log = evidence.memory()
            local out = ask("sloppy", { evidence = log })
            assert.equal("1.0.0", out.contract.version)
            assert.equal(ex.contract.schema_hash, out.contract.schema_hash)
            assert.equal(2, #log.lines)
            for _, line in ipairs(log.lines) do
                local rec = core.decode(line)
                assert.same({ "leave_request", "1.0.0", ex.contract.schema_hash },
                    { rec.contract.name, rec.contract.version, rec.contract.schema_hash })
            end
        end)
    end)
end)
