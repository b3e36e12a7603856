-- jsoncontract.setup: the one copy of what cli/ and jobs/ share (the contract file, the provider).
local setup = require "jsoncontract.setup"
local util = require "jsoncontract.cli.util"
local commands_src = io.open("lua/jsoncontract/cli/job_commands.lua"):read("*a")

describe("jsoncontract.setup", function()
    it("is what cli.util and cli.job_commands use, not a copy", function()
        assert.equal(setup.choose_provider, util.choose_provider)
        assert.equal(setup.load_contract, util.load_contract)
        assert.is_nil(commands_src:find("local function choose_provider", 1, true))
        assert.is_nil(commands_src:find("local function load_contract", 1, true))
    end)

    it("checks the provider and the base URL under either spelling of the option", function()
        local p, err = setup.choose_provider { provider = "nosuch" }
        assert.is_nil(p)
        assert.matches("unknown provider nosuch", err, 1, true)
        for _, o in ipairs { { base_url = "ftp://x" }, { ["base-url"] = "ftp://x" } } do
            p, err = setup.choose_provider(o)
            assert.is_nil(p)
            assert.matches("needs an http(s) URL", err, 1, true)
        end
        p = setup.choose_provider { ["base-url"] = "http://127.0.0.1:9/v1", model = "m" }
        if p.api_key == nil then assert.equal("http://127.0.0.1:9/v1", p.base_url) end
    end)

    it("refuses, before anything is sent, a provider's own host without a key: --base-url or a blank key", function()
        local function env(t) return function(n) return t[n] end end
        for _, case in ipairs {
            { { ["base-url"] = "https://api.openai.com", model = "m" }, {} },
            { { ["base-url"] = "https://API.openai.com./v1", model = "m", provider = "openai_responses" }, {} },
            { { base_url = "https://api.anthropic.com", model = "m", provider = "anthropic" }, {} },
            { {}, { OPENAI_API_KEY = "  " } },
            { { provider = "gemini" }, { GEMINI_API_KEY = "\t" } },
        } do
            local p, err = setup.choose_provider(case[1], env(case[2]))
            assert.is_nil(p, case[1]["base-url"])
            assert.truthy(err:find("'s API %([%w.]+%) refuses every request without an API key"), err)
            if next(case[2]) then assert.truthy(err:find("^%u+_API_KEY holds only blanks: "), err) end
        end
        -- a server of its own (no key), a blank key there, a real key: chosen
        assert(setup.choose_provider({ ["base-url"] = "http://127.0.0.1:9/v1", model = "m" }, env {}))
        assert(setup.choose_provider({ ["base-url"] = "http://127.0.0.1:9/v1" }, env { OPENAI_API_KEY = " " }))
        assert.equal("sk-1", setup.choose_provider({}, env { OPENAI_API_KEY = "sk-1" }).api_key)
    end)

    it("names a JSON Schema given as a contract", function()
        local m, err = setup.load_contract("x.json")
        assert.is_nil(m)
        assert.matches("a contract is a Lua file", err, 1, true)
    end)
end)
