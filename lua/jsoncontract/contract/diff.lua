--- Compare two versions of a contract's JSON Schema and classify every change as compatible
-- or breaking for the code that consumes the answers (`bin/jsoncontract diff OLD NEW`, docs/cli.md).
--
-- A change is *breaking* when
-- * it narrows what is valid: answers that passed the old contract fail the new one, so recorded
--   evidence no longer replays and producers must change (a field removed from the allowed set,
--   a type narrowed, an enum value removed, a field newly required, additionalProperties closed,
--   null no longer allowed, a pattern or format added or changed, a limit tightened, a new field
--   whose name an old patternProperties pattern matched with another schema); or
-- * it widens what consumers must handle: values they branch on, size or store that the old
--   contract never let through (a type widened, an enum value added, null newly allowed, a field
--   no longer required, a pattern or format dropped, a limit loosened or dropped: a consumer
--   written for "at most 3 tags" or "qty >= 0" meets 300 tags or -100); or
-- * it removes a field consumers read.
-- It is *compatible* when old answers stay valid and consumers see nothing new they must handle:
-- annotations (description, title, examples, default, $comment), a new optional field where
-- additionalProperties was closed and no patternProperties pattern matched its name (consumers
-- ignore fields they do not know; where it was open, old answers may already hold that name with
-- any value, so a new field with a schema that constrains it narrows), additionalProperties
-- opened, the same allowed values spelled another way (an enum as an anyOf of consts, draft-04's
-- `exclusiveMinimum: true` as draft-06's number).
-- Keywords it cannot reason about (allOf, $ref, if/then/else, an anyOf that is not a list of
-- values, ...) count as breaking when they change: it says so rather than guess.
-- @module jsoncontract.contract.diff
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

local type, pairs, ipairs, error, pcall, getmetatable, setmetatable =
    type, pairs, ipairs, error, pcall, getmetatable, setmetatable
local format, concat, sort = string.format, table.concat, table.sort

local _M = { _VERSION = core._VERSION }

local null = core.null

-- Keywords that change nothing for validation.
local ANNOTATIONS = { description = true, title = true, examples = true, default = true,
    ["$comment"] = true, deprecated = true, readOnly = true, writeOnly = true, ["$schema"] = true,
    ["$id"] = true, id = true } -- (id: draft-04's $id)

-- Keywords handled explicitly below; any other keyword that differs is "unknown_change".
local HANDLED = { type = true, enum = true, const = true, properties = true, required = true,
    additionalProperties = true, items = true, pattern = true, format = true,
    minLength = true, maxLength = true, minimum = true, maximum = true, exclusiveMinimum = true,
    exclusiveMaximum = true, minItems = true, maxItems = true, minProperties = true,
    maxProperties = true, uniqueItems = true, multipleOf = true }

-- Count limits. Lower ones: raising them tightens; upper ones: lowering them tightens. Either
-- way is breaking: tightened, old answers may be rejected; loosened, consumers get values they
-- never got. (Numeric bounds are compared as bounds, see `bound`.)
local LOWER = { "minLength", "minItems", "minProperties" }
local UPPER = { "maxLength", "maxItems", "maxProperties" }

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

local value_list -- below

local function allows_null(s)
    if not type_set(s).null then return false end
    local list = value_list(s)
    if list then
        for _, v in ipairs(list) do if v == null then return true end end
        return false
    end
    return true
end

local function list_set(list)
    local set = {}
    for _, v in ipairs(list or {}) do set[enc(v)] = true end
    return set
end

-- The numeric bound a schema sets on one side: value and whether it is exclusive, or nil. Both
-- spellings count: draft-04's `minimum` with a boolean `exclusiveMinimum`, and draft-06's
-- numeric `exclusiveMinimum` (with `minimum` beside it the tighter one holds). `side` is
-- "lower" or "upper". Second result false: a keyword of a type neither draft allows.
local BOUND_KW = { lower = { "minimum", "exclusiveMinimum" }, upper = { "maximum", "exclusiveMaximum" } }
local function bound(s, side)
    local inc_kw, exc_kw = BOUND_KW[side][1], BOUND_KW[side][2]
    local inc, exc = s[inc_kw], s[exc_kw]
    if (inc ~= nil and type(inc) ~= "number") or (exc ~= nil and type(exc) ~= "number" and type(exc) ~= "boolean") then
        return nil, false
    end
    local v, x = nil, false
    if inc ~= nil then v, x = inc, exc == true end
    if type(exc) == "number" then
        local tighter = v == nil or (side == "lower" and exc >= v) or (side == "upper" and exc <= v)
        if tighter then v, x = exc, true end
    end
    return v, true, x
end

-- ">= 0", "< 10" or "none".
local function bound_text(v, x, side)
    if v == nil then return "none" end
    return (side == "lower" and (x and ">" or ">=") or (x and "<" or "<=")) .. " " .. enc(v)
end

-- The JSON types of one value, as `type_set` names them (an integral number is both integer
-- and number).
local function value_types(v, set)
    local t = type(v)
    if v == null then set.null = true
    elseif t == "boolean" or t == "string" then set[t] = true
    elseif t == "number" then
        set.number = true
        if v == math.floor(v) then set.integer = true end
    elseif t == "table" then
        if getmetatable(v) == core.array_mt or #v > 0 then set.array = true else set.object = true end
    end
    return set
end

-- Is `b` an anyOf/oneOf branch that only lists values (const or enum, annotations aside)?
local function value_branch(b)
    if type(b) ~= "table" or (b.const == nil and type(b.enum) ~= "table") then return false end
    for k in pairs(b) do
        if k ~= "const" and k ~= "enum" and not ANNOTATIONS[k] then return false end
    end
    return true
end

-- The values a schema restricts to, whichever way it says so: `enum`, `const`, or an `anyOf` /
-- `oneOf` whose every branch is a const or an enum (the same set, written another way).
-- Returns the list (nil when the schema lists no values) and the keyword it came from.
function value_list(s)
    if type(s.enum) == "table" then
        if s.const == nil then return s.enum, "enum" end
        for _, v in ipairs(s.enum) do if same(v, s.const) then return { s.const }, "const" end end
        return {}, "enum"
    end
    if s.const ~= nil then return { s.const }, "const" end
    for _, kw in ipairs { "anyOf", "oneOf" } do
        local branches = s[kw]
        if type(branches) == "table" and #branches > 0 then
            local list = {}
            for _, b in ipairs(branches) do
                if not value_branch(b) then return nil end
                if b.const ~= nil then list[#list + 1] = b.const
                else for _, v in ipairs(b.enum) do list[#list + 1] = v end end
            end
            -- (oneOf: a value listed in two branches matches both and is rejected; rare, and
            -- counted here as allowed, which can only report more, never less)
            return list, kw
        end
    end
    return nil
end

-- The types a schema allows: its `type` keyword, and when it lists values, only theirs.
local function effective_types(s)
    local set = type_set(s)
    local list = value_list(s)
    if list == nil then return set end
    local vt = {}
    for _, v in ipairs(list) do value_types(v, vt) end
    local out = {}
    for k in pairs(vt) do if set[k] then out[k] = true end end
    return out
end

-- Does the ECMA-262 regular expression `pattern` match `name`? Asked of the validator itself
-- (the same engine, flags and limits the gate uses). nil when it cannot say (a pattern it
-- does not compile).
local function pattern_matches(pattern, name)
    local ok, v = pcall(core.compile, { patternProperties = { [pattern] = false } })
    if not ok then return nil end
    local r = v:check(core.encode { [name] = 0 })
    return r == nil
end

-- The patternProperties schemas of `s` whose pattern matches `name` (a pattern it cannot
-- read counts as matching: the caller then reports a change it cannot rule out).
local function matching_patterns(s, name)
    local out = {}
    if type(s.patternProperties) ~= "table" then return out end
    local pats = {}
    for pat in pairs(s.patternProperties) do pats[#pats + 1] = pat end
    sort(pats)
    for _, pat in ipairs(pats) do
        if type(pat) ~= "string" or pattern_matches(pat, name) ~= false then
            out[#out + 1] = { pattern = pat, schema = s.patternProperties[pat] }
        end
    end
    return out
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

    -- types, null aside; when both list their values, the values say it all (below)
    local ovals, okw = value_list(old)
    local nvals, nkw = value_list(new)
    local ot, nt = effective_types(old), effective_types(new)
    if ovals and nvals then ot, nt = {}, {} end
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

    -- allowed values: enum, const, or an anyOf/oneOf of consts; compared as sets, so the same
    -- values written another way are no change, and each value gone or new is named (null aside:
    -- reported above)
    if okw == "const" and nkw == "const" and old.enum == nil and new.enum == nil then
        if not same(old.const, new.const) then
            add("const_changed", true, format("const changed from %s to %s: old answers are rejected, " ..
                "consumers get a value they never got", enc(old.const), enc(new.const)), "const")
        end
    elseif ovals or nvals then
        if ovals == nil then
            add("enum_added", true, "values are now restricted to " .. enc(nvals) .. ": old answers may be rejected",
                nkw)
        elseif nvals == nil then
            add("enum_removed", true, "values are no longer restricted to " .. enc(ovals) ..
                ": consumers get values they never got", okw)
        else
            local os_, ns = list_set(ovals), list_set(nvals)
            for _, v in ipairs(ovals) do
                if not ns[enc(v)] and v ~= null then
                    add("enum_value_removed", true, "value " .. enc(v)
                        .. " is no longer allowed: old answers with it are rejected", nkw)
                end
            end
            for _, v in ipairs(nvals) do
                if not os_[enc(v)] and v ~= null then
                    add("enum_value_added", true, "value " .. enc(v)
                        .. " is new: consumers that branch on the values meet one they do not know", nkw)
                end
            end
        end
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

    -- limits: both directions break (see the module's rules)
    local TIGHT = ": old answers may be rejected"
    local LOOSE = ": consumers get values they never got"
    local function limit(kw, upper)
        local o, n = old[kw], new[kw]
        if (o ~= nil and type(o) ~= "number") or (n ~= nil and type(n) ~= "number") then
            if not same(o, n) then
                add("keyword_changed", true, kw .. " changed; not a number, not analysed, treated as breaking", kw)
            end
            return
        end
        local up, down = upper and "lowered" or "raised", upper and "raised" or "lowered"
        if n ~= nil and (o == nil or (upper and n < o) or (not upper and n > o)) then
            add("limit_tightened", true, format("%s %s from %s to %s", kw, up, o == nil and "none" or enc(o),
                enc(n)) .. TIGHT, kw)
        elseif o ~= nil and (n == nil or (upper and n > o) or (not upper and n < o)) then
            add("limit_loosened", true, format("%s %s from %s to %s", kw, down, enc(o),
                n == nil and "none" or enc(n)) .. LOOSE, kw)
        end
    end
    for _, kw in ipairs(LOWER) do limit(kw, false) end
    for _, kw in ipairs(UPPER) do limit(kw, true) end
    -- numeric bounds, compared as bounds whichever draft spells them
    for _, side in ipairs { "lower", "upper" } do
        local inc_kw, exc_kw = BOUND_KW[side][1], BOUND_KW[side][2]
        local ov, ook, ox = bound(old, side)
        local nv, nok, nx = bound(new, side)
        local kw = same(old[exc_kw], new[exc_kw]) and inc_kw or exc_kw
        if not ook or not nok then
            for _, k in ipairs { inc_kw, exc_kw } do
                if not same(old[k], new[k]) then
                    add("keyword_changed", true, k .. " changed; of a type no draft gives it, treated as breaking", k)
                end
            end
        else
            -- is bound a tighter than bound b? (nil: no bound)
            local function tighter(av, ax, bv, bx)
                if av == nil then return false end
                if bv == nil then return true end
                if av == bv then return ax and not bx end
                if side == "lower" then return av > bv end
                return av < bv
            end
            local what = side == "lower" and "lower bound" or "upper bound"
            if tighter(nv, nx, ov, ox) then
                add("limit_tightened", true, format("%s %s from %s to %s", kw, what == "lower bound" and "raised"
                    or "lowered", bound_text(ov, ox, side), bound_text(nv, nx, side)) .. TIGHT, kw)
            elseif tighter(ov, ox, nv, nx) then
                add("limit_loosened", true, format("%s %s from %s to %s", kw, what == "lower bound" and "lowered"
                    or "raised", bound_text(ov, ox, side), bound_text(nv, nx, side)) .. LOOSE, kw)
            end
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
            -- an old answer could hold this name under a patternProperties pattern that matched it
            -- (additionalProperties then did not apply); the new schema applies both
            local pats = matching_patterns(old, name)
            local pat_ok = #pats > 0
            for _, m in ipairs(pats) do
                if not (allows_all(n) or same(m.schema, n)) then pat_ok = false end
            end
            if nreq[name] then
                out[#out + 1] = { pointer = p, keyword = "required", change = "property_added_required",
                    breaking = true, reason = "new field " .. name .. " is required: old answers lack it" }
            elseif #pats > 0 and not pat_ok then
                out[#out + 1] = { pointer = p, keyword = "properties", change = "property_added_constrained",
                    breaking = true, reason = "new optional field " .. name .. " has a schema, and the "
                        .. "patternProperties pattern " .. enc(pats[1].pattern) .. " matched that name with "
                        .. enc(pats[1].schema) .. ": now both apply, so old answers that hold " .. name
                        .. " by the pattern's schema may be rejected" }
            elseif #pats == 0 and old_extra ~= false and not allows_all(n) and not same(old_extra, n) then
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

    -- arrays; draft-04 to 2019-09 also spell `items` as a list (one schema per position)
    local oi, ni = old.items, new.items
    local function tuple(x) return type(x) == "table" and (getmetatable(x) == core.array_mt or x[1] ~= nil) end
    if tuple(oi) and tuple(ni) and #oi == #ni then
        for i = 1, #oi do diff_schema(oi[i], ni[i], ptr .. "/items/" .. (i - 1), out) end
    elseif tuple(oi) or tuple(ni) then
        if not same(oi, ni) then
            add("keyword_changed", true, "items changed from " .. (oi == nil and "none" or enc(oi)) .. " to " ..
                (ni == nil and "none" or enc(ni)) .. "; not analysed, treated as breaking", "items")
        end
    elseif (type(oi) == "table" or type(oi) == "boolean") and (type(ni) == "table" or type(ni) == "boolean") then
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
        -- (an anyOf/oneOf of values was compared as values above)
        local as_values = (k == okw or k == nkw) and ovals and nvals
        if not HANDLED[k] and not as_values and not same(old[k], new[k]) then
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
