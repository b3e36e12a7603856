--- The ticket-classification contract (after an Estonian guide): topic, priority and
-- summary of a helpdesk ticket, with the field names of the guide:
--   teema (topic), prioriteet (priority: madal = low, kõrge = high), kokkuvõte (summary).
-- A job module (`jsoncontract run --job examples/ticket_priority.lua --input examples/ticket_priority.jsonl`);
-- it returns `{ contract = ..., item = ..., context = ..., policy = ..., schema = ..., topics = ... }`.
--
-- What it shows:
-- * every described field is required, nothing else is allowed and only keywords of the strict
--   subset are used ("\S" rather than minLength), so the schema sent in
--   OpenAI strict mode is the very schema checked here (strict mode needs exactly that);
-- * `{"teema":"Arve","prioriteet":"kohe"}` is valid JSON and still rejected: a missing summary
--   is never filled in and an unknown priority is never mapped to a known one;
-- * the order of checks is the library's: refusal, then "did generation finish", then parse,
--   then schema, then these business rules;
-- * at most one repair attempt (`policy`), then a controlled error; the user sees only
--   `jsoncontract.feedback.user_message(outcome)`, the evidence keeps the detail.
--
-- Run it: `bin/jsoncontract examples ticket_priority` (examples/ticket_priority.jsonl through the
-- stand-in) or `bin/jsoncontract check --job examples/ticket_priority.lua REPLY`.
-- Specs: spec/example_ticket_priority_spec.lua.
local jc = require "jsoncontract"

local M = {}

M.schema = {
    type = "object",
    properties = {
        teema = { type = "string", pattern = "\\S", description = "the topic, one of the helpdesk's queues" },
        prioriteet = { type = "string", enum = { "madal", "kõrge" }, description = "madal = low, kõrge = high" },
        ["kokkuvõte"] = { type = "string", pattern = "\\S", description = "one sentence in Estonian" },
    },
    required = { "teema", "prioriteet", "kokkuvõte" },
    additionalProperties = false,
}

--- The helpdesk's queues, as this job's context gives them to the rules (`ctx.topics`).
M.topics = { "Arve", "Tarne", "Konto", "Tehniline", "Muu" }

--- Rule (the record exists): the topic must be one of the helpdesk's queues. The model can
-- pick again, so this one is retried with the list.
local function known_topic(value, ctx)
    local topics = ctx and ctx.topics
    -- Without the list a topic cannot be checked: the ticket goes to a person, never through.
    if not topics then return { pointer = "/teema", message = "the rules' context has no list of queues" } end
    for _, t in ipairs(topics) do
        if t == value.teema then return nil end
    end
    return { pointer = "/teema", message = "/teema " .. jc.encode(value.teema) .. " is not one of the queues "
        .. table.concat(topics, ", ") }
end

--- Rule (may this user do this): a high priority ticket needs a user who may escalate
-- (`ctx.user.may_escalate`). Not the model's to fix: it goes to a person.
local function may_escalate(value, ctx)
    if value.prioriteet ~= "kõrge" or not (ctx and ctx.user) then return nil end
    if not ctx.user.may_escalate then
        return { pointer = "/prioriteet", message = "this user may not open high priority tickets" }
    end
end

M.contract = jc.contract {
    name = "ticket_priority",
    version = "1.0.0",
    schema = M.schema,
    instructions = "Sa liigitad klienditoe pileteid. Read the ticket (Estonian) and fill in its topic, " ..
        "priority and a one-sentence summary in Estonian.",
    examples = {
        { input = "Arvel on vale summa, palun kontrollige kiiresti!",
          output = { teema = "Arve", prioriteet = "kõrge", ["kokkuvõte"] = "Vajab kontrolli" } },
    },
    rules = {
        { name = "known_topic", check = known_topic },
        { name = "may_escalate", check = may_escalate, retry = false },
    },
}

--- The item the model reads from one input line `{id, text, ...}`: its text, under its id.
-- @tparam table record a decoded line
-- @treturn[1] table `{id, text}`
-- @return[2] nil
-- @treturn[2] string why
function M.item(record)
    if type(record) ~= "table" or type(record.text) ~= "string" then return nil, "has no string field 'text'" end
    return { id = record.id, text = record.text }
end

--- The rules' context of a run: the helpdesk's queues. No requesting user in a batch job, so
-- `may_escalate` applies where a caller names one (`ctx.user`, e.g. a gateway's context).
-- @treturn table `{topics = {...}}`
function M.context()
    return { topics = M.topics }
end

--- At most one repair attempt with the same schema and a short validation error.
M.policy = { max_attempts = 2 }

return M
