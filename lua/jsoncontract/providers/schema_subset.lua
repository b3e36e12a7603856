--- Per-provider schema subsets: copy a contract's JSON Schema into the subset a provider's
-- constrained decoding takes, and list every keyword that was dropped, weakened or changed
-- (`{schema_pointer, keyword, reason}`), so lint can say where the local gates stand alone.
-- A provider describes its subset as data (a profile table, see `subset`); nothing here
-- knows a provider by name.
-- @module jsoncontract.providers.schema_subset
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

local type, pairs, ipairs, tostring, error = type, pairs, ipairs, tostring, error
local sort = table.sort

local _M = { _VERSION = core._VERSION }
local C = _M -- the functions below keep the names they had in providers.common

-- Keywords whose value is one subschema, a map of subschemas, or a list of subschemas.
local ONE = { items = true, additionalProperties = true, ["not"] = true,
    contains = true, propertyNames = true, ["if"] = true, ["then"] = true, ["else"] = true,
    unevaluatedItems = true, unevaluatedProperties = true }
local MAP = { properties = true, ["$defs"] = true, definitions = true,
    patternProperties = true, dependentSchemas = true }
local LIST = { anyOf = true, allOf = true, oneOf = true, prefixItems = true }

local escape_pointer = json.escape_token

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    return keys
end

-- A regex the providers' constrained decoders are documented not to take: lookaround,
-- backreferences, named groups and other "(?" constructs.
local function unsupported_pattern(p)
    return p:find("(?", 1, true) ~= nil or p:find("\\[1-9]") ~= nil or p:find("\\k<", 1, true) ~= nil
end

local function nullable(sub)
    if type(sub) ~= "table" then
        return sub
    end
    if sub.enum == nil and sub.const == nil and sub["$ref"] == nil and sub.anyOf == nil then
        local t = sub.type
        if type(t) == "string" then
            if t ~= "null" then
                local arr = json.new_array()
                arr[1], arr[2] = t, "null"
                sub.type = arr
            end
            return sub
        elseif json.is_array(t) then
            for _, x in ipairs(t) do
                if x == "null" then return sub end
            end
            t[#t + 1] = "null"
            return sub
        end
    end
    local any = json.new_array()
    any[1], any[2] = sub, { type = "null" }
    return { anyOf = any }
end

--- The JSON Schema subset llama.cpp's schema-to-grammar converter enforces (llama.cpp
-- `grammars/README.md`, "JSON Schemas -> GBNF"; Ollama's `format` goes through the same
-- converter): types, properties/required/additionalProperties, items/prefixItems,
-- minItems/maxItems, enum/const, anyOf/oneOf/allOf, local $ref, minLength/maxLength, a
-- `pattern` anchored with ^...$, formats date/time/date-time/uuid, and numeric bounds on
-- integers only. Everything else is skipped silently by the converter, so it is reported.
C.LLAMA_KEYWORDS = {
    type = true, enum = true, const = true, properties = true, required = true,
    additionalProperties = true, items = true, prefixItems = true, anyOf = true, oneOf = true,
    allOf = true, ["$defs"] = true, definitions = true, ["$ref"] = true, title = true,
    description = true, minItems = true, maxItems = true, minLength = true, maxLength = true,
    pattern = true, format = true, minimum = true, maximum = true, exclusiveMinimum = true,
    exclusiveMaximum = true,
}
C.LLAMA_FORMATS = { date = true, time = true, ["date-time"] = true, uuid = true }
local NUMERIC = { minimum = true, maximum = true, exclusiveMinimum = true, exclusiveMaximum = true }
--- Why llama.cpp's grammar does not enforce keyword `kw` (value `v`) in schema `node`,
-- or nil when it does (source: llama.cpp `json-schema-to-grammar`, as read for this project).
-- @tparam string kw keyword name
-- @param v the keyword's value
-- @tparam table node the subschema holding it
-- @treturn string|nil reason
function C.llama_reject(kw, v, node)
    if NUMERIC[kw] and node.type ~= "integer" then
        return "numeric bounds are enforced on integers only by the llama.cpp grammar"
    end
    if kw == "pattern" and type(v) == "string" and not (v:sub(1, 1) == "^" and v:sub(-1) == "$") then
        return "only patterns anchored with ^...$ are enforced by the llama.cpp grammar"
    end
    return nil
end

--- Copy `schema` into the subset a provider enforces.
-- `profile` = { name = string (for reasons), keep = set of keywords kept as they are,
--   close_objects = boolean (default true: every object gets additionalProperties false;
--   false: additionalProperties is kept or dropped like any other keyword),
--   formats = set of format values kept, reject = function(keyword, value, node) -> reason|nil
--   (drops a kept keyword in a given place), force_required = boolean (every property listed
--   in required; optional ones made nullable), max_min_items = number|nil }.
-- Returns the copy and the dropped list { {schema_pointer, keyword, reason}, ... }.
function C.subset(schema, profile)
    local dropped = json.new_array()
    local function drop(ptr, kw, reason)
        dropped[#dropped + 1] = { schema_pointer = ptr, keyword = kw, reason = reason }
    end
    local walk
    local function walk_value(kw, v, ptr)
        if ONE[kw] then
            return walk(v, ptr)
        elseif MAP[kw] then
            local out = {}
            for _, k in ipairs(sorted_keys(v)) do
                out[k] = walk(v[k], ptr .. "/" .. escape_pointer(k))
            end
            return out
        elseif LIST[kw] then
            local out = json.new_array()
            for i, s in ipairs(v) do
                out[i] = walk(s, ptr .. "/" .. (i - 1))
            end
            return out
        end
        return json.deepcopy(v)
    end
    walk = function(node, ptr)
        if type(node) ~= "table" then
            return node -- boolean schema
        end
        local out = {}
        for _, kw in ipairs(sorted_keys(node)) do
            local v, kptr = node[kw], ptr .. "/" .. escape_pointer(kw)
            if kw == "oneOf" and profile.keep.anyOf and node.anyOf == nil then
                out.anyOf = walk_value("oneOf", v, kptr)
                drop(kptr, kw, "sent as anyOf: " .. profile.name .. " does not support oneOf")
            elseif kw == "required" or (kw == "additionalProperties" and profile.close_objects ~= false) then
                -- handled below with the object rules
                out[kw] = kw == "required" and json.deepcopy(v) or nil
            elseif not profile.keep[kw] then
                drop(kptr, kw, "not supported by " .. profile.name)
            elseif profile.reject and profile.reject(kw, v, node) then
                drop(kptr, kw, profile.reject(kw, v, node))
            elseif kw == "format" and not profile.formats[v] then
                drop(kptr, kw, "format " .. tostring(v) .. " not supported by " .. profile.name)
            elseif kw == "pattern" and type(v) == "string" and unsupported_pattern(v) then
                drop(kptr, kw, "pattern uses a construct " .. profile.name .. " does not support")
            elseif kw == "items" and json.is_array(v) then
                drop(kptr, kw, "tuple form of items not supported by " .. profile.name)
            elseif kw == "minItems" and profile.max_min_items and type(v) == "number"
                and v > profile.max_min_items then
                drop(kptr, kw, "minItems above " .. profile.max_min_items .. " not supported by " .. profile.name)
            else
                out[kw] = walk_value(kw, v, kptr)
            end
        end
        local t = node.type
        local is_obj = t == "object"
            or (t == nil and (node.properties ~= nil or node.additionalProperties ~= nil
                              or node.required ~= nil))
        if json.is_array(t) then
            for _, x in ipairs(t) do
                if x == "object" then is_obj = true end
            end
        end
        if is_obj and profile.close_objects == false then
            -- the provider takes objects as they are: nothing to force
            if node.required ~= nil and not json.is_array(node.required) then out.required = nil end
        elseif is_obj then
            if node.additionalProperties ~= false then
                drop(ptr .. "/additionalProperties", "additionalProperties",
                    "set to false: " .. profile.name .. " needs closed objects")
            end
            out.additionalProperties = false
            local props = json.is_object(node.properties) and node.properties or {}
            local req, listed = json.new_array(), {}
            if json.is_array(node.required) then
                for _, name in ipairs(node.required) do
                    if props[name] ~= nil and not listed[name] then
                        listed[name] = true
                        req[#req + 1] = name
                    elseif props[name] == nil then
                        drop(ptr .. "/required", "required", "required name " .. tostring(name)
                            .. " has no entry in properties; not sent")
                    end
                end
            end
            if profile.force_required then
                for _, name in ipairs(sorted_keys(props)) do
                    if not listed[name] then
                        req[#req + 1] = name
                        out.properties[name] = nullable(out.properties[name])
                        drop(ptr .. "/properties/" .. escape_pointer(name), "required",
                            "optional property sent as required and nullable (" .. profile.name
                            .. " needs every property required); null there stands for absent")
                        dropped[#dropped].optional = true
                    end
                end
            end
            if #req > 0 or profile.force_required then
                out.required = req
            else
                out.required = nil
            end
        elseif node.required ~= nil then
            out.required = nil
            drop(ptr .. "/required", "required", "required outside an object schema; not sent")
        end
        return out
    end
    return walk(json.deepcopy(schema), ""), dropped
end

--- A `provider_schema(schema)` function for a subset profile (see `subset`): raises when
-- `schema` is not a table, else returns the copy and the dropped list.
function C.schema_fn(profile)
    return function(schema)
        if type(schema) ~= "table" then
            error("schema must be a table, got " .. type(schema), 2)
        end
        return C.subset(schema, profile)
    end
end

--- Give a provider module what it enforces, from its profile (data):
-- `mod.SUBSET` (the profile), `mod.provider_schema(schema) -> schema_sent, dropped` (raises
-- when `schema` is not a table) and `mod.native_schema(schema) -> schema_sent, dropped, strict
-- (true: the whole subset is enforced as sent), mode ("native")`.
-- @tparam table mod the provider module
-- @tparam table profile see `subset`
-- @treturn table mod
function C.install(mod, profile)
    mod.SUBSET = profile
    mod.provider_schema = C.schema_fn(profile)
    function mod.native_schema(schema)
        local sent, dropped = mod.provider_schema(schema)
        return sent, dropped, true, "native"
    end
    return mod
end

return _M
