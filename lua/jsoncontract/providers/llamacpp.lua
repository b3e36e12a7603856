--- llama.cpp server (`llama-server`), through its OpenAI-compatible
-- `POST /v1/chat/completions`: the schema goes in `response_format` (type "json_schema"),
-- which the server turns into a grammar; the envelope is read like OpenAI Chat Completions.
-- @module jsoncontract.providers.llamacpp
local core = require "jsoncontract.core"
local C = require "jsoncontract.providers.envelope"
local subset = require "jsoncontract.providers.schema_subset"
local RULES = require "jsoncontract.providers.rules.llamacpp"
local openai = require "jsoncontract.providers.openai"
local gbnf = require "jsoncontract.providers.gbnf"

local _M = { _VERSION = core._VERSION, name = "llamacpp" }

--- Default base URL: a local server on its default port.
_M.DEFAULT_BASE_URL = "http://127.0.0.1:8080"

--- Facts about llama.cpp's server (fields as `jsoncontract.providers.openai.FACTS`): a local
-- server, so no model is assumed, no rate limit, and no key variable (a server started with
-- `--api-key` takes the key given to `ask`); never chosen by a key.
_M.FACTS = { base_url = _M.DEFAULT_BASE_URL }

local MODES = { native = true, json = true, prompt = true, grammar = true }

-- Mode "grammar": the contract compiled to GBNF by jsoncontract (jsoncontract.providers.gbnf),
-- sent in llama-server's `grammar` field instead of `response_format`: the server takes one of
-- the two (ggml-org/llama.cpp server.cpp answers a request with both "either \"json_schema\" or
-- \"grammar\" can be specified, but not both"; response_format becomes json_schema there;
-- checked 2026-12-04 on a stored copy of the source).
local function grammar_of(schema)
    local text, unexpressed = gbnf.compile(schema)
    return { text = text, unexpressed = text and unexpressed or nil, why = not text and unexpressed or nil }
end

--- The copy of a schema sent in `response_format.json_schema.schema` (`schema_sent, dropped =
-- provider_schema(schema)`), and what a native request sends for the schema alone
-- (`schema_sent, dropped, enforced, mode, plan = native_schema(schema)`), both from `rules.native`
-- (see jsoncontract.providers.schema_subset.provider_functions): what llama.cpp's converter turns
-- into grammar (a `$ref` with siblings inlined, keywords next to `anyOf` moved into its branches,
-- `\d`/`\w`/`\s` in patterns written as classes, an `allOf` merged), the rest left out and reported.
local contract_plan = subset.provider_fields(_M, RULES)

--- Build the HTTP request.
-- @tparam table contract a contract from `jsoncontract.contract` (its schema is planned once, see
--   jsoncontract.providers.schema_subset.provider_functions), or { name, version, schema, prompt = string }
-- @tparam table messages array of { role, content }
-- @tparam table opts { model = string (required; the server serves the model it loaded),
--   api_key = string|nil (sent as Bearer when the server was started with --api-key),
--   base_url = string|nil (default "http://127.0.0.1:8080"), max_tokens = integer (sent as
--   `max_tokens`), temperature, mode = "native" (response_format json_schema) | "json"
--   (json_object) | "prompt" | "grammar" (the schema compiled to GBNF by jsoncontract.providers.gbnf,
--   sent in `grammar`; the full prompt goes with it, as the model does not see the grammar; a
--   schema no grammar can be made of goes out in mode "native"), stream = boolean|nil }
-- @treturn table req { url, method = "POST", headers, body, mode (the mode sent: a schema the
--   converter would fail on goes out in mode "json"), schema_sent, dropped, findings, fallback
--   (see jsoncontract.providers.schema_subset.plan) }
-- @raise on misuse
function _M.build_request(contract, messages, opts)
    local o, msgs, prompt = C.check_request_args(contract, messages, opts, MODES, _M.name)
    local body = { model = o.model, messages = C.with_system(prompt, msgs), max_tokens = o.max_tokens,
        temperature = o.temperature }
    if o.stream then body.stream = true end
    local schema_sent, plan
    local mode = o.mode
    if mode == "grammar" then
        local sch = contract.schema
        local g = (type(sch) == "table" or type(sch) == "boolean") and subset.cached(contract, grammar_of) or nil
        if g and g.text then
            body.grammar = g.text
        else
            -- no grammar can be made: the server's own converter gets the schema (a schema that
            -- is not an object cannot be sent: JSON mode)
            mode = type(sch) == "table" and "native" or "json"
        end
    end
    if mode == "native" then
        plan = contract_plan(contract)
        schema_sent, mode = plan.schema, plan.mode
    end
    if schema_sent then
        body.response_format = { type = "json_schema",
            json_schema = { name = openai.schema_name(contract.name), schema = schema_sent } }
    elseif mode == "json" then
        body.response_format = { type = "json_object" }
    end
    return C.post { opts = o, url = C.join_url(o.base_url or _M.DEFAULT_BASE_URL,
        "/v1/chat/completions"), auth = "authorization", body = body, mode = mode, plan = plan }
end

--- What mode "grammar" leaves to the schema gate, for `lint`: the grammar jsoncontract makes
-- of `schema` and the keywords it does not express (see jsoncontract.providers.gbnf.compile).
-- @tparam table|boolean schema
-- @treturn table `{mode = "grammar", bytes = integer|nil (the grammar's size), unexpressed = array of
--   {schema_pointer, keyword, action = "wider"|"narrower", reason}, fails = string|nil (why no grammar
--   can be made: a request in mode "grammar" then goes out in mode "native")}`
function _M.grammar_report(schema)
    local text, unexpressed = gbnf.compile(schema)
    if not text then
        return { mode = "native", unexpressed = setmetatable({}, core.array_mt), fails = unexpressed }
    end
    return { mode = "grammar", bytes = #text, unexpressed = unexpressed }
end

--- Read the response (same gate as OpenAI Chat Completions; messages name llamacpp).
-- A 503 `unavailable_error` ("Loading model") is transport/server_error, retryable.
-- @see jsoncontract.providers.openai.read_response
function _M.read_response(status, headers, body)
    return openai.read_chat(_M.name, status, headers, body)
end

--- A stream accumulator (same stream format as OpenAI Chat Completions).
-- @see jsoncontract.providers.openai.stream_reader
function _M.stream_reader()
    return openai.chat_stream_reader(_M.name, 200)
end

return _M
