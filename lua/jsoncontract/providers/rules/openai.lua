--- What OpenAI structured outputs (Chat Completions `response_format` json_schema and the
-- Responses API `text.format`) accept and enforce, as data for
-- jsoncontract.providers.schema_subset. One row per rule, each with its source and the date it was
-- checked; a change of OpenAI's rules is a one-row edit here.
-- @module jsoncontract.providers.rules.openai
local CHECKED = "2026-12-01"
-- Rows added or changed when checked again.
local RECHECKED = "2026-12-04"

-- Sources: `note` says what was read (and, where the primary page was not in the reference
-- corpus, what it was read from instead); `url` is where a user can open it.
local GUIDE = { note = "OpenAI docs, Structured Outputs guide, \"Supported schemas\"; primary page not found "
    .. "in reference, read from its summary at jsonschemaprofiles.unitvectorylabs.com/schemas/openai (profile "
    .. "2026-02) and the limits as quoted in artifactize-core src/agent/verdict/structured/limits.rs (docs.rs)",
    url = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas" }
local SDK = { note = "openai/openai-python src/openai/lib/_pydantic.py _ensure_strict_json_schema (commit 00472383)",
    url = "https://github.com/openai/openai-python/blob/main/src/openai/lib/_pydantic.py" }
local TYPES = { note = "openai/openai-python src/openai/types/shared/response_format_json_schema.py "
    .. "(JSONSchema.name, strict)",
    url = "https://github.com/openai/openai-python/blob/main/src/openai/types/shared/response_format_json_schema.py" }
local OBSERVED = { note = "not found in reference; from a 400 reported by a user (\"schema must have a 'type' "
    .. "key\"); the guide asks for a type on every schema", url = GUIDE.url }
-- minLength/maxLength in strict mode: secondary sources only (a live probe reported there).
local LENGTHS = { note = "secondary: pydantic/pydantic-ai issue #7315 (2026-08-09) and PR #7400 (2026-08-12) "
    .. "report minLength/maxLength accepted in strict mode and enforced (a live probe: 200, constraints "
    .. "enforced), and the openai-node SDK's transform leaving them in; OpenAI's own guide page not found in "
    .. "reference", url = "https://github.com/pydantic/pydantic-ai/issues/7315" }
local TUPLES = { note = "secondary: pydantic/pydantic-ai issue #7315 reports prefixItems rejected in strict mode "
    .. "(the openai-node SDK marks it unsupported); jsoncontract never sends items without its prefixItems",
    url = "https://github.com/pydantic/pydantic-ai/issues/7315" }

local function row(src, why, extra, checked)
    local r = { source = src.note, url = src.url, checked = checked or CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local KW = row(GUIDE, "supported in strict mode")
local STRICT_KEYWORDS = {
    type = KW, enum = KW, const = KW, properties = KW, required = KW, additionalProperties = KW,
    items = KW, anyOf = KW, ["$defs"] = KW, definitions = KW, ["$ref"] = KW, title = KW,
    description = KW, pattern = KW, format = KW, multipleOf = KW, maximum = KW,
    exclusiveMaximum = KW, minimum = KW, exclusiveMinimum = KW, minItems = KW, maxItems = KW,
    minLength = row(LENGTHS, "accepted and enforced in strict mode (reported, see source)", nil, RECHECKED),
    maxLength = row(LENGTHS, "accepted and enforced in strict mode (reported, see source)", nil, RECHECKED),
}
local F = row(GUIDE, "supported string format")
local FORMATS = {
    ["date-time"] = F, time = F, date = F, duration = F, email = F, hostname = F, ipv4 = F,
    ipv6 = F, uuid = F,
}
local COMPOSITION = row(GUIDE, "composition keyword not supported in strict mode (allOf, not, "
    .. "dependentRequired, dependentSchemas, if, then, else)")

local _M = {
    provider = "openai",
    checked = CHECKED,
    sources = { guide = GUIDE.note, sdk = SDK.note, types = TYPES.note, lengths = LENGTHS.note },
    --- `json_schema.name`: a-z, A-Z, 0-9, "_" and "-", at most 64 characters.
    schema_name = row(TYPES, "name must be a-z, A-Z, 0-9, underscores and dashes, at most 64"),
}

--- Mode "native": `strict: true`.
_M.native = {
    name = "OpenAI strict mode",
    keywords = STRICT_KEYWORDS,
    keywords_row = row(GUIDE, "only the keywords listed under \"Supported schemas\" are allowed"),
    formats = FORMATS,
    formats_row = row(GUIDE, "string formats listed under \"Supported schemas\""),
    unsupported = {
        allOf = COMPOSITION, ["not"] = COMPOSITION, dependentRequired = COMPOSITION,
        dependentSchemas = COMPOSITION, ["if"] = COMPOSITION, ["then"] = COMPOSITION, ["else"] = COMPOSITION,
        default = row({ note = "not found in reference; from a 400 quoted at zenn.dev/nicopin/scraps/"
            .. "a8d8f53f5faebb (\"'default' is not permitted\")",
            url = "https://zenn.dev/nicopin/scraps/a8d8f53f5faebb" },
            "'default' is not permitted in strict mode"),
        prefixItems = row(TUPLES, "prefixItems is rejected in strict mode", nil, RECHECKED),
    },
    ref_siblings = row(SDK, "\"$ref\" cannot have sibling keywords in strict mode; openai-python unravels "
        .. "the reference the same way"),
    all_of = row(GUIDE, "allOf is not supported in strict mode (openai-python merges a one-part allOf)"),
    one_of = row(GUIDE, "strict mode supports anyOf, not oneOf", { action = "anyOf" }),
    close_objects = row(GUIDE, "every object needs additionalProperties: false"),
    all_required = row(GUIDE, "every property must be in required; an optional field is "
        .. "emulated as a union with null"),
    pattern = row({ note = "not found in reference: the guide lists pattern as supported without naming a regex "
        .. "subset; jsoncontract leaves out lookaround, named groups and backreferences (not regular, so "
        .. "beyond a constrained decoder)", url = GUIDE.url }, "regex construct beyond a regular grammar",
        { action = "simple" }),
    enum_chars = row({ note = "not found in reference; from requests reported at community.openai.com (a "
        .. "newline gives 400, NUL 500)", url = "https://community.openai.com/t/"
        .. "limitations-on-enum-values-in-structured-outputs/984464" },
        "strict mode rejects enum values with a newline or NUL", { chars = { "\n", "\0" },
            what = "a newline or NUL" }),
    union_first_keys = row({ note = "not found in reference; from the 400 quoted at zenn.dev/nicopin/scraps/"
        .. "a8d8f53f5faebb (\"Objects provided via 'anyOf' must not share identical first keys\")",
        url = "https://zenn.dev/nicopin/scraps/a8d8f53f5faebb" },
        "objects in an anyOf must not share their first key"),
    typeless = row(OBSERVED, "every schema needs a type (or anyOf, enum, const, $ref)"),
    root = {
        object = row(GUIDE, "the root must be an object", { fallback = "prompt" }),
        no_union = row(GUIDE, "the root must not be anyOf", { fallback = "json" }),
    },
    limits = {
        properties = row(GUIDE, "at most 5,000 object properties in all", { max = 5000 }),
        depth = row(GUIDE, "at most 10 levels of nesting", { max = 10 }),
        chars = row(GUIDE, "at most 120,000 characters of property names, definition names, enum "
            .. "and const values", { max = 120000 }),
        enum_values = row(GUIDE, "at most 1,000 enum values in all", { max = 1000, keyword = "enum" }),
        large_enum = row(GUIDE, "a string enum of more than 250 values may hold at most 15,000 "
            .. "characters", { over = 250, max = 15000 }),
    },
    --- Where a request that strict mode would reject goes instead.
    fallback = "native-nonstrict",
}

--- Strict mode on an OpenAI-compatible server (any base URL but api.openai.com): string lengths
-- are not sent, since only OpenAI's own API is reported to take them (pydantic-ai keeps them off
-- by default for compatible providers, one of which documents them as unsupported).
local compatible = {}
for k, v in pairs(_M.native) do compatible[k] = v end
compatible.name = "OpenAI-compatible strict mode"
compatible.keywords = {}
for k, v in pairs(STRICT_KEYWORDS) do compatible.keywords[k] = v end
compatible.keywords.minLength, compatible.keywords.maxLength = nil, nil
local COMPAT = row({ note = "secondary: pydantic/pydantic-ai PR #7400 keeps minLength/maxLength off for "
    .. "OpenAI-compatible providers by default (DeepSeek documents them unsupported); only OpenAI's API was "
    .. "probed", url = "https://github.com/pydantic/pydantic-ai/pull/7400" },
    "not sent to an OpenAI-compatible server: only OpenAI's own API is reported to take string lengths", nil,
    RECHECKED)
compatible.unsupported = {}
for k, v in pairs(_M.native.unsupported) do compatible.unsupported[k] = v end
compatible.unsupported.minLength, compatible.unsupported.maxLength = COMPAT, COMPAT
_M.compatible = compatible

--- Mode "native-nonstrict": `strict: false`: the schema is shown to the model, nothing is
-- enforced (so every keyword counts as not enforced).
_M.nonstrict = {
    name = "OpenAI (strict false)",
    keywords = STRICT_KEYWORDS,
    keywords_row = _M.native.keywords_row,
    formats = FORMATS,
    formats_row = _M.native.formats_row,
    unsupported = _M.native.unsupported,
    ref_siblings = _M.native.ref_siblings,
    all_of = _M.native.all_of,
    one_of = _M.native.one_of,
    close_objects = _M.native.close_objects,
    strict_false = row(GUIDE, "with strict false the schema is not enforced: structured outputs "
        .. "are only guaranteed with strict true"),
}

return _M
