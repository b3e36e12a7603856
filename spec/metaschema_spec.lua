-- Specs for the built-in standard meta-schemas (core.metaschema, $ref without a loader)
-- and lint's check of a schema against its draft's meta-schema.
local core = require "jsoncontract.core"
local lint = require "jsoncontract.contract.lint"

local URIS = {
    ["http://json-schema.org/draft-04/schema"] = "id",
    ["http://json-schema.org/draft-06/schema"] = "$id",
    ["http://json-schema.org/draft-07/schema"] = "$id",
    ["https://json-schema.org/draft/2019-09/schema"] = "$id",
    ["https://json-schema.org/draft/2020-12/schema"] = "$id",
}
for _, v in ipairs { "core", "applicator", "validation", "meta-data", "format", "content" } do
    URIS["https://json-schema.org/draft/2019-09/meta/" .. v] = "$id"
end
for _, v in ipairs { "core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation",
    "format-assertion", "content" } do
    URIS["https://json-schema.org/draft/2020-12/meta/" .. v] = "$id"
end

describe("built-in meta-schemas", function()
    it("core.metaschema gives each one, decoded, whose id is its URI", function()
        for uri, idkw in pairs(URIS) do
            local m = core.metaschema(uri)
            assert.is_table(m, uri)
            assert.equal(uri, (m[idkw]:gsub("#$", "")))
            assert.is_table(core.metaschema(uri .. "#"), uri .. "#")
        end
    end)

    it("core.metaschema gives nil for any other URI, a new table each call, raises on a non-string", function()
        assert.is_nil(core.metaschema("https://json-schema.org/draft/2020-12/schema/"))
        assert.is_nil(core.metaschema("http://json-schema.org/draft-03/schema"))
        assert.is_nil(core.metaschema(""))
        local a = core.metaschema("http://json-schema.org/draft-07/schema")
        a.type = "string"
        assert.same({ "object", "boolean" }, core.metaschema("http://json-schema.org/draft-07/schema").type)
        assert.has_error(function() core.metaschema(nil) end)
    end)

    local CASES = {
        { "https://json-schema.org/draft/2020-12/schema", { type = "object", minLength = 1 },
            { minLength = -1 } },
        { "https://json-schema.org/draft/2020-12/schema", { ["$defs"] = { a = { type = "string" } } },
            { ["$defs"] = { a = { type = 12 } } } },
        { "https://json-schema.org/draft/2019-09/schema", { items = { { type = "string" } } },
            { required = "a" } },
        { "http://json-schema.org/draft-07/schema#", { minimum = 1 }, { minimum = "x" } },
        { "http://json-schema.org/draft-06/schema#", { const = 1 }, { minProperties = 1.5 } },
        { "http://json-schema.org/draft-04/schema#", { exclusiveMinimum = true, minimum = 0 },
            { exclusiveMinimum = 1 } },
    }
    for _, case in ipairs(CASES) do
        it("a $ref to " .. case[1] .. " resolves with no loader and checks schemas", function()
            local v = core.compile({ ["$ref"] = case[1] })
            assert.is_true(v:validate(case[2]))
            local ok, err = v:validate(case[3])
            assert.is_nil(ok)
            assert.equal("schema", err.category)
        end)
    end

    it("is used before the loader, which still serves other documents", function()
        local asked = {}
        local v = core.compile({ allOf = { { ["$ref"] = "https://json-schema.org/draft/2020-12/schema" },
            { ["$ref"] = "http://example.com/s" } } }, { loader = function(uri)
                asked[#asked + 1] = uri
                return { required = { "type" } }
            end })
        assert.same({ "http://example.com/s" }, asked)
        assert.is_true(v:validate({ type = "string" }))
        assert.is_nil(v:validate({ minLength = 1 }))
    end)

    it("an unknown meta-schema URI still needs a loader", function()
        local ok, msg = pcall(core.compile, { ["$ref"] = "https://json-schema.org/draft/2020-12/nothing" })
        assert.is_false(ok)
        assert.truthy(tostring(msg):find("no loader was given", 1, true))
    end)
end)

describe("lint checks a schema against its draft's meta-schema", function()
    it("passes a conforming schema, with an empty Lua table read as either {} or []", function()
        local report = lint.lint({ type = "object", properties = { a = { type = "string" } },
            required = {}, additionalProperties = false }, "openai")
        assert.equal(1, #report)
    end)

    it("raises on a schema the 2020-12 meta-schema rejects, naming each mismatch", function()
        local ok, msg = pcall(lint.lint, { type = "object", required = { "a", "a" }, title = 5 }, "openai")
        assert.is_false(ok)
        assert.truthy(msg:find("does not conform to its meta-schema https://json-schema.org/draft/2020-12/schema",
            1, true))
        assert.truthy(msg:find("/required", 1, true))
        assert.truthy(msg:find("/title", 1, true))
    end)

    it("uses the draft its $schema names", function()
        -- draft-04's exclusiveMinimum is a boolean; 2020-12's a number
        local s = { ["$schema"] = "http://json-schema.org/draft-04/schema#", type = "number",
            minimum = 0, exclusiveMinimum = true }
        assert.equal(1, #lint.lint(s, "openai"))
        s["$schema"] = nil
        assert.has_error(function() lint.lint(s, "openai") end)
    end)
end)
