--- What Ollama's `format` (a JSON Schema) enforces: the llama.cpp converter's rules (see
-- jsoncontract.providers.rules.llamacpp), plus Ollama's own.
-- @module jsoncontract.providers.rules.ollama
local llama = require "jsoncontract.providers.rules.llamacpp"

local CHECKED = "2026-12-01"
-- Rows added or changed when checked again.
local RECHECKED = "2026-12-04"

local DOCS = { note = "Ollama docs, Structured outputs (docs.ollama.com/capabilities/structured-outputs)",
    url = "https://docs.ollama.com/capabilities/structured-outputs" }
local SERVER = { note = "Ollama server code (format -> grammar through llama.cpp's converter): not found in "
    .. "reference as a whole; from Ollama's blog post \"Structured outputs\" (ollama.com/blog/structured-outputs, "
    .. "2024-12-06)", url = "https://ollama.com/blog/structured-outputs" }
local GRAMMAR_BUF = { note = "ollama/ollama llama/llama.go SchemaToGrammar (buffer of max(32768, min(1 MiB, "
    .. "4 x schema bytes)); older builds a fixed 32768) and llama/sampling_ext.cpp schema_to_grammar (the "
    .. "grammar text cut at that length); read as excerpts in the reference, commit not pinned",
    url = "https://github.com/ollama/ollama/blob/main/llama/llama.go" }

local function row(src, why, extra, checked)
    local r = { source = src.note, url = src.url, checked = checked or CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local _M = { provider = "ollama", checked = CHECKED, sources = { docs = DOCS.note, server = SERVER.note,
    grammar_buffer = GRAMMAR_BUF.note } }

--- Mode "native": the same subset as llama.cpp's grammar.
local native = {}
for k, v in pairs(llama.native) do native[k] = v end
native.name = "Ollama format (llama.cpp grammar)"
native.converter = row(SERVER, "Ollama turns format into grammar with llama.cpp's converter")
native.fallback = "json"
--- The grammar text is cut at max(32 KiB, 4 x the schema's bytes) (at most 1 MiB; older builds:
-- 32 KiB): a longer grammar no longer means the schema. jsoncontract cannot know the server's
-- build, so it estimates a lower bound of the grammar's length: past the limit the request
-- "fails", past 32 KiB only it is "weakened" (older builds cut it).
native.grammar_buffer = row(GRAMMAR_BUF, "Ollama cuts the grammar made from format at max(32 KiB, 4 x the "
    .. "schema's bytes), at most 1 MiB", { min = 32768, factor = 4, max = 1048576 }, RECHECKED)
_M.native = native

--- Ollama's cloud models: the schema would be ignored.
_M.cloud = row(DOCS, "Ollama's Cloud does not support structured outputs (models named *-cloud or "
    .. ":cloud, or the host ollama.com)", { fallback = "prompt" })

--- The docs advise also giving the schema in the prompt (jsoncontract's prompt renders it).
_M.schema_in_prompt = row(DOCS, "it is ideal to also pass the JSON schema as a string in the prompt")

return _M
