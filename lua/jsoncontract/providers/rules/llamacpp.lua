--- What llama.cpp's JSON-Schema-to-grammar converter (used by llama-server's
-- `response_format` / `json_schema`, and by Ollama's `format`) turns into grammar, as data
-- for jsoncontract.providers.schema_subset. The converter skips what it does not know silently, so
-- every row here is either enforced, rewritten into a form it enforces, or reported.
-- @module jsoncontract.providers.rules.llamacpp
local CHECKED = "2026-12-01"

local CONV = "ggml-org/llama.cpp common/json-schema-to-grammar.cpp (commit 011c6c3c)"
local README = "ggml-org/llama.cpp grammars/README.md, known limitations (commit 363a490b)"
local GBNF = "llama.cpp GBNF escapes (x, u, U, t, r, n, \\, \", [, ]): src/llama-grammar.cpp not found in "
    .. "reference; from the GBNF syntax in grammars/README.md"

local function row(source, why, extra)
    local r = { source = source, checked = CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local KW = row(CONV, "turned into grammar by the converter")

local _M = { provider = "llamacpp", checked = CHECKED, sources = { converter = CONV, readme = README } }

local NOT = row(README, "unsupported features are skipped silently")

--- Mode "native": the grammar made from the schema.
_M.native = {
    name = "llama.cpp grammar",
    keywords = {
        type = KW, enum = KW, const = KW, properties = KW, required = KW, additionalProperties = KW,
        items = KW, prefixItems = KW, anyOf = KW, oneOf = KW, ["$defs"] = KW, definitions = KW,
        ["$ref"] = KW, title = KW, description = KW, minItems = KW, maxItems = KW, minLength = KW,
        maxLength = KW, pattern = KW, format = KW, minimum = KW, maximum = KW, exclusiveMinimum = KW,
        exclusiveMaximum = KW,
    },
    keywords_row = NOT,
    unsupported = {
        uniqueItems = row(README, "uniqueItems is not supported"),
        contains = row(README, "contains / minContains are not supported"),
        ["not"] = row(README, "not is not supported"),
        ["if"] = row(README, "conditionals are not supported"),
        ["then"] = row(README, "conditionals are not supported"),
        ["else"] = row(README, "conditionals are not supported"),
        dependentSchemas = row(README, "dependentSchemas is not supported"),
        patternProperties = row(README, "patternProperties is not supported"),
        ["$anchor"] = row(README, "$anchor is not supported"),
    },
    formats = { date = KW, time = KW, ["date-time"] = KW, uuid = KW },
    formats_row = row(CONV, "STRING_FORMAT_RULES has date, time, date-time; uuid has its own rule"),
    ref_siblings = row(CONV, "visit() follows $ref first and ignores every sibling"),
    all_of = row(CONV, "allOf is turned into grammar only for object parts ($ref, properties, enum); "
        .. "other parts collapse to any object"),
    one_of = row(CONV, "oneOf is turned into the same grammar as anyOf", { action = "as_anyOf" }),
    union_siblings = row(README, "properties cannot be mixed with anyOf/oneOf in the same type "
        .. "(visit() takes the union and ignores the rest)"),
    pattern = row(CONV .. "; " .. GBNF, "patterns must be ^...$; \\d, \\w, \\s are copied verbatim "
        .. "into the grammar, lookaround is skipped", { action = "grammar" }),
    grammar = {
        length_next_to_pattern = row(CONV, "visit() checks pattern and format before minLength/maxLength"),
        closed_by_default = row(README, "additionalProperties defaults to false in the grammar"),
        length_needs_type = row(CONV, "minLength/maxLength are read only on a schema with type string"),
        integer_bounds_only = row(README, "minimum/maximum bounds are enforced for type integer only"),
        prefix_items = row(CONV, "prefixItems becomes a fixed-length tuple; items next to it is read "
            .. "first (items: false breaks it), minItems/maxItems are not read"),
    },
    --- A converter behaviour that makes the grammar wider than the schema (the local gate
    -- catches the difference).
    dot = row(CONV, "'.' is [^\\x0A\\x0D] (ECMA-262 also excludes U+2028, U+2029): the grammar allows "
        .. "two line separators the schema does not; the local gate catches them"),
    fallback = "json",
}

return _M
