--- Error values shared by the Lua layers (see DESIGN.md "Errors").
-- There is one err constructor, `new`. Every err table carries the metatable of
-- `jsoncontract.core` (`core.error_mt`), so errors made in C and in Lua look and print the
-- same: `__tostring` renders `category/kind: message`, and `__concat` (set by the C core on
-- that shared metatable, so it works where only `jsoncontract.core` is loaded) lets
-- `"failed: " .. err` and `err .. "\n"` build text instead of raising. Under OpenResty write
-- `ngx.say(tostring(err))`: `ngx.say` takes strings and arrays of strings only, never an
-- object with a `__tostring`.
-- @module jsoncontract.errors
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"
local secrets = require "jsoncontract.secrets"

local setmetatable, pairs, getmetatable, type, tostring = setmetatable, pairs, getmetatable, type, tostring
local find, gsub = string.find, string.gsub

local _M = { _VERSION = core._VERSION }

local ERROR_MT = core.error_mt

--- The metatable every err table carries (the C core's `error_mt`).
_M.mt = ERROR_MT

--- Make an err table.
-- @tparam string category one of DESIGN.md's categories (transport, protocol, refused,
--   truncated, filtered, format, schema, rules, budget)
-- @tparam string kind stable snake_case identifier (see README's table)
-- @tparam string message short text, fit to be sent back to a model
-- @tparam[opt] table fields extra fields copied in (errors, pointer, status, ...)
-- @treturn table err
-- @usage local err = errors.new("budget", "time_budget", "30000 ms spent")
function _M.new(category, kind, message, fields)
    local err = { category = category, kind = kind, message = message }
    if fields then
        for k, v in pairs(fields) do err[k] = v end
    end
    return setmetatable(err, ERROR_MT)
end

--- Is `v` an err table (made here or by the C core)?
-- @param v any value
-- @treturn boolean
function _M.is(v)
    return type(v) == "table" and getmetatable(v) == ERROR_MT
end
--- Old name of `is`, kept for callers.
_M.is_error = _M.is

--- Alias of `jsoncontract.secrets.redact` (the one redaction: the key in plain bytes and in
-- every escaped or percent-encoded spelling), kept for callers of the old name.
-- @param text any value; only strings are changed
-- @tparam string|table|nil secret plain bytes (not a pattern) or a list of them
-- @return the text without the secret
function _M.redact(text, secret)
    return secrets.redact(text, secret)
end

--- Mask what looks like a credential in text a provider sent back (error messages may echo
-- the key or the Authorization header, e.g. "Incorrect API key provided: sk-abc...").
-- Masked: "Bearer <token>", "sk-..." (OpenAI, Anthropic "sk-ant-..."), "AIza..." (Google), and
-- any run of 24 or more letters, digits, "-" and "_" that mixes letters and digits.
-- @tparam string s
-- @treturn string
function _M.scrub(s)
    s = gsub(s, "([Bb]earer)%s+%S+", "%1 [redacted]")
    s = gsub(s, "sk%-[%w%-_%*%.]+", "sk-[redacted]")
    s = gsub(s, "AIza[%w%-_]+", "AIza[redacted]")
    s = gsub(s, "[%w%-_]+", function(w)
        if #w >= 24 and find(w, "%d") and find(w, "%a") then return "[redacted]" end
        return nil
    end)
    return s
end

--- Longest foreign text (a provider's message, a body) copied into an err message, in bytes.
_M.MAX_DETAIL = 300

--- Foreign text made fit for an err message: control characters replaced by a space,
-- credentials masked (`scrub`) and cut to `max` bytes at a UTF-8 boundary (`json.clip`).
-- @param s any value (converted with tostring)
-- @tparam[opt] integer max bytes (default `MAX_DETAIL`)
-- @treturn string
function _M.snippet(s, max)
    return json.clip(_M.scrub((gsub(tostring(s), "[%c]+", " "))), max or _M.MAX_DETAIL)
end

return _M
