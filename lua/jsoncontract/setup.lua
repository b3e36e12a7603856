--- What a command (`jsoncontract.cli.*`) and a job (`jsoncontract.jobs.*`) both need to get
-- going: the contract file, the provider, the interpreter running us. One copy, here, because
-- `jobs/` may not import `cli/` (docs/design.md "Layout").
-- @module jsoncontract.setup
local core = require "jsoncontract.core"
local standin_process = require "jsoncontract.standin.process"

local type, tostring, pcall, dofile, ipairs = type, tostring, pcall, dofile, ipairs
local concat = table.concat

local _M = { _VERSION = core._VERSION }

--- Load a contract file: a Lua file returning `{contract = ..., ...}`, run in the rules'
-- sandbox (`jsoncontract.contract.rules.load_file`: its rules, closures too, cannot reach the
-- host; a file that says `trusted = true` is loaded as plain Lua). Its `replay_context`, which
-- the commands call (never a rule) to open the rules' data, is host code: it runs from the
-- file loaded as plain Lua, on first use.
-- @tparam string path
-- @treturn[1] table the module
-- @return[2] nil
-- @treturn[2] string message
function _M.load_contract(path)
    if path:match("%.json$") then
        return nil, "cannot load contract " .. path .. ": a contract is a Lua file returning {contract = ...} "
            .. "(a JSON Schema alone has no instructions or rules; lint and diff take one)"
    end
    local mod, err = require("jsoncontract.contract.rules").load_file(path)
    if mod == nil and err then return nil, "cannot load contract " .. path .. ": " .. tostring(err) end
    if type(mod) ~= "table" or type(mod.contract) ~= "table" then
        return nil, path .. " must return a table with a 'contract' field"
    end
    -- What opens the rules' data (`context`, `replay_context`) is host code: it opens databases
    -- and files the sandbox keeps from rules. It comes from the file loaded as plain Lua, once,
    -- when first called; the rules stay those of the sandboxed load.
    if not mod.contract.trusted then
        local host
        local function from_host(name)
            return function(...)
                if not host then host = dofile(path) end
                if type(host) ~= "table" or type(host[name]) ~= "function" then
                    error(path .. " loaded as plain Lua has no function '" .. name .. "'", 0)
                end
                return host[name](...)
            end
        end
        for _, name in ipairs { "context", "replay_context" } do
            if type(mod[name]) == "function" then mod[name] = from_host(name) end
        end
    end
    return mod
end

local function set(v)
    if v == "" then return nil end
    return v
end

-- The providers a key chooses when no --provider is given, by their `detect` rank.
local function detected()
    local providers = require "jsoncontract.providers"
    local list = {}
    for _, name in ipairs(providers.names) do
        if providers.facts(name).detect then list[#list + 1] = name end
    end
    table.sort(list, function(a, b) return providers.facts(a).detect < providers.facts(b).detect end)
    return list
end

--- The values of the providers' key variables set here (`jsoncontract.providers.key_variables`):
-- what a command redacts from every message it prints.
-- @treturn {string,...}
function _M.key_values()
    local out = {}
    for _, name in ipairs(require("jsoncontract.providers").key_variables()) do
        out[#out + 1] = set(os.getenv(name))
    end
    return out
end

--- A provider's key and base URL from this host's environment, by its facts
-- (`jsoncontract.providers.facts`): how a job started elsewhere, or earlier, finds its own
-- provider's key again (keys are never stored).
-- @tparam string name a provider name
-- @tparam[opt] function getenv how to read a variable (default `os.getenv`)
-- @treturn table `{api_key = string|nil, key_env = string|nil, base_url = string|nil (from the
--   provider's base URL variable), base_url_env = string|nil}`
function _M.provider_env(name, getenv)
    getenv = getenv or os.getenv
    local f = require("jsoncontract.providers").facts(name)
    return { api_key = f.key_env and set(getenv(f.key_env)), key_env = f.key_env,
        base_url = f.base_url_env and set(getenv(f.base_url_env)), base_url_env = f.base_url_env }
end

--- Which provider, model, key and base URL. A key in the environment wins: the named
-- provider's key variable, or without `--provider` the first provider (by its facts' `detect`
-- rank: openai, anthropic, gemini) whose key is set. A base URL without a key talks to that
-- server without one (a local OpenAI-compatible server, say), unless it is the provider's own
-- API host, which refuses every request without a key (`jsoncontract.providers.missing_key`,
-- also for a blank key); otherwise the stand-in. The key variable, base URL variable, model
-- variable and default model are the provider's facts.
-- @tparam table o `provider`, `model`, `base_url` (the command's options; `["base-url"]` as
--   `jsoncontract.cli.job_commands` names it works too)
-- @tparam[opt] function getenv how to read a variable (default `os.getenv`)
-- @treturn[1] table `{provider, model, api_key, base_url, standin}`
-- @return[2] nil
-- @treturn[2] string message
function _M.choose_provider(o, getenv)
    local env = getenv or os.getenv
    local providers = require "jsoncontract.providers"
    if o.provider then
        if not pcall(providers.get, o.provider) then
            return nil, "unknown provider " .. o.provider .. " (known: " .. concat(providers.names, ", ") .. ")"
        end
    end
    if o.model == "" then return nil, "option --model needs a name" end
    local base = o.base_url or o["base-url"]
    if base and not base:match("^https?://[^/]") then return nil, "option --base-url needs an http(s) URL" end
    -- A base URL from the environment is checked here too: a bad one is one usage error, not
    -- an internal error on every item. Empty means unset.
    local function env_base(name)
        local v = base or (name and set(env(name)))
        if v and not v:match("^https?://[^/]") then return nil, name .. " needs an http(s) URL, not " .. v end
        return v or false
    end
    for _, name in ipairs(o.provider and { o.provider } or detected()) do
        local f = providers.facts(name)
        local key = f.key_env and set(env(f.key_env))
        if key then
            local url, uerr = env_base(f.base_url_env)
            if url == nil then return nil, uerr end
            local model = o.model or (f.model_env and set(env(f.model_env))) or f.default_model
            if not model then return nil, "provider " .. name .. " has no default model: give --model" end
            -- (a blank key is none: the provider's own API would refuse every request)
            local no_key = providers.missing_key(name, url or nil, key)
            if no_key then return nil, f.key_env .. " holds only blanks: " .. no_key end
            return { provider = name, api_key = key, model = model, base_url = url or nil }
        end
    end
    if base then
        if not o.model then return nil, "option --base-url without an API key needs --model" end
        local no_key = providers.missing_key(o.provider or "openai", base, nil)
        if no_key then return nil, "option --base-url: " .. no_key end
        return { provider = o.provider or "openai", model = o.model, base_url = base }
    end
    local name = o.provider or "openai"
    if not providers.facts(name).standin then
        local speaks = {}
        for _, n in ipairs(detected()) do
            if providers.facts(n).standin then speaks[#speaks + 1] = n end
        end
        local key_env = providers.facts(name).key_env
        return nil, "the stand-in model speaks " .. concat(speaks, " and ") .. " only; --provider " .. name
            .. " needs " .. (key_env and ("its key in " .. key_env .. " (or --base-url and --model)")
            or "--base-url and --model")
    end
    return { provider = name, model = o.model or "standin-1", standin = true }
end

--- The interpreter running us, to start helpers (the fault server) with the same Lua
-- (`jsoncontract.standin.process.interpreter`, the one copy).
-- @function interpreter
-- @treturn string
_M.interpreter = standin_process.interpreter

return _M
