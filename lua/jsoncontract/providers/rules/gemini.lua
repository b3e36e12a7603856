--- What Gemini's `generationConfig.responseJsonSchema` accepts and enforces, as data for
-- jsoncontract.providers.schema_subset. One row per rule, each with its source and the date checked.
-- @module jsoncontract.providers.rules.gemini
local CHECKED = "2026-12-01"

local TYPES = "googleapis/python-genai google/genai/types.py, GenerationConfig.response_json_schema "
    .. "docstring; read as the same generated text in the reference (the Go, JS, Java and .NET SDK "
    .. "copies and a quote of types.py), the Python file itself not opened"

local function row(source, why, extra)
    local r = { source = source, checked = CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local KW = row(TYPES, "listed as supported")

local _M = { provider = "gemini", checked = CHECKED, sources = { types = TYPES } }

--- Mode "native": responseMimeType application/json + responseJsonSchema.
_M.native = {
    name = "Gemini responseJsonSchema",
    keywords = {
        ["$id"] = KW, ["$defs"] = KW, ["$ref"] = KW, ["$anchor"] = KW, type = KW, format = KW,
        title = KW, description = KW, enum = KW, items = KW, prefixItems = KW, minItems = KW,
        maxItems = KW, minimum = KW, maximum = KW, anyOf = KW, oneOf = KW, properties = KW,
        additionalProperties = KW, required = KW, propertyOrdering = KW,
    },
    keywords_row = row(TYPES, "only the listed properties are supported"),
    formats = {
        ["date-time"] = KW, date = KW, time = KW,
    },
    formats_row = row("not found in reference: the docstring lists format without its values; "
        .. "jsoncontract sends date-time, date and time only", "format value not known to be supported"),
    defs_key = row(TYPES, "$defs is listed, definitions is not", { key = "$defs" }),
    const_as_enum = row(TYPES, "const is not listed; enum (strings and numbers) is"),
    enum_types = row(TYPES, "enum is supported for strings and numbers",
        { types = { string = true, number = true } }),
    ref_siblings = row(TYPES, "if $ref is set on a sub-schema, no other properties except those "
        .. "starting with $ may be set"),
    all_of = row(TYPES, "allOf is not listed"),
    one_of = row(TYPES, "oneOf is interpreted the same as anyOf", { action = "as_anyOf" }),
    recursion = row(TYPES, "cyclic references may only be used within non-required properties "
        .. "(nullable properties are not sufficient)", { action = "fails_if_required" }),
    property_ordering = row(TYPES, "the non-standard propertyOrdering may be set; jsoncontract sets it "
        .. "from the author's order"),
    fallback = "json",
}

return _M
