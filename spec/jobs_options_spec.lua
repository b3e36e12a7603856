-- What a job keeps and how its options are checked: a bad --latency refused before anything is
-- created (and a job that holds one recovered), no credential of --base-url in the store,
-- `exchanges` that agree with the evidence after a resume, a negative number in either spelling,
-- and duplicate-id messages that are true of ids we gave.
local cli = require "jsoncontract.cli"
local commands = require "jsoncontract.cli.job_commands"
local export = require "jsoncontract.jobs.export"
local store = require "jsoncontract.jobs.store"
local core = require "jsoncontract.core"
local util = require "support.util"
local jobs = require "support.jobs"

local q = jobs.q

local tmpdir = util.fresh_path

local function exists(path) return os.rename(path, path) ~= nil end

-- bin/jsoncontract triage as a subprocess, without keys unless `env` sets one (and without a
-- sanitizer preload: the subprocess is not what an ASan run checks).
local function triage(args, env)
    return util.sh(("env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u GEMINI_API_KEY %s %s "
        .. "bin/jsoncontract triage %s"):format(env or "", util.LUA, args))
end

-- The options a folder's job keeps, decoded.
local function stored_options(dir)
    local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
    local job = assert(st:latest_job())
    st:close()
    return core.decode(job.options_json), job.options_json
end

-- cli.main in-process: exit status and what it wrote to stderr.
local function main(argv)
    local err = {}
    local sink = { write = function(self, ...) for _, s in ipairs({ ... }) do err[#err + 1] = s end return self end }
    local code = cli.main(argv, { root = ".", stdout = sink, stderr = sink })
    return code, table.concat(err)
end

describe("triage --latency", function()
    it("refuses a value the stand-in does not take before anything is created, naming the values", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local out, code = triage("--limit 3 --out " .. q(dir) .. " --latency bogus")
        assert.equal(2, code, out)
        assert.matches("option --latency takes heavy, or lognormal:", out, 1, true)
        assert.matches('"bogus"', out, 1, true)
        assert.is_false(exists(dir))
    end)

    it("continues a job stored with a bad value once --latency replaces it, and says how otherwise", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local out, code = triage("--limit 2 --delay-ms 0 --out " .. q(dir))
        assert.equal(0, code, out)
        -- what a job made before the check holds
        local st = assert(store.open(dir .. "/job.sqlite", { create = false }))
        local jo, text = stored_options(dir)
        jo.latency = "bogus"
        assert(st:exec("UPDATE jobs SET options_json = ? WHERE options_json = ?", { core.encode(jo), text }))
        st:close()
        out, code = triage("--resume " .. q(dir))
        assert.equal(2, code, out)
        assert.matches('stored with --latency "bogus"', out, 1, true)
        assert.matches("--resume DIR --latency VALUE", out, 1, true)
        out, code = triage("--resume " .. q(dir) .. " --latency lognormal:1:0.1:0:1:1")
        assert.equal(0, code, out)
        assert.equal("lognormal:1:0.1:0:1:1", stored_options(dir).latency)
        out, code = triage("--resume " .. q(dir)) -- the replaced value is kept
        assert.equal(0, code, out)
    end)
end)

describe("triage --base-url", function()
    local KEY = "sk-spec-0123456789abcdefghij"

    it("refuses a user and password in the URL before anything is created", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local out, code = triage("--limit 1 --out " .. q(dir) .. " --base-url "
            .. q("http://u:pw@127.0.0.1:1/v1?key=" .. KEY), "OPENAI_API_KEY=" .. KEY)
        assert.equal(2, code, out)
        assert.matches("must not hold a user or password", out, 1, true)
        assert.matches("OPENAI_API_KEY", out, 1, true)
        assert.is_nil(out:find(KEY, 1, true))
        assert.is_false(exists(dir))
    end)

    it("refuses a credential in the query that is not a key variable's value", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local out, code = triage("--limit 1 --model m --out " .. q(dir) .. " --base-url "
            .. q("http://127.0.0.1:1/v1?api-version=1&token=abcdef123"))
        assert.equal(2, code, out)
        assert.matches("holds a credential (token)", out, 1, true)
        assert.is_false(exists(dir))
    end)

    it("stores the key's variable name, never its value, and resume fills it from the environment", function()
        local dir = tmpdir()
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        local url = "http://127.0.0.1:1/v1?key=" .. KEY
        local out, code = triage("--limit 1 --max-attempts 1 --out " .. q(dir) .. " --base-url " .. q(url),
            "OPENAI_API_KEY=" .. KEY)
        -- nobody listens there: the job stops (exit 1) with its item waiting, the URL shown without the key
        assert.equal(1, code, out)
        assert.matches("the model at http://127.0.0.1:1/v1?key=[redacted] did not accept the connection", out, 1, true)
        assert.equal("http://127.0.0.1:1/v1?key=${OPENAI_API_KEY}", stored_options(dir)["base-url"])
        local p = io.popen("ls " .. q(dir))
        for name in p:lines() do
            assert.is_nil(util.slurp(dir .. "/" .. name):find(KEY, 1, true), name .. " holds the key")
        end
        p:close()
        out, code = triage("--resume " .. q(dir), "OPENAI_API_KEY=" .. KEY)
        assert.equal(1, code, out)
        assert.matches("http://127.0.0.1:1/v1?key=[redacted]", out, 1, true)
        assert.is_nil(out:find(KEY, 1, true))
        out, code = triage("--resume " .. q(dir))
        assert.equal(2, code, out)
        assert.matches("takes a key from OPENAI_API_KEY, which is not set here", out, 1, true)
    end)
end)

describe("summary exchanges", function()
    it("counts the evidence of committed outcomes, also when a run was killed before it recorded itself",
        function()
            local dir = tmpdir()
            os.execute("mkdir -p " .. q(dir))
            finally(function() os.execute("rm -rf " .. q(dir)) end)
            local st = assert(store.open(dir .. "/job.sqlite"))
            local job = assert(st:create_job { contract_name = "c", contract_version = "1", schema_hash = "h",
                provider = "openai", model = "m", options_json = "{}", input_digest = "x" })
            local items = {}
            for i = 1, 3 do
                items[i] = { item_id = "m" .. i, seq = i, input_json = "{}", input_digest = "d" .. i }
            end
            assert(st:add_items(job, items))
            assert(st:lease(job, "killed", 3, 30))
            -- the first run commits two items (three exchanges) and dies by kill -9: no run row
            for i, n in ipairs({ 2, 1 }) do
                local ev = {}
                for a = 1, n do ev[a] = core.encode({ attempt = a }) end
                assert(st:record_outcome(job, "m" .. i, { pass = 1, status = "accepted", record_json = '{"id":"m'
                    .. i .. '"}', decided_by = "model", worker = "killed", evidence = ev }))
            end
            -- the resume asks the last item once and records its run
            assert(st:release(job, nil))
            assert(st:lease(job, "resumed", 3, 30))
            assert(st:record_outcome(job, "m3", { pass = 1, status = "accepted", record_json = '{"id":"m3"}',
                decided_by = "model", worker = "resumed", evidence = { core.encode({ attempt = 1 }) } }))
            assert(st:record_run(job, { worker = "resumed", started_at = 0, exchanges = 1, stop_reason = "done" }))
            local summary = assert(export.write(st, job, dir))
            st:close()
            assert.equal(4, #jobs.jsonl(dir .. "/evidence.jsonl"))
            assert.equal(4, summary.exchanges)
            assert.equal(4, core.decode(util.slurp(dir .. "/summary.json")).exchanges)
        end)
end)

describe("a negative number", function()
    it("gets the option's own message in both spellings", function()
        local a_code, a = main({ "triage", "--limit=-1", "--out", "/nonexistent/never" })
        local b_code, b = main({ "triage", "--limit", "-1", "--out", "/nonexistent/never" })
        assert.equal(2, a_code)
        assert.equal(2, b_code)
        assert.matches("option --limit needs a whole number", b, 1, true)
        assert.equal(a:match("jsoncontract: [^\n]*"), b:match("jsoncontract: [^\n]*"))
    end)
end)

describe("duplicate ids in a mailbox", function()
    local function mailbox(text)
        local path = os.tmpname()
        local f = assert(io.open(path, "wb"))
        f:write(text)
        f:close()
        return path
    end

    it("say when the id is the one a line without an id was given", function()
        local path = mailbox('not json\n{"id":"line-1","text":"hi"}\n{"id":"line-4","text":"a"}\n{"text":5}\n')
        finally(function() os.remove(path) end)
        local items, err = commands.read_mailbox(path)
        assert.is_nil(items)
        assert.matches('line 2: id "line-1" is already used on line 1 (given to it because it has no id of its own)',
            err, 1, true)
        assert.matches('line 4: id "line-4" (given to it because it has no id of its own) is already used on line 3\n',
            err .. "\n", 1, true)
    end)

    it("keep the plain message between two ids of the mailbox's own", function()
        local path = mailbox('{"id":"m-1","text":"a"}\n{"id":"m-1","text":"b"}\n')
        finally(function() os.remove(path) end)
        local _, err = commands.read_mailbox(path)
        assert.matches('line 2: id "m-1" is already used on line 1\n', err .. "\n", 1, true)
    end)

    it("are refused by the commands' own reader (cli.util.read_mailbox) as by the jobs'", function()
        local cli_util = require "jsoncontract.cli.util"
        local path = mailbox('not json\n{"id":"line-1","text":"hi"}\n{"id":"m-1","text":"a"}\n{"id":"m-1","text":"b"}\n')
        finally(function() os.remove(path) end)
        local items, err = cli_util.read_mailbox(path)
        local _, jobs_err = commands.read_mailbox(path)
        assert.is_nil(items)
        assert.equal(jobs_err, err)
        assert.matches('line 2: id "line-1" is already used on line 1 (given to it because it has no id of its own)',
            err, 1, true)
        assert.matches('line 4: id "m-1" is already used on line 3', err, 1, true)
    end)

    it("get the same ids and inputs from both readers (each line as the runner reads it)",
        function()
            local cli_util = require "jsoncontract.cli.util"
            local path = mailbox('not json\r\n{"id":"a","text":"hi"}\r\n\n{"id":"b","text":5}\n{"text":"x"}\n')
            finally(function() os.remove(path) end)
            local items = assert(cli_util.read_mailbox(path))
            local lines = assert(commands.read_mailbox(path))
            assert.equal(#lines, #items)
            for i, line in ipairs(lines) do assert.equal(line.item_id, items[i].id) end
            assert.same({ "line-1", "a", "b", "line-5" }, { items[1].id, items[2].id, items[3].id, items[4].id })
            assert.equal("line 1 is not JSON", items[1].input_error:match("^line 1 is not JSON"))
            assert.equal("hi", items[2].text)
            assert.equal("line 4 has no string field 'text'", items[3].input_error)
            assert.equal(2, #assert(cli_util.read_mailbox(path, 2)))
        end)
end)

describe("enqueue without --job or --input", function()
    it("is refused with what to give, and creates nothing: the batch layer has no default job", function()
        local dir = tmpdir()
        assert(os.execute("mkdir -p " .. q(dir)))
        finally(function() os.execute("rm -rf " .. q(dir)) end)
        for _, c in ipairs {
            { "--input examples/mailbox.jsonl", "say which job: --job MODULE" },
            { "--job examples/support_ticket.lua", "say which input: --input FILE.jsonl" },
        } do
            local out, code = util.sh(("env -u LD_PRELOAD %s bin/jsoncontract enqueue --store %s %s 2>&1")
                :format(util.LUA, q(dir .. "/job.sqlite"), c[1]))
            assert.equal(2, code, out)
            assert.truthy(out:find(c[2], 1, true), out)
            assert.is_nil(io.open(dir .. "/job.sqlite", "rb"))
        end
    end)
end)
