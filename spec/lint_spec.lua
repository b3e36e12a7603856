-- Specs for jsoncontract.contract.lint and the `lint` command (`jsoncontract.cli.main({"lint", ...})`).
local core = require "jsoncontract.core"
local lint = require "jsoncontract.contract.lint"
local cli = require "jsoncontract.cli"

local SCHEMA = {
    type = "object",
    properties = {
        name = { type = "string", minLength = 1 },
        age = { type = "integer", minimum = 0 },
        score = { type = "number", maximum = 1 },
        note = { type = "string" },
    },
    required = { "name", "age", "score" },
    additionalProperties = false,
}

local function by_key(findings)
    local t = {}
    for _, f in ipairs(findings) do t[f.schema_pointer .. " " .. f.keyword] = f.reason end
    return t
end

local function sink()
    local buf = {}
    return { write = function(self, ...)
        for _, s in ipairs({ ... }) do buf[#buf + 1] = s end
        return self
    end, text = function() return table.concat(buf) end }
end

describe("jsoncontract.contract.lint", function()
    it("reports every provider in names order, with the mode a native request uses", function()
        local report = lint.lint(SCHEMA)
        local names = {}
        for i, r in ipairs(report) do names[i] = r.provider .. ":" .. r.mode end
        assert.same({ "anthropic:native", "gemini:native", "llamacpp:native", "ollama:native",
            "openai:native-nonstrict", "openai_responses:native-nonstrict" }, names)
    end)

    it("openai: an optional property means strict false, said first, and nothing enforced", function()
        local r = lint.lint({ schema = SCHEMA, name = "c" }, "openai")
        assert.equal(1, #r)
        local f = r[1].not_enforced
        assert.equal("", f[1].schema_pointer)
        assert.equal("strict", f[1].keyword)
        assert.truthy(f[1].reason:find("/properties/note", 1, true))
        -- minLength is sent (strict mode takes it), so it is not listed
        assert.is_nil(by_key(f)["/properties/name/minLength minLength"])
    end)

    it("openai: all properties required keeps strict mode", function()
        local s = { type = "object", properties = { a = { type = "string" } }, required = { "a" },
            additionalProperties = false }
        local r = lint.lint(s, "openai")[1]
        assert.equal("native", r.mode)
        assert.equal(0, #r.not_enforced)
    end)

    it("llama.cpp grammar: numeric bounds only on integers, patterns only when anchored", function()
        local s = { type = "object", properties = {
            age = { type = "integer", minimum = 0 }, score = { type = "number", maximum = 1 },
            a = { type = "string", pattern = "^[a-z]+$" }, b = { type = "string", pattern = "[a-z]" } } }
        local f = by_key(lint.lint(s, "ollama")[1].not_enforced)
        assert.is_nil(f["/properties/age/minimum minimum"])
        assert.truthy(f["/properties/score/maximum maximum"])
        assert.is_nil(f["/properties/a/pattern pattern"])
        assert.truthy(f["/properties/b/pattern pattern"])
    end)

    it("takes JSON text, raises on misuse", function()
        assert.equal(0, #lint.lint('{"type":"string"}', "anthropic")[1].not_enforced)
        assert.has_error(function() lint.lint(42) end,
            "contract_or_schema must be a contract, a schema table or JSON text, got number")
        assert.has_error(function() lint.lint(SCHEMA, "gemeni") end)
    end)
end)

describe("the lint command", function()
    it("exits 0 for the support-ticket contract on OpenAI: strict mode takes its minLength/maxLength", function()
        local out, err = sink(), sink()
        local status = cli.main({ "lint", "--contract", "examples/support_ticket.lua", "--provider", "openai" },
            { stdout = out, stderr = err })
        assert.equal(0, status)
        assert.equal("", err.text())
        assert.equal("openai (mode native): 0 keywords not enforced\n", out.text())
    end)

    it("takes the whole command line too, as cli.main passes it", function()
        local out = sink()
        assert.equal(1, cli.main({ "lint", "--contract", "examples/support_ticket.lua", "--provider", "ollama" },
            { stdout = out, stderr = sink() }))
        assert.truthy(out.text():find("^ollama %(mode native%): 1 keyword not enforced\n"))
    end)

    it("--json prints the report as JSON", function()
        local out = sink()
        assert.equal(1, cli.main({ "lint", "--contract", "examples/support_ticket.lua", "--json" },
            { stdout = out, stderr = sink() }))
        local report = assert(core.decode(out.text()))
        assert.equal(6, #report)
        assert.equal("anthropic", report[1].provider)
    end)

    it("exits 0 when every keyword is enforced, 2 on usage errors", function()
        local path = os.tmpname()
        finally(function() os.remove(path) end)
        local json_path = path .. ".json"
        finally(function() os.remove(json_path) end)
        local f = assert(io.open(json_path, "wb"))
        f:write('{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],'
            .. '"additionalProperties":false}')
        f:close()
        assert.equal(0, cli.main({ "lint", "--contract", json_path }, { stdout = sink(), stderr = sink() }))
        local err = sink()
        assert.equal(2, cli.main({ "lint" }, { stdout = sink(), stderr = err }))
        assert.truthy(err.text():find("--contract FILE is required", 1, true))
        assert.equal(2, cli.main({ "lint", "--contract", json_path, "--provider", "x" }, { stdout = sink(), stderr = sink() }))
        assert.equal(2, cli.main({ "lint", "--contract", "/nonexistent.json" }, { stdout = sink(), stderr = sink() }))
        assert.equal(2, cli.main({ "lint", "--bogus" }, { stdout = sink(), stderr = sink() }))
    end)
    it("has a help that names the command and its --provider", function()
        local _, _, _, parsers = cli.parser()
        local usage = parsers.lint:get_help()
        assert.truthy(usage:find("Usage: jsoncontract lint", 1, true), usage)
        assert.truthy(usage:find("--provider", 1, true), usage)
    end)
end)

describe("lint of keywords JSON Schema does not know", function()
    local lint_mod = require "jsoncontract.contract.lint"
    local util = require "support.util"

    it("lists each one with its pointer and the keyword it is closest to; x- extensions pass", function()
        local found = lint_mod.unknown_keywords { type = "object", requird = { "a" }, ["x-ui"] = true,
            properties = { a = { typ = "number" }, ["a/b"] = { type = "string", minLenght = 3, title = "t" } },
            items = { { enumm = { 1 } }, { zzzzzzzzzz = 1 } }, ["$defs"] = { d = { maximun = 3 } } }
        local got = {}
        for _, f in ipairs(found) do got[#got + 1] = f.schema_pointer .. " " .. tostring(f.suggestion) end
        assert.same({ "/$defs/d/maximun maximum", "/items/0/enumm enum", "/items/1/zzzzzzzzzz nil",
            "/properties/a/typ type", "/properties/a~1b/minLenght minLength", "/requird required" }, got)
        assert.truthy(found[1].message:find("JSON Schema ignores it, so it checks nothing", 1, true))
        assert.same({}, lint_mod.unknown_keywords { type = "object", properties = { a = { type = "string" } } })
    end)

    it("makes `jsoncontract lint` exit 1 and `run` warn before the first answer", function()
        local dir = os.tmpname()
        os.remove(dir)
        finally(function() os.execute("rm -rf '" .. dir .. "'") end)
        os.execute("mkdir -p '" .. dir .. "'")
        local f = assert(io.open(dir .. "/job.lua", "w"))
        f:write('local jc = require "jsoncontract"\nreturn { context = false, contract = jc.contract { name = "x",\n'
            .. '  version = "1", instructions = "i", schema = { type = "object", requird = { "a" },\n'
            .. '  properties = { a = { type = "number" } } } } }\n')
        f:close()
        f = assert(io.open(dir .. "/in.jsonl", "w"))
        f:write('{"id":"a","text":"t"}\n')
        f:close()
        local env = "env -u LD_PRELOAD -u OPENAI_API_KEY -u ANTHROPIC_API_KEY " .. util.LUA .. " bin/jsoncontract "
        local out, code = util.sh(env .. "lint --provider openai --contract " .. dir .. "/job.lua 2>&1")
        assert.equal(1, code, out)
        assert.truthy(out:find("/requird unknown keyword requird (did you mean required?)", 1, true), out)
        out, code = util.sh(env .. "run --job " .. dir .. "/job.lua --input " .. dir .. "/in.jsonl --out " .. dir
            .. "/out --delay-ms 0 2>&1")
        assert.equal(0, code, out)
        assert.truthy(out:find("warning: the schema's /requird unknown keyword requird", 1, true), out)
    end)
end)
