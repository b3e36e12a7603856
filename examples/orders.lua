--- The shop's orders table, in a real SQLite database (Debian's lua-dbi-sqlite3, as the job
-- store). `orders.open(path)` creates the table when missing; `orders.open_shipped(path, csv)`
-- also loads the shop's orders (examples/orders.csv); `db:add(id, customer)`, `db:exists(id)`,
-- `db:customer(id)`, `db:close()`.
-- Every value is a bound parameter of a statement prepared once per connection, never part of
-- the SQL text: an order id the model wrote cannot change the query, and a lookup costs no
-- SQL compile (the rules run once per item, and per request in the nginx gateway).
local DBI = require "DBI"

local M = {}
local mt = { __index = M }

local SQL = {
    exists = "SELECT 1 FROM orders WHERE order_id = ?",
    customer = "SELECT customer FROM orders WHERE order_id = ?",
    add = "INSERT OR IGNORE INTO orders (order_id, customer) VALUES (?, ?)",
}

-- Run the prepared statement `name` with its values; the statement (stepped with fetch), or
-- raises with the driver's message (the rules gate reports a raising rule).
local function run(self, name, ...)
    local stmt = assert(self.stmts, "orders: the database is closed")[name]
    local ok, err = stmt:execute(...)
    if not ok then error("orders: " .. tostring(err), 3) end
    return stmt
end

-- The first column of the statement's one row, or nil; the statement is stepped to its end,
-- so no read stays open on the file.
local function first(stmt)
    local row = stmt:fetch(false)
    while row and stmt:fetch(false) do end
    return row and row[1]
end

--- Open (and create if needed) the orders database at `path`.
-- @treturn[1] table db
-- @return[2] nil
-- @treturn[2] string message
function M.open(path)
    local okc, conn, msg = pcall(DBI.Connect, "SQLite3", path)
    if not okc or not conn then return nil, tostring(okc and msg or conn) end
    conn:autocommit(true)
    local create, err = conn:prepare("CREATE TABLE IF NOT EXISTS orders (order_id TEXT PRIMARY KEY, customer TEXT)")
    local ok = create and create:execute()
    if create then create:close() end
    if not ok then
        conn:close()
        return nil, tostring(err or "cannot create the orders table in " .. path)
    end
    local db = setmetatable({ conn = conn, stmts = {} }, mt)
    for name, sql in pairs(SQL) do
        local stmt, perr = conn:prepare(sql)
        if not stmt then
            db:close()
            return nil, tostring(perr)
        end
        db.stmts[name] = stmt
    end
    return db
end

--- Open the orders database at `path` and load the shop's shipped orders table into it
-- (`examples/orders.csv`: `order_id,customer` lines, `#` comments), in one transaction.
-- @tparam string path SQLite file
-- @tparam string csv_path
-- @treturn[1] table db
-- @return[2] nil
-- @treturn[2] string message
function M.open_shipped(path, csv_path)
    local db, err = M.open(path)
    if not db then return nil, err end
    local f, ferr = io.open(csv_path, "rb")
    if not f then db:close() return nil, ferr end
    db.conn:autocommit(false)
    for line in f:lines() do
        local id, customer = line:match("^(%d+),(.*)$")
        if id then db:add(id, customer) end
    end
    f:close()
    local ok, cerr = db.conn:commit()
    db.conn:autocommit(true)
    if not ok then db:close() return nil, tostring(cerr) end
    return db
end

--- Add an order (ignored when it exists).
-- @tparam string order_id
-- @tparam[opt] string customer
function M.add(self, order_id, customer)
    run(self, "add", order_id, customer or "")
end

--- Does the order exist?
-- @tparam string order_id
-- @treturn boolean
function M.exists(self, order_id)
    return first(run(self, "exists", order_id)) ~= nil
end

--- Who placed the order?
-- @tparam string order_id
-- @treturn string|nil the customer (nil when the order does not exist)
function M.customer(self, order_id)
    return first(run(self, "customer", order_id))
end

--- Close the database (idempotent).
function M.close(self)
    if self.stmts then
        for _, stmt in pairs(self.stmts) do stmt:close() end
    end
    if self.conn then self.conn:close() end
    self.conn, self.stmts = nil, nil
end

return M
