-- bin/jsoncontract: check with every example, diff, replay (evidence log and saved response),
-- selftest, probe, examples, lint dispatch, and the live run's empty-output-directory rule.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local fake = require "support.fake_model"
local util = require "support.util"

local LUA = util.LUA
local NOKEY = "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY "

-- Run a command; return its output and exit status.
local sh = util.sh

local function jcli(args) return sh(NOKEY .. LUA .. " bin/jsoncontract " .. args) end

-- The JSON verdict of `check` in jcli's output (stderr joined): without the note on stderr
-- that the rules ran without their context.
local function verdict_of(out)
    return core.decode((out:gsub("jsoncontract: note: [^\n]*\n?", "")))
end

local function tmpfile(content)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(content)
    f:close()
    return path
end

local slurp = util.slurp

local FENCED = '\n\n```json\n{"category":"ai-apps","tags":["LLM應用","API集成","多輪對話"]}\n```'

describe("bin/jsoncontract", function()
    local tmp = {}
    local function temp(content)
        local p = tmpfile(content)
        tmp[#tmp + 1] = p
        return p
    end
    teardown(function()
        for _, p in ipairs(tmp) do os.remove(p) end
    end)

    describe("check", function()
        local cases = {
            { "support_ticket", '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x."}',
              '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"x."}', "schema_mismatch" },
            { "ticket_priority", '{"teema":"Arve","prioriteet":"kõrge","kokkuvõte":"Vajab kontrolli"}',
              '{"teema":"Arve","prioriteet":"kohe"}', "schema_mismatch" },
            { "leave_request",
              '{"status":"complete","start_date":"2027-06-12","end_date":"2027-06-14","clarification_question":null}',
              '{"status":"complete","start_date":"2027-06-14","end_date":"2027-06-12","clarification_question":null}',
              "rule_failed" },
            { "blog_category", '{"category":"llm","tags":["LLM"]}', '{"category":"llm","tags":[12]}', "schema_mismatch" },
        }
        for _, c in ipairs(cases) do
            it("works with examples/" .. c[1] .. ".lua: accepted exits 0, rejected exits 1 with the errors", function()
                local out, code = jcli("check --job examples/" .. c[1] .. ".lua " .. temp(c[2]))
                assert.equal(0, code, out)
                assert.equal("accepted", verdict_of(out).verdict)
                out, code = jcli("check --job examples/" .. c[1] .. ".lua " .. temp(c[3]))
                assert.equal(1, code, out)
                local v = verdict_of(out)
                assert.equal("rejected", v.verdict)
                assert.equal(c[4], v.kind)
                assert.is_string(v.errors[1].pointer)
            end)
        end
        it("reads the reply from stdin and takes --adapter", function()
            local path = temp(FENCED)
            local out, code = jcli("check --job examples/blog_category.lua < " .. path)
            assert.equal(1, code)
            assert.equal("unexpected_character", core.decode(out).kind)
            out, code = jcli("check --job examples/blog_category.lua --adapter unwrap-one-json-fence < " .. path)
            assert.equal(0, code, out)
            assert.same({ "unwrap-one-json-fence" }, core.decode(out).adapters)
        end)
        it("gives the rules the job module's context, or the run's with --context DIR", function()
            -- 9999 is no order of the shop: the order_exists rule catches it, given the orders table
            local reply = temp('{"intent":"delivery","order_id":"9999","urgent":true,"summary":"x"}')
            local dir = os.tmpname()
            os.remove(dir)
            finally(function() os.execute("rm -rf '" .. dir .. "'") end)
            os.execute("mkdir '" .. dir .. "'")
            assert(dofile("examples/orders.lua").open_shipped(dir .. "/orders.sqlite", "examples/orders.csv")):close()
            -- without --context: the module's own context (the shipped orders table), never none
            local out, code = jcli("check --job examples/support_ticket.lua " .. reply)
            assert.equal(1, code, out)
            local v = core.decode(out)
            assert.equal("rejected", v.verdict)
            assert.equal("order_exists", v.errors[1].rule)
            assert.equal("given", v.rules_context)

            out, code = jcli("check --job examples/support_ticket.lua --context " .. dir .. " " .. reply)
            assert.equal(1, code, out)
            v = core.decode(out)
            assert.equal("rejected", v.verdict)
            assert.equal("rule_failed", v.kind)
            assert.equal("order_exists", v.errors[1].rule)
            assert.equal("given", v.rules_context)
            out, code = jcli("check --context=" .. dir .. " " .. temp('{"intent":"delivery","order_id":"1042",'
                .. '"urgent":true,"summary":"x"}'))
            assert.equal(0, code, out)
            assert.equal("given", core.decode(out).rules_context)   -- no note: the rules had their data

            -- a context asked for and not had is a usage error, never skipped
            out, code = jcli("check --context /tmp " .. reply)
            assert.equal(2, code, out)
            assert.truthy(out:find("found no context in /tmp", 1, true), out)
            out, code = jcli("check --job examples/blog_category.lua --context " .. dir .. " " .. reply)
            assert.equal(2, code, out)
            assert.truthy(out:find("takes no context (its module has no replay_context)", 1, true), out)
            out, code = jcli("check --context " .. reply .. " " .. reply)
            assert.equal(2, code, out)
            assert.truthy(out:find("option --context needs a folder", 1, true), out)
            -- a contract without rules: nothing to say of them
            out, code = jcli("check --job examples/blog_category.lua " .. temp('{"category":"llm","tags":["LLM"]}'))
            assert.equal(0, code, out)
            assert.is_nil(core.decode(out).rules_context)
        end)
    end)

    describe("diff", function()
        local t = dofile("examples/support_ticket.lua")
        it("says breaking and exits 1 for the 4-digit variant, with the reason", function()
            local new = temp(core.encode(t.contract_4digits.schema))
            local out, code = jcli("diff examples/support_ticket.lua " .. new)
            assert.equal(1, code, out)
            assert.truthy(out:find('BREAKING   /properties/order_id pattern_changed: pattern changed from ' ..
                '"^[0-9]{4,6}$" to "^[0-9]{4}$"', 1, true), out)
            assert.truthy(out:find("breaking: 2 change(s), 1 breaking", 1, true), out)
        end)
        it("says compatible and exits 0 for a new optional field", function()
            local s = jc.decode(jc.encode(t.schema))
            s.properties.lang = { type = "string" }
            local out, code = jcli("diff --json examples/support_ticket.lua " .. temp(core.encode(s)))
            assert.equal(0, code, out)
            local r = core.decode(out)
            assert.is_false(r.breaking)
            assert.same({ "/properties/lang", "property_added_optional" }, { r.findings[1].pointer, r.findings[1].change })
        end)
        it("exits 2 on a missing file", function()
            local _, code = jcli("diff examples/support_ticket.lua /nonexistent.json")
            assert.equal(2, code)
        end)
    end)

    describe("replay", function()
        local ex = dofile("examples/blog_category.lua")
        local ticket = dofile("examples/support_ticket.lua")
        local function record(path, contract, mail, fake_opts, opts)
            local log = assert(evidence.open(path, { record_text = true }))
            local send = fake.transport(fake_opts)
            opts = util.fake_opts(send, opts)
            opts.evidence = log
            local out = jc.ask(contract, mail, opts)
            log:close()
            return out
        end
        local function new_path()
            local p = os.tmpname()
            tmp[#tmp + 1] = p
            return p
        end
        -- A folder holding what the support ticket's rules read (its orders.sqlite, as a run
        -- leaves it): `replay --context DIR` for a log kept elsewhere.
        local orders
        local function orders_dir()
            if orders then return orders end
            orders = os.tmpname()
            os.remove(orders)
            assert(os.execute("mkdir -p '" .. orders .. "'"))
            local db = assert(dofile("examples/orders.lua").open_shipped(orders .. "/orders.sqlite",
                "examples/orders.csv"))
            db:close()
            return orders
        end
        teardown(function() if orders then os.execute("rm -rf '" .. orders .. "'") end end)

        it("reaches the recorded verdicts offline and names the file and its SHA-256", function()
            local path = new_path()
            record(path, ticket.contract, "the courier did not come for order 1042, urgent", nil,
                { context = (ticket.context {}) })
            record(path, ex.contract, "post 7777", { script = { ["7777"] = { FENCED } } },
                { adapters = ex.adapters, policy = ex.policy })
            local out, code = jcli("replay --context " .. orders_dir() .. " " .. path)
            assert.equal(0, code, out)
            assert.truthy(out:find("replay " .. path .. " sha256 " .. core.sha256(slurp(path)), 1, true), out)
            assert.truthy(out:find("line 1 attempt 1: schema/schema_mismatch, same as recorded", 1, true), out)
            assert.truthy(out:find("line 2 attempt 2: accepted, same as recorded", 1, true), out)
            assert.truthy(out:find("line 3 attempt 1: accepted, same as recorded", 1, true), out)
            assert.truthy(out:find("3 replayed: 3 same, 0 differ", 1, true), out)
        end)
        it("says so when a verdict differs, and exits 1", function()
            local path = new_path()
            record(path, ticket.contract, "the courier did not come for order 1042, urgent", nil,
                { context = (ticket.context {}) })
            local text = slurp(path):gsub('"gate":"schema"', '"gate":"accepted"', 1)
            local f = assert(io.open(path, "wb"))
            f:write(text)
            f:close()
            local out, code = jcli("replay --context " .. orders_dir() .. " " .. path)
            assert.equal(1, code, out)
            assert.truthy(out:find("line 1 attempt 1: DIFFERS: recorded accepted, replayed schema/schema_mismatch",
                1, true), out)
        end)
        it("exits 1 when no record carries the model's text", function()
            local path = new_path()
            local log = assert(evidence.open(path))
            local send = fake.transport()
            jc.ask(ticket.contract, "order 1187", { provider = "openai", model = "m", base_url = "http://127.0.0.1:9",
                transport = send, evidence = log })
            log:close()
            local out, code = jcli("replay " .. path)
            assert.equal(1, code)
            assert.truthy(out:find("0 replayed", 1, true), out)
            assert.truthy(out:find("--record-text", 1, true), out)
        end)
        it("names lines that are not records (and exits 1: the log is damaged), and a record without an "
            .. "attempt number as such", function()
            local ev = temp('[1,2]\n"x"\n{"gate":"schema","kind":"schema_mismatch","text":"{}",'
                .. '"contract":{"name":"support_ticket","version":"1.0.0"}}\n{"gate":"acc')
            local out, code = jcli("replay --context " .. orders_dir() .. " " .. ev)
            assert.equal(1, code, out)
            assert.truthy(out:find("line 1: not an evidence record (not a JSON object), skipped", 1, true), out)
            assert.truthy(out:find("line 2: not an evidence record (not a JSON object), skipped", 1, true), out)
            assert.truthy(out:find("line 4: not an evidence record (not JSON: a torn or damaged line), skipped",
                1, true), out)
            assert.truthy(out:find("3 line(s) not evidence records", 1, true), out)
            assert.truthy(out:find("the log is damaged", 1, true), out)
            assert.truthy(out:find("line 3: schema/schema_mismatch, same as recorded", 1, true), out)
            -- adapters that are not a list: said, not ignored
            local bad = temp('{"gate":"schema","kind":"schema_mismatch","text":"{}","adapters":"unwrap-one-json-fence",'
                .. '"contract":{"name":"support_ticket","version":"1.0.0"}}\n')
            out, code = jcli("replay " .. bad)
            assert.equal(2, code, out) -- as an unknown adapter: the record cannot be replayed
            assert.truthy(out:find("jsoncontract: line 1: the record's adapters are not a list of names", 1, true), out)
        end)
        it("replays a triage run recorded with --record-text, rules included (its orders table)", function()
            local dir = os.tmpname()
            os.remove(dir)
            local out, code = jcli("triage --input examples/mailbox.jsonl --out " .. dir .. " --delay-ms 0 --record-text")
            assert.equal(0, code, out)
            out, code = jcli("replay " .. dir .. "/evidence.jsonl")
            assert.equal(0, code, out)
            assert.truthy(out:find("%(m%-9999%) attempt %d: rules/rule_failed, same as recorded"), out)
            assert.truthy(out:find(" 0 differ;", 1, true), out)
            -- without the run's table: refused, naming the rules and the missing context, rather
            -- than replaying them on other data (the module's own context) or none
            os.remove(dir .. "/orders.sqlite")
            out, code = jcli("replay " .. dir .. "/evidence.jsonl")
            assert.equal(2, code, out)
            assert.truthy(out:find("has rules (order_exists", 1, true), out)
            assert.truthy(out:find("no context to replay them with: its replay_context found none for the run in "
                .. dir, 1, true), out)
            assert.falsy(out:find("replayed:", 1, true), out)
            -- the folder that holds them, given: replayed again
            out, code = jcli("replay --context " .. orders_dir() .. " " .. dir .. "/evidence.jsonl")
            assert.equal(0, code, out)
            assert.truthy(out:find(" 0 differ;", 1, true), out)
            os.execute("rm -rf '" .. dir .. "'")
        end)
        it("replays one saved response: rejected strictly, accepted with the adapter", function()
            local path = temp(fake.envelope(FENCED, "stop", nil, { 431, 79 }))
            local out, code = jcli("replay --contract examples/blog_category.lua " .. path)
            assert.equal(1, code, out)
            assert.truthy(out:find("sha256 " .. core.sha256(slurp(path)), 1, true))
            assert.truthy(out:find("saved response: rejected by blog_category 1.0.0: format/unexpected_character", 1,
                true), out)
            out, code = jcli("replay --contract examples/blog_category.lua --adapter unwrap-one-json-fence " .. path)
            assert.equal(0, code, out)
            assert.truthy(out:find("saved response: accepted by blog_category 1.0.0 with adapter unwrap-one-json-fence",
                1, true), out)
        end)
    end)

    describe("selftest", function()
        it("runs at least 20 offline checks, HTTP faults included, one per line, and counts them", function()
            local out, code = jcli("selftest")
            assert.equal(0, code, out)
            local n = 0
            for _ in out:gmatch("\nok %d+ %- ") do n = n + 1 end
            n = n + (out:match("^ok %d+ %- ") and 1 or 0)
            assert.is_true(n >= 20, out)
            assert.falsy(out:find("FAIL", 1, true))
            for _, name in ipairs { "HTTP 500", "redirect", "invalid (HTML) body", "read timeout" } do
                assert.truthy(out:find(name, 1, true), name)
            end
            assert.truthy(out:find(("%d checks: %d ok, 0 failed"):format(n, n), 1, true), out)
        end)
    end)

    describe("probe", function()
        it("records what the provider did and never switches modes; a failed connection proves nothing", function()
            local out, code = jcli("probe --base-url http://127.0.0.1:9 --model m")
            assert.equal(3, code, out)
            local r = core.decode(out)
            assert.same({ "inconclusive", "connect", false, "json" },
                { r.capability, r.kind, r.mode_switched, r.mode_requested })
        end)
        it("against the stand-in records the HTTP status and a capability", function()
            local out, code = jcli("probe")
            local r = core.decode(out)
            assert.is_table(r, out)
            assert.equal(200, r.http_status)
            assert.equal(r.capability == "honoured" and 0 or 1, code)
            assert.is_false(r.mode_switched)
            assert.same({ type = "json_object" }, r.response_format)
        end)
    end)

    describe("examples", function()
        it("runs each example over its input file and prints the per-gate metrics", function()
            local out, code = jcli("examples leave_request blog_category")
            assert.equal(0, code, out)
            assert.truthy(out:find("== leave_request 1.0.0: 7 inputs", 1, true), out)
            assert.truthy(out:find("l-friday       accepted after 1 attempt(s), needs clarification", 1, true), out)
            assert.truthy(out:find("l-reversed     to a person after 1 attempt(s): rules/rule_failed", 1, true), out)
            assert.truthy(out:find("parseable 7/9, schema-valid 6/9, rules passed 5/9 attempts; accepted 5/7 items, " ..
                "needing clarification or review 2, to a person 2", 1, true), out)
            assert.truthy(out:find("b-fenced       accepted after 1 attempt(s), adapter unwrap-one-json-fence", 1, true),
                out)
        end)
    end)

    describe("the command table", function()
        local cli = require "jsoncontract.cli"
        local function sink()
            local parts = {}
            return { write = function(_, ...) for _, x in ipairs { ... } do parts[#parts + 1] = x end end,
                text = function() return table.concat(parts) end }
        end
        after_each(function()
            package.loaded["jsoncontract.cli.fake"] = nil
            for i, name in ipairs(cli.COMMANDS) do
                if name == "fake" then table.remove(cli.COMMANDS, i) end
            end
        end)
        it("dispatches to a command module's run(args, env) with its parsed options", function()
            local seen
            package.loaded["jsoncontract.cli.fake"] = { name = "fake", summary = "a fake command",
                configure = function(p) p:option("--contract") p:argument("file") end,
                run = function(args, env) seen = { args.contract, args.file, env.root } return 7 end }
            table.insert(cli.COMMANDS, "fake")
            local out = sink()
            assert.equal(7, cli.main({ "fake", "--contract=x.lua", "f" }, { root = ".", stdout = out }))
            assert.same({ "x.lua", "f", "." }, seen)
            assert.equal(0, cli.main({ "--help" }, { stdout = out }))
            assert.truthy(out.text():find("a fake command", 1, true))
        end)
        it("gives every command -h/--help and the program --version", function()
            for _, name in ipairs(cli.COMMANDS) do
                local out = sink()
                assert.equal(0, cli.main({ name, "--help" }, { stdout = out }), name)
                assert.truthy(out.text():find("Usage: jsoncontract " .. name, 1, true), out.text())
            end
            local out = sink()
            assert.equal(0, cli.main({ "--version" }, { stdout = out }))
            assert.equal("jsoncontract " .. core._VERSION .. "\n", out.text())
        end)
        it("gives status and export one store form: [DIR] --store --job, then their own options", function()
            local parser = cli.parser()
            local args = parser:parse({ "status", "d", "--store", "s.sqlite", "--job", "j1", "--json" })
            assert.same({ "d", "s.sqlite", "j1", true }, { args.dir, args.store, args.job, args.json })
            args = parser:parse({ "export", "--store=postgresql://x", "--job", "j2", "--out", "o" })
            assert.same({ "postgresql://x", "j2", "o" }, { args.store, args.job, args.out })
            assert.is_nil(args.dir)
            for _, name in ipairs { "status", "export" } do
                local cmd = require("jsoncontract.cli." .. name)
                assert.same({ name, "function", "function" }, { cmd.name, type(cmd.configure), type(cmd.run) })
            end
        end)
        it("lists every command and all six providers in the help", function()
            local out = sink()
            assert.equal(0, cli.main({ "help" }, { stdout = out }))
            for _, name in ipairs(cli.COMMANDS) do assert.truthy(out.text():find("   " .. name, 1, true), name) end
            out = sink()
            assert.equal(0, cli.main({ "help", "triage" }, { stdout = out }))
            for _, p in ipairs(require("jsoncontract.providers").names) do
                assert.truthy(out.text():find(p, 1, true), p)
            end
        end)
        it("runs from inside bin/ too (./jsoncontract found no modules there)", function()
            for _, script in ipairs { "jsoncontract", "./jsoncontract" } do
                local out, code = sh("cd bin && " .. NOKEY .. LUA .. " " .. script .. " examples blog_category")
                assert.equal(0, code, out)
                assert.truthy(out:find("== blog_category 1.0.0: 6 inputs", 1, true), out)
            end
            local out, code = sh("cd bin && " .. LUA .. " ./jsoncontract-standin --max-seconds 1")
            assert.equal(0, code, out)
            assert.truthy(out:find("^listening 127%.0%.0%.1:%d+"), out)
        end)
        it("says in one line when the checkout is not built for this Lua (a fresh clone before make)", function()
            local dir = os.tmpname()
            os.remove(dir)
            finally(function() os.execute("rm -rf '" .. dir .. "'") end)
            -- (without the ASan run's LD_PRELOAD: its leak check fails cp itself)
            assert.equal(0, select(2, sh("env -u LD_PRELOAD sh -c 'mkdir -p " .. dir .. " && cp -R bin lua " .. dir .. "'")))
            -- (the C core must not be on Lua's default paths either: an installed rock would be found)
            local out, code = sh("cd " .. dir .. " && env -u LUA_CPATH -u LUA_CPATH_5_4 -u LD_PRELOAD " .. LUA
                .. " -e \"package.cpath=''\" bin/jsoncontract --version")
            assert.equal(1, code, out)
            assert.truthy(out:find("^jsoncontract: the C core %(jsoncontract.core%) is not built for "), out)
            assert.falsy(out:find("traceback", 1, true), out)
        end)
        it("reads --opt=value as the option, not as a file name", function()
            local path = temp('{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x."}')
            local out, code = jcli("check --job=examples/support_ticket.lua " .. path)
            assert.equal(0, code, out)
        end)
        it("runs a command through cli.main(argv, env), argv[1] being the command (the only entry point)", function()
            local path = temp('{"intent":"delivery","order_id":"1042","urgent":true,"summary":"x."}')
            local out = sink()
            assert.equal(0, cli.main({ "check", "--job", "examples/support_ticket.lua", path },
                { root = ".", stdout = out, stderr = sink() }))
            assert.equal("accepted", core.decode(out.text()).verdict)
            for _, name in ipairs(cli.COMMANDS) do assert.is_nil(rawget(cli, name), name) end
        end)
        it("exits 2 with the command's usage on an unknown option or command", function()
            local err = sink()
            assert.equal(2, cli.main({ "check", "--bogus" }, { stdout = sink(), stderr = err }))
            assert.truthy(err.text():find("Usage: jsoncontract check", 1, true), err.text())
            assert.truthy(err.text():find("unknown option '--bogus'", 1, true), err.text())
            assert.equal(2, cli.main({ "nosuch" }, { stdout = sink(), stderr = sink() }))
            assert.equal(2, cli.main({}, { stdout = sink(), stderr = sink() }))
        end)
    end)

    describe("a live run", function()
        it("refuses an output directory that is not empty and touches nothing in it", function()
            local dir = os.tmpname()
            os.remove(dir)
            os.execute("mkdir -p '" .. dir .. "'")
            local keep = dir .. "/accepted.jsonl"
            local f = assert(io.open(keep, "wb"))
            f:write("precious\n")
            f:close()
            local out, code = jcli("triage --input examples/mailbox.jsonl --out " .. dir .. " --delay-ms 0")
            assert.equal(2, code, out)
            assert.truthy(out:find("is not empty", 1, true), out)
            assert.equal("precious\n", slurp(keep))
            assert.is_nil(io.open(dir .. "/evidence.jsonl"))
            os.execute("rm -rf '" .. dir .. "'")
        end)
    end)

    describe("triage refuses bad options before creating anything", function()
        local cases = {
            { "--parallel 0", "option --parallel must be from 1 to 256" },
            { "--parallel 100000", "option --parallel must be from 1 to 256" },
            { "--max-attempts 0", "option --max-attempts must be at least 1" },
            { "--token-budget 0", "option --token-budget must be at least 1" },
            { "--job /nonexistent.lua", "cannot load job /nonexistent.lua" },
            { "--provider foo", "unknown provider foo" },
            { "--model ''", "option --model needs a name" },
            { "--base-url ftp://x", "option --base-url needs an http(s) URL" },
            { "--input /", "cannot read the input: /: Is a directory" },
            { "--limit", "option '--limit' requires an argument" },
            { "--limit=x", "option --limit needs a whole number" },
        }
        for _, c in ipairs(cases) do
            it(c[1], function()
                local dir = os.tmpname()
                os.remove(dir)
                local out, code = jcli("triage --out " .. dir .. " " .. c[1])
                assert.equal(2, code)
                assert.truthy(out:find(c[2], 1, true), out)
                local f = io.open(dir, "rb")
                assert.is_nil(f, "the output folder was created")
            end)
        end

        it("treats --limit 0 as no messages", function()
            local dir = os.tmpname()
            os.remove(dir)
            finally(function() os.execute("rm -rf '" .. dir .. "'") end)
            local out, code = jcli("triage --input examples/mailbox.jsonl --limit 0 --out " .. dir)
            assert.equal(0, code, out)
            assert.truthy(out:find("0 messages: 0 accepted", 1, true))
        end)

        it("refuses an output path that is a file", function()
            local file = tmpfile("x")
            finally(function() os.remove(file) end)
            local out, code = jcli("triage --out " .. file)
            assert.equal(2, code)
            assert.truthy(out:find("exists and is not a folder", 1, true))
            assert.equal("x", slurp(file))
        end)
    end)

    describe("treats files as data, never as code or paths to follow", function()
        it("replay refuses a contract name that is not an example name (no path from evidence)", function()
            local marker = os.tmpname()
            local evil = tmpfile('local f = io.open("' .. marker .. '", "w") f:write("ran") f:close() return {}')
            local ev = tmpfile(('{"contract":{"name":"../../../../../../%s"},"gate":"format","kind":"empty",'
                .. '"text":"","attempt":1}\n'):format(evil:gsub("%.lua$", ""):gsub("^/", "")))
            finally(function() os.remove(marker) os.remove(evil) os.remove(ev) end)
            os.remove(marker)
            local out, code = jcli("replay " .. ev)
            assert.equal(2, code)
            assert.truthy(out:find("which is not an example name", 1, true), out)
            assert.is_nil(io.open(marker, "rb"), "the evidence ran code")
        end)

        it("replay refuses an unknown adapter named by a record", function()
            local ev = tmpfile('{"contract":{"name":"support_ticket"},"gate":"format","kind":"empty","text":"",'
                .. '"attempt":1,"adapters":[5]}\n')
            finally(function() os.remove(ev) end)
            local out, code = jcli("replay " .. ev)
            assert.equal(2, code)
            assert.truthy(out:find("the record names an unknown adapter 5", 1, true), out)
        end)

        local notschema = {
            { "[1,2]", "expected an object or a boolean, got array" },
            { '{"type":5}', "invalid schema at /type" },
            { '{"required":"a"}', "invalid schema at /required" },
            { '{"$ref":"#/$defs/x"}', 'cannot resolve "#/$defs/x"' },
        }
        for _, c in ipairs(notschema) do
            it("diff and lint refuse " .. c[1] .. " as not a schema", function()
                local good, bad = tmpfile('{"type":"object"}'), tmpfile(c[1])
                os.rename(good, good .. ".json")
                os.rename(bad, bad .. ".json")
                good, bad = good .. ".json", bad .. ".json"
                finally(function() os.remove(good) os.remove(bad) end)
                local out, code = jcli("diff " .. good .. " " .. bad)
                assert.equal(2, code)
                assert.truthy(out:find(c[2], 1, true), out)
                out, code = jcli("lint --contract " .. bad)
                assert.equal(2, code)
                assert.truthy(out:find(c[2], 1, true), out)
            end)
        end

        it("probe and triage say why a provider cannot be used, in one line", function()
            local out, code = jcli("probe --provider nosuch")
            assert.equal(2, code)
            assert.truthy(out:find("unknown provider nosuch", 1, true), out)
            out, code = jcli("triage --provider gemini --out /nonexistent/never")
            assert.equal(2, code)
            assert.truthy(out:find("the stand-in model speaks openai and anthropic only", 1, true), out)
            assert.falsy(out:find("traceback", 1, true))
        end)

        it("check tells a terminal that it waits for the reply (not a silent hang)", function()
            if not sh("command -v script"):match("%S") then
                pending("terminal check skipped: script (util-linux) not found")
                return
            end
            -- script(1) gives the command a terminal; its own stdin at EOF ends the reply
            local out = sh("script -qec " .. "'" .. NOKEY .. LUA .. " bin/jsoncontract check' /dev/null < /dev/null")
            assert.truthy(out:find("reading the reply from the terminal; end it with Ctrl-D", 1, true), out)
            out = sh("echo '{}' | " .. NOKEY .. LUA .. " bin/jsoncontract check")
            assert.falsy(out:find("reading the reply from the terminal", 1, true), out)
        end)

        it("check reads the reply from stdin when it is - or not given", function()
            local reply = temp('{"intent":"delivery","order_id":null,"urgent":true,"summary":"x."}')
            for _, args in ipairs { "check - < ", "check < ", "check --job=examples/support_ticket.lua - < " } do
                local out, code = jcli(args .. reply)
                assert.equal(0, code, args .. out)
                assert.equal("accepted", verdict_of(out).verdict)
            end
        end)

        it("triage reads the mailbox from stdin with --input -", function()
            local dir = os.tmpname()
            os.remove(dir)
            finally(function() os.execute("rm -rf '" .. dir .. "'") end)
            local out, code = jcli("triage --input - --delay-ms 0 --out " .. dir .. " < examples/mailbox.jsonl")
            assert.equal(0, code, out)
            local n = #util.lines("cat examples/mailbox.jsonl")
            assert.truthy(out:find(n .. " messages: ", 1, true), out)
        end)

        it("triage says once when OPENAI_BASE_URL is not a URL, and creates nothing", function()
            local dir = os.tmpname()
            os.remove(dir)
            local out, code = sh("OPENAI_API_KEY=sk-test OPENAI_BASE_URL=not-a-url " .. LUA
                .. " bin/jsoncontract triage --limit 1 --out " .. dir)
            assert.equal(2, code, out)
            assert.truthy(out:find("OPENAI_BASE_URL needs an http(s) URL, not not-a-url", 1, true), out)
            assert.is_nil(io.open(dir, "rb"))
        end)

        it("check says a JSON Schema is not a contract file", function()
            local schema = temp('{"type":"object"}')
            os.rename(schema, schema .. ".json")
            tmp[#tmp + 1] = schema .. ".json"
            local out, code = jcli("check --job " .. schema .. ".json " .. schema .. ".json")
            assert.equal(2, code, out)
            assert.truthy(out:find("a job module is a Lua file returning {contract = ...}", 1, true), out)
        end)

        it("probe says when --out cannot be written, before sending anything", function()
            local out, code = jcli("probe --base-url http://127.0.0.1:9 --model m --out /")
            assert.equal(2, code, out)
            assert.truthy(out:find("probe: cannot write --out: /: Is a directory", 1, true), out)
            assert.falsy(out:find("traceback", 1, true), out)
            assert.falsy(out:find("capability", 1, true), out)
        end)

        it("check, diff and replay say when a file is a folder", function()
            for _, args in ipairs { "check --job examples/support_ticket.lua /", "diff / /" } do
                local out, code = jcli(args)
                assert.equal(2, code, args)
                assert.truthy(out:find("Is a directory", 1, true), out)
            end
            -- replay takes a job folder: a folder without a job store is named as such
            local out, code = jcli("replay /")
            assert.equal(2, code, out)
            assert.truthy(out:find("no job store in / (no job.sqlite)", 1, true), out)
        end)
    end)
end)
