--- The review desk: the pages and the decisions, independent of the web server.
-- `desk.new(opts)` gives an object whose `handle(req)` turns one request into one response;
-- `jsoncontract.review.nginx` feeds it from nginx. The desk reads the job from the store
-- (`jsoncontract.review.queries`), shows the queue and one item at a time, and holds
-- every decision to the contract: the value a person submits is encoded and goes through
-- `contract:check`, the same format, schema and rules gates as a model's reply. Nothing the
-- desk receives is ever sent to a model.
-- @module jsoncontract.review.desk
local core = require "jsoncontract.core"
local html = require "jsoncontract.review.html"
local form = require "jsoncontract.review.form"
local spans = require "jsoncontract.review.spans"
local adapters = require "jsoncontract.contract.adapters"

local type, ipairs, pairs, tostring, tonumber, setmetatable, error, pcall =
    type, ipairs, pairs, tostring, tonumber, setmetatable, error, pcall
local concat = table.concat
local format, sub, gsub, match = string.format, string.sub, string.gsub, string.match

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

local esc, query, urlenc = html.esc, html.query, html.urlenc
local null = core.null

--- Rows per queue page.
_M.PAGE_SIZE = 50
-- Characters of the mail shown in a queue row.
local SNIPPET = 140

-- Decisions a person can take, in the order of the buttons.
local ACTIONS = {
    accept = { label = "Accept", key = "a", done = "accepted" },
    not_applicable = { label = "Not for this job", key = "x", done = "not for this job" },
    needs_customer = { label = "Needs the customer", key = "c", done = "needs the customer" },
}
_M.ACTIONS = ACTIONS

-- The order in which a model's attempts are "best" for the pre-fill: the further the gate
-- it reached, the closer its value is to one the contract accepts.
local GATE_RANK = { accepted = 5, rules = 4, schema = 3, format = 2, protocol = 1, transport = 0 }

--- A new desk.
-- @tparam table opts
--   `store` (an open store, `jsoncontract.jobs.store`), `queries` (the module
--   `jsoncontract.review.queries`, or a table with the same functions), `job` (the job row:
--   `id`, `contract_name`, `contract_version`, `schema_hash`), `contract` (the contract object),
--   `context` (the rules' context, e.g. `{orders = db}`; nil when the rules need none),
--   `context_missing` (boolean: the rules want a context the desk could not find; the item
--   page says their verdict is incomplete),
--   `secret` (string, at least 16 bytes: keys the CSRF tokens), `page_size` (integer, default 50),
--   `now` (function -> "YYYY-MM-DDTHH:MM:SSZ", default the clock), `exports_note` (string: when
--   decisions reach the exported files, shown on the queue page)
-- @treturn table desk
-- @raise when a required option is missing or mistyped
function _M.new(opts)
    if type(opts) ~= "table" then error("desk.new: opts must be a table", 2) end
    if type(opts.store) ~= "table" then error("desk.new: opts.store must be an open store", 2) end
    if type(opts.queries) ~= "table" then error("desk.new: opts.queries must be the review queries module", 2) end
    if type(opts.job) ~= "table" or opts.job.id == nil then error("desk.new: opts.job must be a job row", 2) end
    if type(opts.contract) ~= "table" or type(opts.contract.check) ~= "function" then
        error("desk.new: opts.contract must be a contract", 2)
    end
    if type(opts.secret) ~= "string" or #opts.secret < 16 then
        error("desk.new: opts.secret must be a string of at least 16 bytes", 2)
    end
    return setmetatable({
        store = opts.store, q = opts.queries, job = opts.job, contract = opts.contract,
        context = opts.context, secret = opts.secret, page_size = opts.page_size or _M.PAGE_SIZE,
        context_missing = opts.context_missing == true, exports_note = opts.exports_note,
        now = opts.now or function() return os.date("!%Y-%m-%dT%H:%M:%SZ") end,
    }, mt)
end

--- The CSRF token of a reviewer: tied to the reviewer and to this desk's secret.
-- @tparam string reviewer
-- @treturn string 64 hex digits
function _M.csrf_token(self, reviewer)
    return core.sha256(self.secret .. "\0csrf\0" .. tostring(reviewer))
end

local same = require("jsoncontract.util").constant_time_equal

local function response(status, body, ctype, extra)
    local headers = { ["Content-Type"] = ctype or "text/html; charset=utf-8" }
    for k, v in pairs(extra or {}) do headers[k] = v end
    return { status = status, headers = headers, body = body }
end

local function redirect(location)
    return response(303, "", "text/plain; charset=utf-8", { Location = location })
end

local function text_of_input(input)
    if type(input) == "table" and type(input.text) == "string" then return input.text end
    if type(input) == "string" then return input end
    if input == nil then return "" end
    local ok, s = pcall(core.encode, input)
    return ok and s or ""
end

-- A reason `{category, kind}` as the queue's key "category/kind".
local function reason_key(r)
    if type(r) ~= "table" then return "" end
    return tostring(r.category or "?") .. "/" .. tostring(r.kind or "?")
end

-- An error's message without its leading instance location (the list shows it apart).
local function bare(e)
    local m = tostring(e.message or e.keyword or "")
    local p = e.pointer
    if type(p) == "string" and p ~= "" and sub(m, 1, #p + 1) == p .. " " then m = sub(m, #p + 2) end
    return m
end

-- A list of errors, each at its instance location ("/" for the root), with `w` the page writer.
local function error_list(w, errs)
    if type(errs) ~= "table" or #errs == 0 then return end
    w('<ul class="errs">')
    for _, e in ipairs(errs) do
        w(format("<li><code>%s</code> %s</li>", esc((e.pointer == "" or e.pointer == nil) and "/" or e.pointer),
            esc(bare(e))))
    end
    w("</ul>")
end

local function keys_help(list)
    local out = {}
    for i, k in ipairs(list) do out[i] = "<kbd>" .. esc(k[1]) .. "</kbd> " .. esc(k[2]) end
    return concat(out, " ")
end

----------------------------------------------------------------------------
-- Queue
----------------------------------------------------------------------------

local STATUS_FILTERS = { { "open", "to review" }, { "decided", "decided" }, { "all", "all" } }

local function queue_page(self, req)
    local a = req.args or {}
    local status = a.status
    if status ~= "decided" and status ~= "all" then status = "open" end
    local reason = a.reason ~= "" and a.reason or nil
    local after, before = tonumber(a.after), tonumber(a.before)
    local counts = self.q.queue_counts(self.store, self.job.id)
    local rows, more = self.q.queue(self.store, self.job.id, {
        status = status, reason = reason, after = after, before = before, limit = self.page_size })

    local b = {}
    local function w(s) b[#b + 1] = s end
    w(format("<h1>Review queue: %d to review, %d decided by a person</h1>", counts.open, counts.decided))
    if self.exports_note then w('<p class="muted exports">' .. esc(self.exports_note) .. "</p>") end
    w('<p class="filters">')
    for _, f in ipairs(STATUS_FILTERS) do
        local on = f[1] == status
        w(format('<a href="/%s"%s>%s</a>', esc(query { status = f[1] ~= "open" and f[1] or nil, reason = reason }),
            on and ' class="on" aria-current="true"' or "", esc(f[2])))
    end
    w("</p>")
    w('<p class="counts">reasons (to review): ')
    w(format('<a href="/%s"%s>all %d</a>', esc(query { status = a.status }), reason and "" or ' class="on"',
        counts.open))
    for _, r in ipairs(counts.by_reason) do
        w(format('<a href="/%s"%s><code>%s</code> %d</a>', esc(query { status = a.status, reason = r.reason }),
            r.reason == reason and ' class="on"' or "", esc(r.reason), r.n))
    end
    w("</p>")
    if #rows == 0 then
        w('<p class="notice">Nothing here.</p>')
    else
        w('<table><thead><tr><th>#</th><th>item</th><th>reason</th><th>state</th><th>mail</th></tr></thead><tbody>')
        for _, r in ipairs(rows) do
            local href = "/item/" .. urlenc(r.item_id) .. query { status = a.status, reason = reason }
            local snippet = text_of_input(r.input)
            snippet = gsub(snippet, "%s+", " ")
            if #snippet > SNIPPET then snippet = sub(snippet, 1, SNIPPET) .. "..." end
            local act = ACTIONS[r.decision or ""]
            local state = r.decided_by == "human" and ("decided: " .. (act and act.done or tostring(r.decision)))
                or "to review"
            w(format('<tr data-href="%s"><td>%s</td><td><a href="%s">%s</a></td><td><code>%s</code></td>'
                .. '<td>%s</td><td class="snip">%s</td></tr>', esc(href), esc(r.seq), esc(href), esc(r.item_id),
                esc(r.reason), esc(state), esc(snippet)))
        end
        w("</tbody></table>")
    end
    w('<p class="pager">')
    if rows[1] and (after or (more and before)) then
        w(format('<a rel="prev" href="/%s">&larr; previous</a>', esc(query {
            status = a.status, reason = reason, before = rows[1].seq })))
    end
    if rows[#rows] and (more or before) then
        w(format('<a rel="next" href="/%s">next &rarr;</a>', esc(query {
            status = a.status, reason = reason, after = rows[#rows].seq })))
    end
    w("</p>")
    return response(200, html.page {
        title = "queue", page = "queue", body = concat(b), reviewer = req.reviewer, job = self.job,
        keys = keys_help { { "j", "down" }, { "k", "up" }, { "o", "open" }, { "n", "next page" }, { "p", "previous" } },
    })
end

----------------------------------------------------------------------------
-- Item
----------------------------------------------------------------------------

-- The model's value of the best recorded attempt, for the pre-fill (nil when none).
local function best_value(self, records)
    local best, best_rank
    for _, rec in ipairs(records) do
        if rec.decided_by ~= "human" and type(rec.text) == "string" then
            local rank = GATE_RANK[rec.gate] or -1
            if rank >= 2 and (not best_rank or rank >= best_rank) then
                local text = rec.text
                local names = self.contract.adapters or {}
                if #names > 0 then text = adapters.apply(text, names) or text end
                local v = core.decode(text)
                if v ~= nil then best, best_rank = v, rank end
            end
        end
    end
    return best
end

local function render_attempt(rec, i)
    local b = {}
    local function w(s) b[#b + 1] = s end
    if rec.decided_by == "human" then
        w('<div class="attempt human">')
        w(format('<div><span class="gate %s">%s</span> by <b>%s</b> at %s%s</div>',
            rec.gate == "accepted" and "accepted" or "failed", esc(rec.decision or rec.gate), esc(rec.reviewer),
            esc(rec.ts), rec.gate == "accepted" and "" or " (refused by the contract)"))
        if rec.value ~= nil then
            local ok, s = pcall(core.encode, rec.value)
            w('<pre class="text">' .. esc(ok and s or "?") .. "</pre>")
        end
        if type(rec.note) == "string" and rec.note ~= "" then
            w('<div class="meta">note: ' .. esc(rec.note) .. "</div>")
        end
        error_list(w, rec.errors)
        w("</div>")
        return concat(b)
    end
    w(format('<div class="attempt" id="attempt-%d">', i))
    local failed = rec.gate ~= "accepted"
    w(format('<div>attempt %s%s: <span class="gate %s">%s</span>%s</div>', esc(rec.attempt),
        (tonumber(rec.try) or 1) > 1 and (" (try " .. esc(rec.try) .. ")") or "",
        failed and "failed" or "accepted", esc(rec.gate),
        rec.kind and (" <code>" .. esc(rec.category) .. "/" .. esc(rec.kind) .. "</code>") or ""))
    local meta = {}
    if rec.finish or rec.finish_reason then
        meta[#meta + 1] = "finish " .. esc(rec.finish)
            .. ((rec.finish_reason and rec.finish_reason ~= rec.finish)
                and (" (" .. esc(rec.finish_reason) .. ")") or "")
    end
    if rec.http_status then meta[#meta + 1] = "HTTP " .. esc(rec.http_status) end
    if type(rec.usage) == "table" then
        meta[#meta + 1] = format("tokens in %s / out %s", esc(rec.usage.input_tokens), esc(rec.usage.output_tokens))
    end
    if rec.elapsed_ms then meta[#meta + 1] = esc(rec.elapsed_ms) .. " ms" end
    if type(rec.adapters) == "table" and #rec.adapters > 0 then
        local names = {}
        for k, n in ipairs(rec.adapters) do names[k] = esc(n) end
        meta[#meta + 1] = "adapters " .. concat(names, ", ")
    end
    if rec.provider or rec.model then meta[#meta + 1] = esc(rec.provider) .. " " .. esc(rec.model) end
    if #meta > 0 then w('<div class="meta">' .. concat(meta, " &middot; ") .. "</div>") end

    -- The gate's errors as the store kept them when the attempt ran (with messages and
    -- `property`; a store from before it kept them has pointers and keywords only).
    local errs = failed and (rec.error_items or rec.errors) or nil
    if type(rec.text) == "string" then
        local pointers = {}
        for k, e in ipairs(type(errs) == "table" and errs or {}) do pointers[k] = e.pointer end
        local at = rec.category == "format" and tonumber(rec.offset) or nil
        local marked = spans.mark(rec.text, pointers, at)
        w('<pre class="text model">' .. marked .. "</pre>")
    elseif rec.gate ~= "transport" then
        w('<p class="muted">The model\'s text is not in the store (a job made before the store kept it).</p>')
    end
    if failed and type(rec.error_message) == "string" and not (type(errs) == "table" and #errs > 0) then
        w('<ul class="errs"><li>' .. esc(rec.error_message) .. "</li></ul>")
    end
    error_list(w, errs)
    w("</div>")
    return concat(b)
end

-- The item page. `state` carries a failed submission: `value` (what the person submitted),
-- `errors` (what the contract said), `note`.
local function item_page(self, req, item_id, state, status)
    local it = self.q.item(self.store, self.job.id, item_id)
    if not it then return response(404, html.page { title = "not found", body = "<h1>No such item</h1>",
        reviewer = req.reviewer, job = self.job }) end
    local a = req.args or {}
    local nav = { status = a.status, reason = a.reason ~= "" and a.reason or nil }
    local nxt = self.q.next_item(self.store, self.job.id, it.seq, {
        status = (nav.status == "decided" or nav.status == "all") and nav.status or "open", reason = nav.reason })
    local records = it.evidence or {}

    local b = {}
    local function w(s) b[#b + 1] = s end
    local outcome = it.outcome or {}
    local model_reason = it.model_reason
    w(format("<h1>Item <code>%s</code> <span class=\"muted\">#%s</span></h1>", esc(item_id), esc(it.seq)))
    if state and state.saved then
        w('<p class="notice good" role="status">' .. esc(state.saved) .. "</p>")
    elseif state and state.conflict then
        w('<p class="notice bad" role="alert" id="conflict">' .. esc(state.conflict) .. "</p>")
    end
    if outcome.decided_by == "human" then
        w(format('<p class="notice good">Decided by <b>%s</b> at %s: <b>%s</b>. A new decision is recorded as '
            .. "another pass.</p>", esc(outcome.reviewer or outcome.decided_by), esc(outcome.decided_at),
            esc(ACTIONS[outcome.decision or ""] and ACTIONS[outcome.decision].done or outcome.decision)))
    end
    if type(model_reason) == "table" then
        w(format('<p class="notice bad">Sent to review: <code>%s</code> %s</p>', esc(reason_key(model_reason)),
            esc(model_reason.message)))
    end
    w('<div class="cols"><section class="left">')
    w("<h2>Mail</h2>")
    local input = it.input
    if type(input) == "table" then
        local extra = {}
        for k, v in pairs(input) do
            if k ~= "text" and k ~= "meta" and type(v) ~= "table" then extra[#extra + 1] = { k, v } end
        end
        table.sort(extra, function(x, y) return x[1] < y[1] end)
        if #extra > 0 then
            w('<table class="headers">')
            for _, kv in ipairs(extra) do
                w(format("<tr><th>%s</th><td>%s</td></tr>", esc(kv[1]), esc(kv[2] == null and "null" or kv[2])))
            end
            w("</table>")
        end
    end
    w('<pre class="text mail" id="mail">' .. esc(text_of_input(input)) .. "</pre>")
    local by_model = 0
    for _, rec in ipairs(records) do if rec.decided_by ~= "human" then by_model = by_model + 1 end end
    w(format("<h2>Attempts: %d by the model%s</h2>", by_model, #records > by_model
        and format(", %d by a person", #records - by_model) or ""))
    if #records == 0 then w('<p class="muted">No attempt was recorded for this item.</p>') end
    for i, rec in ipairs(records) do w(render_attempt(rec, i)) end
    w('</section><section class="right">')
    w(format("<h2>Decision <span class=\"muted\">contract %s %s</span></h2>", esc(self.contract.name),
        esc(self.contract.version)))

    if self.context_missing then
        w('<p class="notice bad">The rules that need the run\'s data (e.g. the orders table) cannot check here: '
            .. "no context was found. Start the desk with <code>--context DIR</code>.</p>")
    end
    local value, errs
    if state and state.errors then
        value, errs = state.value, state.errors
        w('<p class="notice bad" role="alert" id="refused">The contract refuses this value: ' .. #errs
            .. (#errs == 1 and " error" or " errors") .. ". Fix the fields marked below.</p>")
    else
        value = it.human_value
        if value == nil then value = best_value(self, records) end
    end
    local fields, loose = form.render(self.contract.schema, value, errs)
    if #loose > 0 then
        w('<ul class="errs" id="form-errors">')
        for _, e in ipairs(loose) do
            w(format("<li><code>%s</code> %s</li>", esc((e.pointer or "") == "" and "/" or e.pointer), esc(e.message)))
        end
        w("</ul>")
    end
    w(format('<form class="decide" method="post" action="/item/%s%s" novalidate>', esc(urlenc(item_id)),
        esc(query(nav))))
    w(format('<input type="hidden" name="csrf" value="%s">', self:csrf_token(req.reviewer)))
    w(format('<input type="hidden" name="seen" value="%d">', it.latest_pass or 0))
    w(fields)
    w('<div class="buttons">')
    for _, name in ipairs { "accept", "not_applicable", "needs_customer" } do
        local act = ACTIONS[name]
        w(format('<button type="submit" name="action" value="%s"%s>%s <kbd>%s</kbd></button>', name,
            name == "accept" and ' class="primary"' or "", esc(act.label), act.key))
    end
    w("</div>")
    w('<div class="field"><label class="name" for="note">note (kept with the decision, never sent to a model)</label>')
    w(format('<textarea id="note" name="note" rows="1">%s</textarea></div>', esc(state and state.note or "")))
    w("</form>")
    w('<p class="pager">')
    if nxt then
        w(format('<a rel="next" href="/item/%s%s">skip to next &rarr;</a>', esc(urlenc(nxt)), esc(query(nav))))
    else
        w('<span class="muted">last item in this view</span>')
    end
    w(format(' <a rel="up" href="/%s">back to the queue</a>', esc(query(nav))))
    w("</p></section></div>")
    return response(status or 200, html.page {
        title = "item " .. tostring(item_id), page = "item", body = concat(b), reviewer = req.reviewer, job = self.job,
        keys = keys_help { { "a", "accept" }, { "Ctrl+Enter", "accept" }, { "s", "skip" }, { "x", "not for this job" },
            { "c", "needs customer" }, { "e", "edit" }, { "q", "queue" } },
    })
end

----------------------------------------------------------------------------
-- Decisions
----------------------------------------------------------------------------

-- The errors of a human value through the contract's gates, as `{pointer, keyword, property,
-- message}`; when it passes: nil, "accepted", and the JSON text the gates checked (encoded once
-- here and stored as it is: the checked value is not decoded and encoded again).
local function gate_errors(self, value, problems)
    local out = {}
    for _, p in ipairs(problems) do out[#out + 1] = p end
    if #out > 0 then return out, "form" end
    if value == nil then
        return { { pointer = "", keyword = "form", message = "no value: the whole value was left out" } }, "form"
    end
    local ok, text = pcall(core.encode, value)
    if not ok then return { { pointer = "", keyword = "form", message = "not JSON: " .. tostring(text) } }, "form" end
    -- The same gates as a model's reply: format, schema, rules (adapters have nothing to do on
    -- JSON we encoded).
    local checked, err = self.contract:check_json(text, { adapters = {}, context = self.context })
    if checked ~= nil then return nil, "accepted", checked end
    if err.errors and #err.errors > 0 then
        for _, e in ipairs(err.errors) do
            out[#out + 1] = { pointer = e.pointer or "", keyword = e.keyword, property = e.property,
                message = e.message }
        end
    else
        out[1] = { pointer = "", keyword = err.kind, message = err.message }
    end
    return out, err.category
end
_M.gate_errors = gate_errors

local function decide(self, req, item_id)
    local post = req.post or {}
    local it = self.q.item(self.store, self.job.id, item_id)
    if not it then return response(404, "no such item\n", "text/plain; charset=utf-8") end
    local action = type(post.action) == "string" and post.action or "accept"
    local act = ACTIONS[action]
    if not act then return response(400, "unknown action\n", "text/plain; charset=utf-8") end
    -- The pass the page was loaded at: without it a decision could overtake another
    -- reviewer's unseen (the two-reviewer check needs it).
    local seen = type(post.seen) == "string" and post.seen:match("^%d+$") and tonumber(post.seen)
    if not seen then
        return response(400, "missing or bad 'seen' (the pass the page showed)\n", "text/plain; charset=utf-8")
    end
    -- The desk settles what the model handed to a person, not what it accepted.
    if it.model_status ~= "human_review" then
        return response(409, "item " .. item_id .. " was settled by the model ("
            .. tostring(it.model_status or "not yet asked") .. "): the desk decides the items handed to a person\n",
            "text/plain; charset=utf-8")
    end
    local note = type(post.note) == "string" and post.note or ""
    local a = req.args or {}
    local nav = { status = a.status, reason = a.reason ~= "" and a.reason or nil }
    local rec = { reviewer = req.reviewer, ts = self.now(), decision = action, note = note ~= "" and note or nil,
        contract = self.contract:identity() }
    if action == "accept" then
        local value, problems = form.read(self.contract.schema, post)
        local errs, gate, checked = gate_errors(self, value, problems)
        if errs then
            -- A refused submission is a human attempt too: who tried what, and what the
            -- contract said.
            rec.gate, rec.value, rec.errors = gate, value, errs
            local ok, err = self.q.record_human_attempt(self.store, self.job.id, item_id, rec)
            if not ok then return response(500, "could not record the attempt: " .. tostring(err) .. "\n",
                "text/plain; charset=utf-8") end
            return item_page(self, req, item_id, { value = value, errors = errs, note = note }, 422)
        end
        rec.gate, rec.value, rec.value_json = "accepted", value, checked
    else
        rec.gate = "accepted"
    end
    local ok, err = self.q.record_decision(self.store, self.job.id, item_id, {
        decision = action, value_json = rec.value_json, reviewer = req.reviewer, decided_at = rec.ts, record = rec,
        contract = rec.contract }, seen)
    if not ok and type(err) == "table" and err.kind == "duplicate" then
        local page = item_page(self, req, item_id, { conflict = "Not saved: " .. tostring(err.message)
            .. ". The page now shows that decision; decide again if it is wrong." })
        page.status = 409
        return page
    elseif not ok then
        return response(500, "could not record the decision: " .. tostring(err) .. "\n", "text/plain; charset=utf-8")
    end
    local nxt = self.q.next_item(self.store, self.job.id, it.seq, {
        status = (nav.status == "decided" or nav.status == "all") and nav.status or "open", reason = nav.reason })
    local q = nav
    q.saved = item_id
    if nxt then return redirect("/item/" .. urlenc(nxt) .. query(q)) end
    return redirect("/" .. query(q))
end

----------------------------------------------------------------------------
-- Routing
----------------------------------------------------------------------------

--- Handle one request.
-- @tparam table req `method` ("GET"|"POST"), `path` (decoded URI path), `args` (query: name ->
--   string), `post` (form fields of a POST: name -> string or list of strings), `reviewer`
--   (string: who is asking, already authenticated by the server), `origin_ok` (boolean,
--   false when an Origin or Referer header names another site)
-- @treturn table response `{status = integer, headers = table, body = string}`
function _M.handle(self, req)
    local path, method = req.path or "/", req.method or "GET"
    -- A repeated query parameter (?reason=a&reason=b) counts once, as its last value.
    local args = {}
    for k, v in pairs(req.args or {}) do
        if type(v) == "table" then v = v[#v] end
        if type(k) == "string" and type(v) == "string" then args[k] = v end
    end
    req.args = args
    if path == "/favicon.ico" then
        return response(204, "", "image/x-icon", { ["Cache-Control"] = "max-age=86400" })
    elseif path == "/desk.css" then
        return response(200, html.CSS, "text/css; charset=utf-8", { ["Cache-Control"] = "max-age=3600" })
    elseif path == "/desk.js" then
        return response(200, html.JS, "text/javascript; charset=utf-8", { ["Cache-Control"] = "max-age=3600" })
    end
    if method == "POST" then
        local post = req.post or {}
        local token = post.csrf
        if type(token) == "table" then token = nil end
        if req.origin_ok == false or not same(token, self:csrf_token(req.reviewer)) then
            return response(403, "refused: this form has no valid CSRF token (reload the page and try again)\n",
                "text/plain; charset=utf-8")
        end
    elseif method ~= "GET" and method ~= "HEAD" then
        return response(405, "method not allowed\n", "text/plain; charset=utf-8", { Allow = "GET, POST" })
    end
    if path == "/" then
        if method ~= "GET" and method ~= "HEAD" then return response(405, "method not allowed\n", "text/plain") end
        return queue_page(self, req)
    end
    local id = match(path, "^/item/(.+)$")
    if id then
        if method == "POST" then return decide(self, req, id) end
        local state
        if (req.args or {}).saved then state = { saved = "Saved the decision on " .. req.args.saved .. "." } end
        return item_page(self, req, id, state)
    end
    return response(404, "not found\n", "text/plain; charset=utf-8")
end

return _M
