--- What a command (`jsoncontract.cli.*`) and a job (`jsoncontract.jobs.*`) both need to get
-- going: the contract file, the provider, the interpreter running us. One copy, here, because
-- `jobs/` may not import `cli/` (README "Layout").
-- @module jsoncontract.setup
local core = require "jsoncontract.core"
local standin_process = require "jsoncontract.standin.process"

local type, tostring, pcall, dofile = type, tostring, pcall, dofile
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
    if type(mod.replay_context) == "function" and not mod.contract.trusted then
        mod.replay_context = function(where)
            local host = dofile(path)
            return host.replay_context(where)
        end
    end
    return mod
end

--- Which provider, model, key and base URL. A key in the environment wins; a base URL
-- without a key talks to that server without one (a local OpenAI-compatible server, say);
-- otherwise the stand-in.
-- @tparam table o `provider`, `model`, `base_url` (the command's options; `["base-url"]` as
--   `jsoncontract.jobs.commands` names it works too)
-- @treturn[1] table `{provider, model, api_key, base_url, standin}`
-- @return[2] nil
-- @treturn[2] string message
function _M.choose_provider(o)
    local env = os.getenv
    if o.provider then
        local providers = require "jsoncontract.providers"
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
        local v = base or env(name)
        if v == "" then v = nil end
        if v and not v:match("^https?://[^/]") then return nil, name .. " needs an http(s) URL, not " .. v end
        return v or false
    end
    local openai_key, anthropic_key = env("OPENAI_API_KEY"), env("ANTHROPIC_API_KEY")
    if openai_key and openai_key ~= "" and (o.provider == nil or o.provider == "openai") then
        local url, uerr = env_base("OPENAI_BASE_URL")
        if url == nil then return nil, uerr end
        return { provider = "openai", api_key = openai_key, model = o.model or env("OPENAI_MODEL") or "gpt-4o-mini",
            base_url = url or nil }
    end
    if anthropic_key and anthropic_key ~= "" and (o.provider == nil or o.provider == "anthropic") then
        local url, uerr = env_base("ANTHROPIC_BASE_URL")
        if url == nil then return nil, uerr end
        return { provider = "anthropic", api_key = anthropic_key,
            model = o.model or env("ANTHROPIC_MODEL") or "claude-sonnet-4-5",
            base_url = url or nil }
    end
    if base then
        if not o.model then return nil, "option --base-url without an API key needs --model" end
        return { provider = o.provider or "openai", model = o.model, base_url = base }
    end
    local name = o.provider or "openai"
    if name ~= "openai" and name ~= "anthropic" then
        return nil, "the stand-in model speaks openai and anthropic only; --provider " .. name
            .. " needs its key (or --base-url and --model)"
    end
    return { provider = name, model = o.model or "standin-1", standin = true }
end

--- The interpreter running us, to start helpers (the fault server) with the same Lua
-- (`jsoncontract.standin.process.interpreter`, the one copy).
-- @function interpreter
-- @treturn string
_M.interpreter = standin_process.interpreter

return _M
