-- A 1 KB support-ticket reply for the benches (bench/tape_bench.lua, bench/validate_bench.lua):
-- the support-ticket contract's fields (examples/support_ticket.lua: intent, order_id, urgent,
-- summary, same keywords) plus what a helpdesk triage asks the model for next to them: the
-- customer, language, sentiment, tags, the products named in the mail and a draft answer.
-- Not part of the library.
local base = dofile("examples/support_ticket.lua").schema

local M = {}

local props = {}
for k, v in pairs(base.properties) do props[k] = v end
props.customer = {
    type = "object", required = { "name", "email" }, additionalProperties = false,
    properties = { name = { type = "string", minLength = 1, maxLength = 100 },
        email = { type = "string", maxLength = 254, pattern = "^[^@\\s]+@[^@\\s]+$" } },
}
props.language = { type = "string", enum = { "en", "de", "fr", "es", "it", "nl" } }
props.sentiment = { type = "string", enum = { "angry", "negative", "neutral", "positive" } }
props.tags = { type = "array", maxItems = 8, uniqueItems = true,
    items = { type = "string", enum = { "late", "lost", "damaged", "refund", "replacement",
        "express", "gift", "repeat-contact", "invoice" } } }
props.products = { type = "array", maxItems = 20, items = {
    type = "object", required = { "sku", "name", "qty" }, additionalProperties = false,
    properties = { sku = { type = "string", pattern = "^[A-Z]{3}-[0-9]{4}$" },
        name = { type = "string", maxLength = 80 }, qty = { type = "integer", minimum = 1, maximum = 99 } } } }
props.suggested_reply = { type = "string", minLength = 1, maxLength = 800 }

M.schema = {
    type = "object", properties = props, additionalProperties = false,
    required = { "intent", "order_id", "urgent", "summary", "customer", "language", "sentiment", "tags",
        "products", "suggested_reply" },
}

M.TEXT = '{"intent":"delivery","order_id":"55310","urgent":true,'
    .. '"summary":"The customer\'s parcel for order 55310 has not arrived after two weeks and they need it '
    .. 'before Friday for a birthday; they ask for a refund or a replacement sent by express.",'
    .. '"customer":{"name":"Erika Mustermann","email":"erika.mustermann@example.com"},'
    .. '"language":"en","sentiment":"negative","tags":["late","gift","replacement","express"],'
    .. '"products":[{"sku":"TOY-2231","name":"Wooden train set, 42 pieces","qty":1},'
    .. '{"sku":"BKS-0457","name":"Picture book \\"The little engine\\", hardcover","qty":2}],'
    .. '"suggested_reply":"Dear Erika, thank you for writing to us, and I am sorry that your parcel for '
    .. 'order 55310 has not reached you yet. I checked the shipment: it left our warehouse on the 3rd and '
    .. 'the carrier has not scanned it since, so I have asked them to open an investigation. Because you '
    .. 'need the presents before Friday, I have sent a replacement by express today at no cost to you; you '
    .. 'will receive the tracking number by e-mail within the hour. If the first parcel turns up later, you '
    .. 'can keep it or send it back with the enclosed label. Kind regards, Sam from customer care"}'

return M
