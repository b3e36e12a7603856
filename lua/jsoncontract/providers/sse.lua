--- Server-sent events framing (WHATWG HTML "Server-sent events", section "Interpreting an
-- event stream"), fed in chunks of any size.
--
-- Lines end in CRLF, LF or CR (Gemini sends CRLF); a line starting with ":" is a comment;
-- `event:`, `data:`, `id:` and `retry:` are fields (one leading space of the value removed);
-- several `data:` lines of one event are joined with "\n"; a blank line dispatches the event.
-- A chunk may end anywhere (mid-line, between CR and LF, inside a UTF-8 sequence): bytes are
-- kept until their line is whole, and line ends are ASCII, so a multi-byte character is never
-- split. Each chunk is scanned once: the pieces of an unfinished line are joined when its line
-- end arrives, so feeding costs linear time however long the line. A CR ending a chunk ends
-- its line at once; an LF opening the next chunk then completes that CR LF.
-- This module frames only; what an event means is the provider's business.
-- @module jsoncontract.providers.sse
local core = require "jsoncontract.core"

local type, error, setmetatable = type, error, setmetatable
local find, sub, byte = string.find, string.sub, string.byte
local concat = table.concat

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }
local BOM = "\239\187\191"

--- A new framer.
-- @treturn table framer with `feed` and `finish`
-- @usage local f = sse.new(); for _, ev in ipairs(f:feed(chunk)) do ... end
function _M.new()
    -- parts: the pieces of the unfinished line (joined once, when its line end arrives, so a
    -- long line fed in small chunks costs linear time); head: the first bytes while they may
    -- still be a BOM; skip_lf: the last chunk ended in CR, so an LF opening the next one
    -- belongs to that line end
    return setmetatable({ parts = {}, head = "", skip_lf = false, data = {}, event = nil,
        id = nil, started = false, seen_field = false }, mt)
end

local function process_line(self, line, out)
    if line == "" then
        if #self.data > 0 then
            out[#out + 1] = { event = self.event or "message", data = concat(self.data, "\n"),
                id = self.id }
        end
        self.data, self.event, self.seen_field = {}, nil, false
        return
    end
    if byte(line, 1) == 58 then return end -- ":" comment
    local colon = find(line, ":", 1, true)
    local field, value
    if colon then
        field, value = sub(line, 1, colon - 1), sub(line, colon + 1)
        if byte(value, 1) == 32 then value = sub(value, 2) end
    else
        field, value = line, ""
    end
    self.seen_field = true
    if field == "data" then
        self.data[#self.data + 1] = value
    elseif field == "event" then
        self.event = value
    elseif field == "id" then
        self.id = value
    end
    -- "retry" and unknown fields are ignored, as the standard says
end

--- Feed the next chunk of the body.
-- @tparam string chunk bytes (may be empty)
-- @treturn table array of events { event = string ("message" when none was named), data =
--   string (data lines joined with "\n"), id = string|nil }, in order; empty when no event
--   was completed by this chunk
-- @raise when chunk is not a string
function _M.feed(self, chunk)
    if type(chunk) ~= "string" then
        error("chunk must be a string, got " .. type(chunk), 2)
    end
    if not self.started then
        local head = self.head .. chunk
        if #head < 3 and sub(BOM, 1, #head) == head then
            self.head = head -- wait: maybe a BOM
            return {}
        end
        if sub(head, 1, 3) == BOM then head = sub(head, 4) end
        self.head, self.started, chunk = "", true, head
    end
    local out, pos, n, parts = {}, 1, #chunk, self.parts
    if self.skip_lf and n > 0 then
        if byte(chunk, 1) == 10 then pos = 2 end
        self.skip_lf = false
    end
    -- only the new chunk is scanned: the pending pieces hold no line end
    while pos <= n do
        local s = find(chunk, "[\r\n]", pos)
        if not s then break end
        local line = sub(chunk, pos, s - 1)
        if #parts > 0 then
            parts[#parts + 1] = line
            line = concat(parts)
            parts = {}
            self.parts = parts
        end
        process_line(self, line, out)
        pos = s + 1
        if byte(chunk, s) == 13 then
            if s == n then
                self.skip_lf = true -- CR at the end: an LF opening the next chunk is ours
            elseif byte(chunk, pos) == 10 then
                pos = pos + 1
            end
        end
    end
    if pos <= n then parts[#parts + 1] = sub(chunk, pos) end
    return out
end

--- End of the body.
-- An event whose lines have all arrived but that was not yet followed by the blank line is
-- dispatched: recorded streams often lose the final blank line, or the final line end. A
-- last line without its line end counts as whole only when the event's data then is one
-- complete JSON text (or "[DONE]"): a line cut short cannot pass for whole, since a cut JSON
-- text does not decode. Otherwise the pending event is discarded and `complete` is false.
-- (The WHATWG algorithm discards every pending event at the end; it is written for a
-- browser that reconnects, while we must decide on what arrived.)
-- @treturn table events completed by the end of the body
-- @treturn boolean complete false when the body ended inside an event that cannot be whole
function _M.finish(self)
    local out = {}
    local rest = concat(self.parts)
    if not self.started then rest = self.head .. rest end
    local complete = true
    if rest ~= "" then
        process_line(self, rest, out)
        local data = concat(self.data, "\n")
        complete = #self.data > 0 and (data == "[DONE]" or core.decode(data) ~= nil)
    end
    if complete then process_line(self, "", out) end
    self.parts, self.head, self.skip_lf = {}, "", false
    self.data, self.event, self.seen_field = {}, nil, false
    return out, complete
end

return _M
