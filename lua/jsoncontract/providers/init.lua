--- The provider registry: which providers exist and the module for a name. Nothing else
-- lives here (the shared helpers are `jsoncontract.providers.envelope`, the schema subsets
-- `jsoncontract.providers.schema_subset`, the HTTP status classification
-- `jsoncontract.transport.http_status`); provider modules never require this one, so there
-- is no require cycle.
--
-- Every provider module `jsoncontract.providers.<name>` has the same shape:
--
--    req = provider.build_request(contract, messages, opts)
--    reply, err, partial = provider.read_response(status, headers, body)
--    schema_sent, dropped, enforced, mode, plan = provider.native_schema(schema)
--    provider.SUBSET            the profile (data) of the schema subset it enforces
--    provider.FACTS             its service: key variable, default model, base URL, rate limits
-- @module jsoncontract.providers
local envelope = require "jsoncontract.providers.envelope"

local type, ipairs, error, require = type, ipairs, error, require
local concat = table.concat
local format = string.format

local _M = { _VERSION = envelope._VERSION }

--- Output token budget sent when the caller gives no `max_tokens`.
_M.DEFAULT_MAX_TOKENS = envelope.DEFAULT_MAX_TOKENS

--- Names accepted by `get`, sorted.
_M.names = { "anthropic", "gemini", "llamacpp", "ollama", "openai", "openai_responses" }

local KNOWN = {}
for _, n in ipairs(_M.names) do KNOWN[n] = true end

--- The provider module for a name.
-- @tparam string name one of `names`: "anthropic", "gemini", "llamacpp", "ollama", "openai",
--   "openai_responses"
-- @treturn table the module `jsoncontract.providers.<name>`
-- @raise on a name that is not in `names` (the message lists the known names)
-- @usage local openai = require("jsoncontract.providers").get("openai")
function _M.get(name)
    if type(name) ~= "string" then
        error("provider name must be a string, got " .. type(name), 2)
    end
    if not KNOWN[name] then
        error(format("unknown provider %q (known: %s)", name, concat(_M.names, ", ")), 2)
    end
    return require("jsoncontract.providers." .. name)
end

--- The facts a provider module states about its service (its `FACTS`: `key_env`,
-- `base_url_env`, `model_env`, `default_model`, `base_url`, `rate_limit` `{rpm, tpm, source}`,
-- `detect`, `standin`; see `jsoncontract.providers.openai.FACTS`), each field nil when the
-- provider has none.
-- @tparam string name one of `names`
-- @treturn table facts (read only)
-- @raise on an unknown name (as `get`)
function _M.facts(name)
    return _M.get(name).FACTS or {}
end

--- The variables that hold the providers' API keys, each once, in `names` order: what a
-- command keeps out of every message it prints.
-- @treturn {string,...}
function _M.key_variables()
    local out, seen = {}, {}
    for _, n in ipairs(_M.names) do
        local v = _M.facts(n).key_env
        if v and not seen[v] then seen[v], out[#out + 1] = true, v end
    end
    return out
end

return _M
