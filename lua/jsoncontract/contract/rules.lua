--- The rules gate (the last gate, docs/design.md "Rules and secrets"): business rules in Lua,
-- run so that they cannot hurt the run.
--
-- * A rule sees a deep copy of the schema-valid value: whatever it changes (at any depth,
--   metatables included) is thrown away, so the value accepted is the value that passed
--   the schema gate, byte for byte. Each rule gets its own copy, so one rule's changes
--   never reach the next. (A copy, not a read-only proxy: LuaJIT without its 5.2 extensions
--   has no `__pairs` or `__len` for tables, so `pairs`, `#` and `next` on a proxy would see an
--   empty table.)
-- * What a rule returns is checked: only a verdict (see `normalize`) is understood; any
--   other value (a NaN, a function, a table of the wrong shape, an empty message, a pointer
--   that is not a JSON Pointer) is `rules/rule_error`. `false, "why"` fails with "why".
--   Messages and pointers become valid UTF-8 (U+FFFD for bad bytes) and are bounded.
-- * A rule runs under a budget: VM steps (instructions, counted by a debug hook every
--   `GRAIN` instructions) and wall time, per rule and for all rules of one item together.
--   Over budget it fails closed as `rules/rule_timeout` (never retried: the item goes to a
--   person with that reason). A rule that runs out of stack (an endless recursion) is
--   over budget too.
--   - Lua 5.4: the hook is set on the rule's coroutine.
--   - Coroutines the rule creates count against its budget (and its item's), and are
--     stopped over budget like the rule: the sandbox's `coroutine.create` and `coroutine.wrap`
--     (over the host's; under nginx OpenResty's) make the new coroutine's first act, when
--     called from a rule's coroutine or one of its coroutines, to adopt the rule's state (PUC
--     Lua: the rule's hook on it; LuaJIT: an entry the global hook reads). The global
--     `coroutine` table is never changed. Not covered: coroutines a rule outside the sandbox
--     makes (a function the host program passes to `jc.contract` itself, or a trusted
--     contract's), or C code makes (`ngx.thread.spawn`); a coroutine made outside the rule
--     (or by an earlier rule, whose coroutines are no longer counted once it ended) that the
--     rule resumes. Under nginx OpenResty logs a coroutine stopped this way as "lua user
--     thread aborted".
--   - Memory: the heap (`collectgarbage("count")`, the whole Lua state's) may grow by `mb` MiB
--     (64) while a rule runs; looked at with the steps, after each collection cycle (a
--     sentinel's finalizer asks the hook to look at once: a string doubled in a loop outruns
--     any count), at the end of the rule, and before a sandbox `string.rep`. Over it, after a
--     full collection, the rule fails as `rule_memory` and its garbage is collected at once.
--     Under nginx another request's allocations while the rule waits count too. LuaJIT: its
--     incremental collector ends no cycle while a string doubles a few dozen times, so while
--     a rule runs or waits (from its first instruction to its end) the collector runs each
--     cycle whole, once each time the heap doubles (`setstepmul`; the host's multiplier is put
--     back as soon as no rule runs or waits): a pause per cycle instead of many small steps,
--     for other code running meanwhile too. The copy a rule gets, its light thread and the
--     bookkeeping between an item's rules collect at the host's pace, so a rule that allocates
--     nothing never lands a whole cycle in its request. (Across requests the whole cycles cost
--     what the incremental steps cost, the same work done at once: measured the same in
--     instructions per request.)
--   - The sandbox (`sandbox`, `load`, `load_file`): source-text rules and contract files
--     loaded by `load_file` run with an environment of pure libraries, so a rule cannot reach
--     `debug` to remove its hook, nor the host.
--   - LuaJIT: a count hook does not fire inside compiled code, so `normalize` compiles the
--     rule off (`jit.off(f, true)`: the function and every function defined inside it),
--     together with the Lua functions it holds as upvalues and those defined in the same
--     source file that it reaches through upvalue tables (its helpers). Code a rule reaches
--     in other ways (a library's loop) may run compiled, and is bounded only when it
--     returns. LuaJIT's hook is global: it is installed while a rule runs (or waits), and
--     from one rule of an item to the next when nothing else runs between them; it does
--     nothing outside rule coroutines. It is not left installed across requests: with a count
--     hook LuaJIT's interpreter sends every instruction through the hook's dispatch, which
--     cost the gateway's own interpreted Lua more (about 6,700 instructions per request) than
--     putting the hook on and taking it off per item costs (about 4,400).
--   - Under nginx (OpenResty) the rules of an item run one after another in a light thread
--     (`ngx.thread.spawn`): a rule waiting on a cosocket or `ngx.sleep` yields the worker to
--     other requests and is raced by a timer thread; when its wall budget runs out it is
--     killed (`ngx.thread.kill`), so a slow database call never blocks the worker past its
--     budget. Rules that answer without waiting are all done inside `spawn` and need no
--     timer (nor a wait on the thread: one that ended inside `spawn` is let go with its
--     request); after a rule that waited, the rest run in a new light thread. A rule that never
--     waits still gets its light thread (about 5,500 of a no-op rule's instructions per
--     request): OpenResty binds a wait to the coroutine it runs in, so a rule started as a plain
--     coroutine could not be handed to a light thread once it waits, and a raw coroutine's wait
--     would resume the request's own thread. Where nginx allows no light thread (header_filter,
--     body_filter, log: `spawn` refuses) the rules run in plain coroutines, and cannot wait.
--     Not killed: a rule whose wait is inside a coroutine it created (`ngx.thread.kill`
--     cancels only the thread's own wait, and the one left pending crashed the worker later
--     with signal 11; lua-nginx-module 0.10.23). It is marked over budget and waited for: it
--     answers `rule_timeout` once that wait returns (its first instruction raises), so the
--     request is late by what is left of that wait, and the worker serves others meanwhile.
--     A wait inside a coroutine the module does not see (see "Not covered" above) is still
--     killed.
--   - Outside nginx the rule runs in a worker coroutine; one that finished its rule within
--     budget is kept (up to 8) and runs the next rule, so a rule does not cost a coroutine.
--   - Wall time is read from the monotonic clock (`core.monotonic`).
--   - In a batch (`jsoncontract.batch`), a rule may wait through `batch.sleep` and
--     `batch.send`: the wait is handed to the scheduler (other items go on), cut to what is
--     left of the budget.
--   - A single C call that does not return (a LuaSQL query, a pathological `string.find`)
--     cannot be interrupted by any hook: its time is counted when it returns, and a rule
--     that took longer than its budget fails as `rule_timeout` whatever it answered.
-- @module jsoncontract.contract.rules
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"
local secrets = require "jsoncontract.secrets"

local type, pairs, ipairs, next, tostring, setmetatable, getmetatable, pcall, error, select =
    type, pairs, ipairs, next, tostring, setmetatable, getmetatable, pcall, error, select
-- The host's coroutine functions (under nginx OpenResty's), captured once: the rules' own
-- `coroutine` (see "The sandbox") wraps them; the global table is never changed.
local co_create, co_wrap, co_resume, co_status, co_running, co_yield =
    coroutine.create, coroutine.wrap, coroutine.resume, coroutine.status, coroutine.running, coroutine.yield
-- luacheck: push ignore 113 143
local collectgarbage, rawset, rawget, rawequal, load, loadstring, setfenv =
    collectgarbage, rawset, rawget, rawequal, load, loadstring, setfenv
-- luacheck: pop
local concat = table.concat
local unpack = table.unpack or unpack -- luacheck: ignore 113 143
local floor, huge, min, max = math.floor, math.huge, math.min, math.max
local function gc_count() return collectgarbage("count") end
local format = string.format
local sethook, gethook, getinfo, getupvalue = debug.sethook, debug.gethook, debug.getinfo, debug.getupvalue

local _M = { _VERSION = core._VERSION }

--- Budgets used when neither the rule nor the contract names one.
-- @table DEFAULT_BUDGET
-- @field steps VM instructions one rule may run (10,000,000; about 0.1 s of Lua 5.4)
-- @field ms wall time of one rule, in milliseconds (1,000)
-- @field item_steps VM instructions of all rules of one item together (50,000,000)
-- @field item_ms wall time of all rules of one item together, in milliseconds (5,000)
-- @field mb memory one rule may grow the Lua heap by, in MiB (64; `collectgarbage("count")`
--   sampled with the steps, and before a `string.rep` of the sandbox)
_M.DEFAULT_BUDGET = { steps = 10000000, ms = 1000, item_steps = 50000000, item_ms = 5000, mb = 64 }

--- Instructions between two looks at the budget.
_M.GRAIN = 1000

-- Bounds on what a rule's verdict may put into an outcome.
local MAX_ERRORS = 50        -- errors kept from one rule's verdict
local MAX_MESSAGE = 500      -- bytes of one message
local MAX_POINTER = 500      -- bytes of one pointer
local MAX_JOINED = 2000      -- bytes of the joined message

local IS_JIT = type(jit) == "table" and type(jit.off) == "function"
local NGX = type(ngx) == "table" and ngx or nil

----------------------------------------------------------------------------
-- Clock
----------------------------------------------------------------------------

local has_socket, socket = pcall(require, "socket")

-- Seconds on the monotonic clock (budgets measure intervals; the wall clock may jump). One
-- C call: under nginx it formats nothing, unlike `ngx.update_time` (which `ngx.now` needs to
-- see time pass inside a busy rule).
local clock = core.monotonic

local function blocking_sleep(seconds)
    if seconds <= 0 then return end
    if has_socket then return socket.sleep(seconds) end
    os.execute(format("sleep %.3f", seconds))
end

----------------------------------------------------------------------------
-- Definition time: checking rules and budgets
----------------------------------------------------------------------------

local BUDGET_FIELDS = { steps = true, ms = true, item_steps = true, item_ms = true, mb = true }
local RULE_BUDGET_FIELDS = { steps = true, ms = true, mb = true }

local function check_budget(b, where, allowed, level)
    if b == nil then return {} end
    if type(b) ~= "table" then error(where .. " must be a table", level + 1) end
    local out = {}
    for k, v in pairs(b) do
        if not allowed[k] then error(where .. ": unknown field '" .. tostring(k) .. "'", level + 1) end
        if type(v) ~= "number" or v ~= v or v <= 0 or v == huge then
            error(where .. "." .. k .. " must be a positive number", level + 1)
        end
        out[k] = v
    end
    return out
end

-- On LuaJIT: compile the rule off, with its helpers (see the module doc).
local function jit_off_rule(fn)
    local src = getinfo(fn, "S").source
    local seen, visited = {}, 0
    local function walk(v, depth, direct)
        if seen[v] or depth > 4 or visited > 4000 then return end
        seen[v] = true
        visited = visited + 1
        if type(v) == "function" then
            local info = getinfo(v, "S")
            if info.what == "C" then return end
            if direct or info.source == src then jit.off(v, true) end
            for i = 1, 255 do
                local name, up = getupvalue(v, i)
                if not name then break end
                if type(up) == "function" or type(up) == "table" then walk(up, depth + 1, v == fn) end
            end
        elseif type(v) == "table" then
            for _, x in pairs(v) do
                if type(x) == "function" or type(x) == "table" then walk(x, depth + 1, false) end
            end
        end
    end
    walk(fn, 0, true)
end

--- Check a contract's rules and budgets and put them in the form `run` takes.
-- A rule is a function `f(value, ctx)`, Lua source text (run with `value, ctx` as `...`, in a
-- sandbox: see `sandbox`) or a table `{name = string, check = f or source, retry = boolean
-- (default true), budget = {steps =, ms =, mb =}}`.
-- @tparam table|nil list the contract's `rules`
-- @tparam table|nil budget the contract's `rules_budget`: `steps`, `ms`, `mb` (per rule) and
--   `item_steps`, `item_ms` (per item); missing fields from `DEFAULT_BUDGET`
-- @tparam[opt] table opts `trusted` (boolean: source text runs with the process's globals,
--   not in a sandbox)
-- @treturn table rules list of `{name, check, retry, budget}`
-- @treturn table budget the merged contract budget
-- @raise on a rule or budget of the wrong shape (blaming the caller's caller)
function _M.normalize(list, budget, opts)
    local env -- (one sandbox for all the source-text rules of a contract)
    local function from_source(text, i, name)
        env = env or ((opts and opts.trusted) and _G or _M.sandbox())
        local fn, err = _M.load(text, "=rule " .. name, env)
        if not fn then error("contract rule " .. i .. ": " .. tostring(err), 4) end
        return fn
    end
    local merged = {}
    for k, v in pairs(_M.DEFAULT_BUDGET) do merged[k] = v end
    for k, v in pairs(check_budget(budget, "contract field 'rules_budget'", BUDGET_FIELDS, 3)) do merged[k] = v end
    local out = {}
    for i, r in ipairs(list or {}) do
        local rule
        if type(r) == "function" or type(r) == "string" then
            rule = { name = "rule" .. i, check = r, retry = true, budget = {} }
            if type(r) == "string" then rule.check = from_source(r, i, rule.name) end
        elseif type(r) == "table" and (type(r.check) == "function" or type(r.check) == "string") then
            if r.name ~= nil and (type(r.name) ~= "string" or r.name == "") then
                error("contract rule " .. i .. ": name must be a non-empty string", 3)
            end
            local name = r.name or ("rule" .. i)
            local check = type(r.check) == "string" and from_source(r.check, i, name) or r.check
            rule = { name = name, check = check, retry = r.retry ~= false,
                budget = check_budget(r.budget, "contract rule " .. i .. ": budget", RULE_BUDGET_FIELDS, 3) }
        else
            error("contract rule " .. i .. " must be a function, Lua source or {name=, check=function or source}", 3)
        end
        if IS_JIT then jit_off_rule(rule.check) end
        out[i] = rule
    end
    return out, merged
end

----------------------------------------------------------------------------
-- The copy a rule sees
----------------------------------------------------------------------------

-- Metatables rules may have as they are: those of their own copies (and, see the sandbox,
-- those they set). Weak.
local own_mts = setmetatable({}, { __mode = "k" })

local COPY_MAX_DEPTH = core.MAX_DEPTH -- the deepest the parser may be asked to read (max_depth)

-- LuaJIT: a copy made at its size (`table.new`), not grown and rehashed key by key.
local new_table = IS_JIT and select(2, pcall(require, "table.new"))
if type(new_table) ~= "function" then new_table = nil end

local function copy(v, depth, seen)
    if type(v) ~= "table" then return v end
    local done = seen[v]
    if done then return done end
    if depth > COPY_MAX_DEPTH then error("the value is nested too deep to copy for the rules", 0) end
    local out
    if new_table then
        -- (sized by a count of its keys, not `#`: no metamethod runs, __len included)
        local n, len = 0, 0
        for k in next, v do
            n = n + 1
            if type(k) == "number" then len = len + 1 end
        end
        out = new_table(len, n - len)
    else
        out = {}
    end
    seen[v] = out
    -- raw (no __pairs); scalars inline: a call per key and per value was half the copy's cost
    for k, x in next, v do
        if type(k) == "table" then k = copy(k, depth + 1, seen) end
        if type(x) == "table" then x = copy(x, depth + 1, seen) end
        out[k] = x
    end
    local mt = getmetatable(v)
    if mt == core.array_mt then
        setmetatable(out, mt)
    elseif type(mt) == "table" then
        -- a per-object metatable (key order): copied too, so changing it changes nothing
        local mt_copy = copy(mt, depth + 1, seen)
        own_mts[mt_copy] = true
        setmetatable(out, mt_copy)
    end
    return out
end

--- A deep copy of a value, as each rule gets it: tables (keys too) and their metatables as
-- `getmetatable` shows them (the array marker `core.array_mt` kept as it is, another table,
-- a per-object key order, copied; anything else left off). A table met twice (shared, or a
-- cycle) is copied once. No metamethod runs. In Lua: LuaJIT compiles it (faster there than a
-- copy through the C API), and on PUC Lua its cost (a few µs for a 1 KB value) is small
-- beside the model call that produced the value.
-- @function copy
-- @param v any value
-- @return the copy
-- @raise when tables nest deeper than `core.MAX_DEPTH` levels (3,000: the deepest the parser
--   may be asked to read)
function _M.copy(v)
    return copy(v, 0, {})
end

----------------------------------------------------------------------------
-- What a rule returns
----------------------------------------------------------------------------

local VERDICT_HELP = "(nothing or true to pass; a message, {pointer=, message=} or a list of them to fail)"

local function clean(s, limit)
    return secrets.utf8(secrets.elide(s, limit))
end

-- A JSON Pointer (RFC 6901): "" or "/..." with every "~" escaping "0" or "1"; and here no
-- control characters (a pointer is shown on one line, to the model and in logs).
local function bad_pointer(p)
    if p == "" then return nil end
    if p:sub(1, 1) ~= "/" then return "does not start with /" end
    if p:find("%c") then return "has a control character" end
    if p:find("~[^01]") or p:find("~$") then return "has a ~ that is not ~0 or ~1" end
end

-- Normalise what a rule returned into a list of error items, or nil when it passed.
-- A rule passes with nothing, `true` or an empty list; it fails with `false`, a message, one
-- `{pointer =, message =}`, a list of those, or any of these after `false` or Lua's `nil`
-- (`false, "why"`, `nil, {pointer =, message =}`: the two spellings of "failed, because" mean
-- the same, docs/design.md's verdict table). An empty list after `false` or `nil` is no reason: `false,
-- {}` fails as `false` does, `nil, {}` passes as `nil` does. Anything else is a bug in the
-- rule: nil and a description of what was wrong; so is an empty or blank message (it tells
-- the model nothing to fix) and a pointer that is not a JSON Pointer.
local function verdict(rule, ret, ret2)
    if (ret == nil or ret == false) and type(ret2) == "table" and next(ret2) == nil then ret2 = nil end
    if ret == nil and ret2 ~= nil then ret = ret2 end
    if ret == nil or ret == true then return nil end
    if ret == false then
        if ret2 == nil then
            ret = "rule " .. rule.name .. " failed"
        elseif type(ret2) == "string" or type(ret2) == "table" then
            ret = ret2
        else
            return nil, "returned false and a " .. type(ret2) .. " that is not a message " .. VERDICT_HELP
        end
    end
    local list
    if type(ret) == "string" then
        list = { ret }
    elseif type(ret) == "table" and (ret.message ~= nil or ret.pointer ~= nil) then
        list = { ret }
    elseif type(ret) == "table" and next(ret) ~= nil and #ret > 0 then
        list = ret
    elseif type(ret) == "table" and next(ret) == nil then
        return nil
    else
        local what = type(ret)
        if type(ret) == "number" then what = "number (" .. tostring(ret) .. ")" end
        return nil, "returned a " .. what .. " that is not a verdict " .. VERDICT_HELP
    end
    local out, n = {}, #list
    for i = 1, min(n, MAX_ERRORS) do
        local e = list[i]
        if type(e) == "string" then e = { message = e } end
        if type(e) ~= "table" or type(e.message) ~= "string"
            or (e.pointer ~= nil and type(e.pointer) ~= "string") then
            local what = type(e) ~= "table" and ("a " .. type(e))
                or (type(e.message) ~= "string" and ("a message of type " .. type(e.message)))
                or ("a pointer of type " .. type(e.pointer))
            return nil, format("returned %s in error %d, which is not a verdict %s", what, i, VERDICT_HELP)
        end
        if not e.message:find("%S") then -- (blank says as little as empty)
            return nil, format("returned an empty message in error %d %s", i, VERDICT_HELP)
        end
        local why = e.pointer and bad_pointer(e.pointer)
        if why then
            return nil, format("returned the pointer %s in error %d, which is not a JSON Pointer (it %s)",
                '"' .. clean(e.pointer, 60):gsub("%c", function(c) return format("\\%d", c:byte()) end) .. '"',
                i, why)
        end
        out[i] = {
            pointer = clean(e.pointer or "", MAX_POINTER),
            keyword = "rule:" .. rule.name,
            schema_pointer = "",
            message = clean(e.message, MAX_MESSAGE),
            rule = rule.name,
        }
    end
    if n > MAX_ERRORS then
        out[#out + 1] = { pointer = "", keyword = "rule:" .. rule.name, schema_pointer = "", rule = rule.name,
            message = format("and %d more errors from rule %s", n - MAX_ERRORS, rule.name),
            -- the errors this item stands for, so a count over the items can count them too
            more = n - MAX_ERRORS }
    end
    return out
end

----------------------------------------------------------------------------
-- Running one rule under its budget
----------------------------------------------------------------------------

-- The error raised from the hook; never shown (the state says what happened).
local OWN_SOURCE = getinfo(1, "S").source
local OVER = setmetatable({}, { __tostring = function() return "rule over budget" end })

-- LuaJIT: rule coroutines being run or waited on (weak: a coroutine left behind by a rule
-- that was cut off drops out when it is collected), and the hook that was there before.
local active = setmetatable({}, { __mode = "k" })
local saved_hook, saved_mask, saved_count, saved_stepmul
-- LuaJIT: the collector's step multiplier while the hook is installed. LuaJIT's incremental
-- collector does a bounded amount of work per step, and a string doubled in a loop (a handful
-- of allocations) grows the heap to 2 GiB before a cycle ends; at this multiplier each step
-- runs a whole cycle (one each time the heap doubles: the usual pace, done at once), so the
-- sentinel below tells the hook to look at least once per doubling. (Its product with the
-- step size, 10 units per point, stays within a signed 32-bit step limit.)
local JIT_STEPMUL = 100000000

-- LuaJIT: the hook goes on (nothing held it): keep what was there.
local function take_hook()
    saved_hook, saved_mask, saved_count = gethook()
end
-- LuaJIT: items whose rules run one after another, nothing else running between them: the
-- hook stays installed from one of their rules to the next (taking it off and putting it
-- back rewrites the VM's dispatch table each time). Weak, as `active`.
local holders = setmetatable({}, { __mode = "k" })

local function hook_idle()
    return next(active) == nil and next(holders) == nil
end

-- LuaJIT: whole collection cycles while a rule runs or waits (see JIT_STEPMUL), from its first
-- instruction; the host's pace back as soon as none does (an item's copies, its light thread
-- and the bookkeeping between its rules collect at the host's pace).
local function whole_cycles_on()
    if saved_stepmul == nil then saved_stepmul = collectgarbage("setstepmul", JIT_STEPMUL) end
end
local function whole_cycles_off()
    if saved_stepmul ~= nil and next(active) == nil then
        collectgarbage("setstepmul", saved_stepmul)
        saved_stepmul = nil
    end
end

local function restore_if_idle()
    whole_cycles_off()
    if not hook_idle() then return end
    if saved_hook then
        sethook(saved_hook, saved_mask, saved_count)
    else
        sethook()
    end
    saved_hook, saved_mask, saved_count = nil, nil, nil
end

local function hold(item)
    if not IS_JIT then return end
    if hook_idle() then take_hook() end
    holders[item] = true
end

local function release(item)
    if not IS_JIT or not holders[item] then return end
    holders[item] = nil
    restore_if_idle()
end

-- The coroutine of each rule running (or waiting), and the coroutines created while a rule
-- (or one of those) ran: coroutine -> the rule's state. Weak: a coroutine a rule left behind
-- drops out when it is collected.
local rule_cos = setmetatable({}, { __mode = "k" })
local children = setmetatable({}, { __mode = "k" })

-- Mark `state` over budget; from now on its hook runs at every instruction, so a rule that
-- catches the budget's error (pcall in a loop) cannot go on.
local function over(state, what)
    state.over = state.over or what
    if state.co then sethook(state.co, state.hook, "", 1) end
    if state.inner and co_status(state.inner) ~= "dead" then sethook(state.inner, state.hook, "", 1) end
end

local jit_hook -- (below)

-- What a run says when it must stop (`set_interrupt`); nil: nothing asks.
local interrupt

-- Is there room for `kb` more KiB on the heap within the memory budget of `state`? The heap
-- is the whole Lua state's (other requests under nginx too), so over the line a full
-- collection decides: what is left is live, and the rule's (one collection per crossing: after
-- it the heap is back under the line, or the rule is over).
local function memory_left(state, kb)
    if gc_count() + kb <= state.mem_limit then return true end
    collectgarbage("collect")
    return gc_count() + kb <= state.mem_limit
end

-- One look at the budget of `state`, from its hook (called as a statement, so the code the
-- hook interrupted is level 3 here). Over budget it raises, but never inside this module's
-- own code: the worker pool, the hook bookkeeping and the wrappers around the rule must not
-- be cut halfway (a rule that runs a contract check of its own reaches them); the first
-- instruction outside it raises instead.
local function budget_step(state)
    if state.look_soon then
        -- (a collection cycle ended while the rule ran: see `on_cycle`; back to the usual pace)
        state.look_soon = nil
        if not state.over then sethook(IS_JIT and jit_hook or state.hook, "", _M.GRAIN) end
    end
    if not state.over then
        state.steps = state.steps + _M.GRAIN
        local why = interrupt and interrupt()
        if why then
            state.interrupted = tostring(why)
            over(state, "interrupt")
        elseif state.steps > state.max_steps then
            over(state, "steps")
        elseif not memory_left(state, 0) then
            over(state, "memory") -- (before the clock: a big allocation is slow too)
        elseif clock() > state.deadline then
            over(state, "ms")
        else
            return
        end
    end
    -- (PUC Lua: the hook is per coroutine; a coroutine of the rule's own, which may catch
    -- the error in a loop, runs on at every instruction too)
    if not IS_JIT then sethook(state.hook, "", 1) end
    if getinfo(3, "S").source == OWN_SOURCE then return end
    error(OVER, 0)
end

-- LuaJIT: one hook for the whole VM: each rule coroutine, and each coroutine a rule created,
-- counts against its rule's budget, other code not at all.
jit_hook = function()
    local co = co_running()
    local st = active[co]
    if st == nil then
        st = children[co]
        if st == nil or st.finished then return end
    end
    budget_step(st)
end

-- Between two looks at the budget a rule can double a string many times over (`s = s .. s`):
-- the heap grows faster than any count hook looks. The collector finishes a cycle every time
-- the heap has grown by about its own size, and at the end of each cycle a sentinel's
-- finalizer runs: when that happens inside a rule (its coroutine, or one it made) it has the
-- hook look at the next instruction. (Finalizers run with hooks off and may not ask the
-- collector anything: the look itself is the hook's.)
local on_cycle
local function arm_sentinel()
    if newproxy then -- luacheck: ignore 113 (LuaJIT, PUC 5.1: no __gc on tables)
        local p = newproxy(true) -- luacheck: ignore 113
        getmetatable(p).__gc = on_cycle
    else
        setmetatable({}, { __gc = on_cycle })
    end
end
on_cycle = function()
    if IS_JIT then
        -- (LuaJIT runs finalizers on the main thread: every rule running or waiting looks)
        local any = false
        for _, st in pairs(active) do
            if not st.over then st.look_soon, any = true, true end
        end
        if any then sethook(jit_hook, "", 1) end
    else
        local co = co_running()
        local st = rule_cos[co] or children[co]
        if st ~= nil and not st.finished and not st.over then
            st.look_soon = true
            sethook(co, st.hook, "", 1)
        end
    end
    arm_sentinel()
end
arm_sentinel()

-- PUC Lua: the hook of one rule's state (LuaJIT's states share jit_hook, below).
local function make_hook(state)
    return function()
        -- a coroutine the rule created, resumed after the rule ended: no longer counted
        if state.finished then return sethook() end
        budget_step(state)
    end
end

-- LuaJIT: what every rule's state reads as its hook.
local JIT_STATE_MT = { __index = { hook = jit_hook } }

local function hook_on(state, co)
    if IS_JIT then
        if hook_idle() then take_hook() end
        whole_cycles_on()
        active[co] = state
    end
    rule_cos[co] = state
    sethook(co, state.hook, "", _M.GRAIN)
end

-- Idempotent: a rule's coroutine may be let go by its own code and again by its caller.
local function hook_off(co)
    rule_cos[co] = nil
    if IS_JIT then
        if active[co] == nil then return end
        active[co] = nil
        local _, st = next(active)
        if st then
            -- Another rule still runs or waits: keep the hook, at its usual pace (a rule over
            -- budget raised it to every instruction).
            sethook(st.co or co, st.hook, "", st.over and 1 or _M.GRAIN)
        else
            restore_if_idle() -- (held: left installed for the item's next rule)
        end
    elseif co_status(co) ~= "dead" then
        sethook(co)
    end
end

----------------------------------------------------------------------------
-- Coroutines a rule creates
----------------------------------------------------------------------------

-- A rule's budget covers the coroutines it creates: `coroutine.create` and `coroutine.wrap`
-- are replaced (once, when this module is loaded; under nginx OpenResty's own versions are
-- the ones wrapped) by versions that, called from a rule's coroutine or one it created, wrap
-- the body so that its first act is to adopt the rule's state: the new coroutine counts
-- against the rule's budget (LuaJIT: `children`, read by the global hook; PUC Lua: the
-- rule's hook set on it, at the rule's pace). Called from anywhere else they are the
-- originals (one lookup more), with the same results and the same errors.

-- The state of the rule the running coroutine belongs to, if any.
local function rule_state_here()
    local co = co_running()
    local st = rule_cos[co] or children[co]
    if st ~= nil and not st.finished then return st end
end

-- The first act of a coroutine created by a rule.
local function adopt(state)
    local co = co_running()
    children[co] = state
    if not IS_JIT then sethook(co, state.hook, "", state.over and 1 or _M.GRAIN) end
end

local function adopted(state, f)
    return function(...)
        adopt(state)
        return f(...)
    end
end

-- PUC Lua 5.1 and OpenResty's versions (in a request) take only Lua functions.
local LUA_BODY_ONLY = (_VERSION == "Lua 5.1" and not IS_JIT) or NGX ~= nil
local function adoptable(f)
    return type(f) == "function" and not (LUA_BODY_ONLY and getinfo(f, "S").what == "C")
end

-- The original, for a call that may fail: its error, named and placed as the original's own
-- when called from a line of Lua (not a tail call).
local function call_original(fn, name, ...)
    local ok, r = pcall(fn, ...)
    if ok then return r end
    if type(r) ~= "string" then error(r, 0) end
    error((r:gsub("^bad argument #(%d+) to '[^']*'", "bad argument #%1 to '" .. name .. "'")), 3)
end

-- `coroutine.create` or `coroutine.wrap` (the `original`, called `name`) whose coroutine,
-- made from a rule, adopts the rule's budget; made elsewhere, exactly the original's.
local function adopting(original, name)
    return function(...)
        local st = rule_state_here()
        if st == nil or not adoptable((...)) then
            if not LUA_BODY_ONLY and type((...)) == "function" then return original((...)) end
            local made = call_original(original, name, ...)
            return made
        end
        return original(adopted(st, (...)))
    end
end

local create, wrap = adopting(co_create, "create"), adopting(co_wrap, "wrap")

----------------------------------------------------------------------------
-- The sandbox
----------------------------------------------------------------------------

-- Rules run with an environment of their own (`sandbox`): the pure libraries, read-only,
-- and nothing that reaches the host (files, processes, native code, the debug library, the
-- collector, the environment of other code). A rule cannot remove its hook, so its budgets
-- hold. A table every rule shares (a library, the array marker) cannot be changed from it.

-- Tables a rule may not change, not even with rawset or setmetatable (weak: per sandbox).
local locked = setmetatable({}, { __mode = "k" })
locked[core.array_mt] = true

-- A read-only view of `src` (a copy of its fields, less `drop`): reads go to the copy, writes
-- raise, the metatable is hidden.
local function readonly(src, name, drop, add)
    local fields = {}
    for k, v in pairs(src) do
        if not (drop and drop[k]) then fields[k] = v end
    end
    for k, v in pairs(add or {}) do fields[k] = v end
    local view = setmetatable({}, {
        __index = fields,
        __newindex = function(_, k)
            error(format("%s is read-only for rules (cannot set %s)", name, secrets.describe(k)), 2)
        end,
        -- (an iterator that does not hand out `fields` as its state)
        __pairs = function() return function(_, k) return next(fields, k) end, nil, nil end,
        __len = function() return #fields end,
        __metatable = false,
    })
    locked[view] = true
    return view
end

-- The array marker as rules see it: `getmetatable` of a decoded array gives this view, and
-- `setmetatable(t, jc.array_mt)` takes it for the real marker. The real one (shared by every
-- JSON array of the process, `__name` included) is never handed out.
local ARRAY_VIEW = readonly(core.array_mt, "jc.array_mt")

local function quoted(v)
    return type(v) == "string" and ('"' .. clean(v, 60) .. '"') or secrets.describe(v)
end

local function refuse(what)
    error(what .. " is not available to rules (they run in a sandbox: what a rule needs from "
        .. "outside comes through ctx; a contract that needs more says trusted = true)", 3)
end

-- A table's metatable as a rule sees it: its own (one it set, or the copy of a key order it
-- got with its value) as it is; the array marker as ARRAY_VIEW; any other is hidden (false,
-- as a `__metatable` field would): it is shared by the process (an error's, a contract's,
-- whose `__index` is the module itself), and a view would still hand out what it holds.
-- Strings, userdata: nil (a string's metatable's `__index` is the process's `string`).
local function sb_getmetatable(v)
    if type(v) ~= "table" then return nil end
    local mt = getmetatable(v)
    if mt == nil or type(mt) ~= "table" or own_mts[mt] then return mt end
    if rawequal(mt, core.array_mt) then return ARRAY_VIEW end
    return false
end

local function sb_setmetatable(t, mt)
    if type(t) == "table" and locked[t] then error("setmetatable: this table is shared and cannot be changed", 2) end
    if rawequal(mt, ARRAY_VIEW) then mt = core.array_mt elseif type(mt) == "table" then own_mts[mt] = true end
    -- A finalizer would run later, outside the rule and its budget, in whatever code happens
    -- to collect (another request).
    if type(mt) == "table" and rawget(mt, "__gc") ~= nil then error("setmetatable: rules cannot set __gc", 2) end
    return setmetatable(t, mt)
end

local function sb_rawset(t, k, v)
    if type(t) == "table" and locked[t] then error("rawset: this table is shared and cannot be changed", 2) end
    return rawset(t, k, v)
end

local function sb_collectgarbage(opt)
    if opt == "count" then return collectgarbage("count") end
    refuse("collectgarbage(" .. quoted(opt) .. ")")
end

-- `string.rep` that knows the memory budget: a result over what is left fails the rule
-- before it is allocated (`("x"):rep(n)` reaches the process's `string.rep` through the string
-- metatable: that one is caught by the next look at the budget instead).
local s_rep = string.rep
local function sb_rep(s, n, sep)
    local st = rule_state_here()
    if st and type(n) == "number" and n > 0 then
        local kb = ((type(s) == "string" and #s or 0) + (type(sep) == "string" and #sep or 0)) * n / 1024
        if not memory_left(st, kb) then
            over(st, "memory")
            error(OVER, 0)
        end
    end
    return s_rep(s, n, sep)
end

-- Compile `text` (Lua source only: never bytecode) with `env` as its globals. LuaJIT: compiled
-- off, with every function it defines, so the count hook fires in all of them.
local function compile(text, chunkname, env)
    if type(text) ~= "string" then return nil, "source must be a string, got " .. type(text) end
    if text:byte(1) == 27 then return nil, "attempt to load a binary chunk (rules load source text only)" end
    local fn, err
    if setfenv and loadstring then -- Lua 5.1 / LuaJIT
        fn, err = loadstring(text, chunkname)
        if fn then setfenv(fn, env) end
    else
        fn, err = load(text, chunkname, "t", env)
    end
    if not fn then return nil, err end
    if IS_JIT then jit.off(fn, true) end
    return fn
end

local sb_facades -- require name -> function(env) -> module, for the modules rules may require

--- A fresh sandbox: the environment rules run with (and contract files are loaded with).
-- Offers `string` (less `dump`; `rep` within the memory budget), `table`, `math` (less
-- `randomseed`), `utf8` and `bit`/`bit32` where present, `os.time`/`os.date`/`os.clock`, a
-- `coroutine` whose coroutines run under the budget of the rule that made them, `assert`,
-- `error`, `ipairs`, `next`, `pairs`, `pcall`, `xpcall`, `select`, `tonumber`, `tostring`,
-- `type`, `unpack` (5.1), `rawequal`, `rawget`, `rawlen`, `rawset` and `setmetatable`
-- (not on shared tables; no `__gc`), `getmetatable` (tables only), `collectgarbage("count")`,
-- `load` (source text only, this sandbox as its default environment), `require` of
-- "jsoncontract" (null, array_mt, decode, encode, ordered, compile, contract, load) and
-- "jsoncontract.batch" (sleep), `_VERSION`, and `_G` (the sandbox itself). Libraries are
-- read-only views. While a contract file is being loaded (`load_file`), also `dofile` of
-- another `.lua` file, run in the same sandbox.
-- @treturn table env
function _M.sandbox()
    local env = {}
    env.string = readonly(string, "string", { dump = true }, { rep = sb_rep })
    env.table = readonly(table, "table")
    env.math = readonly(math, "math", { randomseed = true })
    env.os = readonly({ time = os.time, date = os.date, clock = os.clock }, "os")
    local coro = { create = create, wrap = wrap }
    for _, k in ipairs { "resume", "yield", "status", "running", "isyieldable", "close" } do
        coro[k] = coroutine[k]
    end
    env.coroutine = readonly(coro, "coroutine")
    -- (loaded from package.loaded, never through require: these are pure)
    for _, name in ipairs { "utf8", "bit", "bit32" } do
        local lib = package.loaded[name]
        if type(lib) == "table" then env[name] = readonly(lib, name) end
    end
    for _, k in ipairs { "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select", "tonumber",
        "tostring", "type", "unpack", "rawequal", "rawget", "rawlen", "_VERSION" } do
        env[k] = _G[k]
    end
    env.rawset, env.setmetatable, env.getmetatable = sb_rawset, sb_setmetatable, sb_getmetatable
    env.collectgarbage = sb_collectgarbage
    env.load = function(chunk, chunkname, mode, fenv)
        if mode ~= nil and mode ~= "t" then return nil, "rules load source text only (mode 't')" end
        if type(chunk) == "function" then
            local parts = {}
            while true do
                local piece = chunk()
                if piece == nil or piece == "" then break end
                if type(piece) ~= "string" then return nil, "reader function must return a string" end
                parts[#parts + 1] = piece
            end
            chunk = concat(parts)
        end
        return compile(chunk, "=" .. (type(chunkname) == "string" and chunkname:gsub("^[=@]", "") or "load"),
            type(fenv) == "table" and fenv or env)
    end
    env.require = function(name)
        local facade = sb_facades[name]
        if not facade then refuse("require " .. quoted(name)) end
        return facade(env)
    end
    env._G = env
    return env
end

-- What a sandbox's `require` gives (read-only, made on first use: jsoncontract requires
-- this module).
local facade_cache = {}
-- Contracts made in a sandbox with `trusted = true` (weak).
local wants_trust = setmetatable({}, { __mode = "k" })
sb_facades = {
    jsoncontract = function()
        if not facade_cache.jc then
            local jc = require "jsoncontract"
            -- A contract made in the sandbox is never trusted (its source-text rules would get
            -- the process's globals): `trusted = true` is only noted, for `load_file`, which
            -- then loads the file again as plain Lua. (The definition is copied raw: no
            -- metamethod answers `trusted` one way here and another in jc.contract.)
            local here = getinfo(1, "S").short_src
            local function contract(def)
                local plain, wants = def, nil
                if type(def) == "table" then
                    plain = {}
                    for k, v in next, def do plain[k] = v end
                    wants = plain.trusted
                    plain.trusted = nil
                end
                local ok, c = pcall(jc.contract, plain)
                if not ok then
                    -- (the author's file and line, not this wrapper's, as a direct call gives)
                    if type(c) == "string" and c:sub(1, #here + 1) == here .. ":" then
                        c = c:gsub("^[^\n]-:%d+: ", "", 1)
                    end
                    error(c, 2)
                end
                if wants == true then wants_trust[c] = true end
                return c
            end
            facade_cache.jc = readonly({ null = jc.null, array_mt = ARRAY_VIEW, decode = jc.decode, encode = jc.encode,
                ordered = jc.ordered, compile = jc.compile, contract = contract }, "jsoncontract")
        end
        return facade_cache.jc
    end,
    ["jsoncontract.batch"] = function()
        if not facade_cache.batch then
            facade_cache.batch = readonly({ sleep = require("jsoncontract.batch").sleep }, "jsoncontract.batch")
        end
        return facade_cache.batch
    end,
}

--- Compile Lua source text in a sandbox (see `sandbox`): never bytecode.
-- @tparam string text Lua source
-- @tparam[opt] string chunkname as for `load` (default "=rule")
-- @tparam[opt] table env the environment (default a fresh `sandbox()`)
-- @treturn[1] function the chunk
-- @return[2] nil
-- @treturn[2] string message
function _M.load(text, chunkname, env)
    return compile(text, chunkname or "=rule", env or _M.sandbox())
end

-- The file being loaded by `load_file` (its sandbox may `dofile` others meanwhile).
local loading = 0

local function read_file(path)
    local f, msg = io.open(path, "rb")
    if not f then return nil, msg end
    local text = f:read("*a")
    f:close()
    if not text then return nil, "cannot read " .. path end
    return text
end

local function run_file(path, env)
    local text, err = read_file(path)
    if not text then return false, err end
    text = text:gsub("^#![^\n]*", "") -- (a shebang line, as lua skips it)
    local fn, cerr = compile(text, "@" .. path, env)
    if not fn then return false, cerr end
    return pcall(fn)
end

--- Load a contract file (or any Lua file rules come from) in a fresh sandbox: the file's own
-- code, and so every function it defines (rules written as closures, their helpers), has the
-- sandbox as its globals, and whatever it keeps in its locals came from the sandbox too. Its
-- `require "jsoncontract"` gives the sandbox's subset; `dofile` of another `.lua` file runs it
-- in the same sandbox (while loading only). A file whose module or contract says `trusted =
-- true` is then loaded again as plain Lua (`dofile`): its rules run with the process's globals;
-- one whose first line is `-- jsoncontract: trusted` is loaded as plain Lua at once (its top
-- level needs more than the sandbox).
--
-- Why the whole file, not the rule functions: a closure keeps its upvalues, so giving a rule
-- the sandbox as its environment afterwards (`setfenv` on 5.1/LuaJIT, `debug.upvaluejoin` of
-- its `_ENV` on 5.4) leaves it whatever its file captured (`local exit = os.exit`), and the
-- helpers it calls keep their own environment (on 5.1 `setfenv` would also change them for
-- the host). Only code that ran in the sandbox from its first line holds nothing else.
-- @tparam string path
-- @treturn[1] any what the file returns
-- @return[2] nil
-- @treturn[2] string message (cannot read, does not compile, raised while loading)
function _M.load_file(path)
    local env = _M.sandbox()
    env.dofile = function(p)
        if loading == 0 or rule_state_here() then refuse("dofile") end
        if type(p) ~= "string" or not p:match("%.lua$") then error("dofile: only .lua files", 2) end
        local ok, v = run_file(p, env)
        if not ok then error(v, 0) end
        return v
    end
    -- A file whose top level itself needs more (a database driver) says so on its first line.
    local head = read_file(path)
    if head and head:gsub("^#![^\n]*\n", ""):match("^%-%-%s*jsoncontract:%s*trusted%f[%W]") then
        local ok, mod = pcall(dofile, path)
        if not ok then return nil, tostring(mod) end
        return mod
    end
    loading = loading + 1
    local ok, mod = run_file(path, env)
    loading = loading - 1
    if not ok then return nil, tostring(mod) end
    if type(mod) == "table" and (rawget(mod, "trusted") == true or wants_trust[mod]
            or wants_trust[rawget(mod, "contract") or false]) then
        ok, mod = pcall(dofile, path)
        if not ok then return nil, tostring(mod) end
    end
    return mod
end

--- Have every rule that runs stop when `fn` says so: `fn()` is called at each look at the
-- budget (every `GRAIN` instructions) and returns nil to go on or a reason (e.g. "SIGTERM").
-- The rule then fails as `rules/rule_interrupted` (`signal` = the reason), never retried:
-- the caller that stops decides what becomes of its item. For a run stopping on a signal
-- while a rule is stuck (`jsoncontract.jobs.runner`).
-- @tparam function|nil fn nil: nothing asks
function _M.set_interrupt(fn)
    if fn ~= nil and type(fn) ~= "function" then error("set_interrupt: fn must be a function or nil", 2) end
    interrupt = fn
end


local function is_stack_overflow(e)
    return type(e) == "string" and (e:find("stack overflow", 1, true) ~= nil)
end

-- Is the caller running inside a coroutine (a batch item) that can hand waits on?
local function in_coroutine()
    local co, main = co_running()
    return co ~= nil and not main
end

local function pack(...) return { n = select("#", ...), ... } end

-- PUC Lua 5.1 cannot yield across pcall (LuaJIT and 5.2+ can): there the rule runs in a
-- coroutine of its own, every wait it yields is passed on to the rule's coroutine, and it
-- gets the budget's hook itself (a 5.1 coroutine inherits the C hook but not the Lua function
-- debug.sethook keeps per coroutine, so it would run uncounted).
local YIELD_ACROSS_PCALL = not (_VERSION == "Lua 5.1" and not IS_JIT)
local function pcall_rule(state, f, ...)
    if YIELD_ACROSS_PCALL then return pcall(f, ...) end
    local co = co_create(f)
    state.inner = co
    children[co] = state
    sethook(co, state.hook, "", state.over and 1 or _M.GRAIN)
    local r = pack(co_resume(co, ...))
    while true do
        if not r[1] then return false, r[2] end
        if co_status(co) == "dead" then return unpack(r, 1, r.n) end
        r = pack(co_resume(co, co_yield(unpack(r, 2, r.n))))
    end
end

-- Run inside the rule's coroutine, so under its budget: call the rule, then read what it
-- raised (a __tostring runs here too) or returned (a metamethod of a returned table too).
-- Returns "ok", list-or-nil | "raised", text, is-stack-overflow | "bad", problem | "over".
local function guarded(state, rule, value, ctx)
    local done, ret, ret2 = pcall_rule(state, rule.check, value, ctx)
    -- Over budget, nothing of the rule's is read (and code outside this module would raise).
    if state.over then return "over" end
    -- (a pass, the common answer: nothing to read, no metamethod can run)
    if done and (ret == true or (ret == nil and ret2 == nil)) then return "ok", nil end
    if not done then
        return "raised", secrets.describe(ret), is_stack_overflow(ret)
    end
    local ok, list, problem = pcall(verdict, rule, ret, ret2)
    if not ok then return "bad", "returned a value that raised when read: " .. secrets.describe(list) end
    if problem then return "bad", problem end
    return "ok", list
end

-- What a worker coroutine yields when its rule is done (any other yield is a wait).
local DONE = setmetatable({}, { __tostring = function() return "rule done" end })

-- A worker runs one rule after another: making a coroutine (its stack grown by the first
-- rule, then collected) costs more than most rules, so finished workers are kept for the
-- next rule. Outside nginx only: OpenResty ties a coroutine to the request that made it.
-- Its job is handed over in these four, which it empties as it takes them: a waiting worker
-- holds nothing of the last rule (its value, its context) alive.
local job_state, job_rule, job_value, job_ctx

local function take_job()
    local state, rule, value, ctx = job_state, job_rule, job_value, job_ctx
    job_state, job_rule, job_value, job_ctx = nil, nil, nil, nil
    return state, rule, value, ctx
end

local function worker()
    while true do
        co_yield(DONE, guarded(take_job()))
    end
end
local idle, n_idle, MAX_IDLE = {}, 0, 8

-- Outside nginx: the rule in a worker coroutine; waits it yields through `batch.sleep` /
-- `batch.send` go to the batch scheduler (or are done here), cut to the budget.
-- Returns what `guarded` returns, or "over".
local function run_coroutine(rule, value, ctx, state)
    local co = not NGX and idle[n_idle] or nil
    if co then
        idle[n_idle], n_idle = nil, n_idle - 1
    else
        co = co_create(worker)
    end
    state.co = co
    hook_on(state, co)
    job_state, job_rule, job_value, job_ctx = state, rule, value, ctx
    -- (ok, DONE, what guarded returns) | (ok, a wait's verb and argument) | (false, error)
    local ok, r2, r3, r4, r5 = co_resume(co)
    while ok and r2 ~= DONE and co_status(co) == "suspended" and not state.over do
        local verb, arg = r2, r3
        local left = state.deadline - clock()
        if verb ~= "sleep" and verb ~= "http" then
            hook_off(co)
            return "bad", "yielded " .. secrets.describe(verb) .. "; rules must return their verdict "
                .. "(waits go through batch.sleep / batch.send)"
        end
        if left <= 0 then
            state.over = "ms"
            break
        end
        local out
        if verb == "sleep" then
            local sec = min(type(arg) == "number" and arg or 0, left)
            if in_coroutine() then co_yield("sleep", sec) else blocking_sleep(sec) end
            out = {}
        else
            local req = {}
            for k, x in pairs(type(arg) == "table" and arg or {}) do req[k] = x end
            req.timeout_ms = min(type(req.timeout_ms) == "number" and req.timeout_ms or huge, floor(left * 1000) + 1)
            local res, err
            if in_coroutine() then
                res = co_yield("http", req)
                if type(res) == "table" and res.category then res, err = nil, res end
            else
                -- outside a scheduler: the caller's transport (the run's), or the one
                -- `jsoncontract.transport.default` picks where this runs
                local send = state.send or require("jsoncontract.transport.default").choose(nil, nil, nil, 1)
                res, err = send(req)
            end
            -- one value, as a batch scheduler answers `batch.send`: the response or the err
            out = { res ~= nil and res or err }
        end
        if clock() > state.deadline then
            state.over = "ms"
            break
        end
        ok, r2, r3, r4, r5 = co_resume(co, unpack(out, 1, 2))
    end
    hook_off(co)
    if state.over then return "over" end
    -- (the coroutine dies outside the rule's pcall only over budget, or out of C stack)
    if not ok then return "raised", secrets.describe(r2), is_stack_overflow(r2) end
    -- only a worker that finished its rule, within budget, runs the next one
    if not NGX and n_idle < MAX_IDLE then
        n_idle = n_idle + 1
        idle[n_idle] = co
    end
    return r3, r4, r5
end

-- 10000000 -> "10,000,000"
local function thousands(n)
    local s = format("%d", floor(n + 0.5))
    local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
    return (out:gsub("^,", ""):gsub("^%-,", "-"))
end

local function over_message(rule, state)
    if state.over == "steps" then
        return format("rule %s ran over its budget of %s steps (VM instructions)", rule.name,
            state.max_steps < 1e15 and thousands(state.max_steps) or tostring(state.max_steps))
    elseif state.over == "stack" then
        return format("rule %s ran out of stack (a recursion too deep)", rule.name)
    elseif state.over == "memory" then
        return format("rule %s ran over its budget of %s MiB (memory)", rule.name, thousands(state.mb))
    elseif state.over == "interrupt" then
        return format("rule %s was stopped: the run is stopping (%s)", rule.name, clean(state.interrupted, 60))
    end
    return format("rule %s ran over its budget of %s ms (wall time)", rule.name, thousands(state.ms))
end

-- The state of the next rule of `item`: its budgets, cut to what is left of the item's.
local function begin_rule(rule, budget, item)
    local now = clock()
    local steps = min(rule.budget.steps or budget.steps, item.steps_left)
    local ms = max(0, min(rule.budget.ms or budget.ms, (item.deadline - now) * 1000))
    local mb = rule.budget.mb or budget.mb or _M.DEFAULT_BUDGET.mb
    -- (the fields a passing rule's run sets, in the constructor, and no more than 8: a table
    -- neither grown nor bigger than it needs per rule; the start is its deadline less its ms.
    -- LuaJIT: the hook, the same for every rule, comes from the metatable)
    local state = { steps = 0, max_steps = steps, ms = ms, deadline = now + ms / 1000, mb = mb,
        mem_limit = gc_count() + mb * 1024, co = false, finished = false }
    if IS_JIT then return setmetatable(state, JIT_STATE_MT) end
    state.hook = make_hook(state)
    return state
end

-- Full collections until one frees less than 1 MiB (at most 16): LuaJIT halves its string
-- buffer (which `string.rep` grew to the result's size) once per cycle.
local function collect_all()
    for _ = 1, 16 do
        local before = gc_count()
        collectgarbage("collect")
        if gc_count() > before - 1024 then return end
    end
end

-- The error kind of each way over budget (the others: rule_timeout).
local OVER_KIND = { memory = "rule_memory", interrupt = "rule_interrupted" }

-- What a rule came to, from what running it returned: ok, list-or-nil; or nil, err
-- (rule_error / rule_timeout). Its steps are taken from the item's.
local function end_rule(rule, item, state, tag, a, b)
    state.finished = true -- (coroutines the rule left behind are no longer counted)
    item.steps_left = item.steps_left - state.steps
    local elapsed = clock() - (state.deadline - state.ms / 1000)
    if tag == "raised" and b and not state.over then state.over = "stack" end
    -- (the allocator refused: the rule's doing, whatever its budget said)
    if tag == "raised" and not state.over and type(a) == "string" and a:find("not enough memory", 1, true) then
        state.over = "memory"
    end
    -- (one allocation just before the end: no hook looked after it)
    if (not state.over or state.over == "ms") and gc_count() > state.mem_limit then
        collect_all()
        if gc_count() > state.mem_limit then state.over = "memory" end
    end
    if state.over == "memory" then
        -- its garbage goes now, not at some later request's expense (a dead coroutine keeps
        -- its stack until collected)
        state.co, state.inner = nil, nil
        collect_all()
    end
    -- A blocking call cannot be interrupted; its time still counts, and the verdict of a
    -- rule over its budget is not trusted.
    if not state.over and elapsed * 1000 > state.ms then state.over = "ms" end
    if tag == "ok" and not state.over then return true, a end
    local fields = { errors = setmetatable({}, core.array_mt), retry = false, rule = rule.name }
    if state.over then
        fields.limit = state.over
        if state.over == "interrupt" then fields.signal = state.interrupted end
        return nil, errors.new("rules", OVER_KIND[state.over] or "rule_timeout", over_message(rule, state), fields)
    end
    if tag == "raised" then
        return nil, errors.new("rules", "rule_error", "rule " .. rule.name .. " raised: " .. clean(a, MAX_MESSAGE),
            fields)
    end
    return nil, errors.new("rules", "rule_error", "rule " .. rule.name .. " " .. clean(a, MAX_MESSAGE), fields)
end

-- Settle rule `i` of `item` from what running it returned (`end_rule`): a failure's errors
-- go to `item.all` (made on the first: passing costs no table) and `item.no_retry`; a
-- rule_error / rule_timeout to `item.err`. True when the next rule may run.
local function settle(item, i, rule, state, tag, a, b)
    local ok, list = end_rule(rule, item, state, tag, a, b)
    if not ok then
        item.err = list
        return false
    end
    if list then
        local all = item.all or {}
        item.all = all
        for _, e in ipairs(list) do all[#all + 1] = e end
        if not rule.retry then item.no_retry = true end
    end
    item.next = i + 1
    return true
end

-- Outside nginx (or where light threads are not allowed): the item's rules from `item.next`
-- on, each in a worker coroutine. Leaves `item.err` at the first rule_error / rule_timeout.
local function run_rules_coroutine(list, value, ctx, budget, item)
    hold(item)
    for i = item.next, #list do
        local rule = list[i]
        local state = begin_rule(rule, budget, item)
        state.send = item.send
        local copied, view = pcall(copy, value, 0, {})
        if not copied then
            release(item)
            error(view, 0)
        end
        if not settle(item, i, rule, state, run_coroutine(rule, view, ctx, state)) then break end
    end
    release(item)
end

-- The light thread of an item: its rules from `item.next` on, one after another, each under
-- its own hook and budget, on its own copy. `item.rule` / `item.state` are the rule running
-- (or waiting); once the caller races the thread against a timer (`item.raced`), it stops
-- after that rule, so a timer only ever stands for one rule's deadline.
local function item_thread_body(list, value, ctx, budget, item)
    local co = co_running()
    local n = #list
    for i = item.next, n do
        local rule = list[i]
        local state = begin_rule(rule, budget, item)
        local view = copy(value, 0, {})
        state.co = co
        item.rule, item.state = rule, state
        hook_on(state, co)
        local tag, a, b = guarded(state, rule, view, ctx)
        hook_off(co)
        -- (after the item's last rule the hook comes off now: what follows runs at full speed)
        if i == n then release(item) end
        item.rule, item.state = nil, nil
        if not settle(item, i, rule, state, tag, a, b) or item.raced then break end
    end
    item.done = true
end

-- Under nginx: may a wait be pending in a coroutine the rule created (one not dead)? Then its
-- light thread is not killed: `ngx.thread.kill` cancels only the killed thread's own pending
-- wait (lua-nginx-module 0.10.23), not one inside a coroutine it resumed, and the request's
-- end does not either; that wait's timer (or cosocket event) lives in the request's pool,
-- freed while still in nginx's timer tree, and the worker later dies of signal 11 when it
-- adds a timer of its own. OpenResty's `coroutine.status` says "running" of a coroutine
-- waiting on such an operation (and "normal" of one that resumed it); one merely suspended
-- (a generator the rule left) waits on nothing, and the thread is killed as usual.
local function waits_in_child(state)
    for c, st in pairs(children) do
        if st == state then
            local s = co_status(c)
            if s == "running" or s == "normal" then return true end
        end
    end
    return false
end

-- Under nginx: the item's rules in one light thread (a new one after a rule that waited),
-- raced against a timer thread while a rule waits. Returns false when light threads are not
-- allowed here (nothing ran).
local function run_rules_light_thread(list, value, ctx, budget, item)
    -- (light threads are allowed where a request may yield: rewrite, access, content, timer,
    -- ssl_cert, ssl_session_fetch, ssl_client_hello, preread; elsewhere `spawn` refuses)
    local spawn, wait, kill = NGX.thread.spawn, NGX.thread.wait, NGX.thread.kill
    while item.next <= #list and not item.err do
        item.done, item.raced = false, false
        -- (the hook kept from one rule to the next, only while spawn runs the thread: other
        -- requests run while it waits; one rule needs no holding)
        local several = item.next < #list
        if several then hold(item) end
        local ok, th = pcall(spawn, item_thread_body, list, value, ctx, budget, item)
        if several then release(item) end
        if not ok then
            if item.next == 1 then return false end -- the caller runs them in plain coroutines
            run_rules_coroutine(list, value, ctx, budget, item)
            return true
        end
        -- spawn runs the thread until it first waits: rules that never wait are all done
        -- here, each within its budget's hook, and need no timer
        -- (a thread that ended inside spawn, without an error, is not waited on: a dead light
        -- thread nobody waits on is let go with its request)
        local wok, e = true, nil
        if not item.done then
            item.raced = true
            local rule, state = item.rule, item.state
            local tag
            if state then
                local left = state.deadline - clock()
                local timer = spawn(function()
                    if left > 0 then NGX.sleep(left) end
                    return "timer"
                end)
                wok, tag = wait(th, timer)
                if tag == "timer" and waits_in_child(state) then
                    -- not killed (see waits_in_child): over budget, the rule ends at its first
                    -- instruction once that wait returns, and the thread says so itself
                    over(state, "ms")
                    wok, tag = wait(th)
                else
                    kill(tag == "timer" and th or timer)
                end
                hook_off(state.co) -- (a no-op when the thread let go itself)
                if tag == "timer" then state.over = state.over or "ms" end
            else
                wok, tag = wait(th) -- (died outside a rule: the copy raised)
            end
            if state and not item.done then
                -- cut off or died within its rule: that rule's outcome is this, and nothing of
                -- the rule's is read when it went over budget
                local _, err
                if state.over then
                    _, err = end_rule(rule, item, state, "over")
                elseif not wok then
                    _, err = end_rule(rule, item, state, "raised", secrets.describe(tag), is_stack_overflow(tag))
                else
                    _, err = end_rule(rule, item, state, "bad", "ended without a verdict")
                end
                item.err = err
                return true
            end
            e = tag
        end
        if not wok then error(e, 0) end -- (the copy raised: as outside nginx)
    end
    return true
end

--- Run the rules on a schema-valid value, each on its own copy, under the budgets.
-- @tparam table list rules from `normalize`
-- @param value the schema-valid value (never changed, never handed to a rule)
-- @param ctx passed to every rule as its second argument
-- @tparam table budget the merged contract budget from `normalize`
-- @tparam[opt] function send `function(req) -> res | nil, err`: where a rule's `batch.send`
--   goes when the rules run outside a batch scheduler (the run's transport; default the one
--   `jsoncontract.transport.default` picks)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err, category "rules": kind `rule_failed` (`errors` lists each failure;
--   `retry` false when a failing rule has `retry = false`), `rule_error` (a rule raised,
--   yielded, or returned something that is not a verdict; `rule` names it) or
--   `rule_timeout` (a rule ran over its steps or wall time, or out of stack; `rule`
--   names it and `limit` says which: "steps", "ms" or "stack"), `rule_memory` (a rule grew
--   the heap past its `mb`; `limit` "memory") or `rule_interrupted` (`set_interrupt` said stop;
--   `limit` "interrupt", `signal` the reason). The last four are never retried; their
--   `errors` hold what the rules before the one that broke found. An error item that counts
--   the rest of one rule's list ("and N more errors from rule R") has `more = N`.
function _M.run(list, value, ctx, budget, send)
    if #list == 0 then return true end -- no rules: no copy, no clock, no coroutine (per request in nginx)
    budget = budget or _M.DEFAULT_BUDGET
    -- (at most 8 fields while its rules pass, as `begin_rule`'s state)
    local item = { steps_left = budget.item_steps, deadline = clock() + budget.item_ms / 1000, next = 1,
        send = send, done = false, raced = false, rule = false, state = false }
    -- (under nginx where light threads are not allowed `spawn` refuses and nothing ran: one
    -- failed call there, instead of asking every request for its phase)
    if not (NGX and NGX.thread and run_rules_light_thread(list, value, ctx, budget, item)) then
        run_rules_coroutine(list, value, ctx, budget, item)
    end
    if item.err then
        -- Rules that failed before the one that broke keep their errors: the verdict stays the
        -- broken rule's (a person looks), and that person sees what the earlier rules found.
        if item.all and type(item.err.errors) == "table" then
            for _, e in ipairs(item.all) do item.err.errors[#item.err.errors + 1] = e end
        end
        return nil, item.err
    end
    local all = item.all
    if all == nil or #all == 0 then return true end
    local msgs = {}
    for i, e in ipairs(all) do
        msgs[i] = (e.pointer ~= "" and (secrets.elide(e.pointer, 120) .. ": ") or "") .. e.message
    end
    return nil, errors.new("rules", "rule_failed", secrets.elide(concat(msgs, "; "), MAX_JOINED),
        { errors = all, retry = not item.no_retry })
end

return _M
