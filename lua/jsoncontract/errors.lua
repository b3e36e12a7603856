--- Error values shared by the Lua layers (see DESIGN.md "Errors").
-- Every err table carries the metatable of `jsoncontract.core` (`core.error_mt`),
-- whose `__tostring` renders `category/kind: message`, so errors made in C and in
-- Lua look and print the same.
-- @module jsoncontract.errors
local core = require "jsoncontract.core"

local setmetatable, pairs, getmetatable, type = setmetatable, pairs, getmetatable, type

local _M = { _VERSION = core._VERSION }

--- Make an err table.
-- @tparam string category one of DESIGN.md's categories (transport, protocol, refused,
--   truncated, filtered, format, schema, rules, budget)
-- @tparam string kind stable snake_case identifier (see README's table)
-- @tparam string message short text, fit to be sent back to a model
-- @tparam[opt] table fields extra fields copied in (errors, pointer, status, ...)
-- @treturn table err
function _M.new(category, kind, message, fields)
    local err = { category = category, kind = kind, message = message }
    if fields then
        for k, v in pairs(fields) do err[k] = v end
    end
    return setmetatable(err, core.error_mt)
end

--- Alias of `jsoncontract.secrets.redact` (the one redaction: the key in plain bytes and in
-- every escaped or percent-encoded spelling), kept for callers of the old name.
-- @param text any value; only strings are changed
-- @tparam string|table|nil secret
-- @return the text without the secret
function _M.redact(text, secret)
    return require("jsoncontract.secrets").redact(text, secret)
end

--- Is `v` an err table (made here or by the C core)?
-- @param v any value
-- @treturn boolean
function _M.is_error(v)
    return type(v) == "table" and getmetatable(v) == core.error_mt
end

return _M
