--- Streamed replies: one accumulator per request that takes the body in chunks, rebuilds the
-- reply from the provider's deltas, and hands the rebuilt envelope to the same protocol gate
-- as a non-streamed reply (`read_doc` of the provider module).
--
-- A reply is accepted only after the provider's finish signal (OpenAI chat `[DONE]` after a
-- finish_reason, Responses `response.completed`/`response.incomplete`, Anthropic
-- `message_stop`, Gemini a chunk with `finishReason` or a blocked prompt, Ollama a line with
-- `done: true`). A body that ends without it, or in the middle of an event, is
-- protocol/stream_incomplete, whatever the text looks like. An error event met mid-stream is
-- classified like an HTTP error (e.g. Anthropic `overloaded_error` -> transport/overloaded,
-- retryable) and the partial text is discarded. An event whose data is not JSON, or an event
-- after the finish signal (other than what the provider allows, e.g. a Gemini usage-only
-- chunk), is protocol/invalid_event.
--
-- A stream has one finish reason (per choice): once a refusal, truncation, filter or unknown
-- reason has been seen, the reply stays refused/truncated/filtered whatever comes after (a
-- later "stop", an event after the finish signal); two different reasons that would both be
-- accepted (e.g. finish_reason "stop", then "tool_calls") are protocol/invalid_event. See
-- `finish_reason`.
-- @module jsoncontract.providers.streaming
local core = require "jsoncontract.core"
local C = require "jsoncontract.providers.envelope"
local sse = require "jsoncontract.providers.sse"
local ndjson = require "jsoncontract.providers.ndjson"

local type, error, setmetatable, ipairs, pairs = type, error, setmetatable, ipairs, pairs
local format = string.format

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

--- A new accumulator (used by the provider modules' `stream_reader`).
-- @tparam table spec { provider = string (for messages), framing = "sse"|"ndjson",
--   event = function(state, name, doc, raw) -> nil | err (name: the SSE event name or nil;
--   doc: decoded data, or nil for a non-JSON payload such as "[DONE]"; raw: the data string),
--   finish = function(state) -> reply | nil, err (called only after `state.done` was set by
--   `event`), preview = function(state) -> string|nil, after_done = function(doc) -> boolean
--   (optional: an event after the finish signal that may be taken; any other is
--   protocol/invalid_event) }
-- @treturn table accumulator with `feed`, `preview`, `finish`
function _M.new(spec)
    return setmetatable({
        spec = spec, state = {}, err = nil, finished = false,
        framer = spec.framing == "ndjson" and ndjson.new() or sse.new(),
    }, mt)
end

--- A provider's accumulator (what every provider's `stream_reader` builds): `new` where `event`
-- sees only JSON objects. Data that is the stream's own end marker (`spec.done_marker`, e.g.
-- OpenAI's "[DONE]") sets `state.done`; any other data that is not a JSON object is
-- protocol/invalid_event "<provider> <what> is not a JSON object".
-- @tparam table spec as for `new`, plus `what` (string naming one unit of the stream, e.g.
--   "stream event", "stream line") and `done_marker` (string or nil)
-- @treturn table accumulator with `feed`, `preview`, `finish`
function _M.objects(spec)
    local event, marker = spec.event, spec.done_marker
    local out = {}
    for k, v in pairs(spec) do out[k] = v end
    out.event = function(st, name, doc, raw)
        if marker and raw == marker then
            st.done = true
            return nil
        end
        if not C.is_object(doc) then return C.not_object_event(spec.provider, spec.what) end
        return event(st, name, doc, raw)
    end
    return _M.new(out)
end

--- Record a finish reason met in a stream (the provider's own field and value: finish_reason,
-- stop_reason, finishReason, done_reason, status) in `rec[field]`, the value the provider's
-- gate will read. The providers define one finish reason per answer: OpenAI one
-- `finish_reason` per choice, on its last chunk; Anthropic's `stop_reason` is a field of the
-- one final Message that `message_delta` completes; Gemini's `finishReason` is set on the
-- candidate's last chunk ("if empty, the model has not stopped"); Ollama's `done_reason` comes
-- with `done: true`; and every recorded stream in the fixtures sends exactly one non-null
-- value. So a second, different value is never an update, and it cannot undo the first:
--
-- * a value not in `clean` (a refusal, truncation, filter, or a reason the module does not
--   know) is kept whatever comes after, and `st.settled` is set: the reply can no longer be
--   accepted, and nothing later (a "stop", an event after the finish signal) may change
--   why; a first such value wins over a later one;
-- * a clean value followed by one that is not takes the latter (e.g. "stop", then "length",
--   then `[DONE]`: truncated);
-- * two different clean values (e.g. "stop", then "tool_calls") contradict each other and
--   neither can be trusted to say how the answer ended: protocol/invalid_event.
-- @tparam table st the accumulator's state (`settled` is set there)
-- @tparam table rec where the reason is kept (`st`, or one choice's table)
-- @tparam string pname provider name, for messages
-- @tparam string field the provider's name of the reason, the key in `rec`
-- @param raw the value met (anything but a string is no finish reason and is ignored)
-- @tparam table clean set of the values the gate may accept
-- @treturn nil|table err protocol/invalid_event for two different clean values
function _M.finish_reason(st, rec, pname, field, raw, clean)
    if type(raw) ~= "string" then return nil end
    local seen = rec[field]
    if seen == nil or (clean[seen] and not clean[raw]) then
        rec[field] = raw
        if not clean[raw] then st.settled = true end
        return nil
    end
    if seen == raw or not clean[seen] then return nil end
    return C.err("protocol", "invalid_event", format("%s stream sent %s %q after %q; a stream "
        .. "has one %s", pname, field, C.snippet(raw, 40), C.snippet(seen, 40), field))
end

local function handle(self, name, raw)
    if self.err then return end
    -- after the finish signal, once a refusal, truncation or filter was seen, nothing may
    -- change the verdict: what follows is not read
    local closed = self.state.done and self.state.settled
    local doc
    if raw ~= "[DONE]" then
        local derr
        doc, derr = core.decode(raw)
        if doc == nil then
            if closed then return end
            self.err = C.err("protocol", "invalid_event", self.spec.provider
                .. " stream event is not JSON: " .. derr.message, { offset = derr.offset })
            return
        end
    end
    if self.state.done and not (self.spec.after_done and self.spec.after_done(doc)) then
        if closed then return end
        -- the finish signal closes the reply: more content would change what was decided
        self.err = C.err("protocol", "invalid_event", self.spec.provider
            .. " stream sent an event after its finish signal")
        return
    end
    local e = self.spec.event(self.state, name, doc, raw)
    if e then self.err = e end
end

--- Feed the next chunk of the streamed body.
-- @tparam string chunk bytes, split anywhere
-- @treturn[1] boolean true while the stream is healthy
-- @return[2] nil
-- @treturn[2] table err the first error event or framing error (every later call returns it)
-- @raise when chunk is not a string, or after `finish`
function _M.feed(self, chunk)
    if type(chunk) ~= "string" then
        error("chunk must be a string, got " .. type(chunk), 2)
    end
    if self.finished then error("feed after finish", 2) end
    if self.err then return nil, self.err end
    local items = self.framer:feed(chunk)
    for _, it in ipairs(items) do
        if self.spec.framing == "ndjson" then
            handle(self, nil, it)
        else
            handle(self, it.event, it.data)
        end
        if self.err then return nil, self.err end
    end
    return true
end

--- The text received so far (content or tool-call arguments), for a partial preview; never a
-- value to act on.
-- @treturn string|nil
function _M.preview(self)
    return self.spec.preview(self.state)
end

--- End of the body: the reply through the protocol gate, or why not.
-- @treturn[1] table reply as the provider's read_response returns it
-- @return[2] nil
-- @treturn[2] table err (protocol/stream_incomplete when the finish signal never came or the
--   body ended inside an event; the error event's category otherwise)
function _M.finish(self)
    if self.finished then error("finish called twice", 2) end
    self.finished = true
    if self.err then return nil, self.err end
    local complete
    if self.spec.framing == "ndjson" then
        local rest
        rest, complete = self.framer:finish()
        if rest then
            -- a last line without its LF: accept it only if it is whole JSON
            local doc = core.decode(rest)
            if doc ~= nil then
                handle(self, nil, rest)
                complete = true
            end
        end
    else
        local items
        items, complete = self.framer:finish()
        for _, it in ipairs(items) do handle(self, it.event, it.data) end
    end
    if self.err then return nil, self.err end
    if not self.state.done then
        return nil, C.err("protocol", "stream_incomplete", self.spec.provider
            .. " stream ended without its finish signal; the reply is incomplete",
            { partial = self.spec.preview(self.state) })
    end
    if not complete then
        return nil, C.err("protocol", "stream_incomplete", self.spec.provider
            .. " stream ended inside a line after its finish signal")
    end
    return self.spec.finish(self.state)
end

return _M
