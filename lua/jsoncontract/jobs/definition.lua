--- A job module: one Lua file (or table) saying what a batch job is, so the batch layer knows
-- no example.
--
--    return {
--      contract = jc.contract { ... },            -- required
--      item = function(record) return { id = ..., text = ..., ... } end,   -- optional
--      context = function(job) return ctx, close end,   -- or false: the rules read nothing
--    }
--
-- `item(record)` maps one decoded input line (a JSON value of any shape) to the item the model
-- reads: a table with `text` (string, what is sent) and `id` (string, the item's name; nil: the
-- line's number names it); other fields are kept with the item. It returns nil and a reason for a
-- record it cannot map. Without `item`, a record is an object with a string `text` and an
-- optional string `id`.
--
-- `context(job)` opens what the rules read (a database, a catalog, an API client) once per run
-- or worker; `job` is `{id = job id or nil, dir = the job's folder or nil, module = the module's
-- path or nil}`. It returns the context table and, optionally, a function closing it, called when
-- the run ends; it raises or returns nil and a message when it cannot open. A contract with rules
-- and no `context` is refused everywhere (fail closed): `context = false` says the rules need none.
-- @module jsoncontract.jobs.definition
local core = require "jsoncontract.core"

local type, pcall, tostring, ipairs, pairs = type, pcall, tostring, ipairs, pairs
local format, concat = string.format, table.concat

local _M = { _VERSION = core._VERSION }

--- The names of a contract's rules, in order (empty when it has none).
-- @tparam table contract a compiled contract
-- @treturn {string,...}
function _M.rule_names(contract)
    local names = {}
    for i, r in ipairs(type(contract) == "table" and contract.rules or {}) do
        names[i] = type(r) == "table" and r.name or ("rule" .. i)
    end
    return names
end

--- Why a contract cannot run where its rules get no context, or nil when it can (no rules).
-- @tparam table contract compiled contract
-- @tparam string where who would run it without one (e.g. "the job module x.lua")
-- @tparam[opt] string signature how that one takes a context (default a job module's
--   "function(job)")
-- @treturn string|nil message naming the rules and the missing context
function _M.missing_context(contract, where, signature)
    local names = _M.rule_names(contract)
    if #names == 0 then return nil end
    return format("the contract %s %s has rules (%s) and %s gives them no context: the rules would run "
        .. "without their data. Give `context = %s return ctx end` (what the rules read), or "
        .. "`context = false` when the rules need none", tostring(contract.name), tostring(contract.version),
        concat(names, ", "), where, signature or "function(job)")
end

local function is_contract(c)
    return type(c) == "table" and type(c.check) == "function" and type(c.identity) == "function"
end

--- Load and check a job module.
-- @param source a path to a Lua file returning the module, or the module table itself
-- @treturn[1] table the job: `contract`, `item` (function or nil), `context` (function, false, or
--   nil when the contract has no rules), `path` (absolute path or nil), `module` (the table, with
--   whatever else it holds: `policy`, `adapters`, ...)
-- @return[2] nil
-- @treturn[2] string message (cannot load, no contract, a mistyped field, rules without context)
function _M.load(source)
    local mod, path = source, nil
    if type(source) == "string" then
        if source:match("%.json$") then
            return nil, "cannot load job " .. source .. ": a job module is a Lua file returning {contract = ...} "
                .. "(a JSON Schema alone has no instructions or rules; lint and diff take one)"
        end
        path = source
        -- in the rules' sandbox, as every command loads a contract file (`context` stays host code)
        local m, lerr = require("jsoncontract.setup").load_contract(source)
        if not m then
            local why = tostring(lerr)
            local prefix = "cannot load contract " .. source .. ": "
            if why:sub(1, #prefix) == prefix then why = why:sub(#prefix + 1) end
            return nil, "cannot load job " .. source .. ": " .. why
        end
        mod = m
    end
    local name = path or "the job table"
    if type(mod) ~= "table" then return nil, name .. " must return a table with a 'contract' field" end
    if not is_contract(mod.contract) then
        return nil, name .. " must return a table with a 'contract' field (a jc.contract)"
    end
    if mod.item ~= nil and type(mod.item) ~= "function" then
        return nil, format("%s: 'item' must be a function(record) returning {id =, text =, ...}, not a %s", name,
            type(mod.item))
    end
    if mod.context ~= nil and mod.context ~= false and type(mod.context) ~= "function" then
        return nil, format("%s: 'context' must be a function(job) returning the rules' context, or false, not a %s",
            name, type(mod.context))
    end
    if mod.context == nil then
        local why = _M.missing_context(mod.contract, "the job module " .. name)
        if why then return nil, why end
    end
    return { contract = mod.contract, item = mod.item, context = mod.context, path = path, module = mod }
end

local function default_item(record)
    if type(record) ~= "table" or type(record.text) ~= "string" then return nil, "has no string field 'text'" end
    return record
end

--- The item the model reads for one decoded input record.
-- @tparam table job from `load`
-- @param record the decoded line
-- @treturn[1] table item `{id = string|nil, text = string, ...}` (a new table; the record is not changed)
-- @return[2] nil
-- @treturn[2] string why (the job's own words, or what is wrong with what it returned)
function _M.item(job, record)
    local fn = job.item or default_item
    local ok, it, why = pcall(fn, record)
    if not ok then return nil, "item(record) failed: " .. tostring(it) end
    if it == nil then return nil, tostring(why or "item(record) returned nothing") end
    if type(it) ~= "table" then return nil, "item(record) returned a " .. type(it) .. ", not a table" end
    if type(it.text) ~= "string" then return nil, job.item and "item(record) gave no string 'text'" or why end
    if it.id ~= nil and type(it.id) ~= "string" then
        return nil, format("item(record) gave an id of type %s; an id is a string (e.g. tostring(record.n))",
            it.id == core.null and "null" or type(it.id))
    end
    local copy = {}
    for k, v in pairs(it) do copy[k] = v end
    return copy
end

--- Open the job's context for one run or worker.
-- @tparam table job from `load`
-- @tparam table info `{id =, dir =, module =}` given to `context(job)`
-- @treturn[1] table|false ctx (false when the job takes none: `context = false` or no rules)
-- @treturn[1] function close (always a function; closes the context, idempotent)
-- @return[2] nil
-- @treturn[2] string message ("cannot open the context of ...: ...")
function _M.open_context(job, info)
    local function nothing() end
    if not job.context then return false, nothing end
    local ok, ctx, close = pcall(job.context, info or {})
    local name = job.path or "the job"
    if not ok then return nil, format("cannot open the context of %s: %s", name, tostring(ctx)), true end
    if type(ctx) ~= "table" then
        return nil, format("cannot open the context of %s: %s", name,
            ctx == nil and tostring(close or "context(job) returned nothing") or
            ("context(job) returned a " .. type(ctx) .. ", not a table"))
    end
    if close ~= nil and type(close) ~= "function" then
        return nil, format("cannot open the context of %s: its second value must be a close function, not a %s",
            name, type(close))
    end
    local closed = false
    return ctx, function()
        if closed or not close then return end
        closed = true
        pcall(close)
    end
end

--- The rules' context for a reader of a job after its run (the review desk, replay): what the
-- module's `replay_context` finds in the job's folder (support_ticket: the orders table the run
-- left there), else the module's own `context` opened afresh (without a folder: nothing is
-- written into the job's).
-- @tparam table job from `load`
-- @tparam[opt] string dir the job's folder
-- @tparam[opt] string root the install root (`replay_context` takes it)
-- @treturn[1] table|false ctx (false: the job takes none)
-- @treturn[1] function close
-- @return[2] nil
-- @treturn[2] string message
function _M.reader_context(job, dir, root)
    local replay = job.module and job.module.replay_context
    if type(replay) == "function" and dir then
        local ok, ctx = pcall(replay, { evidence_dir = dir, root = root })
        if ok and type(ctx) == "table" then return ctx, function() end end
    end
    return _M.open_context(job, { module = job.path })
end

return _M
