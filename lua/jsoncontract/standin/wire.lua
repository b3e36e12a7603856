--- The stand-in's wire formats: OpenAI Chat Completions and Anthropic Messages request bodies
-- read into the provider-neutral request of `jsoncontract.standin.conversation.answer`.
-- (The HTTP server and the response bodies are `jsoncontract.standin.server`.)
-- @module jsoncontract.standin.wire
local stext = require "jsoncontract.standin.text"
local cjson = require "cjson"

local concat = table.concat
local ipairs, type, tonumber, pcall = ipairs, type, tonumber, pcall

local _M = { _VERSION = "0.1.0" }

--- The conversation in an OpenAI Chat Completions request body.
-- @tparam table body decoded request body
-- @treturn table request for `answer`
function _M.from_openai(body)
    local messages, system = {}, {}
    for _, m in ipairs(type(body.messages) == "table" and body.messages or {}) do
        if type(m) == "table" then
            if m.role == "system" or m.role == "developer" then
                system[#system + 1] = stext.text_of(m.content)
            else
                messages[#messages + 1] = m
            end
        end
    end
    local rf = body.response_format
    local schema = type(rf) == "table" and type(rf.json_schema) == "table" and rf.json_schema.schema or nil
    return {
        messages = messages, system = concat(system, "\n"),
        schema = type(schema) == "table" and schema or nil,
        -- JSON mode: no schema, but the answer is an object (as OpenAI's json_object promises)
        json_object = type(rf) == "table" and rf.type == "json_object" or nil,
        max_tokens = tonumber(body.max_completion_tokens) or tonumber(body.max_tokens),
    }
end

--- The conversation in an Anthropic Messages request body (`output_config.format` or the
-- older `output_format`).
-- @tparam table body decoded request body
-- @treturn table request for `answer`
function _M.from_anthropic(body)
    local fmt = type(body.output_config) == "table" and body.output_config.format or body.output_format
    local schema = type(fmt) == "table" and fmt.schema or nil
    return {
        messages = type(body.messages) == "table" and body.messages or {},
        system = stext.text_of(body.system),
        schema = type(schema) == "table" and schema or nil,
        max_tokens = tonumber(body.max_tokens),
    }
end

--- Input tokens of a request: all message contents and the system prompt (words x 1.3), and
-- the schema sent natively, where a real model meets it: providers put it into the model's
-- context and bill it as input (counted as JSON text, one token per 4 bytes, as
-- `stext.cutoff_tokens` counts unbroken text). A prompt that leaves the schema to the native
-- field is then neither rewarded (the schema is not free) nor punished.
-- @tparam table request as for `answer`
-- @treturn integer tokens
function _M.input_tokens(request)
    local parts = { stext.text_of(request.system) }
    for _, m in ipairs(request.messages or {}) do
        if type(m) == "table" then parts[#parts + 1] = stext.text_of(m.content) end
    end
    local n = stext.tokens(concat(parts, " "))
    if type(request.schema) == "table" then
        local ok, text = pcall(cjson.encode, request.schema)
        if ok then n = n + stext.cutoff_tokens(text) end
    end
    return n
end

return _M

