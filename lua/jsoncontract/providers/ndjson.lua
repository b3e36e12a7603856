--- Newline-delimited JSON framing (Ollama's `application/x-ndjson` streams), fed in chunks of
-- any size: one JSON text per line, lines end in LF (a CR before it is removed), blank lines
-- are skipped. A chunk may end anywhere, including inside a UTF-8 sequence: bytes are kept
-- until their line is whole. Lines are returned as strings; decoding is the caller's job.
-- @module jsoncontract.providers.ndjson
local core = require "jsoncontract.core"

local type, error, setmetatable = type, error, setmetatable
local find, sub = string.find, string.sub

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

--- A new framer.
-- @treturn table framer with `feed` and `finish`
function _M.new()
    return setmetatable({ buf = "" }, mt)
end

--- Feed the next chunk.
-- @tparam string chunk bytes
-- @treturn table array of complete lines (strings, without the line end), blank ones left out
-- @raise when chunk is not a string
function _M.feed(self, chunk)
    if type(chunk) ~= "string" then
        error("chunk must be a string, got " .. type(chunk), 2)
    end
    local buf, out, pos = self.buf .. chunk, {}, 1
    while true do
        local s = find(buf, "\n", pos, true)
        if not s then break end
        local line = sub(buf, pos, s - 1)
        if sub(line, -1) == "\r" then line = sub(line, 1, -2) end
        if line:find("%S") then out[#out + 1] = line end
        pos = s + 1
    end
    self.buf = sub(buf, pos)
    return out
end

--- End of the body.
-- @treturn string|nil the last line when the body did not end with a line end (it may be cut)
-- @treturn boolean complete true when the body ended at a line end
function _M.finish(self)
    local rest = self.buf
    self.buf = ""
    if rest:find("%S") then
        return rest, false
    end
    return nil, true
end

return _M
