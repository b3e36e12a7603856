--- The gateway's request body: read it where nginx put it (memory or a temp file), bounded.
-- @module jsoncontract.nginx.body
-- luacheck: read globals ngx
local tonumber, io_open, find = tonumber, io.open, string.find

local _M = { _VERSION = require("jsoncontract.core")._VERSION }

--- Read the request body of the current request.
-- Refuses a `Content-Length` over `max_bytes` before reading anything; reads a body nginx
-- spooled to a file (`client_body_buffer_size` exceeded, or `client_body_in_file_only`)
-- from that file, at most `max_bytes + 1` bytes.
-- @tparam integer max_bytes largest body accepted, bytes
-- @treturn[1] string the body (not empty, not whitespace only)
-- @return[2] nil
-- @treturn[2] integer HTTP status: 400 (empty or whitespace only) or 413 (over `max_bytes`), or 500 (the spooled
--   file cannot be read)
-- @treturn[2] string code: `"empty_body"`, `"body_too_large"`, `"body_unreadable"`
-- @treturn[2] string technical detail for the log
-- @usage local text, status, code, detail = body.read(64 * 1024)
function _M.read(max_bytes)
    local declared = tonumber(ngx.var.http_content_length)
    if declared and declared > max_bytes then
        return nil, 413, "body_too_large", "Content-Length " .. declared .. " over " .. max_bytes
    end
    ngx.req.read_body()
    local data = ngx.req.get_body_data()
    if data == nil then
        local path = ngx.req.get_body_file()
        if path then
            local f, msg = io_open(path, "rb")
            if not f then return nil, 500, "body_unreadable", "cannot open the body file: " .. msg end
            data = f:read(max_bytes + 1)
            f:close()
        end
    end
    if data == nil or data == "" then return nil, 400, "empty_body", "empty request body" end
    if #data > max_bytes then
        return nil, 413, "body_too_large", "body over " .. max_bytes .. " bytes"
    end
    -- nothing to process is not worth a model call
    if not find(data, "%S") then return nil, 400, "empty_body", "request body of whitespace only" end
    return data
end

return _M
