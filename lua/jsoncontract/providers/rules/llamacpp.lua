--- What llama.cpp's JSON-Schema-to-grammar converter (used by llama-server's
-- `response_format` / `json_schema`, and by Ollama's `format`) turns into grammar, as data
-- for jsoncontract.providers.schema_subset. The converter skips what it does not know silently, so
-- every row here is either enforced, rewritten into a form it enforces, or reported.
-- @module jsoncontract.providers.rules.llamacpp
local CHECKED = "2026-12-01"
-- Rows added or changed when checked again.
local RECHECKED = "2026-12-04"

-- Sources: `note` says what was read; `url` is where a user can open it.
local CONV = { note = "ggml-org/llama.cpp common/json-schema-to-grammar.cpp (commit 011c6c3c)",
    url = "https://github.com/ggml-org/llama.cpp/blob/011c6c3c305634c65886cf7f32805907f667590c/"
        .. "common/json-schema-to-grammar.cpp" }
local README = { note = "ggml-org/llama.cpp grammars/README.md, known limitations (commit 363a490b)",
    url = "https://github.com/ggml-org/llama.cpp/blob/master/grammars/README.md" }
local GBNF = { note = "llama.cpp GBNF escapes (x, u, U, t, r, n, \\, \", [, ]): src/llama-grammar.cpp not found in "
    .. "reference; from the GBNF syntax in grammars/README.md", url = README.url }

local function row(src, why, extra, checked)
    local r = { source = src.note, url = src.url, checked = checked or CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local KW = row(CONV, "turned into grammar by the converter")

local _M = { provider = "llamacpp", checked = CHECKED, sources = { converter = CONV.note, readme = README.note } }

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
    pattern = row({ note = CONV.note .. "; " .. GBNF.note, url = CONV.url },
        "patterns must be ^...$; \\d, \\w, \\s are copied verbatim "
        .. "into the grammar, lookaround is skipped", { action = "grammar" }),
    grammar = {
        length_next_to_pattern = row(CONV, "visit() checks pattern and format before minLength/maxLength"),
        closed_by_default = row(README, "additionalProperties defaults to false in the grammar"),
        length_needs_type = row(CONV, "minLength/maxLength are read only on a schema with type string"),
        integer_bounds_only = row(README, "minimum/maximum bounds are enforced for type integer only"),
        prefix_items = row(CONV, "prefixItems becomes a fixed-length tuple; items next to it is read "
            .. "first (items: false breaks it), minItems/maxItems are not read"),
        --- visit() reads minimum, and exclusiveMinimum only when there is no minimum (the same for
        -- the maxima), each through get<int64_t>() (a fraction is cut toward zero): for an integer
        -- the bounds are sent as one inclusive integer minimum and maximum.
        integer_bounds = row(CONV, "for type integer only one lower and one upper bound is read (minimum "
            .. "before exclusiveMinimum, maximum before exclusiveMaximum), each cut to an integer toward zero",
            nil, RECHECKED),
        --- visit() takes const and enum before every other keyword of the node.
        enum_first = row(CONV, "const and enum are turned into grammar before, and instead of, every other "
            .. "keyword of the schema (pattern, minLength, minimum, ...)", nil, RECHECKED),
        --- resolve_refs() accepts only "#/..." and "https://..." references.
        refs = row(CONV, "resolve_refs accepts only references starting with \"#/\" or \"https://\" (else "
            .. "\"Unsupported ref\", and the server answers HTTP 400)", { root_def = "root" }, RECHECKED),
        --- _visit_pattern() reads "(?:" as a group; older copies of the converter did not.
        non_capturing = row({ note = CONV.note .. " reads (?: as a plain group (\"skip ?: for non-capturing "
            .. "group\"); older copies of the converter (as vendored by older Ollama builds) mishandle it: "
            .. "reported secondhand, not checked in reference", url = CONV.url },
            "(?:...) is written (...), which means the same where there are no backreferences", nil, RECHECKED),
    },
    --- A converter behaviour that makes the grammar wider than the schema (the local gate
    -- catches the difference).
    dot = row(CONV, "'.' is [^\\x0A\\x0D] (ECMA-262 also excludes U+2028, U+2029): the grammar allows "
        .. "two line separators the schema does not; the local gate catches them"),
    fallback = "json",
}

return _M
