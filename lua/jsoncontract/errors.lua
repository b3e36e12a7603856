--- Error values shared by the Lua layers (see DESIGN.md "Errors").
-- Every err table carries the metatable of `jsoncontract.core` (`core.error_mt`),
-- whose `__tostring` renders `category/kind: message`, so errors made in C and in
-- Lua look and print the same.
-- @module jsoncontract.errors
local core = require "jsoncontract.core"

local setmetatable, pairs, getmetatable, type = setmetatable, pairs, getmetatable, type
local find, sub, concat = string.find, string.sub, table.concat

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

--- Replace every occurrence of a secret (an API key) in a text by "[redacted]".
-- The one redaction used by the attempt loop, the evidence writer and the CLI.
-- @param text any value; only strings are changed
-- @tparam string|nil secret plain bytes, not a pattern; nil or shorter than 4 bytes: no change
-- @return the text without the secret (other values as given)
function _M.redact(text, secret)
    if type(text) ~= "string" or type(secret) ~= "string" or #secret < 4 then return text end
    local i, j = find(text, secret, 1, true)
    if not i then return text end
    local parts, from = {}, 1
    while i do
        parts[#parts + 1] = sub(text, from, i - 1)
        parts[#parts + 1] = "[redacted]"
        from = j + 1
        i, j = find(text, secret, from, true)
    end
    parts[#parts + 1] = sub(text, from)
    return concat(parts)
end

--- Is `v` an err table (made here or by the C core)?
-- @param v any value
-- @treturn boolean
function _M.is_error(v)
    return type(v) == "table" and getmetatable(v) == core.error_mt
end

return _M
