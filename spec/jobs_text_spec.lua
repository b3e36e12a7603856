-- The job store keeps each attempt's model text and the input by default (it is local): the
-- desk pre-fills from it and `replay DIR` re-checks a job from it; the exported evidence.jsonl
-- stays text-free unless the job records text (`--record-text`).
local util = require "support.util"
local jobs = require "support.jobs"
local store = require "jsoncontract.jobs.store"

local LUA = util.LUA
local q = jobs.q

local function jc(args)
    return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract %s"):format(LUA, args)
end

-- Evidence records of a file that carry a model text.
local function with_text(path)
    local n = 0
    for _, r in ipairs(jobs.jsonl(path)) do
        if r.text ~= nil or r.input ~= nil then n = n + 1 end
    end
    return n
end

describe("the model's text in a job", function()
    local tmp

    lazy_setup(function()
        tmp = os.tmpname()
        os.remove(tmp)
        os.execute("mkdir -p " .. q(tmp))
    end)
    lazy_teardown(function() os.execute("rm -rf " .. q(tmp)) end)

    it("is kept in the store, left out of evidence.jsonl, and replayed from the store", function()
        local dir = tmp .. "/plain"
        local o, code = util.sh(jc(("triage --input examples/mailbox.jsonl --limit 6 --out %s --delay-ms 0")
            :format(q(dir))))
        assert.equal(0, code, o)
        local exported = jobs.jsonl(dir .. "/evidence.jsonl")
        assert.truthy(#exported > 0)
        assert.equal(0, with_text(dir .. "/evidence.jsonl"))

        -- the store has every attempt's text: the desk's item page reads it for the pre-fill
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        finally(function() st:close() end)
        local job = st:latest_job()
        local review = require "jsoncontract.review.queries"
        local queue = assert(review.queue(st, job.id))
        assert.truthy(#queue > 0)
        local item = assert(review.item(st, job.id, queue[1].item_id))
        local texts = 0
        for _, rec in ipairs(item.evidence) do
            if type(rec.text) == "string" then texts = texts + 1 end
        end
        assert.truthy(texts > 0, "no attempt of " .. queue[1].item_id .. " kept its text")

        -- replay DIR: from the store, every exported record with a contract gate is re-checked
        o, code = util.sh(jc("replay " .. q(dir)))
        assert.equal(0, code, o)
        local n = tonumber(o:match("(%d+) replayed: "))
        assert.truthy(n and n > 0, o)
        assert.truthy(o:find(n .. " replayed: " .. n .. " same, 0 differ", 1, true), o)

        -- the exported log has no text: a replay of it replays nothing, and says so (exit 1)
        o, code = util.sh(jc("replay " .. q(dir .. "/evidence.jsonl")))
        assert.equal(1, code, o)
        assert.truthy(o:find("0 replayed", 1, true), o)
        assert.truthy(o:find("nothing was replayed", 1, true), o)
        assert.truthy(o:find("replay DIR", 1, true), o)

        -- an export again (as `export` writes it) stays text-free
        o, code = util.sh(jc(("export %s --out %s"):format(q(dir), q(tmp .. "/again"))))
        assert.equal(0, code, o)
        assert.equal(#exported, #jobs.jsonl(tmp .. "/again/evidence.jsonl"))
        assert.equal(0, with_text(tmp .. "/again/evidence.jsonl"))
    end)

    it("reaches evidence.jsonl with --record-text", function()
        local dir = tmp .. "/text"
        local o, code = util.sh(jc(("triage --input examples/mailbox.jsonl --limit 3 --out %s --delay-ms 0 "
            .. "--record-text"):format(q(dir))))
        assert.equal(0, code, o)
        assert.truthy(with_text(dir .. "/evidence.jsonl") > 0)
        o, code = util.sh(jc("replay " .. q(dir .. "/evidence.jsonl")))
        assert.equal(0, code, o)
    end)

    it("replay names what is missing: a folder with no job store is a usage error (exit 2)", function()
        local o, code = util.sh(jc("replay " .. q(tmp)))
        assert.equal(2, code, o)
        assert.truthy(o:find("no job store in " .. tmp, 1, true), o)
    end)
end)
