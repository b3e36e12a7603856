-- The review desk's pages and decisions over a real SQLite job store, and the same over a real
-- PostgreSQL server the spec starts (skipped by name when it cannot) (no web server here; the
-- browser spec drives the same desk through nginx): the queue with counts per reason and keyset
-- paging over 10,000 items, an item with its attempts, decisions held to the contract's schema
-- and rules gates, recorded as human attempts and outcomes in one transaction, and CSRF.
local jc = require "jsoncontract"
local util = require "support.util"
local review_job = require "support.review_job"
local review_pg = require "support.review_pg"
local store_mod = require "jsoncontract.jobs.store"
local rq = require "jsoncontract.review.queries"
local desk_mod = require "jsoncontract.review.desk"

local ticket = dofile("examples/support_ticket.lua")

local function desk_specs(engine)
    local dir, st, desk, orders, pg, pg_missing
    local url

    if engine == "postgresql" then
        setup(function() pg, pg_missing = review_pg.start() end)
        teardown(function() review_pg.stop(pg) end)
    end

    local function get(path, args, who)
        return desk:handle { method = "GET", path = path, args = args or {}, reviewer = who or "ann" }
    end
    local function post(path, fields, who, extra)
        fields.csrf = fields.csrf == nil and desk:csrf_token(who or "ann") or fields.csrf or nil
        -- as the page's form sends it (false: left out)
        if fields.seen == nil then
            fields.seen = desk:handle({ method = "GET", path = path, args = {}, reviewer = who or "ann" }).body
                :match('name="seen" value="(%d+)"')
        end
        fields.seen = fields.seen or nil
        local req = { method = "POST", path = path, args = {}, post = fields, reviewer = who or "ann" }
        for k, v in pairs(extra or {}) do req[k] = v end
        return desk:handle(req)
    end
    local function ticket_fields(intent, order_id, urgent, summary)
        return { action = "accept", ["v/intent"] = jc.encode(intent), ["v/order_id"] = order_id,
            ["v/urgent"] = urgent, ["v/summary"] = summary }
    end

    before_each(function()
        if pg_missing then return pending(pg_missing) end
        dir = util.sh("mktemp -d"):match("^(%S+)")
        if pg then
            review_pg.reset(pg)
            url = pg.url
        end
        review_job.build(dir, ".", url)
        st = assert(store_mod.open(url or (dir .. "/job.sqlite")))
        orders = ticket.replay_context { evidence_dir = dir, root = "." }
        desk = desk_mod.new { store = st, queries = rq, job = assert(st:job("job-spec")), contract = ticket.contract,
            context = orders, secret = ("s"):rep(32), now = function() return "2026-01-02T03:04:05Z" end }
    end)

    after_each(function()
        if st then st:close() end
        if orders then orders.orders:close() end
        if dir then util.sh("rm -rf '" .. dir .. "'") end
        st, orders, dir = nil, nil, nil
    end)

    describe("new()", function()
        it("refuses a short secret", function()
            assert.has_error(function()
                desk_mod.new { store = st, queries = rq, job = { id = "j" }, contract = ticket.contract, secret = "x" }
            end, "desk.new: opts.secret must be a string of at least 16 bytes")
        end)
    end)

    describe("the queue", function()
        it("lists the items sent to review with counts per reason, and not the accepted one", function()
            local res = get("/")
            assert.equal(200, res.status)
            assert.truthy(res.body:find("Review queue: 5 to review, 0 decided by a person", 1, true))
            for _, id in ipairs { "m1", "m2", "m3", "m5", "m6" } do
                assert.truthy(res.body:find('href="/item/' .. id .. '"', 1, true), id)
            end
            assert.falsy(res.body:find('href="/item/m4"', 1, true))
            assert.truthy(res.body:find("<code>schema/schema_mismatch</code> 1", 1, true))
            assert.truthy(res.body:find("<code>rules/rule_failed</code> 1", 1, true))
        end)

        it("filters by reason", function()
            local res = get("/", { reason = "rules/rule_failed" })
            assert.truthy(res.body:find('href="/item/m3?reason=rules%2Frule_failed"', 1, true))
            assert.falsy(res.body:find('href="/item/m1', 1, true))
        end)

        it("shows the mail as text in the queue", function()
            local res = get("/")
            assert.truthy(res.body:find("&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;", 1, true))
            assert.falsy(res.body:find("<script>alert", 1, true))
        end)

        it("pages 10,000 items by keyset, 50 a page, forwards and back", function()
            review_job.add_many(dir, 10000, url)
            local counts = rq.queue_counts(st, "job-spec")
            assert.equal(10005, counts.open)
            local rows, more = rq.queue(st, "job-spec", { limit = 50 })
            assert.equal(50, #rows)
            assert.is_true(more)
            -- Page 101 (the last but one), reached by its key, not by walking.
            local page = rq.queue(st, "job-spec", { after = 100 + 9950, limit = 50 })
            assert.same({ "bulk-09951", "bulk-10000" }, { page[1].item_id, page[50].item_id })
            local last, more_last = rq.queue(st, "job-spec", { after = 100 + 9950, limit = 100 })
            assert.equal(50, #last)
            assert.is_false(more_last)
            local back = rq.queue(st, "job-spec", { before = page[1].seq, limit = 50 })
            assert.same({ "bulk-09901", "bulk-09950" }, { back[1].item_id, back[50].item_id })
            local html = get("/", { after = tostring(back[1].seq - 1) }).body
            assert.truthy(html:find('rel="prev" href="/?before=' .. back[1].seq .. '"', 1, true))
            assert.truthy(html:find('rel="next" href="/?after=' .. back[50].seq .. '"', 1, true))
            -- the last page has no next
            assert.falsy(get("/", { after = tostring(page[1].seq - 1) }).body:find('rel="next"', 1, true))
            assert.equal(3334, #rq.queue(st, "job-spec", { reason = "format/unexpected_character", limit = 5000 }))
        end)
    end)

    describe("an item", function()
        it("shows the mail, every attempt with its errors marked in the model's text, and the contract", function()
            local res = get("/item/m1")
            assert.equal(200, res.status)
            assert.truthy(res.body:find("Attempts: 2 by the model", 1, true))
            assert.truthy(res.body:find('<mark title="/intent" data-pointer="/intent">&quot;Lieferung&quot;</mark>',
                1, true))
            assert.truthy(res.body:find('<mark title="/urgent" data-pointer="/urgent">&quot;ja&quot;</mark>', 1, true))
            assert.truthy(res.body:find("contract support_ticket 1.0.0", 1, true))
            assert.truthy(res.body:find("tokens in 50 / out 10", 1, true))
        end)

        it("shows each attempt's errors as the store kept them, without running the gates again", function()
            local stored = st:evidence_for("job-spec", "m1")[1].error_items
            assert.equal("/intent", stored[1].pointer)
            local check, calls = desk.contract.check, 0
            desk.contract.check = function(...) calls = calls + 1 return check(...) end
            local ok, res = pcall(get, "/item/m1")
            desk.contract.check = check
            assert(ok, res)
            assert.equal(0, calls)
            local words = stored[1].message:sub(#"/intent " + 1):gsub("&", "&amp;"):gsub('"', "&quot;")
            assert.truthy(res.body:find("<li><code>/intent</code> " .. words, 1, true), words)
        end)

        it("pre-fills the form from the best attempt (the one that got furthest)", function()
            local res = get("/item/m1")
            -- attempt 2 fixed "urgent"; both kept "Lieferung"
            assert.truthy(res.body:find('value="true" checked> yes', 1, true))
            assert.truthy(res.body:find("Lieferung (not allowed)</option>", 1, true))
        end)

        it("shows a refusal, a cut reply and a format error's position", function()
            assert.truthy(get("/item/m2").body:find("<code>refused/refusal</code>", 1, true))
            assert.truthy(get("/item/m6").body:find("finish length", 1, true))
            assert.truthy(get("/item/m5").body:find('<mark class="at" title="format error here">H</mark>', 1, true))
        end)

        it("shows a mail with markup as text", function()
            local body = get("/item/m2").body
            assert.truthy(body:find("&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;", 1, true))
            assert.truthy(body:find("&lt;b&gt;Refund&lt;/b&gt;", 1, true))
            local n = 0
            for _ in body:gmatch("<script") do n = n + 1 end
            assert.equal(1, n) -- the desk's own /desk.js
        end)

        it("answers 404 for an unknown item", function()
            assert.equal(404, get("/item/nope").status)
        end)
    end)

    describe("a decision", function()
        it("is refused with the schema's errors beside the fields, and recorded as a human attempt", function()
            local res = post("/item/m1", ticket_fields("refund", "12", "true", "Courier missing."))
            assert.equal(422, res.status)
            assert.truthy(res.body:find('<div class="field bad" data-pointer="/intent">', 1, true))
            assert.truthy(res.body:find('<div class="field bad" data-pointer="/order_id">', 1, true))
            assert.truthy(res.body:find('/intent &quot;refund&quot; is not one of', 1, true))
            local ev = st:evidence_for("job-spec", "m1")
            local last = ev[#ev]
            assert.same({ "human", "ann", "schema", "2026-01-02T03:04:05Z" },
                { last.decided_by, last.reviewer, last.gate, last.ts })
            assert.same({ "/intent", "/order_id" }, { last.errors[1].pointer, last.errors[2].pointer })
            assert.equal("refund", last.value.intent)
            -- no outcome: the item is still to review
            assert.equal(1, #st:item("job-spec", "m1").outcomes)
        end)

        it("is refused by the rules gate too: a person cannot accept an order that does not exist", function()
            local res = post("/item/m3", ticket_fields("delivery", "9999", "false", "Parcel late."))
            assert.equal(422, res.status)
            assert.truthy(res.body:find("order 9999 does not exist", 1, true))
            assert.equal("rules", st:evidence_for("job-spec", "m3")[2].gate)
        end)

        it("puts a missing required field's error beside that field (by the error's property)", function()
            local fields = ticket_fields("delivery", nil, "true", "Courier missing.")
            fields["o/order_id"] = "1"
            local res = post("/item/m1", fields)
            assert.equal(422, res.status)
            assert.truthy(res.body:find('<div class="field bad" data-pointer="/order_id">', 1, true), res.body)
            local ev = st:evidence_for("job-spec", "m1")
            assert.same({ "required", "order_id" }, { ev[#ev].errors[1].keyword, ev[#ev].errors[1].property })
        end)

        it("accepts a valid value: an outcome decided by a human, evidence with the errors seen, in one pass",
            function()
            post("/item/m1", ticket_fields("Lieferung", "1042", "true", "Courier missing."))
            -- the value is encoded once and checked from that text, which is what is stored
            local checked = {}
            local check_json = desk.contract.check_json
            desk.contract.check_json = function(c, text, ...)
                local out, err = check_json(c, text, ...)
                if out then checked[#checked + 1] = out end
                return out, err
            end
            local ok, res = pcall(post, "/item/m1", ticket_fields("delivery", "1042", "true", "Courier missing."))
            desk.contract.check_json = check_json
            assert(ok, res)
            assert.equal(303, res.status)
            assert.equal(1, #checked)
            assert.equal("/item/m2?saved=m1", res.headers.Location)
            local it = st:item("job-spec", "m1")
            assert.same({ 2, "accepted", "human", "accepted" }, { it.pass, it.status, it.decided_by,
                it.outcomes[2].status })
            assert.same({ "model", "human_review" }, { it.outcomes[1].decided_by, it.outcomes[1].status })
            assert.equal(checked[1], it.value_json)
            assert.equal(',"value":' .. checked[1] .. "}", it.record_json:sub(-#checked[1] - 10))
            local value = jc.decode(it.value_json)
            assert.same({ "delivery", "1042", true }, { value.intent, value.order_id, value.urgent })
            local line = jc.decode(it.record_json)
            assert.same({ "human", "ann", "accept", "delivery" }, { line.decided_by, line.reviewer, line.decision,
                line.value.intent })
            local ev = st:evidence_for("job-spec", "m1")
            local rec = ev[#ev]
            assert.same({ "human", "accepted", 2, "ann" }, { rec.decided_by, rec.gate, rec.pass, rec.reviewer })
            assert.equal(1, #rec.errors_seen)
            assert.equal("/intent", rec.errors_seen[1].pointer)
            -- out of the queue, into "decided"
            local counts = rq.queue_counts(st, "job-spec")
            assert.same({ 4, 1 }, { counts.open, counts.decided })
            assert.truthy(get("/", { status = "decided" }).body:find("decided: accepted", 1, true))
        end)

        it("records 'not for this job' and 'needs the customer' as the person's review outcomes", function()
            assert.equal(303, post("/item/m2", { action = "not_applicable", note = "spam" }).status)
            assert.equal(303, post("/item/m6", { action = "needs_customer" }).status)
            local m2 = st:item("job-spec", "m2")
            assert.same({ "human_review", "human", "human", "not_applicable" },
                { m2.status, m2.decided_by, m2.reason_category, m2.reason_kind })
            assert.equal("spam", jc.decode(m2.record_json).note)
            assert.equal("needs_customer", st:item("job-spec", "m6").reason_kind)
            assert.same({ 3, 2 }, { rq.queue_counts(st, "job-spec").open, rq.queue_counts(st, "job-spec").decided })
            -- a new model pass re-asks the model's review items only
            local _, n = st:new_review_pass("job-spec", "contract fix")
            assert.equal(3, n)
        end)

        it("pre-fills a decided item from the person's value", function()
            post("/item/m3", ticket_fields("delivery", "", "false", "Parcel late."))
            post("/item/m3", { action = "accept", ["v/intent"] = '"delivery"', ["n/order_id"] = "1",
                ["v/urgent"] = "false", ["v/summary"] = "Parcel late, no order number." })
            local body = get("/item/m3").body
            assert.truthy(body:find("Decided by <b>ann</b>", 1, true))
            assert.truthy(body:find(">Parcel late, no order number.</textarea>", 1, true))
        end)

        it("refuses a POST without the CSRF token, with another reviewer's, or from another origin", function()
            local fields = ticket_fields("delivery", "1042", "true", "x")
            for _, case in ipairs {
                { "none", desk:handle { method = "POST", path = "/item/m1", post = fields, reviewer = "ann" } },
                { "wrong", post("/item/m1", { csrf = desk:csrf_token("bob"), action = "not_applicable" }, "ann") },
                { "origin", post("/item/m1", { action = "not_applicable" }, "ann", { origin_ok = false }) },
            } do
                assert.equal(403, case[2].status, case[1])
            end
            assert.equal(1, #st:item("job-spec", "m1").outcomes)
        end)

        it("refuses a decision without the pass its page showed (400)", function()
            assert.equal(303, post("/item/m6", { action = "needs_customer" }, "bob").status)
            for _, seen in ipairs { false, "", "x", "-1", "1.5" } do
                local res = post("/item/m6", { action = "not_applicable", seen = seen }, "ann")
                assert.equal(400, res.status, tostring(seen))
                assert.truthy(res.body:find("missing or bad 'seen'", 1, true))
            end
        end)

        it("refuses a decision on an item the model accepted (409)", function()
            local res = post("/item/m4", { action = "needs_customer", seen = "1" })
            assert.equal(409, res.status)
            assert.truthy(res.body:find("item m4 was settled by the model (accepted)", 1, true), res.body)
        end)

        it("refuses a decision on a page that another reviewer's decision has overtaken (409)", function()
            local seen = get("/item/m6").body:match('name="seen" value="(%d+)"')
            assert.equal("1", seen)
            assert.equal(303, post("/item/m6", { action = "needs_customer", seen = seen }, "bob").status)
            local res = post("/item/m6", { action = "not_applicable", seen = seen }, "ann")
            assert.equal(409, res.status)
            assert.truthy(res.body:find("was decided by someone else meanwhile", 1, true))
            local it = st:item("job-spec", "m6")
            assert.same({ 2, "needs_customer", "bob" }, { #it.outcomes, it.reason_kind, jc.decode(it.record_json).reviewer })
        end)

        it("shows a mailbox line that is not JSON as its text", function()
            assert(st:exec("UPDATE items SET input_json = ? WHERE item_id = 'm5'", { "not json <i>at all</i>" }))
            local body = get("/item/m5").body
            assert.truthy(body:find('<pre class="text mail" id="mail">not json &lt;i&gt;at all&lt;/i&gt;</pre>', 1, true))
        end)

        it("takes a repeated query parameter once", function()
            local res = get("/", { reason = { "schema/schema_mismatch", "rules/rule_failed" }, status = true })
            assert.equal(200, res.status)
            assert.truthy(res.body:find('href="/item/m3?reason=rules%2Frule_failed"', 1, true))
        end)

        it("answers 405 to other methods", function()
            assert.equal(405, desk:handle { method = "DELETE", path = "/item/m1", reviewer = "ann" }.status)
        end)
    end)
end

describe("jsoncontract.review.desk", function()
    it("sends nothing to a model: no desk module loads a provider, a transport or the attempt loop", function()
        for _, f in ipairs(util.lines("ls lua/jsoncontract/review/*.lua")) do
            local src = util.slurp(f)
            for _, m in ipairs { "jsoncontract.run", "jsoncontract.providers", "jsoncontract.transport",
                "jsoncontract.batch" } do
                assert.falsy(src:find('require%s*%(?%s*"' .. m:gsub("%.", "%%.")), f .. " requires " .. m)
            end
        end
    end)


    describe("over SQLite", function() desk_specs("sqlite") end)
    describe("over PostgreSQL", function() desk_specs("postgresql") end)
end)
