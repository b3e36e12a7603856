--- The default HTTP transport of jsoncontract: libcurl through `jsoncontract.core`.
--
-- Blocking: never use it inside an nginx worker (use `jsoncontract.transport.openresty`).
-- Policy is fixed in C: TLS verified, redirects never followed (a 3xx is a response),
-- HTTP/HTTPS only, gzip/deflate bodies decoded, response body capped.
-- Statuses 4xx/5xx are responses, not errors: classifying them is the provider layer's job.
--
-- A request table `req` has these fields (any other field raises):
--
--   * `url` string, `http://` or `https://` (required)
--   * `method` string, default `"POST"` when `body` is given, else `"GET"`
--   * `headers` table `{ [name] = value }` of strings; values never appear in messages;
--     no `Content-Type` or `Expect` is added unless given
--   * `body` string or nil
--   * `connect_timeout_ms` integer >= 1, default 10000
--   * `timeout_ms` integer >= 0, whole exchange, 0 = none, default 90000
--   * `read_timeout_ms` integer >= 1 or nil: fail when no byte moves for that long
--     (checked about once a second)
--   * `max_response_bytes` integer >= 1, cap on the decoded body, default 8 MiB
--   * `ca_file` string, path of a PEM CA bundle, or nil for the system store
--
-- A response `res`: `status` integer, `headers` table (lower-case names, last value wins),
-- `body` string (decoded), `elapsed_ms` number (wall time).
--
-- An error `err` (shared error metatable): `category = "transport"`, `kind` one of
-- `"timeout"`, `"connect"`, `"tls"`, `"too_large"`, `"reset"`, `"protocol"`;
-- `message` (names host:port, never headers or the URL path), `curl_code` string such as
-- `"CURLE_RECV_ERROR"`, `elapsed_ms` number.
-- @module jsoncontract.transport.curl
local core = require "jsoncontract.core"

local http_request = core.http_request
local http_many = core.http_many

local _M = { _VERSION = core._VERSION }

--- Run one HTTP exchange and wait for it.
-- @tparam table req the request (see the module description)
-- @treturn[1] table res `{ status, headers, body, elapsed_ms }`
-- @return[2] nil
-- @treturn[2] table err `{ category = "transport", kind, message, curl_code, elapsed_ms }`
-- @raise on misuse: not a table, unknown field, wrong type, URL not http(s)
-- @usage local res, err = curl.request{ url = "http://127.0.0.1:8080/ok", timeout_ms = 5000 }
function _M.request(req)
    return http_request(req)
end

--- Run many HTTP exchanges concurrently and wait for all of them.
-- Every request is checked before any is sent.
-- @tparam {table,...} reqs array of requests
-- @tparam[opt] table opts `{ max_parallel = 16 }` (integer 1..1024)
-- @treturn {table,...} results, same length and order as `reqs`; `results[i]` is a res
--   table or an err (`core.error_fields(results[i]) ~= nil`)
-- @raise on misuse in any request or in `opts`
-- @usage local results = curl.request_many({ { url = a }, { url = b } }, { max_parallel = 4 })
function _M.request_many(reqs, opts)
    if opts == nil then
        return http_many(reqs)
    end
    return http_many(reqs, opts)
end

return _M
