--- What Gemini's `generationConfig.responseJsonSchema` accepts and enforces, as data for
-- jsoncontract.providers.schema_subset. One row per rule, each with its source and the date checked.
-- @module jsoncontract.providers.rules.gemini
local CHECKED = "2026-12-01"
-- Rows added or changed when checked again.
local RECHECKED = "2026-12-04"

-- Sources: `note` says what was read; `url` is where a user can open it.
local TYPES = { note = "googleapis/python-genai google/genai/types.py, GenerationConfig.response_json_schema "
    .. "docstring; read as the same generated text in the reference (the Go, JS, Java and .NET SDK "
    .. "copies and a quote of types.py), the Python file itself not opened",
    url = "https://github.com/googleapis/python-genai/blob/main/google/genai/types.py" }
local ORDER = { note = "secondary: Google's announcement of the JSON Schema support in Structured Outputs (\"the API "
    .. "now preserves the same order as the ordering of keys in the schema ... supported for all Gemini 2.5 "
    .. "models and beyond\"), read in copies at news.fishaiapp.com/news/5051204 and keryc.com; the primary "
    .. "post and docs page not found in reference",
    url = "https://ai.google.dev/gemini-api/docs/structured-output" }

local function row(src, why, extra, checked)
    local r = { source = src.note, url = src.url, checked = checked or CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local KW = row(TYPES, "listed as supported")

local _M = { provider = "gemini", checked = CHECKED, sources = { types = TYPES.note, order = ORDER.note } }

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
    formats_row = row({ note = "not found in reference: the docstring lists format without its values; "
        .. "jsoncontract sends date-time, date and time only", url = TYPES.url },
        "format value not known to be supported"),
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

--- Models that keep the schema's key order without `propertyOrdering` (Gemini 2.5 and later):
-- the same rules less the keyword jsoncontract would add. `models`: a Lua pattern on the model id
-- capturing major and minor version; a model it does not match (an alias such as
-- "gemini-flash-latest", an older model) gets `propertyOrdering` (harmless where not needed).
local ordered = {}
for k, v in pairs(_M.native) do ordered[k] = v end
ordered.property_ordering = nil
ordered.name = "Gemini responseJsonSchema (key order kept)"
_M.native_ordered = ordered
_M.keeps_order = row(ORDER, "Gemini 2.5 and later keep the order of keys in the schema",
    { pattern = "^gemini%-(%d+)%.?(%d*)", since = { 2, 5 } }, RECHECKED)

return _M
