-- jsoncontract.standin.process: the one starter of the stand-in model server (commands, jobs,
-- specs and benchmarks all start it through `start`).
local util = require "support.util"
local process = require "jsoncontract.standin.process"
local curl = require "jsoncontract.transport.curl"

local LUA = util.LUA
local CPATH = os.getenv("JC_TEST_CPATH") or "build/lua5.4/?.so"

local function alive(pid)
    local _, code = util.sh("kill -0 " .. pid)
    return code == 0
end

describe("jsoncontract.standin.process", function()
    describe("start()", function()
        it("starts the server on 127.0.0.1 and returns its pid and port; stop() ends it, a second stop nothing",
            function()
                local h = assert(process.start { max_seconds = 60, without_preload = true })
                assert.is_number(h.pid)
                assert.is_number(h.port)
                assert.equal("http://127.0.0.1:" .. h.port, h.base_url)
                local res = assert(curl.request { url = h.base_url .. "/health", timeout_ms = 5000 })
                assert.equal(200, res.status)
                assert.is_true(alive(h.pid))
                h.stop()
                h.stop()
                assert.is_false(alive(h.pid))
            end)

        it("raises on an unknown option or a value of the wrong type", function()
            assert.has_error(function() process.start { port = 8080 } end, "unknown option 'port'")
            assert.has_error(function() process.start { seed = "1" } end,
                "option 'seed' must be a number, got string")
        end)

        it("says why when the stand-in does not start, not 'it said nil'", function()
            -- refused by the server itself (on its stderr before; now on the pipe too)
            local h, err = process.start { latency = "bogus", max_seconds = 10, without_preload = true }
            assert.is_nil(h)
            assert.matches("^the stand%-in model did not start: latency must be 'heavy' or lognormal", err)
            assert.falsy(err:find("said nil", 1, true), err)
            -- an interpreter the shell cannot run
            h, err = process.start { interpreter = "/nonexistent/lua", max_seconds = 10, without_preload = true }
            assert.is_nil(h)
            assert.equal("the stand-in model did not start: cannot run the interpreter /nonexistent/lua (not found)",
                err)
            -- one that ends without a word: how it ended, where the Lua tells (5.2+)
            h, err = process.start { interpreter = "false", max_seconds = 10, without_preload = true }
            assert.is_nil(h)
            assert.falsy(err:find("said nil", 1, true), err)
            assert.matches("before listening", err, 1, true)
        end)

        it("failure() puts what the stand-in said and how it ended into words", function()
            assert.equal("boom", process.failure("failed: boom", "", "exit", 1))
            assert.equal("it was killed by signal 9 before listening (its own words, if any, went to its stderr)",
                process.failure(nil, nil, "signal", 9))
            assert.equal("it exited with status 3 before listening; it said: lua: x.lua:1: oops; more",
                process.failure("lua: x.lua:1: oops", "more\n", "exit", 3))
        end)

        it("works from a folder outside the repository with only LUA_PATH and LUA_CPATH naming the checkout",
            function()
                local root = util.lines("pwd")[1]
                local dir = util.lines("mktemp -d")[1]
                finally(function() os.execute("rm -rf '" .. dir .. "'") end)
                local f = assert(io.open(dir .. "/ask.lua", "wb"))
                f:write(([[
local process = require "jsoncontract.standin.process"
local jc = require "jsoncontract"
local h = assert(process.start { max_seconds = 60, without_preload = true })
local ticket = dofile(%q)
local out = jc.ask(ticket.contract, "Hello, my order 1042 never arrived, please help!",
    { provider = "openai", model = "standin-1", base_url = h.base_url, context = (ticket.context {}) })
print("status " .. out.status .. " order " .. tostring(out.value and out.value.order_id))
print("pid " .. h.pid)
h.stop()
]]):format(root .. "/examples/support_ticket.lua"))
                f:close()
                local cpath = CPATH:sub(1, 1) == "/" and CPATH or (root .. "/" .. CPATH)
                local out, code = util.sh(("cd '%s' && LUA_PATH='%s/lua/?.lua;%s/lua/?/init.lua;;' LUA_CPATH='%s;;' %s ask.lua")
                    :format(dir, root, root, cpath, LUA))
                assert.equal(0, code, out)
                assert.truthy(out:find("status accepted order 1042", 1, true), out)
                local pid = assert(tonumber(out:match("pid (%d+)")), out)
                assert.is_false(alive(pid))
            end)
    end)

    describe("every way out", function()
        it("stop_all() stops every server not yet stopped, and says how many", function()
            local a = assert(process.start { max_seconds = 60, without_preload = true })
            local b = assert(process.start { max_seconds = 60, without_preload = true })
            a.stop()
            assert.equal(1, process.stop_all())
            assert.is_false(alive(a.pid))
            assert.is_false(alive(b.pid))
            assert.equal(0, process.stop_all())
        end)

        it("after an error triage did not catch, stops the stand-in and exits 70 instead of waiting on it", function()
            local dir = util.sh("mktemp -d"):match("^(%S+)")
            finally(function() util.sh("rm -rf '" .. dir .. "'") end)
            -- Loaded before the command (LUA_INIT): note the stand-in's pid, and make the run
            -- raise as a store on read-only storage does (running as root, chmod cannot show it).
            local f = assert(io.open(dir .. "/inject.lua", "w"))
            f:write(string.format([[
local real_require = require
function require(name)
    local m = real_require(name)
    if name == "jsoncontract.standin.process" and not m.spec_wrapped then
        m.spec_wrapped = true
        local start = m.start
        m.start = function(...)
            local h, e = start(...)
            if h then local p = io.open(%q, "w"); p:write(h.pid); p:close() end
            return h, e
        end
    elseif name == "jsoncontract.jobs.runner" and not m.spec_wrapped then
        m.spec_wrapped = true
        m.run = function() error("attempt to write a readonly database (injected)") end
    end
    return m
end
]], dir .. "/standin.pid"))
            f:close()
            local out, code = util.sh(string.format("env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u LUA_INIT_5_4 "
                .. "LUA_INIT=@%s timeout 60 %s bin/jsoncontract triage --input examples/mailbox.jsonl --out %s/run "
                .. "--limit 3 2>&1", dir .. "/inject.lua", LUA, dir))
            assert.equal(70, code, out)
            assert.truthy(out:find("jsoncontract: internal error (exit status 70; what was committed stays): ", 1,
                true), out)
            assert.truthy(out:find("attempt to write a readonly database (injected)", 1, true), out)
            local pid = tonumber(util.read(dir .. "/standin.pid") or "")
            assert.is_number(pid, "the stand-in was started")
            assert.is_false(alive(pid))
        end)

        it("a Lua 5.2+ script that ends with an error stops its stand-in as the state closes", function()
            if LUA == "luajit" or LUA:match("5%.1") then
                return pending("a table's __gc runs on Lua 5.2+ only; LuaJIT scripts call stop_all()")
            end
            local dir = util.sh("mktemp -d"):match("^(%S+)")
            finally(function() util.sh("rm -rf '" .. dir .. "'") end)
            local out, code = util.sh(string.format("timeout 60 %s -e %q 2>&1", LUA, string.format(
                "package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path; package.cpath = %q .. ';' .. package.cpath; "
                .. "local h = assert(require('jsoncontract.standin.process').start { max_seconds = 300 }); "
                .. "local f = io.open(%q, 'w'); f:write(h.pid); f:close(); error('the script failed')",
                CPATH, dir .. "/pid")))
            assert.equal(1, code, out)
            assert.truthy(out:find("the script failed", 1, true), out)
            local pid = tonumber(util.read(dir .. "/pid") or "")
            assert.is_number(pid)
            assert.is_false(alive(pid))
        end)
    end)
end)
