--- Run many items at once: each item runs as a coroutine that calls `send(req)` and `sleep(s)`.
-- A thin layer over `jsoncontract.jobs.scheduler`: each request starts on the libcurl multi
-- handle the moment its item asks, and the item resumes the moment its own reply is in
-- (no waves: a slow reply holds nothing else back). Items finish in any order; results keep theirs.
-- @module jsoncontract.batch
local core = require "jsoncontract.core"
local scheduler = require "jsoncontract.jobs.scheduler"

local type, error = type, error

local _M = { _VERSION = core._VERSION }

--- Inside an item: send one HTTP request through the scheduler.
-- @tparam table req a transport request (see `jsoncontract.transport.curl`)
-- @treturn[1] table res
-- @return[2] nil
-- @treturn[2] table err (category "transport")
_M.send = scheduler.send

--- Inside an item: wait without blocking the other items.
-- @tparam number seconds
_M.sleep = scheduler.sleep

--- Run `work(item, index)` for every item, at most `opts.parallel` at once.
-- `work` runs in a coroutine and must do its I/O through `batch.send` / `batch.sleep`.
-- @tparam table items array
-- @tparam function work function(item, index) -> result
-- @tparam[opt] table opts `parallel` (integer, default 16), `lane` (a `jsoncontract.jobs.ratelimit`
--   lane or nil), `retry_after_max_ms` (longest lane pause a 429's `Retry-After` causes; default
--   `policy.retry_after_max_ms`'s default), `on_done` (function(index, result), called as each
--   item finishes)
-- @treturn table results, `results[i]` = what `work` returned for `items[i]`
-- @raise when `work` raises (the error names the item index)
function _M.run(items, work, opts)
    opts = opts or {}
    local parallel = opts.parallel or 16
    if type(parallel) ~= "number" or parallel < 1 then error("batch.run: opts.parallel must be >= 1", 2) end
    local results, next_item, n = {}, 1, #items
    local failure
    scheduler.run {
        parallel = parallel, lane = opts.lane, retry_after_max_ms = opts.retry_after_max_ms, idle_seconds = 0,
        take = function(k)
            local out = {}
            while #out < k and next_item <= n do
                out[#out + 1] = next_item
                next_item = next_item + 1
            end
            return out
        end,
        work = function(i) return work(items[i], i) end,
        on_done = function(i, result, ok)
            if not ok then
                failure = failure or ("batch item " .. i .. ": " .. tostring(result):gsub("^item raised: ", ""))
                error(failure, 0)
            end
            results[i] = result
            if opts.on_done then opts.on_done(i, result) end
        end,
    }
    return results
end

return _M
