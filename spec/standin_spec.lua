-- Specs for the stand-in model (jsoncontract.standin.conversation, .generate, .text and the
-- examples' examples/<name>_standin.lua) and its HTTP server (jsoncontract.standin.server via
-- bin/jsoncontract-standin).
local cjson = require "cjson"
local conversation = require "jsoncontract.standin.conversation"
local generate = require "jsoncontract.standin.generate"
local stext = require "jsoncontract.standin.text"

if #conversation.registered() == 0 then conversation.load_examples("examples") end

-- The parts this spec reads, under one name: the stand-in's modules, then what each example
-- knows (intent_of, extract_leave, FAULTS, ...).
local model = setmetatable({
    answer = conversation.answer, ASK_MORE_TEXT = conversation.ASK_MORE_TEXT,
    tokens = stext.tokens, cutoff_tokens = stext.cutoff_tokens, instance_json = generate.instance_json,
    -- the example a request is for, nil for the support ticket (the default) and any other schema
    contract_of = function(schema, system)
        local name = conversation.recognise(schema, system)
        if name ~= "support_ticket" then return name end
    end,
    CONTRACT_FAULTS = setmetatable({}, { __index = function(_, name) return conversation.known(name).FAULTS end }),
}, { __index = function(_, k)
    for _, ex in ipairs(conversation.registered()) do
        if ex[k] ~= nil then return ex[k] end
    end
end })

local SHARED = os.getenv("JC_SHARED") or "../shared"
local EMAILS = SHARED .. "/corpora/support-emails/emails.jsonl"

local TICKET_SCHEMA = {
    type = "object",
    properties = {
        intent = { type = "string", enum = { "delivery", "return", "payment", "other" } },
        order_id = { type = { "string", "null" } },
        urgent = { type = "boolean" },
        summary = { type = "string" },
    },
    required = { "intent", "order_id", "urgent", "summary" },
    additionalProperties = false,
}

local MAIL_1042 = "Hello, my order 1042: the courier did not come, urgent, I leave tomorrow."
local MAIL_1187 = "Hi, I want to return the jacket from order 1187, it is too big."

-- A conversation: the mail, then (answer, feedback) pairs.
local function convo(mail, ...)
    local messages = { { role = "user", content = mail } }
    for _, text in ipairs({ ... }) do
        messages[#messages + 1] = { role = "assistant", content = text }
        messages[#messages + 1] = { role = "user", content = "the answer does not match the schema: "
            .. "/intent \"Lieferung\" is not one of delivery, return, payment, other; return only JSON by the schema" }
    end
    return { system = "Return JSON with intent, order_id, urgent, summary.", messages = messages,
        schema = TICKET_SCHEMA }
end

local function load_emails()
    local f = io.open(EMAILS, "r")
    if not f then return nil end
    local out = {}
    for line in f:lines() do out[#out + 1] = cjson.decode(line) end
    f:close()
    return out
end

describe("the stand-in model", function()
    describe("answer() scripted cases", function()
        it("answers the 1042 mail with Lieferung/ja first, then the valid ticket", function()
            local a1 = model.answer(convo(MAIL_1042), { seed = 1 })
            assert.equal(1, a1.attempt)
            assert.equal("invalid", a1.kind)
            local v1 = cjson.decode(a1.text)
            assert.equal("Lieferung", v1.intent)
            assert.equal("1042", v1.order_id)
            assert.equal("ja", v1.urgent)
            assert.equal("string", type(v1.summary))
            local a2 = model.answer(convo(MAIL_1042, a1.text), { seed = 1 })
            assert.equal(2, a2.attempt)
            assert.equal("json", a2.kind)
            local v2 = cjson.decode(a2.text)
            assert.same({ "delivery", "1042", true }, { v2.intent, v2.order_id, v2.urgent })
        end)

        it("answers the 1187 mail correctly at attempt 1 for every seed", function()
            for seed = 1, 20 do
                local a = model.answer(convo(MAIL_1187), { seed = seed })
                assert.equal("json", a.kind)
                local v = cjson.decode(a.text)
                assert.same({ "return", "1187", false }, { v.intent, v.order_id, v.urgent })
            end
        end)

        it("asks for more about a mail with nothing to classify, every attempt", function()
            for _, mail in ipairs({ "hallo, irgendwas stimmt nicht", "hello, something is wrong" }) do
                local a1 = model.answer(convo(mail), { seed = 5 })
                local a3 = model.answer(convo(mail, a1.text, a1.text), { seed = 5 })
                assert.same({ "prose", model.ASK_MORE_TEXT }, { a1.kind, a1.text })
                assert.same({ "prose", model.ASK_MORE_TEXT, 3 }, { a3.kind, a3.text, a3.attempt })
            end
        end)

        it("refuses on [[refuse]] and cuts the object on [[truncate]]", function()
            local r = model.answer(convo("[[refuse]] order 5555 where is it"), { seed = 1 })
            assert.same({ "refusal" }, { r.kind, r.text })
            local t = model.answer(convo("[[truncate]] order 5555 where is it"), { seed = 1 })
            assert.equal("truncated", t.kind)
            assert.equal("{", t.text:sub(1, 1))
            assert.is_false(pcall(cjson.decode, t.text))
        end)

        it("cuts an answer that exceeds max_tokens and calls it truncated", function()
            local req = convo(MAIL_1187)
            req.max_tokens = 5
            local a = model.answer(req, { seed = 1 })
            assert.equal("truncated", a.kind)
            assert.is_true(model.tokens(a.text) <= 5)
        end)

        it("cuts a long unbroken answer by characters too (one token per 4 bytes)", function()
            local a = model.answer({ messages = { { role = "user", content = "x" } },
                schema = { type = "string", minLength = 3000 }, max_tokens = 100 })
            assert.same({ "truncated", "truncated", 400 }, { a.kind, a.fault, #a.text })
            assert.equal('"example', a.text:sub(1, 8))
            assert.equal(750, model.cutoff_tokens(string.rep("x", 3000)))
            assert.equal(3, model.tokens(string.rep("x", 1500) .. " " .. string.rep("x", 1500)))
            a = model.answer({ messages = { { role = "user", content = "x" } },
                schema = { type = "string", minLength = 300 }, max_tokens = 100 })
            assert.same({ "json", 302 }, { a.kind, #a.text })
        end)

        it("answers another schema with a plausible instance of it", function()
            local a = model.answer({
                messages = { { role = "user", content = "Extract: 2 Green Tea" } },
                schema = { type = "object", required = { "name", "qty", "tags", "kind" },
                    properties = { name = { type = "string" }, qty = { type = "integer", minimum = 1 },
                        tags = { type = "array" }, kind = { enum = { "a", "b" } } } },
            })
            assert.same({ "json", '{"name":"example name","qty":1,"tags":[],"kind":"a"}' }, { a.kind, a.text })
        end)
    end)

    describe("extraction", function()
        local cases = {
            { "order word", "Where is my Bestellung 48213? Paket fehlt", "48213", "delivery" },
            { "hash", "I was charged twice, see #55120", "55120", "payment" },
            { "model number skipped", "My Dell XPS 13 9310 screen flickers, order number is 93051.", "93051",
                "other" },
            { "no digits", "Quiero devolver mi pedido, por favor", nil, "return" },
            { "year and amount skipped", "Since 2023 you bill me $1200 each month", nil, "payment" },
        }
        for _, c in ipairs(cases) do
            it("reads " .. c[1], function()
                assert.equal(c[3], model.order_id_of(c[2]))
                assert.equal(c[4], model.intent_of(c[2]))
            end)
        end
        it("estimates tokens as words x 1.3 rounded up", function()
            assert.same({ 0, 2, 4, 13 }, { model.tokens(""), model.tokens("one"), model.tokens("a b c"),
                model.tokens("1 2 3 4 5 6 7 8 9 10") })
        end)
    end)

    describe("answer() over the support-mail corpus", function()
        local emails = load_emails()

        local function run(seed)
            local kinds, texts = {}, {}
            for i, r in ipairs(emails) do
                local a = model.answer(convo(r.text), { seed = seed })
                local k = a.fault or "clean"
                kinds[k] = (kinds[k] or 0) + 1
                texts[i] = a
            end
            return kinds, texts
        end

        it("gives every fault at least once and clean JSON to the majority", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local kinds = run(1)
            for _, f in ipairs(model.FAULTS) do
                assert.is_true((kinds[f] or 0) >= 1, "fault never seen: " .. f)
            end
            assert.is_true(kinds.clean > #emails / 2)
        end)

        it("is deterministic for a seed and differs between seeds", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local _, a = run(1)
            local _, b = run(1)
            local _, c = run(2)
            local differ = 0
            for i = 1, #a do
                assert.equal(a[i].text, b[i].text)
                if a[i].text ~= c[i].text then differ = differ + 1 end
            end
            assert.is_true(differ > 0)
        end)

        it("never invents an order_id for a mail without digits", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local _, answers = run(1)
            local checked = 0
            for i, r in ipairs(emails) do
                if not r.text:find("%d") and answers[i].kind == "json" then
                    assert.equal(cjson.null, cjson.decode(answers[i].text).order_id)
                    checked = checked + 1
                end
            end
            assert.is_true(checked > 100)
        end)

        it("mostly fixes its answer after feedback", function()
            if not emails then return pending("support-emails corpus not found at " .. EMAILS) end
            local retried, fixed = 0, 0
            for _, r in ipairs(emails) do
                local a1 = model.answer(convo(r.text), { seed = 1 })
                if a1.kind == "invalid" or a1.kind == "fenced" then
                    retried = retried + 1
                    local a2 = model.answer(convo(r.text, a1.text), { seed = 1 })
                    if a2.kind == "json" then fixed = fixed + 1 end
                end
            end
            assert.is_true(retried > 20)
            assert.is_true(fixed > retried / 2 and fixed < retried)
        end)
    end)
end)

describe("the stand-in model, the other example contracts", function()
    local jc = require "jsoncontract"
    local core = require "jsoncontract.core"
    local EX = {
        ticket_priority = dofile("examples/ticket_priority.lua"),
        leave_request = dofile("examples/leave_request.lua"),
        blog_category = dofile("examples/blog_category.lua"),
    }
    local NAMES = { "ticket_priority", "leave_request", "blog_category" }
    local FENCE = { "unwrap-one-json-fence" }
    -- what each example's rules read, as its job opens it (nil: it takes none)
    local CTX = {}
    for name, ex in pairs(EX) do CTX[name] = type(ex.context) == "function" and ex.context {} or nil end

    local function ask(name, text, seed, ...)
        local messages = { { role = "user", content = text } }
        for _, prev in ipairs({ ... }) do
            messages[#messages + 1] = { role = "assistant", content = prev }
            messages[#messages + 1] = { role = "user", content = "the answer does not match the schema; "
                .. "return only JSON by the schema" }
        end
        return model.answer({ system = EX[name].contract:prompt(), messages = messages, schema = EX[name].schema },
            { seed = seed or 1 })
    end

    -- Synthetic inputs, ~300 per contract, all different.
    local CORPUS = { ticket_priority = {}, leave_request = {}, blog_category = {} }
    do
        local topics = { "Arvel on vale summa", "Pakk ei jõudnud kohale", "Ma ei saa kontole sisse logida",
            "Rakendus ei tööta", "Küsimus teie lahtiolekuaegade kohta" }
        local urg = { ".", ", palun kiiresti!", ", vaja kohe parandada.", ". Pole kiire." }
        for i = 1, 15 do
            for _, t in ipairs(topics) do
                for _, u in ipairs(urg) do
                    local l = CORPUS.ticket_priority
                    l[#l + 1] = t .. u .. " Pilet nr " .. i .. "."
                end
            end
        end
        local months = { "Januar", "März", "Juni", "August", "Oktober", "Dezember" }
        local en = { "January", "March", "June", "August", "October", "December" }
        local l = CORPUS.leave_request
        for i = 1, 50 do
            local m = (i % 6) + 1
            local d1, d2 = (i % 20) + 1, (i % 20) + 3
            l[#l + 1] = ("Ich möchte vom %d. bis %d. %s 2027 Urlaub nehmen."):format(d1, d2, months[m])
            l[#l + 1] = ("Please book leave from %d %s 2027 to %d %s 2027."):format(d1, en[m], d2, en[m])
            l[#l + 1] = ("Urlaub %d.%d.2027 bis %d.%d.2027"):format(d1, m * 2, d2, m * 2)
            l[#l + 1] = ("Urlaub ab dem %d. %s 2027, bitte."):format(d1, months[m])
            l[#l + 1] = ("Ich brauche am Freitag frei, Team %d."):format(i)
            l[#l + 1] = ("Was gibt es heute in der Kantine, Raum %d?"):format(i)
        end
        local posts = { "Scaling laws for transformer language models, part %d",
            "A humanoid robot learns to fold laundry, video %d", "Building a RAG chatbot with an API, lesson %d",
            "蛋炒飯的做法 %d", "如何用大模型API搭建多輪對話客服系統 第%d篇", "Fine-tuning Llama for code review, week %d" }
        for i = 1, 50 do
            for _, p in ipairs(posts) do
                CORPUS.blog_category[#CORPUS.blog_category + 1] = p:format(i)
            end
        end
    end

    describe("contract_of()", function()
        it("knows each contract by its schema's property names, or by the system prompt without one", function()
            for _, name in ipairs(NAMES) do
                assert.equal(name, model.contract_of(EX[name].schema))
                assert.equal(name, model.contract_of(nil, EX[name].contract:prompt()))
            end
            assert.is_nil(model.contract_of({ type = "object", properties = { status = {}, tags = {} } }))
            assert.is_nil(model.contract_of(nil, "Return JSON."))
        end)
    end)

    describe("ticket_priority", function()
        local cases = {
            { "Arvel on vale summa, palun kontrollige kiiresti!", "Arve", "kõrge" },
            { "Pakk ei jõudnud kohale.", "Tarne", "madal" },
            { "Ma ei saa kontole sisse logida, vaja kohe!", "Konto", "kõrge" },
            { "Rakendus ei tööta pärast uuendust.", "Tehniline", "madal" },
            { "Tere, mul on üks küsimus.", "Muu", "madal" },
        }
        for _, c in ipairs(cases) do
            it("reads " .. c[1], function()
                local v = model.extract_priority(c[1])
                assert.same({ c[2], c[3] }, { v.teema, v.prioriteet })
                assert.truthy(v.kokkuvote:find("%S"))
            end)
        end
    end)

    describe("leave_request", function()
        local cases = {
            { "Ich möchte vom 12. bis 14. Juni 2027 Urlaub nehmen.", "complete", "2027-06-12", "2027-06-14" },
            { "Please book leave from 12 June 2027 to 14 June 2027.", "complete", "2027-06-12", "2027-06-14" },
            { "Leave 2027-06-12 to 2027-06-14, thanks", "complete", "2027-06-12", "2027-06-14" },
            { "Urlaub 12.6.2027 bis 14.6.2027", "complete", "2027-06-12", "2027-06-14" },
            { "I need time off from June 3, 2027 until June 5, 2027", "complete", "2027-06-03", "2027-06-05" },
            { "Ich brauche am Freitag frei.", "needs_clarification", nil, nil, "Welchen Freitag meinen Sie (mit Datum)?" },
            { "Urlaub ab dem 12. Juni 2027, bitte.", "needs_clarification", "2027-06-12", nil,
                "Bis zu welchem Tag möchten Sie Urlaub?" },
            { "Urlaub vom 12. bis zum 10. Juni 2027.", "needs_clarification" },
            { "Urlaub vom 30. Juni bis 31. Juni 2027", "needs_clarification" },
            { "Urlaub im Sommer, bitte.", "needs_clarification" },
            { "Was gibt es heute in der Kantine?", "not_a_request" },
        }
        for _, c in ipairs(cases) do
            it("reads " .. c[1], function()
                local v = model.extract_leave(c[1])
                assert.same({ c[2], c[3], c[4] }, { v.status, v.start_date, v.end_date })
                if c[5] then assert.equal(c[5], v.question) end
                assert.equal(c[2] == "needs_clarification", v.question ~= nil)
            end)
        end

        it("never invents a date: without a year in the text both dates are null", function()
            for _, text in ipairs(CORPUS.leave_request) do
                local a = ask("leave_request", text, 3)
                if a.kind == "json" and not text:find("%d%d%d%d") then
                    local v = core.decode(a.text)
                    assert.same({ jc.null, jc.null }, { v.start_date, v.end_date }, text)
                end
            end
        end)
    end)

    describe("blog_category", function()
        local cases = {
            { "如何用大模型API搭建多輪對話客服系統", "ai-apps" },
            { "Scaling laws for transformer language models, revisited", "llm" },
            { "A humanoid robot learns to fold laundry from video", "embodied-ai" },
            { "蛋炒飯的做法", "needs-review" },
            { "RAG pipelines in practice", "ai-apps" },
            { "Apple pie with ragout", "needs-review" }, -- short keywords only as whole words
        }
        for _, c in ipairs(cases) do
            it("reads " .. c[1], function()
                local v = model.extract_blog(c[1])
                assert.equal(c[2], v.category)
                assert.is_true(#v.tags >= 1 and #v.tags <= 3)
                local seen = {}
                for _, t in ipairs(v.tags) do
                    assert.is_nil(seen[t])
                    seen[t] = true
                    local _, points = t:gsub("[^\128-\191]", "")
                    assert.is_true(points >= 1 and points <= 20, t)
                    assert.is_nil(t:find("^%s") or t:find("%s$"))
                end
            end)
        end
    end)

    for _, name in ipairs(NAMES) do
        describe(name .. " over ~300 inputs", function()
            local function run(seed)
                local kinds, answers = {}, {}
                for i, text in ipairs(CORPUS[name]) do
                    local a = ask(name, text, seed)
                    local k = a.fault or "clean"
                    kinds[k] = (kinds[k] or 0) + 1
                    answers[i] = a
                end
                return kinds, answers
            end

            it("gives clean answers that pass the example's real contract (format, schema, rules)", function()
                local _, answers = run(1)
                local clean = 0
                for i, a in ipairs(answers) do
                    if a.kind == "json" then
                        local v, err = EX[name].contract:check(a.text, { adapters = {}, context = CTX[name] })
                        assert.is_table(v, CORPUS[name][i] .. " -> " .. a.text .. ": " .. tostring(err))
                        clean = clean + 1
                    end
                end
                assert.is_true(clean > #answers / 2)
            end)

            it("gives every fault at least once, each failing the gate it should", function()
                local kinds, answers = run(1)
                for _, f in ipairs(model.CONTRACT_FAULTS[name]) do
                    assert.is_true((kinds[f] or 0) >= 1, "fault never seen: " .. f)
                end
                for _, a in ipairs(answers) do
                    if a.kind == "invalid" then
                        local v, err = EX[name].contract:check(a.text, { adapters = {}, context = CTX[name] })
                        assert.is_nil(v, a.text)
                        assert.equal("schema", err.category, a.text)
                    elseif a.kind == "fenced" then
                        assert.is_nil((EX[name].contract:check(a.text, { adapters = {}, context = CTX[name] })))
                        local v = EX[name].contract:check(a.text, { adapters = FENCE, context = CTX[name] })
                        assert.equal(a.text:sub(1, 3) == "```", v ~= nil, a.text)
                    elseif a.kind == "prose" or a.kind == "truncated" then
                        local v, err = EX[name].contract:check(a.text, { adapters = {}, context = CTX[name] })
                        assert.is_nil(v, a.text)
                        assert.equal("format", err.category)
                    elseif a.kind == "refusal" then
                        assert.is_nil(a.text)
                    end
                end
            end)

            it("is deterministic for a seed and differs between seeds", function()
                local _, a = run(1)
                local _, b = run(1)
                local _, c = run(2)
                local differ = 0
                for i = 1, #a do
                    assert.same({ a[i].kind, a[i].fault, a[i].text }, { b[i].kind, b[i].fault, b[i].text })
                    if a[i].text ~= c[i].text then differ = differ + 1 end
                end
                assert.is_true(differ > 0)
            end)

            it("mostly fixes its answer after feedback", function()
                local retried, fixed = 0, 0
                for _, text in ipairs(CORPUS[name]) do
                    local a1 = ask(name, text, 1)
                    if a1.kind == "invalid" or a1.kind == "fenced" or a1.kind == "prose" then
                        retried = retried + 1
                        local a2 = ask(name, text, 1, a1.text)
                        assert.equal(2, a2.attempt)
                        if a2.kind == "json" then fixed = fixed + 1 end
                    end
                end
                assert.is_true(retried > 20, "retried " .. retried)
                assert.is_true(fixed > retried / 2 and fixed < retried, fixed .. "/" .. retried)
            end)
        end)
    end

    it("refuses on [[refuse]] and cuts the object on [[truncate]] for these contracts too", function()
        for _, name in ipairs(NAMES) do
            assert.equal("refusal", ask(name, "[[refuse]] Urlaub am 1. Juni 2027").kind)
            local t = ask(name, "[[truncate]] Urlaub vom 1. bis 3. Juni 2027")
            assert.equal("truncated", t.kind)
            assert.equal("{", t.text:sub(1, 1))
            assert.is_nil((core.decode(t.text)))
        end
    end)

    describe("instance_json() for any other schema", function()
        local cases = {
            { "a date", { type = "string", format = "date" }, '"2027-06-12"' },
            { "four digits", { type = "string", pattern = "^[0-9]{4}$" }, '"0000"' },
            { "4-6 digits", { type = "string", pattern = "^[0-9]{4,6}$" }, '"0000"' },
            { "\\S with a minLength", { type = "string", pattern = "\\S", minLength = 3 }, '"xxx"' },
            { "an email, a uuid, a date-time", { type = "object", required = { "e", "u", "t" }, properties = {
                e = { type = "string", format = "email" }, u = { type = "string", format = "uuid" },
                t = { type = "string", format = "date-time" } } } },
            { "unique strings", { type = "array", minItems = 3, uniqueItems = true, items = { type = "string",
                maxLength = 12, pattern = "^[a-z]+(-[a-z0-9]+)*$" } } },
            { "unique enum items", { type = "array", minItems = 2, maxItems = 2, uniqueItems = true,
                items = { enum = { "x", "y", "z" } } } },
            { "bounded numbers", { type = "object", required = { "i", "n" }, properties = {
                i = { type = "integer", exclusiveMinimum = 5, multipleOf = 3 },
                n = { type = "number", maximum = -2.5 } } }, '{"i":6,"n":-2.5}' },
            { "a $ref and an anyOf of required sets", { ["$defs"] = { code = { type = "string",
                pattern = "^[A-Z]{2}[0-9]{3}$" } }, type = "object", properties = { a = { ["$ref"] = "#/$defs/code" },
                b = { type = "boolean" } }, anyOf = { { required = { "a" } }, { required = { "b" } } } },
                '{"a":"AA000"}' },
            { "const, null and a nullable type", { type = "object", required = { "c", "z", "y" },
                properties = { c = { const = "v1" }, z = { type = "null" }, y = { type = { "null", "integer" } } } },
                '{"c":"v1","z":null,"y":1}' },
            { "a non-BMP character class", { type = "string", pattern = "^[🐲]+$" }, '"🐲"' },
        }
        for _, c in ipairs(cases) do
            it("satisfies " .. c[1], function()
                local text = model.instance_json(c[2])
                if c[3] then assert.equal(c[3], text) end
                local v = core.decode(text)
                local ok, err = core.compile(c[2], { format_assertion = true }):validate(v)
                assert.is_true(ok, text .. ": " .. tostring(err))
            end)
        end

        it("gives exact decimal multiples: 0.3 for minimum 0.3 step 0.1, 1e300 for step 1e-300", function()
            local multiples = {
                { { type = "number", minimum = 0.3, multipleOf = 0.1 }, "0.3" },
                { { type = "number", minimum = 1e300, multipleOf = 1e-300 }, "1e+300" },
                { { type = "number", minimum = -1.25, maximum = 3, multipleOf = 0.25 }, "-1.25" },
                { { type = "number", exclusiveMinimum = 0.7, multipleOf = 0.2 }, "1.8" },
                { { type = "integer", minimum = 1, multipleOf = 0.5 }, "1" },
            }
            for _, c in ipairs(multiples) do
                local text = model.instance_json(c[1])
                assert.equal(c[2], text)
                local ok, err = core.compile(c[1]):validate(core.decode(text))
                assert.is_true(ok, text .. ": " .. tostring(err))
            end
        end)

        it("gives 30 and 64 distinct dates to a uniqueItems array of dates and date-times", function()
            for _, fmt in ipairs({ "date", "date-time" }) do
                for _, n in ipairs({ 30, 64 }) do
                    local schema = { type = "array", minItems = n, uniqueItems = true,
                        items = { type = "string", format = fmt } }
                    local v = core.decode(model.instance_json(schema))
                    assert.equal(n, #v)
                    local ok, err = core.compile(schema, { format_assertion = true }):validate(v)
                    assert.is_true(ok, tostring(err))
                end
            end
            local v = core.decode(model.instance_json({ type = "array", minItems = 30, uniqueItems = true,
                items = { type = "string", format = "date" } }))
            assert.same({ "2027-06-12", "2027-06-30", "2027-07-01", "2027-07-11" }, { v[1], v[19], v[20], v[30] })
        end)

        it("answers schemas too big to satisfy with a small value of their type", function()
            local big = {
                { { type = "string", minLength = 300000000 }, '""' },
                { { type = "string", pattern = "^((((a{256}){256}){256}){10})$" }, '""' },
                { { type = "array", minItems = 64, items = { type = "string", minLength = 1e7 } }, "[]" },
                { { type = "array", minItems = 64, items = { type = "string", minLength = 2000 } }, "[]" },
                { { type = "object", required = { "a" }, properties = { a = { type = "string",
                    pattern = "^((x{100}){100}){10}$" } } }, "{}" },
            }
            for _, c in ipairs(big) do assert.equal(c[2], model.instance_json(c[1])) end
            -- within the budget the same shapes are still satisfied
            local ok = core.compile({ type = "string", pattern = "^(a{100}){100}$" })
                :validate(core.decode(model.instance_json({ type = "string", pattern = "^(a{100}){100}$" })))
            assert.is_true(ok)
            assert.equal(2002, #model.instance_json({ type = "string", minLength = 2000 }))
        end)

        it("ignores keyword values that are not numbers (no string taken as a length)", function()
            assert.equal('"example"', model.instance_json({ type = "string", minLength = "1000000000" }))
            assert.equal("[]", model.instance_json({ type = "array", minItems = "100000", items = {} }))
            assert.equal("1", model.instance_json({ type = "integer", minimum = "1e300" }))
        end)

        it("ends on self-referencing and fanning $ref/allOf schemas", function()
            local loop = { ["$defs"] = { a = { allOf = { { ["$ref"] = "#/$defs/a" }, { ["$ref"] = "#/$defs/a" } } } },
                ["$ref"] = "#/$defs/a" }
            assert.equal("string", type(model.instance_json(loop)))
            local props, req = {}, {}
            for i = 1, 40 do
                props["p" .. i] = { ["$ref"] = "#" }
                req[i] = "p" .. i
            end
            local fan = { type = "object", properties = props, required = req }
            local text = model.instance_json(fan)
            assert.is_true(#text <= 65536 + 64, #text)
            assert.is_not_nil(core.decode(text))
            -- a long pattern it cannot satisfy, read again at every node of a 64 x 64 x 64 array
            local nested = { type = "string", pattern = string.rep("a", 100000) .. "(?=x)" }
            for _ = 1, 3 do nested = { type = "array", minItems = 64, items = nested } end
            assert.equal("[]", model.instance_json(nested))
        end)

        it("gives each jsonschemabench schema a valid instance", function()
            local root = SHARED .. "/corpora/jsonschemabench"
            local p = io.popen("find '" .. root .. "' -name original.json 2>/dev/null | sort")
            local n = 0
            for file in p:lines() do
                local f = assert(io.open(file, "rb"))
                local schema = core.decode(f:read("*a")).schema
                f:close()
                local text = model.instance_json(schema)
                local ok, err = core.compile(schema, { format_assertion = true }):validate(core.decode(text))
                assert.is_true(ok, file .. ": " .. text:sub(1, 200) .. ": " .. tostring(err))
                n = n + 1
            end
            p:close()
            if n == 0 then return pending("jsonschemabench not found at " .. root) end
            assert.equal(119, n)
        end)

        it("answers every JSON-Schema-Test-Suite schema with JSON and never raises", function()
            local root = SHARED .. "/corpora/JSON-Schema-Test-Suite/tests/draft2020-12"
            local p = io.popen("find '" .. root .. "' -name '*.json' 2>/dev/null | sort")
            local n = 0
            for file in p:lines() do
                local f = assert(io.open(file, "rb"))
                for _, group in ipairs(core.decode(f:read("*a"))) do
                    local a = model.answer({ messages = { { role = "user", content = "x" } },
                        schema = type(group.schema) == "table" and group.schema or {} })
                    assert.equal("json", a.kind)
                    assert.is_not_nil(core.decode(a.text), file)
                    n = n + 1
                end
                f:close()
            end
            p:close()
            if n == 0 then return pending("JSON-Schema-Test-Suite not found at " .. root) end
            assert.is_true(n > 400)
        end)
    end)
end)

describe("jsoncontract.standin.server", function()
    local http = require "socket.http"
    local ltn12 = require "ltn12"
    local lua = os.getenv("JC_TEST_LUA") or "lua5.4"
    local proc, base

    local function request(method, path, body, headers)
        local chunks = {}
        headers = headers or {}
        if body then headers["content-length"] = tostring(#body) end
        headers["content-type"] = "application/json"
        local _, code = http.request {
            url = base .. path, method = method, headers = headers,
            source = body and ltn12.source.string(body) or nil, sink = ltn12.sink.table(chunks),
        }
        return code, table.concat(chunks)
    end

    setup(function()
        proc = io.popen(lua .. " bin/jsoncontract-standin --port 0 --seed 1 --max-seconds 60", "r")
        local line = proc:read("*l")
        local port = line and line:match("^listening 127%.0%.0%.1:(%d+)$")
        assert(port, "server did not report its port: " .. tostring(line))
        base = "http://127.0.0.1:" .. port
    end)

    teardown(function()
        if base then pcall(request, "POST", "/shutdown", "") end
        if proc then proc:close() end
    end)

    it("answers JSON mode (response_format json_object, no schema) with an object", function()
        local code, body = request("POST", "/v1/chat/completions", cjson.encode({
            model = "m", max_tokens = 50, response_format = { type = "json_object" },
            messages = { { role = "user", content = "Reply with the JSON object {\"ok\": true}." } },
        }))
        assert.equal(200, code)
        local content = cjson.decode(body).choices[1].message.content
        assert.equal("table", type(cjson.decode(content)), content)
    end)

    it("answers GET /health", function()
        local code, body = request("GET", "/health")
        assert.same({ 200, { ok = true } }, { code, cjson.decode(body) })
    end)

    it("answers Chat Completions with an OpenAI envelope", function()
        local code, body = request("POST", "/v1/chat/completions", cjson.encode({
            model = "gpt-test", max_completion_tokens = 500,
            messages = { { role = "system", content = "Return the ticket as JSON." },
                { role = "user", content = MAIL_1042 } },
            response_format = { type = "json_schema", json_schema = { name = "ticket", strict = true,
                schema = TICKET_SCHEMA } },
        }), { authorization = "Bearer sk-test" })
        assert.equal(200, code)
        local env = cjson.decode(body)
        assert.same({ "chat.completion", "gpt-test", 0, "assistant", "stop", cjson.null },
            { env.object, env.model, env.choices[1].index, env.choices[1].message.role,
                env.choices[1].finish_reason, env.choices[1].message.refusal })
        assert.equal("Lieferung", cjson.decode(env.choices[1].message.content).intent)
        -- the schema sent natively is input too, as a provider bills it
        assert.equal(model.tokens("Return the ticket as JSON. " .. MAIL_1042)
            + model.cutoff_tokens(cjson.encode(TICKET_SCHEMA)), env.usage.prompt_tokens)
        assert.equal(env.usage.prompt_tokens + env.usage.completion_tokens, env.usage.total_tokens)
    end)

    it("answers Messages with an Anthropic envelope, and a refusal", function()
        local code, body = request("POST", "/v1/messages", cjson.encode({
            model = "claude-test", max_tokens = 500, system = "Return the ticket as JSON.",
            messages = { { role = "user", content = MAIL_1187 } },
            output_config = { format = { type = "json_schema", schema = TICKET_SCHEMA } },
        }), { ["x-api-key"] = "test" })
        assert.equal(200, code)
        local env = cjson.decode(body)
        assert.same({ "message", "assistant", "end_turn", cjson.null, "text" },
            { env.type, env.role, env.stop_reason, env.stop_sequence, env.content[1].type })
        assert.equal("1187", cjson.decode(env.content[1].text).order_id)
        assert.equal("number", type(env.usage.input_tokens))

        code, body = request("POST", "/v1/messages", cjson.encode({
            model = "claude-test", max_tokens = 500, messages = { { role = "user", content = "[[refuse]] x" } },
        }))
        assert.equal(200, code)
        assert.is_truthy(body:find('"content":[]', 1, true))
        assert.equal("refusal", cjson.decode(body).stop_reason)
    end)

    it("answers the other example contracts by their schema, over both wire formats", function()
        local leave = dofile("examples/leave_request.lua")
        local blog = dofile("examples/blog_category.lua")
        local code, body = request("POST", "/v1/chat/completions", cjson.encode({
            model = "gpt-test", messages = { { role = "system", content = leave.contract:prompt() },
                { role = "user", content = "Ich möchte vom 12. bis 14. Juni 2027 Urlaub nehmen." } },
            response_format = { type = "json_schema", json_schema = { name = "leave_request", strict = true,
                schema = leave.schema } },
        }))
        assert.equal(200, code)
        local v = leave.contract:check(cjson.decode(body).choices[1].message.content, { adapters = {} })
        assert.same({ "complete", "2027-06-12", "2027-06-14" }, { v.status, v.start_date, v.end_date })
        code, body = request("POST", "/v1/messages", cjson.encode({
            model = "claude-test", max_tokens = 500, system = blog.contract:prompt(),
            messages = { { role = "user", content = "RAG pipelines in practice" } },
            output_config = { format = { type = "json_schema", schema = blog.schema } },
        }))
        assert.equal(200, code)
        v = blog.contract:check(cjson.decode(body).content[1].text, { adapters = {} })
        assert.same({ "ai-apps", { "RAG", "pipelines" } }, { v.category, v.tags })
    end)

    it("reports truncation as finish_reason length", function()
        local _, body = request("POST", "/v1/chat/completions", cjson.encode({
            messages = { { role = "user", content = "[[truncate]] where is order 5555" } },
            response_format = { type = "json_schema", json_schema = { name = "t", schema = TICKET_SCHEMA } },
        }))
        assert.equal("length", cjson.decode(body).choices[1].finish_reason)
    end)

    it("reports a long answer cut by max_tokens as length / max_tokens", function()
        local schema = { type = "string", minLength = 3000 }
        local _, body = request("POST", "/v1/chat/completions", cjson.encode({ max_tokens = 100,
            messages = { { role = "user", content = "x" } },
            response_format = { type = "json_schema", json_schema = { name = "t", schema = schema } } }))
        local env = cjson.decode(body)
        assert.same({ "length", 400 }, { env.choices[1].finish_reason, #env.choices[1].message.content })
        _, body = request("POST", "/v1/messages", cjson.encode({ max_tokens = 100,
            messages = { { role = "user", content = "x" } },
            output_config = { format = { type = "json_schema", schema = schema } } }))
        env = cjson.decode(body)
        assert.same({ "max_tokens", 400 }, { env.stop_reason, #env.content[1].text })
    end)

    it("answers hostile schemas with a small body and stays responsive", function()
        local hostile = {
            { type = "string", minLength = 300000000 },
            { type = "string", minLength = "1000000000" },
            { type = "string", pattern = "^((((a{256}){256}){256}){10})$" },
            { type = "array", minItems = 64, items = { type = "string", minLength = 1e7 } },
        }
        for _, schema in ipairs(hostile) do
            local code, body = request("POST", "/v1/chat/completions", cjson.encode({
                messages = { { role = "user", content = "x" } },
                response_format = { type = "json_schema", json_schema = { name = "h", schema = schema } } }))
            assert.equal(200, code)
            assert.is_true(#body < 2048, #body)
            assert.equal(200, (request("GET", "/health")))
        end
    end)

    it("returns 404 for a wrong path and 400 for a bad JSON body", function()
        local code, body = request("POST", "/v1/nothing", "{}")
        assert.equal(404, code)
        assert.equal("string", type(cjson.decode(body).error.message))
        code, body = request("POST", "/v1/chat/completions", "{not json")
        assert.same({ 400, "invalid_request_error" }, { code, cjson.decode(body).error.type })
        code, body = request("POST", "/v1/messages", "[1,")
        assert.same({ 400, "error", "invalid_request_error" },
            { code, cjson.decode(body).type, cjson.decode(body).error.type })
    end)

    it("serves other clients while one request is half sent, and survives its disconnect", function()
        local socket = require "socket"
        local port = tonumber(base:match(":(%d+)$"))
        local slow = assert(socket.connect("127.0.0.1", port))
        finally(function() slow:close() end)
        assert(slow:send("POST /v1/messages HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"mess"))
        local code, body = request("GET", "/health")
        assert.same({ 200, '{"ok":true}' }, { code, body })
        slow:close()
        assert.equal(200, (request("GET", "/health")))
    end)

    it("answers 431 to headers over 64 KB", function()
        local code = request("GET", "/health", nil, { ["x-big"] = string.rep("a", 70000) })
        assert.equal(431, code)
    end)

    it("rejects a chunked body with 411", function()
        local code = request("POST", "/v1/messages", nil, { ["transfer-encoding"] = "chunked" })
        assert.equal(411, code)
        assert.equal(200, (request("GET", "/health")))
    end)
end)

describe("bin/jsoncontract-standin's options", function()
    local util = require "support.util"
    local lua = os.getenv("JC_TEST_LUA") or "lua5.4"
    it("answers after its --delay-ms on every Lua (the wait yields outside the handler's pcall)", function()
        local proc = io.popen("env -u LD_PRELOAD " .. lua
            .. " bin/jsoncontract-standin --port 0 --max-seconds 60 --delay-ms 50", "r")
        local port = (proc:read("*l") or ""):match("^listening 127%.0%.0%.1:(%d+)$")
        assert(port, "the stand-in did not report its port")
        local base = "http://127.0.0.1:" .. port
        local res = require("jsoncontract.transport.curl").request { url = base .. "/v1/chat/completions",
            method = "POST", headers = { ["content-type"] = "application/json" }, timeout_ms = 10000,
            body = cjson.encode({ model = "m", messages = { { role = "user", content = "Where is order 1042?" } } }) }
        require("jsoncontract.transport.curl").request { url = base .. "/shutdown", method = "POST", body = "" }
        proc:close()
        assert.equal(200, res and res.status, res and res.body)
        assert.equal("string", type(cjson.decode(res.body).choices[1].message.content))
    end)

    it("refuses a port outside 0..65535 (it wrapped around) and an --examples folder that is not there", function()
        for _, args in ipairs { "--port 99999", "--port 1.5", "--port=abc", "--examples /nonexistent/x" } do
            local out, code = util.sh("env -u LD_PRELOAD " .. lua .. " bin/jsoncontract-standin --max-seconds 1 " .. args)
            assert.equal(2, code, args .. ": " .. out)
            assert.falsy(out:find("listening", 1, true), out)
            assert.truthy(out:find("jsoncontract-standin: --", 1, true), out)
        end
    end)
end)
