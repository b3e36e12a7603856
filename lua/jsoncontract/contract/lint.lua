--- Lint a contract's schema per provider: which keywords each provider will not enforce
-- (dropped, weakened or changed in the copy it is sent), before anything is sent. The full
-- schema is always checked locally; lint says where the provider's constrained decoding
-- gives no help, so those places are left to the local gates (and cost retries).
-- @module jsoncontract.contract.lint
local core = require "jsoncontract.core"
local providers = require "jsoncontract.providers"
local schema_subset = require "jsoncontract.providers.schema_subset"

local type, ipairs, pairs, error, getmetatable, setmetatable, next, tonumber =
    type, ipairs, pairs, error, getmetatable, setmetatable, next, tonumber
local concat, sort = table.concat, table.sort
local format = string.format

local _M = { _VERSION = core._VERSION }

-- JSON text keeps its property order (see contract/init.lua).
local KEEP_ORDER = { keep_order = true }

-- A finding as lint reports it: its `source` is the rule's URL, a page a user can open (the
-- rules data keeps the longer note of what was read, for maintainers).
local function public(d)
    return { schema_pointer = d.schema_pointer, keyword = d.keyword, action = d.action, reason = d.reason,
        source = d.url, from = d.from, to = d.to }
end

local function strip(list)
    local out = setmetatable({}, core.array_mt)
    for i, d in ipairs(list) do out[i] = public(d) end
    return out
end

local DEFAULT_META = "https://json-schema.org/draft/2020-12/schema"

-- The value at JSON Pointer 'pointer' in 'doc' (nil when absent).
local function at_pointer(doc, pointer)
    local v = doc
    for token in pointer:gmatch("/([^/]*)") do
        if type(v) ~= "table" then return nil end
        token = token:gsub("~1", "/"):gsub("~0", "~")
        local n = tonumber(token)
        if getmetatable(v) == core.array_mt and n then v = v[n + 1] else v = v[token] end
    end
    return v
end

-- Raise when 'schema' does not conform to its draft's meta-schema ($schema when it names a
-- built-in one, else 2020-12, compile's default); a custom $schema is not checked here. An
-- empty Lua table without a metatable is both {} and [], so a mismatch on one is not a fault.
local function check_meta(schema)
    local uri = type(schema["$schema"]) == "string" and schema["$schema"] or DEFAULT_META
    if core.metaschema(uri) == nil then return end
    local ok, err = core.compile({ ["$ref"] = uri }):validate(schema)
    if ok then return end
    local msgs = {}
    for _, e in ipairs(err.errors or {}) do
        local v = at_pointer(schema, e.pointer)
        if not (type(v) == "table" and next(v) == nil and getmetatable(v) == nil) then
            msgs[#msgs + 1] = e.message
        end
    end
    if #msgs > 0 then
        error("schema does not conform to its meta-schema " .. uri .. ": " .. concat(msgs, "; "), 3)
    end
end

-- The keywords of JSON Schema (draft 2020-12's vocabularies, and the older drafts' spellings
-- a schema may still use: definitions, dependencies, additionalItems, id).
local KNOWN = {}
for word in ([[$schema $id $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $comment $defs
    $recursiveRef $recursiveAnchor id definitions dependencies additionalItems
    allOf anyOf oneOf not if then else dependentSchemas prefixItems items contains properties
    patternProperties additionalProperties propertyNames unevaluatedItems unevaluatedProperties
    type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength
    pattern maxItems minItems uniqueItems maxContains minContains maxProperties minProperties required
    dependentRequired title description default deprecated readOnly writeOnly examples format
    contentEncoding contentMediaType contentSchema]]):gmatch("%S+") do
    KNOWN[word] = true
end
-- Where subschemas sit: one schema, an array of them, or a map of name -> schema.
local ONE = { ["not"] = true, ["if"] = true, ["then"] = true, ["else"] = true, additionalItems = true,
    contains = true, additionalProperties = true, propertyNames = true, unevaluatedItems = true,
    unevaluatedProperties = true, contentSchema = true, items = true }
local MANY = { allOf = true, anyOf = true, oneOf = true, prefixItems = true, items = true }
local MAP = { properties = true, patternProperties = true, ["$defs"] = true, definitions = true,
    dependentSchemas = true, dependencies = true }

-- Edit distance of two short words (for "did you mean"); nil when over 2.
local function near(a, b)
    if math.abs(#a - #b) > 2 then return nil end
    local prev = {}
    for j = 0, #b do prev[j] = j end
    for i = 1, #a do
        local cur = { [0] = i }
        for j = 1, #b do
            local cost = a:byte(i) == b:byte(j) and 0 or 1
            cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
        end
        prev = cur
    end
    return prev[#b] <= 2 and prev[#b] or nil
end

--- The keywords of `schema` that JSON Schema does not know: they check nothing (a validator
-- ignores them, JSON Schema 2020-12 Core §6.5), so a misspelt `requird` or `typ` makes the
-- schema quietly weaker. Names starting with "x-" (extensions, as OpenAPI spells them) are
-- not reported.
-- @tparam table schema a JSON Schema (Lua table)
-- @treturn table array of { schema_pointer = string, keyword = string, suggestion = string|nil
--   (the known keyword it is closest to), message = string }
function _M.unknown_keywords(schema)
    local found = setmetatable({}, core.array_mt)
    local seen, budget = {}, 100000 -- (a shared or cyclic table is walked once; work is bounded)
    local function walk(s, ptr, depth)
        if type(s) ~= "table" or getmetatable(s) == core.array_mt or seen[s] or depth > 64 then return end
        budget = budget - 1
        if budget < 0 then return end
        seen[s] = true
        local names = {}
        for k in pairs(s) do if type(k) == "string" then names[#names + 1] = k end end
        sort(names)
        for _, k in ipairs(names) do
            local v = s[k]
            local here = ptr .. "/" .. k:gsub("~", "~0"):gsub("/", "~1")
            if not KNOWN[k] and k:sub(1, 2) ~= "x-" then
                local best, dist
                for w in pairs(KNOWN) do
                    local d = near(k, w)
                    if d and (not dist or d < dist or (d == dist and w < best)) then best, dist = w, d end
                end
                found[#found + 1] = { schema_pointer = here, keyword = k, suggestion = best,
                    message = format("unknown keyword %s%s: JSON Schema ignores it, so it checks nothing", k,
                        best and format(" (did you mean %s?)", best) or "") }
            end
            if MAP[k] and type(v) == "table" then
                local members = {}
                for name in pairs(v) do if type(name) == "string" then members[#members + 1] = name end end
                sort(members)
                for _, name in ipairs(members) do
                    walk(v[name], here .. "/" .. name:gsub("~", "~0"):gsub("/", "~1"), depth + 1)
                end
            elseif MANY[k] and type(v) == "table" and (getmetatable(v) == core.array_mt or v[1] ~= nil) then
                for i, sub in ipairs(v) do walk(sub, here .. "/" .. (i - 1), depth + 1) end
            elseif ONE[k] then
                walk(v, here, depth + 1)
            end
        end
    end
    walk(schema, "", 0)
    return found
end

--- Lint a schema (or a contract's schema) for one provider or for all of them.
-- @tparam table contract_or_schema a contract (a table with a `schema` field) or a JSON Schema
--   (Lua table, or JSON text)
-- @tparam[opt] string provider_name one of `jsoncontract.providers.names`; nil: every provider
-- @treturn table report array, one entry per provider in `names` order: { provider = string,
--   mode = string (the mode a native request goes out in: "native", or the weaker mode it is
--   switched to: "native-nonstrict" (OpenAI strict false), "json", "prompt"), not_enforced =
--   array of { schema_pointer = string (JSON Pointer into the caller's schema), keyword =
--   string, action = "dropped"|"weakened"|"fails", reason = string, source = string|nil (the URL of
--   the document or source file the rule comes from, see jsoncontract.providers.rules) },
--   findings = array of the same, also holding what is "rewritten" (sent in another form,
--   still enforced) or "narrowed" (the provider allows less than the schema),
--   fails = boolean (a native request as written would be rejected, or run unconstrained),
--   fallback = nil | { from = "native", to = mode, schema_pointer, keyword, reason, source (URL) },
--   grammar = nil | (llamacpp) what mode "grammar" leaves to the schema gate, see
--   jsoncontract.providers.llamacpp.grammar_report }.
--   A contract's examples are checked against each copy sent (see
--   jsoncontract.providers.schema_subset.instances): a copy that rejects one "fails".
-- @raise on a schema that is neither a table nor JSON text, on invalid JSON text, on a schema
--   that does not conform to its draft's meta-schema (built in: `$schema` when it names
--   draft-04, -06, -07, 2019-09 or 2020-12, else 2020-12; the message lists each mismatch), on
--   an unknown provider name
-- @usage for _, r in ipairs(lint(contract, "openai")) do print(r.provider, #r.not_enforced) end
function _M.lint(contract_or_schema, provider_name)
    local schema, contract = contract_or_schema, nil
    if type(schema) == "table" and type(schema.schema) == "table" and getmetatable(schema) ~= core.array_mt
        and schema.type == nil and schema.properties == nil then
        contract, schema = schema, schema.schema
    end
    if type(schema) == "string" then
        local v, err = core.decode(schema, KEEP_ORDER)
        if v == nil then error("schema is not JSON: " .. tostring(err), 2) end
        schema = v
    end
    if type(schema) ~= "table" then
        error("contract_or_schema must be a contract, a schema table or JSON text, got " .. type(schema), 2)
    end
    check_meta(schema)
    local names = providers.names
    if provider_name ~= nil then
        if type(provider_name) ~= "string" then
            error("provider_name must be a string or nil", 2)
        end
        providers.get(provider_name) -- raises on an unknown name
        names = { provider_name }
    end
    local report = setmetatable({}, core.array_mt)
    for _, name in ipairs(names) do
        -- Each provider says what it enforces (its `native_schema`, built on its `SUBSET`
        -- data); nothing here knows a provider by name.
        local _, _, _, mode, plan = providers.get(name).native_schema(schema, contract)
        report[#report + 1] = { provider = name, mode = mode,
            not_enforced = strip(schema_subset.not_enforced(plan.findings)), findings = strip(plan.findings),
            fails = plan.fallback ~= nil, fallback = plan.fallback and public(plan.fallback) or nil,
            -- a provider that takes jsoncontract's own grammar says what it leaves to the gate
            grammar = providers.get(name).grammar_report and providers.get(name).grammar_report(schema) or nil }
    end
    return report
end

return _M
