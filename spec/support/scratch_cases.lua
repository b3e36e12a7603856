-- Schemas and texts whose validation leaves the validator's no-state fast path (uniqueItems
-- past 16 items, a 'regex' format asserted, scratch past 64 entries, the memo, the work
-- budget): spec/ffi_spec.lua and spec/schema_spec.lua check that the answers stay the same.
-- Returns a function that makes a fresh list of { schema, { texts }, compile opts or nil }.
return function()
    local members = {}
    for k = 1, 100 do members[#members + 1] = string.format('"k%d":%d', k, k) end
    local many = "{" .. table.concat(members, ",") .. "}"
    local items = {}
    for k = 1, 40 do items[k] = tostring(k) end
    local uniq, dup = "[" .. table.concat(items, ",") .. "]", "[" .. table.concat(items, ",") .. ",7]"
    return {
        { { type = "array", uniqueItems = true }, { uniq, dup, "[1,2]", "[1,1]" } },
        { { type = "string", format = "regex" }, { '"^a+$"', '"(a"' }, { format_assertion = true } },
        { { unevaluatedProperties = false, properties = { k1 = true } }, { many, '{"k1":1}' } },
        { { unevaluatedProperties = { type = "integer" } }, { many, '{"k1":"x"}' } },
        { { type = "array", items = { anyOf = { { type = "string" }, { type = "integer" } } } },
          { uniq, "[" .. string.rep('"a",', 200) .. '"b"]', "[" .. string.rep("1,", 200) .. "null]" } },
        { { ["$defs"] = { t = { anyOf = { { type = "integer" }, { items = { ["$ref"] = "#/$defs/t" } } } } },
            ["$ref"] = "#/$defs/t" },
          { string.rep("[", 300) .. string.rep("]", 300), string.rep("[", 300) .. "null" .. string.rep("]", 300) } },
        { { items = { type = "integer" } }, { uniq }, { work_budget = 5 } },
    }
end
