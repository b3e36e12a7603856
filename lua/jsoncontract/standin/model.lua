--- The stand-in model as one table, kept for callers of the old name. The stand-in lives in
-- `jsoncontract.standin.conversation` (the answer, faults, the registry of example contracts),
-- `.generate` (an instance of any schema), `.hash` (deterministic draws), `.text` (reading and
-- writing text), `.wire` (request bodies) and `.server` (HTTP); what it knows about the four
-- examples lives beside them in examples/<name>_standin.lua.
--
-- Requiring this module registers the examples of the checkout (examples/ next to lua/) when
-- none are registered yet; their own functions (e.g. `intent_of`, `extract_leave`) are
-- reachable here as before.
-- @module jsoncontract.standin.model
local conversation = require "jsoncontract.standin.conversation"
local generate = require "jsoncontract.standin.generate"
local hash = require "jsoncontract.standin.hash"
local stext = require "jsoncontract.standin.text"
local wire = require "jsoncontract.standin.wire"

local _M = { _VERSION = "0.1.0" }

-- The examples folder of the checkout this file is in.
local function checkout_examples()
    local source = debug.getinfo(1, "S").source
    local prefix = source:match("^@(.-)lua/jsoncontract/standin/model%.lua$")
    return prefix and (prefix .. "examples") or "examples"
end

if #conversation.registered() == 0 then conversation.load_examples(checkout_examples()) end

--- Which of the three other example contracts a request is for (nil for the support ticket
-- and for any other schema); see `jsoncontract.standin.conversation.recognise`.
-- @tparam table|nil schema
-- @tparam[opt] string system
-- @treturn string|nil
function _M.contract_of(schema, system)
    local name = conversation.recognise(schema, system)
    if name == "support_ticket" then return nil end
    return name
end

--- Each example contract's fault names, by name (the support ticket's are `FAULTS`).
_M.CONTRACT_FAULTS = setmetatable({}, { __index = function(_, name)
    local ex = conversation.known(name)
    return ex and ex.FAULTS
end })

_M.draw = hash.draw
_M.from_openai, _M.from_anthropic, _M.input_tokens = wire.from_openai, wire.from_anthropic, wire.input_tokens
_M.minimal_json, _M.instance_json = generate.minimal_json, generate.instance_json
_M.text_of, _M.tokens, _M.cutoff_tokens, _M.lang_of = stext.text_of, stext.tokens, stext.cutoff_tokens, stext.lang_of
_M.answer = conversation.answer
_M.REFUSAL_TEXT, _M.ASK_MORE_TEXT = conversation.REFUSAL_TEXT, conversation.ASK_MORE_TEXT

-- The examples' own functions (intent_of, extract, extract_leave, FAULTS, ...).
return setmetatable(_M, { __index = function(_, k)
    for _, ex in ipairs(conversation.registered()) do
        if ex[k] ~= nil then return ex[k] end
    end
    return nil
end })
