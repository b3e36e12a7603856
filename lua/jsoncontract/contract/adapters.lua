--- Named, narrow adapters between the protocol gate and the format gate (docs/api.md).
-- Each is off by default, is applied only when the caller names it, and is recorded
-- in the result when it changed the text. None of them searches for JSON inside prose:
-- there is no "cut from the first { to the last }" anywhere.
-- @module jsoncontract.contract.adapters
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"

local type, ipairs = type, ipairs
local find, sub, match = string.find, string.sub, string.match

local _M = { _VERSION = "0.1.0" }

local ADAPTERS = {}

-- A fence is exactly: optional whitespace, ``` with an optional "json" tag, a line
-- break, the body, a line break, ```, optional whitespace. The body must hold no
-- further ``` (two blocks, or text between blocks, are rejected).
ADAPTERS["unwrap-one-json-fence"] = function(text)
    if not find(text, "```", 1, true) then
        return text, false
    end
    -- A reply that is one JSON value already (``` only inside a string) is not fenced.
    if not find(text, "^%s*```") and core.decode(text) ~= nil then
        return text, false
    end
    local body = match(text, "^%s*```[Jj][Ss][Oo][Nn][ \t]*\r?\n(.-)\r?\n```%s*$")
    if not body then
        body = match(text, "^%s*```[ \t]*\r?\n(.-)\r?\n```%s*$")
    end
    if not body then
        -- where: the first text before the fence, else the first after its last ```
        local at = match(text, "^%s*()[^`%s]")
        if not at then
            local last, pos = 1, find(text, "```", 1, true)
            while pos do last = pos; pos = find(text, "```", pos + 3, true) end
            at = match(text, "^```%s*()[^%s]", last) or find(text, "```", 1, true)
        end
        return nil, "the code fence does not cover the whole content (text before or after it)", at - 1
    end
    if find(body, "```", 1, true) then
        -- where the second block opens: the third ``` (the second closes the first block)
        local second = find(text, "```", find(text, "```", 1, true) + 3, true)
        return nil, "more than one code fence", (find(text, "```", second + 3, true) or second) - 1
    end
    -- the body is a substring of the text: where it starts, for positions in the whole reply
    return body, true, (match(text, "^%s*```[^\n]*\n()") or 1) - 1
end

-- Reasoning models may open with one closed <think>...</think> block; only that one
-- block, at the very start, is removed.
ADAPTERS["strip-leading-think-block"] = function(text)
    local s = match(text, "^%s*()<think>")
    if not s then
        return text, false
    end
    local close_s, close_e = find(text, "</think>", s, true)
    if not close_s then
        return nil, "unclosed <think> block", s - 1
    end
    local nested = find(sub(text, s + 7, close_s - 1), "<think>", 1, true)
    if nested then
        return nil, "nested <think> block", s + 6 + nested - 1
    end
    local from = match(text, "^%s*()", close_e + 1)
    return sub(text, from), true, from - 1
end

--- Line and column (1-based; the column counts UTF-8 characters, as core.decode's do) of
-- the 0-based byte offset `off` in `text`.
-- @tparam string text
-- @tparam integer off 0-based byte offset, 0 to #text
-- @treturn integer line
-- @treturn integer column
local function locate(text, off)
    local before = sub(text, 1, off)
    local line, last = 1, 0
    for pos in string.gmatch(before, "()\n") do line = line + 1; last = pos end
    local _, cont = string.gsub(sub(before, last + 1), "[\128-\191]", "")
    return line, off - last - cont + 1
end

--- The names of the known adapters, sorted.
_M.names = { "strip-leading-think-block", "unwrap-one-json-fence" }

--- Is `name` a known adapter? The one check of an adapter name (contracts, the CLI, replay).
-- @param name any value
-- @treturn boolean
function _M.known(name)
    return type(name) == "string" and ADAPTERS[name] ~= nil
end

--- Apply the named adapters, in the order given, to a content string.
-- @tparam string text the content string of a reply
-- @tparam {string,...} names adapter names (see `names`)
-- @treturn[1] string the text after the adapters: a substring of `text`
-- @treturn[1] {string,...} the names of the adapters that changed the text
-- @treturn[1] integer the 0-based byte offset in `text` where the result starts (0 when
--   nothing changed), for positions in the model's own reply (`reposition`)
-- @return[2] nil
-- @treturn[2] table err, category "format", kind "adapter_rejected", with `adapter`, and
--   `offset` (0-based byte), `line` and `column` (1-based) of the rejected text in `text`
-- @raise on an unknown adapter name
function _M.apply(text, names)
    local applied = setmetatable({}, core.array_mt)
    local original, shift = text, 0
    for i = 1, #names do
        local name = names[i]
        local adapter = ADAPTERS[name]
        if not adapter then
            error("unknown adapter '" .. tostring(name) .. "' (known: " .. table.concat(_M.names, ", ") .. ")", 2)
        end
        local out, changed, off = adapter(text)
        if not out then
            off = shift + off
            local line, column = locate(original, off)
            return nil, errors.new("format", "adapter_rejected",
                name .. ": " .. changed .. " at line " .. line .. ", column " .. column
                    .. "; return only one JSON value",
                { adapter = name, offset = off, line = line, column = column })
        end
        if changed then
            applied[#applied + 1] = name
            shift = shift + off
        end
        text = out
    end
    return text, applied, shift
end

--- Move the positions of a format or schema err found in the text `apply` returned into the
-- model's own reply, so that the message sent back names the line the model wrote: `offset`,
-- `line` and `column` of the err and of each of its `errors`, and the "line L, column C" the
-- format gate's message names (core.decode writes it so). Changes `err` in place.
-- @tparam table err an err of core.decode or validator:check on the adapted text
-- @tparam string text the reply before the adapters
-- @tparam integer shift `apply`'s third result
-- @treturn table err
function _M.reposition(err, text, shift)
    if shift == 0 then return err end
    if type(err.offset) == "number" and type(err.line) == "number" then
        local was = "line " .. err.line .. ", column " .. err.column
        err.offset = err.offset + shift
        err.line, err.column = locate(text, err.offset)
        local s, e = find(err.message, was, 1, true)
        if s then
            err.message = sub(err.message, 1, s - 1) .. "line " .. err.line .. ", column " .. err.column
                .. sub(err.message, e + 1)
        end
    end
    for _, item in ipairs(type(err.errors) == "table" and err.errors or {}) do
        if type(item) == "table" and type(item.offset) == "number" then
            item.offset = item.offset + shift
            item.line, item.column = locate(text, item.offset)
        end
    end
    return err
end

return _M
