--- Run many items at once: each item runs as a coroutine that calls `send(req)` and `sleep(s)`;
-- the scheduler gathers the HTTP requests of all items that are waiting and hands them to a
-- "many" transport in one call (libcurl multi by default), so a batch job keeps many requests
-- in flight from one Lua state without threads. Items finish in any order; results keep theirs.
-- @module jsoncontract.batch
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"

local type, error, ipairs = type, error, ipairs
local co_create, co_resume, co_status = coroutine.create, coroutine.resume, coroutine.status
local yield = coroutine.yield
local huge = math.huge

local _M = { _VERSION = core._VERSION }

local compat = require "jsoncontract.compat"
local now, sleep = compat.now, compat.block

--- Inside an item: send one HTTP request through the scheduler.
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

--- Run `work(item, index)` for every item, at most `opts.parallel` at once.
-- `work` runs in a coroutine and must do its I/O through `batch.send` / `batch.sleep`.
-- @tparam table items array
-- @tparam function work function(item, index) -> result
-- @tparam[opt] table opts `parallel` (integer, default 16), `transport_many` (function(reqs) -> results,
--   each a response or an err table; default `jsoncontract.transport.curl`.request_many),
--   `on_done` (function(index, result), called as each item finishes)
-- @treturn table results, `results[i]` = what `work` returned for `items[i]`
-- @raise when `work` raises (the error names the item index)
function _M.run(items, work, opts)
    opts = opts or {}
    local parallel = opts.parallel or 16
    if type(parallel) ~= "number" or parallel < 1 then error("batch.run: opts.parallel must be >= 1", 2) end
    local many = opts.transport_many or require("jsoncontract.transport.curl").request_many
    local results, active = {}, {}
    local next_item, n = 1, #items

    local function step(task, ...)
        local ok, what, arg = co_resume(task.co, ...)
        -- a raised table shows its fields or __tostring, never "table: 0x..."
        if not ok then error("batch item " .. task.index .. ": " .. secrets.describe(what), 0) end
        if co_status(task.co) == "dead" then
            results[task.index] = what
            task.done = true
            if opts.on_done then opts.on_done(task.index, what) end
        elseif what == "http" then
            task.req, task.wake = arg, nil
        elseif what == "sleep" then
            task.req, task.wake = nil, now() + (arg or 0)
        else
            error("batch item " .. task.index .. " yielded '" .. tostring(what) .. "' (use batch.send/sleep)", 0)
        end
    end

    while true do
        -- top up the active set
        while #active < parallel and next_item <= n do
            local i = next_item
            next_item = next_item + 1
            local task = { index = i, co = co_create(work) }
            step(task, items[i], i)
            if not task.done then active[#active + 1] = task end
        end
        if #active == 0 then break end

        local waiting, reqs, soonest = {}, {}, huge
        for _, task in ipairs(active) do
            if task.req then
                waiting[#waiting + 1] = task
                reqs[#reqs + 1] = task.req
            elseif task.wake and task.wake < soonest then
                soonest = task.wake
            end
        end
        if #reqs > 0 then
            local res = many(reqs, { max_parallel = parallel })
            for i, task in ipairs(waiting) do
                task.req = nil
                step(task, res[i])
            end
        else
            sleep(soonest - now())
        end
        local t = now()
        for _, task in ipairs(active) do
            if task.wake and task.wake <= t then
                task.wake = nil
                step(task)
            end
        end
        local still = {}
        for _, task in ipairs(active) do
            if not task.done then still[#still + 1] = task end
        end
        active = still
    end
    return results
end

return _M
