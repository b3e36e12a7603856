-- A tiny model server that checks the API key (spec/jobs_breaker_spec.lua): every request whose
-- key (Authorization: Bearer, x-api-key or x-goog-api-key) is not KEY gets 401, as a provider
-- answers a wrong key; a request with KEY gets a Gemini or OpenAI envelope (by the path) whose
-- text is "{}", which no ticket schema takes, so the item is settled (in review) by the model.
-- Usage: lua key_server.lua KEY SECONDS; prints "PORT <n>", then serves one request at a time
-- until SECONDS pass or GET /quit.
local socket = require "socket"

local key, lifetime = arg[1], tonumber(arg[2]) or 60
local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
io.stdout:write("PORT ", port, "\n")
io.stdout:flush()
server:settimeout(0.2)

local GEMINI = '{"candidates":[{"content":{"role":"model","parts":[{"text":"{}"}]},"finishReason":"STOP"}],'
    .. '"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}'
local OPENAI = '{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",'
    .. '"message":{"role":"assistant","content":"{}"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}'
local DENIED = '{"error":{"message":"Incorrect API key provided","type":"invalid_request_error",'
    .. '"code":"invalid_api_key"}}'

local deadline = socket.gettime() + lifetime
while socket.gettime() < deadline do
    local c = server:accept()
    if c then
        c:settimeout(5)
        local line = c:receive("*l") or ""
        local headers = {}
        while true do
            local h = c:receive("*l")
            if not h or h == "" then break end
            local name, value = h:match("^([^:]+):%s*(.-)%s*$")
            if name then headers[name:lower()] = value end
        end
        local len = tonumber(headers["content-length"] or "0") or 0
        if len > 0 then c:receive(len) end
        local given = (headers["authorization"] or ""):match("^Bearer%s+(.+)$") or headers["x-api-key"]
            or headers["x-goog-api-key"]
        local status, body = 401, DENIED
        if line:match("^GET /quit") then
            deadline, status, body = 0, 200, "{}"
        elseif given == key then
            status, body = 200, line:find(":generateContent", 1, true) and GEMINI or OPENAI
        end
        c:send(("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s")
            :format(status, status == 401 and "Unauthorized" or "OK", #body, body))
        c:close()
    end
end
server:close()
