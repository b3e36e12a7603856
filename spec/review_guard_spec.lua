-- The review desk's doors, through real nginx (`bin/jsoncontract review` on 127.0.0.1 over a
-- small SQLite job, spec/support/review_job.lua): a DNS-rebinding Host gets 421 and no data; a
-- POST from another origin gets 403 and no decision is recorded, even with a valid CSRF token;
-- `--allow-host` adds a name; 1,000 wrong secrets from one address are throttled (429 with
-- Retry-After after 5 failures) and logged without the secret; the session cookie is `Secure`
-- with `--tls` (and a POST's Origin must then be https). Skipped by name without nginx, its Lua
-- module or the LuaJIT build of the core.
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"
local review_job = require "support.review_job"
local review_nginx = require "support.review_nginx"
local serve = require "jsoncontract.review.serve"
local store_mod = require "jsoncontract.jobs.store"

local run, q = review_nginx.run, review_nginx.q

local function request(method, url, body, headers)
    local res, err = curl.request { url = url, method = method, body = body, headers = headers, timeout_ms = 10000 }
    assert(res, tostring(err))
    return res
end

local FORM = "application/x-www-form-urlencoded"

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(s)
    return ((s:gsub(".", function(c)
        local b, bits = c:byte(), ""
        for i = 8, 1, -1 do bits = bits .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and "1" or "0") end
        return bits
    end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
        if #x < 6 then return "" end
        local c = 0
        for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
        return B64:sub(c + 1, c + 1)
    end) .. ({ "", "==", "=" })[#s % 3 + 1])
end

describe("jsoncontract.review.serve.allowed_hosts", function()
    it("names the listen address, the loopback forms on loopback, and --allow-host names", function()
        assert.same({ "127.0.0.1", "localhost", "[::1]" }, serve.allowed_hosts("127.0.0.1"))
        assert.same({ "[::1]", "localhost", "127.0.0.1" }, serve.allowed_hosts("::1"))
        assert.same({ "10.0.0.5", "desk.example.com" }, serve.allowed_hosts("10.0.0.5", { "Desk.Example.com" }))
    end)
    it("refuses a wildcard address without a name, and a name with a port or scheme", function()
        local ok, err = serve.allowed_hosts("0.0.0.0")
        assert.is_nil(ok)
        assert.truthy(err:find("--allow-host NAME", 1, true), err)
        assert.same({ "desk.example.com" }, serve.allowed_hosts("0.0.0.0", { "desk.example.com" }))
        for _, bad in ipairs { "desk.example.com:8470", "https://desk.example.com", "a b", "" } do
            ok, err = serve.allowed_hosts("127.0.0.1", { bad })
            assert.is_nil(ok, bad)
            assert.truthy(err:find("--allow-host", 1, true), err)
        end
    end)
end)

describe("jsoncontract review: Host, Origin, failed logins, cookie (nginx)", function()
    local why = review_nginx.missing()
    if why then
        it("guards the desk", function() pending("review desk skipped: " .. why) end)
        return
    end

    local dir, desk
    setup(function()
        dir = run("mktemp -d"):match("^(%S+)")
        review_job.build(dir, ".")
        desk = review_nginx.start(dir, "--allow-host desk.example.com")
    end)
    teardown(function()
        if desk then review_nginx.stop(desk) end
        if dir then run("rm -rf " .. q(dir)) end
    end)

    local function outcomes(id)
        local st = assert(store_mod.open(dir .. "/job.sqlite"))
        local n = #st:item("job-spec", id).outcomes
        st:close()
        return n
    end

    it("answers a DNS-rebinding Host with 421 and no data, on every path", function()
        for _, path in ipairs { "/", "/item/m1", "/desk.css", "/login?token=x" } do
            local res = request("GET", desk.base .. path, nil, { Host = "rebind.evil.example:" .. desk.port })
            assert.equal(421, res.status, path)
            assert.falsy(res.body:find("courier", 1, true), path)
            assert.falsy(res.body:find("csrf", 1, true), path)
            assert.falsy((res.headers["set-cookie"] or ""):find("jc_review", 1, true), path)
        end
        -- a Host that only ends or starts like an allowed one
        for _, host in ipairs { "127.0.0.1.evil.example", "evil-localhost", "desk.example.com.evil.example" } do
            assert.equal(421, request("GET", desk.base .. "/", nil, { Host = host }).status, host)
        end
    end)

    it("answers its listen address, the loopback names and --allow-host names", function()
        for _, host in ipairs { "127.0.0.1:" .. desk.port, "localhost:" .. desk.port, "[::1]:" .. desk.port,
            "LOCALHOST", "desk.example.com", "desk.example.com:443" } do
            local res = request("GET", desk.base .. "/", nil, { Host = host })
            assert.equal(200, res.status, host)
            assert.truthy(res.body:find("Review queue", 1, true), host)
        end
    end)

    it("refuses a POST from another origin with 403 before reading it: no decision recorded", function()
        local page = request("GET", desk.base .. "/item/m6")
        local csrf = page.body:match('name="csrf" value="(%x+)"')
        local seen = page.body:match('name="seen" value="(%d+)"')
        assert.truthy(csrf and seen)
        local before = outcomes("m6")
        local body = "action=needs_customer&csrf=" .. csrf .. "&seen=" .. seen
        -- the rebinding page: its own Host, its own Origin
        local res = request("POST", desk.base .. "/item/m6", body, { ["Content-Type"] = FORM,
            Host = "rebind.evil.example:" .. desk.port, Origin = "http://rebind.evil.example:" .. desk.port })
        assert.equal(421, res.status)
        -- the desk's Host, another Origin (or a Referer elsewhere, or https where the desk is http)
        for _, h in ipairs {
            { Origin = "http://rebind.evil.example:" .. desk.port },
            { Origin = "null" },
            { Origin = "https://127.0.0.1:" .. desk.port },
            { Referer = "http://rebind.evil.example/item/m6" },
        } do
            h["Content-Type"] = FORM
            res = request("POST", desk.base .. "/item/m6", body, h)
            assert.equal(403, res.status)
            assert.truthy(res.body:find("another origin", 1, true))
        end
        assert.equal(before, outcomes("m6"))
        -- and the same request from the desk's own origin is taken
        res = request("POST", desk.base .. "/item/m6", body, { ["Content-Type"] = FORM,
            Origin = "http://127.0.0.1:" .. desk.port })
        assert.equal(303, res.status)
        assert.equal(before + 1, outcomes("m6"))
    end)

    describe("with --auth", function()
        local auth, d2
        local SECRET = "correct-horse-battery"
        setup(function()
            auth = dir .. "/reviewers"
            local f = assert(io.open(auth, "w"))
            f:write("ann:" .. SECRET .. "\n")
            f:close()
        end)
        after_each(function()
            if d2 then review_nginx.stop(d2) end
            d2 = nil
        end)

        it("throttles 1,000 wrong secrets from one address and logs them without the secret", function()
            d2 = review_nginx.start(dir, "--auth " .. q(auth))
            local statuses, wrongs = {}, {}
            for i = 1, 1000 do
                local wrong = string.format("wrong-token-%04d", i)
                wrongs[#wrongs + 1] = wrong
                local res
                if i % 3 == 0 then
                    res = request("GET", d2.base .. "/login?token=" .. wrong)
                elseif i % 3 == 1 then
                    res = request("GET", d2.base .. "/", nil, { Authorization = "Bearer " .. wrong })
                else
                    res = request("GET", d2.base .. "/", nil, { Authorization = "Basic "
                        .. base64("ann:" .. wrong) })
                end
                statuses[res.status] = (statuses[res.status] or 0) + 1
                if i <= 5 then assert.equal(401, res.status, i) end
                if i == 6 then
                    assert.equal(429, res.status)
                    assert.truthy(tonumber(res.headers["retry-after"]))
                end
            end
            -- 5 free, then a lock-out that doubles with each failure: only a handful more are checked
            assert.equal(1000, (statuses[401] or 0) + (statuses[429] or 0))
            assert.is_true(statuses[401] < 20, tostring(statuses[401]))
            -- the right secret is not even checked while the address is locked out
            assert.equal(429, request("GET", d2.base .. "/", nil, { Authorization = "Bearer " .. SECRET }).status)
            -- a request without credentials still gets the login challenge
            assert.equal(401, request("GET", d2.base .. "/").status)
            local log = util.read(d2.log) or ""
            local lines = 0
            for _ in log:gmatch("failed login from 127%.0%.0%.1") do lines = lines + 1 end
            assert.equal(statuses[401], lines)
            assert.truthy(log:find("(basic auth as ann)", 1, true), log)
            assert.truthy(log:find("(bearer token)", 1, true), log)
            assert.truthy(log:find("(login token)", 1, true), log)
            assert.truthy(log:find("locked out for 1 s", 1, true), log)
            for _, wrong in ipairs(wrongs) do assert.falsy(log:find(wrong, 1, true), wrong) end
        end)

        it("behind --trusted-proxy, throttles per client named in X-Forwarded-For, not per proxy", function()
            d2 = review_nginx.start(dir, "--auth " .. q(auth) .. " --trusted-proxy 127.0.0.1")
            local function try(client)
                return request("GET", d2.base .. "/", nil, { Authorization = "Bearer wrong-secret-x",
                    ["X-Forwarded-For"] = client }).status
            end
            for _ = 1, 5 do assert.equal(401, try("203.0.113.7")) end
            assert.equal(429, try("203.0.113.7"))
            -- another client behind the same proxy is not locked out
            assert.equal(401, try("203.0.113.8"))
            assert.equal(200, request("GET", d2.base .. "/", nil, { Authorization = "Bearer " .. SECRET,
                ["X-Forwarded-For"] = "203.0.113.9" }).status)
            assert.truthy((util.read(d2.log) or ""):find("failed login from 203.0.113.7", 1, true))
        end)

        it("sets a Secure session cookie with --tls, and then wants an https Origin", function()
            d2 = review_nginx.start(dir, "--auth " .. q(auth) .. " --tls")
            local res = request("GET", d2.base .. "/login?token=" .. SECRET)
            assert.equal(303, res.status)
            local set = res.headers["set-cookie"]
            assert.truthy(set:find("; HttpOnly; SameSite=Strict; Secure", 1, true), set)
            local cookie = set:match("^(jc_review=[^;]+)")
            local page = request("GET", d2.base .. "/item/m5", nil, { Cookie = cookie })
            assert.equal(200, page.status)
            local body = "action=needs_customer&csrf=" .. page.body:match('name="csrf" value="(%x+)"') .. "&seen="
                .. page.body:match('name="seen" value="(%d+)"')
            local before = outcomes("m5")
            res = request("POST", d2.base .. "/item/m5", body, { Cookie = cookie, ["Content-Type"] = FORM,
                Origin = "http://127.0.0.1:" .. d2.port })
            assert.equal(403, res.status)
            assert.equal(before, outcomes("m5"))
            res = request("POST", d2.base .. "/item/m5", body, { Cookie = cookie, ["Content-Type"] = FORM,
                Origin = "https://127.0.0.1:" .. d2.port })
            assert.equal(303, res.status)
            assert.equal(before + 1, outcomes("m5"))
        end)

        it("sets no Secure flag without --tls (a plain-HTTP browser would drop the cookie)", function()
            d2 = review_nginx.start(dir, "--auth " .. q(auth))
            local res = request("GET", d2.base .. "/login?token=" .. SECRET)
            assert.equal(303, res.status)
            assert.falsy(res.headers["set-cookie"]:find("Secure", 1, true))
        end)
    end)

    it("refuses to listen on a wildcard address without --allow-host", function()
        local auth = dir .. "/reviewers2"
        local f = assert(io.open(auth, "w"))
        f:write("ann:correct-horse-battery\n")
        f:close()
        local out, code = run(q(util.LUA) .. " bin/jsoncontract review " .. q(dir) .. " --auth " .. q(auth)
            .. " --listen 0.0.0.0:" .. util.closed_port())
        assert.equal(1, code)
        assert.truthy(out:find("name the host reviewers reach the desk by with --allow-host NAME", 1, true), out)
    end)
end)
