--- A decision form generated from a contract's JSON Schema, and the value read back from it.
-- Enums become choices, booleans yes/no, a nullable field gets an explicit "unknown (null)",
-- strings show their pattern and length, nested objects become fieldsets, arrays of enum
-- values checkboxes, arrays of strings or numbers one item per line; anything the form cannot
-- say plainly (anyOf, $ref, arrays of objects, deep nesting) is edited as JSON text. The form
-- decides nothing: what it reads back goes through the contract's own gates, and a value
-- the contract forbids (a value outside the enum, a pattern miss) reaches those gates as typed.
-- Field names are JSON Pointers prefixed by one letter: `v` the value, `n` "unknown (null)",
-- `o` "leave out" (optional fields).
-- @module jsoncontract.review.form
local core = require "jsoncontract.core"
local html = require "jsoncontract.review.html"
local contract_mod = require "jsoncontract.contract"
local json = require "jsoncontract.json"

local type, ipairs, pairs, tostring, tonumber, setmetatable, getmetatable, pcall =
    type, ipairs, pairs, tostring, tonumber, setmetatable, getmetatable, pcall
local concat = table.concat
local gsub, match, format = string.gsub, string.match, string.format

local _M = { _VERSION = core._VERSION }

local null = core.null
local esc = html.esc
local ptr_escape = json.escape_token

-- Nesting shown as fieldsets down to this depth; below it a value is edited as JSON text.
local MAX_FORM_DEPTH = 4
-- A string field whose maxLength is at least this (or absent) is a text area.
local TEXTAREA_FROM = 120

local COMPLEX = { "anyOf", "oneOf", "allOf", "$ref", "not", "if", "then", "else", "dependentSchemas",
    "patternProperties", "prefixItems", "$dynamicRef" }

local types_of = contract_mod.type_list

local function contains_null(list)
    for _, v in ipairs(list) do if v == null then return true end end
    return false
end

-- What kind of control a (sub)schema gets, and whether null is allowed.
-- kinds: enum, boolean, string, number, object, multi (array of enum values),
-- lines (array of strings or numbers), json (anything else).
local function kind_of(s, depth)
    if type(s) ~= "table" then return "json", false end
    for _, k in ipairs(COMPLEX) do
        if s[k] ~= nil then return "json", false end
    end
    if type(s.enum) == "table" then return "enum", contains_null(s.enum) end
    if s.const ~= nil then return "enum", s.const == null end
    local main, nullable = {}, false
    for _, t in ipairs(types_of(s)) do
        if t == "null" then nullable = true else main[#main + 1] = t end
    end
    if #main == 2 and (main[1] == "integer" or main[1] == "number")
        and (main[2] == "integer" or main[2] == "number") then
        main = { "number" }
    end
    if #main ~= 1 then return "json", nullable end
    local t = main[1]
    if t == "string" then return "string", nullable end
    if t == "integer" or t == "number" then return "number", nullable end
    if t == "boolean" then return "boolean", nullable end
    if t == "object" then
        if type(s.properties) == "table" and depth < MAX_FORM_DEPTH then return "object", nullable end
        return "json", nullable
    end
    if t == "array" then
        local it = s.items
        if type(it) == "table" then
            local k = kind_of(it, depth + 1)
            if k == "enum" and not contains_null(it.enum or {}) then return "multi", nullable end
            if k == "string" or k == "number" then return "lines", nullable end
        end
        return "json", nullable
    end
    return "json", nullable
end
_M.kind_of = kind_of

-- Decoded arrays only (a value from the decoder or from `read` carries the marker).
local function is_array(v)
    return type(v) == "table" and getmetatable(v) == core.array_mt
end

local function required_set(s)
    local req = {}
    if type(s.required) == "table" then
        for _, name in ipairs(s.required) do req[name] = true end
    end
    return req
end

-- Visit every field the form shows: visit(schema, pointer, label, optional, depth).
local function walk(s, ptr, label, optional, depth, visit)
    local k = kind_of(s, depth)
    visit(s, ptr, label, optional, depth, k)
    if k == "object" then
        local req = required_set(s)
        for _, name in ipairs(contract_mod.property_order(s)) do
            walk(s.properties[name], ptr .. "/" .. ptr_escape(name), name, not req[name], depth + 1, visit)
        end
    end
end

local at = json.at

-- A JSON value as the text of an option or input.
local function show(v)
    if type(v) == "string" then return v end
    if v == nil then return "" end
    local ok, s = pcall(core.encode, v)
    return ok and s or tostring(v)
end

local function json_of(v, pretty)
    local ok, s = pcall(core.encode, v, pretty and { indent = 2 } or nil)
    return ok and s or ""
end

--- The form's fields as HTML.
-- @param schema the contract's JSON Schema (table)
-- @param value the value to pre-fill (a decoded JSON value, or nil for an empty form)
-- @tparam[opt] table errs list of `{pointer =, message =}` to show beside the fields
-- @treturn string HTML (every value escaped)
-- @treturn table the errors no field could hold (shown above the form by the caller)
function _M.render(schema, value, errs)
    -- Where each error goes: the field whose pointer is the longest prefix of the error's.
    local fields = {}
    walk(schema, "", "value", false, 0, function(_, ptr) fields[ptr] = true end)
    local by_field, loose = {}, {}
    for _, e in ipairs(errs or {}) do
        local p = e.pointer or ""
        while p ~= "" and not fields[p] do p = match(p, "^(.*)/[^/]*$") or "" end
        -- An object's own error about one property (a missing required one) goes to that
        -- property's field: the error item names it (`property`).
        if e.keyword == "required" and type(e.property) == "string" then
            local target = (e.pointer or "") .. "/" .. e.property:gsub("~", "~0"):gsub("/", "~1")
            if fields[target] then p = target end
        end
        if fields[p] and (p ~= "" or kind_of(schema, 0) ~= "object") then
            by_field[p] = by_field[p] or {}
            by_field[p][#by_field[p] + 1] = e.message
        else
            loose[#loose + 1] = e
        end
    end

    local out, seq = {}, 0
    local function w(s) out[#out + 1] = s end
    local stack = {}

    local function open_field(ptr, label, optional, s, id, kind)
        local bad = by_field[ptr]
        w(format('<div class="field%s" data-pointer="%s">', bad and " bad" or "", esc(ptr)))
        local for_attr = (kind == "enum" or kind == "string" or kind == "number" or kind == "lines"
            or kind == "json") and (' for="' .. id .. '"') or ""
        w(format('<label class="name"%s>%s</label>', for_attr, esc(label)))
        if optional then
            local v = at(value, ptr)
            w(format('<label class="opt"><input type="checkbox" name="o%s" value="1"%s> leave out</label>',
                esc(ptr), (value ~= nil and v == nil) and " checked" or ""))
        end
        return bad, s
    end

    local function close_field(ptr, s, id)
        w(format('<span class="hint" id="%s-hint"><code>%s</code> %s</span>', id, esc(ptr == "" and "/" or ptr),
            esc(contract_mod.describe(s))))
        for _, m in ipairs(by_field[ptr] or {}) do
            w(format('<span class="err" role="alert">%s</span>', esc(m)))
        end
        w("</div>")
    end

    local function null_box(ptr, v)
        w(format(' <label class="null"><input type="checkbox" name="n%s" value="1"%s> unknown (null)</label>',
            esc(ptr), v == null and " checked" or ""))
    end

    walk(schema, "", "value", false, 0, function(s, ptr, label, optional, depth, kind)
        -- Close fieldsets we have left.
        while #stack > 0 and ptr:sub(1, #stack[#stack] + 1) ~= stack[#stack] .. "/" do
            w("</fieldset>")
            stack[#stack] = nil
        end
        seq = seq + 1
        local id = "f" .. seq
        local v = at(value, ptr)
        local name = "v" .. ptr
        if kind == "object" then
            if ptr ~= "" then
                w(format('<fieldset data-pointer="%s"><legend>%s</legend>', esc(ptr), esc(label)))
                if optional then
                    w(format('<label class="opt"><input type="checkbox" name="o%s" value="1"%s> leave out</label>',
                        esc(ptr), (value ~= nil and v == nil) and " checked" or ""))
                end
                local _, nullable = kind_of(s, depth)
                if nullable then null_box(ptr, v) end
                for _, m in ipairs(by_field[ptr] or {}) do
                    w(format('<span class="err" role="alert">%s</span>', esc(m)))
                end
                stack[#stack + 1] = ptr
            end
            return
        end
        local _, nullable = kind_of(s, depth)
        open_field(ptr, label, optional, s, id, kind)
        if kind == "enum" then
            local list = type(s.enum) == "table" and s.enum or { s.const }
            w(format('<select id="%s" name="%s" aria-describedby="%s-hint">', id, esc(name), id))
            local found = false
            local opts = {}
            opts[#opts + 1] = format('<option value="">%s</option>', optional and "(not set)" or "- choose -")
            for _, e in ipairs(list) do
                local enc = json_of(e)
                local sel = (v ~= nil and json_of(v) == enc)
                if sel then found = true end
                opts[#opts + 1] = format('<option value="%s"%s>%s</option>', esc(enc), sel and " selected" or "",
                    e == null and "unknown (null)" or esc(show(e)))
            end
            if v ~= nil and not found then
                -- What the model said, although the contract does not allow it: visible, and
                -- refused by the gates if the person keeps it.
                opts[#opts + 1] = format('<option value="%s" selected>%s (not allowed)</option>',
                    esc(json_of(v)), esc(show(v)))
            end
            w(concat(opts))
            w("</select>")
        elseif kind == "boolean" then
            w('<span class="choices" role="radiogroup">')
            local choices = { { "true", "yes" }, { "false", "no" } }
            if nullable then choices[#choices + 1] = { "null", "unknown (null)" } end
            for i, c in ipairs(choices) do
                local sel = v ~= nil and json_of(v) == c[1]
                w(format('<label><input type="radio" id="%s" name="%s" value="%s"%s> %s</label>',
                    i == 1 and id or (id .. "-" .. i), esc(name), c[1], sel and " checked" or "", c[2]))
            end
            if v ~= nil and v ~= true and v ~= false and v ~= null then
                w(format('<label><input type="radio" name="%s" value="%s" checked> %s (not allowed)</label>',
                    esc(name), esc(json_of(v)), esc(show(v))))
            end
            w("</span>")
        elseif kind == "string" or kind == "number" then
            local text = (v == nil or v == null) and "" or show(v)
            local max = tonumber(s.maxLength)
            local long = kind == "string" and (#text > 80 or (max and max >= TEXTAREA_FROM)
                or (max == nil and s.pattern == nil and s.format == nil))
            if long then
                w(format('<textarea id="%s" name="%s" rows="2" aria-describedby="%s-hint">%s</textarea>', id,
                    esc(name), id, esc(text)))
            else
                w(format('<input type="text" id="%s" name="%s" value="%s"%s autocomplete="off" '
                    .. 'aria-describedby="%s-hint">', id, esc(name), esc(text),
                    kind == "number" and ' inputmode="decimal"' or "", id))
            end
            if nullable then null_box(ptr, v) end
        elseif kind == "multi" then
            w('<span class="choices">')
            local chosen = {}
            if is_array(v) then for _, x in ipairs(v) do chosen[json_of(x)] = true end end
            for i, e in ipairs(s.items.enum or { s.items.const }) do
                local enc = json_of(e)
                w(format('<label><input type="checkbox" id="%s" name="%s" value="%s"%s> %s</label>',
                    i == 1 and id or (id .. "-" .. i), esc(name), esc(enc), chosen[enc] and " checked" or "",
                    esc(show(e))))
                chosen[enc] = nil
            end
            for enc in pairs(chosen) do
                w(format('<label><input type="checkbox" name="%s" value="%s" checked> %s (not allowed)</label>',
                    esc(name), esc(enc), esc(enc)))
            end
            w("</span>")
            if nullable then null_box(ptr, v) end
        elseif kind == "lines" then
            local lines = {}
            if is_array(v) then for i, x in ipairs(v) do lines[i] = show(x) end end
            w(format('<textarea id="%s" name="%s" rows="3" aria-describedby="%s-hint" '
                .. 'placeholder="one item per line">%s</textarea>', id, esc(name), id, esc(concat(lines, "\n"))))
            if nullable then null_box(ptr, v) end
        else
            w(format('<textarea id="%s" name="%s" rows="4" class="json" aria-describedby="%s-hint" '
                .. 'placeholder="JSON">%s</textarea>', id, esc(name), id, v ~= nil and esc(json_of(v, true)) or ""))
        end
        close_field(ptr, s, id)
    end)
    while #stack > 0 do
        w("</fieldset>")
        stack[#stack] = nil
    end
    return concat(out), loose
end

local function arg1(args, name)
    local v = args[name]
    if type(v) == "table" then v = v[#v] end
    return v
end

local function trim(s) return (gsub(gsub(s, "^%s+", ""), "%s+$", "")) end

-- A number typed by a person: JSON number syntax gives a number, anything else stays text
-- (so the schema gate names the type error).
local function number_of(s)
    s = trim(s)
    if match(s, "^%-?%d+%.?%d*[eE]?[%+%-]?%d*$") then
        local v = core.decode(s)
        if type(v) == "number" then return v end
    end
    return s
end

--- Read the value a submitted form describes.
-- @param schema the contract's JSON Schema
-- @tparam table args the form's fields, name -> string (or a list of strings for repeated names)
-- @return the value (a JSON value; `nil` when the root was left out)
-- @treturn table problems: list of `{pointer =, keyword = "form", message =}` for fields that
--   cannot become JSON at all (JSON text that does not parse); empty when none
function _M.read(schema, args)
    local problems = {}
    local function read(s, ptr, optional, depth)
        if optional and arg1(args, "o" .. ptr) then return nil end
        local kind = kind_of(s, depth)
        if arg1(args, "n" .. ptr) then return null end
        local raw = args["v" .. ptr]
        if kind == "object" then
            local obj = {}
            local req = required_set(s)
            for _, name in ipairs(contract_mod.property_order(s)) do
                obj[name] = read(s.properties[name], ptr .. "/" .. ptr_escape(name), not req[name], depth + 1)
            end
            return obj
        elseif kind == "multi" then
            local list = setmetatable({}, core.array_mt)
            if type(raw) == "string" then raw = { raw } end
            for _, enc in ipairs(raw or {}) do
                local x = core.decode(enc)
                if x == nil then x = enc end
                list[#list + 1] = x
            end
            return list
        end
        raw = arg1(args, "v" .. ptr)
        if raw == nil then return nil end
        if kind == "enum" or kind == "boolean" then
            if raw == "" then return nil end
            local x = core.decode(raw)
            if x == nil then return raw end
            return x
        elseif kind == "string" then
            -- Browsers send CR LF for line breaks in a text area; the value keeps LF.
            return (gsub(raw, "\r\n", "\n"))
        elseif kind == "number" then
            return number_of(raw)
        elseif kind == "lines" then
            local list = setmetatable({}, core.array_mt)
            local item_kind = kind_of(s.items, depth + 1)
            for line in (gsub(raw, "\r\n", "\n") .. "\n"):gmatch("([^\n]*)\n") do
                if trim(line) ~= "" then
                    list[#list + 1] = item_kind == "number" and number_of(line) or line
                end
            end
            return list
        else
            if trim(raw) == "" then return nil end
            local x, err = core.decode(raw)
            if x == nil then
                problems[#problems + 1] = { pointer = ptr, keyword = "form",
                    message = "not JSON: " .. tostring(err and err.message) }
                return nil
            end
            return x
        end
    end
    local v = read(schema, "", false, 0)
    return v, problems
end

return _M
