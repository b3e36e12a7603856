--- Newline-delimited JSON framing (Ollama's `application/x-ndjson` streams), fed in chunks of
-- any size: one JSON text per line, lines end in LF (a CR before it is removed), blank lines
-- are skipped. A chunk may end anywhere, including inside a UTF-8 sequence: bytes are kept
-- until their line is whole. Lines are returned as strings; decoding is the caller's job.
-- @module jsoncontract.providers.ndjson
local core = require "jsoncontract.core"

local type, error, setmetatable = type, error, setmetatable
local find, sub, byte = string.find, string.sub, string.byte
local concat = table.concat

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

--- A new framer.
-- @treturn table framer with `feed` and `finish`
function _M.new()
    -- parts: the pieces of the unfinished line, joined once when its LF arrives (a long line
    -- fed in small chunks costs linear time)
    return setmetatable({ parts = {} }, mt)
end

--- Feed the next chunk.
-- @tparam string chunk bytes
-- @treturn table array of complete lines (strings, without the line end), blank ones left out
-- @raise when chunk is not a string
function _M.feed(self, chunk)
    if type(chunk) ~= "string" then
        error("chunk must be a string, got " .. type(chunk), 2)
    end
    local out, pos, parts = {}, 1, self.parts
    -- only the new chunk is scanned: the pending pieces hold no LF
    while true do
        local s = find(chunk, "\n", pos, true)
        if not s then break end
        local line = sub(chunk, pos, s - 1)
        if #parts > 0 then
            parts[#parts + 1] = line
            line = concat(parts)
            parts = {}
            self.parts = parts
        end
        if byte(line, -1) == 13 then line = sub(line, 1, -2) end
        if find(line, "%S") then out[#out + 1] = line end
        pos = s + 1
    end
    if pos <= #chunk then parts[#parts + 1] = sub(chunk, pos) end
    return out
end

--- End of the body.
-- @treturn string|nil the last line when the body did not end with a line end (it may be cut)
-- @treturn boolean complete true when the body ended at a line end
function _M.finish(self)
    local rest = concat(self.parts)
    self.parts = {}
    if find(rest, "%S") then
        return rest, false
    end
    return nil, true
end

return _M
