--- Where each value sits in a model's text: JSON Pointer -> byte span, so the desk can mark
-- the errors' instance locations in the text the model actually wrote. The scan starts at
-- the first `{` or `[` (a fenced or chatty reply still gets its JSON marked), tolerates a
-- cut or broken text (it keeps the spans found before the break) and never raises.
-- @module jsoncontract.review.spans
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"
local html = require "jsoncontract.review.html"

local find, sub, byte = string.find, string.sub, string.byte
local concat, sort = table.concat, table.sort
local ipairs, type = ipairs, type

local _M = { _VERSION = core._VERSION }

-- Values nested deeper than this are not scanned (the decoder's own limit is larger; marks
-- that deep help nobody).
local MAX_DEPTH = 200

local ptr_escape = json.escape_token

-- Decode a JSON string body (between the quotes) well enough to name a key.
local function unquote(s)
    if not find(s, "\\", 1, true) then return s end
    local v = core.decode('"' .. s .. '"')
    return type(v) == "string" and v or s
end

--- Byte spans of every value in `text`.
-- @tparam string text a model's reply
-- @treturn table map JSON Pointer -> `{first, last}` (1-based, inclusive byte positions)
function _M.scan(text)
    local spans = {}
    if type(text) ~= "string" then return spans end
    local pos = find(text, "[%[{]")
    if not pos then return spans end
    local n = #text

    local function ws(i)
        local _, e = find(text, "^[ \t\r\n]*", i)
        return e + 1
    end

    local value -- forward
    local function str(i) -- i at the opening quote; returns the position after the closing one
        local j = i + 1
        while j <= n do
            local c = byte(text, j)
            if c == 34 then return j + 1 end
            if c == 92 then j = j + 2 else j = j + 1 end
        end
        return nil
    end

    function value(i, ptr, depth)
        i = ws(i)
        if i > n or depth > MAX_DEPTH then return nil end
        local c = sub(text, i, i)
        local stop
        if c == "{" then
            local j = ws(i + 1)
            if sub(text, j, j) == "}" then
                stop = j + 1
            else
                while true do
                    j = ws(j)
                    if sub(text, j, j) ~= '"' then return nil end
                    local ke = str(j)
                    if not ke then return nil end
                    local key = unquote(sub(text, j + 1, ke - 2))
                    j = ws(ke)
                    if sub(text, j, j) ~= ":" then return nil end
                    j = value(j + 1, ptr .. "/" .. ptr_escape(key), depth + 1)
                    if not j then return nil end
                    j = ws(j)
                    local d = sub(text, j, j)
                    if d == "}" then stop = j + 1 break end
                    if d ~= "," then return nil end
                    j = j + 1
                end
            end
        elseif c == "[" then
            local j = ws(i + 1)
            if sub(text, j, j) == "]" then
                stop = j + 1
            else
                local k = 0
                while true do
                    j = value(j, ptr .. "/" .. k, depth + 1)
                    if not j then return nil end
                    k = k + 1
                    j = ws(j)
                    local d = sub(text, j, j)
                    if d == "]" then stop = j + 1 break end
                    if d ~= "," then return nil end
                    j = j + 1
                end
            end
        elseif c == '"' then
            stop = str(i)
            if not stop then return nil end
        else
            local _, e = find(text, "^[%w%.%+%-]+", i)
            if not e then return nil end
            stop = e + 1
        end
        spans[ptr] = { i, stop - 1 }
        return stop
    end

    value(pos, "", 0)
    return spans
end

--- The text as HTML with the given instance locations marked.
-- A location is marked at the innermost value found for it (a missing property marks its
-- object); the root value is never marked as a whole. `at` marks one byte offset (a format
-- error's position).
-- @tparam string text
-- @tparam table pointers list of JSON Pointers (strings)
-- @tparam[opt] number at 0-based byte offset to mark, or nil
-- @treturn string HTML (every byte of `text` escaped)
-- @treturn table map pointer -> true for the pointers that were marked
function _M.mark(text, pointers, at)
    local spans = _M.scan(text)
    local marked = {}
    local events = {}
    for _, p in ipairs(pointers or {}) do
        local q = p
        while q ~= "" and not spans[q] do q = q:match("^(.*)/[^/]*$") or "" end
        if q ~= "" and not marked[q] then
            marked[q] = true
            marked[p] = true
            local s = spans[q]
            events[#events + 1] = { pos = s[1], open = true, len = s[2] - s[1], ptr = q }
            events[#events + 1] = { pos = s[2] + 1, open = false, len = s[2] - s[1] }
        elseif q ~= "" then
            marked[p] = true
        end
    end
    if type(at) == "number" and at >= 0 and at <= #text then
        local p = at + 1
        events[#events + 1] = { pos = p, open = true, len = -1, at = true }
        events[#events + 1] = { pos = p + 1, open = false, len = -1 }
    end
    -- Spans from one tree nest or are disjoint: at one position close inner before outer,
    -- then open outer before inner.
    sort(events, function(a, b)
        if a.pos ~= b.pos then return a.pos < b.pos end
        if a.open ~= b.open then return not a.open end
        if a.open then return a.len > b.len end
        return a.len < b.len
    end)
    local out, from = {}, 1
    for _, e in ipairs(events) do
        if e.pos > from then
            out[#out + 1] = html.esc(sub(text, from, e.pos - 1))
            from = e.pos
        end
        if e.open then
            if e.at then
                out[#out + 1] = '<mark class="at" title="format error here">'
            else
                out[#out + 1] = '<mark title="' .. html.esc(e.ptr) .. '" data-pointer="' .. html.esc(e.ptr) .. '">'
            end
        else
            out[#out + 1] = "</mark>"
        end
    end
    if from <= #text then out[#out + 1] = html.esc(sub(text, from)) end
    return concat(out), marked
end

return _M
