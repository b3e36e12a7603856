--- The one place that words errors: for the model (the feedback message sent after a format,
-- schema or rules failure), with the contract's own words for schema locations it names, and
-- for the end user (a plain message without internals).
-- The gates return structured items (`err.errors`: pointer, keyword, schema_pointer, message);
-- they are clipped and joined here, once, and never more than `MAX_ERRORS` of them, so a reply
-- with 10,000 wrong items never becomes a 100 MB prompt.
-- The end user's words never name a gate, a kind, a JSON Pointer, a status code or the model's
-- text, so they can be shown as they are; the outcome keeps the detail for the evidence.
-- @module jsoncontract.feedback
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

local type, error, ipairs = type, error, ipairs
local min = math.min
local concat = table.concat
local format = string.format

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

--- Most error items named in one message; the rest are counted ("and 3 more errors").
_M.MAX_ERRORS = 20
--- Longest item message kept, in bytes (cut at a UTF-8 boundary).
_M.MAX_MESSAGE = 300

--- Join error items into one line: at most `MAX_ERRORS` messages, each clipped, then how many
-- more there are.
-- @tparam table items array of `{message = string, ...}`
-- @treturn string
function _M.join(items)
    local out = {}
    for i = 1, min(#items, _M.MAX_ERRORS) do
        local e = items[i]
        local m, p = e.message, e.pointer
        -- a schema item's words start with its place; a rule's may not: the model needs it
        if type(p) == "string" and p ~= "" and type(m) == "string" and m:sub(1, #p) ~= p then
            m = p .. ": " .. m
        end
        out[i] = json.clip(m, _M.MAX_MESSAGE)
    end
    -- an item not shown that stands for errors a rule left out (`more`) counts as those too
    -- (one shown says its count itself)
    local left = 0
    for i = _M.MAX_ERRORS + 1, #items do left = left + 1 + (tonumber(items[i].more) or 0) end
    if left > 0 then
        out[#out + 1] = format("and %d more errors", left)
    end
    return concat(out, "; ")
end

--- Replace the validator's words with the contract's own for the schema locations it names
-- (the contract's `messages`): the item becomes `<pointer> <value> <words>`, e.g.
-- `/order_id "10420" does not have 4 digits`; `err.message` is joined again from the items.
-- @tparam table messages map schema location (string) -> words (string)
-- @tparam table err a schema err with `errors`; changed in place
-- @param value the decoded value the err is about (to show the value at the pointer)
function _M.apply_overrides(messages, err, value)
    local changed = false
    for _, e in ipairs(err.errors or {}) do
        local words = messages[e.schema_pointer]
        if words then
            local v = json.at(value, e.pointer)
            local shown = ""
            if v ~= nil and type(v) ~= "table" then shown = " " .. core.encode(v) end
            -- a missing member has no value to show: its place is the object's pointer and
            -- its name (`property`), e.g. `/customer/email is a required field`
            local place = e.pointer
            if type(e.property) == "string" and (e.keyword == "required" or e.keyword == "dependentRequired") then
                place = json.join(e.pointer, e.property)
            end
            e.message = place .. shown .. " " .. words
            changed = true
        end
    end
    if changed then err.message = _M.join(err.errors) end
end

local LEAD = {
    format = "The answer is not exactly one valid JSON value: ",
    rules = "The answer breaks the contract's rules: ",
    schema = "The answer does not match the schema: ",
}

--- The one feedback message sent to the model after a format, schema or rules failure.
-- @tparam table err the gate's err (`category`, `message`, `errors`)
-- @treturn string
-- @usage feedback.for_model(err) --> "The answer does not match the schema: /x ...; ..."
function _M.for_model(err)
    local list = err.errors
    local what
    if list and #list > 0 then
        what = _M.join(list)
    else
        what = json.clip(err.message, _M.MAX_MESSAGE)
    end
    return (LEAD[err.category] or LEAD.schema) .. what .. ". Return only JSON by the schema, nothing else."
end

return _M
