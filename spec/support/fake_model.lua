-- A recorded fake model for specs: answers keyed by the order number in
-- the mail, served as real OpenAI Chat Completions envelopes through a fake transport,
-- so the attempt loop, the provider and every gate run for real.
local core = require "jsoncontract.core"

local M = {}

local function envelope(content, finish, refusal, usage)
    usage = usage or { 100, 20 }
    return core.encode {
        id = "chatcmpl-fake", object = "chat.completion", model = "fake-1",
        choices = setmetatable({ {
            index = 0,
            message = { role = "assistant", content = content == nil and core.null or content,
                refusal = refusal or core.null },
            finish_reason = finish or "stop",
        } }, core.array_mt),
        usage = { prompt_tokens = usage[1], completion_tokens = usage[2], total_tokens = usage[1] + usage[2] },
    }
end
M.envelope = envelope

M.ANSWERS = {
    ["1042"] = {
        '{"intent":"Lieferung","order_id":"1042","urgent":"ja","summary":"Courier did not come."}',
        '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"Courier did not come; customer leaves tomorrow."}',
    },
    ["1187"] = {
        '{"intent":"return","order_id":"1187","urgent":false,"summary":"Customer wants to return a jacket that is too big."}',
    },
    prose = { "Sure! I am happy to help. Could you tell me more about the problem?" },
}

--- A transport function that answers like the recorded model. `calls` collects the
-- decoded request bodies; `script` maps a key to a list of {content, finish, refusal, status,
-- usage = {in, out}}. The key is the first 4-digit number in the mail, else "prose"; with
-- `opts.key = function(mail) -> key` the caller chooses it (other examples' fake models), and
-- `opts.answers` replaces the §1 answer table; `opts.by_call` counts requests instead of
-- assistant messages.
function M.transport(opts)
    opts = opts or {}
    local calls = {}
    local function send(req)
        local body = assert(core.decode(req.body))
        calls[#calls + 1] = { req = req, body = body }
        local mail = body.messages[2].content
        local attempt = 1
        for i = 3, #body.messages do
            if body.messages[i].role == "assistant" then attempt = attempt + 1 end
        end
        -- `by_call`: the n-th request gets the n-th answer (a re-ask keeps the conversation).
        if opts.by_call then attempt = #calls end
        if opts.fail_first and #calls <= #opts.fail_first then
            local f = opts.fail_first[#calls]
            if f.err then return nil, f.err end
            return { status = f.status, headers = f.headers or {}, body = f.body or "{}" }
        end
        local answers = opts.answers or M.ANSWERS
        local key = (opts.key and opts.key(mail)) or mail:match("(%d%d%d%d)") or "prose"
        local script = (opts.script and opts.script[key]) or answers[key] or answers.prose or M.ANSWERS.prose
        local a = script[math.min(attempt, #script)]
        if type(a) == "string" then a = { a } end
        return { status = a.status or 200, headers = { ["content-type"] = "application/json" },
            body = envelope(a[1], a[2], a[3], a.usage) }
    end
    return send, calls
end

return M
