--- Named, narrow adapters between the protocol gate and the format gate (DESIGN.md).
-- Each is off by default, is applied only when the caller names it, and is recorded
-- in the result when it changed the text. None of them searches for JSON inside prose:
-- there is no "cut from the first { to the last }" anywhere.
-- @module jsoncontract.contract.adapters
local core = require "jsoncontract.core"
local errors = require "jsoncontract.errors"

local type = type
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
        return nil, "the code fence does not cover the whole content (text before or after it)"
    end
    if find(body, "```", 1, true) then
        return nil, "more than one code fence"
    end
    return body, true
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
        return nil, "unclosed <think> block"
    end
    if find(sub(text, s + 7, close_s - 1), "<think>", 1, true) then
        return nil, "nested <think> block"
    end
    return (match(sub(text, close_e + 1), "^%s*(.*)$")), true
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
-- @treturn[1] string the text after the adapters
-- @treturn[1] {string,...} the names of the adapters that changed the text
-- @return[2] nil
-- @treturn[2] table err, category "format", kind "adapter_rejected"
-- @raise on an unknown adapter name
function _M.apply(text, names)
    local applied = setmetatable({}, core.array_mt)
    for i = 1, #names do
        local name = names[i]
        local adapter = ADAPTERS[name]
        if not adapter then
            error("unknown adapter '" .. tostring(name) .. "' (known: " .. table.concat(_M.names, ", ") .. ")", 2)
        end
        local out, changed = adapter(text)
        if not out then
            return nil, errors.new("format", "adapter_rejected",
                name .. ": " .. changed .. "; return only one JSON value", { adapter = name })
        end
        if changed then
            applied[#applied + 1] = name
        end
        text = out
    end
    return text, applied
end

return _M
