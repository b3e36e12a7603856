--- Compare two versions of a contract's JSON Schema and classify every change as compatible
-- or breaking for the code that consumes the answers (SEEDS.md §3 "compatibility tests across
-- versions"; `bin/jsoncontract diff OLD NEW`).
--
-- A change is *breaking* when
-- * it narrows what is valid: answers that passed the old contract fail the new one, so recorded
--   evidence no longer replays and producers must change (a field removed from the allowed set,
--   a type narrowed, an enum value removed, a field newly required, additionalProperties closed,
--   null no longer allowed, a pattern or format added or changed, a limit tightened); or
-- * it widens what consumers must handle: values they branch on that the old contract never let
--   through (a type widened, an enum value added, null newly allowed, a field no longer required,
--   a pattern or format dropped); or
-- * it removes a field consumers read.
-- It is *compatible* when old answers stay valid and consumers see nothing new they must handle:
-- annotations (description, title, examples, default, $comment), a new optional field where
-- additionalProperties was closed (consumers ignore fields they do not know; where it was open,
-- old answers may already hold that name with any value, so a new field with a schema that
-- constrains it narrows), additionalProperties opened, a length, size or number limit
-- loosened (the same code path handles a longer string).
-- Keywords it cannot reason about (anyOf, allOf, $ref, if/then/else, ...) count as breaking when
-- they change: it says so rather than guess.
-- @module jsoncontract.diff
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

local type, pairs, ipairs, error = type, pairs, ipairs, error
local format, concat, sort = string.format, table.concat, table.sort

local _M = { _VERSION = core._VERSION }

local null = core.null

-- Keywords that change nothing for validation.
local ANNOTATIONS = { description = true, title = true, examples = true, default = true,
    ["$comment"] = true, deprecated = true, readOnly = true, writeOnly = true, ["$schema"] = true,
    ["$id"] = true }

-- Keywords handled explicitly below; any other keyword that differs is "unknown_change".
local HANDLED = { type = true, enum = true, const = true, properties = true, required = true,
    additionalProperties = true, items = true, pattern = true, format = true,
    minLength = true, maxLength = true, minimum = true, maximum = true, exclusiveMinimum = true,
    exclusiveMaximum = true, minItems = true, maxItems = true, minProperties = true,
    maxProperties = true, uniqueItems = true, multipleOf = true }

-- Lower limits: raising them tightens; upper limits: lowering them tightens.
local LOWER = { "minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties" }
local UPPER = { "maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties" }

local ALL_TYPES = { "array", "boolean", "integer", "null", "number", "object", "string" }

local function enc(v) return core.encode(v) end

local escape = json.escape_token

-- Does the subschema allow every value (true, or only annotations)?
local function allows_all(s)
    if s == true then return true end
    if type(s) ~= "table" then return false end
    for k in pairs(s) do if not ANNOTATIONS[k] then return false end end
    return true
end

local function same(a, b)
    if a == b then return true end
    if type(a) ~= type(b) then return false end
    if type(a) == "table" then return enc(a) == enc(b) end
    return false
end

-- The set of JSON types a schema allows by its `type` keyword (all when absent).
local function type_set(s)
    local set = {}
    local t = s.type
    if t == nil then
        for _, name in ipairs(ALL_TYPES) do set[name] = true end
    elseif type(t) == "string" then
        set[t] = true
    else
        for _, name in ipairs(t) do set[name] = true end
    end
    if set.number then set.integer = true end
    return set
end

local function set_names(set)
    local out = {}
    for k in pairs(set) do out[#out + 1] = k end
    sort(out)
    return out
end

local function allows_null(s)
    if not type_set(s).null then return false end
    if type(s.enum) == "table" then
        for _, v in ipairs(s.enum) do if v == null then return true end end
        return false
    end
    if s.const ~= nil then return s.const == null end
    return true
end

local function list_set(list)
    local set = {}
    for _, v in ipairs(list or {}) do set[enc(v)] = true end
    return set
end

local function diff_schema(old, new, ptr, out)
    local function add(change, breaking, reason, keyword)
        out[#out + 1] = { pointer = ptr == "" and "/" or ptr, keyword = keyword, change = change,
            breaking = breaking, reason = reason }
    end

    if type(old) == "boolean" or type(new) == "boolean" then
        if not same(old, new) then
            local narrowed = new == false or old == true
            add(narrowed and "schema_narrowed" or "schema_widened", true,
                format("the schema changed from %s to %s", enc(old), enc(new)))
        end
        return
    end

    -- null first, so a type change that only adds or drops null reads as such
    local on, nn = allows_null(old), allows_null(new)
    if on and not nn then
        add("null_disallowed", true, "null is no longer allowed: old answers with null are rejected", "type")
    elseif nn and not on then
        add("null_allowed", true, "null is newly allowed: consumers must handle a null they never got", "type")
    end

    -- types, null aside
    local ot, nt = type_set(old), type_set(new)
    ot.null, nt.null = nil, nil
    local lost, gained = {}, {}
    for k in pairs(ot) do if not nt[k] then lost[#lost + 1] = k end end
    for k in pairs(nt) do if not ot[k] then gained[#gained + 1] = k end end
    sort(lost)
    sort(gained)
    if #lost > 0 then
        add("type_narrowed", true, format("type %s no longer allowed (was %s, now %s): old answers are rejected",
            concat(lost, ", "), concat(set_names(ot), ", "), concat(set_names(nt), ", ")), "type")
    end
    if #gained > 0 then
        add("type_widened", true, format("type %s newly allowed (was %s, now %s): consumers get a type they never got",
            concat(gained, ", "), concat(set_names(ot), ", "), concat(set_names(nt), ", ")), "type")
    end

    -- enum and const
    if old.enum ~= nil or new.enum ~= nil then
        if old.enum == nil then
            add("enum_added", true, "values are now restricted to " .. enc(new.enum) .. ": old answers may be rejected",
                "enum")
        elseif new.enum == nil then
            add("enum_removed", true, "values are no longer restricted to " .. enc(old.enum) ..
                ": consumers get values they never got", "enum")
        else
            local os_, ns = list_set(old.enum), list_set(new.enum)
            for _, v in ipairs(old.enum) do
                if not ns[enc(v)] and v ~= null then
                    add("enum_value_removed", true, "value " .. enc(v)
                        .. " is no longer allowed: old answers with it are rejected", "enum")
                end
            end
            for _, v in ipairs(new.enum) do
                if not os_[enc(v)] and v ~= null then
                    add("enum_value_added", true, "value " .. enc(v)
                        .. " is new: consumers that branch on the values meet one they do not know", "enum")
                end
            end
        end
    end
    if not same(old.const, new.const) then
        add("const_changed", true, format("const changed from %s to %s", old.const == nil and "none" or enc(old.const),
            new.const == nil and "none" or enc(new.const)), "const")
    end

    -- strings: pattern and format
    for _, kw in ipairs { "pattern", "format" } do
        local o, n = old[kw], new[kw]
        if o == nil and n ~= nil then
            add(kw .. "_added", true, format("%s %s added: old answers may be rejected", kw, enc(n)), kw)
        elseif o ~= nil and n == nil then
            add(kw .. "_removed", true, format("%s %s dropped: consumers get values outside it", kw, enc(o)), kw)
        elseif o ~= nil and not same(o, n) then
            add(kw .. "_changed", true, format("%s changed from %s to %s: old answers may be rejected", kw, enc(o),
                enc(n)), kw)
        end
    end

    -- limits
    for _, kw in ipairs(LOWER) do
        local o, n = old[kw], new[kw]
        if n ~= nil and (o == nil or n > o) then
            add("limit_tightened", true, format("%s raised from %s to %s: old answers may be rejected", kw,
                o == nil and "none" or enc(o), enc(n)), kw)
        elseif o ~= nil and (n == nil or n < o) then
            add("limit_loosened", false, format("%s lowered from %s to %s: old answers stay valid", kw, enc(o),
                n == nil and "none" or enc(n)), kw)
        end
    end
    for _, kw in ipairs(UPPER) do
        local o, n = old[kw], new[kw]
        if n ~= nil and (o == nil or n < o) then
            add("limit_tightened", true, format("%s lowered from %s to %s: old answers may be rejected", kw,
                o == nil and "none" or enc(o), enc(n)), kw)
        elseif o ~= nil and (n == nil or n > o) then
            add("limit_loosened", false, format("%s raised from %s to %s: old answers stay valid", kw, enc(o),
                n == nil and "none" or enc(n)), kw)
        end
    end
    if not same(old.multipleOf, new.multipleOf) then
        add("multiple_of_changed", true, format("multipleOf changed from %s to %s",
            old.multipleOf == nil and "none" or enc(old.multipleOf),
            new.multipleOf == nil and "none" or enc(new.multipleOf)), "multipleOf")
    end
    if (old.uniqueItems == true) ~= (new.uniqueItems == true) then
        if new.uniqueItems == true then
            add("unique_items_added", true, "items must now be unique: old answers with duplicates are rejected",
                "uniqueItems")
        else
            add("unique_items_removed", true, "items may now repeat: consumers get duplicates", "uniqueItems")
        end
    end

    -- objects: properties, required, additionalProperties
    local oprops = type(old.properties) == "table" and old.properties or {}
    local nprops = type(new.properties) == "table" and new.properties or {}
    local oreq, nreq = {}, {}
    for _, k in ipairs(type(old.required) == "table" and old.required or {}) do oreq[k] = true end
    for _, k in ipairs(type(new.required) == "table" and new.required or {}) do nreq[k] = true end
    local names, seen = {}, {}
    for k in pairs(oprops) do if not seen[k] then seen[k] = true names[#names + 1] = k end end
    for k in pairs(nprops) do if not seen[k] then seen[k] = true names[#names + 1] = k end end
    for k in pairs(oreq) do if not seen[k] then seen[k] = true names[#names + 1] = k end end
    for k in pairs(nreq) do if not seen[k] then seen[k] = true names[#names + 1] = k end end
    sort(names)
    local new_closed = new.additionalProperties == false
    -- the values an old answer could hold under a name 'properties' did not declare
    local old_extra = old.additionalProperties
    if old_extra == nil then old_extra = true end
    for _, name in ipairs(names) do
        local p = ptr .. "/properties/" .. escape(name)
        local o, n = oprops[name], nprops[name]
        if o ~= nil and n == nil then
            out[#out + 1] = { pointer = p, keyword = "properties", change = "property_removed", breaking = true,
                reason = "field " .. name .. " is removed: consumers that read it lose it" ..
                    (new_closed and "; old answers that have it are rejected" or "") }
        elseif o == nil and n ~= nil then
            if nreq[name] then
                out[#out + 1] = { pointer = p, keyword = "required", change = "property_added_required",
                    breaking = true, reason = "new field " .. name .. " is required: old answers lack it" }
            elseif old_extra ~= false and not allows_all(n) and not same(old_extra, n) then
                out[#out + 1] = { pointer = p, keyword = "properties", change = "property_added_constrained",
                    breaking = true, reason = "new optional field " .. name .. " has a schema, and "
                        .. "additionalProperties was " .. (old_extra == true and "open" or enc(old_extra))
                        .. ": old answers that hold " .. name .. " with another value are rejected" }
            else
                out[#out + 1] = { pointer = p, keyword = "properties", change = "property_added_optional",
                    breaking = false, reason = "new optional field " .. name .. ": old answers stay valid, " ..
                        "consumers ignore fields they do not know" }
            end
        else
            if o ~= nil and n ~= nil then diff_schema(o, n, p, out) end
            if nreq[name] and not oreq[name] then
                out[#out + 1] = { pointer = p, keyword = "required", change = "required_added", breaking = true,
                    reason = "field " .. name .. " is newly required: old answers without it are rejected" }
            elseif oreq[name] and not nreq[name] and n ~= nil then
                out[#out + 1] = { pointer = p, keyword = "required", change = "required_removed", breaking = true,
                    reason = "field " .. name .. " is no longer required: consumers may find it missing" }
            end
        end
    end
    local oa, na = old.additionalProperties, new.additionalProperties
    if type(oa) == "table" and type(na) == "table" then
        diff_schema(oa, na, ptr .. "/additionalProperties", out)
    elseif (oa == false) ~= (na == false) then
        if na == false then
            add("additional_properties_closed", true, "no other fields are allowed now: old answers with extra " ..
                "fields are rejected", "additionalProperties")
        else
            add("additional_properties_opened", false, "other fields are allowed now: old answers stay valid, " ..
                "consumers ignore fields they do not know", "additionalProperties")
        end
    elseif not same(oa, na) then
        add("keyword_changed", true, "additionalProperties changed from " .. (oa == nil and "none" or enc(oa))
            .. " to " .. (na == nil and "none" or enc(na)) .. "; not analysed, treated as breaking",
            "additionalProperties")
    end

    -- arrays
    local oi, ni = old.items, new.items
    if (type(oi) == "table" or type(oi) == "boolean") and (type(ni) == "table" or type(ni) == "boolean") then
        diff_schema(oi, ni, ptr .. "/items", out)
    elseif not same(oi, ni) then
        add("keyword_changed", true, "items changed from " .. (oi == nil and "none" or enc(oi)) .. " to " ..
            (ni == nil and "none" or enc(ni)) .. "; not analysed, treated as breaking", "items")
    end

    -- everything else
    local kws, kseen = {}, {}
    for k in pairs(old) do if not kseen[k] then kseen[k] = true kws[#kws + 1] = k end end
    for k in pairs(new) do if not kseen[k] then kseen[k] = true kws[#kws + 1] = k end end
    sort(kws)
    for _, k in ipairs(kws) do
        if not HANDLED[k] and not same(old[k], new[k]) then
            if ANNOTATIONS[k] then
                add("annotation_changed", false, k .. " changed: annotations do not change what is valid", k)
            else
                add("keyword_changed", true, k .. " changed; not analysed, treated as breaking", k)
            end
        end
    end
end

--- Compare two schemas.
-- @tparam table|boolean old_schema the schema consumers were built against
-- @tparam table|boolean new_schema the schema of the new version
-- @treturn table findings, an array in schema order of `{pointer = string (JSON Pointer into the
--   schema; "/" for the root), keyword = string|nil, change = string (e.g. "property_removed",
--   "type_narrowed", "enum_value_added", "required_added", "additional_properties_closed",
--   "null_disallowed", "pattern_changed", "limit_tightened", "property_added_optional", ...),
--   breaking = boolean, reason = string}`; empty when nothing that matters changed
-- @treturn boolean breaking: true when any finding is breaking
-- @raise when a schema is neither a table nor a boolean
-- @usage local findings, breaking = diff.diff(v1.schema, v2.schema)
function _M.diff(old_schema, new_schema)
    -- (not ipairs: it would stop at a nil old_schema and check nothing)
    local both = { old_schema, new_schema }
    for i = 1, 2 do
        local s = both[i]
        if type(s) ~= "table" and type(s) ~= "boolean" then
            error("diff: schema " .. i .. " must be a table or a boolean, got " .. type(s), 2)
        end
    end
    local out = setmetatable({}, core.array_mt)
    diff_schema(old_schema, new_schema, "", out)
    local breaking = false
    for _, f in ipairs(out) do if f.breaking then breaking = true end end
    return out, breaking
end

return _M
