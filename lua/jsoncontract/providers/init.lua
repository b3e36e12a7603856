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
local util = require "jsoncontract.util"

local type, ipairs, error, require = type, ipairs, error, require
local concat = table.concat
local format = string.format
local find = string.find

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

--- Why a request to `provider` must not go out: its own API answers every request without a
-- key with 401 (`FACTS.key_required`) and none is given, while `base_url` is nil or names that
-- same host (another host, a proxy, a gateway or a local server, decides for itself). Asking
-- anyway would spend a round trip on a refusal no retry and no person can fix.
-- @param provider a name from `names`, or a provider module (its `FACTS`, when it has them)
-- @tparam string|nil base_url
-- @tparam string|nil api_key (empty or blank: none)
-- @treturn string|nil the message (which variable holds the key; it never quotes `base_url` nor
--   the key), or nil when the request may go
function _M.missing_key(provider, base_url, api_key)
    if type(api_key) == "string" and find(api_key, "%S") then return nil end
    local name = type(provider) == "string" and provider or type(provider) == "table" and provider.name
    local f = type(provider) == "table" and (provider.FACTS or {}) or _M.facts(provider)
    if not f.key_required or not f.base_url then return nil end
    if base_url ~= nil and util.url_host(base_url) ~= util.url_host(f.base_url) then return nil end
    return format("%s's API (%s) refuses every request without an API key: give api_key%s, or a base_url "
        .. "for a server that needs none", tostring(name or "the provider"), util.url_host(f.base_url),
        f.key_env and " (it is usually in " .. f.key_env .. ")" or "")
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
