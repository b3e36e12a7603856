-- `replay` of a job that ran its own job module (outside examples/): it checks with the module
-- the run recorded, from the job folder or from an exported evidence log with --record-text.
local util = require "support.util"
local jobs = require "support.jobs"

local q = jobs.q

local function jc(args)
    return ("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY %s bin/jsoncontract %s"):format(util.LUA, args)
end

local MODULE = [[
local jc = require "jsoncontract"
return {
    contract = jc.contract {
        name = "own_mood", version = "1.0.0",
        instructions = "Say the mood of the note.",
        schema = { type = "object", additionalProperties = false, required = { "mood" },
            properties = { mood = { type = "string", enum = { "glad", "sad", "calm" } } } },
        rules = { { name = "not_sad", check = function(v) return v.mood ~= "sad" or "sad" end } },
    },
    item = function(record) return { id = record.key, text = record.note } end,
    context = false,
}
]]

-- A fresh temporary folder (the caller removes it).
local function new_folder()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. q(dir))
    return dir
end

-- Write `text` to `dir/name`; returns the path.
local function write(dir, name, text)
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
    return dir .. "/" .. name
end

describe("replay of a job run with its own job module", function()
    local tmp

    lazy_setup(function()
        tmp = new_folder()
        write(tmp, "own_job.lua", MODULE)
        local lines = {}
        for i = 1, 4 do lines[i] = ('{"key":"n%d","note":"note number %d"}\n'):format(i, i) end
        write(tmp, "notes.jsonl", table.concat(lines))
    end)
    lazy_teardown(function() os.execute("rm -rf " .. q(tmp)) end)

    it("uses the recorded module from the job folder and from an exported log", function()
        local dir = tmp .. "/run"
        local o, code = util.sh(jc(("run --job %s --input %s --out %s --delay-ms 0 --record-text 2>&1")
            :format(q(tmp .. "/own_job.lua"), q(tmp .. "/notes.jsonl"), q(dir))))
        assert.equal(0, code, o)
        o, code = util.sh(jc("replay " .. q(dir) .. " 2>&1"))
        assert.equal(0, code, o)
        assert.truthy(o:find("with the job module the run recorded: " .. tmp .. "/own_job.lua", 1, true), o)
        assert.truthy(o:find("4 replayed", 1, true), o)
        o, code = util.sh(jc("replay " .. q(dir .. "/evidence.jsonl") .. " 2>&1"))
        assert.equal(0, code, o)
        assert.truthy(o:find("4 replayed", 1, true), o)
    end)

    it("says what --job means in replay when given a module path", function()
        local o, code = util.sh(jc(("replay %s --job %s 2>&1"):format(q(tmp .. "/run"), q(tmp .. "/own_job.lua"))))
        assert.equal(2, code, o)
        assert.truthy(o:find("--job names a job id", 1, true), o)
    end)

    it("check --context on a module that opens its own context says to leave --context out", function()
        local module = write(tmp, "ctx_job.lua",
            (MODULE:gsub("context = false", "context = function() return { ledger = {} } end")))
        local o, code = util.sh(jc(("check --job %s --context %s %s 2>&1"):format(q(module), q(tmp),
            q(tmp .. "/notes.jsonl"))))
        assert.equal(2, code, o)
        assert.truthy(o:find("opens its context itself (its `context`), and has no replay_context", 1, true), o)
    end)
end)

describe("inputs a job cannot take", function()
    local tmp

    lazy_setup(function() tmp = new_folder() end)
    lazy_teardown(function() os.execute("rm -rf " .. q(tmp)) end)

    it("an empty input (or blank lines only) is refused, and nothing is created", function()
        for _, text in ipairs { "", "\n  \n\n" } do
            local input = write(tmp, "empty.jsonl", text)
            local o, code = util.sh(jc(("run --job examples/blog_category.lua --input %s --out %s 2>&1")
                :format(q(input), q(tmp .. "/out-empty"))))
            assert.equal(2, code, o)
            assert.truthy(o:find("holds no records (nothing but blank lines): there is nothing to run", 1, true), o)
            assert.is_nil(io.open(tmp .. "/out-empty/job.sqlite", "rb"))
        end
    end)

    it("an id that is not a string is refused naming its line, never replaced by a line number", function()
        local input = write(tmp, "numeric.jsonl", '{"id":"a","text":"one"}\n{"id":5,"text":"two"}\n{"id":null,"text":"x"}\n')
        -- a module without item(record): the records are the items
        local module = write(tmp, "plain_job.lua", (MODULE:gsub("    item = function%(record%).-\n", "")))
        assert.is_nil(util.read(module):find("item =", 1, true))
        local o, code = util.sh(jc(("run --job %s --input %s --out %s 2>&1")
            :format(q(module), q(input), q(tmp .. "/out-num"))))
        assert.equal(2, code, o)
        assert.truthy(o:find("line 2: id 5 is a number; an id is a string", 1, true), o)
        assert.truthy(o:find("line 3: id null is a null", 1, true), o)
    end)

    it("export to a folder it cannot create says so once, without the shell's words", function()
        local o, code = util.sh(jc(("run --job examples/blog_category.lua --input examples/blog_category.jsonl "
            .. "--out %s --delay-ms 0 2>&1"):format(q(tmp .. "/out-ok"))))
        assert.equal(0, code, o)
        o, code = util.sh(jc(("export %s --out /proc/no-such-folder 2>&1"):format(q(tmp .. "/out-ok"))))
        assert.equal(1, code, o)
        assert.truthy(o:find("cannot write /proc/no-such-folder/", 1, true), o)
        assert.is_nil(o:find("mkdir:", 1, true), o)
    end)
end)

describe("--retry-review with a fixed job module of the same contract", function()
    it("records the module the new pass ran, and says so in the pass", function()
        local tmp = new_folder()
        finally(function() os.execute("rm -rf " .. q(tmp)) end)
        local sad = write(tmp, "sad.lua", MODULE)
        local fixed = write(tmp, "fixed.lua", (MODULE:gsub('return v.mood ~= "sad" or "sad"', 'return true')))
        local input = write(tmp, "notes.jsonl", '{"key":"n1","note":"one"}\n{"key":"n2","note":"two"}\n')
        local dir = tmp .. "/run"
        local o, code = util.sh(jc(("run --job %s --input %s --out %s --delay-ms 0 2>&1"):format(q(sad), q(input),
            q(dir))))
        assert.equal(0, code, o)
        o, code = util.sh(jc(("run --resume %s --retry-review --job %s --delay-ms 0 2>&1"):format(q(dir), q(fixed))))
        assert.equal(0, code, o)
        local summary = require("jsoncontract.core").decode(util.read(dir .. "/summary.json"))
        assert.equal(fixed, summary.job)
        local st = assert(require("jsoncontract.jobs.store").open(dir .. "/job.sqlite", { create = false }))
        finally(function() st:close() end)
        local job = assert(st:latest_job())
        local passes = assert(st:query("SELECT reason FROM passes WHERE job_id = ? ORDER BY pass", { job.id }))
        assert.truthy(passes[#passes].reason:find("with job module " .. fixed, 1, true), passes[#passes].reason)
    end)
end)
