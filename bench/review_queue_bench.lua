-- make bench: the review desk's queue over a job of 10,000 items sent to review (a real SQLite
-- job store, spec/support/review_job.lua), page 1 against page 200, and keyset paging (what the
-- desk does) against LIMIT/OFFSET, side by side in one run. Prints ms per queue page (best of
-- ROUNDS, wall clock) and the ratios: keyset's last page / first page stays near 1.0; OFFSET's
-- grows with the page number. Also the whole queue page as the desk renders it (counts per
-- reason included). Not a test: nothing here asserts a time.
--   lua5.4 bench/review_queue_bench.lua      (after make)
local is_jit = type(jit) == "table"
local build = os.getenv("BUILD") or (is_jit and "build/luajit" or "build/lua5.4")
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath

local ok_socket, socket = pcall(require, "socket")
local now = ok_socket and socket.gettime or os.clock
local store_mod = require "jsoncontract.jobs.store"
local rq = require "jsoncontract.review.queries"
local review_job = require "support.review_job"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 7
local N = 10000

local dir = io.popen("mktemp -d"):read("*l")
review_job.build(dir, ".")
review_job.add_many(dir, N)
local st = assert(store_mod.open(dir .. "/job.sqlite"))
local ticket = dofile("examples/support_ticket.lua")
local desk = require("jsoncontract.review.desk").new { store = st, queries = rq, job = assert(st:job("job-spec")),
    contract = ticket.contract, secret = ("b"):rep(32) }

local function best(fn)
    local t = math.huge
    for _ = 1, ROUNDS do
        local t0 = now()
        fn()
        local dt = now() - t0
        if dt < t then t = dt end
    end
    return t * 1000
end

-- The seq after which page `p` (1-based, 50 a page) starts: the open items run 1..6 then 101...
local function after_of(p)
    if p == 1 then return nil end
    local rows = rq.queue(st, "job-spec", { limit = (p - 1) * 50 })
    return rows[#rows].seq
end
local last_page = math.floor((N + 5) / 50)
local after_last = after_of(last_page)

local function offset_page(p)
    return st:query("SELECT i.item_id FROM items i JOIN outcomes o ON o.job_id = i.job_id AND o.item_id = i.item_id "
        .. "AND o.pass = (SELECT max(pass) FROM outcomes x WHERE x.job_id = i.job_id AND x.item_id = i.item_id) "
        .. "WHERE i.job_id = 'job-spec' AND o.decided_by = 'model' AND o.status = 'human_review' AND i.state = 'done' "
        .. "ORDER BY i.seq LIMIT 50 OFFSET " .. ((p - 1) * 50))
end

local k1 = best(function() rq.queue(st, "job-spec", { limit = 50 }) end)
local kl = best(function() rq.queue(st, "job-spec", { after = after_last, limit = 50 }) end)
local o1 = best(function() offset_page(1) end)
local ol = best(function() offset_page(last_page) end)
local counts = best(function() rq.queue_counts(st, "job-spec") end)
local page1 = best(function() desk:handle { method = "GET", path = "/", args = {}, reviewer = "bench" } end)
local pagel = best(function()
    desk:handle { method = "GET", path = "/", args = { after = tostring(after_last) }, reviewer = "bench" }
end)
local item = best(function() desk:handle { method = "GET", path = "/item/m1", args = {}, reviewer = "bench" } end)

print(string.format("review queue over %d items to review (%s, best of %d)", N + 5, is_jit and "LuaJIT" or _VERSION,
    ROUNDS))
print(string.format("  keyset  page 1 %7.2f ms   page %d %7.2f ms   last/first %.2f", k1, last_page, kl, kl / k1))
print(string.format("  OFFSET  page 1 %7.2f ms   page %d %7.2f ms   last/first %.2f", o1, last_page, ol, ol / o1))
print(string.format("  counts per reason %7.2f ms", counts))
print(string.format("  desk queue page: page 1 %7.2f ms   page %d %7.2f ms   last/first %.2f", page1, last_page,
    pagel, pagel / page1))
print(string.format("  desk item page %7.2f ms", item))
st:close()
os.execute("rm -rf '" .. dir .. "'")
