-- A recorded fake model for specs (SEEDS.md §1): answers keyed by the order number in
-- the mail, served as real OpenAI Chat Completions envelopes through a fake transport,
-- so the attempt loop, the provider and every gate run for real.
local core = require "jsoncontract.core"

local M = {}

local function envelope(content, finish, refusal)
    return core.encode {
        id = "chatcmpl-fake", object = "chat.completion", model = "fake-1",
        choices = setmetatable({ {
            index = 0,
            message = { role = "assistant", content = content == nil and core.null or content,
                refusal = refusal or core.null },
            finish_reason = finish or "stop",
        } }, core.array_mt),
        usage = { prompt_tokens = 100, completion_tokens = 20, total_tokens = 120 },
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
-- decoded request bodies; `script` maps a key to a list of {content, finish, refusal, status}.
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
        if opts.fail_first and #calls <= #opts.fail_first then
            local f = opts.fail_first[#calls]
            if f.err then return nil, f.err end
            return { status = f.status, headers = f.headers or {}, body = f.body or "{}" }
        end
        local key = mail:match("(%d%d%d%d)") or "prose"
        local script = (opts.script and opts.script[key]) or M.ANSWERS[key] or M.ANSWERS.prose
        local a = script[math.min(attempt, #script)]
        if type(a) == "string" then a = { a } end
        return { status = a.status or 200, headers = { ["content-type"] = "application/json" },
            body = envelope(a[1], a[2], a[3]) }
    end
    return send, calls
end

return M
