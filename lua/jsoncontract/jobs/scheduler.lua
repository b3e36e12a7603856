--- The batch event loop: many items in flight from one Lua state, no threads, no waves.
-- Each item runs as a coroutine that does its I/O through `send(req)` and `sleep(s)` (the
-- same yields as `jsoncontract.batch`: `("http", req)` and `("sleep", seconds)`). A request
-- is started on the libcurl multi handle the moment the item asks (`core.http_loop`), and the
-- item is resumed the moment its own transfer finishes; a backoff wait is a timer in the same
-- loop. A slow reply holds nothing else back, and a free slot is filled at once.
--
-- Requests pass through a rate-limit lane (`jsoncontract.jobs.ratelimit`) when one is given:
-- a request that would break the lane's rpm/tpm waits as a timer; a 429 with `Retry-After`
-- pauses the whole lane.
-- @module jsoncontract.jobs.scheduler
local core = require "jsoncontract.core"
local ratelimit = require "jsoncontract.jobs.ratelimit"
local policy = require "jsoncontract.run.policy"
local secrets = require "jsoncontract.secrets"

local type, error, ipairs, pairs, tostring, tonumber, pcall =
    type, error, ipairs, pairs, tostring, tonumber, pcall
local co_create, co_resume, co_status, yield = coroutine.create, coroutine.resume, coroutine.status, coroutine.yield
local min, max, huge, floor = math.min, math.max, math.huge, math.floor

local _M = { _VERSION = core._VERSION }

local compat = require "jsoncontract.compat"
local now = compat.now
_M.now = now

--- Inside an item: send one HTTP request through the loop.
-- @tparam table req a transport request (see `jsoncontract.transport.curl`)
-- @treturn[1] table res
-- @return[2] nil
-- @treturn[2] table err (category "transport")
function _M.send(req)
    local r = yield("http", req)
    if type(r) == "table" and r.category then return nil, r end
    return r
end

--- Inside an item: wait without blocking the other items.
-- @tparam number seconds
function _M.sleep(seconds)
    yield("sleep", seconds)
end

local function retry_after_of(res)
    local h = res.headers or {}
    local ms = tonumber(h["retry-after-ms"] or "")
    if ms then return ms / 1000 end
    return ratelimit.retry_after(h["retry-after"])
end

--- Run work items until the source is exhausted or the caller stops.
-- @tparam table opts
--   `parallel` (integer >= 1: items in flight at most),
--   `take` (function(n) -> array of works, up to n; empty when none is ready now; required),
--   `exhausted` (function() -> boolean: no work will ever come again; called when `take` gave
--   nothing and nothing is in flight; default: true),
--   `work` (function(w) -> result, runs in a coroutine; required),
--   `on_done` (function(w, result, task_ok): after each item; when `task_ok` is false, `result`
--   is a string, "item raised: " and what was raised as `secrets.describe` words it; raising
--   stops the run at once and the error propagates),
--   `tick` (function(now) -> nil | "drain" | "abort": called every loop turn; "drain" stops taking
--   new items and lets those in flight finish within `grace` seconds; "abort" stops at once),
--   `grace` (seconds in-flight items get after "drain"; required with `tick`),
--   `lane` (a ratelimit lane or nil), `retry_after_max_ms` (longest pause of the lane a 429's
--   `Retry-After` may cause, in milliseconds; default the attempt loop's
--   `policy.retry_after_max_ms`, see `jsoncontract.run.policy`), `idle_seconds` (pause between
--   `take` calls that found nothing, default 0.25), `loop` (a `core.http_loop()`; default a new one)
-- @treturn table stats `exchanges` (HTTP exchanges finished), `limit_wait_s` (seconds items waited
--   on the lane), `lane_pauses`, `stopped` (nil, "drain" or "abort"), `unfinished` (works still in
--   flight when the run stopped: their results were never delivered), `max_in_flight`
-- @raise on misuse, and what `on_done` raises
function _M.run(opts)
    if type(opts) ~= "table" or type(opts.take) ~= "function" or type(opts.work) ~= "function" then
        error("scheduler.run: opts with take and work functions expected", 2)
    end
    -- no default here: the callers own theirs (jobs.runner.OPTIONS, batch.run)
    local parallel = opts.parallel
    if type(parallel) ~= "number" or parallel < 1 then error("scheduler.run: parallel must be a number >= 1", 2) end
    local loop = opts.loop or core.http_loop()
    local own_loop = opts.loop == nil
    local lane = opts.lane
    local idle = opts.idle_seconds or 0.25
    local grace = opts.grace
    if opts.tick ~= nil and (type(grace) ~= "number" or grace < 0) then
        error("scheduler.run: grace must be a number >= 0 when tick may drain", 2)
    end
    local retry_after_max = opts.retry_after_max_ms or policy.DEFAULT.retry_after_max_ms
    if type(retry_after_max) ~= "number" or retry_after_max < 0 then
        error("scheduler.run: retry_after_max_ms must be a number >= 0", 2)
    end
    retry_after_max = retry_after_max / 1000
    local stats = { exchanges = 0, limit_wait_s = 0, lane_pauses = 0, unfinished = {}, max_in_flight = 0 }
    local active, n_active = {}, 0      -- task -> true
    local by_id = {}                     -- transfer id -> task
    local draining, drain_deadline = false, nil
    local next_take = 0
    local source_done = false

    local function finish(task, ok, result)
        active[task] = nil
        n_active = n_active - 1
        task.done = true
        if opts.on_done then opts.on_done(task.w, result, ok) end
    end

    local start_http -- forward

    local function step(task, ...)
        local ok, what, arg = co_resume(task.co, ...)
        if not ok then
            -- an err table as its message says, another table by its fields: never "table: 0x..."
            return finish(task, false, "item raised: " .. secrets.describe(what))
        end
        if co_status(task.co) == "dead" then return finish(task, true, what) end
        if what == "http" then
            task.req, task.asked_at = arg, now()
            return start_http(task)
        elseif what == "sleep" then
            task.wake = now() + (tonumber(arg) or 0)
        else
            return finish(task, false, "item yielded '" .. tostring(what) .. "' (use scheduler.send/sleep)")
        end
    end

    start_http = function(task)
        local t = now()
        if lane then
            local wait = lane:admit(t, ratelimit.estimate(task.req))
            if wait > 0 then
                task.wake, task.lane_wait = t + wait, true
                return
            end
            if task.asked_at then
                local waited = t - task.asked_at
                lane:waited(waited)
                stats.limit_wait_s = stats.limit_wait_s + waited
            end
        end
        local okadd, id = pcall(loop.add, loop, task.req)
        if not okadd then
            -- A request the transport refuses is this item's failure, never the run's.
            return step(task, core.error { category = "transport", kind = "protocol",
                message = "request refused: " .. tostring(id) })
        end
        task.xfer, task.req = id, nil
        by_id[id] = task
    end

    local function take_more()
        if draining or source_done then return end
        local free = parallel - n_active
        if free <= 0 then return end
        local t = now()
        if t < next_take then return end
        local works = opts.take(free)
        if #works == 0 then
            next_take = t + idle
            if n_active == 0 and (opts.exhausted == nil or opts.exhausted()) then source_done = true end
            return
        end
        for _, w in ipairs(works) do
            local task = { w = w, co = co_create(opts.work) }
            active[task] = true
            n_active = n_active + 1
            step(task, w)
        end
        if n_active > stats.max_in_flight then stats.max_in_flight = n_active end
    end

    while true do
        take_more()
        if n_active == 0 and (source_done or draining) then break end
        local t = now()
        local verdict = opts.tick and opts.tick(t)
        if verdict == "drain" and not draining then
            draining, drain_deadline = true, t + grace
            stats.stopped = "drain"
        elseif verdict == "abort" then
            stats.stopped = "abort"
            break
        end
        if draining and (n_active == 0 or t >= drain_deadline) then break end
        -- Sleep until the next timer, the next take, or a transfer finishes.
        local wake_at = huge
        for task in pairs(active) do
            if task.wake and task.wake < wake_at then wake_at = task.wake end
        end
        if not draining and not source_done and n_active < parallel and next_take < wake_at then
            wake_at = next_take
        end
        if draining then wake_at = min(wake_at, drain_deadline) end
        local timeout_ms = wake_at == huge and 200 or max(0, min(1000, (wake_at - t) * 1000))
        if n_active == 0 and wake_at == huge then timeout_ms = idle * 1000 end
        local done = loop:wait(timeout_ms)
        -- Claim every finished id before resuming anyone: a resumed item may start a new
        -- transfer that reuses a just-freed id.
        for _, d in ipairs(done) do
            d.task = by_id[d.id]
            by_id[d.id] = nil
        end
        for _, d in ipairs(done) do
            local task = d.task
            if task and active[task] then
                task.xfer = nil
                stats.exchanges = stats.exchanges + 1
                local res = d.res
                if res and res.status == 429 and lane then
                    local ra = retry_after_of(res)
                    if ra then
                        -- A server's Retry-After pauses the whole lane: never longer than the
                        -- attempt loop's cap (policy.retry_after_max_ms), so a hostile
                        -- "Retry-After: 86400" cannot stall every item for a day.
                        lane:pause(now(), min(ra, retry_after_max))
                        stats.lane_pauses = lane.pauses
                    end
                end
                step(task, res or d.err)
            end
        end
        t = now()
        for task in pairs(active) do
            if task.wake and task.wake <= t and not task.done then
                task.wake = nil
                if task.lane_wait then
                    task.lane_wait = nil
                    start_http(task)
                else
                    step(task)
                end
            end
        end
    end

    for task in pairs(active) do
        if task.xfer then loop:cancel(task.xfer) end
        stats.unfinished[#stats.unfinished + 1] = task.w
    end
    if own_loop then loop:close() end
    stats.limit_wait_s = floor(stats.limit_wait_s * 1000 + 0.5) / 1000
    return stats
end

return _M
