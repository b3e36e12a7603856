--- The shop's orders table, in a real SQLite database (Debian's lua-sql-sqlite3).
-- `orders.open(path)` creates the table when missing; `orders.open_shipped(path, csv)` also loads
-- the shop's orders (examples/orders.csv); `db:add(id, customer)`,
-- `db:exists(id)`, `db:customer(id)`, `db:close()`.
local driver = require "luasql.sqlite3"

local M = {}
local mt = { __index = M }

--- Open (and create if needed) the orders database at `path`.
-- @treturn[1] table db
-- @return[2] nil
-- @treturn[2] string message
function M.open(path)
    local env = driver.sqlite3()
    local conn, msg = env:connect(path)
    if not conn then
        env:close()
        return nil, msg
    end
    local ok, err = conn:execute("CREATE TABLE IF NOT EXISTS orders (order_id TEXT PRIMARY KEY, customer TEXT)")
    if not ok then
        conn:close(); env:close()
        return nil, err
    end
    return setmetatable({ env = env, conn = conn }, mt)
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
    db.conn:execute("BEGIN")
    for line in f:lines() do
        local id, customer = line:match("^(%d+),(.*)$")
        if id then db:add(id, customer) end
    end
    f:close()
    local ok, cerr = db.conn:execute("COMMIT")
    if not ok then db:close() return nil, cerr end
    return db
end

--- Add an order (ignored when it exists).
function M.add(self, order_id, customer)
    assert(self.conn:execute(("INSERT OR IGNORE INTO orders (order_id, customer) VALUES ('%s', '%s')")
        :format(self.conn:escape(order_id), self.conn:escape(customer or ""))))
end

--- Does the order exist?
-- @tparam string order_id
-- @treturn boolean
function M.exists(self, order_id)
    local cur = assert(self.conn:execute(("SELECT 1 FROM orders WHERE order_id = '%s'")
        :format(self.conn:escape(order_id))))
    local row = cur:fetch()
    cur:close()
    return row ~= nil
end

--- Who placed the order?
-- @tparam string order_id
-- @treturn string|nil the customer (nil when the order does not exist)
function M.customer(self, order_id)
    local cur = assert(self.conn:execute(("SELECT customer FROM orders WHERE order_id = '%s'")
        :format(self.conn:escape(order_id))))
    local row = cur:fetch()
    cur:close()
    return row
end

--- Close the database (idempotent).
function M.close(self)
    if self.conn then self.conn:close(); self.env:close() end
    self.conn, self.env = nil, nil
end

return M
