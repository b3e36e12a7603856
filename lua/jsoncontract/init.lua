--- jsoncontract: make a language model's structured output safe to hand to code.
-- The public surface of DESIGN.md. Data that fails a gate comes back as `nil, err`
-- (err.category, err.kind, err.message, ...); misuse raises.
-- @module jsoncontract
local core = require "jsoncontract.core"
local contract = require "jsoncontract.contract"
local run = require "jsoncontract.run"

local type, error = type, error

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

--- Encode a Lua value as compact JSON (object keys sorted).
-- @function encode
-- @param value
-- @tparam[opt] table opts `indent` (spaces)
-- @treturn string
-- @raise on values JSON cannot hold (functions, NaN, cycles, mixed tables)
_M.encode = core.encode

--- Compile a JSON Schema.
-- @tparam table|string|boolean schema a schema as a Lua table or as JSON text
-- @tparam[opt] table opts `draft` ("2020-12" default, "draft7", "draft4"; a known
-- `$schema` in the schema wins), `loader` (function(uri) -> schema | nil, err, called at
-- compile time for references outside the schema), `format_assertion` (boolean, default
-- false), `max_depth`
-- @treturn userdata validator with `validator:validate(value) -> true | nil, err`
-- @raise when the schema is not a schema (the message names the schema pointer)
function _M.compile(schema, opts)
    if type(schema) == "string" then
        local v, err = core.decode(schema)
        if v == nil then error("schema is not JSON: " .. err.message, 2) end
        schema = v
    end
    return core.compile(schema, opts)
end

--- Define a contract; see `jsoncontract.contract.new`.
-- @function contract
_M.contract = contract.new

--- The attempt loop; see `jsoncontract.run.ask`.
-- @function ask
_M.ask = run.ask

return _M
