-- The batch event loop: core.http_loop, jsoncontract.jobs.scheduler (and batch.run on it),
-- and the rate-limit lanes. Against the local fault server; order of events, never timings.
local core = require "jsoncontract.core"
local util = require "support.util"
local batch = require "jsoncontract.batch"
local scheduler = require "jsoncontract.jobs.scheduler"
local ratelimit = require "jsoncontract.jobs.ratelimit"

describe("the batch event loop", function()
    local pipe, port, base

    lazy_setup(function()
        pipe, port = util.start_fault_server(120)
        base = "http://127.0.0.1:" .. port
    end)
    lazy_teardown(function() if pipe then util.stop_fault_server(pipe, port) end end)
    after_each(function() collectgarbage("collect") end)

    describe("core.http_loop()", function()
        it("returns each transfer as it finishes, not with the slowest", function()
            local loop = core.http_loop()
            finally(function() loop:close() end)
            local slow = loop:add { url = base .. "/delay?ms=600" }
            local fast = loop:add { url = base .. "/ok" }
            assert.equal(2, loop:count())
            local first = {}
            while #first == 0 do first = loop:wait(5000) end
            assert.equal(fast, first[1].id)
            assert.equal(200, first[1].res.status)
            assert.equal(1, loop:count())
            local rest = {}
            while #rest == 0 do rest = loop:wait(5000) end
            assert.equal(slow, rest[1].id)
            assert.equal(0, loop:count())
        end)

        it("gives an err table for a failed transfer and drops a cancelled one", function()
            local loop = core.http_loop()
            finally(function() loop:close() end)
            local bad = loop:add { url = "http://127.0.0.1:" .. util.closed_port() .. "/" }
            local gone = loop:add { url = base .. "/delay?ms=300" }
            assert.is_true(loop:cancel(gone))
            assert.is_false(loop:cancel(gone))
            local done = {}
            while #done == 0 do done = loop:wait(5000) end
            assert.equal(bad, done[1].id)
            assert.equal("transport", done[1].err.category)
            assert.equal("connect", done[1].err.kind)
            assert.equal(0, loop:count())
            assert.same({}, loop:wait(0))
        end)

        it("raises on misuse and on a closed loop", function()
            local loop = core.http_loop()
            assert.has_error(function() loop:add { url = base, nope = 1 } end, "http_loop:add: unknown field 'nope'")
            assert.has_error(function() loop:wait(-1) end)
            loop:close()
            loop:close()
            assert.has_error(function() loop:add { url = base } end, "http_loop: the loop is closed")
        end)
    end)

    describe("batch.run()", function()
        -- (the slow item and the wait last seconds: the fast items' turns must not depend on a
        -- busy machine never pausing the spec for the better part of a second)
        it("fills a free slot at once: fast items pass a slow one, results keep their order", function()
            local urls = { base .. "/delay?ms=3000", base .. "/ok", base .. "/ok", base .. "/ok", base .. "/ok" }
            local order = {}
            local results = batch.run(urls, function(url)
                local res = assert(batch.send { url = url })
                return res.status
            end, { parallel = 2, on_done = function(i) order[#order + 1] = i end })
            assert.same({ 200, 200, 200, 200, 200 }, results)
            assert.same({ 2, 3, 4, 5, 1 }, order)
        end)

        it("runs a backoff wait as a timer: others go on meanwhile", function()
            local order = {}
            batch.run({ 1, 2, 3 }, function(i)
                if i == 1 then batch.sleep(2) end
                assert(batch.send { url = base .. "/ok" })
            end, { parallel = 3, on_done = function(i) order[#order + 1] = i end })
            assert.equal(1, order[3])
        end)

        it("names the item that raised", function()
            assert.has_error(function()
                batch.run({ "a", "b" }, function(x) if x == "b" then error("boom", 0) end end)
            end, "batch item 2: boom")
        end)

        it("says what a raised table says: an err by its message, another table by its fields", function()
            assert.has_error(function()
                batch.run({ "a" }, function() error(require("jsoncontract.errors").new("store", "write_failed", "disk full")) end)
            end, "batch item 1: store/write_failed: disk full")
            assert.has_error(function()
                batch.run({ "a", "b" }, function(x) if x == "b" then error({ code = 42, message = "db down" }) end end)
            end, 'batch item 2: {code = 42, message = "db down"}')
            assert.has_error(function()
                batch.run({ "a" }, function() error(setmetatable({}, { __tostring = function() return "DbError" end })) end)
            end, "batch item 1: DbError")
        end)

        it("hands on_done the raised table's words, never an address", function()
            local got
            scheduler.run {
                parallel = 1,
                take = function() local w = got == nil and { "w" } or {} got = got or false return w end,
                work = function() error({ code = 42 }) end,
                on_done = function(_, result, ok) got = { result, ok } end,
            }
            assert.same({ "item raised: {code = 42}", false }, got)
        end)
    end)

    describe("rate-limit lanes", function()
        it("a 429 with Retry-After pauses the whole lane, and the wait is counted", function()
            local lane = ratelimit.new { rpm = 6000 }
            local list, got = { "/status/429", "/ok" }, {}
            local stats = scheduler.run {
                parallel = 1, lane = lane,
                take = function() local p = table.remove(list, 1) return p and { p } or {} end,
                work = function(path) return assert(scheduler.send { url = base .. path }).status end,
                on_done = function(path, status) got[path] = status end,
            }
            assert.same({ ["/status/429"] = 429, ["/ok"] = 200 }, got)
            assert.equal(1, stats.lane_pauses)
            assert.is_true(stats.limit_wait_s > 0)
            assert.equal(2, stats.exchanges)
        end)

        -- The fault server's 429 says "Retry-After: 2": the lane pauses 2 s under the default cap
        -- (policy.retry_after_max_ms, 30 s) and only as long as a caller's cap allows.
        for _, case in ipairs { { "the policy's default", nil, 2 }, { "a caller's 0.5 s", 500, 0.5 },
            { "a caller's 0 (never)", 0, 0 } } do
            it("caps the lane's pause for a Retry-After at retry_after_max_ms: " .. case[1], function()
                local lane = ratelimit.new { rpm = 6000 }
                local asked = {}
                local pause = lane.pause
                lane.pause = function(self, t, seconds)  -- the real pause, its argument noted
                    asked[#asked + 1] = seconds
                    return pause(self, t, seconds)
                end
                local list = { "/status/429", "/ok" }
                scheduler.run {
                    parallel = 1, lane = lane, retry_after_max_ms = case[2],
                    take = function() local p = table.remove(list, 1) return p and { p } or {} end,
                    work = function(path) return assert(scheduler.send { url = base .. path }).status end,
                }
                assert.same({ case[3] }, asked)
            end)
        end

        it("raises on a bad retry_after_max_ms", function()
            assert.has_error(function()
                scheduler.run { parallel = 1, retry_after_max_ms = -1, take = function() return {} end, work = print }
            end, "scheduler.run: retry_after_max_ms must be a number >= 0")
            -- no default parallelism or grace here: each caller gives its own
            util.raises("scheduler.run: parallel must be a number >= 1", scheduler.run,
                { take = function() return {} end, work = print })
            util.raises("scheduler.run: grace must be a number >= 0 when tick may drain", scheduler.run,
                { parallel = 1, take = function() return {} end, work = print, tick = function() end })
        end)

        it("token buckets: requests and tokens per minute, on the caller's clock", function()
            local lane = ratelimit.new { rpm = 60, tpm = 600, burst_seconds = 2 }
            assert.equal(0, lane:admit(100, 10))
            assert.equal(0, lane:admit(100, 10))
            local wait = lane:admit(100, 10)        -- 2 requests of burst used: 1 per second refills
            assert.is_true(wait > 0.99 and wait <= 1)
            assert.equal(0, lane:admit(101, 10))
            assert.is_true(lane:admit(101, 1000) > 0)   -- a big request waits for tokens
            lane:pause(200, 5)
            assert.equal(5, lane:admit(200, 0))
            assert.equal(3, ratelimit.retry_after(" 3 "))
            assert.equal(1, ratelimit.retry_after("Wed, 21 Oct 2015 07:28:00 GMT"))
            assert.is_nil(ratelimit.retry_after(nil))
            assert.equal(29 + 300, ratelimit.estimate { body = string.rep("x", 100) .. '"max_tokens": 300' }) -- 117 bytes / 4
            assert.has_error(function() ratelimit.new { rpm = -1 } end, "ratelimit.new: rpm must be a number >= 0")
        end)
    end)
end)
