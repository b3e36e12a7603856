-- What a request costs in tokens: input and output tokens per accepted item for the triage
-- job's contract (examples/support_ticket.lua over the support-mail corpus, one `jc.ask` per
-- mail, as the job makes them), in each prompt mode, next to a minimal hand loop on the same
-- stand-in: a two-line system prompt, the schema in a strict `json_schema` response_format,
-- the reply parsed and validated, and on a failure one re-ask with the errors and the last
-- reply (three attempts at most, as the contract's default policy).
-- The counts are the stand-in's `usage` (words x 1.3 for text; the schema sent natively
-- counted too, as a real provider bills it; see jsoncontract.standin.wire.input_tokens).
-- Target: jsoncontract's input tokens per accepted item <= 1.3x the hand loop's (native mode,
-- where both send the schema natively); the other modes are shown with what they cost.
-- JC_BENCH_MAILS=N: the first N mails only.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/" .. (jit and "luajit" or ("lua" .. _VERSION:match("%d+%.%d+"))) .. "/?.so;" .. package.cpath

local core = require "jsoncontract.core"
local run = require "jsoncontract.run"
local curl = require "jsoncontract.transport.curl"
local standin_process = require "jsoncontract.standin.process"

local shared = os.getenv("JC_SHARED") or "../shared"
local corpus = shared .. "/corpora/support-emails/emails.jsonl"
local f = io.open(corpus, "rb")
if not f then
    print("skipped: no support-mail corpus (set JC_SHARED)")
    return
end
f:close()
local mails = {}
local limit = tonumber(os.getenv("JC_BENCH_MAILS") or "")
for line in io.lines(corpus) do
    if limit and #mails >= limit then break end
    mails[#mails + 1] = core.decode(line).text
end

local ex = dofile("examples/support_ticket.lua")
local contract = ex.contract
-- The rules read the shop's orders table, as in the job: both loops check the same rules, so an
-- order that does not exist goes to a person in both (never re-asked, never accepted).
local ctx, close_ctx = ex.context {}
local proc = assert(standin_process.start { seed = 1, max_seconds = 900 })
local base = proc.base_url

-- The hand loop: what a careful engineer writes in 30 lines with a plain client.
local HAND_SYSTEM = "You sort customer support mail into queues.\n"
    .. "Answer with one JSON object matching the given schema."
local function hand_loop(mail)
    local used = { input = 0, output = 0 }
    local messages = { { role = "system", content = HAND_SYSTEM }, { role = "user", content = mail } }
    for _ = 1, 3 do
        local res = assert(curl.request { url = base .. "/v1/chat/completions", method = "POST",
            headers = { ["content-type"] = "application/json" },
            body = core.encode { model = "standin-1", messages = messages, max_tokens = 1024,
                response_format = { type = "json_schema",
                    json_schema = { name = "support_ticket", strict = true, schema = ex.schema } } } })
        local doc = core.decode(res.body)
        used.input = used.input + doc.usage.prompt_tokens
        used.output = used.output + doc.usage.completion_tokens
        local choice = doc.choices[1]
        local text = choice.message.content
        if choice.finish_reason ~= "stop" or type(text) ~= "string" then return false, used end
        local value, err = core.decode(text)
        local why
        if value == nil then
            why = "not JSON: " .. tostring(err)
        else
            local ok, verr = contract.validator:validate(value)
            if ok then
                -- the same business rules: a failure the model cannot fix goes to a person
                local checked = contract:check(text, { context = ctx })
                return checked ~= nil, used
            end
            why = verr.message
        end
        messages = { messages[1], messages[2], { role = "assistant", content = text },
            { role = "user", content = "Invalid: " .. why .. ". Answer again." } }
    end
    return false, used
end

local function jc_loop(mode, c)
    return function(mail)
        local out = run.ask(c or contract, mail, { provider = "openai", model = "standin-1", base_url = base,
            mode = mode, transport = curl.request, sleep = function() end, context = ctx })
        return out.status == "accepted", { input = out.usage.input_tokens, output = out.usage.output_tokens }
    end
end

local function measure(fn)
    local acc, input, output = 0, 0, 0
    for _, mail in ipairs(mails) do
        local ok, used = fn(mail)
        if ok then acc = acc + 1 end
        input, output = input + used.input, output + used.output
    end
    return { accepted = acc, input = input, output = output }
end

local hand = measure(hand_loop)
local rows = {
    { "hand loop (strict json_schema)", hand },
    { "jsoncontract native", measure(jc_loop("native")) },
    { "jsoncontract json", measure(jc_loop("json")) },
    { "jsoncontract prompt", measure(jc_loop("prompt")) },
    { "jsoncontract native, all history", measure(jc_loop("native", ex.contract_all_history)) },
}
proc.stop()
close_ctx()

local function per(n, acc) return acc > 0 and n / acc or 0 / 0 end
local hand_in = per(hand.input, hand.accepted)
print(string.format("%d mails, stand-in seed 1, openai wire; tokens per accepted item", #mails))
print(string.format("%-32s %8s %10s %10s %9s %9s %8s", "loop", "accepted", "input", "output",
    "in/acc", "out/acc", "in ratio"))
for _, r in ipairs(rows) do
    local m = r[2]
    print(string.format("%-32s %8d %10d %10d %9.1f %9.1f %7.2fx", r[1], m.accepted, m.input, m.output,
        per(m.input, m.accepted), per(m.output, m.accepted), per(m.input, m.accepted) / hand_in))
end
local native = rows[2][2]
local ratio = per(native.input, native.accepted) / hand_in
print(string.format("native input tokens per accepted item: %.2fx the hand loop's (target <= 1.30x): %s",
    ratio, ratio <= 1.3 and "met" or "NOT met"))
