-- The stream framers (jsoncontract.providers.sse, .ndjson) and the accumulators' edge cases:
-- line ends, comments, multi-line data, chunks split inside CRLF and inside UTF-8 sequences,
-- error events, events that are not JSON, a [DONE] without a finish reason, one finish reason
-- per stream.
local core = require "jsoncontract.core"
local util = require "support.util"
local sse = require "jsoncontract.providers.sse"
local ndjson = require "jsoncontract.providers.ndjson"
local providers = require "jsoncontract.providers"

-- feed `body` to a fresh framer one byte at a time; return all events and `complete`
local function frame_bytes(mod, body)
    local f, out = mod.new(), {}
    for i = 1, #body do
        for _, e in ipairs(f:feed(body:sub(i, i))) do out[#out + 1] = e end
    end
    local last, complete = f:finish()
    if mod == sse then
        for _, e in ipairs(last) do out[#out + 1] = e end
    elseif last then
        out[#out + 1] = last
    end
    return out, complete
end

describe("jsoncontract.providers.sse", function()
    it("frames LF, CRLF and CR line ends alike, byte by byte", function()
        for _, eol in ipairs({ "\n", "\r\n", "\r" }) do
            local body = ("event: a" .. eol .. "data: 1" .. eol .. eol .. "data: 2" .. eol .. eol)
            local evs, complete = frame_bytes(sse, body)
            assert.is_true(complete)
            assert.same({ { event = "a", data = "1" }, { event = "message", data = "2" } }, evs)
        end
    end)

    it("joins multi-line data with LF, skips comments, takes one leading space off, keeps id", function()
        local f = sse.new()
        local evs = f:feed(": keep-alive\ndata:x\ndata:  y\nid: 7\nretry: 100\n\n")
        assert.same({ { event = "message", data = "x\n y", id = "7" } }, evs)
    end)

    it("strips a BOM split across chunks", function()
        local f = sse.new()
        assert.same({}, f:feed("\239"))
        assert.same({}, f:feed("\187"))
        assert.same({ { event = "message", data = "z" } }, f:feed("\191data: z\n\n"))
    end)

    it("waits at a CR that ends a chunk: CR LF split across chunks is one line end", function()
        local f = sse.new()
        assert.same({}, f:feed("data: a\r"))
        assert.same({}, f:feed("\n"))
        assert.same({ { event = "message", data = "a" } }, f:feed("\r\n"))
    end)

    it("a CR ending a chunk ends its line; only an LF opening the next chunk is dropped", function()
        local f = sse.new()
        assert.same({}, f:feed("data: a\r"))
        assert.same({}, f:feed(""))
        assert.same({}, f:feed("data: b\r"))
        assert.same({ { event = "message", data = "a\nb" } }, f:feed("\r"))
        assert.same({}, f:feed("\ndata: c\r"))
        assert.same({ { event = "message", data = "c" } }, f:feed("\n\n"))
    end)

    it("frames a 4 MB line fed in 1 KB chunks (pieces joined once, CR LF split at a chunk end)", function()
        local big = string.rep("0123456789abcdef", 2 ^ 18) -- 4 MiB
        local body = "data: " .. big .. "\r\ndata: z\r\n\r\n"
        local cut = #("data: " .. big) + 1 -- the CR ends a chunk, its LF opens the next
        local f, evs = sse.new(), {}
        local chunks = {}
        for i = 1, cut, 1024 do chunks[#chunks + 1] = body:sub(i, math.min(i + 1023, cut)) end
        chunks[#chunks + 1] = body:sub(cut + 1)
        for _, c in ipairs(chunks) do
            for _, e in ipairs(f:feed(c)) do evs[#evs + 1] = e end
        end
        assert.equal("\r", chunks[#chunks - 1]:sub(-1))
        assert.equal(1, #evs)
        assert.equal("message", evs[1].event)
        assert.is_true(evs[1].data == big .. "\nz", "data differs from what was sent")
        local rest, complete = f:finish()
        assert.same({}, rest)
        assert.is_true(complete)
    end)

    it("at the end: a whole pending event is dispatched; a cut line only if its data is whole JSON", function()
        local f = sse.new()
        f:feed("data: {\"a\":1}\n")
        local evs, complete = f:finish()
        assert.is_true(complete)
        assert.same({ { event = "message", data = '{"a":1}' } }, evs)
        f = sse.new()
        f:feed("data: {\"a\":1}")
        evs, complete = f:finish()
        assert.is_true(complete)
        assert.equal(1, #evs)
        f = sse.new()
        f:feed("data: {\"a\":")
        evs, complete = f:finish()
        assert.is_false(complete)
        assert.same({}, evs)
        f = sse.new()
        f:feed("data: [DON")
        local _, done = f:finish()
        assert.is_false(done)
    end)

    it("raises on a chunk that is not a string", function()
        assert.has_error(function() sse.new():feed(nil) end, "chunk must be a string, got nil")
    end)
end)

describe("jsoncontract.providers.ndjson", function()
    it("returns lines without their line end, skips blank lines, keeps a cut last line apart", function()
        local lines, complete = frame_bytes(ndjson, '{"a":1}\r\n\n{"b":2}\n{"c"')
        assert.same({ '{"a":1}', '{"b":2}', '{"c"' }, lines)
        assert.is_false(complete)
        local f = ndjson.new()
        assert.same({ "x" }, f:feed("x\n"))
        local rest, done = f:finish()
        assert.is_nil(rest)
        assert.is_true(done)
    end)

    it("frames a 4 MB line fed in 1 KB chunks, and keeps a cut one whole for finish", function()
        local big = '{"s":"' .. string.rep("0123456789abcdef", 2 ^ 18) .. '"}'
        local f, lines = ndjson.new(), {}
        local body = big .. "\r\n" .. big
        for i = 1, #body, 1024 do
            for _, l in ipairs(f:feed(body:sub(i, i + 1023))) do lines[#lines + 1] = l end
        end
        assert.equal(1, #lines)
        assert.is_true(lines[1] == big, "first line differs from what was sent")
        local rest, complete = f:finish()
        assert.is_true(rest == big, "the cut last line differs from what was sent")
        assert.is_false(complete)
    end)
end)

describe("stream accumulators", function()
    local function run(name, chunks)
        local acc = providers.get(name).stream_reader()
        for _, c in ipairs(chunks) do
            local ok, err = acc:feed(c)
            if not ok then return nil, err, acc end
        end
        local r, e = acc:finish()
        return r, e, acc
    end

    local function openai_chunk(delta, finish)
        return "data: " .. core.encode({ id = "c", model = "m", choices = { { index = 0, delta = delta,
            finish_reason = finish or core.null } } }) .. "\n\n"
    end

    it("rebuilds multi-byte text split inside its UTF-8 sequences (every split point)", function()
        local text = '{"name":"Zoë 日本 🙂"}'
        local body = openai_chunk({ content = text:sub(1, 14) }) .. openai_chunk({ content = text:sub(15) })
            .. openai_chunk({}, "stop") .. "data: [DONE]\n\n"
        for i = 0, #body do
            local r, e = run("openai", { body:sub(1, i), body:sub(i + 1) })
            assert.is_nil(e)
            assert.equal(text, r.text)
            assert.is_not_nil(core.decode(r.text))
        end
    end)

    it("takes a 4 MB content delta fed in 1 KB chunks", function()
        local text = '{"s":"' .. string.rep("0123456789abcdef", 2 ^ 18) .. '"}'
        local body = openai_chunk({ content = text }) .. openai_chunk({}, "stop") .. "data: [DONE]\n\n"
        local chunks = {}
        for i = 1, #body, 1024 do chunks[#chunks + 1] = body:sub(i, i + 1023) end
        local r, e = run("openai", chunks)
        assert.is_nil(e)
        assert.is_true(r.text == text, "text differs from what was sent")
        assert.equal("stop", r.finish)
    end)

    it("keeps refusal deltas and refuses", function()
        local r, e = run("openai", { openai_chunk({ refusal = "No, " }), openai_chunk({ refusal = "sorry." }),
            openai_chunk({}, "stop"), "data: [DONE]\n\n" })
        assert.is_nil(r)
        assert.equal("refused/refusal", e.category .. "/" .. e.kind)
        assert.equal("No, sorry.", e.refusal)
    end)

    it("offers a partial preview while streaming, and never accepts it without the finish signal", function()
        local acc = providers.get("openai").stream_reader()
        assert.is_true(acc:feed(openai_chunk({ content = '{"label":' })))
        assert.is_true(acc:feed(openai_chunk({ content = '"bug"}' })))
        assert.equal('{"label":"bug"}', acc:preview())
        local r, e = acc:finish()
        assert.is_nil(r)
        assert.equal("protocol", e.category)
        assert.equal("stream_incomplete", e.kind)
        assert.equal('{"label":"bug"}', e.partial)
        assert.has_error(function() acc:finish() end, "finish called twice")
    end)

    it("[DONE] without a finish_reason is not a finish", function()
        local r, e = run("openai", { openai_chunk({ content = "{}" }), "data: [DONE]\n\n" })
        assert.is_nil(r)
        assert.equal("protocol/unknown_finish_reason", e.category .. "/" .. e.kind)
    end)

    it("joins tool-call argument fragments per index", function()
        local tc = function(args, name)
            return { tool_calls = { { index = 0, ["function"] = { name = name, arguments = args } } } }
        end
        local r = assert(run("openai", { openai_chunk(tc('{"a":', "f")), openai_chunk(tc("1}")),
            openai_chunk({}, "tool_calls"), "data: [DONE]\n\n" }))
        assert.equal('{"a":1}', r.text)
        assert.equal("tool_use", r.finish)
        assert.equal("f", r.tool_name)
    end)

    it("an event that is not JSON is protocol/invalid_event, and sticks", function()
        local acc = providers.get("anthropic").stream_reader()
        local ok, e = acc:feed("event: message_start\ndata: {oops\n\n")
        assert.is_nil(ok)
        assert.equal("protocol/invalid_event", e.category .. "/" .. e.kind)
        local ok2, e2 = acc:feed("data: {}\n\n")
        assert.is_nil(ok2)
        assert.equal(e, e2)
    end)

    it("error events mid-stream keep their category", function()
        local cases = {
            { "openai", 'data: {"error":{"type":"server_error","message":"boom"}}\n\n', "transport/server_error" },
            { "anthropic", 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"x"}}\n\n',
                "transport/rate_limited" },
            { "gemini", 'data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}\r\n\r\n',
                "transport/overloaded" },
            { "openai_responses", 'event: response.failed\ndata: {"type":"response.failed","response":'
                .. '{"status":"failed","error":{"code":"server_error","message":"x"},"output":[]}}\n\n',
                "transport/server_error" },
            { "ollama", '{"error":"model crashed"}\n', "transport/server_error" },
        }
        for _, c in ipairs(cases) do
            local r, e = run(c[1], { c[2] })
            assert.is_nil(r)
            assert.equal(c[3], e.category .. "/" .. e.kind, c[1])
            assert.is_true(e.retryable, c[1])
        end
    end)

    it("an event after the finish signal is protocol/invalid_event", function()
        local r, e = run("openai", { openai_chunk({ content = "{}" }, "stop"), "data: [DONE]\n\n",
            openai_chunk({ content = "more" }) })
        assert.is_nil(r)
        assert.equal("protocol/invalid_event", e.category .. "/" .. e.kind)
        r, e = run("anthropic", { 'event: message_stop\ndata: {"type":"message_stop"}\n\n',
            'event: ping\ndata: {"type":"ping"}\n\n' })
        assert.is_nil(r)
        assert.equal("invalid_event", e.kind)
        -- Gemini: a usage-only chunk after finishReason is taken
        local g = assert(run("gemini", {
            'data: {"candidates":[{"content":{"parts":[{"text":"{}"}]},"finishReason":"STOP"}]}\r\n\r\n',
            'data: {"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}\r\n\r\n' }))
        assert.equal(3, g.usage.input_tokens)
    end)

    -- A stream has one finish reason: a refusal, truncation or filter seen once stays, whatever a
    -- later event says; two different reasons that would both be accepted are a protocol error.
    local function anthropic_event(t, fields)
        local doc = { type = t }
        for k, v in pairs(fields or {}) do doc[k] = v end
        return "event: " .. t .. "\ndata: " .. core.encode(doc) .. "\n\n"
    end
    local function anthropic_stream(...)
        local out = { anthropic_event("message_start", { message = { id = "msg", model = "m",
                usage = { input_tokens = 3 } } }),
            anthropic_event("content_block_start", { index = 0, content_block = { type = "text", text = "" } }),
            anthropic_event("content_block_delta", { index = 0, delta = { type = "text_delta", text = '{"a":1}' } }),
            anthropic_event("content_block_stop", { index = 0 }) }
        for _, e in ipairs({ ... }) do out[#out + 1] = e end
        return out
    end
    local function stop_reason(reason, details)
        return anthropic_event("message_delta", { delta = { stop_reason = reason, stop_details = details },
            usage = { output_tokens = 5 } })
    end
    local function gemini_chunk(cand)
        return "data: " .. core.encode({ candidates = { cand }, modelVersion = "g" }) .. "\r\n\r\n"
    end
    local function gemini_text(text, finish, index)
        return gemini_chunk({ content = { parts = { { text = text } }, role = "model" }, finishReason = finish,
            index = index })
    end
    local function ollama_line(content, done, reason)
        return core.encode({ model = "m", message = { role = "assistant", content = content }, done = done,
            done_reason = reason }) .. "\n"
    end
    local function kind(e) return e and e.category .. "/" .. e.kind end

    it("anthropic: a refusal or max_tokens stop_reason stays whatever a later message_delta says", function()
        local r, e = run("anthropic", anthropic_stream(
            stop_reason("refusal", { category = "cyber", explanation = "Not this." }),
            stop_reason("end_turn"), anthropic_event("message_stop")))
        assert.is_nil(r)
        assert.equal("refused/refusal", kind(e))
        assert.equal("Not this.", e.refusal)
        r, e = run("anthropic", anthropic_stream(stop_reason("max_tokens"), stop_reason("end_turn"),
            anthropic_event("message_stop")))
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
        -- a clean stop_reason, then a refusal: the refusal decides
        r, e = run("anthropic", anthropic_stream(stop_reason("end_turn"), stop_reason("refusal"),
            anthropic_event("message_stop")))
        assert.is_nil(r)
        assert.equal("refused/refusal", kind(e))
        -- the same stop_reason twice, or a delta without one, is no contradiction
        r = assert(run("anthropic", anthropic_stream(stop_reason("end_turn"), stop_reason("end_turn"),
            anthropic_event("message_delta", { delta = {}, usage = { output_tokens = 6 } }),
            anthropic_event("message_stop"))))
        assert.equal('{"a":1}', r.text)
        assert.equal(6, r.usage.output_tokens)
    end)

    it("anthropic: after a refusal and message_stop, later events change nothing", function()
        local r, e = run("anthropic", anthropic_stream(stop_reason("refusal"), anthropic_event("message_stop"),
            stop_reason("end_turn"), anthropic_event("message_stop")))
        assert.is_nil(r)
        assert.equal("refused/refusal", kind(e))
    end)

    it("openai and llamacpp: a length or content_filter finish_reason stays whatever a later chunk says", function()
        for _, name in ipairs({ "openai", "llamacpp" }) do
            for reason, want in pairs({ length = "truncated/max_tokens", content_filter = "filtered/content_filter" }) do
                local r, e = run(name, { openai_chunk({ content = '{"a":1}' }, reason), openai_chunk({}, "stop"),
                    "data: [DONE]\n\n" })
                assert.is_nil(r, name .. " " .. reason)
                assert.equal(want, kind(e), name .. " " .. reason)
                -- "stop", then "length": the truncation decides
                r, e = run(name, { openai_chunk({ content = '{"a":1}' }, "stop"), openai_chunk({}, reason),
                    "data: [DONE]\n\n" })
                assert.is_nil(r, name .. " " .. reason)
                assert.equal(want, kind(e), name .. " " .. reason)
            end
        end
        -- after [DONE], once truncated, a later chunk changes nothing
        local r, e = run("openai", { openai_chunk({ content = '{"a":1}' }, "length"), "data: [DONE]\n\n",
            openai_chunk({}, "stop"), "data: [DONE]\n\n" })
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
    end)

    it("two different finish reasons that would both be accepted are protocol/invalid_event", function()
        local r, e = run("openai", { openai_chunk({ content = '{"a":1}' }, "stop"), openai_chunk({}, "tool_calls"),
            "data: [DONE]\n\n" })
        assert.is_nil(r)
        assert.equal("protocol/invalid_event", kind(e))
        assert.matches('finish_reason "tool_calls" after "stop"', e.message, 1, true)
        r, e = run("anthropic", anthropic_stream(stop_reason("end_turn"), stop_reason("tool_use"),
            anthropic_event("message_stop")))
        assert.is_nil(r)
        assert.equal("protocol/invalid_event", kind(e))
        -- the same finish_reason twice is one finish reason
        r = assert(run("openai", { openai_chunk({ content = '{"a":1}' }, "stop"), openai_chunk({}, "stop"),
            "data: [DONE]\n\n" }))
        assert.equal("stop", r.finish_reason)
    end)

    it("openai and llamacpp: content after a clean finish_reason is protocol/invalid_event", function()
        for _, name in ipairs({ "openai", "llamacpp" }) do
            local r, e = run(name, { openai_chunk({ content = '{"a":1}' }, "stop"),
                openai_chunk({ content = '{"a":2}' }), "data: [DONE]\n\n" })
            assert.is_nil(r, name)
            assert.equal("protocol/invalid_event", kind(e), name)
            assert.matches('content after finish_reason "stop"', e.message, 1, true)
            -- an error chunk that also carries choices ends the stream
            r, e = run(name, { openai_chunk({ content = '{"a":1}' }),
                'data: {"choices":[],"error":{"message":"upstream failed","type":"server_error"}}\n\n',
                "data: [DONE]\n\n" })
            assert.is_nil(r, name)
            assert.equal("transport", e.category, name)
        end
        -- after a truncation nothing is read: it stays truncated
        local r, e = run("openai", { openai_chunk({ content = '{"a":' }, "length"),
            openai_chunk({ content = "1}" }), "data: [DONE]\n\n" })
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
        -- content in the chunk that carries the finish_reason, and an empty delta after it, are fine
        r = assert(run("openai", { openai_chunk({ content = '{"a":1}' }, "stop"), openai_chunk({ content = "" }),
            "data: [DONE]\n\n" }))
        assert.equal('{"a":1}', r.text)
    end)

    it("gemini: a SAFETY, MAX_TOKENS or RECITATION finishReason stays whatever a later chunk says", function()
        local cases = { SAFETY = "filtered/content_filter", MAX_TOKENS = "truncated/max_tokens",
            RECITATION = "filtered/recitation", OTHER = "protocol/unknown_finish_reason" }
        for reason, want in pairs(cases) do
            local r, e = run("gemini", { gemini_text('{"a":', nil), gemini_text("1}", reason),
                gemini_text("", "STOP") })
            assert.is_nil(r, reason)
            assert.equal(want, kind(e), reason)
        end
        -- a usage-only chunk after it is still read
        local r, e, reply = providers.get("gemini").read_response(200, { ["content-type"] = "text/event-stream" },
            gemini_text('{"a":1}', "MAX_TOKENS")
            .. 'data: {"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":9}}\r\n\r\n')
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
        assert.equal(3, reply.usage.input_tokens)
    end)

    it("gemini: a chunk carrying a second candidate alone counts it (protocol/ambiguous_content)", function()
        local r, e = run("gemini", { gemini_text('{"a":1}', nil, 0), gemini_text('{"a":2}', nil, 1),
            gemini_text("", "STOP", 0) })
        assert.is_nil(r)
        assert.equal("protocol/ambiguous_content", kind(e))
    end)

    it("ollama: a done_reason length stays whatever a later line says", function()
        local r, e = run("ollama", { ollama_line('{"a":1}', true, "length"), ollama_line("", true, "stop") })
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
        r, e = run("ollama", { ollama_line('{"a":1}', false, "length"), ollama_line("", true, "stop") })
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
        r = assert(run("ollama", { ollama_line('{"a":1}', false), ollama_line("", true, "stop") }))
        assert.equal("stop", r.finish_reason)
    end)

    it("openai_responses: refusal deltas stay a refusal; a completed response cannot undo an incomplete one", function()
        local function ev(t, fields)
            local doc = { type = t }
            for k, v in pairs(fields or {}) do doc[k] = v end
            return "event: " .. t .. "\ndata: " .. core.encode(doc) .. "\n\n"
        end
        local completed = ev("response.completed", { response = { id = "r", status = "completed",
            output = { { type = "message", content = { { type = "output_text", text = '{"a":1}' } } } } } })
        local r, e = run("openai_responses", { ev("response.refusal.delta", { delta = "No." }), completed })
        assert.is_nil(r)
        assert.equal("refused/refusal", kind(e))
        assert.equal("No.", e.refusal)
        r, e = run("openai_responses", { ev("response.incomplete", { response = { id = "r", status = "incomplete",
            incomplete_details = { reason = "max_output_tokens" }, output = {} } }), completed })
        assert.is_nil(r)
        assert.equal("truncated/max_tokens", kind(e))
    end)

    it("never raises on garbage or mangled fixtures, in any chunking (fixed seed)", function()
        local rnd = util.lcg(12345)
        local PIECES = { "data: ", "event: ", "\n", "\r\n", "\r", ":", "[DONE]", "{", "}", "[", "]", '"', ",",
            '"type":"message_stop"', '"choices":[', '"delta":{"content":"', '"done":true', '"finishReason":"STOP"',
            '"error":', "null", "1e999", "\\u00", "\255\254", "é", "\0" }
        for _, name in ipairs(providers.names) do
            for _ = 1, 60 do
                local parts = {}
                for i = 1, 1 + rnd(40) do parts[i] = PIECES[1 + rnd(#PIECES)] end
                local body = table.concat(parts)
                local acc = providers.get(name).stream_reader()
                local pos = 1
                while pos <= #body do
                    local n = 1 + rnd(9)
                    acc:feed(body:sub(pos, pos + n - 1))
                    pos = pos + n
                end
                local r, e = acc:finish()
                if r then
                    assert.is_string(r.text)
                else
                    assert.is_string(e.category)
                    assert.is_string(e.kind)
                end
            end
        end
    end)

    it("read_response reads a 2xx streamed body by its content-type", function()
        local body = openai_chunk({ content = '{"x":1}' }) .. openai_chunk({}, "stop") .. "data: [DONE]\n\n"
        local r = assert(providers.get("llamacpp").read_response(200,
            { ["content-type"] = "text/event-stream" }, body))
        assert.equal('{"x":1}', r.text)
        local r2, e2 = providers.get("ollama").read_response(200, { ["content-type"] = "application/x-ndjson" },
            '{"message":{"content":"{}"},"done":false}\n')
        assert.is_nil(r2)
        assert.equal("stream_incomplete", e2.kind)
    end)
end)
