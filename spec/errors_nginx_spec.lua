-- An err is printed by ngx.say and ngx.print as it is: Debian's nginx with the
-- lua module (one worker, 127.0.0.1, a temp prefix; spec/support/nginx_server.lua) runs
-- spec/support/errors_nginx_app.lua, whose locations write errs from contract:check and from
-- errors.new without tostring. lua-nginx-module reads a table raw, as an array of strings, and
-- answers 500 for any other table; the body must be what tostring(err) gives.
local jc = require "jsoncontract"
local errors = require "jsoncontract.errors"
local curl = require "jsoncontract.transport.curl"
local nginx = require "support.nginx_server"

describe("an err in nginx", function()
    local why = nginx.missing()
    if why then
        it("runs nginx", function() pending(why) end)
        return
    end

    local srv
    setup(function()
        srv = nginx.start {
            http = function(port)
                return table.concat({
                    "  server {",
                    "    listen 127.0.0.1:" .. port .. ";",
                    "    location = / { return 200 'ok'; }",
                    "    location ~ ^/say/(\\w+)$ { content_by_lua_block {",
                    "      require('support.errors_nginx_app').show(ngx.var[1], 'say') } }",
                    "    location ~ ^/print/(\\w+)$ { content_by_lua_block {",
                    "      require('support.errors_nginx_app').show(ngx.var[1], 'print') } }",
                    "  }",
                }, "\n")
            end,
        }
    end)
    teardown(function()
        if srv then srv:stop() end
    end)

    local function get(path)
        local res, err = curl.request { url = srv.base .. path, timeout_ms = 10000 }
        assert(res, tostring(err))
        assert.equal(200, res.status, res.body .. srv:error_log())
        return res
    end

    -- The same errs made here, under the spec's Lua, for the expected text.
    local ticket = jc.contract {
        name = "ticket", version = "1", instructions = "Answer with the order number.",
        schema = { type = "object", properties = { order = { type = "integer" } }, required = { "order" },
            additionalProperties = false },
    }

    it("ngx.say(err) prints the message of a schema err from contract:check", function()
        local _, want = ticket:check('{"order": "1187"}')
        local res = get("/say/schema")
        assert.equal("schema_mismatch", res.headers["x-kind"])
        assert.equal(tostring(want) .. "\n", res.body)
        assert.equal(res.headers["x-tostring"] .. "\n", res.body)
        assert.matches("^schema/schema_mismatch: /order ", res.body)
    end)

    it("ngx.say(err) prints the message of a format err from contract:check", function()
        local _, want = ticket:check('{"order": 1187} trailing')
        local res = get("/say/format")
        assert.equal(tostring(want) .. "\n", res.body)
        assert.matches("^format/", res.body)
    end)

    it("ngx.say(err) prints an err from errors.new", function()
        local res = get("/say/new")
        assert.equal("budget/time_budget: 30000 ms spent\n", res.body)
        assert.equal(tostring(errors.new("budget", "time_budget", "30000 ms spent")) .. "\n", res.body)
    end)

    it("ngx.say(err) prints the new message after fields were assigned", function()
        local res = get("/say/assigned")
        assert.equal("budget/time_budget: 31000 ms spent\n", res.body)
        assert.equal(res.headers["x-tostring"] .. "\n", res.body)
    end)

    it("ngx.print(err) prints the message without a newline", function()
        local res = get("/print/new")
        assert.equal("budget/time_budget: 30000 ms spent", res.body)
    end)

    it("leaves no error in nginx's log", function()
        assert.not_matches("%[error%]", srv:error_log())
    end)
end)
