-- JSON-Schema-Test-Suite (draft 2020-12) for the keyword files the schema
-- gate implements in full. Other files (anchor, contains, dependent*,
-- dynamicRef, if-then-else, ref with $id, refRemote, unevaluated*, ...) wait
-- for the keywords they test.
local core = require "jsoncontract.core"

local SHARED = os.getenv("JC_SHARED") or "../shared"
local DIR = SHARED .. "/corpora/JSON-Schema-Test-Suite/tests/draft2020-12/"

local CLAIMED = {
    "additionalProperties", "allOf", "anyOf", "boolean_schema", "const", "content",
    "default", "enum", "exclusiveMaximum", "exclusiveMinimum", "format",
    "infinite-loop-detection", "items", "maxItems", "maxLength", "maxProperties",
    "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "oneOf", "prefixItems", "properties", "required", "type", "uniqueItems",
}

local function read(path)
    local fh = io.open(path, "rb")
    if not fh then return nil end
    local text = fh:read("*a")
    fh:close()
    return text
end

describe("jsoncontract.core compile() + validate(): JSON-Schema-Test-Suite draft2020-12", function()
    after_each(function() collectgarbage("collect") end)

    for _, name in ipairs(CLAIMED) do
        it(name .. ".json passes every test", function()
            local text = read(DIR .. name .. ".json")
            if not text then
                pending("JSON-Schema-Test-Suite not found at " .. DIR)
                return
            end
            assert.is_function(core.decode, "core.decode is needed to read the suite")
            local groups = assert(core.decode(text))
            local passed, failures = 0, {}
            for _, group in ipairs(groups) do
                local ok, v = pcall(core.compile, group.schema)
                for _, test in ipairs(group.tests) do
                    local got
                    if ok then got = v:validate(test.data) == true end
                    if ok and got == test.valid then
                        passed = passed + 1
                    else
                        failures[#failures + 1] = group.description .. " / " .. test.description
                            .. (ok and "" or (" (compile raised: " .. tostring(v) .. ")"))
                    end
                end
            end
            assert.is_true(passed > 0)
            assert.same({}, failures)
        end)
    end
end)
