--- The support-ticket contract (SEEDS.md §1): sort support mail into queues.
-- Load it with `dofile` or `--contract examples/support_ticket.lua`; it returns
-- `{ contract = <jsoncontract contract>, orders = <module>, ... }`.
--
-- A missing order number is `null`, never an invented one. The business rule
-- `order_exists` looks the order up in the shop's orders table (SQLite, see
-- examples/orders.lua); an order that does not exist goes to a person, not back
-- to the model: the model cannot know the shop's orders.
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
        summary = { type = "string", minLength = 1, maxLength = 200, pattern = "\\S",
            description = "one sentence in English" },
    },
    required = { "intent", "order_id", "urgent", "summary" },
    additionalProperties = false,
}

--- Rule: a given order id must exist in the orders table (`ctx.orders`, see orders.lua).
local function order_exists(value, ctx)
    if value.order_id == jc.null or not (ctx and ctx.orders) then return nil end
    if not ctx.orders:exists(value.order_id) then
        return { pointer = "/order_id", message = "order " .. value.order_id .. " does not exist" }
    end
end

M.contract = jc.contract {
    name = "support_ticket",
    version = "1.0.0",
    schema = M.schema,
    instructions = "You sort customer support mail into queues. Read the mail and fill in the ticket.",
    examples = {
        { input = "My parcel for order 5531 never arrived, I need it by Friday!",
          output = { intent = "delivery", order_id = "5531", urgent = true,
                     summary = "Parcel for order 5531 has not arrived and is needed by Friday." } },
    },
    rules = { { name = "order_exists", check = order_exists, retry = false } },
}

return M
