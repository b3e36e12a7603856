-- Handlers of spec/errors_nginx_spec.lua: real errs written with ngx.say / ngx.print as they
-- are (no tostring), and tostring(err) in a header so the spec can compare both.
-- luacheck: globals ngx
local jc = require "jsoncontract"
local errors = require "jsoncontract.errors"

local M = {}

local ticket = jc.contract {
    name = "ticket", version = "1", instructions = "Answer with the order number.",
    schema = { type = "object", properties = { order = { type = "integer" } }, required = { "order" },
        additionalProperties = false },
}

-- The err each location shows, made fresh per request.
local MAKE = {
    schema = function() return select(2, ticket:check('{"order": "1187"}')) end,
    format = function() return select(2, ticket:check('{"order": 1187} trailing')) end,
    new = function() return errors.new("budget", "time_budget", "30000 ms spent", { limit_ms = 30000 }) end,
    assigned = function()
        local err = errors.new("budget", "time_budget", "30000 ms spent")
        err.foo = 1
        err.message = "31000 ms spent"
        return err
    end,
}

function M.show(name, how)
    local err = MAKE[name]()
    ngx.header["X-Tostring"] = tostring(err)
    ngx.header["X-Kind"] = err.kind
    if how == "print" then
        ngx.print(err)
    else
        ngx.say(err)
    end
end

return M
