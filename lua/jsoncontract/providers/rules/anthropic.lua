--- What Anthropic structured outputs (`output_config.format`, type "json_schema") accept
-- and enforce, as data for jsoncontract.providers.schema_subset. One row per rule, each with its
-- source and the date it was checked.
-- @module jsoncontract.providers.rules.anthropic
local CHECKED = "2026-12-01"
-- Rows added or changed when checked again.
local RECHECKED = "2026-12-04"

-- Sources: `note` says what was read (and from where, when the primary page was not in the
-- reference corpus); `url` is where a user can open it.
local DOCS = { note = "Anthropic docs, Structured outputs, \"JSON Schema limitations\"; primary page not found in "
    .. "reference, read from a mirror of it (learn-ai.blindshot.kz/docs/anthropic/platform/build-with-claude/"
    .. "structured-outputs) and from LangSchema.Converter.Anthropic (hexdocs lang_schema 0.7.1), which cites it",
    url = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations" }
local SDK = { note = "anthropics/anthropic-sdk-python src/anthropic/lib/_parse/_transform.py transform_schema "
    .. "(commit 00f1c336)",
    url = "https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/lib/_parse/_transform.py" }
local PREFILL = { note = "Anthropic docs, What's new in Claude 4.6, \"Prefill removal\" (read in the reference as "
    .. "quoted in the migration guide: \"Prefilling assistant messages returns a 400 error on Claude 4.6 "
    .. "models\"); Opus 4.7 and Sonnet 4.6 from secondary reports (openclaw/openclaw #72739, livekit/agents "
    .. "#4907: \"This model does not support assistant message prefill\")",
    url = "https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-6#prefill-removal" }
local PREFILL_OK = { note = "Anthropic docs, Messages API: a last assistant message is continued (prefill); "
    .. "strands-agents/sdk-python #1694 reports it working on Sonnet 4.5 and failing on Opus 4.6",
    url = "https://github.com/strands-agents/sdk-python/issues/1694" }
local STRICT_TOOLS = { note = "Anthropic docs, Strict tool use: strict: true on a tool definition constrains the "
    .. "tool input to its input_schema by grammar-constrained sampling; the supported subset is that of "
    .. "structured outputs (\"JSON Schema limitations\")",
    url = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use" }
local ISSUE_1185 = { note = DOCS.note .. "; the 400 seen past it (\"The compiled grammar is too large\") in "
    .. "anthropics/anthropic-sdk-python issue #1185 and anthropics/claude-code issue #55539", url = DOCS.url }

local function row(src, why, extra, checked)
    local r = { source = src.note, url = src.url, checked = checked or CHECKED, why = why }
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
    sources = { docs = DOCS.note, sdk = SDK.note, prefill = PREFILL.note, strict_tools = STRICT_TOOLS.note },
    --- An assistant message last (a prefill) together with JSON output, on a model that takes a
    -- prefill at all: sent in mode "prompt" with the prefill.
    prefill = row({ note = "not found in reference as a documented rule; from www.fableguide.com/cookbook/"
        .. "structured-outputs.html (\"prefilling ... returns 400 now\")",
        url = "https://www.fableguide.com/cookbook/structured-outputs.html" },
        "an assistant prefill cannot be combined with structured outputs", { fallback = "prompt" }),
    --- Models and a prefill, one row per model family, first match wins (Lua patterns on the model
    -- id, which may carry a date or a cloud prefix such as "us.anthropic."). `accepts = false`: a
    -- request whose last message is from the assistant gets HTTP 400, in every mode, so the prefill
    -- is left out. A model no row names is treated as rejecting it (newer models dropped it).
    prefill_models = {
        row(PREFILL, "Claude Opus 4.6 rejects an assistant prefill (HTTP 400)",
            { pattern = "claude%-opus%-4[%-%.]6", accepts = false }, RECHECKED),
        row(PREFILL, "Claude Sonnet 4.6 rejects an assistant prefill (HTTP 400)",
            { pattern = "claude%-sonnet%-4[%-%.]6", accepts = false }, RECHECKED),
        row(PREFILL, "Claude Opus 4.7 rejects an assistant prefill (HTTP 400)",
            { pattern = "claude%-opus%-4[%-%.]7", accepts = false }, RECHECKED),
        row(PREFILL_OK, "Claude 4.5 models take an assistant prefill",
            { pattern = "claude%-%a+%-4[%-%.]5", accepts = true }, RECHECKED),
        row(PREFILL_OK, "Claude 4 and 4.1 models take an assistant prefill",
            { pattern = "claude%-%a+%-4[%-%.]?1?%-20", accepts = true }, RECHECKED),
        row(PREFILL_OK, "Claude 3 models take an assistant prefill",
            { pattern = "claude%-3", accepts = true }, RECHECKED),
    },
    prefill_unknown = row(PREFILL, "a model not known to take an assistant prefill: newer Claude models "
        .. "reject it with HTTP 400, so it is left out", { accepts = false }, RECHECKED),
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
        .. "100 on {n,m} is jsoncontract's (a limit is not found in reference; failures with large bounds "
        .. "were reported by a user)", { action = "simple", no_word_boundary = true, max_repeat = 100 }),
    typeless = row({ note = SDK.note .. "; whether the API itself rejects such a node is not found in reference",
        url = SDK.url },
        "the SDK's transform raises on a schema without 'type', 'enum', 'anyOf', 'oneOf' or 'allOf'"),
    recursion = row(DOCS, "recursive schemas are not supported", { action = "fails" }),
    limits = {
        optional = row(ISSUE_1185,
            "at most 24 optional properties across the schema (\"schema is too complex\")",
            { max = 24, keyword = "required" }),
        unions = row(DOCS, "at most 16 properties with anyOf or a type list (\"schema is too complex\")",
            { max = 16, keyword = "anyOf" }),
    },
    fallback = "prompt",
}

--- Mode "tool": strict tool use, the schema as one tool's `input_schema` with `strict: true`
-- and `tool_choice` naming that tool; the answer is the tool call's input. Same subset as
-- structured outputs; the input schema must be an object.
local tool = {}
for k, v in pairs(_M.native) do tool[k] = v end
tool.name = "Anthropic strict tool use"
tool.strict_tool = row(STRICT_TOOLS, "strict: true constrains the tool input to input_schema", nil, RECHECKED)
tool.root = { object = row(STRICT_TOOLS, "a tool's input_schema must be an object", { fallback = "prompt" },
    RECHECKED) }
_M.tool = tool

return _M
