--- What Ollama's `format` (a JSON Schema) enforces: the llama.cpp converter's rules (see
-- jsoncontract.providers.rules.llamacpp), plus Ollama's own.
-- @module jsoncontract.providers.rules.ollama
local llama = require "jsoncontract.providers.rules.llamacpp"

local CHECKED = "2026-12-01"
local DOCS = "Ollama docs, Structured outputs (docs.ollama.com/capabilities/structured-outputs)"
local SERVER = "Ollama server code (format -> grammar through llama.cpp's converter): not found in "
    .. "reference; from Ollama's blog post \"Structured outputs\" (ollama.com/blog/structured-outputs, "
    .. "2024-12-06) and issue 13"

local function row(source, why, extra)
    local r = { source = source, checked = CHECKED, why = why }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local _M = { provider = "ollama", checked = CHECKED, sources = { docs = DOCS, server = SERVER } }

--- Mode "native": the same subset as llama.cpp's grammar.
local native = {}
for k, v in pairs(llama.native) do native[k] = v end
native.name = "Ollama format (llama.cpp grammar)"
native.converter = row(SERVER, "Ollama turns format into grammar with llama.cpp's converter")
native.fallback = "json"
_M.native = native

--- Ollama's cloud models: the schema would be ignored.
_M.cloud = row(DOCS, "Ollama's Cloud does not support structured outputs (models named *-cloud or "
    .. ":cloud, or the host ollama.com)", { fallback = "prompt" })

--- The docs advise also giving the schema in the prompt (jsoncontract's prompt renders it).
_M.schema_in_prompt = row(DOCS, "it is ideal to also pass the JSON schema as a string in the prompt")

return _M
