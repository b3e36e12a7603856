-- The main job end to end: bin/jsoncontract triage over the example mailbox, through a
-- real HTTP round trip to the stand-in model, into tickets, review queue and evidence.
local core = require "jsoncontract.core"
local util = require "support.util"

local LUA = util.LUA

local function read_lines(path)
    local out = {}
    local f = assert(io.open(path, "rb"))
    for line in f:lines() do out[#out + 1] = assert(core.decode(line)) end
    f:close()
    return out
end

-- Run a command; return its output and exit status.
local sh = util.sh

describe("bin/jsoncontract triage", function()
    local dir, out, code

    setup(function()
        dir = os.tmpname()
        os.remove(dir)
        -- no key in the environment: the stand-in model answers
        out, code = sh(("env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract triage " ..
            "--input examples/mailbox.jsonl --out %s --seed 1 --delay-ms 0"):format(LUA, dir))
    end)

    teardown(function()
        if dir then os.execute("rm -rf '" .. dir .. "'") end
    end)

    it("runs to the end and every message ends in exactly one of accepted or review", function()
        assert.equal(0, code, out)
        local tickets = read_lines(dir .. "/accepted.jsonl")
        local review = read_lines(dir .. "/review.jsonl")
        local mailbox = read_lines("examples/mailbox.jsonl")
        assert.equal(#mailbox, #tickets + #review)
        local seen = {}
        for _, t in ipairs(tickets) do seen[t.id] = (seen[t.id] or 0) + 1 end
        for _, r in ipairs(review) do seen[r.id] = (seen[r.id] or 0) + 1 end
        for _, m in ipairs(mailbox) do assert.equal(1, seen[m.id], m.id) end
        local summary = core.decode(assert(io.open(dir .. "/summary.json")):read("*a"))
        assert.equal(#mailbox, summary.metrics.items)
        assert.equal(#tickets, summary.metrics.accepted)
        assert.equal(#review, summary.metrics.human_review)
    end)

    it("accepts order 1042 at attempt 2 after the seed mistakes, and 1187 at attempt 1", function()
        local by = {}
        for _, t in ipairs(read_lines(dir .. "/accepted.jsonl")) do by[t.id] = t end
        local t1042 = assert(by["m-1042"], "m-1042 accepted")
        assert.equal(2, #t1042.attempts)
        assert.equal("schema", t1042.attempts[1].gate)
        assert.same({ intent = "delivery", order_id = "1042", urgent = true },
            { intent = t1042.value.intent, order_id = t1042.value.order_id, urgent = t1042.value.urgent })
        local t1187 = assert(by["m-1187"], "m-1187 accepted")
        assert.equal(1, #t1187.attempts)
        assert.equal("return", t1187.value.intent)
    end)

    it("sends the vague mails to a person after three attempts, and an unknown order by the rule", function()
        local by = {}
        for _, r in ipairs(read_lines(dir .. "/review.jsonl")) do by[r.id] = r end
        for _, id in ipairs { "m-hallo", "m-hello" } do
            assert.is_table(by[id], id)
            assert.equal(3, #by[id].attempts)
            assert.equal("format", by[id].reason.category)
        end
        assert.is_table(by["m-9999"])
        assert.equal("rules", by["m-9999"].reason.category)
        assert.equal("/order_id", by["m-9999"].reason.errors[1].pointer)
    end)

    it("writes evidence for every exchange, without text by default", function()
        local ev = read_lines(dir .. "/evidence.jsonl")
        assert.is_true(#ev >= 12)
        for _, r in ipairs(ev) do
            assert.equal("support_ticket", r.contract.name)
            assert.is_number(r.attempt)
            assert.is_nil(r.text)
            assert.is_nil(r.input)
        end
    end)

    it("refuses to write into a folder that is not empty", function()
        local o, c = sh(("%s bin/jsoncontract triage --input examples/mailbox.jsonl --out %s"):format(LUA, dir))
        assert.equal(2, c)
        assert.truthy(o:find("is not empty", 1, true))
    end)

    it("with an API key calls that provider, and the key reaches no output", function()
        local KEY = "sk-SENTINEL-triage-key-0123456789abcdef"
        local server, port = util.start_standin()
        assert.truthy(port)
        local keydir = os.tmpname()
        os.remove(keydir)
        finally(function()
            util.stop_standin(server)
            os.execute("rm -rf '" .. keydir .. "'")
        end)
        local o, c = sh(("env -u ANTHROPIC_API_KEY OPENAI_API_KEY=%s OPENAI_BASE_URL=http://127.0.0.1:%s " ..
            "OPENAI_MODEL=gpt-test %s bin/jsoncontract triage --input examples/mailbox.jsonl --out %s")
            :format(KEY, port, LUA, keydir))
        assert.equal(0, c, o)
        assert.truthy(o:find("provider openai (live), model gpt-test", 1, true))
        assert.falsy(o:find(KEY, 1, true))
        local grep = sh("grep -rl -a -F '" .. KEY .. "' " .. keydir .. " ; true")
        assert.equal("", grep)
        local ev = read_lines(keydir .. "/evidence.jsonl")
        assert.equal("gpt-test", ev[1].model)
    end)
end)
