-- jsoncontract.contract.diff: one spec per kind of change, with its classification and reason.
local diff = require "jsoncontract.contract.diff"

local function base()
    return {
        type = "object",
        properties = {
            intent = { type = "string", enum = { "delivery", "return", "payment", "other" } },
            order_id = { type = { "string", "null" }, pattern = "^[0-9]{4,6}$" },
            urgent = { type = "boolean" },
            summary = { type = "string", minLength = 1, maxLength = 200, description = "one sentence" },
            note = { type = "string" },
            score = { type = "number" },
        },
        required = { "intent", "order_id", "urgent", "summary" },
        additionalProperties = false,
    }
end

-- Apply `edit` to a fresh copy of the base schema and diff old -> new.
local function changed(edit)
    local new = base()
    edit(new)
    return diff.diff(base(), new)
end

local function only(findings)
    assert.equal(1, #findings, require("jsoncontract.core").encode(findings))
    return findings[1]
end

describe("jsoncontract.contract.diff", function()
    describe("diff()", function()
        it("finds nothing between equal schemas", function()
            local f, breaking = diff.diff(base(), base())
            assert.same({}, f)
            assert.is_false(breaking)
        end)

        local cases = {
            { "a field removed", function(s) s.properties.note = nil end,
              "/properties/note", "property_removed", true, "field note is removed" },
            { "a type narrowed (number to integer)", function(s) s.properties.score.type = "integer" end,
              "/properties/score", "type_narrowed", true, "type number no longer allowed (was integer, number, now integer)" },
            { "null no longer allowed", function(s) s.properties.order_id.type = "string" end,
              "/properties/order_id", "null_disallowed", true, "null is no longer allowed" },
            { "null newly allowed", function(s) s.properties.urgent.type = { "boolean", "null" } end,
              "/properties/urgent", "null_allowed", true, "null is newly allowed" },
            { "a type widened", function(s) s.properties.urgent.type = { "boolean", "string" } end,
              "/properties/urgent", "type_widened", true, "type string newly allowed" },
            { "an enum value removed", function(s) s.properties.intent.enum = { "delivery", "return", "other" } end,
              "/properties/intent", "enum_value_removed", true, 'value "payment" is no longer allowed' },
            { "an enum value added", function(s) table.insert(s.properties.intent.enum, "refund") end,
              "/properties/intent", "enum_value_added", true, 'value "refund" is new' },
            { "a field newly required", function(s) table.insert(s.required, "note") end,
              "/properties/note", "required_added", true, "field note is newly required" },
            { "a field no longer required", function(s) s.required = { "intent", "order_id", "urgent" } end,
              "/properties/summary", "required_removed", true, "no longer required" },
            { "a new required field", function(s) s.properties.lang = { type = "string" }; table.insert(s.required, "lang") end,
              "/properties/lang", "property_added_required", true, "old answers lack it" },
            { "a new optional field", function(s) s.properties.lang = { type = "string" } end,
              "/properties/lang", "property_added_optional", false, "old answers stay valid" },
            { "a new optional field with a schema where other fields were allowed",
              function(s) s.additionalProperties = nil; s.properties.lang = { type = "string" } end,
              "/properties/lang", "property_added_constrained", true,
              "additionalProperties was open: old answers that hold lang with another value are rejected",
              function(s) s.additionalProperties = nil end },
            { "a new optional field that allows anything where other fields were allowed",
              function(s) s.additionalProperties = nil; s.properties.lang = { description = "any" } end,
              "/properties/lang", "property_added_optional", false, "old answers stay valid",
              function(s) s.additionalProperties = nil end },
            { "additionalProperties closed (was open)", nil,
              "/", "additional_properties_closed", true, "no other fields are allowed now" },
            { "additionalProperties opened", function(s) s.additionalProperties = nil end,
              "/", "additional_properties_opened", false, "old answers stay valid" },
            { "a pattern tightened", function(s) s.properties.order_id.pattern = "^[0-9]{4}$" end,
              "/properties/order_id", "pattern_changed", true, 'pattern changed from "^[0-9]{4,6}$" to "^[0-9]{4}$"' },
            { "a pattern added", function(s) s.properties.note.pattern = "\\S" end,
              "/properties/note", "pattern_added", true, nil },
            { "a pattern dropped", function(s) s.properties.order_id.pattern = nil end,
              "/properties/order_id", "pattern_removed", true, nil },
            { "a format added", function(s) s.properties.note.format = "date" end,
              "/properties/note", "format_added", true, 'format "date" added' },
            { "a limit tightened", function(s) s.properties.summary.maxLength = 100 end,
              "/properties/summary", "limit_tightened", true, "maxLength lowered from 200 to 100" },
            { "a lower limit raised", function(s) s.properties.summary.minLength = 10 end,
              "/properties/summary", "limit_tightened", true, "minLength raised from 1 to 10" },
            { "a limit loosened", function(s) s.properties.summary.maxLength = 500 end,
              "/properties/summary", "limit_loosened", true,
              "maxLength raised from 200 to 500: consumers get values they never got" },
            { "a lower length limit dropped", function(s) s.properties.summary.minLength = nil end,
              "/properties/summary", "limit_loosened", true, "minLength lowered from 1 to none" },
            { "a minimum lowered", function(s) s.properties.score.minimum = -100 end,
              "/properties/score", "limit_loosened", true, "minimum lowered from >= 0 to >= -100",
              function(s) s.properties.score.minimum = 0 end },
            { "a maxItems raised", function(s) s.properties.tags = { type = "array", maxItems = 300 } end,
              "/properties/tags", "limit_loosened", true, "maxItems raised from 3 to 300",
              function(s) s.properties.tags = { type = "array", maxItems = 3 } end },
            { "a maximum dropped", function() end,
              "/properties/score", "limit_loosened", true, "maximum raised from <= 5 to none",
              function(s) s.properties.score.maximum = 5 end },
            { "a minimum made exclusive (draft 6)", function(s) s.properties.score.exclusiveMinimum = 0 end,
              "/properties/score", "limit_tightened", true, "exclusiveMinimum raised from >= 0 to > 0",
              function(s) s.properties.score.minimum = 0 end },
            { "an enum spelled as an anyOf of consts, one value swapped", function(s)
                s.properties.intent = { anyOf = { { const = "delivery" }, { const = "return" },
                    { const = "payment" } } }
            end, "/properties/intent", "enum_value_removed", true, 'value "other" is no longer allowed',
              function(s) s.properties.intent = { enum = { "delivery", "return", "payment", "other" } } end },
            { "a description changed", function(s) s.properties.summary.description = "two sentences" end,
              "/properties/summary", "annotation_changed", false, "description changed" },
            { "an unanalysed keyword", function(s) s.properties.note.anyOf = { { minLength = 2 } } end,
              "/properties/note", "keyword_changed", true, "not analysed, treated as breaking" },
        }
        for _, c in ipairs(cases) do
            it("classifies " .. c[1], function()
                local f, breaking
                if c[7] then -- the old schema edited too
                    local old, new = base(), base()
                    c[7](old)
                    c[2](new)
                    f, breaking = diff.diff(old, new)
                elseif c[2] then
                    f, breaking = changed(c[2])
                else
                    local old = base()
                    old.additionalProperties = nil
                    f, breaking = diff.diff(old, base())
                end
                local x = only(f)
                assert.equal(c[3], x.pointer)
                assert.equal(c[4], x.change)
                assert.equal(c[5], x.breaking)
                assert.equal(c[5], breaking)
                if c[6] then assert.truthy(x.reason:find(c[6], 1, true), x.reason) end
            end)
        end

        it("reports uniqueItems added on an array", function()
            local old = { type = "array", items = { type = "string" } }
            local new = { type = "array", items = { type = "string" }, uniqueItems = true }
            local f = only(diff.diff(old, new))
            assert.same({ "/", "unique_items_added", true }, { f.pointer, f.change, f.breaking })
        end)
        it("looks into items", function()
            local f = only(diff.diff({ type = "array", items = { type = "string", maxLength = 20 } },
                { type = "array", items = { type = "string", maxLength = 10 } }))
            assert.same({ "/items", "limit_tightened" }, { f.pointer, f.change })
        end)
        it("classifies the support-ticket 4-digit variant as breaking", function()
            local t = dofile("examples/support_ticket.lua")
            local f, breaking = diff.diff(t.contract.schema, t.contract_4digits.schema)
            assert.is_true(breaking)
            local kinds = {}
            for _, x in ipairs(f) do kinds[#kinds + 1] = x.change end
            assert.same({ "pattern_changed", "annotation_changed" }, kinds)
        end)
        it("reports several findings in schema order", function()
            local f, breaking = changed(function(s)
                s.properties.note = nil
                s.properties.intent.enum = { "delivery", "return", "payment", "other", "refund" }
                s.properties.summary.maxLength = 500
            end)
            assert.is_true(breaking)
            local got = {}
            for i, x in ipairs(f) do got[i] = x.pointer .. " " .. x.change end
            assert.same({ "/properties/intent enum_value_added", "/properties/note property_removed",
                "/properties/summary limit_loosened" }, got)
        end)
        it("reads draft-04's boolean exclusiveMinimum and exclusiveMaximum as bounds", function()
            local d4 = "http://json-schema.org/draft-04/schema#"
            local f, breaking = diff.diff({ ["$schema"] = d4, type = "number", minimum = 0, exclusiveMinimum = false },
                { ["$schema"] = d4, type = "number", minimum = 0, exclusiveMinimum = true })
            assert.is_true(breaking)
            assert.same({ "limit_tightened", "exclusiveMinimum" }, { only(f).change, only(f).keyword })
            f = only(diff.diff({ maximum = 5, exclusiveMaximum = true }, { maximum = 5 }))
            assert.same({ "limit_loosened", true }, { f.change, f.breaking })
            assert.truthy(f.reason:find("from < 5 to <= 5", 1, true), f.reason)
            -- the same bound in the two drafts' spellings is no change
            assert.same({}, (diff.diff({ minimum = 0, exclusiveMinimum = true }, { exclusiveMinimum = 0 })))
        end)
        it("compares draft-04 tuple items position by position", function()
            local f = only(diff.diff({ items = { { type = "string" }, { type = "integer" } } },
                { items = { { type = "string" }, { type = "number" } } }))
            assert.same({ "/items/1", "type_widened" }, { f.pointer, f.change })
        end)
        it("sees an enum written as an anyOf of consts as the same values", function()
            local f, breaking = diff.diff({ enum = { "a", "b" } }, { anyOf = { { const = "a" }, { const = "b" } } })
            assert.same({}, f)
            assert.is_false(breaking)
            -- and a type added that the values already had is no change either
            assert.same({}, (diff.diff({ enum = { "a", "b" } }, { type = "string", enum = { "a", "b" } })))
        end)
        it("names the value an enum-to-const change drops, not values consumers never got", function()
            local x = only(diff.diff({ enum = { "a", "b" } }, { const = "a" }))
            assert.same({ "enum_value_removed", true, "const" }, { x.change, x.breaking, x.keyword })
            assert.truthy(x.reason:find('value "b" is no longer allowed', 1, true), x.reason)
        end)
        it("breaks on a new field whose name an old patternProperties pattern matched with another schema", function()
            local old = { type = "object", patternProperties = { ["^x_"] = { type = "integer" } },
                additionalProperties = false }
            local new = { type = "object", properties = { x_name = { type = "string" } },
                patternProperties = { ["^x_"] = { type = "integer" } }, additionalProperties = false }
            local x = only(diff.diff(old, new))
            assert.same({ "/properties/x_name", "property_added_constrained", true }, { x.pointer, x.change, x.breaking })
            assert.truthy(x.reason:find('"^x_"', 1, true), x.reason)
            -- the pattern's own schema, or none, changes nothing; a name it does not match is free
            new.properties.x_name = { type = "integer" }
            local _, breaking = diff.diff(old, new)
            assert.is_false(breaking)
            new.properties = { y = { type = "string" } }
            assert.same("property_added_optional", only(diff.diff(old, new)).change)
        end)
        it("raises on a schema that is not a table", function()
            assert.has_error(function() diff.diff("x", {}) end, "diff: schema 1 must be a table or a boolean, got string")
        end)
        it("raises on a missing schema, old or new, naming which", function()
            assert.has_error(function() diff.diff(nil, {}) end, "diff: schema 1 must be a table or a boolean, got nil")
            assert.has_error(function() diff.diff(nil, nil) end, "diff: schema 1 must be a table or a boolean, got nil")
            assert.has_error(function() diff.diff({}, nil) end, "diff: schema 2 must be a table or a boolean, got nil")
            assert.same({}, (diff.diff(false, false)))
        end)
    end)
end)
