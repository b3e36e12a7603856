--- The support-ticket contract: sort support mail into queues.
-- A job module (`jsoncontract run --job examples/support_ticket.lua --input examples/mailbox.jsonl`;
-- `jsoncontract triage` is its short form): it returns
-- `{ contract = <jsoncontract contract>, context = function,
--    contract_4digits = <the lesson's variant>, policy = <the lesson's retry policy>,
--    contract_all_history = <the contract, re-asks resending every attempt>, rules = {...},
--    schema = {...}, replay_context = function }`.
--
-- A missing order number is `null`, never an invented one. The business rules look the
-- order up in the shop's orders table (SQLite, see examples/orders.lua): it must exist, and
-- when the caller knows who wrote the mail (`ctx.sender`), it must be that customer's. Both
-- go to a person, not back to the model: the model cannot know the shop's orders.
--
-- Run it: `bin/jsoncontract triage` (the whole mailbox), or one reply:
--   echo '{"intent":"other","order_id":null,"urgent":false,"summary":"Hi."}' |
--     bin/jsoncontract check --job examples/support_ticket.lua
-- Specs: spec/example_support_ticket_spec.lua.
local jc = require "jsoncontract"

local M = {}

M.schema = {
    type = "object",
    properties = {
        intent = { type = "string", enum = { "delivery", "return", "payment", "other" },
            description = "the queue: delivery, return, payment, or other for anything else" },
        order_id = { type = { "string", "null" }, pattern = "^[0-9]{4,6}$",
            description = "the order number written in the mail, digits only; null when the mail has none" },
        urgent = { type = "boolean", description = "true only when the sender says it is urgent or time-critical" },
        -- "\S": a summary of blanks says nothing, so it is rejected like an empty one.
        summary = { type = "string", minLength = 1, maxLength = 200, pattern = "\\S",
            description = "one sentence in English" },
    },
    required = { "intent", "order_id", "urgent", "summary" },
    additionalProperties = false,
}

-- Without the orders table a rule cannot look: the order goes to a person, never through.
local function no_orders(value)
    return { pointer = "/order_id", message = "order " .. value.order_id .. " cannot be checked: the rules' context "
        .. "has no orders table" }
end

--- Rule: a given order id must exist in the orders table (`ctx.orders`, see orders.lua).
local function order_exists(value, ctx)
    if value.order_id == jc.null then return nil end
    if not (ctx and ctx.orders) then return no_orders(value) end
    if not ctx.orders:exists(value.order_id) then
        return { pointer = "/order_id", message = "order " .. value.order_id .. " does not exist" }
    end
end

--- Rule: an existing order must belong to the sender (`ctx.sender`), when the sender is known.
local function order_of_sender(value, ctx)
    if value.order_id == jc.null or not (ctx and ctx.sender) then return nil end
    if not ctx.orders then return no_orders(value) end
    local customer = ctx.orders:customer(value.order_id)
    if customer ~= nil and customer ~= ctx.sender then
        return { pointer = "/order_id", message = "order " .. value.order_id .. " does not belong to the sender" }
    end
end

M.rules = {
    { name = "order_exists", check = order_exists, retry = false },
    { name = "order_of_sender", check = order_of_sender, retry = false },
}

local INSTRUCTIONS = "You sort customer support mail into queues. Read the mail and fill in the ticket."
local EXAMPLES = {
    { input = "My parcel for order 5531 never arrived, I need it by Friday!",
      output = { intent = "delivery", order_id = "5531", urgent = true,
                 summary = "Parcel for order 5531 has not arrived and is needed by Friday." } },
}

M.contract = jc.contract {
    name = "support_ticket",
    version = "1.0.0",
    schema = M.schema,
    instructions = INSTRUCTIONS,
    examples = EXAMPLES,
    rules = M.rules,
}

-- The lesson's exercise: an order number has exactly 4 digits. JSON Schema has no custom
-- messages, so the contract names its own words for that one schema location.
local schema4 = jc.decode(jc.encode(M.schema))
schema4.properties.order_id.pattern = "^[0-9]{4}$"
schema4.properties.order_id.description = "the order number written in the mail, exactly 4 digits; " ..
    "null when the mail has none"
M.schema_4digits = schema4

M.contract_4digits = jc.contract {
    name = "support_ticket",
    version = "1.1.0",
    schema = schema4,
    instructions = INSTRUCTIONS,
    examples = EXAMPLES,
    rules = M.rules,
    messages = { ["/properties/order_id/pattern"] = "does not have 4 digits" },
}

-- This file's folder: the orders table ships beside it. (`context` and `replay_context` run from
-- the file loaded as plain Lua, where `debug` is; the rules' sandbox has none and needs none.)
local HERE = debug and debug.getinfo(1, "S").source:match("^@(.*/)") or "./"

--- The rules' context of a run: the shop's orders table (examples/orders.csv) in SQLite, in the
-- job's folder when it has one (`orders.sqlite`, which `replay` and the review desk read), else
-- in memory (a worker).
-- @tparam table job `{dir = folder or nil}`
-- @treturn table `{orders = db}`
-- @treturn function close
-- @raise when the table cannot be opened or loaded
function M.context(job)
    local orders = dofile(HERE .. "orders.lua")
    local db, err = orders.open_shipped(job.dir and (job.dir .. "/orders.sqlite") or ":memory:", HERE .. "orders.csv")
    if not db then error("cannot open the orders table: " .. tostring(err), 0) end
    return { orders = db }, function() db:close() end
end

--- The rules' context for `bin/jsoncontract replay`: the orders table a triage run leaves next
-- to its evidence (`out/triage-*/orders.sqlite`), so a replay reaches the rules gate offline too.
-- @tparam table where `{evidence_dir = string, root = string}`
-- @treturn table|nil `{orders = db}`, nil when there is no such file
function M.replay_context(where)
    local path = where.evidence_dir .. "/orders.sqlite"
    local f = io.open(path, "rb")
    if not f then return nil end
    f:close()
    local db = dofile(where.root .. "/examples/orders.lua").open(path)
    return db and { orders = db } or nil
end

--- The lesson's retry policy: at most 3 answers, and stop once the conversation a retry
-- would resend exceeds 100 estimated tokens (words x 1.3), even before the third.
M.policy = { max_attempts = 3, token_budget = 100 }

-- The lesson's conversation that grows: every re-ask resends every earlier attempt
-- (`reask_history = "all"`; by default a re-ask carries the input, the last reply and its errors).
M.contract_all_history = jc.contract {
    name = "support_ticket",
    version = "1.0.0",
    schema = M.schema,
    instructions = INSTRUCTIONS,
    examples = EXAMPLES,
    rules = M.rules,
    reask_history = "all",
}

return M
