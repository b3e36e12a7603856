--- jsoncontract: make a language model's structured output safe to hand to code.
-- The public surface (docs/api.md). Data that fails a gate comes back as `nil, err`
-- (err.category, err.kind, err.message, ...); misuse raises.
-- @module jsoncontract
local core = require "jsoncontract.core"
local contract = require "jsoncontract.contract"
local run = require "jsoncontract.run"

local type, error, ipairs, getmetatable, setmetatable, tostring =
    type, error, ipairs, getmetatable, setmetatable, tostring

local _M = {
    _VERSION = core._VERSION,
    --- JSON null (a light userdata; equal to lua-cjson's `cjson.null`).
    null = core.null,
    --- Metatable that marks a table as a JSON array; decoded arrays carry it.
    array_mt = core.array_mt,
}

--- The format gate alone: strict RFC 8259 decode of exactly one JSON value.
-- @function decode
-- @tparam string text
-- @tparam[opt] table opts `max_depth` (default 1000), `max_bytes` (default 64 MiB)
-- @return[1] the value (objects: tables; arrays: tables with `array_mt`; null: `jsoncontract.null`)
-- @return[2] nil
-- @treturn[2] table err, category "format", with `kind`, `offset` (0-based bytes), `line`, `column`
_M.decode = core.decode

--- Encode a Lua value as compact JSON (object keys sorted, or in the order of an object's
-- `__order` metatable field: see `ordered`).
-- @function encode
-- @param value
-- @tparam[opt] table opts `indent` (spaces), `keep_order` (boolean, default true; false:
--   byte order of the names everywhere, `__order` ignored), `max_depth`
-- @treturn string
-- @raise on values JSON cannot hold (functions, NaN, cycles, mixed tables)
_M.encode = core.encode

--- State the order of an object's members: `encode` writes the names listed in `order`
-- first, in that order, then any other names in byte order. Property order is meaning to a
-- model provider (a model generates an object's members in the order its schema lists them,
-- e.g. "reasoning" before "answer"), and a Lua table has no order of its own. Sets the
-- metatable `{__order = order}` on `tbl` (a copy of `order`); a table decoded with
-- `decode(text, {keep_order = true})` carries the same field.
-- @tparam table tbl an object (a table with string keys, not marked as an array)
-- @tparam table order array of names (strings); names that are not keys of `tbl` are skipped
--   when encoding
-- @treturn table `tbl`
-- @raise when `tbl` is not a table, is marked as an array or has another metatable, or when
--   `order` is not an array of strings
-- @usage local schema = jc.ordered({ type = "object", properties = jc.ordered({
--   reasoning = { type = "string" }, answer = { type = "string" } }, { "reasoning", "answer" }) },
--   { "type", "properties" })
function _M.ordered(tbl, order)
    if type(tbl) ~= "table" then error("ordered: tbl must be a table, got " .. type(tbl), 2) end
    local old = getmetatable(tbl)
    if old == core.array_mt then error("ordered: tbl is marked as a JSON array", 2) end
    if old ~= nil and (type(old) ~= "table" or old.__order == nil) then
        error("ordered: tbl already has a metatable", 2)
    end
    if type(order) ~= "table" then error("ordered: order must be an array of names, got " .. type(order), 2) end
    local copy = {}
    for i, name in ipairs(order) do
        if type(name) ~= "string" then
            error("ordered: order[" .. i .. "] must be a string, got " .. tostring(type(name)), 2)
        end
        copy[i] = name
    end
    return setmetatable(tbl, { __order = copy })
end

--- Compile a JSON Schema.
-- @tparam table|string|boolean schema a schema as a Lua table or as JSON text (read as
-- written: integers beyond 2^53 in bounds, `const` and `enum` stay exact on LuaJIT too)
-- @tparam[opt] table opts `draft` ("2020-12" default, "draft7", "draft4"; a known
-- `$schema` in the schema wins), `loader` (function(uri) -> schema | nil, err, called at
-- compile time for references outside the schema), `format_assertion` (boolean, default
-- false), `max_depth`
-- @treturn userdata validator with `validator:validate(value) -> true | nil, err`
-- @raise when the schema is not a schema (the message names the schema pointer)
function _M.compile(schema, opts)
    if type(schema) == "string" then
        -- the text itself: its numbers are kept as written (exact beyond 2^53 on LuaJIT)
        local ok, validator = pcall(core.compile, schema, opts)
        if not ok then error(validator, 2) end
        return validator
    end
    return core.compile(schema, opts)
end

--- Define a contract; see `jsoncontract.contract.new`.
-- @function contract
_M.contract = contract.new

--- Load a contract file (or any Lua file that defines rules) in the rules' sandbox, so that the
-- rules it defines, closures included, run without access to the host; see
-- `jsoncontract.contract.rules.load_file` (a file that says `trusted = true` is loaded as
-- plain Lua).
-- @function load_contract
-- @tparam string path
-- @return[1] what the file returns
-- @return[2] nil
-- @treturn[2] string message
_M.load_contract = function(path)
    return require("jsoncontract.contract.rules").load_file(path)
end

--- The attempt loop; see `jsoncontract.run.ask`.
-- @function ask
_M.ask = run.ask

--- A batch job of a job module over a JSONL input, run from a script through the same code as
-- `jsoncontract run`; see `jsoncontract.job.new` (loaded on first use: the batch layer needs the
-- store drivers).
-- @param module a job module's path or table
-- @tparam table opts `input`, `out`, `store`, ...
-- @treturn[1] table job (`:run`, `:resume`, `:status`, `:export`)
-- @return[2] nil
-- @treturn[2] string message
function _M.job(module, opts)
    return require("jsoncontract.job").new(module, opts)
end

return _M
