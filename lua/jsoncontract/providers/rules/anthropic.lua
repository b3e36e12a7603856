--- What Anthropic structured outputs (`output_config.format`, type "json_schema") accept
-- and enforce, as data for jsoncontract.providers.schema_subset. One row per rule, each with its
-- source and the date it was checked.
-- @module jsoncontract.providers.rules.anthropic
local CHECKED = "2026-12-01"

local DOCS = "Anthropic docs, Structured outputs, \"JSON Schema limitations\" "
    .. "(platform.claude.com/docs/en/build-with-claude/structured-outputs); primary page not found in "
    .. "reference, read from a mirror of it (learn-ai.blindshot.kz/docs/anthropic/platform/build-with-claude/"
    .. "structured-outputs) and from LangSchema.Converter.Anthropic (hexdocs lang_schema 0.7.1), which cites it"
local SDK = "anthropics/anthropic-sdk-python src/anthropic/lib/_parse/_transform.py transform_schema "
    .. "(commit 00f1c336)"

local function row(source, why, extra)
    local r = { source = source, checked = CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local KW = row(DOCS, "supported by structured outputs")
local F = row(SDK, "SupportedStringFormats")
local NUMERIC = row(DOCS, "numerical constraints (minimum, maximum, multipleOf, ...) are not supported")
local LENGTH = row(DOCS, "string length constraints are not supported")
local ARRAY = row(DOCS, "array constraints other than minItems 0 or 1 are not supported")

local _M = {
    provider = "anthropic",
    checked = CHECKED,
    sources = { docs = DOCS, sdk = SDK },
    --- An assistant message last (a prefill) together with JSON output.
    prefill = row("not found in reference as a documented rule; from www.fableguide.com/cookbook/"
        .. "structured-outputs.html (\"prefilling ... returns 400 now\") and issue 13",
        "an assistant prefill cannot be combined with structured outputs", { fallback = "prompt" }),
}

--- Mode "native": `output_config.format` json_schema.
_M.native = {
    name = "Anthropic structured outputs",
    keywords = {
        type = KW, enum = KW, const = KW, properties = KW, required = KW, additionalProperties = KW,
        items = KW, anyOf = KW, ["$defs"] = KW, definitions = KW, ["$ref"] = KW, title = KW,
        description = KW, default = KW, pattern = KW, format = KW,
        minItems = row(DOCS, "only minItems 0 or 1 is supported (the SDK moves other values into the "
            .. "description)", { values = { [0] = true, [1] = true } }),
    },
    keywords_row = KW,
    unsupported = {
        minimum = NUMERIC, maximum = NUMERIC, exclusiveMinimum = NUMERIC, exclusiveMaximum = NUMERIC,
        multipleOf = NUMERIC, minLength = LENGTH, maxLength = LENGTH, maxItems = ARRAY,
        uniqueItems = ARRAY, contains = ARRAY, prefixItems = ARRAY,
    },
    formats = {
        ["date-time"] = F, time = F, date = F, duration = F, email = F, hostname = F, uri = F,
        ipv4 = F, ipv6 = F, uuid = F,
    },
    formats_row = F,
    ref_siblings = row(SDK, "the SDK's transform sends only \"$ref\" of a node that has one, so its "
        .. "siblings would be lost"),
    all_of = row(DOCS, "allOf support is limited (not with $ref); jsoncontract sends it only merged"),
    one_of = row(SDK, "the SDK's transform sends oneOf as anyOf", { action = "anyOf" }),
    close_objects = row(DOCS, "additionalProperties: false is required on every object"),
    enum_types = row(DOCS, "enum values must be primitives (complex types are not supported)",
        { types = { string = true, number = true, boolean = true, null = true } }),
    pattern = row(DOCS, "only a simple regex subset: no backreferences, lookaround or \\b; the bound of "
        .. "100 on {n,m} is jsoncontract's (a limit is not found in reference; issue 13 reports failures "
        .. "with large bounds)", { action = "simple", no_word_boundary = true, max_repeat = 100 }),
    typeless = row(SDK .. "; whether the API itself rejects such a node is not found in reference",
        "the SDK's transform raises on a schema without 'type', 'enum', 'anyOf', 'oneOf' or 'allOf'"),
    recursion = row(DOCS, "recursive schemas are not supported", { action = "fails" }),
    limits = {
        optional = row(DOCS .. "; the 400 seen past it (\"The compiled grammar is too large\") in "
            .. "anthropics/anthropic-sdk-python issue #1185 and anthropics/claude-code issue #55539",
            "at most 24 optional properties across the schema (\"schema is too complex\")",
            { max = 24, keyword = "required" }),
        unions = row(DOCS, "at most 16 properties with anyOf or a type list (\"schema is too complex\")",
            { max = 16, keyword = "anyOf" }),
    },
    fallback = "prompt",
}

return _M
