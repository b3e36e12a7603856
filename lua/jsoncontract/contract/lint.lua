--- Lint a contract's schema per provider: which keywords each provider will not enforce
-- (dropped, weakened or changed in the copy it is sent), before anything is sent. The full
-- schema is always checked locally; lint says where the provider's constrained decoding
-- gives no help, so those places are left to the local gates (and cost retries).
-- @module jsoncontract.contract.lint
local core = require "jsoncontract.core"
local providers = require "jsoncontract.providers"
local schema_subset = require "jsoncontract.providers.schema_subset"

local type, ipairs, error, getmetatable, setmetatable, next, tonumber =
    type, ipairs, error, getmetatable, setmetatable, next, tonumber
local concat = table.concat

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
