--- Lint a contract's schema per provider: which keywords each provider will not enforce
-- (dropped, weakened or changed in the copy it is sent), before anything is sent. The full
-- schema is always checked locally; lint says where the provider's constrained decoding
-- gives no help, so those places are left to the local gates (and cost retries).
-- @module jsoncontract.contract.lint
local core = require "jsoncontract.core"
local providers = require "jsoncontract.providers"

local type, ipairs, error, getmetatable, setmetatable = type, ipairs, error, getmetatable, setmetatable

local _M = { _VERSION = core._VERSION }

--- Lint a schema (or a contract's schema) for one provider or for all of them.
-- @tparam table contract_or_schema a contract (a table with a `schema` field) or a JSON Schema
--   (Lua table, or JSON text)
-- @tparam[opt] string provider_name one of `jsoncontract.providers.names`; nil: every provider
-- @treturn table report array, one entry per provider in `names` order: { provider = string,
--   mode = string (the mode a native request uses: "native", or "native-nonstrict" for
--   OpenAI with optional properties), not_enforced = array of { schema_pointer = string (JSON
--   Pointer into the caller's schema), keyword = string, reason = string } }
-- @raise on a schema that is neither a table nor JSON text, on invalid JSON text, on an
--   unknown provider name
-- @usage for _, r in ipairs(lint(contract, "openai")) do print(r.provider, #r.not_enforced) end
function _M.lint(contract_or_schema, provider_name)
    local schema = contract_or_schema
    if type(schema) == "table" and type(schema.schema) == "table" and getmetatable(schema) ~= core.array_mt
        and schema.type == nil and schema.properties == nil then
        schema = schema.schema
    end
    if type(schema) == "string" then
        local v, err = core.decode(schema)
        if v == nil then error("schema is not JSON: " .. tostring(err), 2) end
        schema = v
    end
    if type(schema) ~= "table" then
        error("contract_or_schema must be a contract, a schema table or JSON text, got " .. type(schema), 2)
    end
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
        local _, dropped, _, mode = providers.get(name).native_schema(schema)
        local out = setmetatable({}, core.array_mt)
        for i, d in ipairs(dropped) do
            out[i] = { schema_pointer = d.schema_pointer, keyword = d.keyword, reason = d.reason }
        end
        report[#report + 1] = { provider = name, mode = mode, not_enforced = out }
    end
    return report
end

return _M
