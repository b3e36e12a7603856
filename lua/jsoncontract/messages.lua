--- What an end user sees when an answer could not be used (SEEDS.md §2: "users see a plain
-- message without internals"). The outcome keeps the technical detail for the evidence and the
-- operator; these words never name a gate, a kind, a JSON Pointer, a status code or the model's
-- text, so they can be shown as they are.
-- @module jsoncontract.messages
local core = require "jsoncontract.core"

local type, error = type, error

local _M = { _VERSION = core._VERSION }

--- The plain messages, by what happened.
-- @table TEXT
-- @field retry_later the answer could not be processed (transport, protocol, format, schema, budget)
-- @field person a person will look at it (refusal, content filter, a business rule)
_M.TEXT = {
    retry_later = "The answer could not be processed right now. Please try again.",
    person = "Your request has been passed to a person, who will get back to you.",
}

-- Categories whose outcome a person must look at; everything else is "try again".
local TO_PERSON = { refused = true, filtered = true, rules = true, input = true }

--- The message an end user sees for an outcome of `jsoncontract.run.ask`.
-- @tparam table outcome
-- @treturn string|nil the plain message; nil when the outcome was accepted (nothing to apologise for)
-- @raise when `outcome` is not a table with a `status`
-- @usage local msg = messages.user_message(outcome) -- "The answer could not be processed right now. ..."
function _M.user_message(outcome)
    if type(outcome) ~= "table" or type(outcome.status) ~= "string" then
        error("user_message: outcome table expected", 2)
    end
    if outcome.status == "accepted" then return nil end
    local category = outcome.reason and outcome.reason.category
    if TO_PERSON[category] then return _M.TEXT.person end
    return _M.TEXT.retry_later
end

return _M
