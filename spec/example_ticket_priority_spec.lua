-- examples/ticket_priority.lua: the example's cases (Estonian ticket classification): the two
-- seed answers, the order of checks, one repair at most, strict schema == checked schema, the
-- per-attempt log and the plain user message.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local messages = require "jsoncontract.feedback"
local fake = require "support.fake_model"
local util = require "support.util"

local ex = dofile("examples/ticket_priority.lua")

local VALID = '{"teema":"Arve","prioriteet":"kõrge","kokkuvõte":"Vajab kontrolli"}'
local SHORT = '{"teema":"Arve","prioriteet":"kohe"}'

local errs = util.errs

-- The recorded model: answers keyed by a word of the ticket.
local ANSWERS = {
    arve = { VALID },
    kohe = { SHORT, VALID },
    ikka = { SHORT, SHORT, VALID },
    keeldu = { { nil, "stop", "Ma ei saa sellega aidata." } },
    pooleli = { { VALID, "length" } },
    ["mõlemad"] = { { VALID, "length", "Ma ei saa sellega aidata." } },
    filter = { { nil, "content_filter" } },
    teema = { '{"teema":"Raamatupidamine","prioriteet":"madal","kokkuvõte":"Küsimus"}',
              '{"teema":"Arve","prioriteet":"madal","kokkuvõte":"Küsimus"}' },
    prose = { "Tere! Kuidas saan aidata?" },
}
local KEYS = { "arve", "kohe", "ikka", "keeldu", "pooleli", "mõlemad", "filter", "teema" }
local function key(mail)
    for _, k in ipairs(KEYS) do
        if mail:find(k, 1, true) then return k end
    end
    return "prose"
end

-- The job module's context (the queues), plus what a case adds (a user).
local function with_context(more)
    local ctx = ex.context()
    for k, v in pairs(more or {}) do ctx[k] = v end
    return ctx
end

local function ask(ticket, opts)
    local send, calls = fake.transport { answers = ANSWERS, key = key }
    opts = util.fake_opts(send, opts)
    opts.context = with_context(opts.context)
    opts.policy = opts.policy or ex.policy
    opts.evidence = opts.evidence or evidence.memory()
    return jc.ask(ex.contract, ticket, opts), calls, opts.evidence
end

describe("examples/ticket_priority.lua", function()
    describe("the seed answers", function()
        it('accepts {"teema":"Arve","prioriteet":"kõrge","kokkuvõte":"Vajab kontrolli"}', function()
            local v = assert(ex.contract:check(VALID, { context = with_context() }))
            assert.same({ teema = "Arve", prioriteet = "kõrge", ["kokkuvõte"] = "Vajab kontrolli" }, v)
        end)
        it('rejects {"teema":"Arve","prioriteet":"kohe"}: missing summary and unknown priority, nothing filled in',
            function()
                local v, err = ex.contract:check(SHORT, { context = with_context() })
                assert.is_nil(v)
                assert.equal("schema", err.category)
                assert.same({ { "", "required" }, { "/prioriteet", "enum" } }, errs(err))
                assert.equal("missing required field /kokkuvõte", err.errors[1].message)
                assert.equal('/prioriteet "kohe" is not one of "madal", "kõrge"', err.errors[2].message)
            end)
        it("rejects an extra field", function()
            local v, err = ex.contract:check('{"teema":"Arve","prioriteet":"madal","kokkuvõte":"x","staatus":"uus"}',
                { context = with_context() })
            assert.is_nil(v)
            assert.same({ { "/staatus", "additionalProperties" } }, errs(err))
        end)
    end)

    describe("the order of checks", function()
        it("a refusal comes first, even when the reply was also cut off", function()
            local out, calls = ask("mõlemad korraga")
            assert.equal("refused", out.reason.category)
            assert.equal(1, #calls)
        end)
        it("a reply at the output limit is not finished, however whole its JSON looks", function()
            local out, calls = ask("pooleli jäänud")
            assert.equal("truncated", out.reason.category)
            assert.equal(1, #calls)
        end)
        it("a content filter stops it too, never repaired", function()
            local out, calls = ask("filter")
            assert.equal("filtered", out.reason.category)
            assert.equal(1, #calls)
        end)
        it("then parse: prose fails the format gate", function()
            local out = ask("tere")
            assert.equal("format", out.attempts[1].gate)
        end)
        it("then schema, then the business rules", function()
            local out = ask("teema vale")
            assert.equal("rules", out.attempts[1].gate)
            assert.same({ { "/teema", "rule:known_topic" } }, errs(out.attempts[1]))
            assert.equal("accepted", out.status)
            assert.equal("Arve", out.value.teema)
        end)
        it("a rule this user fails goes to a person, not back to the model", function()
            local out, calls = ask("arve", { context = { user = { may_escalate = false } } })
            assert.equal("human_review", out.status)
            assert.equal(1, #calls)
            assert.same({ { "/prioriteet", "rule:may_escalate" } }, errs(out.reason))
        end)
    end)

    describe("as a job module", function()
        it("its rules fail, not pass, without the queues (no context)", function()
            local v, err = ex.contract:check(VALID)
            assert.is_nil(v)
            assert.same({ { "/teema", "rule:known_topic" } }, errs(err))
        end)
        it("maps a record to the item the model reads, and refuses one without text", function()
            assert.same({ id = "t-1", text = "Arve" }, ex.item { id = "t-1", text = "Arve", replies = {} })
            local it, why = ex.item { id = "t-2" }
            assert.is_nil(it)
            assert.equal("has no string field 'text'", why)
        end)
    end)

    describe("one repair at most", function()
        it("the short answer is repaired once with the short validation error", function()
            local out, calls = ask("kohe vaja")
            assert.equal("accepted", out.status)
            assert.equal(2, #calls)
            local fb = calls[2].body.messages[4].content
            assert.truthy(fb:find("missing required field /kokkuvõte", 1, true))
            assert.truthy(fb:find('/prioriteet "kohe" is not one of "madal", "kõrge"', 1, true))
            -- the same schema both times
            assert.same(calls[1].body.response_format, calls[2].body.response_format)
        end)
        it("a second bad answer is a controlled error, and the user sees a plain message", function()
            local out, calls = ask("ikka vale")
            assert.equal("human_review", out.status)
            assert.equal(2, #calls)
            assert.equal("schema", out.reason.category)
            assert.equal("The answer could not be processed right now. Please try again.", messages.user_message(out))
        end)
        it("a refusal is a state, not a format error: the user is told a person will look", function()
            local out = ask("keeldu")
            assert.equal("Your request has been passed to a person, who will get back to you.",
                messages.user_message(out))
        end)
    end)

    describe("what the user sees", function()
        local errors = require "jsoncontract.errors"
        for _, c in ipairs {
            { "transport", "server_error", "retry_later" }, { "protocol", "invalid_envelope", "retry_later" },
            { "truncated", "max_tokens", "retry_later" }, { "format", "unexpected_character", "retry_later" },
            { "schema", "schema_mismatch", "retry_later" }, { "budget", "token_budget", "retry_later" },
            { "refused", "refusal", "person" }, { "filtered", "content_filter", "person" },
            { "rules", "rule_failed", "person" },
        } do
            it("a " .. c[1] .. " failure reads as a plain message, without internals", function()
                local out = { status = "human_review", reason = errors.new(c[1], c[2],
                    '/prioriteet "kohe" is not one of "madal", "kõrge"') }
                local m = messages.user_message(out)
                assert.equal(messages.TEXT[c[3]], m)
                for _, internal in ipairs { "/", c[1], c[2], "JSON", "kohe", "HTTP" } do
                    assert.falsy(m:find(internal, 1, true), internal)
                end
            end)
        end
        it("an accepted outcome has no message", function()
            assert.is_nil(messages.user_message((ask("arve"))))
        end)
        it("misuse raises", function()
            assert.has_error(function() messages.user_message("x") end, "user_message: outcome table expected")
        end)
    end)

    describe("strict schema mode", function()
        it("sends exactly the schema it checks (every field required, no keyword dropped)", function()
            local _, calls = ask("arve")
            local rf = calls[1].body.response_format
            assert.equal("json_schema", rf.type)
            assert.is_true(rf.json_schema.strict)
            assert.equal(core.encode(ex.schema), core.encode(rf.json_schema.schema))
        end)
        it("JSON mode only promises syntax: the schema goes in the prompt and is still checked here", function()
            local out, calls = ask("kohe vaja", { mode = "json" })
            assert.same({ type = "json_object" }, calls[1].body.response_format)
            assert.truthy(calls[1].body.messages[1].content:find('- prioriteet: string, one of "madal", "kõrge"', 1, true))
            assert.equal("schema", out.attempts[1].gate)
        end)
    end)

    describe("the log per attempt", function()
        it("has request id, schema version, finish state and error kind; no text without opt-in", function()
            local out, _, log = ask("kohe vaja")
            assert.equal(2, #log.lines)
            local r1, r2 = core.decode(log.lines[1]), core.decode(log.lines[2])
            assert.equal(out.request_id, r1.request_id)
            assert.equal("1.0.0", r1.contract.version)
            assert.equal("stop", r1.finish)
            assert.equal("schema", r1.gate)
            assert.equal("schema_mismatch", r1.kind)
            assert.same({ "", "/prioriteet" }, { r1.errors[1].pointer, r1.errors[2].pointer })
            assert.equal("accepted", r2.gate)
            for _, line in ipairs(log.lines) do
                assert.falsy(line:find("kohe vaja", 1, true))
                assert.falsy(line:find("Vajab kontrolli", 1, true))
            end
        end)
        it("keeps the model output only when the data policy allows", function()
            local _, _, log = ask("kohe vaja", { evidence = evidence.memory { record_text = true } })
            assert.truthy(log.lines[2]:find("Vajab kontrolli", 1, true))
        end)
    end)
end)
