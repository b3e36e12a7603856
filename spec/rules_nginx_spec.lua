-- The rules gate inside nginx (Debian's nginx with the lua module, one worker, started on
-- 127.0.0.1 by spec/support/nginx_server.lua): a rule with an endless loop is stopped by its
-- budget (the count hook fires: rules run compiled off), and a rule waiting on ngx.sleep or
-- a slow cosocket read times out as rules/rule_timeout while the same worker answers other
-- requests, so a slow database never blocks it; a rule waiting inside a coroutine of its own
-- is not killed (which crashed the worker) but ends after that wait. Handlers: spec/support/rules_nginx_app.lua.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local nginx = require "support.nginx_server"

describe("the rules gate in nginx", function()
    local why = nginx.missing()
    if why then
        it("runs nginx", function() pending(why) end)
        return
    end

    local srv, base, fault_port

    local function get(path)
        local res, err = curl.request { url = base .. path, timeout_ms = 30000 }
        assert(res, tostring(err))
        assert.equal(200, res.status, res.body)
        return jc.decode(res.body)
    end

    setup(function()
        srv = nginx.start {
            worker_connections = 64,
            ready = "/ping",
            helper = function()
                local pipe
                pipe, fault_port = util.start_fault_server(120)
                return function() util.stop_fault_server(pipe, fault_port) end
            end,
            http = function(port)
                return table.concat({
                    "  lua_shared_dict rules 1m;",
                    '  init_by_lua_block { require("support.rules_nginx_app").init() }',
                    "  server {",
                    "    listen 127.0.0.1:" .. port .. ";",
                    '    location = /rule { content_by_lua_block { require("support.rules_nginx_app").rule() } }',
                    '    location = /ping { content_by_lua_block { require("support.rules_nginx_app").ping() } }',
                    '    location = /escape { content_by_lua_block { require("support.rules_nginx_app").escape() } }',
                    '    location = /in_header_filter { content_by_lua_block { ngx.say("body") }',
                    '      header_filter_by_lua_block {',
                    '        ngx.header["X-Verdict"] = require("support.rules_nginx_app").in_phase(ngx.var.arg_kind) } }',
                    "  }",
                }, "\n")
            end,
        }
        base = srv.base
    end)

    teardown(function() if srv then srv:stop() end end)

    it("passes a rule that returns", function()
        assert.is_true(get("/rule?kind=ok").ok)
    end)

    it("answers with the verdict of a rule that waits within its budget (its timer stopped)", function()
        local out = get("/rule?kind=nap")
        assert.same({ false, "rules", "rule_failed", "order 1042 checked after a wait" },
            { out.ok, out.category, out.kind, out.message:match("order .*$") })
        assert.is_true(get("/ping").pong)
    end)

    it("runs an item's rules in one light thread, each on its own copy", function()
        assert.same({ true, 1 }, { get("/rule?kind=several").ok, get("/rule?kind=several").spawns })
    end)

    it("races only a rule that waits, then runs the rest in a new light thread", function()
        local out = get("/rule?kind=several_nap")
        -- the first thread (a, the nap), the nap's timer, the second thread (b, c, last)
        assert.same({ false, "rule_failed", "last rule ran", 3 },
            { out.ok, out.kind, out.message:match("last rule ran$"), out.spawns })
        assert.falsy(out.message:find("saw", 1, true), out.message)
    end)

    -- (nginx allows no light thread in header_filter: `spawn` refuses, and the rules run in plain
    -- coroutines under the same budgets)
    it("runs the rules where nginx allows no light thread, under their budgets", function()
        for kind, want in pairs { several = "ok 1", ok = "ok 1", loop = "rule_timeout steps" } do
            local res, err = curl.request { url = base .. "/in_header_filter?kind=" .. kind, timeout_ms = 30000 }
            assert(res, tostring(err))
            assert.same({ 200, want }, { res.status, res.headers["x-verdict"] }, kind)
        end
        assert.is_true(get("/ping").pong)
    end)

    it("stops an endless loop by its step budget, and the worker answers after", function()
        local out = get("/rule?kind=loop")
        assert.same({ "rules", "rule_timeout", "steps", "loop" }, { out.category, out.kind, out.limit, out.rule })
        assert.is_true(get("/ping").pong)
    end)

    it("stops an endless loop in a coroutine the rule creates, and the worker answers after", function()
        local out = get("/rule?kind=child")
        assert.same({ "rules", "rule_timeout", "steps", "child" }, { out.category, out.kind, out.limit, out.rule })
        assert.is_true(get("/ping").pong)
        assert.is_true(get("/rule?kind=ok").ok)
    end)

    it("stops an endless loop by its wall time (the clock is read in the loop)", function()
        local out = get("/rule?kind=spin")
        assert.same({ "rule_timeout", "ms" }, { out.kind, out.limit })
        assert.is_true(get("/ping").pong)
    end)

    for _, kind in ipairs { "sleep", "cosocket" } do
        it("times out a rule waiting on " .. (kind == "sleep" and "ngx.sleep" or "a slow cosocket read")
            .. " while the worker serves another request", function()
            local res = curl.request_many({
                { url = base .. "/rule?kind=" .. kind .. "&port=" .. fault_port, timeout_ms = 30000 },
                { url = base .. "/ping?wait=1", timeout_ms = 30000 },
            }, { max_parallel = 2 })
            assert.equal(200, res[1].status, tostring(res[1].body or res[1].message))
            assert.equal(200, res[2].status, tostring(res[2].body or res[2].message))
            local out, ping = jc.decode(res[1].body), jc.decode(res[2].body)
            assert.same({ "rules", "rule_timeout", "ms", kind }, { out.category, out.kind, out.limit, out.rule })
            assert.is_true(ping.served_while_rule_waited)
        end)
    end

    -- ngx.thread.kill cancels only the killed thread's own wait, not one inside a coroutine it
    -- resumed: that wait's timer, freed with the request while still in nginx's timer tree,
    -- made the worker die of signal 11 on its next timer (here: the pings after). Such a rule
    -- is waited for, not killed, and ends at its first instruction after the wait.
    it("times out a rule waiting inside a coroutine it created, and the worker survives", function()
        local out = get("/rule?kind=child_sleep")
        assert.same({ "rules", "rule_timeout", "ms", "child_sleep" }, { out.category, out.kind, out.limit, out.rule })
        for _ = 1, 8 do
            nginx.run("sleep 0.25")
            local res = curl.request { url = base .. "/ping", timeout_ms = 5000 }
            assert.equal(200, res and res.status)
        end
        assert.is_true(get("/rule?kind=ok").ok)
        local log = srv:error_log()
        assert.falsy(log:find("exited on signal", 1, true), log)
    end)

    it("still kills on time a rule that waits itself, leaving a suspended coroutine", function()
        local out = get("/rule?kind=gen_sleep")
        assert.same({ "rule_timeout", "ms", "gen_sleep" }, { out.kind, out.limit, out.rule })
        -- answered at its 200 ms budget, not after its 30 s wait ended
        assert.is_false(out.ended)
        assert.is_true(get("/ping").pong)
    end)

    describe("a rule in the sandbox", function()
        -- (case, error kind, a fragment of the message)
        local ESCAPES = {
            { "os_exit", "rule_error", "exit" },
            { "io_popen", "rule_error", "'io'" },
            { "io_open", "rule_error", "'io'" },
            { "loadlib", "rule_error", "'package'" },
            { "ffi", "rule_error", 'require "ffi" is not available to rules' },
            { "sethook_loop", "rule_timeout", "steps" },
            { "loop", "rule_timeout", "steps" },
            { "memory", "rule_memory", "64 MiB" },
            { "big", "rule_memory", "64 MiB" },
            { "double", "rule_memory", "64 MiB" },
            { "double_second", "rule_memory", "64 MiB" },
            { "string_table", "rule_error", "string is read-only for rules" },
            { "null_mt", "rule_error", "setmetatable" },
            { "array_mt", "rule_error", "this table is shared" },
            { "bytecode", "rule_error", "binary chunk" },
            { "dump", "rule_error", "dump" },
        }
        local pid
        for _, case in ipairs(ESCAPES) do
            it("fails " .. case[1] .. " as " .. case[2] .. " and the worker serves on", function()
                local out = get("/escape?case=" .. case[1])
                assert.is_false(out.ok)
                assert.equal(case[2], out.kind)
                assert.truthy(out.message:find(case[3], 1, true), out.message)
                assert.equal("ABC", out.upper)
                pid = pid or out.pid
                assert.equal(pid, out.pid) -- the same worker: none died
                assert.is_true(get("/ping").pong)
            end)
        end

        -- (big: a 300 MB string.rep; double: a string doubled past the budget faster than the
        -- count hook looks, stopped at the end of a collection cycle)
        for _, case in ipairs { "big", "double", "double_second" } do
            it("gives the worker's memory back after a rule that made a huge string (" .. case .. ")", function()
                local before = get("/escape?case=string_table")
                local out = get("/escape?case=" .. case)
                assert.equal("rule_memory", out.kind)
                assert.equal(before.pid, out.pid)
                assert.truthy(out.heap_kb < before.heap_kb + 16 * 1024, out.heap_kb - before.heap_kb .. " KiB more")
                if before.rss_kb ~= jc.null then
                    assert.truthy(out.rss_kb < before.rss_kb + 64 * 1024,
                        out.rss_kb - before.rss_kb .. " KiB more resident")
                    -- stopped near its budget, not at LuaJIT's longest string (2 GiB)
                    assert.truthy(out.peak_kb < before.peak_kb + 768 * 1024,
                        out.peak_kb - before.peak_kb .. " KiB more at the peak")
                end
            end)
        end

        it("runs the closures of a contract file loaded with jc.load_contract in the sandbox", function()
            local out = get("/escape?file=exit")
            assert.equal("rule_error", out.kind)
            assert.truthy(out.message:find("rule exit raised", 1, true), out.message)
            out = get("/escape?file=shell")
            assert.equal("rule_error", out.kind)
            assert.truthy(out.message:find("'io'", 1, true), out.message)
            assert.is_true(get("/ping").pong)
        end)
    end)

    it("leaves nothing in the error log but what nginx says itself", function()
        local log = srv:error_log()
        -- OpenResty itself logs a coroutine that died of an error ("lua user thread aborted"):
        -- the coroutine the "child" rule made, stopped by the budget; nothing else
        local _, errs = log:gsub("%[error%]", "")
        local _, child = log:gsub('user thread aborted: runtime error: [^\n]*\n[^"]*request: "GET /rule%?kind=child ', "")
        local _, child_sleep = log:gsub('user thread aborted: runtime error: [^\n]*\n[^"]*request: "GET '
            .. '/rule%?kind=child_sleep ', "")
        assert.equal(child + child_sleep, errs, log)
        assert.truthy(child <= 1 and child_sleep <= 1, log)
    end)
end)
