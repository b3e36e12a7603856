--- Error values shared by the Lua layers (docs/design.md "Outcome categories and error kinds").
--
-- There is one err constructor, in the C core (`jc_error_end` in csrc/error.c; `core.error`
-- from Lua, which `new` here calls), so errors made in C and in Lua have one shape:
--
-- * the err table itself holds one array element, `err[1] = "category/kind: message"`, so
--   `ngx.say(err)` and `ngx.print(err)` (which read a table raw, as an array of strings) print
--   what `tostring(err)` gives;
-- * the named fields (`category`, `kind`, `message`, `errors`, `pointer`, `status`, ...) live in
--   a plain table reached through the err's own metatable: `err.kind` reads it, `err.foo = 1`
--   writes it (and a new `category`, `kind` or `message` renders `err[1]` again);
-- * `__tostring` gives `err[1]`; `__concat` lets `"failed: " .. err` and `err .. "\n"` build
--   text; `__pairs` walks the fields on Lua 5.2+. LuaJIT and Lua 5.1 ignore `__pairs`: code that
--   walks or copies an err on any VM uses `fields(err)`. `core.encode` writes an err as the
--   object of its fields.
-- @module jsoncontract.errors
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"
local secrets = require "jsoncontract.secrets"

local pairs, getmetatable, type, tostring = pairs, getmetatable, type, tostring
local gsub = string.gsub
local make, fields_of = core.error, core.error_fields

local _M = { _VERSION = core._VERSION }

local ERROR_MT = core.error_mt

--- The metatable of every err's own metatable (the C core's `error_mt`): how an err is known.
_M.mt = ERROR_MT

--- Make an err.
-- @tparam string category one of the categories (transport, protocol, refused,
--   truncated, filtered, format, schema, rules, budget)
-- @tparam string kind stable snake_case identifier (see docs/design.md's table)
-- @tparam string message short text, fit to be sent back to a model
-- @tparam[opt] table fields extra fields copied in (errors, pointer, status, ...); an err
--   given here gives its fields
-- @treturn table err
-- @usage local err = errors.new("budget", "time_budget", "30000 ms spent")
function _M.new(category, kind, message, fields)
    local f = {}
    if fields then
        for k, v in pairs(fields_of(fields) or fields) do f[k] = v end
    end
    f.category, f.kind, f.message = category, kind, message
    return make(f)
end

--- Is `v` an err (made here or by the C core)?
-- @param v any value
-- @treturn boolean
function _M.is(v)
    return type(v) == "table" and getmetatable(getmetatable(v)) == ERROR_MT
end

--- The plain table of an err's named fields (the table itself, not a copy), for code that
-- walks, copies or encodes an err on any Lua. Set fields through the err (`err.x = v`), so
-- `tostring(err)` and `ngx.say(err)` follow a new message.
-- @param err an err
-- @treturn[1] table `{category = string, kind = string, message = string, ...}`
-- @return[2] nil when `err` is not an err
function _M.fields(err)
    return fields_of(err)
end

--- Longest foreign text (a provider's message, a body) copied into an err message, in bytes.
_M.MAX_DETAIL = 300

--- Foreign text made fit for an err message: control characters replaced by a space,
-- credentials masked (`jsoncontract.secrets.redact_credentials`) and cut to `max` bytes at a
-- UTF-8 boundary (`json.clip`).
-- @param s any value (converted with tostring)
-- @tparam[opt] integer max bytes (default `MAX_DETAIL`)
-- @treturn string
function _M.snippet(s, max)
    return json.clip(secrets.redact_credentials((gsub(tostring(s), "[%c]+", " "))), max or _M.MAX_DETAIL)
end

return _M
