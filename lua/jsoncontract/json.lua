--- JSON helpers shared by every room: JSON Pointer tokens (RFC 6901), the array/object test
-- the C encoder uses, and the one UTF-8-safe clip for text shown in messages.
-- @module jsoncontract.json
local core = require "jsoncontract.core"
local utf8 = require "jsoncontract.utf8"

local type, pairs, getmetatable, setmetatable, tostring, tonumber, next =
    type, pairs, getmetatable, setmetatable, tostring, tonumber, next
local gsub, gmatch = string.gsub, string.gmatch
local ipairs, sort = ipairs, table.sort

local ARRAY_MT = core.array_mt

local _M = { _VERSION = core._VERSION }

--- Escape one reference token for a JSON Pointer: "~" as "~0", "/" as "~1" (RFC 6901 §3).
-- @param token string or number (numbers are written as they are)
-- @treturn string
function _M.escape_token(token)
    return (gsub(gsub(tostring(token), "~", "~0"), "/", "~1"))
end

--- Undo `escape_token` ("~1" first, then "~0", RFC 6901 §4).
-- @tparam string token
-- @treturn string
function _M.unescape_token(token)
    return (gsub(gsub(token, "~1", "/"), "~0", "~"))
end

--- A JSON Pointer one step below `pointer`.
-- @tparam string pointer "" for the root
-- @param token a property name or an array index (0-based)
-- @treturn string
-- @usage json.join("/items", 0) --> "/items/0"
function _M.join(pointer, token)
    return pointer .. "/" .. _M.escape_token(token)
end

--- Is `v` a JSON array as decoded or built in Lua: a table with `core.array_mt`, or with
-- keys exactly 1..n (n >= 1)? The same rule as the C encoder's.
-- @param v any value
-- @treturn boolean
function _M.is_array(v)
    if type(v) ~= "table" then return false end
    if getmetatable(v) == ARRAY_MT then return true end
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    return n > 0 and n == #v
end

--- Is `v` a JSON object: a table that is not an array (an empty unmarked table is `{}`)?
-- @param v any value
-- @treturn boolean
function _M.is_object(v)
    return type(v) == "table" and getmetatable(v) ~= ARRAY_MT and (next(v) == nil or not _M.is_array(v))
end

--- A new empty table marked as a JSON array, so it encodes as `[]`.
-- @treturn table
function _M.new_array()
    return setmetatable({}, ARRAY_MT)
end

--- Deep copy of a decoded JSON value; keeps the array marker and an object's member order
-- (a metatable with `__order`, see `jc.ordered` and decode's `keep_order`; the metatable is
-- shared, it is read-only), shares no value.
-- @param v any JSON value
-- @return the copy
function _M.deepcopy(v)
    if type(v) ~= "table" then return v end
    local out = {}
    for k, x in pairs(v) do out[k] = _M.deepcopy(x) end
    local m = getmetatable(v)
    if m == ARRAY_MT or (type(m) == "table" and type(m.__order) == "table") then setmetatable(out, m) end
    return out
end

--- The value at a JSON Pointer inside a decoded value (nil when absent).
-- @param root a decoded JSON value
-- @tparam string pointer e.g. "/items/0/name"
-- @return the value or nil
function _M.at(root, pointer)
    local v = root
    for token in gmatch(pointer, "/([^/]*)") do
        if type(v) ~= "table" then return nil end
        local key = _M.unescape_token(token)
        if getmetatable(v) == ARRAY_MT then key = (tonumber(key) or -1) + 1 end
        v = v[key]
    end
    return v
end

--- Cut `text` to at most `max` bytes at a UTF-8 character boundary, adding "..." when cut.
-- The one clip for text shown in messages and feedback.
-- @param text any value (converted with tostring)
-- @tparam integer max bytes kept before the "..."
-- @treturn string
function _M.clip(text, max)
    text = tostring(text)
    if #text <= max then return text end
    return utf8.cut(text, max) .. "..."
end

--- An object schema's property names in a stable order: the author's when the schema keeps it
-- (an `__order` metatable field on `properties`, as decode's keep_order and jc.ordered give),
-- else `required` first in its order, then the rest sorted. The prompt lists fields, the
-- grammar writes members and the validator reports errors in this order.
-- @tparam table schema an object schema (a non-table `properties` gives no names)
-- @treturn {string,...} names that have a schema under `properties`
function _M.property_order(schema)
    local props = schema.properties
    if type(props) ~= "table" then return {} end
    local seen, order = {}, {}
    local function take(names)
        for _, name in ipairs(names) do
            if type(name) == "string" and props[name] ~= nil and not seen[name] then
                seen[name] = true
                order[#order + 1] = name
            end
        end
    end
    local pmt = getmetatable(props)
    if type(pmt) == "table" and type(pmt.__order) == "table" then take(pmt.__order) end
    if type(schema.required) == "table" then take(schema.required) end
    local rest = {}
    for name in pairs(props) do
        if type(name) == "string" and not seen[name] then rest[#rest + 1] = name end
    end
    sort(rest)
    take(rest)
    return order
end

return _M
